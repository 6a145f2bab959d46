"""Attachment bindings (Toothman 2020, ch. 3; Toothman & Neff 2017)."""

from . import _checks
from . import _core

__all__ = ["Binding", "load_binding"]


class Binding:
    """An attachment binding: each vertex attached to one bone.

    Made by :meth:`Rig.bind` or :func:`load_binding`. Vertex i is attached
    to bone ``bones[i]`` at ``t[i]`` in [0, 1] along its segment head p ->
    tail c: attachment point ``a_i = p + t_i (c - p)`` and scale vector
    ``s_i = v_i - a_i``, in rig space at bind (Toothman 2020, 3.1). The
    rigid, IRS, radial and spring deformers move ``a_i`` with the posed bone
    and rotate ``s_i``.

    Attributes
    ----------
    vertex_count : int
        #V of the whole rig (rows: meshes concatenated).
    bone_count : int
        #B of the rig it was made for.
    bones : numpy.ndarray, (V,) int32, read-only
        Attached bone per vertex.
    t : numpy.ndarray, (V,) float32, read-only
        Parameter along the bone, in [0, 1].
    scale_vectors : numpy.ndarray, (V, 3) float32, read-only
        ``s_i`` at bind, rig space, model units.
    rig_hash : int
        :attr:`Rig.hash` of the rig it was made for.
    method : str
        The binding method used ("direct", "weights" or "planar"; never
        "auto").
    smooth_iterations : int
    max_distance : float
    seconds : float
        Time the binding took (or the load, for a reused cache).
    has_cor : bool
        The binding holds precomputed centers of rotation for CoR skinning
        (``Rig.bind(cor=True)``, ``springskin bind --cor``).
    cor_seconds : float
        Time their precomputation took (0 without).
    has_implicit : bool
        The binding holds implicit skinning's bind data (Vaillant 2015, 4.4
        and Eq. 4.6: every bone's field sampled into its 32^3 grid, the
        mean value coordinates and rest normals of the tangential
        relaxation; ``Rig.bind(implicit=True)``, ``springskin bind
        --implicit``): a ``"implicit"`` deformer or bake given the binding
        takes them instead of fitting them again.
    implicit_field_count : int
        Bones with a field among them (0 without).
    implicit_seconds : float
        Time their fit took (0 without, and for a loaded binding).
    implicit_current : bool
        The implicit data are what this build would fit (same fit
        parameters and fit algorithm version); when False an implicit
        deformer fits the fields again.
    reused : bool
        True when :meth:`Rig.bind` loaded it from its ``cache`` file.
    """

    def __init__(self):
        raise TypeError("Binding objects come from Rig.bind() or springskin.load_binding()")

    @classmethod
    def _wrap(cls, core, reused=False, rig=None):
        self = cls.__new__(cls)
        self._core = core
        self._rig = rig  # the rig it was made or checked for (report())
        info = core.info()
        self.vertex_count = info["vertex_count"]
        self.bone_count = info["bone_count"]
        self.bones = info["bones"]
        self.t = info["t"]
        self.scale_vectors = info["scale_vectors"]
        self.rig_hash = info["rig_hash"]
        self.method = info["method"]
        self.smooth_iterations = info["smooth_iterations"]
        self.max_distance = info["max_distance"]
        self.seconds = info["seconds"]
        self.has_cor = bool(info["has_cor"])
        self.cor_seconds = info["cor_seconds"]
        self.has_implicit = bool(info["has_implicit"])
        self.implicit_field_count = info["implicit_field_count"]
        self.implicit_seconds = info["implicit_seconds"]
        self.implicit_current = bool(info["implicit_current"])
        self.reused = bool(reused)
        return self

    def matches(self, rig):
        """True when this binding was made for `rig` (same :attr:`Rig.hash`)."""
        _checks.rig(rig)
        return self.rig_hash == rig.hash

    def save(self, path):
        """Write the binding file ("SSKBIND1", little-endian, see
        ``core/bind/binding_io.c``, the hash ``core/model/rig_hash.c``): the rig hash, the parameters and per vertex
        the bone, t and scale vector (and the centers of rotation and
        implicit data it holds); written to a temporary name and renamed.

        Parameters
        ----------
        path : str or os.PathLike

        Raises
        ------
        OSError
            The file cannot be written.
        """
        self._core.save(_checks.path(path, "path"))

    def report(self, rig=None):
        """Binding quality (Toothman 2020, Fig. 7-9).

        Parameters
        ----------
        rig : Rig, optional
            The rig it was made for; default: the rig of :meth:`Rig.bind`
            or of ``load_binding(path, rig)``.

        Returns
        -------
        dict
            ``mean_scale_length``, ``max_scale_length`` (``|s_i|``, model
            units), ``max_attachment_gap`` (largest ``|a_i - a_j|`` over
            neighbors, welded across seams), ``off_weight_share`` (share of
            vertices attached to a bone other than their largest-weight
            bone, in [0, 1]); and the vertices likely to give artifacts to
            rigid, IRS and the springs (``ssk_binding_report``):
            ``unrelated_neighbor_vertices`` (a neighbor attached to a bone
            that is neither theirs nor its parent or child),
            ``unrelated_bones`` (the bone index pair most of them sit
            between, ``(-1, -1)`` when none) and
            ``unrelated_pair_vertices``, ``weak_bone_vertices`` (attached to
            a bone that weights nothing or shorter than 2% of the skeleton),
            ``far_from_weights_vertices`` (attachment point farther from the
            weights' center than the vertex is from it).

        Raises
        ------
        ValueError
            The binding is not `rig`'s, or no rig is known (a binding
            loaded without one: pass ``rig``).
        """
        if rig is None:
            rig = self._rig
            if rig is None:
                raise ValueError("report: this binding was loaded without its rig: pass "
                                 "report(rig) or load_binding(path, rig)")
        _checks.rig(rig)
        return self._core.report(rig._core)

    def __repr__(self):
        return (f"<springskin.Binding: {self.vertex_count} vertices, {self.bone_count} bones, "
                f"method {self.method}, {self.smooth_iterations} smoothing iterations>")


def load_binding(path, rig=None):
    """Load a binding file written by :meth:`Binding.save` (or ``springskin
    bind -o``).

    Parameters
    ----------
    path : str or os.PathLike
    rig : Rig, optional
        When given, the binding must have been made for it.

    Returns
    -------
    Binding

    Raises
    ------
    FileNotFoundError
        No such file.
    OSError
        Unreadable, truncated, or not a binding file.
    ValueError
        Made for another rig (``status`` ``"SSK_ERROR_BINDING_MISMATCH"``).
    """
    path = _checks.existing_file(path, "path")
    core_rig = None
    if rig is not None:
        core_rig = _checks.rig(rig)._core
    return Binding._wrap(_core.load_binding(path, core_rig), rig=rig)
