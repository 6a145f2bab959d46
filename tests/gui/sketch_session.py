"""The Blender side of tests/gui/test_sketch_tools.py: runs inside Blender's
real window on Rigify's human metarig with a metaball body
(tests/gui/make_rigify_scene.py). It adds Spring Skin (Spring) to the body,
frames the left arm in a front orthographic view, enters Pose mode and
tells the driver where to draw; the driver selects the Line of Action tool
with its shortcut (Shift+Alt+L) and draws a baseline along the arm and an
offset stroke above it with the mouse (xdotool). This script checks that
the pose changed (and was keyed: the tool's Key setting is on), goes back
to Object mode on the body, and the driver selects the Spring Edit tool
(Shift+Alt+E) and draws along the posed forearm; this script checks that a
stroke edit was made on the surface. Steps are synchronized through files
in OUT (argument 3): this script writes ``ready.json``, ``tool.json``,
``posed.json``, ``ready_edit.json``, ``edited.json``, ``knot.json``; the
driver writes ``tool_sent``, ``pose_done``, ``edit_tool_sent``,
``edit_done``, ``knot_done``, ``shot_done``. After the edit, the driver
drags the stroke's last knot further along the forearm; this script checks
that the knot and the region moved.

    blender --factory-startup SCENE.blend --python tests/gui/sketch_session.py -- REPO BUILD OUT
"""

import os
import sys
import time

import bpy
import numpy as np
from bpy_extras.view3d_utils import location_3d_to_region_2d
from mathutils import Vector

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blender_testlib as T  # noqa: E402
import gui_session as G  # noqa: E402
from gui_session import area_box  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])
CHAIN = ("upper_arm.L", "forearm.L", "hand.L")
#: Points per drawn stroke segment.
SAMPLES = 12
#: How long to wait for the tool or the result, seconds.
PATIENCE = 20.0
LOG = {"errors": []}
S = {}

write, fail, guarded = G.helpers(OUT, LOG)


def _override():
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    return bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen)


def _screen(points):
    """X11 window coordinates of world points (None when not in view)."""
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    rv3d = view.spaces.active.region_3d
    out = []
    for p in points:
        q = location_3d_to_region_2d(region, rv3d, Vector(p))
        if q is None or not (10 < q.x < region.width - 10 and 10 < q.y < region.height - 10):
            return None
        out.append([int(round(region.x + q.x)), int(round(win.height - (region.y + q.y)))])
    return out


def _active_tool(mode):
    tool = bpy.context.workspace.tools.from_space_view3d_mode(mode, create=False)
    return tool.idname if tool is not None else None


def _pose(arm):
    return np.array([np.array(pb.matrix) for pb in arm.pose.bones])


