"""Issue #22's GUI test: the sketch tools in Blender's real window (Xvfb),
driven with the keyboard and the mouse (xdotool) on Rigify's human metarig
with a metaball body (tests/gui/make_rigify_scene.py; the Blender side is
tests/gui/sketch_session.py).

1. Pose mode: Shift+Alt+L selects the Line of Action tool; a drag along the
   left arm (the baseline), a release, a drag on a quarter circle above it
   (the offset), a release. Checked: the pose changed, the hand's tip moved
   up, the changed bones were keyed (the tool's Key setting), Undo gives the
   previous pose back and Redo the posed one (one undo step).
2. Object mode on the body: Shift+Alt+E selects the Spring Edit tool; a
   drag along the posed forearm, then a drag of the stroke's last knot
   toward the wrist. Checked: a stroke edit of the Spring node was made
   from samples on the surface, with a region, drawn in the viewport; the
   knot drag moved the knot and the region.

Screenshots of each tool in use (the 3D viewport: the strokes and the
selection radius while drawing the offset; the stored stroke and its
region after the Spring Edit) stay in BUILD/gui/ (sketch_line_of_action.png,
sketch_spring_edit.png); the README's are copies.

    /usr/bin/python3 tests/gui/test_sketch_window.py REPO BUILD

Needs Xvfb, xdotool, imagemagick and blender (.ci/deps.sh).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_blender_window import SHOTS, blender_window, wait_for  # noqa: E402

#: Seconds between mouse moves of a drag (Blender sees each as an event).
MOVE_PAUSE = 0.05


def _drag(xdo, env, points, shot=None, settle=0.3, pause=MOVE_PAUSE):
    """Press at the first point, move through the others, release; with
    `shot`, a screenshot of the viewport box shot = (path, box) just before
    the release. `settle`: seconds after the first move and before the
    release; `pause`: after each move."""
    subprocess.run(xdo + ["mousemove", str(points[0][0]), str(points[0][1])], env=env,
                   check=True)
    time.sleep(settle)
    subprocess.run(xdo + ["mousedown", "1"], env=env, check=True)
    for x, y in points[1:]:
        subprocess.run(xdo + ["mousemove", str(x), str(y)], env=env, check=True)
        time.sleep(pause)
    time.sleep(settle)
    if shot is not None:
        _screenshot(env, *shot)
    subprocess.run(xdo + ["mouseup", "1"], env=env, check=True)
    time.sleep(0.3)


def _screenshot(env, path, box):
    """The viewport box (x, y, w, h) of the screen, as a PNG (ImageMagick)."""
    full = path + ".full.png"
    subprocess.run(["import", "-window", "root", full], env=env, check=True)
    x, y, w, h = box
    subprocess.run(["convert", full, "-crop", "%dx%d+%d+%d" % (w, h, x, y), "+repage", path],
                   check=True)
    os.remove(full)


def main():
    out = tempfile.mkdtemp(prefix="ssk_gui_sketch_")
    session = {"errors": ["the session did not finish"]}
    try:
        with blender_window("sketch_session.py", out, "sketch_blender.log",
                            scene="make_rigify_scene.py") as (env, blender):
            wait_for(os.path.join(out, "ready.json"), blender)
            with open(os.path.join(out, "ready.json")) as f:
                ready = json.load(f)
            xdo = ["xdotool"]
            x, y, w, h = ready["view3d"]
            time.sleep(1.0)  # the viewport redrawn in Pose mode
            subprocess.run(xdo + ["mousemove", str(x + w // 2), str(y + h // 2)], env=env,
                           check=True)
            subprocess.run(xdo + ["key", "shift+alt+l"], env=env, check=True)
            open(os.path.join(out, "tool_sent"), "w").close()
            wait_for(os.path.join(out, "tool.json"), blender)
            time.sleep(0.5)
            _drag(xdo, env, ready["baseline"])
            _drag(xdo, env, ready["offset"],
                  shot=(os.path.join(SHOTS, "sketch_line_of_action.png"), ready["view3d"]))
            os.remove(os.path.join(out, "tool.json"))
            open(os.path.join(out, "pose_done"), "w").close()
            wait_for(os.path.join(out, "ready_edit.json"), blender)
            with open(os.path.join(out, "ready_edit.json")) as f:
                edit = json.load(f)
            time.sleep(0.5)
            subprocess.run(xdo + ["mousemove", str(x + w // 2), str(y + h // 2)], env=env,
                           check=True)
            subprocess.run(xdo + ["key", "shift+alt+e"], env=env, check=True)
            open(os.path.join(out, "edit_tool_sent"), "w").close()
            wait_for(os.path.join(out, "tool.json"), blender)
            time.sleep(0.5)
            _drag(xdo, env, edit["stroke"])
            open(os.path.join(out, "edit_done"), "w").close()
            wait_for(os.path.join(out, "edited.json"), blender)
            with open(os.path.join(out, "edited.json")) as f:
                knot = json.load(f).get("knot")
            if knot:  # drag the last knot toward the wrist, in small steps
                (kx, ky), (tx, ty) = knot
                # slower than the strokes: each move re-solves the region
                # and the springs, and a loaded machine (ctest -j2 with the
                # other Blender tests) lagged the press behind the hover
                # (the knot not picked, 1 run in 3 there)
                _drag(xdo, env, [(round(kx + (tx - kx) * s), round(ky + (ty - ky) * s))
                                 for s in [i / 10.0 for i in range(11)]],
                      settle=1.5, pause=0.25)
            open(os.path.join(out, "knot_done"), "w").close()
            wait_for(os.path.join(out, "knot.json"), blender)
            # park the mouse off the mesh, let the viewport redraw the stored stroke
            subprocess.run(xdo + ["mousemove", str(x + 20), str(y + h - 20)], env=env,
                           check=True)
            time.sleep(1.5)
            _screenshot(env, os.path.join(SHOTS, "sketch_spring_edit.png"), ready["view3d"])
            open(os.path.join(out, "shot_done"), "w").close()
            blender.wait(timeout=60)
            with open(os.path.join(out, "log.json")) as f:
                session = json.load(f)
    finally:
        shutil.rmtree(out, ignore_errors=True)

    failures = []
    if session["errors"]:
        failures.append("session errors: %s" % session["errors"])
    if not session.get("pose_changed"):
        failures.append("the Line of Action strokes did not change the pose")
    if session.get("tip_moved_up", 0.0) <= 0.05:
        failures.append("the hand's tip did not move up with the offset stroke: %s"
                        % session.get("tip_moved_up"))
    if not (session.get("undo_restores") and session.get("redo_restores")):
        failures.append("one undo step: Undo restores the pose %s, Redo the posed one %s"
                        % (session.get("undo_restores"), session.get("redo_restores")))
    changed = set(session.get("changed_bones", ()))
    keyed = set(session.get("keyed_bones", ()))
    if not changed or not ({"upper_arm.L", "forearm.L", "hand.L"} & changed) \
            or not (changed & keyed):
        failures.append("posed bones %s, keyed %s" % (sorted(changed), sorted(keyed)))
    if session.get("stroke_edits") != 1 or session.get("kinematic", 0) < 1:
        failures.append("the Spring Edit stroke made %s edits with %s kinematic vertices"
                        % (session.get("stroke_edits"), session.get("kinematic")))
    if not (session.get("knot_moved") and session.get("region_changed")):
        failures.append("dragging the last knot (%s) moved it: %s, changed the region: %s"
                        % (session.get("knot"), session.get("knot_moved"),
                           session.get("region_changed")))
    drawn = session.get("viewport_drawn", {})
    if drawn.get("strokes") != 1 or drawn.get("region_vertices", 0) < session.get("kinematic", 1):
        failures.append("the viewport did not draw the stored stroke and its region: %s"
                        % drawn)
    if session.get("deform_error"):
        failures.append("Spring Skin after the edit: %s" % session["deform_error"])
    print("GUI sketch tools: pose changed %s, tip moved %.3f (up %.3f), posed %s, keyed %s; "
          "spring edit: %s samples, %s kinematic, region (kinematic, passive, static) %s; "
          "knot dragged: %s kinematic; drawn %s"
          % (session.get("pose_changed"), session.get("tip_moved", 0.0),
             session.get("tip_moved_up", 0.0), sorted(changed), sorted(keyed),
             session.get("stroke_samples"), session.get("kinematic"), session.get("region"),
             session.get("kinematic_after_drag"), drawn))
    if failures:
        print("session: %s" % json.dumps(session))
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok: sketch tools GUI test (screenshots in %s)" % SHOTS)


if __name__ == "__main__":
    main()
