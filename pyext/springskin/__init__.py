"""SpringSkin: character skinning on numpy arrays.

The Python API of the SpringSkin C core (``core/include/springskin.h``):
import rigged files or build rigs from arrays, bind, deform with linear
blend skinning, dual quaternion skinning, Toothman's rigid attachment,
incremental rotation and spring deformers, centers of rotation, implicit
skinning (:class:`ImplicitOperators`) or a deformer graph, reshape a
character with a cage (:class:`Cage`), on the CPU
(the core's own thread pool: :func:`configure_threads`) or OpenGL compute
shaders, and bake animations to point caches.

>>> import springskin
>>> rig = springskin.load("/usr/share/assimp/models/X/BCN_Epileptic.X")
>>> deformer = springskin.Deformer(rig, method="dqs", backend="cpu")
>>> positions = deformer.deform(rig.skinning_matrices(frame=10))   # (V, 3) float32
>>> springskin.bake(rig, "out.pc2", method="lbs")

Frames computed elsewhere (Blender's pose, your own matrices) are streamed
to caches with :class:`PointCacheWriter` and :class:`AlembicWriter`.

Arrays: float inputs (positions, matrices, weights) accept float32 or
float64, index inputs any integer dtype, of any strides and byte order;
they are converted to the core's float32 / int32. Outputs are new
C-contiguous float32 arrays (or ``out=``). A wrong shape or dtype kind,
NaN/Inf or an index out of range raises ValueError or TypeError naming the
argument and the expected shape. The other errors: :class:`SpringSkinError`
(RuntimeError) and its subclasses, OSError / FileNotFoundError for files,
MemoryError; exceptions raised from a core status carry it as ``status``
(e.g. ``"SSK_ERROR_GRAPH"``). A bake whose springs did not converge at some
frames writes its cache and issues :class:`SpringNotConvergedWarning` (a
RuntimeWarning) naming them: ``warnings.simplefilter("error",
springskin.SpringNotConvergedWarning)`` makes it an exception.

Matrices are (4, 4) row-major acting on column vectors; positions are in
the file's units, each mesh in its object space; the skeleton and skinning
matrices in rig space (see :mod:`springskin.rig`).
"""

from . import _core
from ._core import GLError, GLUnavailableError, SpringDivergedError, SpringSkinError
from ._core import version as _core_version
from .bake import SpringNotConvergedWarning, bake, merge
from .binding import Binding, load_binding
from .cage import Cage
from .cor import CorState
from .deformer import Deformer, GLContext
from .graph import Graph
from .implicit import ImplicitOperators
from .rig import Animation, Bones, Mesh, Rig, load
from .sketch import (Stroke, edit_from_stroke, pose_from_strokes, pose_joints, surface_points,
                     surface_roi)
from .writers import AlembicWriter, PointCacheWriter

__version__ = _core_version

#: Skinning methods of :class:`Deformer` and :func:`bake`, the core's
#: names: "lbs", "dqs", "rigid", "irs", "spring", "cor", "implicit".
METHODS = _core.methods
#: Backends: "auto" (GL on a hardware GPU, else the CPU), "cpu", "gl".
BACKENDS = _core.backends
#: Attachment binding methods of :meth:`Rig.bind`: ("auto", "direct",
#: "weights", "planar").
BIND_METHODS = _core.bind_methods
#: Total weight at or below which a vertex stays at rest (Blender's
#: threshold, SSK_WEIGHT_EPSILON = 1e-4 as float32).
WEIGHT_EPSILON = _core.WEIGHT_EPSILON
#: Most influences per vertex (SSK_MAX_INFLUENCES).
MAX_INFLUENCES = _core.MAX_INFLUENCES



def configure_threads(threads=None, spin_microseconds=None):
    """Threads of the CPU backend (``ssk_threading_set``, issue #17).

    The CPU kernels cut their rows into chunks whose sizes depend on the
    row count only, run by the calling thread and a process-wide pool of
    workers; sums are taken per chunk and then in chunk order, so results
    are the same bits with any thread count. Idle workers spin for at most
    ``spin_microseconds`` and then sleep, so a host's own threads (Blender)
    get their cores back as soon as a frame is done.

    Args:
        threads: int, 0 to 256: threads a loop may use, the caller
            included; 0: one per CPU this process may run on. None keeps
            the count in use.
        spin_microseconds: int, 0 to 1,000,000: how long an idle worker
            spins before it sleeps (default 50, which keeps the workers
            awake between the passes of one spring solve); 0: sleep at
            once. None keeps the value in use.

    Returns:
        (threads, spin_microseconds) in use afterwards (threads resolved to
        a count).

    Raises:
        TypeError: a value is not an int (or None).
        ValueError: a value is out of range.
    """
    for name, value in (("threads", threads), ("spin_microseconds", spin_microseconds)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError("configure_threads: %s must be an int or None, got %s"
                            % (name, type(value).__name__))
    return _core.threading(threads, spin_microseconds)


def remove_temporary_files():
    """Remove the temporary files the core is writing now (issue #19).

    Every file SpringSkin writes (caches, bindings, previews) goes to
    ``PATH.tmp-PID`` and is renamed when complete; a process that is killed
    meanwhile leaves it behind (the next write to the same path removes it
    once the process is gone). Call this from your own handler of SIGTERM
    (Python's default handling of SIGTERM kills the process at once), then
    exit::

        def on_term(signum, frame):
            springskin.remove_temporary_files()
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, on_term)

    Safe in a signal handler (``ssk_temp_files_remove`` only unlinks).
    Ctrl-C needs nothing: a bake finishes or fails as a unit, and a failed
    write removes its own file.
    """
    _core.remove_temporary_files()


__all__ = [
    "AlembicWriter", "Animation", "BACKENDS", "BIND_METHODS", "Binding", "Bones", "Cage", "CorState",
    "Deformer",
    "GLContext", "GLError", "GLUnavailableError", "Graph", "ImplicitOperators", "MAX_INFLUENCES", "METHODS", "Mesh",
    "PointCacheWriter", "Rig", "SpringDivergedError", "SpringNotConvergedWarning",
    "SpringSkinError", "Stroke",
    "WEIGHT_EPSILON",
    "remove_temporary_files",
    "bake", "configure_threads", "edit_from_stroke", "load", "load_binding", "merge",
    "pose_from_strokes", "pose_joints", "surface_points", "surface_roi",
]
