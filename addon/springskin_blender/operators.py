"""Operators on the active object (scripts and tests call them by name).

- ``object.springskin_add(method=...)``: add the "Spring Skin" modifier to
  a mesh deformed by an armature, deforming with that method (no graph),
  and bind.
- ``object.springskin_edit_graph()``: turn the method into the deformer
  graph "<object> Spring Skin" and deform with it.
- ``object.springskin_bind()``: read the rig from Blender again and bind.
- ``object.springskin_unbind()``.
- ``object.springskin_bind_cage()``: bind the cage picked in the Cage field
  (its current coordinates are the rest cage; issue #21, ``cage.py``).
- ``object.springskin_cage_edit_in_pose()``: toggle Edit in Pose (a posed
  copy of the cage whose edits reach the rest cage through CageRev).
- ``object.springskin_remove()``: remove the modifier and give the mesh
  back to its Armature modifier; the object's graph goes too when no other
  object uses it.
- ``object.springskin_bake_mesh_cache(filepath=...)``: a ``.pc2`` of every
  frame plus Blender's own Mesh Cache modifier reading it, for render farms
  without the addon.
- ``object.springskin_bake_alembic(filepath=...)``: an Alembic ``.abc``.

A set-up the addon cannot deform (no armature, vertex groups naming no
bone, a mesh the binding refuses, an invalid graph, the native module
missing) is reported with ``self.report({'ERROR'}, message)`` and the
operator returns ``{'CANCELLED'}``; from a script that is a RuntimeError
carrying the message.
"""

import os
import tempfile
import time

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty
from bpy.types import Operator
from bpy_extras.io_utils import ExportHelper

from . import cage as cagemod
from . import native
from . import rig as rigmod
from . import runtime
from .properties import METHOD_ITEMS

__all__ = ["classes"]

#: Blender is Z-up, Alembic Y-up: (x, y, z) -> (x, z, -y), as Blender's own
#: Alembic exporter converts (a rotation of -90 degrees about X).
Z_UP_TO_Y_UP = np.array([[1.0, 0.0, 0.0, 0.0],
                         [0.0, 0.0, 1.0, 0.0],
                         [0.0, -1.0, 0.0, 0.0],
                         [0.0, 0.0, 0.0, 1.0]])


def _fail(op, message):
    op.report({"ERROR"}, message)
    return {"CANCELLED"}


def _mesh_poll(cls, context, need_modifier=False, need_bound=False):
    obj = context.active_object
    if obj is None or obj.type != "MESH":
        cls.poll_message_set("The active object must be a mesh")
        return False
    if need_modifier and runtime.has_spring_skin(obj) is None:
        cls.poll_message_set("The active object has no Spring Skin modifier (Add Spring Skin)")
        return False
    if need_bound and not obj.springskin.bound:
        cls.poll_message_set("The active object is not bound (Bind)")
        return False
    return True


class _Progress:
    """Window-manager progress (a no-op without a window, in background)."""

    def __init__(self, context, total=1000):
        self.wm = context.window_manager
        self.total = total
        self.wm.progress_begin(0, total)

    def __call__(self, fraction):
        self.wm.progress_update(int(self.total * min(max(fraction, 0.0), 1.0)))

    def end(self):
        self.wm.progress_end()


def _summary(obj, state):
    rd = state.rig_data
    parts = ["'%s' bound: %d vertices, %d bones" % (obj.name, len(rd.positions),
                                                    len(rd.bone_names)),
             state.what, "backend %s: %s" % (state.backend, state.device_name)]
    if state.binding is not None:
        parts.append("binding %.0f ms" % (1e3 * state.bind_seconds))
    if state.cor_note:
        parts.append(state.cor_note[0].lower() + state.cor_note[1:])
    if rd.unweighted:
        parts.append("%d vertices without deforming weights stay at rest" % rd.unweighted)
    if rd.loose:
        parts.append("%d loose vertices (in no face) follow their skin weights alone" % rd.loose)
    return ", ".join(parts)


