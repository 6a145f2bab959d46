"""The live part of the addon: the "Spring Skin" modifier and its handlers.

How a deformation reaches the screen and the renderer
-----------------------------------------------------
The object gets a Mesh Cache modifier named "Spring Skin", placed right
after the Armature modifier it takes over (that one is disabled in viewport
and render and its armature moved to the settings, not deleted). It reads a
one-frame .pc2 file of the object's own (``cache_path``: in a per-session
folder under ``/dev/shm`` where it exists, else the temporary folder; deleted
when the addon is disabled or Blender exits), overwriting the positions.
Persistent ``frame_change_post`` and ``depsgraph_update_post`` handlers read
the pose from the *evaluated* armature of the depsgraph they are given
(viewport, final render, motion-blur subframes), deform with the core,
write the positions into that file and tag the object (transform recalc);
Blender then re-evaluates the object's modifier stack in the same update
(its second pass, without callbacks). The mesh datablock is never written,
so nothing is copied on write: measured with ``bench/blender_spring_skin.py``
against the Geometry Nodes offset attribute this replaced (which made
Blender copy the whole mesh every frame: 12.7 ms of a 100k-vertex frame
against 9.4 ms for the Mesh Cache read; a shape key 8.4 ms, but writing it
from Python took 5.5 ms). Each object has its own file, so linked duplicates
sharing one mesh deform each for their own armature. The result shows,
orders and renders like any other modifier; a .blend opened without the
addon shows the rest shape (the file is gone) and the modifier says so.

Work is done only when something changed: per object a change key of the
frame (with subframe), a hash of the pose matrices, the mesh-to-armature
matrix, the deformer configuration (graph revision, method, backend,
binding settings) and the rig build. Tagging the object triggers another
depsgraph update; a re-entrancy guard and the unchanged key make that a
no-op.

State
-----
Per object (keyed by object name, looked up again on every call: undo and
file loads replace Blender's data) the runtime keeps the rig read from
Blender, the ``springskin.Rig``, binding and ``Deformer``, the change key,
the last frame's timings and the last error. This is addon state, not the
core's. It is rebuilt when the mesh or the armature changes (their cheap
signature, :func:`rig.signature`), when the object leaves Edit or Weight
Paint mode (weights may have changed), after a file load, and when the
deformer configuration changes (the node tree's revision, bumped by
:func:`graph_changed`, which the node tree calls on every edit).

A bound cage (``cage.py``, issue #21) is synced before every frame: an
edited cage replaces the state's rig by the reshaped one (``state.rig``;
the rig read from Blender stays in ``state.base_rig``) and the frame's
skinning matrices are carried over to it.
"""

import atexit
import mmap
import os
import shutil
import struct
import tempfile
import threading
import time
import zlib

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import cage as cagemod
from . import messages
from . import native
from . import nodes
from . import rig as rigmod
from . import stack as stackmod

__all__ = ["MODIFIER_NAME", "ObjectState", "bind", "cache_path", "cage_changed", "drop_cage",
           "evaluate", "graph_changed",
           "has_spring_skin", "register", "shared_implicit_operators", "state_of", "unbind",
           "unregister"]

MODIFIER_NAME = "Spring Skin"
#: The Geometry Nodes offset attribute and node group of addon versions
#: before the Mesh Cache handover: a file saved with them is migrated.
LEGACY_ATTRIBUTE = "springskin_offset"
LEGACY_NODE_GROUP_TAG = "springskin_offset_group"
#: PC2 header: signature, version, vertex count, start frame, sample rate,
#: sample count (Blender's MOD_meshcache_pc2.c reads it little-endian).
PC2_HEADER = struct.Struct("<12siiffi")
PC2_SIGNATURE = b"POINTCACHE2\0"
#: Methods whose one-node graph needs an attachment binding.
BINDING_METHODS = ("RIGID", "IRS", "SPRING", "COR")
#: Modes in which the mesh is being edited: no deformation is written then,
#: and the rig is read again when the object leaves them.
EDITING_MODES = ("EDIT", "WEIGHT_PAINT", "SCULPT")

_states = {}           # object name -> ObjectState
_notes = {}            # object name -> what happened to its Spring Skin (applied, removed)
_tree_revisions = {}   # node tree name -> revision (bumped by graph_changed)
# The handlers may run on the main thread (viewport) and on a render
# thread (the render depsgraph) at once, and the core releases the GIL while
# it deforms: one lock serializes the handlers' work across threads, and a
# per-thread flag guards against re-entrance (the object tagged by the file
# write while a handler is running).
_lock = threading.RLock()
_local = threading.local()
_build_counter = 0
_gl_context = None     # shared springskin.GLContext for the gl/auto backends
_gl_error = None
# One springskin.ImplicitOperators for the session (issue #20): the
# composition operators of implicit skinning depend on nothing but their
# resolution and take 1.3-2 s to build, so they are built the first time an
# implicit deformer is made and shared by every one; freed on unregister.
_implicit_operators = None


class ObjectState:
    """Runtime state of one object with a Spring Skin modifier."""

    def __init__(self):
        self.signature = None
        self.rig_data = None
        self.rig = None
        self.binding = None
        self.binding_key = None
        self.deformer = None
        self.config = None          # configuration the deformer was made with
        self.failed_config = None   # a configuration that failed to build
        self.build_id = 0
        self.positions = None       # (V, 3) float32, last deformed positions
        self.last_key = None
        self.last_frame = None
        self.last_ms = 0.0          # handler work for the last computed frame
        self.deform_ms = 0.0        # the core's deform alone
        self.frames = 0             # frames computed since the build
        self.error = None           # why the object cannot be (re)built, or the last failure
        self.frame_error = None     # a problem of the last deformed frame (spring divergence)
        self.warnings = []
        self.device_name = ""
        self.backend = ""
        self.what = ""              # "method LBS" or "graph 'Name'"
        self.bind_seconds = 0.0
        self.last_mode = "OBJECT"
        self.printed = None
        self.cache = None           # (path, open file, vertex count) of the Mesh Cache file
        self.stack_error = None     # why the stack above is not followed (absolute keys)
        self.offset_method = "lbs"  # the skinning that carries the stack's offsets
        self.group_weights = {}     # vertex group name -> (V,) weights, for shape keys
        self.recheck = False        # read the whole signature at the next frame (undo)
        self.configured = None      # the modifier _configure last set up (frame changes
                                    # skip the settings check while it is unchanged)
        self.stale = None           # why the binding no longer matches the mesh (weights edited)
        self.unsettled = None       # rows the last frame's springs left unsettled, or None
        self.unconverged = {}       # frame -> (iterations, residual) of spring solves that
                                    # stopped at the iteration cap
        self.has_springs = False    # the deformer has a spring node
        self.cor_state = None       # springskin.CorState of CoR skinning nodes, kept across
                                    # weight edits (incremental update, issue #18)
        self.cor_note = ""          # how the centers of rotation were last made (panel)
        # the cage (cage.py, issue #21): `rig` is `base_rig` (read from
        # Blender) or the rig an edited cage describes
        self.base_rig = None
        self.cage = None            # springskin.Cage bound to base_rig, or None
        self.cage_matrix = None     # (4, 4) cage mesh space -> rig space, from Bind Cage
        self.cage_rest = None       # (c, 3) the bound rest cage, cage mesh space
        self.cage_seen = None       # (c, 3) the cage coordinates last applied
        self.cage_edit = None       # (c, 3) rig space: the applied edit; None: unedited
        self.cage_error = None      # why the cage is not used now (topology changed, ...)
        self.pose_base = None       # Edit in Pose: the frame's skinning, posed and rest cages
        self.cage_time = 0.0        # perf_counter of the last applied cage edit
        self.cage_ms = 0.0          # its reshape and rebuild


