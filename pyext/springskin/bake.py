"""Bake: sample an animation frame by frame, deform, stream to a cache."""

import json
import os
import warnings

from . import _checks
from . import _core
from .binding import Binding, load_binding
from .cage import Cage
from .deformer import Deformer, GLContext
from .graph import Graph
from .implicit import ImplicitOperators

__all__ = ["SpringNotConvergedWarning", "bake", "merge"]

# int32 frame numbers of the core's bake description.
_MAX_FRAME = 2**31 - 1
# A spring node's iterations at most when the graph does not say
# (ssk_spring_params_default; docs/deformer-graph.md).
_SPRING_MAX_ITERATIONS = 100


class SpringNotConvergedWarning(RuntimeWarning):
    """A bake's spring deformer stopped at its iteration cap at some frames.

    Issued by :func:`bake` (and by :func:`springskin.distributed.bake`,
    once per job) when a spring node did not converge within its
    ``max_iterations`` at one frame or more (issue #36). The cache is
    written all the same: those frames hold the solver's last iterate,
    short of the springs' equilibrium. The message names the frames (the
    first 8, with their final residuals), how many there are, and what to
    change; the bake's returned ``warning`` holds the same text.

    Make it an error in a script with the warnings filters::

        warnings.simplefilter("error", springskin.SpringNotConvergedWarning)

    (pytest: ``-W error::springskin.SpringNotConvergedWarning``); the
    cache is then still written before the exception is raised.
    """


def _spring_advice(doc, method):
    """What to change when springs stop at their cap: the spring node's
    "max_iterations" (named with its value), and the default solver
    when a node asks for a slower one that could use it. `doc`: the graph
    as a dict (or None), `method`: the method baked without a graph."""
    if doc is None:
        if method != "spring":
            return ""
        return (f'; method "spring" runs at most {_SPRING_MAX_ITERATIONS} iterations a frame: '
                f'bake its graph (springskin.Graph.from_method("spring", rig).to_dict()) with '
                f'a larger "max_iterations" in the spring node')
    nodes = [n for n in doc.get("nodes", ()) if isinstance(n, dict) and n.get("type") == "spring"]
    if not nodes:
        return ""
    named = ", ".join(f"'{n.get('id')}' (now {n.get('max_iterations', _SPRING_MAX_ITERATIONS)}, "
                      f"default {_SPRING_MAX_ITERATIONS})" for n in nodes)
    plural = "s" if len(nodes) > 1 else ""
    advice = f'; raise "max_iterations" of the graph\'s spring node{plural} {named}'
    slow = [n for n in nodes
            if n.get("solver") in ("jacobi", "chebyshev", "multilevel")
            and n.get("integrator", "explicit") == "explicit"
            and n.get("convergence", "relative") != "energy"]
    if slow:
        advice += (f', or give {"them" if len(slow) > 1 else "it"} "solver": "auto" '
                   f'(the default: the multigrid, which converges in far fewer '
                   f'iterations than "{slow[0]["solver"]}" on a dense mesh)')
    return advice


def _graph_doc(graph):
    """The graph baked as a dict: from a Graph, a dict or a JSON file; None
    when there is none or it cannot be read (the advice is then general)."""
    if graph is None:
        return None
    if hasattr(graph, "to_dict"):
        return graph.to_dict()
    if isinstance(graph, dict):
        return graph
    try:
        with open(graph, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError, TypeError):
        return None
    return doc if isinstance(doc, dict) else None


def _unconverged_message(count, frame_count, listed, iterations, advice):
    """The user's message on `count` unconverged spring frames of a bake of
    `frame_count` frames; `listed`: (frame, residual) of the first ones."""
    named = ", ".join(f"{int(f)} (residual {r:.3g})" for f, r in listed)
    more = f" and {count - len(listed)} more" if count > len(listed) else ""
    return (f"springs not converged at {count} of {frame_count} frame(s) within {iterations} "
            f"iterations: frame(s) {named}{more}; those frames were written as the solver "
            f"left them, short of the springs' equilibrium{advice}")


