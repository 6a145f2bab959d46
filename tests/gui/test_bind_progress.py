"""Issue #37, item 7's GUI test: a bind that takes more than a moment shows
its progress in Blender's real window and can be cancelled with Esc.

Blender (tests/gui/bind_progress_session.py) subdivides the FBX test
character to about 26k vertices and clicks Add Spring Skin > Implicit the
way the menu does (INVOKE_DEFAULT). While it binds, this driver takes a
screenshot (ImageMagick's ``import``, independent of Blender), reads the
status bar with OCR (tesseract) and presses Esc with xdotool over the 3D
viewport. Checked: the Add ran modally and named its steps; after Esc the
mesh is as it was (no Spring Skin modifier, its Armature modifier back);
a second Add runs to the end and deforms; the panel's method menu
(object.springskin_set_method) switches to CoR in steps too; the status
bar read "binding" and "Esc" during the bind.

    /usr/bin/python3 tests/gui/test_bind_progress.py REPO BUILD

Needs Xvfb, xdotool, imagemagick, tesseract-ocr and blender (.ci/deps.sh).
The screenshot stays in BUILD/gui/bind_progress.png.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_blender_window as W  # noqa: E402  (REPO, BUILD from the same argv)


def main():
    out = tempfile.mkdtemp(prefix="ssk_gui_bind_")
    with W.blender_window("bind_progress_session.py", out, "bind_progress_blender.log") \
            as (env, blender):
        W.wait_for(os.path.join(out, "ready.json"), blender)
        with open(os.path.join(out, "ready.json")) as f:
            ready = json.load(f)
        x, y, w, h = ready["view3d"]
        subprocess.run(["xdotool", "mousemove", str(x + w // 2), str(y + h // 2)], env=env,
                       check=True)
        W.wait_for(os.path.join(out, "binding.json"), blender, timeout=120)
        shot = os.path.join(W.SHOTS, "bind_progress.png")
        subprocess.run(["import", "-window", "root", shot], env=env, check=True)
        subprocess.run(["xdotool", "key", "Escape"], env=env, check=True)
        open(os.path.join(out, "esc_sent"), "w").close()
        win_w, win_h = ready["window"]
        status = W.ocr(shot, (0, win_h - 28, win_w, 28), os.path.join(W.SHOTS, "bind_status"))
        W.wait_until(os.path.join(out, "log.json"), blender, lambda d: "after_cancel" in d)
        open(os.path.join(out, "shot_done"), "w").close()
        blender.wait(timeout=180)
        with open(os.path.join(out, "log.json")) as f:
            session = json.load(f)

    failures = []
    if session["errors"]:
        failures.append("session errors: %s" % session["errors"])
    if session.get("add_call") != ["RUNNING_MODAL"]:
        failures.append("Add did not bind modally: %s" % session.get("add_call"))
    if not session.get("steps"):
        failures.append("no step of the bind was seen")
    cancel = session.get("after_cancel", {})
    if not cancel.get("esc_sent_before_end"):
        failures.append("the bind ended before Esc was sent (steps %s)" % session.get("steps"))
    elif cancel.get("spring_skin_modifier") or cancel.get("bound") or \
            not cancel.get("armature_modifier_restored"):
        failures.append("Esc did not leave the mesh as it was: %s" % cancel)
    if session.get("add_again_call") != ["RUNNING_MODAL"] or \
            not session.get("after_second", {}).get("bound") or \
            session["after_second"].get("what") != "method IMPLICIT":
        failures.append("the second Add did not bind: %s, %s"
                        % (session.get("add_again_call"), session.get("after_second")))
    if session.get("switch_call") != ["RUNNING_MODAL"] or \
            session.get("after_switch", {}).get("what") != "method COR" or \
            not session.get("steps_switch"):
        failures.append("the method switch did not run in steps: %s, %s, %s"
                        % (session.get("switch_call"), session.get("steps_switch"),
                           session.get("after_switch")))
    flat = " ".join(status.split())
    for word in ("binding", "Esc"):
        if word not in flat:
            failures.append("the status bar does not read %r during the bind (OCR: %r)"
                            % (word, flat))
    print("GUI bind: %d vertices, steps %s / %s / %s, status OCR: %s"
          % (session.get("vertices", 0), session.get("steps"), session.get("steps_second"),
             session.get("steps_switch"), flat))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok: bind progress and cancel (screenshot in %s)" % W.SHOTS)


if __name__ == "__main__":
    main()