def state_of(obj):
    """The runtime state of `obj` (None when it has none yet)."""
    return _states.get(obj.name) if obj is not None else None


def binding_report_lines(state):
    """The binding report of `state`'s binding as panel lines (``springskin
    bind --report``'s vertices likely to give artifacts: neighbors attached
    to unrelated bones, non-deforming or short bones, attachments far from
    the weights' center); [] without a binding. Computed once per binding."""
    if state is None or state.binding is None or state.rig is None:
        return []
    cached = getattr(state, "_report", None)
    if cached is not None and cached[0] is state.binding:
        return cached[1]
    try:
        r = state.binding.report(state.rig)
    except ValueError as exc:
        lines = ["Binding report unavailable: %s" % exc]
    else:
        names = state.rig.bones
        pair = r["unrelated_bones"]
        lines = ["%d vertices next to an unrelated bone" % r["unrelated_neighbor_vertices"]]
        if pair[0] >= 0:
            lines.append("most between %s and %s (%d)" % (names[pair[0]], names[pair[1]],
                                                          r["unrelated_pair_vertices"]))
        lines += ["%d vertices on a non-deforming or short bone" % r["weak_bone_vertices"],
                  "%d vertices attached far from their weights' center"
                  % r["far_from_weights_vertices"]]
    state._report = (state.binding, lines)
    return lines


def has_spring_skin(obj):
    """The object's "Spring Skin" modifier, or None (a Mesh Cache modifier of
    that name; the Geometry Nodes one of older files until it is migrated)."""
    if obj is None or obj.type != "MESH":
        return None
    mod = obj.modifiers.get(MODIFIER_NAME)
    return mod if mod is not None and mod.type in ("MESH_CACHE", "NODES") else None


# --- the Mesh Cache side ------------------------------------------------------------

_cache_dir = None


def cache_directory():
    """This session's folder of live cache files (made on first use)."""
    global _cache_dir
    if _cache_dir is None or not os.path.isdir(_cache_dir):
        shm = "/dev/shm"
        base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        _cache_dir = tempfile.mkdtemp(prefix="springskin-", dir=base)
    return _cache_dir


def _remove_cache_directory():
    global _cache_dir
    for state in _states.values():
        _close_cache(state)
    if _cache_dir is not None:
        shutil.rmtree(_cache_dir, ignore_errors=True)
        _cache_dir = None


def cache_path(obj):
    """The live .pc2 file of `obj` (one per object name: a renamed or
    duplicated object gets its own)."""
    name = obj.name
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:48]
    return os.path.join(cache_directory(),
                        "%s-%08x.pc2" % (safe, zlib.crc32(name.encode("utf-8"))))


#: The Mesh Cache settings of the live file: one sample, read as it is.
_MODIFIER_SETTINGS = (("cache_format", "PC2"), ("deform_mode", "OVERWRITE"),
                      ("interpolation", "NONE"), ("play_mode", "CUSTOM"),
                      ("time_mode", "FRAME"), ("eval_frame", 0.0), ("factor", 1.0),
                      ("forward_axis", "POS_Y"), ("up_axis", "POS_Z"))


def _configure(mod, path):
    """Point `mod` at `path` with the live-file settings (writes only what
    differs: every property write re-evaluates the object)."""
    for name, value in _MODIFIER_SETTINGS:
        if getattr(mod, name) != value:
            setattr(mod, name, value)
    if len(mod.flip_axis):
        mod.flip_axis = set()
    if mod.filepath != path:
        mod.filepath = path


def _close_cache(state):
    """Forget `state`'s live file. Its mapping stays valid for the arrays
    that view it (state.positions) and is unmapped with the last of them."""
    if state is not None and state.cache is not None:
        try:
            state.cache[1].close()
        except OSError:
            pass
        state.cache = None


def _open_cache(state, path, nv, name=None):
    """The one-frame .pc2 at `path` for `nv` vertices, mapped: state.cache =
    (path, file, nv, name, (V, 3) float32 view of its positions). The core
    deforms into the view (_compute), so a frame costs no file write (1 MB
    at 80k vertices: 0.15 ms); Blender's Mesh Cache modifier reads the file,
    which shares its pages with the mapping."""
    cache = state.cache
    if cache is not None and cache[0] == path and cache[2] == nv and os.path.exists(path):
        return cache[4]
    _close_cache(state)
    size = PC2_HEADER.size + 12 * nv
    f = open(path, "w+b", buffering=0)
    f.write(PC2_HEADER.pack(PC2_SIGNATURE, 1, nv, 0.0, 1.0, 1))
    f.truncate(size)
    view = np.frombuffer(mmap.mmap(f.fileno(), size), dtype=np.float32, count=3 * nv,
                         offset=PC2_HEADER.size).reshape(nv, 3)
    state.cache = (path, f, nv, name, view)
    return view


def _write_cache(state, path, positions, name=None):
    """positions (V, 3) float32 -> the one-frame .pc2 at `path` (nothing to
    copy when `positions` is its mapped view); `name`: the object's, kept
    with the file (a renamed object gets its own file)."""
    view = _open_cache(state, path, len(positions), name)
    if view is not positions:
        view[...] = positions


def _new_modifier(obj):
    """A new Mesh Cache modifier on `obj`, configured for the live file at
    once. The settings must be in place before the depsgraph first sees the
    modifier: its relations are built then, and a later change of the play
    mode does not rebuild them. A new Mesh Cache plays with the scene time
    (time-dependent), and that stale relation made Blender evaluate the
    object on every frame change before the handler deformed it, then again
    after it: two evaluations a frame (issue #37, item 5)."""
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    path = cache_path(obj)
    rest = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
    obj.data.vertices.foreach_get("co", rest)
    with open(path, "wb") as f:  # the rest shape until the first deform
        f.write(PC2_HEADER.pack(PC2_SIGNATURE, 1, len(rest) // 3, 0.0, 1.0, 1))
        f.write(memoryview(rest).cast("B"))
    _configure(mod, path)
    return mod


def _migrate(obj, mod):
    """Replace an older file's Geometry Nodes "Spring Skin" modifier by the
    Mesh Cache one at the same place; returns the new modifier."""
    index = list(obj.modifiers).index(mod)
    obj.modifiers.remove(mod)
    att = obj.data.attributes.get(LEGACY_ATTRIBUTE)
    if att is not None:
        obj.data.attributes.remove(att)
    new = _new_modifier(obj)
    if list(obj.modifiers).index(new) != index:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=new.name, index=index)
    for ng in [g for g in bpy.data.node_groups if g.get(LEGACY_NODE_GROUP_TAG) and g.users == 0]:
        bpy.data.node_groups.remove(ng)
    return new


def _live_path(obj, state):
    cache = state.cache
    return cache[0] if cache is not None and cache[3] == obj.name else cache_path(obj)


def _write_positions(obj, state, positions, check=True):
    """Hand `positions` (V, 3 object space) to Blender: the object's cache
    file, then a transform tag, which re-runs its modifier stack. `check`:
    also make sure the modifier reads that file with the live settings (a
    frame change skips it while the modifier is the one set up before:
    edits of its settings come through the depsgraph update handler)."""
    mod = has_spring_skin(obj)
    if mod is None:
        return
    if mod.type != "MESH_CACHE":
        mod = _migrate(obj, mod)
    path = _live_path(obj, state)
    if state.cache is None or positions is not state.cache[4]:  # else deformed in place
        _write_cache(state, path, positions, obj.name)
    if check or state.configured != mod.as_pointer():
        _configure(mod, path)
        state.configured = mod.as_pointer()
    obj.update_tag(refresh={"OBJECT"})


def add_modifier(obj, arm_mod):
    """Add the "Spring Skin" modifier right after `arm_mod` and disable
    `arm_mod` (viewport and render; the caller moves its object to the
    settings). Returns the new modifier."""
    mod = _new_modifier(obj)
    target = list(obj.modifiers).index(arm_mod) + 1
    current = len(obj.modifiers) - 1
    if current != target:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=target)
    arm_mod.show_viewport = False
    arm_mod.show_render = False
    return mod