def _bind(op, context, obj):
    """Bind with progress; reports and returns the state or None."""
    progress = _Progress(context)
    try:
        state = runtime.bind(obj, context.scene, context.evaluated_depsgraph_get(), progress)
    except (rigmod.SetupError, native.NativeUnavailable) as exc:
        op.report({"ERROR"}, str(exc))
        return None
    finally:
        progress.end()
    _bound_reports(op, obj, state)
    return state


def _bound_reports(op, obj, state):
    for warning in state.warnings:
        op.report({"WARNING"}, warning)
    if state.cage_error:
        op.report({"WARNING"}, "cage: %s" % state.cage_error)
    op.report({"INFO"}, _summary(obj, state))


#: Meshes of at least this many vertices bind in steps in the window (the
#: step in the status bar, Blender's progress, Esc cancels); a lighter one
#: binds at once (issue #37, item 7: 81k vertices froze the UI 2-9 s).
MODAL_VERTICES = 10000

#: (object name, step, fraction) of the bind running in the window, or None
#: (for the panel and the GUI test).
active_bind = None


class _BindSteps:
    """Add and Bind in the window: runtime.bind_steps one step per timer
    event, the step named in the status bar with "Esc cancels" and
    Blender's progress following; Esc closes the steps, which leaves the
    object's binding as it was, then `_rollback` undoes what the operator
    did before binding (Add: its modifier). Without a window, or for a
    light mesh, execute binds at once."""

    def _rollback(self, context, obj):
        pass

    def _modal_wanted(self, context, obj):
        return (context.window is not None and not bpy.app.background and
                len(obj.data.vertices) >= MODAL_VERTICES)

    def _start(self, context, obj):
        global active_bind
        self._obj_name = obj.name
        self._fraction = 0.0
        self._progress = _Progress(context)

        def progress(fraction):
            self._fraction = fraction
            self._progress(fraction)
        self._steps = runtime.bind_steps(obj, context.scene, context.evaluated_depsgraph_get(),
                                         progress)
        self._label = "starting"
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.modal_handler_add(self)
        active_bind = (obj.name, self._label, 0.0)
        self._status(context)
        return {"RUNNING_MODAL"}

    def _status(self, context):
        if context.workspace is not None:
            context.workspace.status_text_set(
                "Spring Skin: binding '%s': %s (%d%%); Esc cancels"
                % (self._obj_name, self._label, int(100 * self._fraction)))

    def _end(self, context):
        global active_bind
        active_bind = None
        context.window_manager.event_timer_remove(self._timer)
        self._progress.end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)

    def modal(self, context, event):
        global active_bind
        obj = bpy.data.objects.get(self._obj_name)
        if event.type == "ESC" or obj is None:
            self._steps.close()  # nothing of the object changed yet
            self._end(context)
            if obj is not None:
                self._rollback(context, obj)
            self.report({"WARNING"}, "binding '%s' cancelled: the mesh is as it was"
                        % self._obj_name)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}  # no edits of the mesh while it binds
        try:
            self._label = next(self._steps)
        except StopIteration as done:
            self._end(context)
            _bound_reports(self, obj, done.value)
            return {"FINISHED"}
        except (rigmod.SetupError, native.NativeUnavailable) as exc:
            self._end(context)
            self._rollback(context, obj)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        active_bind = (self._obj_name, self._label, self._fraction)
        self._status(context)
        return {"RUNNING_MODAL"}


