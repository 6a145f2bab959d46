"""The Blender side of bench/blender_window_fps.py: in Blender's real window
(Xvfb), plays the timeline (screen.animation_play, sync "Play Every
Frame", looping over the walk) with Blender's Armature modifier and with
Spring Skin in turn, per method, and counts the frames drawn per second
(frame_change_post timestamps). Writes OUT/log.json and quits.

    blender --factory-startup SCENE.blend --python bench/window_fps_session.py -- REPO BUILD OUT
"""

import importlib.util
import os
import sys
import time

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "blender"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gui"))
import blender_testlib as T  # noqa: E402
import gui_session as G  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])  # before the bench rewrites argv
_spec = importlib.util.spec_from_file_location("bbp", os.path.join(HERE, "blender_body_playback.py"))
BBP = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(BBP)  # its Armature / Spring Skin switch

METHODS = os.environ.get("SSK_FPS_METHODS", "lbs,dqs").split(",")
ROUNDS = int(os.environ.get("SSK_FPS_ROUNDS", "3"))
SECONDS = float(os.environ.get("SSK_FPS_SECONDS", "4"))
LOG = {"errors": [], "rows": []}
S = {"plan": [], "stamps": []}

write, fail, guarded = G.helpers(OUT, LOG)


def _stamp(scene, _depsgraph=None):
    S["stamps"].append(time.perf_counter())


def _override():
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    return bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen)


def _use_armature(on, preserve):
    """blender_body_playback.use_armature on the session's body."""
    BBP.use_armature(bpy.data.objects[S["body"]], bpy.data.objects[S["arm"]], on, preserve)


@guarded
def setup():
    T.enable_addon()
    body = next(o for o in bpy.data.objects if o.type == "MESH")
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    win = bpy.context.window_manager.windows[0]
    view = max((a for a in win.screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width)
    S.update(win=win, view=view, body=body.name, arm=arm.name)
    scene = bpy.context.scene
    scene.sync_mode = "NONE"  # Play Every Frame: as fast as it draws
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    bpy.context.view_layer.objects.active = body
    with _override():
        bpy.ops.view3d.view_selected()
    LOG.update(vertices=len(body.data.vertices), window=[win.width, win.height])
    bpy.app.handlers.frame_change_post.append(_stamp)
    for method in METHODS:
        S["plan"].append(("add", method))
        for _ in range(ROUNDS):
            S["plan"] += [("play", method, True), ("play", method, False)]
        S["plan"].append(("remove", method))
    bpy.app.timers.register(step, first_interval=1.0)
    return None


@guarded
def step():
    if not S["plan"]:
        write("log.json", LOG)
        bpy.ops.wm.quit_blender()
        return None
    item = S["plan"].pop(0)
    body = bpy.data.objects[S["body"]]
    if item[0] == "add":
        bpy.context.view_layer.objects.active = body
        with _override():
            result = bpy.ops.object.springskin_add(method=item[1].upper())
        if result != {"FINISHED"}:
            return fail("springskin_add %s: %s" % (item[1], result))
        return 0.5
    if item[0] == "remove":
        bpy.context.view_layer.objects.active = body
        with _override():
            bpy.ops.object.springskin_remove()
        armature = next(m for m in body.modifiers if m.type == "ARMATURE")
        armature.show_viewport = armature.show_render = True
        return 0.5
    _, method, armature = item
    _use_armature(armature, method == "dqs")
    S["current"] = (method, armature)
    S["stamps"] = []
    with _override():
        bpy.ops.screen.animation_play()
    bpy.app.timers.register(stop, first_interval=SECONDS)
    return None


@guarded
def stop():
    with _override():
        bpy.ops.screen.animation_cancel(restore_frame=False)
    stamps = S["stamps"][5:]  # the first frames warm up
    fps = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 2 else 0.0
    method, armature = S["current"]
    LOG["rows"].append({"method": method, "armature": armature, "fps": fps,
                        "frames": len(stamps)})
    write("log.json", LOG)
    bpy.app.timers.register(step, first_interval=0.3)
    return None


bpy.app.timers.register(setup, first_interval=2.0)