@guarded
def setup():
    T.enable_addon()
    body = bpy.data.objects["Body"]
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    win = bpy.context.window_manager.windows[0]
    screen = win.screen
    view = max((a for a in screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width)
    S.update(win=win, view=view, body=body.name, arm=arm.name)
    T.activate(body)
    with _override():
        if bpy.ops.object.springskin_add(method="SPRING") != {"FINISHED"}:
            return fail("springskin_add failed")
    T.activate(arm)
    view.spaces.active.overlay.show_overlays = True
    with _override():
        bpy.ops.object.mode_set(mode="POSE")
        bpy.ops.pose.select_all(action="DESELECT")
        for name in CHAIN:
            arm.data.bones[name].select = True
        bpy.ops.view3d.view_axis(type="FRONT")
        bpy.ops.view3d.view_selected()
        bpy.ops.pose.select_all(action="DESELECT")
    view.spaces.active.region_3d.view_distance *= 1.6  # room for the arc above the arm
    bpy.app.timers.register(ready, first_interval=0.5)
    return None


@guarded
def ready():
    arm = bpy.data.objects[S["arm"]]
    bones = arm.data.bones
    world = arm.matrix_world
    joints = [world @ bones[CHAIN[0]].head_local] + [world @ bones[n].tail_local
                                                     for n in CHAIN]
    baseline = []
    for a, b in zip(joints[:-1], joints[1:]):
        baseline += [a.lerp(b, s) for s in np.linspace(0.0, 1.0, SAMPLES, endpoint=False)]
    baseline.append(joints[-1])
    # the offset: a quarter circle bending up, of the chain's straight length
    d = (joints[-1] - joints[0]).normalized()
    up = (Vector((0.0, 0.0, 1.0)) - d.z * d).normalized()
    radius = (joints[-1] - joints[0]).length / (np.pi / 2)
    offset = [joints[0] + radius * (float(np.sin(a)) * d + float(1.0 - np.cos(a)) * up)
              for a in np.linspace(0.0, np.pi / 2, 3 * SAMPLES)]
    base2d, off2d = _screen(baseline), _screen(offset)
    if base2d is None or off2d is None:
        return fail("the strokes are not in view")
    S["before"] = _pose(arm)
    S["tip_before"] = world @ arm.pose.bones[CHAIN[-1]].tail
    S["up"] = up
    write("ready.json", {"view3d": area_box(S["win"], S["view"]), "baseline": base2d,
                         "offset": off2d})
    bpy.app.timers.register(wait_tool, first_interval=0.2)
    return None


@guarded
def wait_tool():
    if not os.path.exists(os.path.join(OUT, "tool_sent")):
        return 0.2
    S.setdefault("t_tool", time.perf_counter())
    tool = _active_tool("POSE")
    if tool != "springskin.line_of_action":
        if time.perf_counter() - S["t_tool"] < PATIENCE:
            return 0.2
        return fail("Shift+Alt+L did not select the Line of Action tool (active: %s)" % tool)
    LOG["pose_tool"] = tool
    # the tool settings: key the pose, a radius that reaches the joints
    ws_tool = bpy.context.workspace.tools.from_space_view3d_mode("POSE", create=False)
    props = ws_tool.operator_properties("pose.springskin_line_of_action")
    props.key = True
    write("tool.json", {"tool": tool})
    bpy.app.timers.register(wait_pose, first_interval=0.2)
    return None


@guarded
def wait_pose():
    if not os.path.exists(os.path.join(OUT, "pose_done")):
        return 0.2
    arm = bpy.data.objects[S["arm"]]
    S.setdefault("t_pose", time.perf_counter())
    changed = np.abs(_pose(arm) - S["before"]).max() > 1e-4
    if not changed and time.perf_counter() - S["t_pose"] < PATIENCE:
        return 0.2
    tip = arm.matrix_world @ arm.pose.bones[CHAIN[-1]].tail
    LOG["pose_changed"] = bool(changed)
    LOG["tip_moved"] = float((tip - S["tip_before"]).length)
    LOG["tip_moved_up"] = float((tip - S["tip_before"]).dot(S["up"]))
    action = arm.animation_data.action if arm.animation_data else None
    LOG["keyed_bones"] = sorted({fc.group.name for fc in action.fcurves if fc.group}) \
        if action else []
    LOG["changed_bones"] = [pb.name for pb, a, b in zip(arm.pose.bones, S["before"],
                                                        _pose(arm))
                            if np.abs(a - b).max() > 1e-4]
    # one undo step: Undo gives the pose back, Redo the posed one
    posed = _pose(arm)
    with _override():
        bpy.ops.ed.undo()
    arm = bpy.data.objects[S["arm"]]  # undo replaces Blender's data
    LOG["undo_restores"] = bool(np.abs(_pose(arm) - S["before"]).max() <= 1e-5)
    with _override():
        bpy.ops.ed.redo()
    arm = bpy.data.objects[S["arm"]]
    LOG["redo_restores"] = bool(np.abs(_pose(arm) - posed).max() <= 1e-5)
    write("posed.json", LOG)
    # Object mode on the body, for the Spring Edit tool
    body = bpy.data.objects[S["body"]]
    with _override():
        bpy.ops.object.mode_set(mode="OBJECT")
    T.activate(body)
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    bpy.app.timers.register(ready_edit, first_interval=0.5)
    return None


@guarded
def ready_edit():
    arm = bpy.data.objects[S["arm"]]
    pb = arm.pose.bones["forearm.L"]
    world = arm.matrix_world
    points = [world @ pb.head.lerp(pb.tail, s) for s in np.linspace(0.2, 0.8, SAMPLES)]
    stroke = _screen(points)
    if stroke is None:
        return fail("the posed forearm is not in view")
    write("ready_edit.json", {"stroke": stroke})
    bpy.app.timers.register(wait_edit_tool, first_interval=0.2)
    return None


@guarded
def wait_edit_tool():
    if not os.path.exists(os.path.join(OUT, "edit_tool_sent")):
        return 0.2
    S.setdefault("t_edit_tool", time.perf_counter())
    tool = _active_tool("OBJECT")
    if tool != "springskin.spring_edit":
        if time.perf_counter() - S["t_edit_tool"] < PATIENCE:
            return 0.2
        return fail("Shift+Alt+E did not select the Spring Edit tool (active: %s)" % tool)
    LOG["edit_tool"] = tool
    write("tool.json", {"tool": tool})
    bpy.app.timers.register(wait_edit, first_interval=0.2)
    return None


@guarded
def wait_edit():
    if not os.path.exists(os.path.join(OUT, "edit_done")):
        return 0.2
    body = bpy.data.objects[S["body"]]
    sketch = T.submodule("sketch")
    S.setdefault("t_edit", time.perf_counter())
    edits = sketch.stroke_edits(body)
    if not edits and time.perf_counter() - S["t_edit"] < PATIENCE:
        return 0.2
    LOG["stroke_edits"] = len(edits)
    if edits:
        node = edits[0]
        LOG["stroke_samples"] = len(node.stroke)
        LOG["kinematic"] = len(node.get("stroke_kinematic", ()))
        region = sketch.stroke_region(body, node)
        LOG["region"] = [int(np.count_nonzero(region["roles"] == r)) for r in (1, 2, 3)] \
            if region is not None else None
        state = T.submodule("runtime").state_of(body)
        LOG["deform_error"] = state.error if state is not None else "no state"
    # the last knot, and where to drag it: further along the posed forearm
    # (on the surface as the edit deformed it: re-evaluated first)
    bpy.context.scene.frame_set(bpy.context.scene.frame_current)
    arm = bpy.data.objects[S["arm"]]
    pb = arm.pose.bones["forearm.L"]
    knot = sketch._stroke_world(body, edits[0], bpy.context.evaluated_depsgraph_get())[-1] \
        if edits else None
    target = arm.matrix_world @ pb.head.lerp(pb.tail, 0.95)
    S["knot_before"] = (edits[0].stroke[-1].triangle, list(edits[0]["stroke_kinematic"])) \
        if edits else None
    LOG["knot"] = _screen([knot, target]) if knot is not None else None
    write("log.json", LOG)
    write("edited.json", LOG)
    bpy.app.timers.register(wait_knot, first_interval=0.2)
    return None


@guarded
def wait_knot():
    if not os.path.exists(os.path.join(OUT, "knot_done")):
        return 0.2
    body = bpy.data.objects[S["body"]]
    edits = T.submodule("sketch").stroke_edits(body)
    S.setdefault("t_knot", time.perf_counter())
    moved = bool(edits) and S["knot_before"] is not None and (
        edits[0].stroke[-1].triangle != S["knot_before"][0])
    if not moved and time.perf_counter() - S["t_knot"] < PATIENCE:
        return 0.2
    LOG["knot_moved"] = moved
    LOG["kinematic_after_drag"] = len(edits[0].get("stroke_kinematic", ())) if edits else 0
    LOG["region_changed"] = bool(edits) and S["knot_before"] is not None and (
        list(edits[0]["stroke_kinematic"]) != S["knot_before"][1])
    write("log.json", LOG)
    write("knot.json", LOG)
    bpy.app.timers.register(wait_shot, first_interval=0.2)
    return None


@guarded
def wait_shot():
    if not os.path.exists(os.path.join(OUT, "shot_done")):
        return 0.2
    LOG["viewport_drawn"] = dict(T.submodule("sketch").last_drawn)  # the screenshot's frame
    write("log.json", LOG)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(setup, first_interval=2.0)
