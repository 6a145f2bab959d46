"""The live part of the addon: the "Spring Skin" modifier and its handlers.

How a deformation reaches the screen and the renderer
-----------------------------------------------------
The mesh gets a point-domain FLOAT_VECTOR attribute ``springskin_offset``
and a Geometry Nodes modifier "Spring Skin" running the node group
"SpringSkin Offset" (Group Input -> Set Position, offset = Named Attribute
``springskin_offset`` -> Group Output), placed right after the Armature
modifier it takes over (that one is disabled in viewport and render, not
deleted). Persistent ``frame_change_post`` and ``depsgraph_update_post``
handlers read the pose from the *evaluated* armature of the depsgraph they
are given (viewport, final render, motion-blur subframes), deform with the
core and write ``positions - rest`` into the attribute of the original mesh;
Blender then re-evaluates the mesh in the same update (its second pass,
without callbacks). So the result shows, orders and renders like any other
modifier, and a .blend opened without the addon still shows the last
written frame.

Work is done only when something changed: per object a change key of the
frame (with subframe), a hash of the pose matrices, the mesh-to-armature
matrix, the deformer configuration (graph revision, method, backend,
binding settings) and the rig build. Writing the attribute triggers another
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
"""

import threading
import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from . import native
from . import nodes
from . import rig as rigmod

__all__ = ["ATTRIBUTE", "MODIFIER_NAME", "NODE_GROUP_NAME", "ObjectState", "bind",
           "evaluate", "graph_changed", "has_spring_skin", "register", "state_of", "unbind",
           "unregister"]

MODIFIER_NAME = "Spring Skin"
NODE_GROUP_NAME = "SpringSkin Offset"
ATTRIBUTE = "springskin_offset"
#: Custom property marking the node group as ours (a user group of the same
#: name is left alone).
NODE_GROUP_TAG = "springskin_offset_group"
#: Methods whose one-node graph needs an attachment binding.
BINDING_METHODS = ("RIGID", "IRS", "SPRING", "COR")
#: Modes in which the mesh is being edited: no deformation is written then,
#: and the rig is read again when the object leaves them.
EDITING_MODES = ("EDIT", "WEIGHT_PAINT", "SCULPT")

_states = {}           # object name -> ObjectState
_tree_revisions = {}   # node tree name -> revision (bumped by graph_changed)
# The handlers may run on the main thread (viewport) and on a render
# thread (the render depsgraph) at once, and the core releases the GIL while
# it deforms: one lock serializes the handlers' work across threads, and a
# per-thread flag guards against re-entrance (the attribute write tagging
# the mesh while a handler is running).
_lock = threading.RLock()
_local = threading.local()
_build_counter = 0
_gl_context = None     # shared springskin.GLContext for the gl/auto backends
_gl_error = None


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
        self.offset = None          # (V, 3) float32
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
    """The object's "Spring Skin" modifier, or None."""
    if obj is None or obj.type != "MESH":
        return None
    mod = obj.modifiers.get(MODIFIER_NAME)
    return mod if mod is not None and mod.type == "NODES" else None


# --- the Geometry Nodes side -----------------------------------------------------

def _node_group_valid(ng):
    return (ng.bl_idname == "GeometryNodeTree" and ng.get(NODE_GROUP_TAG)
            and any(n.bl_idname == "GeometryNodeSetPosition" for n in ng.nodes))


def ensure_node_group():
    """The "SpringSkin Offset" geometry node group, created once and reused."""
    for ng in bpy.data.node_groups:
        if ng.name.startswith(NODE_GROUP_NAME) and _node_group_valid(ng):
            return ng
    ng = bpy.data.node_groups.new(NODE_GROUP_NAME, "GeometryNodeTree")
    ng[NODE_GROUP_TAG] = 1
    ng.inputs.new("NodeSocketGeometry", "Geometry")
    ng.outputs.new("NodeSocketGeometry", "Geometry")
    group_in = ng.nodes.new("NodeGroupInput")
    group_in.location = (-400, 0)
    group_out = ng.nodes.new("NodeGroupOutput")
    group_out.location = (300, 0)
    set_position = ng.nodes.new("GeometryNodeSetPosition")
    set_position.location = (0, 0)
    named = ng.nodes.new("GeometryNodeInputNamedAttribute")
    named.location = (-300, -200)
    named.data_type = "FLOAT_VECTOR"
    named.inputs["Name"].default_value = ATTRIBUTE
    vector = next(s for s in named.outputs if s.type == "VECTOR")
    ng.links.new(group_in.outputs[0], set_position.inputs["Geometry"])
    ng.links.new(vector, set_position.inputs["Offset"])
    ng.links.new(set_position.outputs[0], group_out.inputs[0])
    return ng