class OBJECT_OT_springskin_add(_BindSteps, Operator):
    """Add a Spring Skin deformer to the active mesh: a "Spring Skin" modifier that takes over
    its Armature modifier (disabled, not deleted) and deforms with the chosen method"""

    bl_idname = "object.springskin_add"
    bl_label = "Add Spring Skin"
    bl_options = {"REGISTER", "UNDO"}

    method: EnumProperty(name="Method", items=METHOD_ITEMS, default="LBS",
                         description="Skinning method (Edit as Graph turns it into a deformer "
                                     "graph)")

    @classmethod
    def description(cls, _context, properties):
        """The tooltip of each entry of the Add menu: its method's own."""
        for ident, name, text in METHOD_ITEMS:
            if ident == properties.method:
                return "Add Spring Skin with %s. %s" % (name, text)
        return cls.__doc__

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context)

    def invoke(self, context, _event):
        return self._run(context, modal=True)

    def execute(self, context):
        return self._run(context, modal=False)

    def _run(self, context, modal):
        obj = context.active_object
        try:
            arm, arm_mod = rigmod.check_setup(obj)
        except rigmod.SetupError as exc:
            return _fail(self, str(exc))
        if runtime.has_spring_skin(obj) is not None:
            return _fail(self, "'%s' already has a Spring Skin modifier: use Bind, or remove the "
                               "modifier first" % obj.name)
        try:
            native.require()
        except native.NativeUnavailable as exc:
            return _fail(self, str(exc))
        for option in rigmod.unsupported_options(arm_mod):
            self.report({"WARNING"}, "Armature modifier '%s': %s is not reproduced"
                        % (arm_mod.name, option))
        settings = obj.springskin
        previous = (arm_mod.show_viewport, arm_mod.show_render)
        previous_graph = settings.graph_name
        settings.armature_modifier = arm_mod.name
        settings.armature = arm
        settings.armature_object = ""
        settings.graph_name = ""  # the method alone; Edit as Graph makes a graph of it
        settings.method = self.method
        runtime.add_modifier(obj, arm_mod)
        arm_mod.object = None  # no evaluation of the mesh for the disabled modifier
        self._undo = (arm_mod.name, arm, previous, previous_graph)
        if modal and self._modal_wanted(context, obj):
            return self._start(context, obj)
        if _bind(self, context, obj) is None:
            self._rollback(context, obj)
            return {"CANCELLED"}
        return {"FINISHED"}

    def _rollback(self, context, obj):
        """The mesh as it was before Add: no Spring Skin modifier, its
        Armature modifier back."""
        name, arm, previous, previous_graph = self._undo
        settings = obj.springskin
        runtime.remove_modifier(obj)
        arm_mod = obj.modifiers.get(name)
        if arm_mod is not None:
            arm_mod.object = arm
            arm_mod.show_viewport, arm_mod.show_render = previous
        settings.graph_name = previous_graph
        settings.armature_modifier = ""
        settings.armature = None
        settings.armature_object = ""
        runtime.forget(obj.name)


def graph_users(tree_name, but=None):
    """Mesh objects other than `but` whose Spring Skin uses graph `tree_name`."""
    return [o for o in bpy.data.objects if o.type == "MESH" and o is not but
            and getattr(o, "springskin", None) is not None
            and o.springskin.graph_name == tree_name]


class OBJECT_OT_springskin_edit_graph(Operator):
    """Turn the method into a deformer graph (a skinning node, and a spring node for Spring or
    an implicit node for Implicit) that the Spring Skin Graph editor edits; the object then
    deforms with the graph"""

    bl_idname = "object.springskin_edit_graph"
    bl_label = "Edit as Graph"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True)

    def execute(self, context):
        from . import nodes
        obj = context.active_object
        settings = obj.springskin
        tree = settings.graph
        if tree is None:
            name = "%s Spring Skin" % obj.name
            old = bpy.data.node_groups.get(name)
            if old is not None and old.bl_idname == nodes.TREE_IDNAME and not graph_users(name):
                # a graph of this object left unused (Remove, or a cleared
                # Graph field): replaced, not duplicated as "<name>.001"
                bpy.data.node_groups.remove(old)
            tree = nodes.new_graph_tree(name, settings.method)
            settings.graph = tree
        # show it in the open Spring Skin Graph editors
        screen = context.screen
        for area in screen.areas if screen is not None else ():
            if area.type == "NODE_EDITOR" and area.spaces.active.tree_type == nodes.TREE_IDNAME:
                area.spaces.active.node_tree = tree
        self.report({"INFO"}, "'%s' deforms with the graph '%s' (Spring Skin Graph editor)"
                    % (obj.name, tree.name))
        return {"FINISHED"}


