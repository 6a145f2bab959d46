"""The Spring Skin panel in the Properties editor's Modifiers tab.

Blender 3.4 gives Python no panel inside a modifier (the Spring Skin
modifier is a Mesh Cache modifier), so the settings live in a panel of
their own in the modifier context, above the modifier stack, shown for
meshes with a Spring Skin or an Armature modifier: bind state, method or
graph, backend and the device it resolved to (the GL renderer or the CPU
with its threads), the last frame's times, and errors (a missing native
module, a failed bind, an invalid graph), a stale binding, unconverged
spring frames, what happened to an applied or deleted modifier, the cage
(its field, Bind Cage, Edit in Pose and its state), and a bake in
progress.
"""

import bpy
import gpu
from bpy.types import Menu, Operator, Panel
from gpu_extras.batch import batch_for_shader

from . import native
from . import nodes
from . import rig as rigmod
from . import runtime
from .properties import METHOD_ITEMS

__all__ = ["classes"]

#: Characters per line of the binding report in the (narrow) panel.
REPORT_WIDTH = 28
#: Characters per line of the panel's other long lines: a default-width
#: Properties editor shows about 40 (issue #17: "Takes over 'Armatur..." and
#: "73.23 ms... 72.90 ms" were cut off).
LINE_WIDTH = 30


class SPRINGSKIN_OT_retry_import(Operator):
    """Try to import the SpringSkin native module again"""

    bl_idname = "springskin.retry_import"
    bl_label = "Retry Import"
    bl_options = {"INTERNAL"}

    def execute(self, context):
        native.retry()
        if native.springskin() is None:
            self.report({"ERROR"}, native.error())
            return {"CANCELLED"}
        return {"FINISHED"}


class SPRINGSKIN_MT_add(Menu):
    bl_idname = "SPRINGSKIN_MT_add"
    bl_label = "Add Spring Skin"

    def draw(self, _context):
        for ident, name, _desc in METHOD_ITEMS:
            self.layout.operator("object.springskin_add", text=name).method = ident


#: Object > Spring Skin after its Add submenu: (operator, label, icon)
OBJECT_MENU_COMMANDS = (("object.springskin_bind", "Bind", "LINKED"),
                        ("object.springskin_unbind", "Unbind", "UNLINKED"),
                        ("object.springskin_edit_graph", "Edit as Graph", "NODETREE"),
                        ("object.springskin_bake_mesh_cache", "Bake to Mesh Cache",
                         "FILE_CACHE"),
                        ("object.springskin_bake_alembic", "Bake to Alembic", "FILE_CACHE"),
                        ("object.springskin_remove", "Remove Spring Skin", "X"))


class SPRINGSKIN_MT_object(Menu):
    """Object > Spring Skin in the 3D viewport: every command of the addon
    in a menu, so F3's menu search finds them (Blender searches menus, not
    operators, unless Developer Extras is on)."""
    bl_idname = "SPRINGSKIN_MT_object"
    bl_label = "Spring Skin"

    def draw(self, _context):
        layout = self.layout
        layout.menu(SPRINGSKIN_MT_add.bl_idname, icon="MOD_ARMATURE")
        for op, text, icon in OBJECT_MENU_COMMANDS:
            layout.operator(op, text=text, icon=icon)


def _object_menu(self, _context):
    self.layout.separator()
    self.layout.menu(SPRINGSKIN_MT_object.bl_idname, icon="MOD_ARMATURE")


def _wrapped(layout, text, icon="NONE", width=70):
    """Long messages as several labels (Blender does not wrap labels)."""
    words, line, first = text.split(), "", True
    col = layout.column(align=True)
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            col.label(text=line, icon=icon if first else "BLANK1")
            line, first = word, False
        else:
            line = (line + " " + word).strip()
    if line:
        col.label(text=line, icon=icon if first else "BLANK1")


