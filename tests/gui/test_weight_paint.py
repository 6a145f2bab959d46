"""Issue #18's GUI test: a rigger paints skin weights on a CoR character in
Blender's real window (Xvfb), and the addon updates only the centers of
rotation the stroke changed.

Blender (tests/gui/weight_paint_session.py) adds Spring Skin with CoR
skinning to the FBX test character and enters Weight Paint mode on the group
of the bone blended over the most vertices. This driver paints one stroke
across its most blended vertex with the mouse (xdotool: button down, drag,
button up). Back in Object mode the session compares the updated centers
with a full precomputation of the painted weights, and this driver reads
the panel by OCR (tesseract) from a screenshot (ImageMagick's ``import``).

Checked: the stroke painted vertices (some gaining the group: a new bone
for them); the panel says the centers were updated for the painted vertices
("Centers of rotation: N edited vertices"); the updated centers equal the
full precomputation within 1e-5 of the bounding-box diagonal.

    /usr/bin/python3 tests/gui/test_weight_paint.py REPO BUILD

Needs Xvfb, xdotool, imagemagick, tesseract-ocr and blender (.ci/deps.sh).
Screenshots stay in BUILD/gui/.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_blender_window import SHOTS, blender_window, ocr, wait_for  # noqa: E402

#: Largest |update - full| of the centers, a fraction of the diagonal.
TOLERANCE = 1e-5
#: Stroke: pixels each side of the target point, in steps of STEP.
STROKE_HALF = 60
STEP = 6


def main():
    out = tempfile.mkdtemp(prefix="ssk_gui_wp_")
    session = {"errors": ["the session did not finish"]}
    text = ""
    try:
        with blender_window("weight_paint_session.py", out,
                            "weight_paint_blender.log") as (env, blender):
            wait_for(os.path.join(out, "ready.json"), blender)
            with open(os.path.join(out, "ready.json")) as f:
                ready = json.load(f)
            x, y = ready["point"]
            xdo = ["xdotool"]
            time.sleep(1.0)  # the viewport redrawn in Weight Paint mode
            subprocess.run(xdo + ["mousemove", str(x - STROKE_HALF), str(y)], env=env,
                           check=True)
            time.sleep(0.3)
            subprocess.run(xdo + ["mousedown", "1"], env=env, check=True)
            for dx in range(-STROKE_HALF, STROKE_HALF + 1, STEP):
                subprocess.run(xdo + ["mousemove", str(x + dx), str(y)], env=env, check=True)
                time.sleep(0.03)
            subprocess.run(xdo + ["mouseup", "1"], env=env, check=True)
            time.sleep(0.5)
            painted = os.path.join(SHOTS, "weight_paint_stroke.png")
            subprocess.run(["import", "-window", "root", painted], env=env, check=True)
            open(os.path.join(out, "stroke_done"), "w").close()
            wait_for(os.path.join(out, "checked.json"), blender)
            time.sleep(1.0)  # a redraw of the panel
            shot = os.path.join(SHOTS, "weight_paint_panel.png")
            subprocess.run(["import", "-window", "root", shot], env=env, check=True)
            text = ocr(shot, ready["properties"], os.path.join(SHOTS, "weight_paint_panel"))
            open(os.path.join(out, "shot_done"), "w").close()
            blender.wait(timeout=60)
            with open(os.path.join(out, "log.json")) as f:
                session = json.load(f)
    finally:
        shutil.rmtree(out, ignore_errors=True)

    failures = []
    if session["errors"]:
        failures.append("session errors: %s" % session["errors"])
    if session.get("painted_vertices", 0) < 1:
        failures.append("the mouse stroke painted no vertex")
    note = session.get("note_after", "")
    if "%d edited vertices" % session.get("painted_vertices", -1) not in note:
        failures.append("the centers were not updated for the painted vertices: %r (painted %s)"
                        % (note, session.get("painted_vertices")))
    diff = session.get("update_vs_full")
    if diff is None or diff > TOLERANCE:
        failures.append("updated centers vs a full precomputation: %s of the diagonal" % diff)
    if not session.get("flags_equal"):
        failures.append("updated flags differ from a full precomputation")
    flat = " ".join(text.split())
    for word in ("Centers of rotation", "edited vertices"):
        if word not in flat:
            failures.append("the panel does not read %r (OCR: %r)" % (word, flat))
    print("GUI weight paint: group %s, %s vertices painted (%s gaining the group); %s; "
          "|update - full| = %s diagonal; panel OCR: %s"
          % (session.get("group"), session.get("painted_vertices"),
             session.get("vertices_gaining_a_group"), note, diff, flat))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok: weight paint GUI test (screenshots in %s)" % SHOTS)


if __name__ == "__main__":
    main()