def remove_modifier(obj):
    """Remove the "Spring Skin" modifier and its live file."""
    mod = has_spring_skin(obj)
    if mod is not None:
        obj.modifiers.remove(mod)
    att = obj.data.attributes.get(LEGACY_ATTRIBUTE)
    if att is not None:
        obj.data.attributes.remove(att)
    state = _states.get(obj.name)
    _close_cache(state)
    if _cache_dir is not None:
        try:
            os.remove(cache_path(obj))
        except OSError:
            pass


# --- configuration and build ------------------------------------------------------

def _config(obj):
    s = obj.springskin
    name = s.graph_name
    tree_key = (name, _tree_revisions.get(name, 0)) if name else None
    return (tree_key, s.method, s.backend, s.bind_method, s.smooth_iterations)


def _shared_gl_context(ssk):
    """One GL context (a thread of its own, EGL) shared by every deformer of
    the addon; None when it cannot be made (the error is kept)."""
    global _gl_context, _gl_error
    if _gl_context is None and _gl_error is None:
        try:
            _gl_context = ssk.GLContext()
        except Exception as exc:
            _gl_error = str(exc)
    return _gl_context


def shared_implicit_operators(ssk=None):
    """The session's springskin.ImplicitOperators, built on the first call
    (about 2 s) and shared by every implicit deformer of the addon."""
    global _implicit_operators
    if _implicit_operators is None:
        ssk = ssk or native.require()
        _implicit_operators = ssk.ImplicitOperators()
    return _implicit_operators


def _needs_implicit(doc, method):
    if doc is None:
        return method == "IMPLICIT"
    return any(n.get("type") == "implicit" for n in doc.get("nodes", ()))


def _graph_document(obj, scene):
    """(springskin graph source, description): the compiled node tree of the
    object, or None for its method."""
    s = obj.springskin
    if not s.graph_name:
        return None, "method %s" % s.method
    if s.graph is None:
        raise rigmod.SetupError("graph '%s': no Spring Skin Graph node tree of that name (renamed "
                                "or deleted? pick the graph again)" % s.graph_name)
    try:
        doc = nodes.compile_tree(s.graph, obj, scene)
    except nodes.GraphError as exc:
        raise rigmod.SetupError("graph '%s': %s" % (s.graph.name, exc)) from None
    return doc, "graph '%s'" % s.graph.name


def _positions_only(doc):
    """The graph without its normals nodes (and the nodes that only fed
    them): the modifier hands Blender positions only (Blender computes the
    normals of the evaluated mesh), so per-frame normals would be wasted
    work (1.5 ms on 100k vertices). The caller validates the full graph
    first, so errors name the user's graph. (A bake with normals computes
    them from the output positions.)"""
    if not isinstance(doc, dict) or "nodes" not in doc:
        return doc
    normals = {n.get("id") for n in doc["nodes"] if n.get("type") == "normals"}
    if not normals:
        return doc
    edges = [e for e in doc.get("edges", ())
             if e.get("from") not in normals and e.get("to") not in normals]
    # keep the nodes that still reach the output
    keep = {n.get("id") for n in doc["nodes"] if n.get("type") == "output"}
    changed = True
    while changed:
        changed = False
        for e in edges:
            if e.get("to") in keep and e.get("from") not in keep:
                keep.add(e.get("from"))
                changed = True
    out = dict(doc)
    out["nodes"] = [n for n in doc["nodes"] if n.get("id") in keep]
    out["edges"] = [e for e in edges if e.get("from") in keep and e.get("to") in keep]
    return out


def _needs_cor(doc, method):
    if doc is None:
        return method == "COR"
    return any(n.get("type") == "skinning" and n.get("method") == "cor"
               for n in doc.get("nodes", ()))


def _needs_attachment(doc, method):
    """The graph needs an attachment binding (rigid, IRS, radial, spring,
    ARAP); CoR nodes alone take their centers from the CorState."""
    if doc is None:
        return method in ("RIGID", "IRS", "SPRING")
    for n in doc.get("nodes", ()):
        if n.get("type") in ("radial", "spring", "arap"):
            return True
        if n.get("type") == "skinning" and n.get("method") in ("rigid", "irs"):
            return True
    return False


def _edited_rows(old, new):
    """Rows whose skin weights differ between two RigData of the same
    mesh and bones, or None when anything else differs (the centers of
    rotation must then be computed again)."""
    if (old is None or old.bone_names != new.bone_names
            or old.positions.shape != new.positions.shape
            or not np.array_equal(old.positions, new.positions)
            or not np.array_equal(old.triangles, new.triangles)
            or not np.array_equal(old.bind, new.bind)
            or not np.array_equal(old.object_matrix, new.object_matrix)):
        return None
    k = max(old.weight_indices.shape[1], new.weight_indices.shape[1])

    def padded(rd):
        n, kk = rd.weight_indices.shape
        idx = np.full((n, k), -1, dtype=np.int32)
        val = np.zeros((n, k), dtype=np.float32)
        idx[:, :kk] = rd.weight_indices
        val[:, :kk] = rd.weight_values
        val[idx < 0] = 0.0
        return idx, val

    oi, ov = padded(old)
    ni, nv = padded(new)
    return np.flatnonzero((oi != ni).any(axis=1) | (ov != nv).any(axis=1))


def _cor_state(obj, state, previous, progress):
    """The CorState for `state`'s rig: `previous`'s brought up to date by
    an incremental update when only skin weights changed (issue #18), else
    a new one (with `progress`). Sets state.cor_note."""
    ssk = native.require()
    prev = previous.cor_state if previous is not None else None
    rows = _edited_rows(previous.rig_data, state.rig_data) if prev is not None else None
    t0 = time.perf_counter()
    if rows is not None:
        try:
            stats = prev.update(state.rig, rows) if len(rows) else None
        except (ValueError, ssk.SpringSkinError, MemoryError) as exc:
            print("Spring Skin: '%s': the centers of rotation update failed (%s); computing "
                  "them again" % (obj.name, exc))
        else:
            ms = 1e3 * (time.perf_counter() - t0)
            if stats is None:
                state.cor_note = "Centers of rotation: kept (no weight changed)"
            else:
                state.cor_note = ("Centers of rotation: %d edited vertices, %d centers "
                                  "updated in %.1f ms" % (len(rows), stats["cor_count"], ms))
            return prev
    try:
        cor = ssk.CorState(state.rig, progress=progress)
    except ValueError as exc:
        raise rigmod.SetupError("'%s': the centers of rotation failed: %s"
                                % (obj.name, exc)) from None
    state.cor_note = "Centers of rotation: computed in %.0f ms" % (
        1e3 * (time.perf_counter() - t0))
    return cor


def _build_deformer(obj, state, scene, progress=None, previous=None):
    """(Re)make the deformer of `state` for the object's configuration;
    binds when the graph needs it; makes the centers of rotation when a CoR
    node needs them (updating `previous`'s, the state this one replaces,
    when only weights changed; `progress(fraction)` follows a full
    precomputation). Raises SetupError."""
    for _step in _build_deformer_steps(obj, state, scene, progress, previous):
        pass