class OBJECT_OT_springskin_bind(_BindSteps, Operator):
    """Read the mesh, its vertex-group weights and the armature's bones again, and bind
    (attachment binding and, for CoR, the centers of rotation)"""

    bl_idname = "object.springskin_bind"
    bl_label = "Bind"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True)

    def invoke(self, context, _event):
        obj = context.active_object
        if self._modal_wanted(context, obj):
            return self._start(context, obj)
        return self.execute(context)

    def execute(self, context):
        obj = context.active_object
        return {"FINISHED"} if _bind(self, context, obj) is not None else {"CANCELLED"}


class OBJECT_OT_springskin_set_method(_BindSteps, Operator):
    """Deform with another method: the panel's Method menu. A heavy mesh binds again in steps
    in the window (progress, Esc keeps the method it had)"""

    bl_idname = "object.springskin_set_method"
    bl_label = "Set Method"
    bl_options = {"REGISTER", "UNDO"}

    method: EnumProperty(name="Method", items=METHOD_ITEMS, default="LBS",
                         description="Skinning method")

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True)

    def invoke(self, context, _event):
        obj = context.active_object
        settings = obj.springskin
        if settings.method == self.method:
            return {"CANCELLED"}
        if not settings.bound or not self._modal_wanted(context, obj):
            return self.execute(context)
        self._previous = settings.method
        runtime.hold_rebuild(obj.name)  # the handlers keep the deformer until the steps end
        settings.method = self.method
        return self._start(context, obj)

    def execute(self, context):
        context.active_object.springskin.method = self.method  # the handlers rebuild
        return {"FINISHED"}

    def _end(self, context):
        runtime.release_rebuild(self._obj_name)
        super()._end(context)

    def _rollback(self, context, obj):
        obj.springskin.method = self._previous


class OBJECT_OT_springskin_unbind(Operator):
    """Forget the binding: the Spring Skin modifier shows the rest shape until Bind"""

    bl_idname = "object.springskin_unbind"
    bl_label = "Unbind"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True)

    def execute(self, context):
        runtime.unbind(context.active_object)
        return {"FINISHED"}


def _cage_state(op, context):
    """(object, state) of the active object for the cage operators, or
    (None, error result) after reporting why not."""
    obj = context.active_object
    if runtime.has_spring_skin(obj) is None:
        return None, _fail(op, "'%s' has no Spring Skin modifier: Add Spring Skin first (a cage "
                               "reshapes a character deformed by Spring Skin)" % obj.name)
    if not obj.springskin.bound:
        return None, _fail(op, "'%s' is not bound: Bind first" % obj.name)
    try:
        native.require()
    except native.NativeUnavailable as exc:
        return None, _fail(op, str(exc))
    state = runtime.evaluate(obj, context.evaluated_depsgraph_get(), context.scene)
    if state is None or state.base_rig is None:
        current = runtime.state_of(obj)
        return None, _fail(op, "'%s' cannot be deformed now: %s" % (
            obj.name, (current.error if current is not None else None) or "unknown reason"))
    return obj, state


class OBJECT_OT_springskin_bind_cage(Operator):
    """Bind the cage picked in the Cage field: its current vertex coordinates become the rest
    cage (stored in the .blend); moving them afterwards reshapes the character and refits
    its joints (coupled cages and skeletons, Corda et al. 2020)"""

    bl_idname = "object.springskin_bind_cage"
    bl_label = "Bind Cage"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context)

    def execute(self, context):
        obj, state = _cage_state(self, context)
        if obj is None:
            return state
        settings = obj.springskin
        if settings.cage is None:
            return _fail(self, "no cage: pick a closed triangle or quad mesh in the Cage field "
                               "of '%s' first" % obj.name)
        if settings.cage_edit_in_pose:
            cagemod.set_edit_in_pose(obj, False)
        arm = rigmod.armature_of(obj)
        try:
            seconds = cagemod.bind(obj, state, arm)
        except cagemod.CageError as exc:
            return _fail(self, str(exc))
        runtime.evaluate(obj, context.evaluated_depsgraph_get(), context.scene, force=True,
                         cage_force=True)
        cage = state.cage
        self.report({"INFO"}, "cage '%s' bound to '%s': %d vertices, %d triangles in %.0f ms; "
                    "move its vertices to reshape the character"
                    % (settings.cage.name, obj.name, cage.vertex_count, cage.triangle_count,
                       1e3 * seconds))
        return {"FINISHED"}