def ensure_attribute(mesh):
    """The ``springskin_offset`` attribute of `mesh` (POINT, FLOAT_VECTOR)."""
    att = mesh.attributes.get(ATTRIBUTE)
    if att is not None and (att.data_type != "FLOAT_VECTOR" or att.domain != "POINT"):
        mesh.attributes.remove(att)
        att = None
    if att is None:
        att = mesh.attributes.new(ATTRIBUTE, "FLOAT_VECTOR", "POINT")
    return att


def _write_offset(mesh, offset):
    att = ensure_attribute(mesh)
    att.data.foreach_set("vector", offset.reshape(-1))
    mesh.update_tag()


def add_modifier(obj, arm_mod):
    """Add the "Spring Skin" modifier right after `arm_mod` and disable
    `arm_mod` (viewport and render; the caller moves its object to the
    settings). Returns the new modifier."""
    ensure_attribute(obj.data)
    mod = obj.modifiers.new(MODIFIER_NAME, "NODES")
    mod.node_group = ensure_node_group()
    target = list(obj.modifiers).index(arm_mod) + 1
    current = len(obj.modifiers) - 1
    if current != target:
        with bpy.context.temp_override(object=obj, active_object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=target)
    arm_mod.show_viewport = False
    arm_mod.show_render = False
    return mod


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


def _build_deformer(obj, state, scene):
    """(Re)make the deformer of `state` for the object's configuration;
    binds when the graph needs it. Raises SetupError."""
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
    if graph.needs_binding or needs_cor:
        key = (s.bind_method, s.smooth_iterations, needs_cor)
        if state.binding is not None and state.binding_key == key:
            binding = state.binding
        else:
            t0 = time.perf_counter()
            try:
                binding = state.rig.bind(method=s.bind_method.lower(),
                                         smooth_iterations=s.smooth_iterations, cor=needs_cor)
            except ValueError as exc:
                message = str(exc)
                message = message[len("bind: "):] if message.startswith("bind: ") else message
                raise rigmod.SetupError("'%s': the attachment binding failed: %s"
                                        % (obj.name, message)) from None
            state.bind_seconds = time.perf_counter() - t0
            state.binding, state.binding_key = binding, key
    backend = s.backend.lower()
    gl = _shared_gl_context(ssk) if backend in ("gl", "auto") else None
    if backend == "gl" and gl is None:
        raise rigmod.SetupError("backend GL: no OpenGL 4.3 context: %s" % _gl_error)
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            deformer = ssk.Deformer(state.rig, graph=graph, backend=backend, binding=binding,
                                    gl_context=gl)
    except (ValueError, ssk.SpringSkinError) as exc:
        raise rigmod.SetupError("%s: %s" % (what, exc)) from None
    state.deformer = deformer
    state.config = config
    state.failed_config = None
    state.error = None
    state.what = what
    state.device_name = deformer.device_name
    state.backend = deformer.backend
    state.warnings = [w for w in (deformer.warning,) if w]
    state.last_key = None


def _build(obj, arm, scene, progress=None):
    """A new state for `obj`: read the rig from Blender, make the core rig,
    the binding and the deformer. Raises SetupError or NativeUnavailable."""
    global _build_counter
    ssk = native.require()
    state = ObjectState()
    report = (lambda f: progress(0.6 * f)) if progress else None
    rd = rigmod.extract(obj, arm, progress=report)
    try:
        state.rig = ssk.Rig(**rd.rig_arguments())
    except (ValueError, TypeError) as exc:
        raise rigmod.SetupError("'%s': %s" % (obj.name, exc)) from None
    if progress:
        progress(0.7)
    state.rig_data = rd
    state.signature = rigmod.signature(obj, arm)
    _build_deformer(obj, state, scene)
    if progress:
        progress(0.95)
    nv = len(rd.positions)
    state.positions = np.empty((nv, 3), dtype=np.float32)
    state.offset = np.zeros((nv, 3), dtype=np.float32)
    _build_counter += 1
    state.build_id = _build_counter
    state.last_mode = obj.mode
    if rd.ignored_groups:
        state.warnings.append("vertex groups naming no deforming bone are ignored: %s"
                              % ", ".join(rd.ignored_groups[:8]))
    return state