def _build_deformer_steps(obj, state, scene, progress=None, previous=None):
    """_build_deformer as a generator: yields the name of each long step
    before it runs (a modal operator shows it and may stop there)."""
    ssk = native.require()
    s = obj.springskin
    config = _config(obj)
    doc, what = _graph_document(obj, scene)
    try:
        if doc is None:
            graph = ssk.Graph.from_method(s.method.lower(), state.rig)
        else:
            ssk.Graph(doc, state.rig)  # the user's graph, for its errors
            graph = ssk.Graph(_positions_only(doc), state.rig)
    except ValueError as exc:
        raise rigmod.SetupError("%s: %s" % (what, exc)) from None
    binding = None
    needs_cor = _needs_cor(doc, s.method)
    if needs_cor and state.cor_state is None:
        yield "computing the centers of rotation"
        state.cor_state = _cor_state(obj, state, previous, progress)
    elif not needs_cor:
        state.cor_state, state.cor_note = None, ""
    if _needs_attachment(doc, s.method):
        key = (s.bind_method, s.smooth_iterations)
        if state.binding is not None and state.binding_key == key:
            binding = state.binding
        else:
            yield "binding the vertices to the bones"
            t0 = time.perf_counter()
            try:
                binding = state.rig.bind(method=s.bind_method.lower(),
                                         smooth_iterations=s.smooth_iterations)
            except ValueError as exc:
                message = str(exc)
                message = message[len("bind: "):] if message.startswith("bind: ") else message
                raise rigmod.SetupError("'%s': the attachment binding failed: %s"
                                        % (obj.name, messages.rigger_words(message))) from None
            state.bind_seconds = time.perf_counter() - t0
            state.binding, state.binding_key = binding, key
    else:
        state.binding, state.binding_key = None, None
    implicit_ops = None
    if _needs_implicit(doc, s.method):
        if _implicit_operators is None:
            yield "building the implicit surfaces' operators (once a session)"
        try:
            implicit_ops = shared_implicit_operators(ssk)
        except (ValueError, MemoryError, ssk.SpringSkinError) as exc:
            raise rigmod.SetupError("%s: the implicit operators failed: %s" % (what, exc)) \
                from None
    backend = s.backend.lower()
    gl = _shared_gl_context(ssk) if backend in ("gl", "auto") else None
    if backend == "gl" and gl is None:
        raise rigmod.SetupError("backend GL: no OpenGL 4.3 context: %s" % _gl_error)
    yield "preparing the deformer"
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            deformer = ssk.Deformer(state.rig, graph=graph, backend=backend, binding=binding,
                                    gl_context=gl, cor=state.cor_state if needs_cor else None,
                                    implicit_operators=implicit_ops)
    except (ValueError, ssk.SpringSkinError) as exc:
        raise rigmod.SetupError("%s: %s" % (what, messages.rigger_words(str(exc)))) from None
    state.deformer = deformer
    state.offset_method = "dqs" if (doc is None and s.method in ("DQS", "COR", "IMPLICIT")) or (
        doc is not None and any(n.get("type") == "skinning" and n.get("method") in ("dqs", "cor")
                                for n in doc.get("nodes", ()))) else "lbs"
    state.group_weights = {}
    state.has_springs = (doc is None and s.method == "SPRING") or (
        doc is not None and any(n.get("type") == "spring" for n in doc.get("nodes", ())))
    state.unconverged = {}
    # the spring solvers in use, for the advice when a frame does not settle
    state.spring_solvers = {"auto"} if doc is None else {
        n.get("solver", "auto") for n in doc.get("nodes", ()) if n.get("type") == "spring"}
    state.config = config
    state.failed_config = None
    state.error = None
    state.what = what
    state.device_name = deformer.device_name
    state.backend = deformer.backend
    state.warnings = [w for w in (deformer.warning,) if w]
    state.last_key = None


def _build(obj, arm, scene, progress=None, previous=None):
    """A new state for `obj`: read the rig from Blender, make the core rig,
    the binding and the deformer (`previous`: the state it replaces, whose
    centers of rotation are updated when only weights changed). Raises
    SetupError or NativeUnavailable."""
    steps = _build_steps(obj, arm, scene, progress, previous)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _build_steps(obj, arm, scene, progress=None, previous=None):
    """_build as a generator: yields the name of each long step before it
    runs; returns the state (StopIteration.value)."""
    global _build_counter
    ssk = native.require()
    state = ObjectState()
    report = (lambda f: progress(0.6 * f)) if progress else None
    yield "reading the skin weights"
    rd = rigmod.extract(obj, arm, progress=report)
    try:
        state.rig = ssk.Rig(**rd.rig_arguments())
    except (ValueError, TypeError) as exc:
        raise rigmod.SetupError("'%s': %s" % (obj.name, exc)) from None
    if progress:
        progress(0.7)
    state.rig_data = rd
    state.signature = rigmod.signature(obj, arm)
    cagemod.attach(obj, state)
    if previous is not None and not _same_cage_edit(previous, state):
        previous = None  # its centers of rotation belong to another reshaped rig
    yield from _build_deformer_steps(
        obj, state, scene, progress=(lambda f: progress(0.7 + 0.25 * f)) if progress else None,
        previous=previous)
    if progress:
        progress(0.95)
    nv = len(rd.positions)
    state.positions = np.empty((nv, 3), dtype=np.float32)
    _build_counter += 1
    state.build_id = _build_counter
    state.last_mode = obj.mode
    used = stackmod.used_groups(obj)  # shape keys' and modifiers' groups are not weights
    ignored = [g for g in rd.ignored_groups if g not in used]
    if ignored:
        state.warnings.append("vertex groups naming no deforming bone are ignored: %s"
                              % ", ".join(ignored[:8]))
    return state


def _same_cage_edit(a, b):
    ea, eb = a.cage_edit, b.cage_edit
    return (ea is None and eb is None) or (ea is not None and eb is not None
                                           and np.array_equal(ea, eb))


def _rebuild_for_cage(obj, state, scene):
    """The cage reshaped `state.rig`: a binding or centers of rotation of
    the previous rig do not fit it; remake the deformer."""
    state.binding, state.binding_key = None, None
    state.cor_state, state.cor_note = None, ""
    _build_deformer(obj, state, scene)


# --- per frame ----------------------------------------------------------------------

def _armature_of(obj):
    return rigmod.armature_of(obj)


#: object name -> [(modifier name, show_viewport, show_render)]: the Spring
#: Skin modifier and those below it, disabled by on_frame_change_pre so
#: that the frame's first depsgraph pass runs the modifiers above alone
_held = {}
#: object name -> (V, 3) float32: what the modifiers above gave at the last
#: frame change (read in on_frame_change_post, before the stack is restored)
_stack_positions = {}


def _stack_offsets(obj, state, depsgraph, render):
    """(rows, offsets) of what the stack above Spring Skin gives, relative
    to the rest positions (stack.py), or None when it gives the rest.
    Raises stack.StackError."""
    mod = has_spring_skin(obj)
    if mod is None:
        return None
    mods = stackmod.modifiers_above(obj, mod, render)
    rest = state.rig_data.positions
    if mods:
        stackmod.check_modifiers(mods)
        positions = _stack_positions.get(obj.name)
        if positions is None or len(positions) != len(rest):
            raise stackmod.StackError(
                "the modifiers above Spring Skin (%s) are evaluated when the frame changes: "
                "change the frame" % ", ".join("'%s'" % m.name for m in mods[:3]))
    elif stackmod.has_shape_keys(obj):
        positions = stackmod.shape_key_positions(obj, depsgraph, len(rest), state.group_weights)
    else:
        return None
    rows, d = stackmod.offset_rows(positions, rest)
    return (rows, d) if len(rows) else None