def _draw_cage(layout, obj, settings, state):
    """The cage (issue #21): the Cage field, Bind Cage, Edit in Pose and
    what the cage does now."""
    from . import cage as cagemod
    box = layout.box()
    col = box.column()
    col.use_property_split = True
    col.prop(settings, "cage", icon="MESH_CUBE")
    row = box.row(align=True)
    bound = settings.cage_bound and cagemod.bound_name(obj) is not None
    row.operator("object.springskin_bind_cage", text="Rebind Cage" if bound else "Bind Cage",
                 icon="FILE_REFRESH" if bound else "LINKED")
    sub = row.row(align=True)
    sub.enabled = bound
    sub.operator("object.springskin_cage_edit_in_pose", text="Edit in Pose",
                 icon="POSE_HLT", depress=settings.cage_edit_in_pose)
    if state is not None and state.cage is not None:
        if state.cage_edit is None or state.cage_seen is None:
            text = "Cage %d vertices: at rest" % state.cage.vertex_count
        else:
            moved = state.cage_seen - state.cage_rest  # cage mesh space, as stored
            text = "Cage %d vertices: %d edited, reshaped in %.1f ms" % (
                state.cage.vertex_count, int((abs(moved) > 0).any(axis=1).sum()),
                state.cage_ms)
        _wrapped(box, text, icon="MOD_MESHDEFORM", width=LINE_WIDTH)
        if settings.cage_edit_in_pose:
            copy = cagemod.posed_copy(obj)
            _wrapped(box, "Edit '%s' (exact for Linear Blend)" % (copy.name if copy else "?"),
                     icon="POSE_HLT", width=LINE_WIDTH)
    if state is not None and state.cage_error:
        _wrapped(box, state.cage_error, icon="ERROR", width=LINE_WIDTH)


def rigid_note(settings, skin):
    """A line for Rigid with the default attachment, which deforms exactly
    as Linear Blend (one attachment per skin weight, blended with the
    weights), or None (issue #37, item 9)."""
    if skin is not None:
        method, attachment = skin.method, getattr(skin, "attachment", "WEIGHTS")
    else:
        method, attachment = settings.method, "WEIGHTS"
    if method == "RIGID" and attachment == "WEIGHTS":
        return ("Rigid with the default attachment (Skin Weights) deforms exactly as Linear "
                "Blend: for the paper's rigid attachment, Edit as Graph and set the Skinning "
                "node's Attachment to Binding (Paper)")
    return None


def _draw_stroke_edits(layout, obj):
    """The stroke edits of the object's graph (Spring Edit tool): Bulge
    (keyable: I over the field), Weight and Rings of each."""
    from . import sketch
    edits = sketch.stroke_edits(obj)
    if not edits:
        return
    box = layout.box()
    box.label(text="Stroke edits (Spring Edit tool)", icon="SCULPTMODE_HLT")
    for node in edits:
        row = box.row(align=True)
        row.label(text=node.name)
        row.prop(node, "bulge")
        row.prop(node, "weight", text="")
        row.prop(node, "grow", text="")