class OBJECT_OT_springskin_cage_edit_in_pose(Operator):
    """Edit the cage in the current pose: a posed copy of the cage ("<cage> Posed") follows
    the frame, and moving its vertices moves the rest cage by CageRev (Corda et al. 2020,
    Eq. 19). Exact for Linear Blend; for the other methods an approximation (the linear blend
    system is used). Press again to end"""

    bl_idname = "object.springskin_cage_edit_in_pose"
    bl_label = "Edit in Pose"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def description(cls, context, _properties):
        obj = context.active_object if context is not None else None
        text = cls.__doc__
        if obj is not None and obj.type == "MESH" and obj.springskin.method != "LBS":
            text += (". Method %s: the edit is an approximation here (the posed cage misses "
                     "the edit by a fraction of it at strong bends)" % obj.springskin.method)
        return text

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context)

    def execute(self, context):
        obj, state = _cage_state(self, context)
        if obj is None:
            return state
        if obj.springskin.cage_edit_in_pose:
            cagemod.set_edit_in_pose(obj, False)
            self.report({"INFO"}, "Edit in Pose ended: the cage '%s' holds the rest cage"
                        % obj.springskin.cage.name if obj.springskin.cage else "Edit in Pose "
                        "ended")
            return {"FINISHED"}
        problem = cagemod.topology_error(obj, state) or state.cage_error
        if problem:
            return _fail(self, problem)
        copy = cagemod.set_edit_in_pose(obj, True, context.scene.collection)
        state.pose_base = None
        runtime.evaluate(obj, context.evaluated_depsgraph_get(), context.scene, force=True,
                         cage_force=True)
        if state.pose_base is None:
            cagemod.set_edit_in_pose(obj, False)
            return _fail(self, "the posed cage of '%s' could not be made: %s"
                         % (obj.name, state.error or state.cage_error or "unknown reason"))
        if obj.springskin.method != "LBS" or obj.springskin.graph is not None:
            self.report({"WARNING"}, "CageRev is exact for Linear Blend only: with %s the "
                        "character's posed cage follows the edits approximately"
                        % ("the graph" if obj.springskin.graph is not None
                           else obj.springskin.method))
        self.report({"INFO"}, "edit '%s' at frame %g: its edits move the rest cage"
                    % (copy.name, context.scene.frame_current))
        return {"FINISHED"}


class OBJECT_OT_springskin_remove(Operator):
    """Remove the Spring Skin modifier and give the mesh back to its Armature modifier (its
    armature object restored, enabled in viewport and render); its graph goes too unless
    another object uses it"""

    bl_idname = "object.springskin_remove"
    bl_label = "Remove Spring Skin"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True)

    def execute(self, context):
        obj = context.active_object
        settings = obj.springskin
        arm = rigmod.armature_of(obj)
        arm_mod = rigmod.armature_modifier(obj, settings.armature_modifier)
        runtime.drop_cage(obj)
        runtime.unbind(obj)
        runtime.remove_modifier(obj)
        if arm_mod is not None:
            if arm_mod.object is None and arm is not None:
                arm_mod.object = arm
            arm_mod.show_viewport = arm_mod.show_render = True
        else:
            self.report({"WARNING"}, "the Armature modifier '%s' is gone: add one to deform "
                        "'%s' again" % (settings.armature_modifier, obj.name))
        settings.armature_modifier = ""
        settings.armature = None
        settings.armature_object = ""
        tree = settings.graph
        settings.graph = None
        if tree is not None and not graph_users(tree.name, but=obj):
            # no orphan graphs (issue #17): Undo brings it back
            self.report({"INFO"}, "the graph '%s' was removed with the modifier (Undo brings "
                        "it back)" % tree.name)
            bpy.data.node_groups.remove(tree)
        obj.update_tag()
        return {"FINISHED"}