def _hold(obj):
    """Disable `obj`'s Spring Skin modifier and the modifiers below it when
    modifiers above it move vertices (remembered in _held for
    _release_stack); returns whether it did."""
    mod = has_spring_skin(obj)
    if mod is None or obj.name in _held or not (mod.show_viewport or mod.show_render):
        return False
    above = stackmod.modifiers_above(obj, mod, None)
    if not above or any(m.type not in stackmod.DEFORMING for m in above):
        return False
    held = []
    below = False
    for m in obj.modifiers:
        below = below or m == mod
        if below and (m.show_viewport or m.show_render):
            held.append((m.name, m.show_viewport, m.show_render))
            m.show_viewport = m.show_render = False
    _held[obj.name] = held
    return True


def _hold_stack(scene):
    """Frame change, before Blender evaluates: the bound objects with
    modifiers above Spring Skin get it and the modifiers below it disabled
    (_hold), so that the first pass evaluates what the stack above gives."""
    for obj in _bound(scene):
        _hold(obj)


def refresh_stack(obj, depsgraph):
    """Evaluate now what the modifiers above `obj`'s Spring Skin give (as a
    frame change does, with an update of `depsgraph` between; for
    operators, never inside a handler)."""
    busy = getattr(_local, "busy", False)
    _local.busy = True
    try:
        if _hold(obj):
            depsgraph.update()
            _release_stack(depsgraph)
    finally:
        _local.busy = busy


def _release_stack(depsgraph):
    """Frame change, after the first pass: read what the stack above gave
    each held object, then enable its modifiers again (Blender evaluates
    the whole stack in its second pass)."""
    for name, held in list(_held.items()):
        del _held[name]
        obj = bpy.data.objects.get(name)
        if obj is None:
            continue
        try:
            me = obj.evaluated_get(depsgraph).data
            nv = len(me.vertices)
            positions = np.empty(3 * nv, dtype=np.float32)
            me.vertices.foreach_get("co", positions)
            _stack_positions[name] = positions.reshape(nv, 3)
        except (AttributeError, RuntimeError, ReferenceError):
            _stack_positions.pop(name, None)
        for mod_name, viewport, render in held:
            m = obj.modifiers.get(mod_name)
            if m is not None:
                m.show_viewport, m.show_render = viewport, render