# --- per frame ----------------------------------------------------------------------

def _armature_of(obj):
    return rigmod.armature_of(obj)


def _compute(obj, arm, state, depsgraph, scene, force=False):
    """Deform `obj` for the pose of `depsgraph` and write the offsets, unless
    nothing changed since the last write. Returns True when written."""
    t0 = time.perf_counter()
    arm_eval = arm.evaluated_get(depsgraph)
    obj_eval = obj.evaluated_get(depsgraph)
    rd = state.rig_data
    skinning, raw = rigmod.pose_matrices(arm_eval, rd)
    skinning, objects, premat = rigmod.frame_matrices(obj_eval, arm_eval, rd, skinning)
    frame = scene.frame_current + scene.frame_subframe
    key = (frame, hash(raw.tobytes()), hash(premat.tobytes()), state.config, state.build_id)
    if key == state.last_key and not force:
        return False
    ssk = native.require()
    t1 = time.perf_counter()
    try:
        state.deformer.deform(skinning, objects, frame=frame, out=state.positions)
    except ssk.SpringDivergedError as exc:
        state.positions[...] = exc.positions
        state.frame_error = "spring diverged at frame %g (last good iterate kept): %s" % (
            frame, exc)
    else:
        state.frame_error = None
    t2 = time.perf_counter()
    np.subtract(state.positions, rd.positions, out=state.offset)
    _write_offset(obj.data, state.offset)
    state.last_key = key
    state.last_frame = frame
    state.deform_ms = 1e3 * (t2 - t1)
    state.last_ms = 1e3 * (time.perf_counter() - t0)
    state.frames += 1
    return True


def _report(obj, state, message):
    state.error = message
    if state.printed != message:  # once per distinct message, not every frame
        print("Spring Skin: '%s': %s" % (obj.name, message))
        state.printed = message


def _prepare(obj, scene):
    """The object's up-to-date state, rebuilding what changed; None when it
    cannot be deformed now (the reason is kept in the state)."""
    arm = _armature_of(obj)
    state = _states.get(obj.name)
    if arm is None:
        if state is None:
            state = _states[obj.name] = ObjectState()
        _report(obj, state, "no armature: the armature object '%s' is gone (renamed or "
                            "deleted?)" % obj.springskin.armature_object)
        return None, None
    mode = obj.mode
    left_editing = state is not None and state.last_mode in EDITING_MODES \
        and mode not in EDITING_MODES
    if state is not None:
        state.last_mode = mode
    if mode in EDITING_MODES and mode != "WEIGHT_PAINT":
        return None, None
    signature = rigmod.signature(obj, arm)
    if state is None or state.rig is None or state.signature != signature or left_editing:
        if state is not None and state.rig is None and state.signature == signature \
                and not left_editing and state.failed_config == _config(obj):
            return None, None  # failed before with the same rig and settings
        try:
            new = _build(obj, arm, scene)
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            failed = state if state is not None and state.rig is None else ObjectState()
            failed.signature = signature
            failed.failed_config = _config(obj)
            _states[obj.name] = failed
            _report(obj, failed, str(exc))
            return None, None
        new.printed = state.printed if state is not None else None
        _states[obj.name] = state = new
    elif state.config != _config(obj) and state.failed_config != _config(obj):
        try:
            _build_deformer(obj, state, scene)
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            state.failed_config = _config(obj)
            _report(obj, state, str(exc))  # keeps the last good deformer
    return arm, state


