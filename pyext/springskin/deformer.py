"""Deformers: a skinning method or a deformer graph on a backend."""

import os
import warnings

import numpy as np

from . import _checks
from . import _core
from .binding import Binding, load_binding
from .graph import Graph
from .implicit import ImplicitOperators

__all__ = ["Deformer", "GLContext"]


class GLContext:
    """A headless OpenGL 4.3 context (EGL, no window) on a thread of its own.

    Every GL call of the core runs on that thread, so a host's current
    context (Blender's) is never touched. Share one between deformers (and
    :func:`bake`) with ``gl_context=`` instead of letting each create its
    own. Platforms tried in order: the EGL device platform with a hardware
    device, the surfaceless platform (Mesa llvmpipe without a GPU), any EGL
    device.

    Raises
    ------
    GLUnavailableError
        No EGL display or no OpenGL 4.3 core context; the message says which
        platforms were tried and why they failed.
    """

    def __init__(self):
        self._core = _core.GLContext()

    @property
    def info(self):
        """dict: platform, device, vendor, renderer, version, glsl_version,
        hardware (False for software renderers such as llvmpipe), and the
        compute limits (max_work_group_count, max_work_group_size,
        max_work_group_invocations, max_shared_memory_bytes,
        max_ssbo_bytes), subgroup_size (GL_KHR_shader_subgroup's, 0 without
        it) and subgroup_arithmetic (bool)."""
        return self._core.info()

    def __repr__(self):
        info = self.info
        return f"<springskin.GLContext {info['renderer']!r} ({info['platform']})>"


