"""Strokes and sketch-based posing and surface edits (Toothman 2020, ch. 7;
issue #22): :class:`Stroke`, :func:`pose_joints`, :func:`pose_from_strokes`,
:func:`surface_points`, :func:`surface_roi` and :func:`edit_from_stroke`.

These are the code paths of the Blender sketch tools, callable without a
viewport: a script poses a skeleton from a baseline and an offset stroke,
or turns a stroke on the skin into a surface edit of the spring node.
Strokes are float64; the core is ``core/model/stroke.c`` and its
neighbors (``springskin.h``, "Strokes and sketch posing").
"""

import numbers

import numpy as np

from . import _checks
from . import _core
from .binding import Binding

__all__ = ["Stroke", "pose_joints", "pose_from_strokes", "surface_points", "surface_roi",
           "edit_from_stroke", "STROKE_EPSILON_WINDOW_PX", "STROKE_EPSILON_RELATIVE"]

#: Default RDP tolerance of 2D (window) strokes, pixels (7.1).
STROKE_EPSILON_WINDOW_PX = _core.STROKE_EPSILON_WINDOW_PX
#: Default RDP tolerance of 3D strokes, a fraction of the bounding size (7.1).
STROKE_EPSILON_RELATIVE = _core.STROKE_EPSILON_RELATIVE


def _parameter(t):
    """(array (T,), scalar?) of a t argument."""
    if isinstance(t, bool):
        raise TypeError("t: expected a real number or an array of them, got bool")
    if isinstance(t, numbers.Real):
        return np.array([float(t)]), True
    return t, False


class Stroke:
    """An input stroke (7.1): points reduced by Ramer-Douglas-Peucker and
    interpolated by a composite cubic Bezier curve.

    The curve is the C2 cubic spline through the kept points (chord-length
    parameter, Bessel end tangents), one Bezier per pair of knots: tangents
    and curvature match at the joins. ``t`` in [0, 1] is the fraction of arc
    length (clamped outside). Frames are rows (tangent, normal, binormal),
    right-handed and orthonormal: the Frenet frame where the stroke curves;
    on straight parts the normal is parallel-transported (rotation
    minimizing) from the nearest curved part; a straight stroke takes the
    world axis least along it (:attr:`is_straight`). Frenet normals flip at
    the inflection of an S curve.

    Parameters
    ----------
    points : array_like, (N, 3) or (N, 2)
        float or int, N >= 2 with two distinct points; 2D points (window
        pixels) get z = 0. Any units and space; queries answer in them.
    times : array_like, (N,), optional
        Timestamps (any unit). Without them the point index stands for the
        time.
    epsilon : float, optional
        RDP tolerance in the points' units, >= 0 (0 keeps every point not
        exactly on the segment between its kept neighbors). Default: 8 px
        for 2D points, 0.01 of `scene_size` for 3D points.
    scene_size : float, optional
        The bounding size the 3D default is relative to (e.g. the rig's rest
        bounding-box diagonal); default: the stroke's own bounding diagonal.

    Raises
    ------
    ValueError
        A wrong shape, fewer than 2 distinct points, NaN/Inf, epsilon < 0.
    TypeError
        Not an array of numbers.
    """

    def __init__(self, points, times=None, epsilon=None, scene_size=None):
        eps = -1.0 if epsilon is None else _checks.real(epsilon, "epsilon", non_negative=True)
        size = 0.0 if scene_size is None else _checks.real(scene_size, "scene_size",
                                                           non_negative=True)
        self._core = _core.Stroke(points, times, eps, size)

    @property
    def knots(self):
        """numpy.ndarray, (K, 3) float64: the points RDP kept (a copy)."""
        return self._core.knots

    @property
    def epsilon(self):
        """float: the RDP tolerance used."""
        return self._core.epsilon

    @property
    def length(self):
        """float: the arc length, the points' units."""
        return self._core.length

    @property
    def is_straight(self):
        """bool: no part of the curve bends (the frame's normal is then a
        world axis made perpendicular)."""
        return self._core.is_straight

    def position(self, t):
        """The point at `t`: (3,) float64 for a number, (T, 3) for an array."""
        ts, scalar = _parameter(t)
        out = self._core.position(ts)
        return out[0] if scalar else out

    def time(self, t):
        """The timestamp at `t` (linear between the knots' times): a float
        for a number, (T,) for an array."""
        ts, scalar = _parameter(t)
        out = self._core.time(ts)
        return float(out[0]) if scalar else out

    def frame(self, t):
        """The frame at `t`: (3, 3) float64 rows tangent, normal, binormal
        for a number, (T, 3, 3) for an array."""
        ts, scalar = _parameter(t)
        out = self._core.frame(ts)
        return out[0] if scalar else out

    def closest(self, point, return_distance=False):
        """t of the curve point closest to `point` ((3,): a float; (P, 3):
        (P,) float64), and the distances when `return_distance`."""
        p = np.asarray(point)
        scalar = p.ndim == 1
        t, d = self._core.closest(p[None, :] if scalar else p)
        if scalar:
            t, d = float(t[0]), float(d[0])
        return (t, d) if return_distance else t

    def __repr__(self):
        return (f"<springskin.Stroke: {len(self.knots)} knots, length {self.length:.6g}, "
                f"epsilon {self.epsilon:.6g}>")


