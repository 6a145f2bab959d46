"""The Blender side of tests/gui/test_weight_paint.py: runs inside Blender's
real window. It adds Spring Skin with CoR skinning to the FBX test character,
enters Weight Paint mode on a bone's vertex group and tells the driver where
to paint; the driver paints one stroke with the mouse (xdotool). Back in
Object mode, the addon must have updated only the centers of rotation the
stroke changed (issue #18), equal to a full precomputation. Steps are
synchronized through files in OUT (argument 3): this script writes
``ready.json`` and ``checked.json``; the driver writes ``stroke_done`` and
``shot_done``.

    blender --factory-startup SCENE.blend --python tests/gui/weight_paint_session.py -- REPO BUILD OUT
"""

import os
import sys
import time

import bpy
import numpy as np
from bpy_extras.view3d_utils import location_3d_to_region_2d

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blender_testlib as T  # noqa: E402
import gui_session as G  # noqa: E402
from gui_session import area_box  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])
#: Brush radius of the stroke, pixels.
BRUSH_RADIUS = 40
LOG = {"errors": []}
S = {}


write, fail, guarded = G.helpers(OUT, LOG)


def weights(mesh):
    """(V, G) dense weights of every vertex group."""
    w = np.zeros((len(mesh.data.vertices), len(mesh.vertex_groups)), dtype=np.float32)
    for v in mesh.data.vertices:
        for g in v.groups:
            w[v.index, g.group] = g.weight
    return w


@guarded
def setup():
    T.enable_addon()
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    win = bpy.context.window_manager.windows[0]
    screen = win.screen
    view = max((a for a in screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width)
    props = next(a for a in screen.areas if a.type == "PROPERTIES")
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = mesh
    mesh.select_set(True)
    region = next(r for r in view.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=win, area=view, region=region, screen=screen):
        result = bpy.ops.object.springskin_add(method="COR")
        bpy.ops.view3d.view_selected()
    if result != {"FINISHED"}:
        return fail("springskin_add: %s" % result)
    bpy.context.scene.frame_set(bpy.context.scene.frame_start)
    S.update(win=win, view=view, props=props, mesh=mesh.name)
    bpy.app.timers.register(enter_weight_paint, first_interval=0.5)
    return None


@guarded
def enter_weight_paint():
    """Weight Paint on the group of the bone blended over the most vertices,
    and the screen point of its most blended vertex (as drawn: deformed)."""
    win, view = S["win"], S["view"]
    mesh = bpy.data.objects[S["mesh"]]
    runtime = T.submodule("runtime")
    state = runtime.state_of(mesh)
    if state is None or state.cor_state is None:
        return fail("no CoR state after Add: %s" % (state and state.error))
    LOG["note_before"] = state.cor_note
    # the Modifiers tab (offered once the editor has redrawn with the mesh active)
    S["props"].spaces.active.context = "MODIFIER"
    w = weights(mesh)
    blended = ((w > 0.2) & (w < 0.8)).sum(axis=0)
    group = int(np.argmax(blended))
    mesh.vertex_groups.active_index = group
    region = next(r for r in view.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen):
        if bpy.ops.object.mode_set(mode="WEIGHT_PAINT") != {"FINISHED"}:
            return fail("could not enter Weight Paint mode")
    settings = bpy.context.scene.tool_settings
    settings.use_auto_normalize = False
    brush = settings.weight_paint.brush
    brush.weight = 1.0
    brush.strength = 1.0
    settings.unified_paint_settings.size = BRUSH_RADIUS
    brush.size = BRUSH_RADIUS
    # the target: the vertex whose weight is closest to 0.5, seen from the view
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh.evaluated_get(depsgraph)
    order = np.argsort(np.abs(w[:, group] - 0.5))
    rv3d = view.spaces.active.region_3d
    point = None
    for v in order[:200]:
        co = mesh.matrix_world @ evaluated.data.vertices[int(v)].co
        p = location_3d_to_region_2d(region, rv3d, co)
        if p is not None and 60 < p.x < region.width - 60 and 60 < p.y < region.height - 60:
            point = (region.x + p.x, win.height - (region.y + p.y))
            break
    if point is None:
        return fail("no blended vertex of group %s is in view" % mesh.vertex_groups[group].name)
    S["before"] = w
    S["group"] = group
    LOG["group"] = mesh.vertex_groups[group].name
    write("ready.json", {"view3d": area_box(win, view), "properties": area_box(win, S["props"]),
                         "point": [int(point[0]), int(point[1])]})
    bpy.app.timers.register(wait_stroke, first_interval=0.2)
    return None


@guarded
def wait_stroke():
    if not os.path.exists(os.path.join(OUT, "stroke_done")):
        return 0.2
    mesh = bpy.data.objects[S["mesh"]]
    after = weights(mesh)
    changed = np.flatnonzero((np.abs(after - S["before"]) > 1e-6).any(axis=1))
    gained = np.flatnonzero(((S["before"] == 0) & (after > 0)).any(axis=1))
    LOG["painted_vertices"] = int(len(changed))
    LOG["vertices_gaining_a_group"] = int(len(gained))
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    # back to Object mode (the mode menu's job): the addon reads the mesh again
    with bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen):
        bpy.ops.object.mode_set(mode="OBJECT")
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(check, first_interval=0.5)
    return None


@guarded
def check():
    mesh = bpy.data.objects[S["mesh"]]
    runtime = T.submodule("runtime")
    state = runtime.state_of(mesh)
    note = state.cor_note if state is not None else ""
    if "edited vertices" not in note and time.perf_counter() - S["t0"] < 10.0:
        bpy.context.scene.frame_set(bpy.context.scene.frame_current)
        return 0.2
    LOG["note_after"] = note
    if state is not None and state.cor_state is not None:
        ssk = T.submodule("native").require()
        full = ssk.CorState(state.rig)
        diag = T.diagonal(mesh)
        LOG["update_vs_full"] = float(np.abs(state.cor_state.centers - full.centers).max()) / diag
        LOG["flags_equal"] = bool(np.array_equal(state.cor_state.flags, full.flags))
    # the panel's last lines in view (the Method on a row of its own made
    # the Spring Skin panel taller than this Properties editor)
    win, props = S["win"], S["props"]
    region = next(r for r in props.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=win, area=props, region=region, screen=win.screen):
        bpy.ops.view2d.scroll_down(deltay=120)
    write("log.json", LOG)
    write("checked.json", {})
    bpy.app.timers.register(wait_shot, first_interval=0.2)
    return None


@guarded
def wait_shot():
    if not os.path.exists(os.path.join(OUT, "shot_done")):
        return 0.2
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(setup, first_interval=2.0)
