"""The sketch tools (issue #22; Toothman 2020, ch. 7): "Line of Action" in
Pose mode and "Spring Edit" in Object mode, both in the 3D viewport's
toolbar.

The math is the core's (``springskin.pose_from_strokes``,
``springskin.edit_from_stroke``); this module collects strokes, converts
spaces and writes the results into Blender data. Each tool is one operator
that scripts call with the stroke as data (``execute``) and that the tool
invokes with the mouse (``invoke``/``modal`` collect the stroke and call
the same ``execute``), so a headless script and the mouse share one code
path:

- ``pose.springskin_line_of_action(baseline=points_argument(b),
  offset=points_argument(o), radius=r, key=False)`` (items
  ``{"name": "", "co": (x, y, z)}``): points and radius in world space
  (Blender units). The armature's pose is read (evaluated), posed by the
  core (7.2: joints nearer than `radius` to the baseline follow the offset
  stroke) and written root first as each bone's local transform
  (``Bone.convert_local_to_pose`` with the new parent matrix): rotations,
  and translations only for bones not connected to their parent. One undo
  step; with `key`, keyframes on the changed bones at the current frame.
  With the mouse: press and drag the baseline along the limb, release,
  press and drag the offset stroke, release. The window points are
  projected onto the view plane through the joint nearest (on screen) to
  the baseline's first point; the radius is set in pixels (tool setting)
  and measured on that plane. The selection radius is drawn along the
  baseline and the selected joints are marked while drawing.
- ``object.springskin_spring_edit(stroke=samples_argument(t, w), rings=4,
  bulge=0.25, key=False)`` (items ``{"name": "", "triangle": t,
  "barycentric": (a, b, c)}``): a stroke attached
  to the surface by loop-triangle indices of the mesh (the rig's triangle
  rows: the addon's rig is one mesh read from ``Mesh.loop_triangles``) and
  barycentric coordinates. It becomes a Surface Edit node (source Stroke)
  linked into the object's Spring node: the kinematic rows and the
  bind-space offsets of a unit bulge are stored on the node (ID
  properties, saved in the .blend) and scaled by its keyable Bulge. With
  the mouse: drag on the mesh; each mouse sample is a ray cast against the
  evaluated mesh (:func:`ray_stroke`), so the stroke lands on the deformed
  skin the user sees.

- ``object.springskin_spring_edit_knot(node=name, index=i, triangle=t,
  barycentric=(a, b, c))``: move sample i of a stroke edit on the surface;
  the region and the offsets are made again from the moved stroke. With
  the Spring Edit tool, a press within 12 px of a stored stroke's knot (the
  white points) drags it over the surface and the edit follows live (one
  edit and one spring re-solve per mouse move; Esc puts it back); a press
  elsewhere draws a new stroke.

Stored stroke edits of the active object are drawn in the viewport (the
stroke on the evaluated surface; with the Spring Edit tool active also its
knots and region: kinematic, passive and static vertices). The offsets are
made with the binding of the moment: after a rebind with other settings,
moving a knot (or drawing again) makes them anew.
"""

import bpy
import gpu
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, FloatProperty, FloatVectorProperty, \
    IntProperty, StringProperty
from bpy.types import Operator, PropertyGroup, WorkSpaceTool
from bpy_extras import view3d_utils
from gpu_extras.batch import batch_for_shader
from mathutils import Matrix, Vector
from mathutils.bvhtree import BVHTree

from . import native
from . import nodes
from . import rig as rigmod
from . import runtime

__all__ = ["SketchError", "add_stroke_edit", "classes", "move_knot", "points_argument",
           "pose_line_of_action", "ray_stroke", "register", "samples_argument", "stroke_edits",
           "stroke_region", "unregister"]

LINE_OF_ACTION_TOOL = "springskin.line_of_action"
SPRING_EDIT_TOOL = "springskin.spring_edit"
#: A bone's local transform is rewritten only when it changed by more than
#: this (largest absolute entry difference of matrix_basis).
BASIS_TOLERANCE = 1e-6
#: Default selection radius of the Line of Action tool, window pixels.
DEFAULT_RADIUS_PX = 40.0
#: Circles drawn along the baseline at most this many radii apart.
CIRCLE_SPACING = 0.5
CIRCLE_SEGMENTS = 24
#: Tool shortcuts (Shift+Alt+L in Pose mode, Shift+Alt+E in Object mode).
SHORTCUTS = ((LINE_OF_ACTION_TOOL, "Pose", "L"), (SPRING_EDIT_TOOL, "Object Mode", "E"))
COLOR_BASELINE = (0.2, 0.8, 1.0, 1.0)
COLOR_RADIUS = (0.2, 0.8, 1.0, 0.35)
COLOR_OFFSET = (1.0, 0.6, 0.1, 1.0)
COLOR_SELECTED = (1.0, 1.0, 0.2, 1.0)
COLOR_STROKE = (1.0, 0.3, 0.6, 1.0)
COLOR_KNOT = (1.0, 1.0, 1.0, 1.0)
#: A press this near (window pixels) a stored stroke's knot drags it.
KNOT_PICK_PX = 12.0
ROLE_COLORS = {1: (1.0, 0.2, 0.2, 1.0), 2: (0.2, 0.6, 1.0, 1.0), 3: (0.6, 0.6, 0.6, 1.0)}


