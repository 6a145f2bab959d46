"""Strokes, line-of-action posing and surface edits from strokes (issue #22;
springskin.sketch, core/model/stroke*.c, line_of_action.c, surface_roi.c,
core/bind/stroke_bulge.c): RDP on known polylines, the curve through its
knots, orthonormal frames, posing a straight chain onto a known arc, the
region of a stroke on BCN_Epileptic.X against a breadth-first search
written here, and a bulge edit through the spring node that moves nothing
outside its region."""

from collections import deque

import numpy as np
import pytest

import springskin
from api_helpers import BCN, limb_arrays, needs_models


# --- strokes ---------------------------------------------------------------------

def test_rdp_keeps_the_expected_points():
    # epsilon 1: (4,3) is 3 from the chord; (3,0) 1.8 from (0,0)-(4,3); the
    # rest within 1 of their chords (hand-computed, as test_stroke.c)
    points = [[0, 0], [1, 0.5], [2, -0.5], [3, 0], [4, 3], [5, 0], [6, 0]]
    s = springskin.Stroke(points, epsilon=1.0)
    np.testing.assert_array_equal(s.knots, [[0, 0, 0], [3, 0, 0], [4, 3, 0], [6, 0, 0]])
    # window strokes: 8 px by default; a tent 20 px high with a 3 px wobble
    # (none within 20 px of the corner) keeps its corner only
    x = np.arange(0, 200, 2.0)
    y = (np.where(x <= 100, 0.2 * x, 20 * (198 - x) / 98)
         + 3.0 * np.sin(x / 7.0) * (np.abs(x - 100) > 20))
    y[0] = y[-1] = 0.0
    y[50] = 20.0
    s = springskin.Stroke(np.c_[x, y])
    assert s.epsilon == springskin.sketch.STROKE_EPSILON_WINDOW_PX
    np.testing.assert_array_equal(s.knots, [[0, 0, 0], [100, 20, 0], [198, 0, 0]])
    # 3D: 0.01 of the scene size
    s = springskin.Stroke([[0, 0, 0], [1, 0.004, 0], [2, 0, 0]], scene_size=1.0)
    assert s.epsilon == pytest.approx(0.01) and len(s.knots) == 2
    s = springskin.Stroke([[0, 0, 0], [1, 0.02, 0], [2, 0, 0]], scene_size=1.0)
    assert len(s.knots) == 3


def test_curve_passes_through_knots_with_continuous_tangents():
    rng = np.random.default_rng(5)
    points = np.cumsum(rng.normal(size=(12, 3)), axis=0)
    s = springskin.Stroke(points, times=np.arange(12) * 0.5, epsilon=0.0)
    assert len(s.knots) == 12
    t, d = s.closest(s.knots, return_distance=True)
    assert np.all(d < 1e-9)
    np.testing.assert_allclose(s.position(t), s.knots, atol=1e-9)
    assert t[0] == 0.0 and t[-1] == 1.0 and np.all(np.diff(t) > 0)
    np.testing.assert_allclose(s.time(t), np.arange(12) * 0.5, atol=1e-9)
    h = 1e-7
    before, after = s.frame(t[1:-1] - h), s.frame(t[1:-1] + h)
    assert np.abs(before[:, 0] - after[:, 0]).max() < 1e-4   # tangents (C1)
    assert np.abs(before[:, 1] - after[:, 1]).max() < 1e-4   # normals (C2)
    frames = s.frame(np.linspace(0, 1, 2001))
    gram = frames @ frames.transpose(0, 2, 1)
    assert np.abs(gram - np.eye(3)).max() < 1e-6
    np.testing.assert_allclose(np.cross(frames[:, 0], frames[:, 1]), frames[:, 2], atol=1e-6)
    assert s.frame(0.3).shape == (3, 3) and s.position(0.3).shape == (3,)