#: Work per modal step of a bake before the window gets its event loop back.
BAKE_SLICE_SECONDS = 0.1
#: The bake running in a window, for the panel and observers: (object name,
#: next frame, first, last, path), or None.
active_bake = None


def default_cache_path(obj, ext):
    """``//cache/<object><ext>`` next to the .blend (issue #17: the browser
    used to propose ``<blend>.pc2`` for every object), or the same under the
    temporary folder while the file is unsaved."""
    name = bpy.path.clean_name(obj.name) + ext
    if bpy.data.filepath:
        return "//" + "cache/" + name
    return os.path.join(bpy.app.tempdir or tempfile.gettempdir(), "cache", name)


class _BakeBase:
    """The frame loop of both bakes: modal with a window (Blender's progress
    bar, a status line, Esc cancels; the UI keeps drawing), one call in
    background mode or from a script's ``EXEC_DEFAULT``. Subclasses give
    ``_open(context, obj, path, first)`` (the writer), ``_consume(context,
    frame, state)`` and ``_after(context, obj, first, last)``."""

    use_scene_range: BoolProperty(name="Scene Range", default=True,
                                  description="Bake the scene's frame range (Start and End "
                                              "below are ignored)")
    frame_start: IntProperty(name="Start", default=1, description="First frame (inclusive)")
    frame_end: IntProperty(name="End", default=250, description="Last frame (inclusive)")

    @classmethod
    def poll(cls, context):
        return _mesh_poll(cls, context, need_modifier=True, need_bound=True)

    def _range(self, scene):
        if self.use_scene_range:
            return scene.frame_start, scene.frame_end
        return self.frame_start, self.frame_end

    def invoke(self, context, _event):
        obj = context.active_object
        scene = context.scene
        self.filepath = default_cache_path(obj, self.filename_ext)
        self.frame_start, self.frame_end = scene.frame_start, scene.frame_end
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        obj = context.active_object
        try:
            native.require()
        except native.NativeUnavailable as exc:
            return _fail(self, str(exc))
        path = bpy.path.abspath(self.filepath)
        if not path:
            return _fail(self, "no file path given")
        scene = context.scene
        first, last = self._range(scene)
        if last < first:
            return _fail(self, "frame range %d..%d is empty" % (first, last))
        try:
            folder = os.path.dirname(path)
            if folder and os.path.exists(folder) and not os.path.isdir(folder):
                raise rigmod.SetupError("'%s' is a file, not a folder" % folder)
            if folder:
                os.makedirs(folder, exist_ok=True)  # the default //cache/
            self._writer = self._open(context, obj, path, first)
        except (OSError, ValueError, rigmod.SetupError) as exc:
            return _fail(self, "cannot write '%s': %s" % (path, exc))
        self._obj_name = obj.name
        self._path = path
        self._first, self._last, self._next = first, last, first
        self._saved = (scene.frame_current, scene.frame_subframe)
        self._unconverged = {}
        self._t0 = time.perf_counter()
        wm = context.window_manager
        if context.window is None or bpy.app.background:
            while True:
                result = self._step_or_fail(context)
                if result is not None:
                    return result
        wm.progress_begin(0, last - first + 1)
        self._timer = wm.event_timer_add(0.0, window=context.window)
        wm.modal_handler_add(self)
        self._publish()
        return {"RUNNING_MODAL"}

    def _publish(self):
        global active_bake
        active_bake = (self._obj_name, self._next, self._first, self._last, self._path)

    def modal(self, context, event):
        if event.type == "ESC":
            self._end_modal(context)
            self._writer.abort()
            self._restore(context)
            self.report({"WARNING"}, "bake of '%s' cancelled at frame %d: nothing written"
                        % (self._obj_name, self._next))
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        # frames until BAKE_SLICE_SECONDS have passed, then back to Blender's
        # event loop (the UI redraws and Esc gets through; a redraw per frame
        # made a llvmpipe bake 370 ms a frame)
        t0 = time.perf_counter()
        while True:
            result = self._step_or_fail(context)
            if result is not None:
                self._end_modal(context)
                return result
            if time.perf_counter() - t0 >= BAKE_SLICE_SECONDS:
                break
        context.window_manager.progress_update(self._next - self._first)
        self._publish()
        if context.workspace is not None:
            context.workspace.status_text_set(
                "Spring Skin: baking '%s' to %s, frame %d (%d of %d); Esc cancels"
                % (self._obj_name, bpy.path.basename(self._path), self._next,
                   self._next - self._first + 1, self._last - self._first + 1))
        return {"RUNNING_MODAL"}

    def _end_modal(self, context):
        global active_bake
        active_bake = None
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)

    def _restore(self, context):
        frame, subframe = self._saved
        context.scene.frame_set(frame, subframe=subframe)

    def _step_or_fail(self, context):
        """Bake frame self._next; None while frames remain, else the
        operator's result (the file finished or aborted)."""
        obj = bpy.data.objects.get(self._obj_name)
        try:
            if obj is None:
                raise rigmod.SetupError("the object '%s' is gone" % self._obj_name)
            frame = self._next
            scene = context.scene
            scene.frame_set(frame)
            state = runtime.evaluate(obj, context.evaluated_depsgraph_get(), scene)
            if state is None or state.last_frame != frame:
                reason = runtime.state_of(obj).error if runtime.state_of(obj) else None
                raise rigmod.SetupError("frame %d could not be deformed: %s"
                                        % (frame, reason or "unknown reason"))
            if frame in state.unconverged:
                self._unconverged[frame] = state.unconverged[frame]
            self._consume(context, frame, state)
            self._next += 1
            if self._next <= self._last:
                return None
            self._writer.finish()
        except (rigmod.SetupError, OSError, ValueError) as exc:
            self._writer.abort()
            self._restore(context)
            return _fail(self, "bake to '%s' failed: %s" % (self._path, exc))
        except BaseException:
            self._writer.abort()
            self._restore(context)
            raise
        self._restore(context)
        self._after(context, obj, self._first, self._last)
        seconds = time.perf_counter() - self._t0
        frames = self._last - self._first + 1
        message = ("baked frames %d..%d of '%s' (%d vertices) to %s in %.2f s (%.0f ms a frame)"
                   % (self._first, self._last, obj.name, len(obj.data.vertices), self._path,
                      seconds, 1e3 * seconds / frames))
        if self._unconverged:
            worst = max(r[1] for r in self._unconverged.values())
            listed = ", ".join("%d" % f for f in sorted(self._unconverged)[:8])
            self.report({"WARNING"}, "%s; springs not converged at %d frame(s): %s%s (largest "
                        "residual %.3g)" % (message, len(self._unconverged), listed,
                                            ", ..." if len(self._unconverged) > 8 else "",
                                            worst))
        else:
            self.report({"INFO"}, message)
        return {"FINISHED"}