class SketchError(ValueError):
    """A stroke or a set-up the tools cannot use; the operators report it."""


class SpringSkinStrokePoint(PropertyGroup):
    """A stroke point in world space"""
    co: FloatVectorProperty(name="Location", size=3, subtype="XYZ",
                            description="World-space point of the stroke (Blender units)")


def points_argument(points):
    """The `baseline`/`offset` argument of pose.springskin_line_of_action
    for (N, 3) world-space points (Blender wants every property of a
    collection item, "name" included, in each dict)."""
    return [{"name": "", "co": tuple(float(x) for x in p)} for p in np.asarray(points)]


def samples_argument(triangles, barycentric):
    """The `stroke` argument of object.springskin_spring_edit for (N,)
    loop-triangle indices and (N, 3) barycentric coordinates."""
    return [{"name": "", "triangle": int(t), "barycentric": tuple(float(x) for x in w)}
            for t, w in zip(np.asarray(triangles), np.asarray(barycentric))]


# --- line of action ------------------------------------------------------------------

def _points(collection, name):
    pts = np.array([tuple(p.co) for p in collection], dtype=np.float64).reshape(-1, 3)
    if len(pts) < 2:
        raise SketchError("%s: expected at least 2 points, got %d" % (name, len(pts)))
    return pts


def _transform(points, matrix):
    m = np.asarray(matrix, dtype=np.float64)
    return points @ m[:3, :3].T + m[:3, 3]


def skeleton_rig(arm):
    """(springskin.Rig, RigData) of armature object `arm`'s skeleton alone
    (armature space): the core's posing reads only bones, so the rig's mesh
    is one vertex at the first bone's head weighted to it."""
    ssk = native.require()
    rd = rigmod.read_skeleton(rigmod.RigData(), arm)
    if not rd.bone_names:
        raise SketchError("armature '%s' has no bones" % arm.name)
    rig = ssk.Rig(positions=rd.heads[:1], triangles=None, parents=rd.parents,
                  bind_matrices=rd.bind, weight_indices=np.zeros((1, 1), np.int32),
                  weight_values=np.ones((1, 1), np.float32), heads=rd.heads, tails=rd.tails,
                  bone_names=rd.bone_names)
    return rig, rd