def _compute(obj, arm, state, depsgraph, scene, force=False, frame_change=False):
    """Deform `obj` for the pose of `depsgraph` and write the positions, unless
    nothing changed since the last write. Returns True when written.
    `frame_change`: called for a frame change (the modifier's settings are
    not checked again)."""
    t0 = time.perf_counter()
    arm_eval = arm.evaluated_get(depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    rd = state.rig_data
    original, raw = rigmod.pose_matrices(arm_eval, rd)
    skinning, objects, premat = rigmod.frame_matrices(obj_eval, arm_eval, rd,
                                                      cagemod.carried(state, original))
    frame = scene.frame_current + scene.frame_subframe
    render = depsgraph.mode == "RENDER"
    try:
        offsets = _stack_offsets(obj, state, depsgraph, render)
    except stackmod.StackError as exc:
        offsets, stack_error = None, str(exc)
        if not stackmod.keeps_vertices(exc):
            _report(obj, state, stack_error)
            state.stack_error = stack_error
            state.last_key = None
            return False  # the stack above changes the vertex count: nothing to show
    else:
        stack_error = None
    if state.stack_error and state.error == state.stack_error:
        state.error = None  # the stack was put right
    key = (frame, hash(raw.tobytes()), hash(premat.tobytes()), state.config, state.build_id,
           None if offsets is None else (hash(offsets[0].tobytes()), hash(offsets[1].tobytes())),
           stack_error)
    if key == state.last_key and not force:
        return False
    if state.stack_error != stack_error:
        state.stack_error = stack_error
        if stack_error:
            print("Spring Skin: '%s': %s" % (obj.name, stack_error))
    ssk = native.require()
    t1 = time.perf_counter()
    if has_spring_skin(obj) is not None:  # deform into the live file (_open_cache)
        state.positions = _open_cache(state, _live_path(obj, state), len(state.positions),
                                      obj.name)
    try:
        state.deformer.deform(skinning, objects, frame=frame, out=state.positions)
    except ssk.SpringDivergedError as exc:
        state.positions[...] = exc.positions
        state.frame_error = "spring diverged at frame %g (last good iterate kept): %s" % (
            frame, exc)
    else:
        state.frame_error = None
    if state.has_springs:
        report = state.deformer.spring_report
        if report["converged"]:
            state.unconverged.pop(frame, None)
            state.unsettled = None
        else:
            state.unconverged[frame] = (report["iterations"], report["residual"])
            state.unsettled = _unsettled(state)
    if offsets is not None and len(offsets[0]):
        rows, d = offsets
        state.positions[rows] += state.rig.skin_vectors(rows, d, skinning, objects,
                                                        method=state.offset_method)
    t2 = time.perf_counter()
    _write_positions(obj, state, state.positions, check=not frame_change)
    state.last_key = key
    state.last_frame = frame
    state.deform_ms = 1e3 * (t2 - t1)
    state.last_ms = 1e3 * (time.perf_counter() - t0)
    state.frames += 1
    if depsgraph.mode != "RENDER":  # the posed copy is the viewport's (main thread)
        cagemod.after_frame(obj, state, original,
                            rd.object_matrix if objects is None else premat, key[:3])
    return True


def _unsettled(state):
    """The rows the last deform's springs left unsettled (their estimated
    distance to the equilibrium at least the tolerance:
    Deformer.spring_unsettled), or None where the backend does not keep
    them (GL)."""
    try:
        values = state.deformer.spring_unsettled()
    except native.require().SpringSkinError:
        return None
    return np.flatnonzero(values >= 1.0)


def unsettled_points(obj):
    """(N, 3) world positions of the vertices the springs of the frame
    shown left unsettled, drawn over the viewport (ui.py); None when the
    frame converged, nothing was deformed, or the backend keeps no
    per-vertex settling (GL)."""
    state = _states.get(obj.name)
    if state is None or getattr(state, "unsettled", None) is None or state.positions is None:
        return None
    rows = state.unsettled[state.unsettled < len(state.positions)]
    local = state.positions[rows].astype(np.float64)
    m = np.array(obj.matrix_world, dtype=np.float64)
    return local @ m[:3, :3].T + m[:3, 3]


def _report(obj, state, message):
    state.error = message
    if state.printed != message:  # once per distinct message, not every frame
        print("Spring Skin: '%s': %s" % (obj.name, message))
        state.printed = message


#: Objects whose deformer a modal operator is rebuilding in steps
#: (operators.OBJECT_OT_springskin_set_method): the handlers keep the
#: deformer they have until it ends.
_rebuild_held = set()


def hold_rebuild(name):
    _rebuild_held.add(name)


def release_rebuild(name):
    _rebuild_held.discard(name)


def _prepare(obj, scene, cage_force=False, render=False, updated=None):
    """The object's up-to-date state, rebuilding what changed (the cage's
    edits too: cage.sync, throttled unless `cage_force`); None when it
    cannot be deformed now (the reason is kept in the state). A `render`
    depsgraph reads the cage but leaves the posed copy alone. `updated`:
    the names of the meshes, armatures and objects whose data the
    depsgraph just updated (_updated_data), or None; with it, the part of
    the rig's signature whose data is among them is read again, and only
    that (a frame change updates none of them, a pose edit the armature's
    data; the whole signature costs more than deforming a 10k-vertex body
    with LBS)."""
    arm = _armature_of(obj)
    state = _states.get(obj.name)
    if arm is None:
        if state is None:
            state = _states[obj.name] = ObjectState()
        _report(obj, state, "no armature: the armature object '%s' is gone (deleted?)"
                % rigmod.armature_label(obj))
        return None, None
    mode = obj.mode
    left_editing = state is not None and state.last_mode in EDITING_MODES \
        and mode not in EDITING_MODES
    if state is not None:
        state.last_mode = mode
    if mode in EDITING_MODES and mode != "WEIGHT_PAINT":
        return None, None
    if updated is not None and state is not None and state.signature is not None and \
            not left_editing and not state.recheck:
        mesh = bool({("OBJECT", obj.name), ("MESH", obj.data.name)} & updated)
        armature = ("ARMATURE", arm.data.name) in updated
        signature = rigmod.signature(obj, arm, state.signature, mesh, armature) \
            if mesh or armature else state.signature
    else:
        signature = rigmod.signature(obj, arm)
        if state is not None:
            state.recheck = False
    if state is None or state.rig is None or state.signature != signature or left_editing:
        if state is not None and state.rig is None and state.signature == signature \
                and not left_editing and state.failed_config == _config(obj):
            return None, None  # failed before with the same rig and settings
        try:
            new = _build(obj, arm, scene, previous=state)
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            failed = state if state is not None and state.rig is None else ObjectState()
            failed.signature = signature
            failed.failed_config = _config(obj)
            _states[obj.name] = failed
            _report(obj, failed, str(exc))
            return None, None
        new.printed = state.printed if state is not None else None
        _states[obj.name] = state = new
    elif state.config != _config(obj) and state.failed_config != _config(obj) and \
            obj.name not in _rebuild_held:
        try:
            _build_deformer(obj, state, scene)
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            state.failed_config = _config(obj)
            _report(obj, state, str(exc))  # keeps the last good deformer
    try:
        cagemod.sync(obj, state, lambda st: _rebuild_for_cage(obj, st, scene), force=cage_force,
                     posed=not render)
    except (rigmod.SetupError, native.NativeUnavailable) as exc:
        _report(obj, state, "after the cage edit: %s" % exc)
    return arm, state


def evaluate(obj, depsgraph, scene, force=False, cage_force=False, updated=None,
             frame_change=False):
    """Bring `obj`'s positions up to date for `depsgraph`; returns its state
    (positions of the frame in ``state.positions``) or None. `cage_force`:
    apply a cage edit now, not throttled. `updated`: the handler's
    _updated_data (None: check everything). `frame_change`: called for a
    frame change (the modifier's settings are not checked again)."""
    with _lock:
        try:
            arm, state = _prepare(obj, scene, cage_force=cage_force,
                                  render=depsgraph is not None and depsgraph.mode == "RENDER",
                                  updated=updated)
        except Exception as exc:  # never let a handler raise into Blender
            state = _states.setdefault(obj.name, ObjectState())
            _report(obj, state, "%s: %s" % (type(exc).__name__, exc))
            return None
        if state is None or state.deformer is None:
            return None
        try:
            _compute(obj, arm, state, depsgraph, scene, force=force,
                     frame_change=frame_change)
        except Exception as exc:
            _report(obj, state, "%s: %s" % (type(exc).__name__, exc))
            return None
        return state


def _bound(scene):
    """The bound mesh objects of `scene` (one pass over its objects)."""
    bound = []
    for obj in scene.objects:
        if obj.type != "MESH":
            continue
        settings = getattr(obj, "springskin", None)
        if settings is not None and settings.bound:
            bound.append(obj)
    return bound


def _targets(bound, depsgraph):
    """The objects of `bound` whose Spring Skin modifier `depsgraph` shows."""
    render = depsgraph is not None and depsgraph.mode == "RENDER"
    for obj in bound:
        mod = has_spring_skin(obj)
        if mod is None or not (mod.show_render if render else mod.show_viewport):
            continue
        yield obj


def _updated_data(depsgraph):
    """{(kind, name)} of the objects, meshes and armatures whose data (not
    only their transform) `depsgraph`'s last evaluation updated; for an
    armature object, its pose is its data, so objects count only as
    "OBJECT" and their armature or mesh data by its own kind."""
    updated = set()
    for u in depsgraph.updates:
        ident = u.id
        if isinstance(ident, bpy.types.Object):
            if u.is_updated_geometry and ident.type != "ARMATURE":
                updated.add(("OBJECT", ident.name))
        elif isinstance(ident, bpy.types.Mesh):
            updated.add(("MESH", ident.name))
        elif isinstance(ident, bpy.types.Armature):
            updated.add(("ARMATURE", ident.name))
    return updated


def unconverged_summary(state):
    """One line on the spring solves that stopped at the iteration cap, or
    None."""
    if state is None or not state.unconverged:
        return None
    frames = sorted(state.unconverged)
    iterations, residual = max(state.unconverged.values(), key=lambda r: r[1])
    shown = ", ".join("%g" % f for f in frames[:6]) + (", ..." if len(frames) > 6 else "")
    # advice that fits the solver in use: the Auto solver is the multigrid
    # on both backends (about as many passes on a dense mesh as on a light
    # one)
    solvers = getattr(state, "spring_solvers", {"auto"})
    slower = sorted(solvers & {"jacobi", "chebyshev", "multilevel"})
    if slower:
        advice = ("raise Max Iterations on the Spring node, or set its Solver to Auto (the "
                  "multigrid, far fewer iterations on a dense mesh than %s)"
                  % slower[0].capitalize())
    else:
        advice = "raise Max Iterations on the Spring node"
    return ("Springs not converged at %d frame(s): %s (largest residual %.3g after %d "
            "iterations): %s" % (len(frames), shown, residual, iterations, advice))


def note_of(obj):
    """What happened to `obj`'s Spring Skin modifier (applied or removed
    outside the addon's operators), or None."""
    return _notes.get(obj.name) if obj is not None else None


def _check_weights(scene, depsgraph):
    """Weights edited outside Edit and Weight Paint mode (they tag the mesh's
    geometry and leave the rest signature alone): rebind when the object
    asks for it, else mark the binding stale."""
    meshes = {u.id.original.name for u in depsgraph.updates
              if isinstance(u.id, bpy.types.Mesh) and u.is_updated_geometry}
    if not meshes:
        return
    for obj in scene.objects:
        if obj.type != "MESH" or obj.data.name not in meshes or obj.mode in EDITING_MODES:
            continue
        settings = getattr(obj, "springskin", None)
        state = _states.get(obj.name)
        if settings is None or not settings.bound or state is None or state.rig_data is None:
            continue
        arm = _armature_of(obj)
        if arm is None or rigmod.weights_hash(obj, arm) == state.rig_data.weights_hash:
            continue
        if not settings.auto_rebind:
            state.stale = ("the skin weights changed since the binding: Rebind to use them "
                           "(or turn on Auto Rebind)")
            continue
        try:
            new = _build(obj, arm, scene, previous=state)
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            _report(obj, state, "rebinding after a weight edit failed: %s" % exc)
            continue
        new.printed = state.printed
        _close_cache(state)
        _states[obj.name] = new


def _modifier_lost(obj):
    """`obj` is bound but its Spring Skin modifier is gone: applied (the
    mesh now holds a deformed shape) or deleted. Give the mesh back to its
    Armature modifier: enabled when the modifier was deleted, left disabled
    (its armature restored) when it was applied, since it would deform the
    applied shape again; say which in the panel and the console."""
    settings = obj.springskin
    state = _states.pop(obj.name, None)
    _close_cache(state)
    arm = rigmod.armature_of(obj)
    arm_mod = rigmod.armature_modifier(obj, settings.armature_modifier)
    applied = False
    if state is not None and state.rig_data is not None and \
            len(obj.data.vertices) == len(state.rig_data.positions):
        rest = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
        obj.data.vertices.foreach_get("co", rest)
        applied = not np.array_equal(rest.reshape(-1, 3), state.rig_data.positions)
    name = settings.armature_modifier or "Armature"
    if arm_mod is None:
        note = ("the Spring Skin modifier is gone and so is the Armature modifier '%s': add an "
                "Armature modifier to deform the mesh again" % name)
    else:
        if arm_mod.object is None and arm is not None:
            arm_mod.object = arm
        if applied:
            note = ("Spring Skin was applied: the mesh holds the deformed shape; the Armature "
                    "modifier '%s' stays disabled (enabled, it would deform that shape again)"
                    % arm_mod.name)
        else:
            arm_mod.show_viewport = arm_mod.show_render = True
            note = ("the Spring Skin modifier was deleted: the Armature modifier '%s' deforms "
                    "the mesh again" % arm_mod.name)
    settings.bound = False
    settings.armature_modifier = ""
    settings.armature = None
    settings.armature_object = ""
    _notes[obj.name] = note
    print("Spring Skin: '%s': %s" % (obj.name, note))


def _check_lost(bound):
    for obj in bound:
        if has_spring_skin(obj) is None:
            _modifier_lost(obj)


def _check_added_armature_modifiers(bound):
    """A bound object that gains an enabled Armature modifier with an
    armature (Parent > With Automatic Weights adds "Armature.001": the one
    Spring Skin took over names no armature, so Blender adds another) would
    be deformed twice. Spring Skin takes it over: its armature becomes the
    one Spring Skin follows, the modifier is removed (the one taken over at
    Add stays, for Remove to give back), and a note says so."""
    for obj in bound:
        settings = obj.springskin
        if not settings.bound or has_spring_skin(obj) is None:
            continue
        added = [m for m in obj.modifiers
                 if m.type == "ARMATURE" and m.name != settings.armature_modifier and
                 m.object is not None and m.object.type == "ARMATURE" and
                 (m.show_viewport or m.show_render)]
        for mod in added:
            arm, name = mod.object, mod.name
            previous = rigmod.armature_label(obj)
            if rigmod.armature_modifier(obj, settings.armature_modifier) is None:
                # nothing to give back on Remove but this one: keep it, disabled
                settings.armature_modifier = name
                mod.object = None
                mod.show_viewport = mod.show_render = False
            else:
                obj.modifiers.remove(mod)
            settings.armature = arm
            note = ("the Armature modifier '%s' (armature '%s', added after Spring Skin, as "
                    "re-parenting does) was taken over: Spring Skin follows '%s'%s"
                    % (name, arm.name, arm.name,
                       "" if previous == arm.name else " instead of '%s'" % previous))
            _notes[obj.name] = note
            print("Spring Skin: '%s': %s" % (obj.name, note))
            obj.update_tag(refresh={"OBJECT"})


def _run(scene, depsgraph, check_edits=False):
    """The handlers' work. `check_edits`: a depsgraph update (edits), else
    a frame change, which reads again only what the depsgraph says changed
    (_updated_data) and leaves the modifiers' settings alone."""
    if getattr(_local, "busy", False) or depsgraph is None:
        return
    with _lock:
        _local.busy = True
        try:
            if _held:
                try:
                    _release_stack(depsgraph)
                except Exception as exc:  # never let a handler raise into Blender
                    print("Spring Skin: reading the stack above failed: %s: %s"
                          % (type(exc).__name__, exc))
            bound = []
            try:
                bound = _bound(scene)
                _check_lost(bound)
                _check_added_armature_modifiers(bound)
                if check_edits:
                    _check_weights(scene, depsgraph)
            except Exception as exc:  # never let a handler raise into Blender
                print("Spring Skin: checking the objects failed: %s: %s"
                      % (type(exc).__name__, exc))
            targets = list(_targets(bound, depsgraph))
            updated = _updated_data(depsgraph) if targets else None
            for obj in targets:
                evaluate(obj, depsgraph, scene, updated=updated, frame_change=not check_edits)
        finally:
            _local.busy = False


@persistent
def on_frame_change_pre(scene, _depsgraph=None):
    """Before Blender evaluates a new frame: hold back Spring Skin on the
    objects with modifiers above it (_hold_stack)."""
    if getattr(_local, "busy", False):
        return
    with _lock:
        try:
            _hold_stack(scene)
        except Exception as exc:  # never let a handler raise into Blender
            print("Spring Skin: holding the stack failed: %s: %s" % (type(exc).__name__, exc))


@persistent
def on_frame_change_post(scene, depsgraph=None):
    """Deform every bound object of `scene` for the frame (and subframe) that
    `depsgraph` was just evaluated at (viewport or render)."""
    _run(scene, depsgraph)


@persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    """Pose edits, graph edits, setting changes and weight edits at the same
    frame."""
    _run(scene, depsgraph, check_edits=True)


@persistent
def on_load_post(_dummy=None):
    """A new file: forget every object's state (names may be reused); a
    file that names its armatures gets references (rig.migrate_armature_names);
    then deform its bound objects at the file's frame, so a reopened file
    shows them posed at once (their live files are this session's: the
    Mesh Cache modifiers would read nothing until the frame changed). The
    live files of the file before go first: they are named by object, and
    an object of the same name in this file would show another file's
    result (issue #37, item 4)."""
    rigmod.migrate_armature_names()
    _remove_cache_directory()  # closes the states' files too
    _states.clear()
    _held.clear()
    _stack_positions.clear()
    _notes.clear()
    _tree_revisions.clear()
    resume_all()
    _subscribe_active()
    try:
        scene = bpy.context.scene
        depsgraph = bpy.context.evaluated_depsgraph_get() if scene is not None else None
    except (AttributeError, RuntimeError):  # no window or scene in this context
        scene = depsgraph = None
    if scene is not None and depsgraph is not None:
        _run(scene, depsgraph)


@persistent
def on_undo_redo_post(_scene=None, _dummy=None):
    """Undo/redo restore an older step's data but not the live files: write
    again; a cage binding the step changed is taken from the file again."""
    for name, state in _states.items():
        state.last_key = None
        state.recheck = True  # the whole signature is read again
        obj = bpy.data.objects.get(name)
        if obj is not None and state.base_rig is not None and cagemod.binding_changed(obj, state):
            # Bind Cage (or the Cage field) undone or redone: the cage the
            # file now holds
            state.rig = state.base_rig
            cagemod.attach(obj, state)
            state.binding, state.binding_key = None, None
            state.cor_state, state.cor_note = None, ""
            state.config = None  # the deformer is remade by _prepare


# --- operators' entry points --------------------------------------------------

def bind(obj, scene, depsgraph, progress=None):
    """Read the rig of `obj`, bind, make the deformer, write the current
    frame. Raises SetupError / NativeUnavailable with the reason. Returns
    the state."""
    steps = bind_steps(obj, scene, depsgraph, progress)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def bind_steps(obj, scene, depsgraph, progress=None):
    """bind as a generator (the modal Add and Bind operators): yields the
    name of each long step before it runs, returns the state. Nothing of
    the object's changes until the last step: a generator closed before
    (Esc) leaves the previous state and binding as they were."""
    arm, _mod = rigmod.check_setup(obj)
    try:
        mod = has_spring_skin(obj)
        if mod is not None:
            stackmod.check_modifiers(stackmod.modifiers_above(obj, mod))
    except stackmod.StackError as exc:
        raise rigmod.SetupError("'%s': %s" % (obj.name, exc)) from None
    state = yield from _build_steps(obj, arm, scene, progress=progress,
                                    previous=_states.get(obj.name))
    yield "deforming the current frame"
    with _lock:
        _close_cache(_states.get(obj.name))
        _states[obj.name] = state
        _notes.pop(obj.name, None)
        obj.springskin.bound = True
        refresh_stack(obj, depsgraph)
        _local.busy = True  # the write below must not run the handlers again
        try:
            _compute(obj, arm, state, depsgraph, scene, force=True)
        except Exception:
            obj.springskin.bound = False
            _states.pop(obj.name, None)
            raise
        finally:
            _local.busy = False
    return state


def unbind(obj):
    """Forget the object's deformer; the modifier shows the rest shape."""
    obj.springskin.bound = False
    state = _states.pop(obj.name, None)
    mod = has_spring_skin(obj)
    if mod is not None and mod.type == "MESH_CACHE":
        rest = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
        obj.data.vertices.foreach_get("co", rest)
        _write_cache(state or ObjectState(), cache_path(obj), rest.reshape(-1, 3))
        _close_cache(state)
        _configure(mod, cache_path(obj))
        obj.update_tag(refresh={"OBJECT"})


def forget(obj_name):
    _close_cache(_states.pop(obj_name, None))


def graph_changed(tree):
    """Called by the node tree (nodes.py) when `tree` changed: bump its
    revision, keep the Method field of the meshes using it equal to the
    graph's skinning node (issue #17: method and graph are one control) and
    tag them, so that the next depsgraph update rebuilds their deformers."""
    if tree is None:
        return
    _tree_revisions[tree.name] = _tree_revisions.get(tree.name, 0) + 1
    try:
        objects = bpy.data.objects
    except AttributeError:  # restricted context (registration)
        return
    method = nodes.graph_method(tree)
    for obj in objects:
        settings = getattr(obj, "springskin", None) if obj.type == "MESH" else None
        if settings is not None and settings.graph_name == tree.name:
            state = _states.get(obj.name)
            if state is not None:
                state.failed_config = None
            if method is not None and settings.method != method:
                settings.method = method
            obj.update_tag(refresh={"OBJECT"})


def cage_changed(obj):
    """The Cage field of `obj` changed: a cage other than the bound one (or
    none) forgets the binding, and the character gets the rest shape read
    from Blender back (Bind Cage binds the picked cage)."""
    cage = obj.springskin.cage
    if cage is not None and cage.name == cagemod.bound_name(obj):
        return
    drop_cage(obj)


def drop_cage(obj):
    """Forget `obj`'s cage binding (stored and live); the deformer is remade
    for the rig read from Blender at the next update."""
    if obj.get(cagemod.REST_KEY) is None and not obj.springskin.cage_bound:
        return
    cagemod.clear(obj)
    state = _states.get(obj.name)
    if state is not None and state.base_rig is not None:
        state.cage = state.cage_edit = state.cage_error = state.pose_base = None
        if state.rig is not state.base_rig:
            state.rig = state.base_rig
            state.binding, state.binding_key = None, None
            state.cor_state, state.cor_note = None, ""
            state.config = None  # remade by _prepare
    if obj.type == "MESH":
        obj.update_tag(refresh={"OBJECT"})


def settings_changed(obj):
    """A Spring Skin property of `obj` changed: rebuild at the next update."""
    state = _states.get(obj.name)
    if state is not None:
        state.failed_config = None
    if obj.type == "MESH":
        obj.update_tag(refresh={"OBJECT"})


# --- registration --------------------------------------------------------------------

_HANDLERS = (
    ("frame_change_pre", on_frame_change_pre),
    ("frame_change_post", on_frame_change_post),
    ("depsgraph_update_post", on_depsgraph_update_post),
    ("load_post", on_load_post),
    ("undo_post", on_undo_redo_post),
    ("redo_post", on_undo_redo_post),
)


def _remove_handlers():
    for list_name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, list_name)
        for old in [h for h in handlers if getattr(h, "__name__", None) == fn.__name__
                    and getattr(h, "__module__", None) == fn.__module__]:
            handlers.remove(old)  # this function or a reloaded module's