def _frame_range(frames):
    """(first, last) inclusive for the core; (0, -1) is the whole animation."""
    if frames is None:
        return 0, -1
    if isinstance(frames, range):
        if frames.step != 1:
            raise ValueError(f"frames: expected a range with step 1, got {frames!r}")
        if len(frames) == 0:
            raise ValueError(f"frames: empty range {frames!r}")
        first, last = frames.start, frames.stop - 1
    elif isinstance(frames, (tuple, list)) and len(frames) == 2:
        first, last = frames
    else:
        raise TypeError(f"frames: expected None, a (first, last) pair or a range, "
                        f"got {type(frames).__name__}")
    first = _checks.integer(first, "frames[0]", 0, _MAX_FRAME)
    last = _checks.integer(last, "frames[1]", 0, _MAX_FRAME)
    if first > last:
        raise ValueError(f"frames: first frame {first} comes after last frame {last}")
    return first, last


def bake(rig, path=None, frames=None, fps=24, method=None, graph=None, backend="auto",
         binding=None, animation=0, gl_context=None, normals=False, cage=None, cage_edit=None,
         implicit_operators=None, shard=None, deformer=None):
    """Bake an animation of a loaded rig to a point cache.

    Samples the animation at ``t = frame / fps`` seconds for each frame,
    deforms every mesh (as :meth:`Deformer.deform_frame`) and streams the
    positions, meshes concatenated in mesh order, each in its object space.
    The file is written under a temporary name and renamed when complete:
    on any error no output file is left behind. The GIL is released for the
    whole bake.

    Parameters
    ----------
    rig : Rig
        A rig from :func:`load` with at least one animation.
    path : str or os.PathLike
        Output file; the format comes from the extension: ``.pc2`` (3ds Max
        / Blender Mesh Cache point cache: start frame = the first baked
        frame, one sample per frame, float32 little-endian), or ``.abc``
        (Alembic: one Xform + PolyMesh per mesh, the Xform animated with the
        mesh node's object matrix, constant topology, uv when the file has
        texture coordinates, time sampling 1/fps s from first / fps).
    frames : None or (int, int) or range, optional
        Inclusive ``(first, last)`` frames, or a range with step 1; default
        the whole animation, ``0 .. frame_count(fps) - 1``
        (:meth:`Animation.frame_count`).
    fps : float, default 24
        Frames per second, > 0.
    method : str, optional
        One of :data:`springskin.METHODS`, as :class:`Deformer` (default
        "lbs"); exclusive with `graph`.
    graph : dict or str or os.PathLike or Graph, optional
        A deformer graph, as :class:`Deformer`.
    backend : {"auto", "cpu", "gl"}, default "auto"
    binding : Binding or str or os.PathLike, optional
        Attachment binding for the methods that need one (default: bound
        with the default parameters for this bake); ``implicit`` takes its
        implicit data when it holds current ones (``Rig.bind(implicit=True)``)
        instead of fitting the fields.
    animation : int, default 0
        Index in :attr:`Rig.animations`.
    gl_context : GLContext, optional
        A shared GL context.
    normals : bool, default False
        Also write each frame's area-weighted vertex normals (object space)
        as Alembic ``N``; ``.abc`` only.
    cage : Cage, optional
        A cage bound to `rig` (coupled cages and skeletons, issue #21);
        with `cage_edit`, both or neither. The bake deforms the rig the
        edit describes (:meth:`Cage.reshape`: rest shape and joints) with
        each frame's skinning matrices carried over to it
        (:meth:`Cage.pose`); an unedited cage gives the plain bake's bytes.
        The bake reshapes the cage (as :meth:`Cage.reshape` would). A
        `binding` given must be the reshaped rig's.
    cage_edit : array_like, (c, 3) float, optional
        The edited rest cage, rig space, the cage's topology.
    implicit_operators : ImplicitOperators, optional
        Implicit skinning's composition operators, built once and shared
        (as :class:`Deformer`); default: built for this bake (about 1.5 s).
    shard : str or os.PathLike, optional
        Instead of `path` (give one of them): write `frames` as a frame
        shard of this directory (``frames-<first>-<last>.ssks``, created
        atomically, with a manifest naming the bake: rig, animation,
        binding and graph hashes, fps, frames, vertex count, normals), to
        be merged with :func:`merge` into the bytes a single bake writes
        (issue #23; :mod:`springskin.distributed` runs them on Dask). A
        complete, valid shard of the same bake already there is kept
        (``shard_reused``). Frame-dependent graphs are refused
        (ValueError).
    deformer : Deformer, optional
        Bake with this deformer (made for `rig`) instead of creating one:
        `method`, `graph`, `binding`, `backend`, `gl_context` and
        `implicit_operators` are then the deformer's (give none of them).
        The frame ranges of one bake reuse one deformer this way (the
        spring solver's setup takes seconds at 100k vertices); frame-
        independent graphs give the same bytes. Not with a cage.

    Returns
    -------
    dict
        ``path``, ``frame_count``, ``vertex_count`` (whole rig),
        ``wall_seconds`` (sampling, deform and writing), ``deform_seconds``
        (the deformer alone), ``ms_per_frame`` (wall), ``backend`` ("cpu" or
        "gl"), ``device``, ``warning`` (None, or a message for the user:
        why "auto" fell back to the CPU, and when spring nodes did not
        converge at some frames, which ones and how many, with what to
        change; both on two lines when both happened), and for spring
        nodes ``spring_iterations``, ``spring_iterations_max``,
        ``spring_residual_max``, ``spring_frames_unconverged`` and
        ``spring_unconverged_frames``, a list of (frame, final residual)
        of the first 8 unconverged frames, ``shard_reused`` (with `shard`:
        True when a valid shard was kept; it was not deformed again, so
        its spring statistics are 0 and it has no spring warning).

    Warns
    -----
    SpringNotConvergedWarning
        A spring node stopped at its ``max_iterations`` at some frames
        (also with `shard`): the message of ``warning``, naming the frames
        (e.g. ``springs not converged at 4 of 4 frame(s) within 2
        iterations: frame(s) 20 (residual 0.000384), ...; ...``). The
        cache is written before it is issued, so a warnings filter set to
        "error" raises it with the output in place.

    Raises
    ------
    ValueError
        A rig built from arrays (it has no animation: deform poses with
        :meth:`Deformer.deform`), no animation, `animation` out of range, a
        frame range outside ``0 .. frame_count(fps) - 1``, fps <= 0, an
        unknown extension, normals for a ``.pc2`` output, an invalid graph or
        binding, `cage` without `cage_edit` (or the other way round), a cage
        bound to another rig, a `cage_edit` of the wrong shape or not
        finite.
    TypeError
        `cage` is not a Cage, `cage_edit` of the wrong dtype kind.
    SpringSkinError
        An output format the core does not support yet
        (``"SSK_ERROR_UNSUPPORTED"``).
    OSError
        The output cannot be written.
    GLUnavailableError, GLError, SpringDivergedError
        As :class:`Deformer`.
    """
    stats, message = _bake(rig, path, frames, fps, method, graph, backend, binding, animation,
                           gl_context, normals, cage, cage_edit, implicit_operators, shard,
                           deformer)
    if message is not None:
        warnings.warn(message, SpringNotConvergedWarning, stacklevel=2)
    return stats


