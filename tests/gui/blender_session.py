"""The Blender side of tests/gui/test_blender_window.py: runs inside Blender's
real window (not -b) and does what a rigger does, one step per timer, while
the driver outside sends keys and takes screenshots. Steps are synchronized
through files in OUT (argument 3): this script writes ``ready.json``,
``baked.json``; the driver writes ``keys_sent`` and ``shot_done``.

    blender --factory-startup SCENE.blend --python tests/gui/blender_session.py -- REPO BUILD OUT
"""

import os
import sys
import time

import bpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blender_testlib as T  # noqa: E402
import gui_session as G  # noqa: E402
from gui_session import area_box  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])
STEPS_AHEAD = 5          # frames the driver's Right-arrow presses advance
BAKE_FRAMES = 480        # frames baked (about 3 s here: many slices of 0.1 s)
LOG = {"errors": [], "progress": []}
S = {}


write, fail, guarded = G.helpers(OUT, LOG)


@guarded
def setup():
    T.enable_addon()
    # the .blend the driver made in background mode (the FBX test character,
    # imported by Blender's FBX importer, whose operators need no window there)
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    first, last = bpy.context.scene.frame_start, bpy.context.scene.frame_end
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
        result = bpy.ops.object.springskin_add(method="LBS")
        bpy.ops.view3d.view_selected()
    if result != {"FINISHED"}:
        return fail("springskin_add: %s" % result)
    bpy.context.scene.frame_set(first)
    S.update(win=win, view=view, props=props, mesh=mesh.name, first=first, last=last)
    LOG.update(first=first, last=last)
    bpy.app.timers.register(show_modifiers, first_interval=0.5)
    return None


@guarded
def show_modifiers():
    """The Modifiers tab (offered once the editor has redrawn with the mesh
    active), then tell the driver where things are."""
    win, view, props = S["win"], S["view"], S["props"]
    props.spaces.active.context = "MODIFIER"
    write("ready.json", {"view3d": area_box(win, view), "properties": area_box(win, props),
                         "window": [win.width, win.height], "first": S["first"]})
    bpy.app.timers.register(wait_keys, first_interval=0.2)
    return None


@guarded
def wait_keys():
    scene = bpy.context.scene
    runtime = T.submodule("runtime")
    state = runtime.state_of(bpy.data.objects[S["mesh"]])
    if not os.path.exists(os.path.join(OUT, "keys_sent")):
        # where the scrub is, for the driver to send one key at a time
        write("frames.json", {"frame": scene.frame_current,
                              "deformed": state.frames if state else 0,
                              "last": state.last_frame if state else None})
        return 0.1
    LOG["frame_after_keys"] = scene.frame_current
    LOG["deformed_frames"] = state.frames if state else 0
    LOG["last_deformed_frame"] = state.last_frame if state else None
    # the bake: modal in this window (progress bar, status line, Esc)
    win, props = S["win"], S["props"]
    path = os.path.join(OUT, "cache", "character.pc2")
    S["path"] = path
    # a range long enough to see the progress between the bake's slices of
    # work (the animation holds its last pose past its end)
    scene.frame_end = S["first"] + BAKE_FRAMES - 1
    LOG["last"] = scene.frame_end
    with bpy.context.temp_override(window=win, area=props, screen=win.screen):
        result = bpy.ops.object.springskin_bake_mesh_cache("EXEC_DEFAULT", filepath=path)
    LOG["bake_call"] = sorted(result)
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(watch_bake, first_interval=0.0)
    return None


@guarded
def watch_bake():
    bake = T.submodule("operators").active_bake
    if bake is not None:
        if not LOG["progress"] or LOG["progress"][-1] != bake[1]:
            LOG["progress"].append(bake[1])
        return 0.02
    if time.perf_counter() - S["t0"] > 120:
        return fail("the bake did not end within 120 s")
    LOG["cache_exists"] = os.path.exists(S["path"])
    write("log.json", LOG)
    write("baked.json", {"path": S["path"]})
    bpy.app.timers.register(wait_shot, first_interval=0.2)
    return None