# --- the graph editor follows the active object -----------------------------------

_MSGBUS_OWNER = object()


def show_graph_of(obj, screens=None):
    """Show `obj`'s deformer graph in every unpinned Spring Skin Graph editor
    (issue #17: the editor kept showing the previous object's graph)."""
    tree = obj.springskin.graph if obj is not None and obj.type == "MESH" and \
        getattr(obj, "springskin", None) is not None else None
    if tree is None:
        return
    if screens is None:
        try:
            screens = [w.screen for w in bpy.context.window_manager.windows]
        except AttributeError:
            return
    for screen in screens:
        for area in screen.areas:
            if area.type != "NODE_EDITOR":
                continue
            space = area.spaces.active
            if space.tree_type == nodes.TREE_IDNAME and not space.pin and \
                    space.node_tree != tree:
                space.node_tree = tree


def _active_changed():
    try:
        show_graph_of(bpy.context.view_layer.objects.active)
    except Exception as exc:  # a message-bus callback must not raise
        print("Spring Skin: following the active object: %s" % exc)


def _subscribe_active():
    bpy.msgbus.clear_by_owner(_MSGBUS_OWNER)
    bpy.msgbus.subscribe_rna(key=(bpy.types.LayerObjects, "active"), owner=_MSGBUS_OWNER,
                             args=(), notify=_active_changed)