class OBJECT_OT_springskin_bake_mesh_cache(_BakeBase, Operator, ExportHelper):
    """Bake the deformed mesh of every frame to a .pc2 point cache and add Blender's Mesh Cache
    modifier reading it (the Spring Skin modifier is disabled), for farms without the addon"""

    bl_idname = "object.springskin_bake_mesh_cache"
    bl_label = "Bake to Mesh Cache"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".pc2"
    filter_glob: StringProperty(default="*.pc2", options={"HIDDEN"})
    add_modifier: BoolProperty(
        name="Add Mesh Cache Modifier", default=True,
        description="Add (or update) a Mesh Cache modifier reading the file and disable the "
                    "Spring Skin modifier")

    def _open(self, context, obj, path, first):
        ssk = native.require()
        return ssk.PointCacheWriter(path, len(obj.data.vertices), start_frame=first,
                                    sample_rate=1.0)

    def _consume(self, context, frame, state):
        self._writer.write(state.positions)

    def _after(self, context, obj, first, last):
        if self.add_modifier:
            self._add_cache_modifier(obj, first)

    def _add_cache_modifier(self, obj, first):
        name = "Spring Skin Cache"
        cache = obj.modifiers.get(name)
        if cache is None or cache.type != "MESH_CACHE":
            cache = obj.modifiers.new(name, "MESH_CACHE")
        cache.cache_format = "PC2"
        cache.filepath = self.filepath
        cache.deform_mode = "OVERWRITE"
        cache.interpolation = "LINEAR"
        cache.play_mode = "SCENE"
        cache.time_mode = "FRAME"
        # MOD_meshcache reads sample (frame * frame_scale - frame_start): the
        # .pc2 header's start frame is not used by Blender.
        cache.frame_start = float(first)
        cache.frame_scale = 1.0
        cache.forward_axis = "POS_Y"
        cache.up_axis = "POS_Z"
        cache.flip_axis = set()
        cache.factor = 1.0
        spring = runtime.has_spring_skin(obj)
        mods = list(obj.modifiers)
        target = mods.index(spring) + 1 if spring is not None else 0
        if mods.index(cache) != target:
            with bpy.context.temp_override(object=obj, active_object=obj):
                bpy.ops.object.modifier_move_to_index(modifier=cache.name, index=target)
        if spring is not None:
            spring.show_viewport = False
            spring.show_render = False