def _stroke(value, name):
    """The core stroke of a Stroke, or of Stroke(value) for points, errors
    naming `name`."""
    if isinstance(value, Stroke):
        return value._core
    try:
        return Stroke(value)._core
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def pose_joints(joints, baseline, offset, radius, return_selected=False):
    """Line-of-action posing of joint positions (7.2).

    Joints closer than `radius` to the baseline b are selected; each keeps
    t_j (the closest point b(t_j)) and d_j = j - b(t_j), and moves to
    o(t_j) + R_j d_j with R_j = F(o, t_j) F(b, t_j)^-1 (the strokes' frames).
    A straight stroke's roll is ambiguous: when exactly one of the strokes
    is straight it takes the other's binormal (a drawing plane shared by
    both gives the in-plane rotation); both straight: R_j is the smallest
    rotation between the tangents. Unselected joints are unchanged.

    Parameters
    ----------
    joints : array_like, (J, 3)
        Joint positions in the strokes' space.
    baseline, offset : Stroke or array_like (N, 3)
        The baseline drawn along the joints and the offset stroke (arrays
        become ``Stroke(points)``).
    radius : float > 0
        The brush radius, the strokes' units.
    return_selected : bool
        Also return the (J,) bool selection.

    Returns
    -------
    numpy.ndarray, (J, 3) float64 (and the selection).
    """
    radius = _checks.real(radius, "radius", positive=True)
    posed, selected = _core.pose_joints(joints, _stroke(baseline, "baseline"),
                                        _stroke(offset, "offset"), radius)
    return (posed, selected) if return_selected else posed


def pose_from_strokes(rig, frame, baseline, offset, radius, return_selected=False):
    """Line-of-action posing of a skeleton (7.2): per-bone rotations applied
    root first.

    The joints are every bone's posed head and tail; :func:`pose_joints`
    gives their targets; then, parents before children (a child follows its
    parent's change, as in a hierarchy), a bone not connected to its
    parent's tail (roots included) is translated to its head's target when
    the head was selected, and a bone whose tail was selected is rotated
    about its head by the smallest rotation toward the tail's target
    (lengths kept: directions are followed). Connected bones only rotate.

    Parameters
    ----------
    rig : Rig
    frame : array_like (B, 4, 4), or a number, or None
        The pose to start from: skinning matrices (rig space), a frame of
        the rig's animation (``rig.skinning_matrices(frame)``), or None for
        the rest pose.
    baseline, offset : Stroke or array_like (N, 3)
        In rig space.
    radius : float > 0
        Rig-space units.

    Returns
    -------
    numpy.ndarray, (B, 4, 4) float32
        The posed skinning matrices ``S_b = G_b inverse(bind_b)``; Blender's
        armature-space pose matrix of bone b is ``S_b @ bind_b``. With
        `return_selected`, also (B,) uint8: bit 0 head, bit 1 tail selected.
    """
    _checks.rig(rig)
    radius = _checks.real(radius, "radius", positive=True)
    if frame is None:
        frame = rig.rest_pose()
    elif isinstance(frame, numbers.Real) and not isinstance(frame, bool):
        frame = rig.skinning_matrices(frame)
    skinning, selected = _core.pose_from_strokes(rig._core, frame, _stroke(baseline, "baseline"),
                                                 _stroke(offset, "offset"), radius)
    return (skinning, selected) if return_selected else skinning


def surface_points(rig, triangles, barycentric, positions=None):
    """Points of a stroke attached to the surface (7.4).

    Parameters
    ----------
    rig : Rig
    triangles : array_like, (N,) int
        Whole-rig triangle rows: the meshes' triangles concatenated in mesh
        order (mesh m's triangle f is ``sum(triangle counts before m) + f``).
    barycentric : array_like, (N, 3)
        The weights of the triangle's three corners.
    positions : array_like (V, 3), optional
        Whole-rig positions to evaluate on (a deformed frame, any one
        space); default: the rest positions in rig space.

    Returns
    -------
    numpy.ndarray, (N, 3) float64
    """
    _checks.rig(rig)
    return _core.surface_points(rig._core, triangles, barycentric, positions)