def _hierarchy_order(parents):
    """Bone indices, every parent before its children."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for i in range(len(parents)):
        p, d = parents[i], 0
        while p >= 0:
            p, d = parents[p], d + 1
        depth[i] = d
    return [int(i) for i in np.argsort(depth, kind="stable")]


def _rotation_path(pb):
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
        pb.rotation_mode, "rotation_euler")


def pose_line_of_action(arm, depsgraph, baseline, offset, radius, key=False, frame=None):
    """Pose armature object `arm` by a baseline and an offset stroke (7.2).

    Parameters: baseline (N, 3), offset (M, 3) world-space points; radius
    > 0 in world units (divided by the armature's mean scale); `key`:
    keyframe the changed bones at `frame`. Returns (changed bone names,
    number of selected joints). Raises SketchError, native.NativeUnavailable.
    """
    ssk = native.require()
    if not radius > 0.0:
        raise SketchError("radius: expected a positive number, got %r" % (radius,))
    rig, rd = skeleton_rig(arm)
    world_inv = np.linalg.inv(np.asarray(arm.matrix_world, dtype=np.float64))
    scale = float(np.mean(np.linalg.norm(np.asarray(arm.matrix_world)[:3, :3], axis=0)))
    b = _transform(np.asarray(baseline, dtype=np.float64), world_inv)
    o = _transform(np.asarray(offset, dtype=np.float64), world_inv)
    skinning, _ = rigmod.pose_matrices(arm.evaluated_get(depsgraph), rd)
    try:
        posed, selected = ssk.pose_from_strokes(rig, skinning, b, o, radius / scale,
                                                return_selected=True)
    except (TypeError, ValueError) as exc:
        raise SketchError(str(exc)) from None
    joints = int(np.count_nonzero(selected & 1) + np.count_nonzero(selected & 2))
    pose = np.matmul(posed.astype(np.float64), rd.bind)   # armature-space pose matrices
    bones = arm.data.bones
    changed = []
    for i in _hierarchy_order(rd.parents):
        bone = bones[rd.bone_names[i]]
        pb = arm.pose.bones[bone.name]
        p = int(rd.parents[i])
        if p >= 0:
            basis = bone.convert_local_to_pose(
                Matrix(pose[i].tolist()), bone.matrix_local,
                parent_matrix=Matrix(pose[p].tolist()),
                parent_matrix_local=bones[rd.bone_names[p]].matrix_local, invert=True)
        else:
            basis = bone.convert_local_to_pose(Matrix(pose[i].tolist()), bone.matrix_local,
                                               invert=True)
        if bone.use_connect:
            basis.translation = Vector((0.0, 0.0, 0.0))  # connected bones only rotate
        if np.abs(np.array(basis) - np.array(pb.matrix_basis)).max() <= BASIS_TOLERANCE:
            continue
        pb.matrix_basis = basis
        changed.append(pb.name)
        if key:
            pb.keyframe_insert(_rotation_path(pb), frame=frame, group=pb.name)
            if not bone.use_connect:
                pb.keyframe_insert("location", frame=frame, group=pb.name)
    return changed, joints


# --- strokes on the surface --------------------------------------------------------

def _evaluated_positions(obj, depsgraph):
    me = obj.evaluated_get(depsgraph).data
    co = np.empty(3 * len(me.vertices), dtype=np.float64)
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _barycentric(p, a, b, c):
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = v0 @ v0, v0 @ v1, v1 @ v1
    d20, d21 = v2 @ v0, v2 @ v1
    den = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    return np.array([1.0 - v - w, v, w])


def ray_stroke(obj, depsgraph, origins, directions):
    """Cast world-space rays (P, 3) at mesh object `obj`'s evaluated
    (deformed) surface. Returns (triangles (H,) int, barycentric (H, 3),
    world points (H, 3)) of the rays that hit, in ray order: loop-triangle
    indices of the mesh (the rig's triangle rows) and the hit's
    barycentric coordinates. Raises SketchError when the evaluated mesh's
    vertices are not the mesh's (a modifier changed the topology)."""
    me = obj.data
    if not len(me.loop_triangles):
        me.calc_loop_triangles()
    tris = rigmod.loop_triangles(me, np.int64)
    verts = _evaluated_positions(obj, depsgraph)
    if len(verts) != len(me.vertices):
        raise SketchError("'%s': the evaluated mesh has %d vertices, the mesh %d (a modifier "
                          "changes the topology): strokes cannot be attached"
                          % (obj.name, len(verts), len(me.vertices)))
    tree = BVHTree.FromPolygons(verts.tolist(), tris.tolist(), all_triangles=True)
    world = np.asarray(obj.matrix_world, dtype=np.float64)
    inv = np.linalg.inv(world)
    out_t, out_b, out_p = [], [], []
    for o, d in zip(np.asarray(origins, dtype=np.float64), np.asarray(directions, np.float64)):
        lo = inv[:3, :3] @ o + inv[:3, 3]
        ld = inv[:3, :3] @ d
        loc, _normal, index, _dist = tree.ray_cast(Vector(lo), Vector(ld))
        if index is None:
            continue
        p = np.array(loc)
        a, b, c = verts[tris[index]]
        out_t.append(index)
        out_b.append(np.clip(_barycentric(p, a, b, c), 0.0, 1.0))
        out_p.append(world[:3, :3] @ p + world[:3, 3])
    bary = np.array(out_b, dtype=np.float64).reshape(-1, 3)
    bary /= np.maximum(bary.sum(axis=1, keepdims=True), 1e-12)
    return (np.array(out_t, dtype=np.int64), bary,
            np.array(out_p, dtype=np.float64).reshape(-1, 3))


def _spring_node(tree):
    for node in tree.nodes:
        if node.bl_idname == "SpringSkinSpringNode" and not node.mute:
            return node
    return None


def _stroke_edit(obj, scene, depsgraph, triangles, barycentric, rings):
    """springskin.edit_from_stroke for mesh object `obj`'s rig and binding,
    at unit bulge."""
    ssk = native.require()
    state = runtime.evaluate(obj, depsgraph, scene)
    if state is None or state.binding is None:
        reason = runtime.state_of(obj).error if runtime.state_of(obj) is not None else None
        raise SketchError("'%s' is not deforming with springs now%s" % (
            obj.name, ": " + reason if reason else ""))
    try:
        return ssk.edit_from_stroke(state.rig, state.binding, (triangles, barycentric),
                                    rings=rings, bulge=1.0)
    except (TypeError, ValueError) as exc:
        raise SketchError(str(exc)) from None


def _store_edit(node, edit):
    node[nodes.STROKE_KINEMATIC_KEY] = edit["kinematic"]
    node[nodes.STROKE_OFFSETS_KEY] = [float(x) for row in edit["offsets"] for x in row]


def add_stroke_edit(obj, scene, depsgraph, triangles, barycentric, rings=4, bulge=0.25,
                    key=False):
    """Make the stroke (loop-triangle indices, barycentric (N, 3)) a
    Surface Edit of the Spring node of mesh object `obj`'s graph (made from
    the Spring method when the object has no graph yet). Returns the new
    node. Raises SketchError, native.NativeUnavailable."""
    native.require()
    if runtime.has_spring_skin(obj) is None:
        raise SketchError("'%s' has no Spring Skin modifier (Add Spring Skin > Spring)"
                          % obj.name)
    settings = obj.springskin
    if settings.graph is None:
        if settings.method != "SPRING":
            raise SketchError("'%s' deforms with %s: a Spring Edit needs springs (Method: "
                              "Spring)" % (obj.name, settings.method))
        with bpy.context.temp_override(active_object=obj, object=obj):
            bpy.ops.object.springskin_edit_graph()
    tree = settings.graph
    spring = _spring_node(tree)
    if spring is None:
        raise SketchError("graph '%s' has no (unmuted) Spring node to take the edit"
                          % tree.name)
    edit = _stroke_edit(obj, scene, depsgraph, triangles, barycentric, rings)
    node = tree.nodes.new("SpringSkinSurfaceEditNode")
    node.label = "Stroke Edit"
    _store_edit(node, edit)
    for t, w in zip(np.asarray(triangles).tolist(), np.asarray(barycentric).tolist()):
        sample = node.stroke.add()
        sample.triangle, sample.barycentric = int(t), w
    node.grow = rings
    node.bulge = bulge
    node.source = "STROKE"
    node.location = spring.location.x, spring.location.y - 260.0 * (
        1 + sum(1 for s in spring.inputs if s.is_linked and s.bl_idname == nodes.EDIT_SOCKET))
    free = [s for s in spring.inputs if s.bl_idname == nodes.EDIT_SOCKET and not s.is_linked]
    tree.links.new(node.outputs[0], free[-1] if free else spring.inputs.new(
        nodes.EDIT_SOCKET, "Edit"))
    if key:
        node.keyframe_insert("bulge", frame=scene.frame_current)
    return node


def move_knot(obj, scene, depsgraph, node, index, triangle, barycentric):
    """Move sample `index` of stroke edit `node` of mesh object `obj` to
    (loop triangle, barycentric (3,)) and make the edit's region and
    offsets again from the moved stroke (the spring node re-solves on the
    next update). Raises SketchError."""
    if node.bl_idname != "SpringSkinSurfaceEditNode" or node.source != "STROKE":
        raise SketchError("node '%s' is not a stroke edit" % node.name)
    if not 0 <= index < len(node.stroke):
        raise SketchError("knot %d: the stroke has %d samples" % (index, len(node.stroke)))
    tris = np.array([s.triangle for s in node.stroke], dtype=np.int64)
    bary = np.array([tuple(s.barycentric) for s in node.stroke], dtype=np.float64)
    tris[index], bary[index] = triangle, barycentric
    edit = _stroke_edit(obj, scene, depsgraph, tris, bary, node.grow)  # validates first
    node.stroke[index].triangle = int(triangle)
    node.stroke[index].barycentric = tuple(float(x) for x in barycentric)
    _store_edit(node, edit)
    nodes.notify_changed(node.id_data)


def stroke_edits(obj):
    """The Surface Edit nodes of source Stroke in mesh object `obj`'s graph."""
    tree = obj.springskin.graph if obj is not None and obj.type == "MESH" else None
    if tree is None:
        return []
    return [n for n in tree.nodes
            if n.bl_idname == "SpringSkinSurfaceEditNode" and n.source == "STROKE"]


def stroke_region(obj, node):
    """springskin.surface_roi of a stroke edit node on the object's rig:
    dict of roles (V,) uint8 and the kinematic, passive and static rows;
    None when the object has no rig now."""
    state = runtime.state_of(obj)
    if state is None or state.rig is None or not len(node.stroke):
        return None
    tris = np.array([s.triangle for s in node.stroke], dtype=np.int64)
    return native.require().surface_roi(state.rig, tris, node.grow)


def _stroke_world(obj, node, depsgraph):
    me = obj.data
    if not len(me.loop_triangles) or not len(node.stroke):
        return None
    verts = _evaluated_positions(obj, depsgraph)
    if len(verts) != len(me.vertices):
        return None
    tris = np.array([s.triangle for s in node.stroke], dtype=np.int64)
    if tris.max() >= len(me.loop_triangles):
        return None
    bary = np.array([tuple(s.barycentric) for s in node.stroke], dtype=np.float64)
    corners = rigmod.loop_triangles(me, np.int64)[tris]
    local = np.einsum("nk,nkd->nd", bary, verts[corners])
    return _transform(local, obj.matrix_world)


# --- drawing ---------------------------------------------------------------------------

def _shader(kind):
    return gpu.shader.from_builtin(kind)


def _draw_lines(kind, points, color, primitive="LINE_STRIP", width=2.0):
    if points is None or len(points) < (1 if primitive == "POINTS" else 2):
        return
    shader = _shader(kind)
    batch = batch_for_shader(shader, primitive, {"pos": [tuple(p) for p in points]})
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("NONE")  # on top of the surface it lies on
    gpu.state.line_width_set(width)
    gpu.state.point_size_set(2.0 * width + 2.0)
    shader.bind()
    shader.uniform_float("color", color)
    batch.draw(shader)
    gpu.state.line_width_set(1.0)
    gpu.state.point_size_set(1.0)
    gpu.state.blend_set("NONE")


def _circles(centers, radius):
    """LINES vertices of circles of `radius` pixels around 2D `centers`,
    at most CIRCLE_SPACING radii apart along the polyline."""
    kept, last = [], None
    for c in centers:
        if last is None or np.hypot(*(np.subtract(c, last))) >= CIRCLE_SPACING * radius:
            kept.append(c)
            last = c
    a = np.linspace(0.0, 2.0 * np.pi, CIRCLE_SEGMENTS + 1)
    ring = np.stack([np.cos(a), np.sin(a)], axis=1) * radius
    out = []
    for c in kept:
        pts = ring + np.asarray(c)
        for i in range(CIRCLE_SEGMENTS):
            out.extend((pts[i], pts[i + 1]))
    return out


def _draw_line_of_action(op, context):
    _draw_lines("2D_UNIFORM_COLOR", _circles(op._base2d, op.radius_px), COLOR_RADIUS, "LINES",
                1.0)
    _draw_lines("2D_UNIFORM_COLOR", op._base2d, COLOR_BASELINE)
    _draw_lines("2D_UNIFORM_COLOR", op._off2d, COLOR_OFFSET)
    _draw_lines("2D_UNIFORM_COLOR", op._selected2d, COLOR_SELECTED, "POINTS", 3.0)


def _draw_spring_edit(op, context):
    _draw_lines("3D_UNIFORM_COLOR", op._hits, COLOR_STROKE, width=3.0)


#: What the last viewport draw of stored strokes drew: object name, strokes,
#: region vertices, and why the region was not drawn (for tests).
last_drawn = {}


def _draw_stored_strokes():
    context = bpy.context
    obj = context.active_object
    if obj is None or obj.type != "MESH" or obj.mode != "OBJECT":
        return
    edits = stroke_edits(obj)
    if not edits:
        return
    depsgraph = context.evaluated_depsgraph_get()
    tool = context.workspace.tools.from_space_view3d_mode("OBJECT", create=False) \
        if context.workspace is not None else None
    show_region = tool is not None and tool.idname == SPRING_EDIT_TOOL
    drawn = {"object": obj.name, "strokes": 0, "region_vertices": 0,
             "tool": tool.idname if tool is not None else None}
    verts = None
    for node in edits:
        if node.mute:
            continue
        stroke = _stroke_world(obj, node, depsgraph)
        _draw_lines("3D_UNIFORM_COLOR", stroke, COLOR_STROKE, width=3.0)
        drawn["strokes"] += stroke is not None
        if not show_region:
            continue
        _draw_lines("3D_UNIFORM_COLOR", stroke, COLOR_KNOT, "POINTS", 3.0)  # draggable
        region = stroke_region(obj, node)
        if region is None:
            drawn["no_region"] = node.name
            continue
        if verts is None:
            verts = _evaluated_positions(obj, depsgraph)
            if len(verts) != len(region["roles"]):
                break
            verts = _transform(verts, obj.matrix_world)
        for role, color in ROLE_COLORS.items():
            pts = verts[region["roles"] == role]
            _draw_lines("3D_UNIFORM_COLOR", pts, color, "POINTS", 2.0)
            drawn["region_vertices"] += len(pts)
    last_drawn.clear()
    last_drawn.update(drawn)


# --- operators ---------------------------------------------------------------------------

class _ModalStroke:
    """Collects mouse strokes in the 3D viewport with a draw handler."""

    _handle = None

    def _begin(self, context, draw, space):
        if context.area is None or context.area.type != "VIEW_3D" or context.region_data is None:
            self.report({"ERROR"}, "Draw in a 3D viewport")
            return {"CANCELLED"}
        self._handle = bpy.types.SpaceView3D.draw_handler_add(draw, (self, context), "WINDOW",
                                                              space)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end(self, context):
        if self._handle is not None:
            bpy.types.SpaceView3D.draw_handler_remove(self._handle, "WINDOW")
            self._handle = None
        if context.area is not None:
            context.area.tag_redraw()


def _mouse(event):
    return (float(event.mouse_region_x), float(event.mouse_region_y))


class POSE_OT_springskin_line_of_action(_ModalStroke, Operator):
    """Pose the joints near a baseline stroke by an offset stroke (line of action): drag along
    the limb, release, then drag the new line of action"""

    bl_idname = "pose.springskin_line_of_action"
    bl_label = "Line of Action"
    bl_options = {"REGISTER", "UNDO"}

    baseline: CollectionProperty(type=SpringSkinStrokePoint, options={"HIDDEN", "SKIP_SAVE"},
                                 name="Baseline", description="Baseline stroke, world space")
    offset: CollectionProperty(type=SpringSkinStrokePoint, options={"HIDDEN", "SKIP_SAVE"},
                               name="Offset", description="Offset stroke, world space")
    radius: FloatProperty(name="Radius", description="Joints nearer the baseline than this "
                                                     "are posed (world units)",
                          default=0.1, min=1e-6, subtype="DISTANCE",
                          options={"SKIP_SAVE"})
    radius_px: FloatProperty(name="Radius", description="Selection radius while drawing, "
                                                        "window pixels",
                             default=DEFAULT_RADIUS_PX, min=1.0, soft_max=400.0,
                             subtype="PIXEL")
    key: BoolProperty(name="Key", description="Insert keyframes on the posed bones at the "
                                              "current frame", default=False)

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            cls.poll_message_set("The active object must be an armature")
            return False
        return True

    def execute(self, context):
        arm = context.active_object
        try:
            changed, joints = pose_line_of_action(
                arm, context.evaluated_depsgraph_get(), _points(self.baseline, "baseline"),
                _points(self.offset, "offset"), self.radius, key=self.key,
                frame=context.scene.frame_current)
        except (SketchError, native.NativeUnavailable) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if not joints:
            self.report({"WARNING"}, "No joint within %.3g of the baseline" % self.radius)
            return {"CANCELLED"}
        self.report({"INFO"}, "Line of action: %d joints selected, %d bones posed"
                    % (joints, len(changed)))
        return {"FINISHED"}

    # the mouse: collect the two strokes, then execute()
    def invoke(self, context, event):
        arm = context.active_object
        rv3d, region = context.region_data, context.region
        if rv3d is None:
            self.report({"ERROR"}, "Draw in a 3D viewport")
            return {"CANCELLED"}
        self._base2d, self._off2d, self._selected2d = [_mouse(event)], [], []
        self._stage = "BASELINE"
        # the drawing plane: the view plane through the joint nearest (on
        # screen) to where the baseline starts
        world = arm.matrix_world
        joints = [world @ pb.head for pb in arm.pose.bones] + \
                 [world @ pb.tail for pb in arm.pose.bones]
        start = Vector(self._base2d[0])

        def screen_distance(p):
            q = view3d_utils.location_3d_to_region_2d(region, rv3d, p)
            return float("inf") if q is None else (q - start).length
        self._depth = min(joints, key=screen_distance) if joints else world.translation
        self._joints = np.array([tuple(j) for j in joints], dtype=np.float64)
        return self._begin(context, _draw_line_of_action, "POST_PIXEL")

    def _to_3d(self, context, points):
        return [tuple(view3d_utils.region_2d_to_location_3d(
            context.region, context.region_data, Vector(p), self._depth)) for p in points]

    def _update_selection(self, context):
        pts = np.array(self._to_3d(context, self._base2d))
        self._selected2d = []
        if len(pts) < 2 or np.linalg.norm(pts[-1] - pts[0]) <= 0.0 or not len(self._joints):
            return
        ssk = native.springskin()
        if ssk is None:
            return
        try:
            _t, dist = ssk.Stroke(pts).closest(self._joints, return_distance=True)
        except ValueError:
            return
        radius = self._world_radius(context)
        for j in self._joints[dist < radius]:
            q = view3d_utils.location_3d_to_region_2d(context.region, context.region_data,
                                                      Vector(j))
            if q is not None:
                self._selected2d.append((q.x, q.y))

    def _world_radius(self, context):
        a, b = self._to_3d(context, [self._base2d[0], (self._base2d[0][0] + self.radius_px,
                                                        self._base2d[0][1])])
        return float(np.linalg.norm(np.subtract(a, b)))

    def modal(self, context, event):
        context.area.tag_redraw()
        if event.type in ("ESC", "RIGHTMOUSE") and event.value == "PRESS":
            self._end(context)
            return {"CANCELLED"}
        if event.type == "MOUSEMOVE":
            if self._stage == "BASELINE":
                self._base2d.append(_mouse(event))
                self._update_selection(context)
            elif self._stage == "OFFSET":
                self._off2d.append(_mouse(event))
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE":
            # (a release's position is not added: Blender may give it the
            # position of mouse moves queued after it)
            if event.value == "RELEASE" and self._stage == "BASELINE":
                self._stage = "WAIT"
            elif event.value == "PRESS" and self._stage == "WAIT":
                self._stage, self._off2d = "OFFSET", [_mouse(event)]
            elif event.value == "RELEASE" and self._stage == "OFFSET":
                self._end(context)
                return self._finish(context)
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"} if event.type.startswith(("WHEEL", "MIDDLEMOUSE", "NDOF")) \
            else {"RUNNING_MODAL"}

    def _finish(self, context):
        self.radius = self._world_radius(context)
        for name, pts in (("baseline", self._base2d), ("offset", self._off2d)):
            collection = getattr(self, name)
            collection.clear()
            for p in self._to_3d(context, pts):
                collection.add().co = p
        return self.execute(context)


class OBJECT_OT_springskin_spring_edit(_ModalStroke, Operator):
    """Draw on a Spring Skin mesh: the region under the stroke becomes a surface edit of the
    Spring node (a bulge along the stroke)"""

    bl_idname = "object.springskin_spring_edit"
    bl_label = "Spring Edit"
    bl_options = {"REGISTER", "UNDO"}

    stroke: CollectionProperty(type=nodes.SpringSkinStrokeSample,
                               options={"HIDDEN", "SKIP_SAVE"}, name="Stroke",
                               description="The stroke: loop triangle and barycentric "
                                           "coordinates per sample")
    rings: IntProperty(name="Rings", description="Rings of passive vertices around the "
                                                 "stroke's (Toothman 2020: 4)",
                       default=nodes.DEFAULT_EDIT_GROW, min=0, max=nodes.EDIT_GROW_LIMIT)
    bulge: FloatProperty(name="Bulge", description="Growth of the scale vectors in the "
                                                   "stroke's middle (negative: a dent)",
                         default=0.25, soft_min=-1.0, soft_max=1.0)
    key: BoolProperty(name="Key", description="Insert a keyframe on the edit's Bulge at the "
                                              "current frame", default=False)

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH" or runtime.has_spring_skin(obj) is None:
            cls.poll_message_set("The active object must be a mesh with Spring Skin")
            return False
        return True

    def execute(self, context):
        obj = context.active_object
        if not len(self.stroke):
            self.report({"ERROR"}, "stroke: no sample on the surface")
            return {"CANCELLED"}
        tris = np.array([s.triangle for s in self.stroke], dtype=np.int64)
        bary = np.array([tuple(s.barycentric) for s in self.stroke], dtype=np.float64)
        try:
            node = add_stroke_edit(obj, context.scene, context.evaluated_depsgraph_get(), tris,
                                   bary, rings=self.rings, bulge=self.bulge, key=self.key)
        except (SketchError, native.NativeUnavailable) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, "Spring edit '%s': %d kinematic vertices"
                    % (node.name, len(node[nodes.STROKE_KINEMATIC_KEY])))
        return {"FINISHED"}

    def invoke(self, context, event):
        if _pick_knot(context, event) is not None:  # on a knot: drag it instead
            bpy.ops.object.springskin_spring_edit_knot("INVOKE_DEFAULT")
            return {"CANCELLED"}
        self._hits, self._samples = [], []
        self._depsgraph = context.evaluated_depsgraph_get()
        self._sample(context, event)
        return self._begin(context, _draw_spring_edit, "POST_VIEW")

    def _sample(self, context, event):
        try:
            tris, bary, hits = ray_stroke(context.active_object, self._depsgraph,
                                          *_ray_at(context, event))
        except SketchError:
            return
        sample = (int(tris[0]), tuple(bary[0])) if len(tris) else None
        if sample is not None and (not self._samples or self._samples[-1] != sample):
            self._samples.append(sample)
            self._hits.append(tuple(hits[0]))

    def modal(self, context, event):
        context.area.tag_redraw()
        if event.type in ("ESC", "RIGHTMOUSE") and event.value == "PRESS":
            self._end(context)
            return {"CANCELLED"}
        if event.type == "MOUSEMOVE":
            self._sample(context, event)
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE" and event.value == "RELEASE":
            self._end(context)  # (no sample at the release: see the Line of Action)
            self.stroke.clear()
            for t, w in self._samples:
                sample = self.stroke.add()
                sample.triangle, sample.barycentric = t, w
            if not self._samples:
                self.report({"WARNING"}, "The stroke missed the mesh")
                return {"CANCELLED"}
            return self.execute(context)
        return {"PASS_THROUGH"} if event.type.startswith(("WHEEL", "MIDDLEMOUSE", "NDOF")) \
            else {"RUNNING_MODAL"}


def _ray_at(context, event):
    coord = _mouse(event)
    origin = view3d_utils.region_2d_to_origin_3d(context.region, context.region_data, coord)
    direction = view3d_utils.region_2d_to_vector_3d(context.region, context.region_data, coord)
    return [tuple(origin)], [tuple(direction)]


def _pick_knot(context, event):
    """(node name, sample index) of the stored stroke knot of the active
    object within KNOT_PICK_PX of the mouse (the nearest), or None."""
    obj = context.active_object
    if context.region_data is None or obj is None:
        return None
    depsgraph = context.evaluated_depsgraph_get()
    best = None
    mouse = Vector(_mouse(event))
    for node in stroke_edits(obj):
        pts = _stroke_world(obj, node, depsgraph)
        for i, p in enumerate(pts if pts is not None else ()):
            q = view3d_utils.location_3d_to_region_2d(context.region, context.region_data,
                                                      Vector(p))
            if q is not None and (q - mouse).length <= KNOT_PICK_PX and \
                    (best is None or (q - mouse).length <= best[0]):  # ties: the later
                best = ((q - mouse).length, node.name, i)
    return None if best is None else best[1:]


class OBJECT_OT_springskin_spring_edit_knot(_ModalStroke, Operator):
    """Drag a knot of a stroke edit over the surface: the edit's region and bulge follow"""

    bl_idname = "object.springskin_spring_edit_knot"
    bl_label = "Move Spring Edit Knot"
    bl_options = {"REGISTER", "UNDO"}

    node: StringProperty(name="Node", description="The stroke edit (Surface Edit "
                                                            "node) of the object's graph")
    index: IntProperty(name="Knot", description="Index of the stroke sample to move", min=0)
    triangle: IntProperty(name="Triangle", description="Its new loop triangle", min=0)
    barycentric: FloatVectorProperty(name="Barycentric", size=3,
                                     description="Its new barycentric coordinates")

    @classmethod
    def poll(cls, context):
        return OBJECT_OT_springskin_spring_edit.poll(context)

    def _target(self, context):
        obj = context.active_object
        tree = obj.springskin.graph
        node = tree.nodes.get(self.node) if tree is not None else None
        if node is None:
            raise SketchError("no node '%s' in the graph of '%s'" % (self.node, obj.name))
        return obj, node

    def execute(self, context):
        try:
            obj, node = self._target(context)
            move_knot(obj, context.scene, context.evaluated_depsgraph_get(), node, self.index,
                      self.triangle, self.barycentric)
        except (SketchError, native.NativeUnavailable) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return {"FINISHED"}

    def invoke(self, context, event):
        """Drag the knot under the mouse (the Spring Edit tool calls this
        when a press is on a knot)."""
        obj = context.active_object
        best = _pick_knot(context, event)
        if best is None:
            return {"CANCELLED"}
        self.node, self.index = best
        sample = obj.springskin.graph.nodes[self.node].stroke[self.index]
        self._original = (sample.triangle, tuple(sample.barycentric))
        self.triangle, self.barycentric = self._original
        self._depsgraph = context.evaluated_depsgraph_get()
        return self._begin(context, lambda *_: None, "POST_VIEW")

    def modal(self, context, event):
        context.area.tag_redraw()
        if event.type in ("ESC", "RIGHTMOUSE") and event.value == "PRESS":
            self._end(context)
            self.triangle, self.barycentric = self._original
            self.execute(context)
            return {"CANCELLED"}
        if event.type == "MOUSEMOVE":
            try:
                tris, bary, _hits = ray_stroke(context.active_object, self._depsgraph,
                                               *_ray_at(context, event))
            except SketchError:
                return {"RUNNING_MODAL"}
            if len(tris) and (int(tris[0]), tuple(bary[0])) != (self.triangle,
                                                                tuple(self.barycentric)):
                self.triangle, self.barycentric = int(tris[0]), tuple(bary[0])
                self.execute(context)  # live: the region and the bulge follow
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE" and event.value == "RELEASE":
            self._end(context)
            return {"FINISHED"}
        return {"RUNNING_MODAL"}


# --- tools ---------------------------------------------------------------------------------

class SPRINGSKIN_TL_line_of_action(WorkSpaceTool):
    bl_space_type = "VIEW_3D"
    bl_context_mode = "POSE"
    bl_idname = LINE_OF_ACTION_TOOL
    bl_label = "Line of Action"
    bl_description = ("Drag a baseline along the limb, release, then drag the line of action: "
                      "the joints near the baseline follow (Shift+Alt+L)")
    bl_icon = "ops.curve.draw"
    bl_keymap = ((POSE_OT_springskin_line_of_action.bl_idname,
                  {"type": "LEFTMOUSE", "value": "PRESS"}, None),)

    def draw_settings(context, layout, tool):
        props = tool.operator_properties(POSE_OT_springskin_line_of_action.bl_idname)
        layout.prop(props, "radius_px")
        layout.prop(props, "key")


class SPRINGSKIN_TL_spring_edit(WorkSpaceTool):
    bl_space_type = "VIEW_3D"
    bl_context_mode = "OBJECT"
    bl_idname = SPRING_EDIT_TOOL
    bl_label = "Spring Edit"
    bl_description = ("Draw on a Spring Skin mesh: the region under the stroke bulges, "
                      "driven by the Spring node (Shift+Alt+E)")
    bl_icon = "brush.sculpt.inflate"
    bl_keymap = ((OBJECT_OT_springskin_spring_edit.bl_idname,   # a knot drag or a new stroke
                  {"type": "LEFTMOUSE", "value": "PRESS"}, None),)

    def draw_settings(context, layout, tool):
        props = tool.operator_properties(OBJECT_OT_springskin_spring_edit.bl_idname)
        layout.prop(props, "rings")
        layout.prop(props, "bulge")
        layout.prop(props, "key")


classes = (
    SpringSkinStrokePoint,
    POSE_OT_springskin_line_of_action,
    OBJECT_OT_springskin_spring_edit,
    OBJECT_OT_springskin_spring_edit_knot,
)
TOOLS = (SPRINGSKIN_TL_line_of_action, SPRINGSKIN_TL_spring_edit)

_draw_handle = None
_keymaps = []
_tools_registered = False


def register():
    """Register the tools (after the classes), their shortcuts and the
    viewport drawing of stored strokes. A background start that loads the
    addon from the user's preferences has no key configurations yet
    (Blender makes them for a window): the tools, which need one for their
    keymaps and a window to be used in, are then left out (registering them
    raised there, and Blender marked the addon not loaded)."""
    global _draw_handle, _tools_registered
    if bpy.context.window_manager.keyconfigs.addon is None:
        return
    for tool in TOOLS:
        bpy.utils.register_tool(tool, separator=True)
    _tools_registered = True
    kc = bpy.context.window_manager.keyconfigs.addon
    if kc is not None:
        for idname, keymap, letter in SHORTCUTS:
            km = kc.keymaps.new(name=keymap, space_type="EMPTY")
            kmi = km.keymap_items.new("wm.tool_set_by_id", letter, "PRESS", shift=True,
                                      alt=True)
            kmi.properties.name = idname
            _keymaps.append((km, kmi))
    if _draw_handle is None:
        _draw_handle = bpy.types.SpaceView3D.draw_handler_add(_draw_stored_strokes, (),
                                                              "WINDOW", "POST_VIEW")


def unregister():
    global _draw_handle, _tools_registered
    if _draw_handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_draw_handle, "WINDOW")
        _draw_handle = None
    for km, kmi in _keymaps:
        km.keymap_items.remove(kmi)
    _keymaps.clear()
    for tool in reversed(TOOLS if _tools_registered else ()):
        try:
            bpy.utils.unregister_tool(tool)
        except (RuntimeError, ValueError):
            pass
    _tools_registered = False