def _bake(rig, path, frames, fps, method, graph, backend, binding, animation, gl_context,
          normals, cage, cage_edit, implicit_operators, shard, deformer):
    """:func:`bake` without issuing its warning: (stats, the message on
    unconverged spring frames or None). springskin.distributed's chunks
    bake with it (the driver warns once per job)."""
    _checks.rig(rig)
    if (path is None) == (shard is None):
        raise ValueError("bake: give one of path (a cache file) and shard (a directory)")
    if path is not None:
        path = _checks.path(path, "path")
    else:
        shard = _checks.path(shard, "shard")
    if rig._scene is None:
        raise ValueError("bake: this rig was built from arrays and has no animation; "
                         "deform poses with Deformer.deform and write them yourself")
    first, last = _frame_range(frames)
    fps = _checks.real(fps, "fps", positive=True)
    if method is not None and graph is not None:
        raise ValueError("method, graph: give one of them (a graph names its skinning method)")
    if method is not None:
        method = _checks.choice(method, "method", _checks.METHODS)
    backend = _checks.choice(backend, "backend", _checks.BACKENDS)
    count = len(rig.animations)
    if count == 0:
        raise ValueError(f"bake: {rig.path!r} has no animation to bake")
    animation = _checks.integer(animation, "animation", 0, count - 1)
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
    if not isinstance(normals, bool):
        raise TypeError(f"normals: expected a bool, got {type(normals).__name__}")
    if (cage is None) != (cage_edit is None):
        raise ValueError("cage, cage_edit: give both (a cage and its edited rest vertices) or "
                         "neither")
    if cage is not None:
        _checks.instance(cage, "cage", Cage)
    if implicit_operators is not None:
        _checks.instance(implicit_operators, "implicit_operators", ImplicitOperators)
    if deformer is not None:
        _checks.instance(deformer, "deformer", Deformer)
        if deformer.rig is not rig:
            raise ValueError("deformer: made for another rig than the one baked")
        if cage is not None or any(v is not None for v in (method, graph, binding, gl_context,
                                                           implicit_operators)):
            raise ValueError("deformer: bakes with its own method, graph, binding and context; "
                             "give none of method, graph, binding, gl_context, "
                             "implicit_operators, cage")
    stats = _core.bake(rig._scene, path, method or "lbs", backend, fps, animation, first, last,
                       core_graph, binding._core if binding is not None else None,
                       gl_context._core if gl_context is not None else None, normals,
                       cage._core if cage is not None else None, cage_edit,
                       implicit_operators._core if implicit_operators is not None else None,
                       shard, deformer._core if deformer is not None else None)
    stats["path"] = path if path is not None else shard
    frames_baked = stats["frame_count"]
    stats["ms_per_frame"] = 1000.0 * stats["wall_seconds"] / frames_baked if frames_baked else 0.0
    message = None
    unconverged = stats["spring_frames_unconverged"]
    if unconverged:
        if deformer is not None:
            graph, method = deformer.graph, deformer.method
        message = _unconverged_message(unconverged, frames_baked,
                                       stats["spring_unconverged_frames"],
                                       stats["spring_iterations_max"],
                                       _spring_advice(_graph_doc(graph), method))
        stats["warning"] = message if stats["warning"] is None else \
            f"{stats['warning']}\n{message}"
    return stats, message