class SPRINGSKIN_PT_modifier(Panel):
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "modifier"
    bl_label = "Spring Skin"

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or obj.type != "MESH":
            return False
        return runtime.has_spring_skin(obj) is not None or \
            rigmod.armature_modifier(obj) is not None

    def draw(self, context):
        layout = self.layout
        obj = context.object
        settings = obj.springskin
        if native.error():
            box = layout.box()
            _wrapped(box, native.error(), icon="ERROR")
            box.operator(SPRINGSKIN_OT_retry_import.bl_idname, icon="FILE_REFRESH")
        mod = runtime.has_spring_skin(obj)
        note = runtime.note_of(obj)
        if mod is None:
            if note:
                _wrapped(layout.box(), note, icon="INFO", width=LINE_WIDTH)
            layout.menu(SPRINGSKIN_MT_add.bl_idname, icon="MOD_ARMATURE")
            return
        if note:  # e.g. an Armature modifier added by re-parenting, taken over
            _wrapped(layout.box(), note, icon="INFO", width=LINE_WIDTH)
        state = runtime.state_of(obj)
        if state is not None and state.stale:
            box = layout.box()
            _wrapped(box, state.stale, icon="ERROR", width=LINE_WIDTH)
            box.operator("object.springskin_bind", text="Rebind", icon="FILE_REFRESH")

        row = layout.row()
        if settings.bound:
            row.label(text="Bound", icon="CHECKMARK")
            row.operator("object.springskin_bind", text="Rebind", icon="FILE_REFRESH")
            row.operator("object.springskin_unbind", icon="UNLINKED")
        else:
            row.label(text="Not bound", icon="UNLINKED")
            row.operator("object.springskin_bind", icon="LINKED")

        col = layout.column()
        col.use_property_split = True
        # one control (issue #17): without a graph the Method field; with
        # one, the same field edits the graph's skinning node
        # (the value on a row of its own, the panel's full width: the names
        # were cut at the default width, "Incremental Rot...", issue #37,
        # item 9)
        tree = settings.graph
        skin = nodes.skinning_node(tree)
        if tree is None:
            layout.label(text="Method:")
            row = layout.row(align=True)
            # through an operator: a heavy mesh binds again with progress and Esc
            name = next(n for i, n, _d in METHOD_ITEMS if i == settings.method)
            row.operator_menu_enum("object.springskin_set_method", "method", text=name)
            row.operator("object.springskin_edit_graph", text="", icon="NODETREE")
        elif skin is not None:
            # the graph deforms: this is its skinning node's method, not a
            # second setting (it "changed on its own" after Edit as Graph)
            layout.label(text="Method (the graph's Skinning node):")
            layout.prop(skin, "method", text="")
        else:
            layout.label(text="Method: the graph's Skinning nodes")
        note = rigid_note(settings, skin)
        if note:
            _wrapped(layout, note, icon="INFO", width=LINE_WIDTH)
        col = layout.column()
        col.use_property_split = True
        col.prop_search(settings, "graph_name", bpy.data, "node_groups", icon="NODETREE")
        col.prop(settings, "backend")
        sub = col.column(align=True)
        sub.prop(settings, "bind_method")
        sub.prop(settings, "smooth_iterations")
        col.prop(settings, "auto_rebind")
        _draw_stroke_edits(layout, obj)
        if settings.armature_modifier:
            _wrapped(col, "Takes over '%s' (disabled) of armature '%s'"
                     % (settings.armature_modifier, rigmod.armature_label(obj)),
                     icon="MODIFIER_OFF", width=LINE_WIDTH)

        box = layout.box()
        # the stack above changes the vertex count: nothing is deformed
        blocked = state is not None and state.stack_error and state.error == state.stack_error
        if blocked:
            box.label(text="Not deforming: see below", icon="ERROR")
        if state is not None and state.deformer is not None and not blocked:
            _wrapped(box, "Deforming with %s" % state.what, icon="MOD_ARMATURE",
                     width=LINE_WIDTH)
            _wrapped(box, "Backend: %s, %s" % (state.backend.upper(), state.device_name),
                     icon="MEMORY", width=LINE_WIDTH)
            rd = state.rig_data
            box.label(text="%d vertices, %d bones" % (len(rd.positions), len(rd.bone_names)),
                      icon="MESH_DATA")
            if state.last_frame is not None:
                times = box.column(align=True)
                times.label(text="Frame %g: %.2f ms" % (state.last_frame, state.last_ms),
                            icon="TIME")
                times.label(text="deform %.2f ms, %d frames" % (state.deform_ms, state.frames),
                            icon="BLANK1")
            if state.binding is not None:
                box.label(text="Binding: %s, %.1f ms" % (state.binding.method,
                                                         1e3 * state.bind_seconds))
                report = box.column(align=True)
                report.label(text="Risky with the paper's attachment:",
                             icon="ERROR" if runtime.binding_report_lines(state) else "NONE")
                for line in runtime.binding_report_lines(state):
                    _wrapped(report, line, icon="DOT", width=REPORT_WIDTH)
            if state.cor_note:
                _wrapped(box, state.cor_note, icon="PIVOT_CURSOR", width=LINE_WIDTH)
            for warning in state.warnings:
                _wrapped(box, warning, icon="INFO", width=LINE_WIDTH)
        elif settings.bound:
            box.label(text="Not evaluated yet (change the frame)", icon="INFO")
        if state is not None and state.error:
            _wrapped(box, state.error, icon="ERROR", width=LINE_WIDTH)
        if state is not None and state.frame_error:
            _wrapped(box, state.frame_error, icon="ERROR", width=LINE_WIDTH)
        if state is not None and state.stack_error and state.stack_error != state.error:
            _wrapped(box, state.stack_error, icon="ERROR", width=LINE_WIDTH)
        unconverged = runtime.unconverged_summary(state)
        if unconverged:
            _wrapped(box, unconverged, icon="ERROR", width=LINE_WIDTH)
            points = runtime.unsettled_points(obj)
            if points is not None:
                box.prop(settings, "show_unsettled",
                         text="Mark Unsettled (%d)" % len(points))
            elif state is not None and state.backend == "gl":
                box.label(text="Unsettled vertices: CPU backend only", icon="INFO")
        if not (mod.show_viewport or mod.show_render):
            cache = obj.modifiers.get("Spring Skin Cache")
            if cache is not None:
                _wrapped(box, "Disabled: baked to %s" % bpy.path.basename(cache.filepath),
                         icon="FILE_CACHE", width=LINE_WIDTH)

        # the cage below the state (which tests/gui/test_blender_window.py
        # reads in a default-size window)
        _draw_cage(layout, obj, settings, state)

        from . import operators
        bake = operators.active_bake
        if bake is not None and bake[0] == obj.name:
            layout.label(text="Baking frame %d of %d..%d (Esc cancels)" % bake[1:4],
                         icon="RENDER_ANIMATION")
        col = layout.column(align=True)
        col.operator("object.springskin_bake_mesh_cache", text="Bake Mesh Cache",
                     icon="FILE_CACHE")
        col.operator("object.springskin_bake_alembic", text="Bake Alembic", icon="EXPORT")
        layout.operator("object.springskin_remove", icon="X")