def evaluate(obj, depsgraph, scene, force=False):
    """Bring `obj`'s offsets up to date for `depsgraph`; returns its state
    (positions of the frame in ``state.positions``) or None."""
    with _lock:
        try:
            arm, state = _prepare(obj, scene)
        except Exception as exc:  # never let a handler raise into Blender
            state = _states.setdefault(obj.name, ObjectState())
            _report(obj, state, "%s: %s" % (type(exc).__name__, exc))
            return None
        if state is None or state.deformer is None:
            return None
        try:
            _compute(obj, arm, state, depsgraph, scene, force=force)
        except Exception as exc:
            _report(obj, state, "%s: %s" % (type(exc).__name__, exc))
            return None
        return state


def _targets(scene, depsgraph):
    render = depsgraph is not None and depsgraph.mode == "RENDER"
    for obj in scene.objects:
        if obj.type != "MESH":
            continue
        settings = getattr(obj, "springskin", None)
        if settings is None or not settings.bound:
            continue
        mod = has_spring_skin(obj)
        if mod is None or not (mod.show_render if render else mod.show_viewport):
            continue
        yield obj


def _run(scene, depsgraph):
    if getattr(_local, "busy", False) or depsgraph is None:
        return
    with _lock:
        _local.busy = True
        try:
            for obj in list(_targets(scene, depsgraph)):
                evaluate(obj, depsgraph, scene)
        finally:
            _local.busy = False


@persistent
def on_frame_change_post(scene, depsgraph=None):
    """Deform every bound object of `scene` for the frame (and subframe) that
    `depsgraph` was just evaluated at (viewport or render)."""
    _run(scene, depsgraph)


@persistent
def on_depsgraph_update_post(scene, depsgraph=None):
    """Pose edits, graph edits and setting changes at the same frame."""
    _run(scene, depsgraph)


@persistent
def on_load_post(_dummy=None):
    """A new file: forget every object's state (names may be reused)."""
    _states.clear()
    _tree_revisions.clear()


@persistent
def on_undo_redo_post(_scene=None, _dummy=None):
    """Undo/redo restore the attribute of an older step: write again."""
    for state in _states.values():
        state.last_key = None


# --- operators' entry points --------------------------------------------------

def bind(obj, scene, depsgraph, progress=None):
    """Read the rig of `obj`, bind, make the deformer, write the current
    frame. Raises SetupError / NativeUnavailable with the reason. Returns
    the state."""
    arm, _mod = rigmod.check_setup(obj)
    with _lock:
        state = _build(obj, arm, scene, progress=progress)
        _states[obj.name] = state
        obj.springskin.bound = True
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
    """Forget the object's deformer and zero its offsets (the mesh shows its
    rest shape through the modifier)."""
    obj.springskin.bound = False
    _states.pop(obj.name, None)
    att = obj.data.attributes.get(ATTRIBUTE)
    if att is not None:
        att.data.foreach_set("vector", np.zeros(3 * len(obj.data.vertices), dtype=np.float32))
        obj.data.update_tag()


def forget(obj_name):
    _states.pop(obj_name, None)


def graph_changed(tree):
    """Called by the node tree (nodes.py) when `tree` changed: bump its
    revision and tag the meshes using it, so that the next depsgraph update
    rebuilds their deformers."""
    if tree is None:
        return
    _tree_revisions[tree.name] = _tree_revisions.get(tree.name, 0) + 1
    try:
        objects = bpy.data.objects
    except AttributeError:  # restricted context (registration)
        return
    for obj in objects:
        settings = getattr(obj, "springskin", None) if obj.type == "MESH" else None
        if settings is not None and settings.graph_name == tree.name:
            state = _states.get(obj.name)
            if state is not None:
                state.failed_config = None
            obj.data.update_tag()


def settings_changed(obj):
    """A Spring Skin property of `obj` changed: rebuild at the next update."""
    state = _states.get(obj.name)
    if state is not None:
        state.failed_config = None
    if obj.type == "MESH":
        obj.data.update_tag()


# --- registration --------------------------------------------------------------------

_HANDLERS = (
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


def register():
    _remove_handlers()
    for list_name, fn in _HANDLERS:
        getattr(bpy.app.handlers, list_name).append(fn)
    nodes.add_change_listener(graph_changed)


def unregister():
    global _gl_context, _gl_error
    nodes.remove_change_listener(graph_changed)
    _remove_handlers()
    _states.clear()
    _tree_revisions.clear()
    _gl_context = None
    _gl_error = None