def merge(directory, path, frames=None):
    """Merge the frame shards of one bake into one cache (issue #23).

    Reads every ``*.ssks`` shard of `directory` (written by :func:`bake`
    with ``shard=``, or ``springskin bake --shard``), checks that they are
    parts of one bake (rig, animation, binding, graph, fps, backend,
    vertex count, normals), that they cover the frames once and that each
    is complete and matches its checksum, and streams them frame by frame
    into `path` (``.pc2`` or ``.abc``), written under a temporary name and
    renamed: the bytes a single :func:`bake` of the same frames writes (an
    ``.abc`` records the date it is written unless ``SOURCE_DATE_EPOCH``
    is set). ``ssk_shards_merge``.

    Parameters
    ----------
    directory : str or os.PathLike
    path : str or os.PathLike
        The cache; shards with normals merge into ``.abc`` only.
    frames : None or (int, int) or range, optional
        The frames to merge; default the whole animation.

    Returns
    -------
    dict
        ``shard_count``, ``frame_count``, ``vertex_count``, ``bytes_read``
        (shard bytes), ``wall_seconds``.

    Raises
    ------
    ValueError
        Shards of two different bakes, overlapping shards, normals into
        ``.pc2``, an unknown extension.
    SpringSkinError
        A gap (``"SSK_ERROR_FRAME_RANGE"``; the message names the missing
        frames).
    OSError
        No shard, a truncated or damaged shard, an unwritable output.
    """
    directory = _checks.path(directory, "directory")
    path = _checks.path(path, "path")
    first, last = _frame_range(frames)
    return _core.merge(directory, path, first, last)