@guarded
def wait_shot():
    if not os.path.exists(os.path.join(OUT, "shot_done")):
        return 0.2
    # the graph: the 3D view becomes a Spring Skin Graph editor, the method
    # Spring, Edit as Graph; then the editor must follow the active object
    win, view, props = S["win"], S["view"], S["props"]
    mesh = bpy.data.objects[S["mesh"]]
    mesh.springskin.method = "SPRING"
    with bpy.context.temp_override(window=win, area=props, screen=win.screen):
        bpy.ops.object.springskin_edit_graph()
    # the editor opened after Edit as Graph (it stayed empty, "New", until
    # the graph was browsed by hand: issue #37, item 8)
    view.type = "NODE_EDITOR"
    view.spaces.active.tree_type = "SpringSkinGraphTree"
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(wait_new_editor, first_interval=0.2)
    return None


@guarded
def wait_new_editor():
    space = S["view"].spaces.active
    mesh = bpy.data.objects[S["mesh"]]
    shown = space.node_tree is not None and space.node_tree.name == mesh.springskin.graph_name
    if not shown and time.perf_counter() - S["t0"] < 5.0:
        return 0.2
    LOG["graph_shown"] = shown
    space.node_tree = None
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    layer = bpy.context.view_layer
    layer.objects.active = arm
    layer.objects.active = mesh  # the message bus tells the addon
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(wait_follow, first_interval=0.2)
    return None


@guarded
def wait_follow():
    space = S["view"].spaces.active
    followed = space.node_tree is not None
    if not followed and time.perf_counter() - S["t0"] < 5.0:
        return 0.2
    LOG["graph_follows_active"] = followed
    tree = space.node_tree
    for node in tree.nodes:
        node.select = node.bl_idname == "SpringSkinSpringNode"
    zoom_to_spring_node()
    write("log.json", LOG)
    S["zoom_tries"] = 0
    bpy.app.timers.register(locate_node, first_interval=0.5)
    return None


def zoom_to_spring_node():
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    with bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen):
        bpy.ops.node.view_selected()  # the Spring node fills the editor


#: Zoom attempts before the node's box is sent as it is (a busy machine may
#: not have drawn the nodes when the first view_selected ran).
ZOOM_TRIES = 30


@guarded
def locate_node():
    """The Spring node's box in window coordinates once the editor shows it
    zoomed in (else zoom again and wait for a redraw), for the driver's
    OCR."""
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    node = next(n for n in view.spaces.active.node_tree.nodes
                if n.bl_idname == "SpringSkinSpringNode")
    # node.location is its top-left corner in view space; dimensions are in
    # pixels at this zoom (Blender 3.4)
    x0, y0 = region.view2d.view_to_region(node.location.x, node.location.y, clip=False)
    w, h = node.dimensions
    # zoomed: the whole node inside the editor (y0 is its top, from the
    # region's bottom) and at least half its height
    zoomed = (h >= 0.5 * region.height and 0 <= x0 and x0 + w <= region.width and
              y0 - h >= 0 and y0 <= region.height)
    if not zoomed and S["zoom_tries"] < ZOOM_TRIES:
        S["zoom_tries"] += 1
        zoom_to_spring_node()
        return 0.3
    LOG["zoom_tries"] = S["zoom_tries"]
    left, top = region.x + x0, win.height - (region.y + y0)
    write("graph.json", {"editor": area_box(win, view),
                         "node": [int(left), int(top), int(w), int(h)],
                         "zoom_tries": S["zoom_tries"], "region": [region.width, region.height]})
    bpy.app.timers.register(wait_graph_shot, first_interval=0.2)
    return None


@guarded
def wait_graph_shot():
    if not os.path.exists(os.path.join(OUT, "graph_shot_done")):
        return 0.2
    write("log.json", LOG)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(setup, first_interval=2.0)