def surface_roi(rig, triangles, rings=4):
    """The region of interest of a stroke on the surface (7.4, 5.2).

    The vertices of the triangles under the stroke are kinematic; a
    breadth-first search over the welded mesh edges marks `rings` rings of
    passive vertices and one static ring outside them, exactly as the
    spring node grows its edits' regions. Coincident (welded) vertices share
    their group's role.

    Parameters
    ----------
    rig : Rig
    triangles : array_like, (N,) int
        Whole-rig triangle rows (repeats allowed).
    rings : int in [0, 1000]
        Passive rings (the paper's n = 4).

    Returns
    -------
    dict
        ``roles``: (V,) uint8 (0 free, 1 kinematic, 2 passive, 3 static);
        ``kinematic``: (K,) int64 the distinct kinematic rows a spring edit
        lists (welded representatives, ascending); ``passive``, ``static``:
        the rows with those roles, ascending.
    """
    _checks.rig(rig)
    rings = _checks.integer(rings, "rings", 0, _core.ROI_GROW_LIMIT)
    roles, kinematic = _core.surface_roi(rig._core, triangles, rings)
    return {"roles": roles, "kinematic": kinematic,
            "passive": np.flatnonzero(roles == 2), "static": np.flatnonzero(roles == 3)}


def _rest_rig_space(rig):
    rows = []
    for mesh in rig.meshes:
        m = np.asarray(mesh.object_matrix, dtype=np.float64)
        rows.append(np.asarray(mesh.positions, dtype=np.float64) @ m[:3, :3].T + m[:3, 3])
    return np.concatenate(rows)


def edit_from_stroke(rig, binding, stroke, rings=4, bulge=0.25, stiffness=1.0, keys=None,
                     epsilon=None):
    """A spring node's surface edit from a stroke drawn on the skin (7.4,
    5.2), with the parabolic bulge along the stroke (5.1) as its targets.

    The region is :func:`surface_roi`'s. Each kinematic vertex v gets the
    bind-space offset ``bulge * 4 t (1 - t) * s_v``: s_v its bind scale
    vector, t the stroke parameter closest to its rest position, so |s_v|
    grows by the factor 1 + bulge 4t(1 - t), 1 at both ends of the stroke
    and 1 + bulge in its middle (0.25 is the paper's -(0.5 - t)^2 + 1.25).
    The spring node pulls v toward a'_v + R (s_v + offset_v): the edit is
    stored on the scale vector and follows the skeleton.

    Parameters
    ----------
    rig : Rig
    binding : Binding
        The attachment binding of `rig` (its scale vectors).
    stroke : (triangles, barycentric) or dict with those keys
        The stroke on the surface: (N,) whole-rig triangle rows and (N, 3)
        barycentric coordinates (:func:`surface_points`), e.g. from ray
        casts against the evaluated mesh. Its rest points (rig space) make
        the :class:`Stroke` that places the bulge.
    rings : int in [0, 1000]
        Passive rings (``grow``).
    bulge : float
        Relative growth of the scale vectors in the stroke's middle
        (negative: a dent).
    stiffness : float >= 0
        The edit's weight (``stiffness``).
    keys : array_like (K, 2) of (frame, weight), optional
        The edit's animated weight (frames increasing).
    epsilon : float, optional
        RDP tolerance of the rest stroke (default 0.01 of the rig's rest
        bounding diagonal).

    Returns
    -------
    dict
        One entry of a spring node's ``"edits"`` (docs/deformer-graph.md):
        ``kinematic``, ``offsets``, ``grow``, ``stiffness`` and, when given,
        ``keys``; JSON-ready lists.
    """
    _checks.rig(rig)
    if not isinstance(binding, Binding):
        raise TypeError(f"binding: expected a springskin.Binding, got {type(binding).__name__}")
    if isinstance(stroke, dict):
        try:
            triangles, barycentric = stroke["triangles"], stroke["barycentric"]
        except KeyError as exc:
            raise ValueError(f"stroke: missing key {exc} (expected 'triangles' and "
                             f"'barycentric')") from None
    elif isinstance(stroke, (tuple, list)) and len(stroke) == 2:
        triangles, barycentric = stroke
    else:
        raise TypeError(f"stroke: expected (triangles, barycentric) or a dict with those "
                        f"keys, got {type(stroke).__name__}")
    bulge = _checks.real(bulge, "bulge")
    stiffness = _checks.real(stiffness, "stiffness", non_negative=True)
    region = surface_roi(rig, triangles, rings)
    points = surface_points(rig, triangles, barycentric)
    rest = _rest_rig_space(rig)
    size = float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0)))
    path = Stroke(points, epsilon=epsilon, scene_size=size if size > 0 else None)
    offsets = _core.bulge_offsets(rig._core, binding._core, path._core, region["kinematic"],
                                  bulge)
    edit = {"kinematic": [int(v) for v in region["kinematic"]],
            "offsets": offsets.astype(float).tolist(),
            "grow": int(rings), "stiffness": stiffness}
    if keys is not None:
        k = np.asarray(keys, dtype=float)
        if k.ndim != 2 or k.shape[1] != 2:
            raise ValueError(f"keys: expected shape (K, 2), got {k.shape}")
        edit["keys"] = k.tolist()
    return edit