#: Object custom property: the addon was disabled while this object was
#: bound; its Armature modifier drives the mesh until the addon is back.
SUSPENDED = "springskin_suspended"


def suspend_all():
    """Addon disable: every bound object gets its Armature modifier back
    (armature restored, enabled) and its Spring Skin modifier disabled, so
    the mesh follows the rig without the addon; marked for resume_all."""
    try:
        objects = bpy.data.objects
    except AttributeError:  # restricted context
        return
    for obj in objects:
        settings = getattr(obj, "springskin", None) if obj.type == "MESH" else None
        mod = has_spring_skin(obj)
        if settings is None or not settings.bound or mod is None:
            continue
        arm_mod = rigmod.armature_modifier(obj, settings.armature_modifier)
        arm = rigmod.armature_of(obj)
        if arm_mod is None or arm is None:
            continue
        arm_mod.object = arm
        arm_mod.show_viewport = arm_mod.show_render = True
        mod.show_viewport = mod.show_render = False
        obj[SUSPENDED] = 1


def resume_all():
    """Addon enable (and file load): objects suspended by suspend_all are
    taken over again. Returns None (a bpy.app.timers callback)."""
    try:
        objects = bpy.data.objects
    except AttributeError:
        return None
    for obj in objects:
        if obj.get(SUSPENDED) is None:
            continue
        del obj[SUSPENDED]
        settings = getattr(obj, "springskin", None)
        mod = has_spring_skin(obj)
        if settings is None or mod is None or not settings.bound:
            continue
        arm_mod = rigmod.armature_modifier(obj, settings.armature_modifier)
        if arm_mod is not None:
            arm_mod.object = None
            arm_mod.show_viewport = arm_mod.show_render = False
        mod.show_viewport = mod.show_render = True
        obj.update_tag(refresh={"OBJECT"})
    return None


def register():
    _remove_handlers()
    atexit.unregister(_remove_cache_directory)
    atexit.register(_remove_cache_directory)
    for list_name, fn in _HANDLERS:
        getattr(bpy.app.handlers, list_name).append(fn)
    nodes.add_change_listener(graph_changed)
    cagemod.set_evaluator(evaluate)
    _subscribe_active()
    # bpy.data is restricted while add-ons register at startup: resume later
    bpy.app.timers.register(resume_all, first_interval=0.0)


def unregister():
    global _gl_context, _gl_error, _implicit_operators
    cagemod.unregister()
    nodes.remove_change_listener(graph_changed)
    bpy.msgbus.clear_by_owner(_MSGBUS_OWNER)
    _remove_handlers()
    suspend_all()
    _remove_cache_directory()
    _states.clear()
    _notes.clear()
    _tree_revisions.clear()
    _gl_context = None
    _gl_error = None
    _implicit_operators = None  # freed with the last deformer holding it
