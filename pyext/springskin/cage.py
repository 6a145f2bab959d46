"""springskin.Cage: coupled cages and skeletons (Corda et al. 2020; issue
#21): a closed cage bound to a rig at rest, whose edits reshape the rig
(rest shape and joints) and carry its poses over."""

from . import _checks
from . import _core
from .rig import Rig

__all__ = ["Cage"]


def _binding_core(binding):
    """The core Binding of `binding` (a Binding or None)."""
    if binding is None:
        return None
    from .binding import Binding
    if not isinstance(binding, Binding):
        raise TypeError(f"binding: expected a springskin.Binding or None, got "
                        f"{type(binding).__name__}")
    return binding._core


class Cage:
    """A cage bound to a rig at rest (``ssk_cage``; Corda et al. 2020).

    Binding computes every rest vertex's 3D mean value coordinates Phi
    with respect to the cage (Ju et al. 2005; ``M = Phi C``, Eq. 7), every
    bone head's coordinates Psi (Eq. 9-12) and the cage updater's factors
    (4.1, Eq. 8). Editing the rest cage then reshapes the character:
    :meth:`reshape` gives the rig the edited cage describes (rest positions
    ``Phi C'``, bone heads ``Psi C'``), :meth:`pose` carries the original
    rig's skinning matrices over to it, and :meth:`fit` gives the posed
    cage of deformed positions and :meth:`reverse` maps an edit of the
    posed cage back to the rest cage (CageRev). :func:`bake` takes ``cage=`` and
    ``cage_edit=`` to bake the reshaped character.

    Parameters
    ----------
    rig : Rig
        The rig to bind (loaded or built from arrays). The cage keeps it
        alive.
    vertices : array_like, (c, 3) float32 or float64
        The rest cage in rig space (the space of the skeleton and of
        :meth:`Rig.sample`'s matrices; a mesh's rest positions are mapped
        to it by its object matrix); c >= 4, at most the rig's vertex
        count (the cage updater needs as many rig vertices).
    triangles : array_like, (t, 3) integer
        Cage vertex indices in [0, c); a closed, consistently oriented
        surface (outward normals, counter-clockwise seen from outside),
        t >= 4. Every bone head must lie inside it.
    binding : Binding, optional
        An attachment binding of `rig` (:func:`bind`, :func:`load_binding`)
        that keeps the cage binding (``ssk_cage_create_cached``; binding
        file format version 4): when it holds this rest cage's (same
        vertices and triangles), Phi, Psi and the MaxVol rows are taken
        from it and the cage behaves bit for bit as a freshly bound one;
        otherwise the cage is bound and its binding stored in `binding`
        (replacing another cage's; :meth:`Binding.save` keeps it). The
        binding is written: do not share it with a running call.

    Attributes
    ----------
    rig : Rig
        The rig the cage is bound to.
    vertex_count, triangle_count : int
        c and t.
    vertices : numpy.ndarray, (c, 3) float32, read-only
        The rest cage, rig space (a copy of what was given or read).
    triangles : numpy.ndarray, (t, 3) int32, read-only
    from_binding : bool
        True when `binding` held this cage's binding (not bound again).

    Raises
    ------
    TypeError
        `rig` is not a Rig; an array of the wrong dtype kind (integer
        vertices, float triangles, bool, complex, object); `binding`
        is not a Binding.
    ValueError
        A wrong shape (``vertices: expected shape (c, 3), got (8, 2)``),
        NaN or infinity, fewer than 4 vertices or triangles, an index out
        of range, an open or inconsistently oriented cage, a bone head
        outside it (named), more cage vertices than rig vertices, a
        singular cage updater system.
    SpringSkinError
        `binding` is another rig's (``status`` ``"SSK_ERROR_BINDING_MISMATCH"``).

    Notes
    -----
    One call at a time runs on a cage (a lock; :meth:`reshape` and a bake
    change the heads :meth:`pose` uses): share it between threads freely.
    """

    def __init__(self, rig, vertices, triangles, binding=None):
        _checks.rig(rig)
        self._rig = rig
        self._core = _core.Cage(rig._core, vertices, triangles, _binding_core(binding))

    @classmethod
    def load(cls, path, rig, binding=None):
        """Read a cage with Assimp and bind it to `rig`.

        Every mesh of the file is read through its node's global matrix
        into the file's root space, which is taken to be the scene root
        space of the character the cage was made for (the file `rig` was
        loaded from: a cage modelled over the character in a DCC and
        exported from the same scene), then into `rig`'s rig space
        (``ssk_cage_mesh_import``). For a rig built from arrays the file's
        root space is rig space. Vertices at exactly the same position are
        merged (OBJ repeats a corner per normal).

        Parameters
        ----------
        path : str or os.PathLike
            OBJ, or any format Assimp reads.
        rig : Rig
            The rig to bind, :func:`load`-ed or built from arrays.
        binding : Binding, optional
            As for :class:`Cage`.

        Returns
        -------
        Cage

        Raises
        ------
        FileNotFoundError, IsADirectoryError
            No such file.
        SpringSkinError
            Assimp cannot read it (``status`` ``"SSK_ERROR_IMPORT"``).
        ValueError
            Fewer than 4 vertices or triangles, a non-finite vertex, and
            the errors of binding (see :class:`Cage`).
        """
        path = _checks.existing_file(path, "path")
        _checks.rig(rig)
        cage = cls.__new__(cls)
        cage._rig = rig
        cage._core = _core.Cage.load(path, rig._core, _binding_core(binding))
        return cage

    @property
    def from_binding(self):
        return self._core.from_binding

    @property
    def rig(self):
        return self._rig

    @property
    def vertex_count(self):
        return self._core.vertex_count

    @property
    def triangle_count(self):
        return self._core.triangle_count

    @property
    def vertices(self):
        return self._core.vertices

    @property
    def triangles(self):
        return self._core.triangles

    def reshape(self, edited_vertices):
        """The rig an edited rest cage describes (``ssk_cage_reshape``).

        Rest positions ``Phi C'`` (Eq. 7) and bone heads ``Psi C'``
        (Eq. 13); bind matrices keep their rest rotation and move with
        their heads, a connected chain stays connected; meshes, triangles,
        weights, object matrices and names are the rig's. The rest cage
        itself (:attr:`vertices`) gives the rig's rest shape back bit for
        bit. The heads are also kept for :meth:`pose`.

        Parameters
        ----------
        edited_vertices : array_like, (c, 3) float32 or float64
            The edited rest cage, rig space, the cage's topology.

        Returns
        -------
        Rig
            A new rig built from arrays (no animation: pose it with
            :meth:`pose` of the original rig's matrices), independent of
            the cage and of the original rig.

        Raises
        ------
        TypeError, ValueError
            A wrong dtype kind, shape (``edited_vertices: expected shape
            (c, 3) = (8, 3), got (7, 3)``) or a non-finite value; the rig
            creation errors.
        """
        return Rig._from_core(self._core.reshape(edited_vertices))

    def pose(self, skinning_matrices):
        """Carry skinning matrices of the original rig over to the last
        reshaped rig (``ssk_cage_pose``; 4.2).

        Rotations are kept, translations recomputed down the hierarchy
        from the heads of the last :meth:`reshape` (before any, the rig's
        own heads: the matrices come back unchanged up to rounding).

        Parameters
        ----------
        skinning_matrices : array_like, (B, 4, 4) or (F, B, 4, 4), float32 or float64
            ``S_b = G_b(pose) @ inverse(bind_b)`` of the original rig, rig
            space (:meth:`Rig.skinning_matrices`), or a stack of F poses.

        Returns
        -------
        numpy.ndarray, (B, 4, 4) or (F, B, 4, 4) float32
            The reshaped rig's skinning matrices, rig space: pass them to a
            :class:`Deformer` of the reshaped rig.

        Raises
        ------
        TypeError, ValueError
            A wrong dtype kind, shape (``skinning_matrices: expected shape
            (B, 4, 4) = (54, 4, 4), got (54, 4)``), NaN or infinity; a
            result that is not finite.
        """
        return self._core.pose(skinning_matrices)

    def fit(self, positions):
        """The posed cage of deformed positions (``ssk_cage_fit``; the
        cage updater, 4.1, Eq. 8).

        Solves ``Phi~ C' = M~'`` at the cage updater's MaxVol vertices
        (back-substitution): a cage that follows the character, e.g. to
        draw it over a deformed frame.

        Parameters
        ----------
        positions : array_like, (V, 3) float32 or float64
            Deformed whole-rig positions in rig space (a deformer's result
            is in each mesh's object space: map mesh m's rows by its object
            matrix first, ``p @ M[:3, :3].T + M[:3, 3]``).

        Returns
        -------
        numpy.ndarray, (c, 3) float32
            The cage vertices, rig space.

        Raises
        ------
        TypeError, ValueError
            A wrong dtype kind, shape or a non-finite value.
        """
        return self._core.fit(positions)

    def reverse(self, skinning_matrices, posed_offset):
        """The rest-cage offset that moves the posed cage by `posed_offset`
        (``ssk_cage_reverse``; CageRev, 4.3, Eq. 19).

        For a pose with skinning matrices S, the offset dC of the rest cage
        such that reshaping by ``C + dC`` (:meth:`reshape`), carrying S over
        (:meth:`pose`), skinning by LBS and fitting the cage (:meth:`fit`)
        moves the posed cage by exactly ``posed_offset`` (the loop C' -> C
        -> S -> S' -> C'). Linear in `posed_offset` and independent of the
        current rest cage (only the rotations of S enter). Exact for LBS;
        for the other methods an approximation (the LBS system is used:
        about 21% of the offset off with DQS at a 75-degree bend).

        Parameters
        ----------
        skinning_matrices : array_like, (B, 4, 4) float32 or float64
            The pose, rig space: the original rig's (:meth:`Rig.skinning_matrices`)
            or :meth:`pose`'s (the same rotations).
        posed_offset : array_like, (c, 3) float32 or float64
            dC', the edit made on the posed cage, rig space.

        Returns
        -------
        numpy.ndarray, (c, 3) float32
            dC, the offset of the rest cage, rig space.

        Raises
        ------
        TypeError, ValueError
            A wrong dtype kind, shape (``posed_offset: expected shape
            (c, 3) = (8, 3), got (7, 3)``), NaN or infinity; a singular
            system (``status`` ``"SSK_ERROR_BIND"``).
        """
        return self._core.reverse(skinning_matrices, posed_offset)

    def __repr__(self):
        return (f"<springskin.Cage: {self.vertex_count} vertices, {self.triangle_count} "
                f"triangles, bound to {self.rig!r}>")