classes = (
    SPRINGSKIN_OT_retry_import,
    SPRINGSKIN_MT_add,
    SPRINGSKIN_MT_object,
    SPRINGSKIN_PT_modifier,
)


# --- the viewport: vertices the springs left unsettled ------------------------------

#: The colour of the marks: the panel's error red, bright enough over any
#: material.
COLOR_UNSETTLED = (1.0, 0.2, 0.1, 1.0)
#: What the last viewport draw marked (for tests): object name -> vertices.
last_unsettled_drawn = {}
_unsettled_handle = None


def unsettled_marks(context):
    """{object name: (N, 3) world positions}: the vertices to mark, of the
    visible objects with Show Unsettled Vertices on whose springs did not
    settle at the frame shown (runtime.unsettled_points)."""
    marks = {}
    for obj in context.visible_objects:
        if obj.type != "MESH" or not obj.springskin.show_unsettled:
            continue
        points = runtime.unsettled_points(obj)
        if points is not None and len(points):
            marks[obj.name] = points
    return marks


def _draw_unsettled():
    """Marks the unsettled_marks over the mesh (a viewport draw handler)."""
    last_unsettled_drawn.clear()
    marks = unsettled_marks(bpy.context)
    if not marks:
        return
    shader = gpu.shader.from_builtin("3D_UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("LESS_EQUAL")
    gpu.state.point_size_set(5.0)
    for name, points in marks.items():
        batch = batch_for_shader(shader, "POINTS", {"pos": [tuple(p) for p in points]})
        shader.bind()
        shader.uniform_float("color", COLOR_UNSETTLED)
        batch.draw(shader)
        last_unsettled_drawn[name] = len(points)
    gpu.state.point_size_set(1.0)
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("NONE")


def register():
    global _unsettled_handle
    bpy.types.VIEW3D_MT_object.append(_object_menu)
    if _unsettled_handle is None:
        _unsettled_handle = bpy.types.SpaceView3D.draw_handler_add(_draw_unsettled, (),
                                                                   "WINDOW", "POST_VIEW")


def unregister():
    global _unsettled_handle
    bpy.types.VIEW3D_MT_object.remove(_object_menu)
    if _unsettled_handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_unsettled_handle, "WINDOW")
        _unsettled_handle = None
