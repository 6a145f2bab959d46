"""springskin.CorState: the centers of rotation of CoR skinning kept for
incremental updates (issue #18)."""

import numpy as np

from . import _checks
from . import _core

__all__ = ["CorState"]


class CorState:
    """Centers of rotation (Le & Hodgins 2016, Eq. 1 and 4) of a rig, kept so
    that a weight edit recomputes only what it changes.

    Made like ``Rig.bind(cor=True)`` computes them (CPU, the sums per bone
    pair over cells of weight space, ``core/bind/cor_cells.c``). After the
    weights of a few vertices change, :meth:`update` with the edited rig and
    their rows makes the leaves around them again and adds the differences
    of the changed cells to every other vertex: on a 56k-vertex body, 10
    edited vertices take under 1% of the full precomputation. The result
    equals a full precomputation of the edited rig within 1e-5 of the
    bounding-box diagonal.

    Parameters
    ----------
    rig : Rig
        The rig (any number of meshes; coincident vertices share a center).
    sigma : float, default 0.1
        Width of Eq. 1's kernel.
    epsilon : float, default 0.1
        Subdivision threshold of the integration mesh (weight distance).
    progress : callable, optional
        Called as ``progress(fraction)`` (0 to 1) on the calling thread
        during the precomputation; an exception it raises is printed and
        it is not called again.

    Attributes
    ----------
    centers : numpy.ndarray, (V, 3) float32
        A copy of the centers, rig space; a vertex without a center holds
        its rest position.
    flags : numpy.ndarray, (V,) bool
        A copy: True where the vertex has a center (two or more bones).

    Raises
    ------
    ValueError
        Parameters out of range.
    """

    def __init__(self, rig, sigma=0.1, epsilon=0.1, progress=None):
        _checks.rig(rig)
        sigma = _checks.real(sigma, "sigma", positive=True)
        epsilon = _checks.real(epsilon, "epsilon", positive=True)
        if progress is not None and not callable(progress):
            raise TypeError(f"progress: expected a callable or None, got "
                            f"{type(progress).__name__}")
        self._rig_vertices = rig.vertex_count
        self._core = _core.CorState(rig._core, sigma, epsilon, progress)

    @property
    def centers(self):
        return self._core.centers

    @property
    def flags(self):
        return self._core.flags

    def update(self, rig, rows):
        """Recompute after the weights of `rows` changed.

        Parameters
        ----------
        rig : Rig
            The rig with the new weights: the same vertices, triangles and
            bones as the one the state was made with.
        rows : array_like of int, (N,)
            Whole-rig rows whose weights changed; a row may gain or lose
            bones (its triangles' bone sets are made again).

        Returns
        -------
        dict
            ``cor_count`` (centers recomputed), ``cells`` (weight-space cells
            changed), ``seconds``.

        Raises
        ------
        ValueError
            Another rig's size, a row out of range or not 1-D.
        TypeError
            `rig` is not a Rig.
        """
        _checks.rig(rig)
        rows = np.asarray(rows)
        if rows.dtype.kind not in "iu":
            raise TypeError(f"rows: expected integer row indices, got dtype {rows.dtype}")
        if rows.size and (rows.min() < 0 or rows.max() >= rig.vertex_count):
            raise ValueError(f"rows: expected indices in [0, {rig.vertex_count}), got "
                             f"{int(rows.min())}..{int(rows.max())}")
        return self._core.update(rig._core, rows.astype(np.uint32))

    def __repr__(self):
        return f"<springskin.CorState: {self._rig_vertices} vertices>"
