"""The Blender side of tests/gui/test_bind_progress.py (issue #37, item 7):
in Blender's real window, the FBX test character subdivided to about 26k
vertices gets Add Spring Skin > Implicit as a rigger's click does
(INVOKE_DEFAULT: the modal bind), and the driver outside presses Esc
while it binds; then Add again, to the end, and a method switch from the
panel's menu.

Files in OUT (argument 3): this script writes ``ready.json``,
``binding.json`` (the bind is running: its step), ``log.json``; the driver
writes ``esc_sent`` and ``shot_done``.

    blender --factory-startup SCENE.blend --python tests/gui/bind_progress_session.py -- REPO BUILD OUT
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
LOG = {"errors": [], "steps": [], "steps_second": [], "steps_switch": []}
S = {}
TIMEOUT = 120.0

write, fail, guarded = G.helpers(OUT, LOG)


def _override():
    win, view = S["win"], S["view"]
    region = next(r for r in view.regions if r.type == "WINDOW")
    return bpy.context.temp_override(window=win, area=view, region=region, screen=win.screen)


def _mesh():
    return bpy.data.objects[S["mesh"]]


def _record_steps(key, what):
    """While a bind runs in the window: its new step appended to LOG[key];
    returns the timer's next interval, or None once it has ended (fails
    after TIMEOUT)."""
    bind = T.submodule("operators").active_bind
    if bind is None:
        return None
    if not LOG[key] or LOG[key][-1] != bind[1]:
        LOG[key].append(bind[1])
        if key == "steps":
            write("binding.json", {"step": bind[1], "fraction": bind[2]})
    if time.perf_counter() - S["t0"] > TIMEOUT:
        fail("%s did not end" % what)
        return None
    return 0.02


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
    S.update(win=win, view=view, props=props, mesh=mesh.name)
    with _override():
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        bpy.ops.mesh.subdivide(number_cuts=4)  # weights interpolated
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.ops.view3d.view_selected()
    LOG["vertices"] = len(mesh.data.vertices)
    modal_vertices = T.submodule("operators").MODAL_VERTICES
    if LOG["vertices"] < modal_vertices:
        return fail("%d vertices: below the modal bind's %d" % (LOG["vertices"], modal_vertices))
    write("ready.json", {"view3d": area_box(win, view), "properties": area_box(win, props),
                         "window": [win.width, win.height]})
    bpy.app.timers.register(add_first, first_interval=0.5)
    return None


@guarded
def add_first():
    # the Modifiers tab (offered once the editor has redrawn with the mesh active)
    S["props"].spaces.active.context = "MODIFIER"
    with _override():
        result = bpy.ops.object.springskin_add("INVOKE_DEFAULT", method="IMPLICIT")
    LOG["add_call"] = sorted(result)
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(watch_first, first_interval=0.0)
    return None


@guarded
def watch_first():
    """While the first Add binds: its steps, and binding.json for the
    driver (who presses Esc); then what the cancel left."""
    wait = _record_steps("steps", "the first Add")
    if wait is not None or LOG["errors"]:
        return wait
    mesh = _mesh()
    arm_mod = next((m for m in mesh.modifiers if m.type == "ARMATURE"), None)
    LOG["after_cancel"] = {
        "spring_skin_modifier": any(m.name == "Spring Skin" for m in mesh.modifiers),
        "bound": bool(mesh.springskin.bound),
        "armature_modifier_restored": arm_mod is not None and arm_mod.show_viewport and
        arm_mod.object is not None,
        "esc_sent_before_end": os.path.exists(os.path.join(OUT, "esc_sent")),
    }
    write("log.json", LOG)
    bpy.app.timers.register(wait_shot, first_interval=0.1)
    return None


@guarded
def wait_shot():
    if not os.path.exists(os.path.join(OUT, "shot_done")):
        return 0.1
    with _override():
        result = bpy.ops.object.springskin_add("INVOKE_DEFAULT", method="IMPLICIT")
    LOG["add_again_call"] = sorted(result)
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(watch_second, first_interval=0.0)
    return None


@guarded
def watch_second():
    wait = _record_steps("steps_second", "the second Add")
    if wait is not None or LOG["errors"]:
        return wait
    mesh = _mesh()
    state = T.submodule("runtime").state_of(mesh)
    LOG["after_second"] = {"bound": bool(mesh.springskin.bound),
                           "what": state.what if state is not None else None}
    # the method switch of the panel's menu (same operator the menu calls)
    with _override():
        result = bpy.ops.object.springskin_set_method("INVOKE_DEFAULT", method="COR")
    LOG["switch_call"] = sorted(result)
    S["t0"] = time.perf_counter()
    bpy.app.timers.register(watch_switch, first_interval=0.0)
    return None


@guarded
def watch_switch():
    wait = _record_steps("steps_switch", "the method switch")
    if wait is not None or LOG["errors"]:
        return wait
    mesh = _mesh()
    state = T.submodule("runtime").state_of(mesh)
    LOG["after_switch"] = {"method": mesh.springskin.method,
                           "what": state.what if state is not None else None}
    write("log.json", LOG)
    bpy.ops.wm.quit_blender()
    return None


bpy.app.timers.register(setup, first_interval=2.0)
