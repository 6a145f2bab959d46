"""springskin.ImplicitOperators: the composition operators of implicit
skinning (Vaillant 2015, 4.5; issue #20), built once and shared."""

from . import _checks
from . import _core

__all__ = ["ImplicitOperators"]

#: Grid points per axis of the paper (4.6.2.2: 128^3), the default.
DEFAULT_RESOLUTION = 128
MIN_RESOLUTION = 8
MAX_RESOLUTION = 512


class ImplicitOperators:
    """The composition operators of implicit skinning: the contact operator
    g_dc and the bulge-in-contact operator g_db (Vaillant 2015, 4.5), each a
    grid over (f1, f2, d) solved by bi-harmonic interpolation.

    They depend on nothing but the resolution, and take about 1.3 to 2 s to
    build at 128 (0.3 s at 64): make one and pass it to every implicit
    :class:`Deformer` (``Deformer(rig, method="implicit",
    implicit_operators=ops)``) instead of letting each deformer build its
    own. Read-only once made: one object serves deformers of any rigs on
    any threads; each deformer given it keeps it alive.

    Parameters
    ----------
    resolution : int, default 128
        Grid points per axis, 8 to 512 (memory: 2 x resolution^3 floats,
        16 MiB at 128).

    Raises
    ------
    TypeError
        `resolution` is not an int.
    ValueError
        `resolution` outside [8, 512].
    MemoryError
        No memory for the grids.
    """

    def __init__(self, resolution=DEFAULT_RESOLUTION):
        resolution = _checks.integer(resolution, "resolution", MIN_RESOLUTION, MAX_RESOLUTION)
        self._core = _core.ImplicitOperators(resolution)

    @property
    def resolution(self):
        """int: grid points per axis."""
        return self._core.resolution

    def __repr__(self):
        return f"<springskin.ImplicitOperators {self.resolution}^3>"