def test_stroke_errors():
    with pytest.raises(ValueError, match=r"points: expected shape \(N, 2\) or \(N, 3\)"):
        springskin.Stroke(np.zeros((5, 4)))
    with pytest.raises(ValueError, match="2 distinct points"):
        springskin.Stroke([[1, 1, 1], [1, 1, 1]])
    with pytest.raises(ValueError, match="non-finite"):
        springskin.Stroke([[0, 0], [np.nan, 1]])
    with pytest.raises(TypeError, match="points"):
        springskin.Stroke([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match="epsilon"):
        springskin.Stroke([[0, 0], [1, 1]], epsilon=-1)
    with pytest.raises(ValueError, match=r"times: expected shape \(N,\) = \(2,\)"):
        springskin.Stroke([[0, 0], [1, 1]], times=[0, 1, 2])


# --- line of action --------------------------------------------------------------

L = 1.5
R = 2 * L / np.pi  # a quarter arc of length L


def arc(s):
    a = np.asarray(s) / R
    return np.stack([R * np.sin(a), R - R * np.cos(a), np.zeros_like(a)], axis=-1)


def test_pose_joints_puts_a_straight_chain_on_the_arc():
    s = np.linspace(0, L, 300)
    baseline = np.c_[s, 0 * s, 0 * s]
    offset = arc(s)
    x = np.linspace(0, L, 11)
    side = 0.05 * L
    joints = np.concatenate([np.c_[x, 0 * x, 0 * x], np.c_[x, 0 * x + side, 0 * x],
                             [[0.5 * L, 0.5 * L, 0.0]]])
    posed, selected = springskin.pose_joints(joints, springskin.Stroke(baseline, epsilon=0),
                                             springskin.Stroke(offset, epsilon=0), 0.1 * L,
                                             return_selected=True)
    assert selected[:22].all() and not selected[22]
    np.testing.assert_array_equal(posed[22], joints[22])
    center = np.array([0, R, 0])
    assert np.abs(posed[:11] - arc(x)).max() < 1e-4 * L              # on the arc, by length
    radial = np.linalg.norm(posed[11:22] - center, axis=1)
    assert np.abs(radial - (R - side)).max() < 1e-4 * L               # offsets kept, rotated
    with pytest.raises(ValueError, match="radius"):
        springskin.pose_joints(joints, baseline, offset, 0.0)
    with pytest.raises(ValueError, match=r"joints: expected shape \(J, 3\)"):
        springskin.pose_joints(joints[:, :2], baseline, offset, 1.0)
    with pytest.raises(TypeError, match=r"^baseline: points: expected real numbers"):
        springskin.pose_joints(joints, "abc", offset, 1.0)
    with pytest.raises(ValueError, match=r"^offset: .*2 distinct points"):
        springskin.pose_joints(joints, baseline, [[0, 0, 0], [0, 0, 0]], 1.0)


def test_pose_from_strokes_bends_a_limb_along_the_arc():
    args = limb_arrays(rings=20, bones=6, length=L)
    rig = springskin.Rig(**args)
    s = np.linspace(0, L, 300)
    baseline = np.c_[0 * s, s, 0 * s]                  # along the chain (+Y)
    a = arc(s)
    offset = np.c_[-a[:, 1], a[:, 0], a[:, 2]]          # the arc turned x -> y
    skin, selected = springskin.pose_from_strokes(rig, None, baseline, offset, 0.05 * L,
                                                  return_selected=True)
    assert skin.shape == (6, 4, 4) and skin.dtype == np.float32
    assert (selected == 3).all()
    heads = np.einsum("bij,bj->bi", skin[:, :3, :3], args["heads"]) + skin[:, :3, 3]
    tails = np.einsum("bij,bj->bi", skin[:, :3, :3], args["tails"]) + skin[:, :3, 3]
    np.testing.assert_allclose(heads[1:], tails[:-1], atol=1e-5)          # connected
    np.testing.assert_allclose(np.linalg.norm(tails - heads, axis=1), L / 6, atol=1e-5)
    center = np.array([-R, 0, 0])
    gap = L / 6 - 2 * R * np.sin(L / 6 / R / 2)        # chord error per bone
    radial = np.linalg.norm(tails - center, axis=1)
    assert np.all(np.abs(radial - R) <= np.arange(1, 7) * gap + 1e-5)
    # the last bone lies along the chord of the arc's last sixth: 82.5 degrees
    last = np.radians(82.5)
    np.testing.assert_allclose(skin[-1][:3, 1] / np.linalg.norm(skin[-1][:3, 1]),
                               [-np.sin(last), np.cos(last), 0], atol=0.01)
    # the deformed limb follows: its top ring ends near the arc's end
    posed = springskin.Deformer(rig, method="lbs", backend="cpu").deform(skin)
    top = posed[args["positions"][:, 1] > L - 1e-6].mean(axis=0)
    assert np.linalg.norm(top - np.array([-R, R, 0])) < 0.05 * L


# --- surface regions and edits on BCN_Epileptic.X --------------------------------

@pytest.fixture(scope="module")
def bcn():
    return springskin.load(BCN)


def _rest(rig):
    return np.concatenate([m.positions @ m.object_matrix[:3, :3].T + m.object_matrix[:3, 3]
                           for m in rig.meshes])


def _stroke_on(rig, a, b, samples=12):
    """A stroke from vertex a to vertex b: each sample on the segment takes
    the triangle whose rest centroid is nearest, at its centroid."""
    rest = _rest(rig)
    tri = np.concatenate([m.triangles + m.first_vertex for m in rig.meshes])
    centroids = rest[tri].mean(axis=1)
    rows = []
    for u in np.linspace(0, 1, samples):
        p = (1 - u) * rest[a] + u * rest[b]
        rows.append(int(np.argmin(np.linalg.norm(centroids - p, axis=1))))
    return np.array(rows), np.full((len(rows), 3), 1.0 / 3.0), tri


def _bfs_roles(rig, tri, rows, rings):
    """Roles by a breadth-first search over welded triangle edges."""
    rep = np.asarray(rig.weld["points"])
    neighbors = {}
    for t in tri:
        r = rep[t]
        for i in range(3):
            for j in range(3):
                if r[i] != r[j]:
                    neighbors.setdefault(r[i], set()).add(r[j])
    dist = {}
    queue = deque()
    for v in rep[tri[rows]].ravel():
        if v not in dist:
            dist[v] = 0
            queue.append(v)
    while queue:
        v = queue.popleft()
        if dist[v] > rings:
            continue
        for w in neighbors.get(v, ()):
            if w not in dist:
                dist[w] = dist[v] + 1
                queue.append(w)
    roles = np.zeros(rig.vertex_count, np.uint8)
    for v in range(rig.vertex_count):
        d = dist.get(rep[v])
        if d is not None:
            roles[v] = 1 if d == 0 else (2 if d <= rings else 3)
    return roles


def _endpoints(rig):
    rest = _rest(rig)
    diag = np.linalg.norm(rest.max(0) - rest.min(0))
    a = int(np.argmax(rest[:, 0]))      # an extreme vertex (a hand or arm tip)
    d = np.linalg.norm(rest - rest[a], axis=1)
    b = int(np.argmin(np.abs(d - 0.1 * diag)))
    return a, b


@needs_models
@pytest.mark.parametrize("rings", [0, 4, 8])
def test_surface_roi_equals_a_breadth_first_search(bcn, rings):
    a, b = _endpoints(bcn)
    rows, bary, tri = _stroke_on(bcn, a, b)
    region = springskin.surface_roi(bcn, rows, rings=rings)
    expected = _bfs_roles(bcn, tri, rows, rings)
    np.testing.assert_array_equal(region["roles"], expected)
    rep = np.asarray(bcn.weld["points"])
    np.testing.assert_array_equal(region["kinematic"],
                                  np.unique(rep[tri[rows]].ravel()))
    np.testing.assert_array_equal(region["passive"], np.flatnonzero(expected == 2))
    assert len(region["kinematic"]) >= 3
    if rings:
        assert len(region["passive"]) > len(region["kinematic"])
        assert len(region["static"]) > 0


@needs_models
def test_bulge_edit_through_the_spring_node_moves_only_its_region(bcn):
    a, b = _endpoints(bcn)
    rows, bary, tri = _stroke_on(bcn, a, b)
    binding = bcn.bind()
    edit = springskin.edit_from_stroke(bcn, binding, (rows, bary), rings=4, bulge=0.5,
                                       keys=[[0, 0.0], [10, 1.0]])
    assert edit["grow"] == 4 and len(edit["offsets"]) == len(edit["kinematic"])
    region = springskin.surface_roi(bcn, rows, rings=4)
    assert edit["kinematic"] == region["kinematic"].tolist()
    # the offsets are bulge * 4 t (1 - t) * s: zero at the stroke's ends
    offsets = np.array(edit["offsets"])
    scale = np.asarray(binding.scale_vectors, dtype=np.float64)[edit["kinematic"]]
    ratio = np.einsum("ij,ij->i", offsets, scale) / np.einsum("ij,ij->i", scale, scale)
    assert ratio.min() >= -1e-6 and ratio.max() <= 0.5 + 1e-6 and ratio.max() > 0.3

    def graph(edits):
        return {"version": 1, "nodes": [
            {"id": "skin", "type": "skinning", "method": "rigid"},
            {"id": "relax", "type": "spring", "max_iterations": 400, "edits": edits},
            {"id": "out", "type": "output"}],
            "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}

    rest = bcn.rest_pose()
    plain = springskin.Deformer(bcn, graph=graph([]), binding=binding, backend="cpu")
    edited = springskin.Deformer(bcn, graph=graph([edit]), binding=binding, backend="cpu")
    base = plain.deform(rest, frame=10).copy()
    out = edited.deform(rest, frame=10).copy()
    outside = region["roles"] == 0
    assert np.abs(out[outside] - base[outside]).max() <= 1e-6
    moved = np.linalg.norm(out - base, axis=1)
    kin = np.asarray(edit["kinematic"])
    assert moved[kin].max() > 0.05 * np.linalg.norm(scale, axis=1).mean()
    # outward: along the offsets
    along = np.einsum("ij,ij->i", (out - base)[kin], offsets)
    assert along[ratio > 0.2].min() > 0
    # keyed: weight 0 at frame 0 is no edit at all
    with pytest.raises(TypeError, match="binding: expected a springskin.Binding"):
        springskin.edit_from_stroke(bcn, None, (rows, bary))
    with pytest.raises(ValueError, match="triangle row 99999 out of range"):
        springskin.edit_from_stroke(bcn, binding, ([99999], [[1, 0, 0]]))
    edited0 = springskin.Deformer(bcn, graph=graph([edit]), binding=binding, backend="cpu")
    np.testing.assert_allclose(edited0.deform(rest, frame=0), base, atol=1e-6)