class Deformer:
    """Deforms every mesh of a rig, one pose at a time.

    Parameters
    ----------
    rig : Rig
        Kept alive by the deformer.
    method : str, optional
        The skinning method when no `graph` is given (default "lbs"), one of
        :data:`springskin.METHODS`, in any case (``"LBS"`` or ``"lbs"``):

        - ``lbs``: linear blend skinning (Magnenat-Thalmann et al. 1988;
          Blender's Armature modifier): ``v' = sum_i w_i S_i v / sum_i w_i``.
        - ``dqs``: dual quaternion skinning (Kavan et al. 2008) exactly as
          Blender 3.4's Armature modifier with Preserve Volume.
        - ``rigid``: rigid attachment skinning (Toothman 2020, 4.1),
          ``v' = a' + R_b s``, evaluated once per skin weight influence and
          blended with the weights (the default ``"attachment":
          "weights"``; equal to LBS for unstretched bones); a graph node
          with ``"attachment": "binding"`` uses the binding's one bone per
          vertex, as the paper (``docs/real-characters.md``).
        - ``irs``: incremental rotation skinning (Toothman 2020, Eq. 14-18),
          per skin weight influence as ``rigid``, Eq. 14's weights taken
          from the skin weights of the joint's other bone.
        - ``spring``: IRS relaxed by the spring deformer (Toothman 2020,
          4.2, Eq. 21-23) with its defaults: anchors at the weighted mean
          of the attachments, and the detail force that keeps IRS's local
          shape (not in the paper; ``docs/real-characters.md``). The paper's
          model is a graph: rigid skinning, then a spring node with
          ``"attachment": "binding"`` and ``"stiffness": {"detail": 0}``.
        - ``cor``: skinning with optimized centers of rotation (Le &
          Hodgins 2016, Algorithm 1), where the core provides it.
        - ``implicit``: implicit skinning (Vaillant et al. 2013, Vaillant
          2015, 4.6.2): DQS, then every vertex tracked back onto the
          iso-surface of per-bone implicit fields composed at the joints,
          with contact at folds (the graph of ``dqs`` then an ``implicit``
          node with its defaults). The tracking runs on the CPU with any
          backend (GL reads the DQS positions back). Pass shared
          `implicit_operators`.
    graph : dict or str or os.PathLike or Graph, optional
        A deformer graph (``docs/deformer-graph.md``) instead of `method`:
        the JSON document as a dict, a JSON file, or a :class:`Graph`.
    backend : {"auto", "cpu", "gl"}, default "auto"
        ``cpu``: every core, the core's own thread pool
        (:func:`springskin.configure_threads`); ``gl``: OpenGL 4.3 compute
        shaders (headless EGL); ``auto``: GL on a hardware GPU, else the
        CPU (a RuntimeWarning is issued when no GL context could be made at
        all). In any case (``"CPU"`` or ``"cpu"``).
    binding : Binding or str or os.PathLike, optional
        The binding for the methods and nodes that need one (rigid, irs,
        radial, spring; :attr:`Graph.needs_binding`): a Binding of this rig,
        or a binding file; by default the rig is bound with the default
        parameters when the method or graph needs it. ``implicit`` nodes
        take the binding's implicit data when it holds current ones
        (:attr:`Binding.implicit_current`, ``Rig.bind(implicit=True)``)
        instead of fitting the fields at creation.
    gl_context : GLContext, optional
        A shared GL context for the gl and auto backends.
    cor : CorState, optional
        The centers of rotation of ``cor`` skinning (method or graph
        nodes), copied at creation: a :class:`CorState` of this rig,
        typically after :meth:`CorState.update` (issue #18), so a weight
        edit needs no new binding. By default the binding's centers, else
        centers computed at creation with the default parameters.
    implicit_operators : ImplicitOperators, optional
        The composition operators of ``implicit`` skinning (method or graph
        nodes), shared: build them once and pass them to every deformer
        (kept alive by the deformer). By default each deformer with an
        implicit node builds its own at creation (about 2 s).

    Raises
    ------
    TypeError
        An argument of the wrong type.
    ValueError
        Unknown method or backend, both method and graph, an invalid graph,
        a binding of another rig, unstable spring parameters.
    GLUnavailableError, GLError
        backend="gl" without a usable context, or a shader failure.

    Notes
    -----
    Positions in and out are whole-rig (V, 3) arrays: the meshes
    concatenated in mesh order (:attr:`Mesh.rows`), each mesh in its own
    object space. A mesh m is deformed as
    ``v' = inverse(O_m(t)) @ blend_b(S_b) @ O_m @ v`` with O_m its rest
    object matrix and O_m(t) its object matrix at the frame: blending
    happens in rig space as in Blender's armature space.

    The deformer keeps its buffers (GL: the rig uploaded once into shader
    storage buffers; per frame only per-bone data is uploaded), so repeated
    :meth:`deform` calls reuse them. The GIL is released during the compute;
    calls on one deformer from several threads are serialized.
    """

    def __init__(self, rig, method=None, graph=None, backend="auto", binding=None,
                 gl_context=None, cor=None, implicit_operators=None):
        _checks.rig(rig)
        if method is not None and graph is not None:
            raise ValueError("method, graph: give one of them (a graph names its skinning "
                             "method)")
        if method is not None:
            method = _checks.choice(method, "method", _checks.METHODS)
        backend = _checks.choice(backend, "backend", _checks.BACKENDS)
        core_graph = None
        if graph is not None:
            graph = graph if isinstance(graph, Graph) else Graph(graph, rig)
            core_graph = graph._for_rig(rig)
        if binding is not None:
            if isinstance(binding, (str, os.PathLike)):
                binding = load_binding(binding, rig)
            _checks.instance(binding, "binding", Binding)
        if gl_context is not None:
            _checks.instance(gl_context, "gl_context", GLContext)
        if cor is not None:
            from .cor import CorState
            _checks.instance(cor, "cor", CorState)
        if implicit_operators is not None:
            _checks.instance(implicit_operators, "implicit_operators", ImplicitOperators)
        self._rig = rig
        self._graph = graph
        self._binding = binding
        self._method = method if graph is None else None
        self._core = _core.Deformer(
            rig._core, method or "lbs", backend, core_graph,
            binding._core if binding is not None else None,
            gl_context._core if gl_context is not None else None,
            cor._core if cor is not None else None,
            implicit_operators._core if implicit_operators is not None else None)
        self._gl_context = gl_context
        self._implicit_operators = implicit_operators
        if self._core.warning:
            warnings.warn(self._core.warning, RuntimeWarning, stacklevel=2)

    # --- per frame -------------------------------------------------------
    def deform(self, skinning_matrices, object_matrices=None, frame=None, out=None):
        """Deform every mesh for one pose, or for a stack of F poses.

        Parameters
        ----------
        skinning_matrices : array_like, (B, 4, 4) or (F, B, 4, 4), float32 or float64
            ``S_b = G_b(pose) @ inverse(bind_b)``, rig space, row-major
            acting on column vectors (:meth:`Rig.skinning_matrices` of a
            loaded rig). Any strides and byte order; finite. A stack of F
            poses is deformed in order, as F calls would (frame-dependent
            springs continue from pose to pose).
        object_matrices : array_like, (M, 4, 4) or with a stack (F, M, 4, 4), float, optional
            Each mesh's object -> rig matrix at this frame
            (:meth:`Rig.object_matrices`); default: the rest object
            matrices; with a stack, (M, 4, 4) applies to every pose. Must
            be invertible.
        frame : float, or with a stack a sequence of F floats, optional
            The frame at which keyed graph parameters (radial amounts, edit
            weights) are evaluated, and that frame-dependent springs use to
            continue from the previous frame; default: the last one set
            (initially 0). With a stack, a single number f gives the poses
            the frames f, f + 1, ... f + F - 1.
        out : numpy.ndarray, (V, 3) or with a stack (F, V, 3) float32, optional
            A C-contiguous, aligned, writable native float32 array to write
            into (zero-copy on the CPU backend); returned.

        Returns
        -------
        numpy.ndarray, (V, 3) or (F, V, 3) float32
            Deformed whole-rig positions, each mesh in its object space,
            model units; a new array unless `out` is given.

        Raises
        ------
        TypeError
            A dtype of the wrong kind (integers, bool, complex, object), an
            `out` that is not a float32 ndarray.
        ValueError
            A wrong shape, e.g. ``skinning_matrices: expected shape
            (B, 4, 4) = (54, 4, 4), got (54, 4)``; NaN or infinity (with its
            index); a singular object matrix; an `out` that is not
            C-contiguous or is read-only.
        SpringDivergedError
            A spring node diverged: ``positions`` (the last good iterate,
            written to the result anyway) and ``report`` are attributes of
            the exception.
        GLError
            A GL failure.

        Notes
        -----
        The result of the last deform is also what :meth:`normals` and
        :meth:`max_displacement` read (the CPU backend reads that array
        itself: modifying it in place before calling them changes their
        input); after a stack, the last pose's.
        """
        if isinstance(skinning_matrices, (np.ndarray, list, tuple)) and \
                np.ndim(skinning_matrices) == 4:
            return self._deform_stack(np.asarray(skinning_matrices), object_matrices, frame,
                                      out)
        return self._core.deform(skinning_matrices, object_matrices, frame, out)

    def _deform_stack(self, stack, object_matrices, frame, out):
        count, bones = stack.shape[0], self._rig.bone_count
        if stack.shape[1:] != (bones, 4, 4):
            raise ValueError(f"skinning_matrices: expected shape (B, 4, 4) = ({bones}, 4, 4) "
                             f"or a stack (F, B, 4, 4) = (F, {bones}, 4, 4), got "
                             f"{stack.shape}")
        objects = None
        if object_matrices is not None:
            objects = np.asarray(object_matrices)
            if objects.ndim == 4 and objects.shape[0] != count:
                raise ValueError(f"object_matrices: a stack of {objects.shape[0]} poses for "
                                 f"{count} skinning poses (expected (F, M, 4, 4) with F = "
                                 f"{count}, or (M, 4, 4) for every pose)")
        if frame is None:
            frames = [None] * count
        elif isinstance(frame, (int, float, np.integer, np.floating)) and \
                not isinstance(frame, bool):
            frames = [float(frame) + k for k in range(count)]
        else:
            frames = list(frame)
            if len(frames) != count:
                raise ValueError(f"frame: {len(frames)} frames for a stack of {count} poses")
        shape = (count, self.vertex_count, 3)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif not isinstance(out, np.ndarray) or out.dtype != np.float32:
            raise TypeError("out: expected a float32 numpy array of shape (F, V, 3) = "
                            f"{shape}")
        elif out.shape != shape:
            raise ValueError(f"out: expected shape (F, V, 3) = {shape}, got {out.shape}")
        for k in range(count):
            pose_objects = objects[k] if objects is not None and objects.ndim == 4 else objects
            self._core.deform(stack[k], pose_objects, frames[k], out[k])
        return out

    def deform_frame(self, frame, fps=24, animation=0, out=None):
        """Deform a loaded rig at a frame of its animation.

        Samples :meth:`Rig.sample` at ``t = frame / fps`` and deforms with
        the skinning and object matrices, with the keyed parameters at
        `frame`; the same as each frame of :func:`bake`.

        Returns
        -------
        numpy.ndarray, (V, 3) float32

        Raises
        ------
        ValueError
            The rig has no animation; otherwise as :meth:`Rig.sample` and
            :meth:`deform`.
        """
        skinning, objects = self._rig.sample(frame, fps, animation)
        return self._core.deform(skinning, objects, float(frame), out)

    def normals(self, out=None):
        """Area-weighted vertex normals of the last deform's positions,
        computed on the deformer's backend (or the graph's normals node).

        Parameters
        ----------
        out : numpy.ndarray, (V, 3) float32, optional
            As :meth:`deform`'s `out` (not the positions array itself).

        Returns
        -------
        numpy.ndarray, (V, 3) float32
            Unit normals in each mesh's object space; (0, 0, 0) for vertices
            without triangles.

        Raises
        ------
        ValueError
            No deform yet, or the last one failed.
        """
        return self._core.normals(out)

    def max_displacement(self, reference):
        """Largest per-vertex distance between the last deform's positions
        and `reference`, reduced on the backend (the convergence measure of
        the iterative deformers, Toothman 2020, 4.2.2).

        Parameters
        ----------
        reference : array_like, (V, 3) float
            Whole-rig positions.

        Returns
        -------
        float
            ``max_v |p_v - r_v|``, model units.

        Raises
        ------
        ValueError
            No deform yet or the last one failed, a wrong shape or
            non-finite values.
        """
        return self._core.max_displacement(reference)

    def set_frame(self, frame):
        """Set the frame of keyed parameters for the next deforms (as the
        `frame` argument of :meth:`deform`)."""
        self._core.set_frame(_checks.real(frame, "frame"))

    # --- reports ---------------------------------------------------------
    @property
    def spring_report(self):
        """dict: the spring nodes of the last deform, summed: ``iterations``
        (total), ``residual`` (largest), ``energy`` (total), ``converged``
        (all converged); zeros and False without a spring node."""
        return self._core.spring_report()

    def spring_unsettled(self):
        """Which vertices the last deform's springs left unsettled (issue
        #36): a new (V,) float32 array, each whole-rig vertex's estimated
        distance to the spring equilibrium over the convergence tolerance
        (its move in the solve's last pass over that pass's largest move,
        times the solve's residual over its threshold). 1 or more: the
        vertex did not settle; a converged solve leaves every vertex below
        1; zeros before a deform or without a spring node.

        Raises:
            springskin.SpringSkinError: on the GL backend (its iterates stay
                on the device): use the CPU backend for this view.
        """
        return self._core.spring_unsettled()

    @property
    def timing(self):
        """dict: seconds of the last deform: ``upload_seconds`` (per-bone
        data), ``compute_seconds`` (the kernels), ``readback_seconds``
        (positions back to the host; 0 on the CPU)."""
        return self._core.timing()

    @property
    def backend(self):
        """str: the backend used, "cpu" or "gl" (never "auto")."""
        return self._core.backend

    @property
    def device_name(self):
        """str: ``"cpu (N threads)"`` or the GL renderer."""
        return self._core.device_name

    @property
    def warning(self):
        """str or None: why ``backend="auto"`` fell back to the CPU."""
        return self._core.warning

    @property
    def rig(self):
        """Rig: the deformed rig."""
        return self._rig

    @property
    def method(self):
        """str or None: the method (None when a graph is used)."""
        return None if self._graph is not None else (self._method or "lbs")

    @property
    def graph(self):
        """Graph or None."""
        return self._graph

    @property
    def vertex_count(self):
        """int: rows V of the position arrays."""
        return self._core.vertex_count

    def __repr__(self):
        what = "graph" if self._graph is not None else self.method
        return (f"<springskin.Deformer {what} on {self.backend} ({self.device_name}): "
                f"{self.vertex_count} vertices>")