class OBJECT_OT_springskin_bake_alembic(_BakeBase, Operator, ExportHelper):
    """Bake the deformed mesh of every frame to an Alembic cache (.abc, Y-up as Blender's
    exporter: positions in object space, the world matrix per frame on the Xform)"""

    bl_idname = "object.springskin_bake_alembic"
    bl_label = "Bake to Alembic"
    bl_options = {"REGISTER"}

    filename_ext = ".abc"
    filter_glob: StringProperty(default="*.abc", options={"HIDDEN"})
    normals: BoolProperty(name="Normals", default=False,
                          description="Also write per-vertex normals (N) of every frame")

    @staticmethod
    def _world(obj_eval):
        return Z_UP_TO_Y_UP @ np.array(obj_eval.matrix_world, dtype=np.float64) @ Z_UP_TO_Y_UP.T

    def _open(self, context, obj, path, first):
        ssk = native.require()
        state = runtime.state_of(obj)
        if state is None or state.rig_data is None:
            state = runtime.evaluate(obj, context.evaluated_depsgraph_get(), context.scene)
        if state is None or state.rig_data is None:
            raise rigmod.SetupError("'%s' cannot be deformed: %s" % (
                obj.name, runtime.state_of(obj).error if runtime.state_of(obj) else "not bound"))
        scene = context.scene
        fps = scene.render.fps / scene.render.fps_base
        mesh = dict(name=obj.name, vertex_count=len(state.rig_data.positions),
                    triangles=state.rig_data.triangles, object_matrix=self._world(obj))
        return ssk.AlembicWriter(path, [mesh], fps=fps, start_time=first / fps,
                                 normals=self.normals,
                                 application="SpringSkin for Blender %s"
                                 % bpy.app.version_string.replace(";", ","))

    def _consume(self, context, frame, state):
        rotation = Z_UP_TO_Y_UP[:3, :3]
        obj_eval = bpy.data.objects[self._obj_name].evaluated_get(
            context.evaluated_depsgraph_get())
        positions = state.positions @ rotation.T
        normals = state.deformer.normals() @ rotation.T if self.normals else None
        self._writer.write(positions, normals, self._world(obj_eval)[None])

    def _after(self, context, obj, first, last):
        pass


classes = (
    OBJECT_OT_springskin_add,
    OBJECT_OT_springskin_edit_graph,
    OBJECT_OT_springskin_bind,
    OBJECT_OT_springskin_unbind,
    OBJECT_OT_springskin_set_method,
    OBJECT_OT_springskin_bind_cage,
    OBJECT_OT_springskin_cage_edit_in_pose,
    OBJECT_OT_springskin_remove,
    OBJECT_OT_springskin_bake_mesh_cache,
    OBJECT_OT_springskin_bake_alembic,
)
