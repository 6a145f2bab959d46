"""Issue #17's GUI test: Blender's real window under Xvfb, driven as a rigger
drives it. Blender (tests/gui/blender_session.py) adds the Spring Skin
modifier to the FBX test character and, once this driver has scrubbed the
timeline with synthetic Right-arrow presses (xdotool) over the 3D viewport,
bakes to a Mesh Cache in the window (the modal bake: progress bar, status
line). This driver then takes a screenshot of the screen (ImageMagick's
``import``, independent of Blender) and reads the Properties editor with
OCR (tesseract): the panel must show its state and the bake.

Checked: the keys moved the frame and the handler deformed each frame; the
bake ran frame by frame in the window (its progress sampled by a timer
while the UI kept running) and wrote every frame; the screenshot's panel
reads "Spring Skin", "Bound", the frame time and "baked to". Then the 3D
view becomes a Spring Skin Graph editor: Edit as Graph shows the graph in
it, the editor follows the active object, and a second screenshot of the
Spring node reads its labels (cut off or missing before issue #17).

    /usr/bin/python3 tests/gui/test_blender_window.py REPO BUILD

Needs Xvfb, xdotool, imagemagick and tesseract-ocr (.ci/deps.sh installs
them) and blender. Screenshots stay in BUILD/gui/.
"""

import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "build"))
SHOTS = os.path.join(BUILD, "gui")
SIZE = (1600, 900)
STEPS = 5
TIMEOUT = 240.0
#: What the panel must show after the bake (OCR of the Properties editor).
PANEL_WORDS = ("Spring Skin", "Bound", "Frame", "baked to")
#: Labels of the Spring node that used to be cut off ("Accelerati",
#: "Thresh") or missing (bare drop-downs), read by OCR in the Spring node
#: after Edit as Graph with the Spring method. (The stiffness and time-step
#: sliders' labels sit on grey fields tesseract does not read reliably.)
GRAPH_WORDS = ("Integrator", "Solver", "Acceleration", "Stop When", "Threshold", "Frames",
               "Anchors")


def need(tool, package):
    if shutil.which(tool) is None:
        sys.exit("FAIL: %s is missing: apt-get install %s (.ci/deps.sh)" % (tool, package))


def wait_for(path, proc, timeout=TIMEOUT):
    t0 = time.time()
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError("Blender exited (%s) before %s" % (proc.returncode,
                                                                    os.path.basename(path)))
        if time.time() - t0 > timeout:
            raise AssertionError("timed out waiting for %s" % os.path.basename(path))
        time.sleep(0.1)


def wait_until(path, proc, done, timeout=TIMEOUT):
    """Until the JSON file `path` (rewritten by the session) satisfies
    done(data)."""
    t0 = time.time()
    while True:
        try:
            with open(path) as f:
                if done(json.load(f)):
                    return
        except (OSError, ValueError):
            pass
        if proc.poll() is not None:
            raise AssertionError("Blender exited (%s) while waiting on %s"
                                 % (proc.returncode, os.path.basename(path)))
        if time.time() - t0 > timeout:
            raise AssertionError("timed out waiting on %s" % os.path.basename(path))
        time.sleep(0.05)


def free_display():
    """A display number no X server uses; the lock and socket of a server
    that died without cleaning up (killed) are removed and reused."""
    for n in range(91, 140):
        lock, sock = "/tmp/.X%d-lock" % n, "/tmp/.X11-unix/X%d" % n
        if os.path.exists(lock):
            try:
                with open(lock) as f:
                    pid = int(f.read().strip())
                os.kill(pid, 0)
                continue  # a live server
            except ProcessLookupError:
                pass  # stale: its server is gone
            except (OSError, ValueError):
                continue  # unreadable, or not ours to judge
            for stale in (lock, sock):
                try:
                    os.remove(stale)
                except OSError:
                    pass
        if not os.path.exists(lock) and not os.path.exists(sock):
            return n
    raise AssertionError("no free X display")


def ocr(png, box, out_base, scale=300):
    """Text of the region box = (x, y, w, h) of png, upscaled (Blender's
    small UI font) and inverted to dark on light for tesseract."""
    x, y, w, h = box
    crop = out_base + "_ocr.png"
    subprocess.run(["convert", png, "-crop", "%dx%d+%d+%d" % (w, h, x, y), "+repage",
                    "-resize", "%d%%" % scale, "-colorspace", "Gray", "-negate", crop],
                   check=True)
    subprocess.run(["tesseract", crop, out_base, "--psm", "6"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out_base + ".txt") as f:
        return f.read()


@contextlib.contextmanager
def blender_window(session, out, log_name, scene="make_scene.py"):
    """Blender's real window on a fresh Xvfb display, on the scene that
    tests/gui/`scene` saves into `out` in background mode (default: the FBX
    test character, make_scene.py), running tests/gui/`session` with REPO
    BUILD OUT after "--";
    yields (env, blender process). Blender's output goes to SHOTS/log_name;
    Blender and Xvfb are killed at the end."""
    for tool, package in (("Xvfb", "xvfb"), ("xdotool", "xdotool"), ("import", "imagemagick"),
                          ("tesseract", "tesseract-ocr"), ("blender", "blender")):
        need(tool, package)
    os.makedirs(SHOTS, exist_ok=True)
    display = free_display()
    env = dict(os.environ, DISPLAY=":%d" % display,
               BLENDER_USER_CONFIG=os.path.join(BUILD, "blender-user", "config"),
               BLENDER_USER_SCRIPTS=os.path.join(BUILD, "blender-user", "scripts"),
               SSK_BUILD_DIR=BUILD, PYTHONDONTWRITEBYTECODE="1")
    xvfb = subprocess.Popen(["Xvfb", ":%d" % display, "-screen", "0",
                             "%dx%dx24" % SIZE, "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    blender = None
    log = open(os.path.join(SHOTS, log_name), "w")
    try:
        t0 = time.time()
        while not os.path.exists("/tmp/.X11-unix/X%d" % display):
            if time.time() - t0 > 20:
                raise AssertionError("Xvfb did not start")
            time.sleep(0.1)
        subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1",
                        "--python", os.path.join(REPO, "tests", "gui", scene),
                        "--", REPO, BUILD, out], env=env, stdout=log, stderr=subprocess.STDOUT,
                       check=True)
        blender = subprocess.Popen(
            ["blender", "--factory-startup", "-p", "0", "0", str(SIZE[0]), str(SIZE[1]),
             os.path.join(out, "scene.blend"),
             "--python", os.path.join(REPO, "tests", "gui", session),
             "--", REPO, BUILD, out], env=env, stdout=log, stderr=subprocess.STDOUT)
        yield env, blender
    finally:
        if blender is not None and blender.poll() is None:
            blender.kill()
        xvfb.terminate()  # SIGTERM: Xvfb removes its lock and socket
        try:
            xvfb.wait(timeout=10)
        except subprocess.TimeoutExpired:
            xvfb.kill()
        log.close()


def main():
    out = tempfile.mkdtemp(prefix="ssk_gui_")
    with blender_window("blender_session.py", out, "blender.log") as (env, blender):
        wait_for(os.path.join(out, "ready.json"), blender)
        with open(os.path.join(out, "ready.json")) as f:
            ready = json.load(f)
        x, y, w, h = ready["view3d"]
        xdo = ["xdotool"]
        subprocess.run(xdo + ["mousemove", str(x + w // 2), str(y + h // 2)], env=env,
                       check=True)
        time.sleep(0.5)
        for step in range(STEPS):  # scrub: Right arrow = next frame
            subprocess.run(xdo + ["key", "Right"], env=env, check=True)
            # one key at a time: until Blender is at that frame
            wait_until(os.path.join(out, "frames.json"), blender,
                       lambda f: f["frame"] == ready["first"] + step + 1)
        time.sleep(0.3)
        open(os.path.join(out, "keys_sent"), "w").close()
        wait_for(os.path.join(out, "baked.json"), blender)
        time.sleep(1.0)  # a redraw of the panel after the bake
        shot = os.path.join(SHOTS, "after_bake.png")
        subprocess.run(["import", "-window", "root", shot], env=env, check=True)
        text = ocr(shot, ready["properties"], os.path.join(SHOTS, "panel"))
        open(os.path.join(out, "shot_done"), "w").close()
        wait_for(os.path.join(out, "graph.json"), blender)
        with open(os.path.join(out, "graph.json")) as f:
            graph = json.load(f)
        time.sleep(1.0)
        graph_shot = os.path.join(SHOTS, "graph.png")
        subprocess.run(["import", "-window", "root", graph_shot], env=env, check=True)
        x, y, w, h = graph["node"]
        print("graph: node box %s in a region of %s after %s zoom(s)"
              % (graph["node"], graph.get("region"), graph.get("zoom_tries")))
        pad = 8
        graph_text = ocr(graph_shot, (max(0, x - pad), max(0, y - pad), w + 2 * pad,
                                      h + 2 * pad), os.path.join(SHOTS, "graph"), scale=400)
        open(os.path.join(out, "graph_shot_done"), "w").close()
        blender.wait(timeout=60)
        with open(os.path.join(out, "log.json")) as f:
            session = json.load(f)

    failures = []
    if session["errors"]:
        failures.append("session errors: %s" % session["errors"])
    first, last = session["first"], session["last"]
    if session.get("frame_after_keys") != first + STEPS:
        failures.append("the Right-arrow presses left the frame at %s, expected %d"
                        % (session.get("frame_after_keys"), first + STEPS))
    if session.get("last_deformed_frame") != first + STEPS or \
            session.get("deformed_frames", 0) < STEPS:
        failures.append("the handler did not deform the scrubbed frames: %d deformed, last %s"
                        % (session.get("deformed_frames", 0),
                           session.get("last_deformed_frame")))
    progress = session["progress"]
    if len(progress) < 2 or progress != sorted(progress):
        failures.append("the bake's progress was not seen advancing in the window: %s"
                        % progress)
    if session.get("bake_call") != ["RUNNING_MODAL"]:
        failures.append("the bake did not run modally: %s" % session.get("bake_call"))
    path = os.path.join(out, "cache", "character.pc2")
    if not os.path.exists(path):
        failures.append("no cache written")
    else:
        with open(path, "rb") as f:
            samples = struct.unpack_from("<12siiffi", f.read(32))[5]
        if samples != last - first + 1:
            failures.append("the cache has %d frames, expected %d" % (samples,
                                                                      last - first + 1))
    flat = " ".join(text.split())
    for word in PANEL_WORDS:
        if word not in flat:
            failures.append("the panel does not read %r (OCR: %r)" % (word, flat))
    if not session.get("graph_shown"):
        failures.append("a graph editor opened after Edit as Graph did not show the graph")
    if not session.get("graph_follows_active"):
        failures.append("the graph editor did not follow the active object")
    graph_flat = " ".join(graph_text.split())
    for word in GRAPH_WORDS:
        if word not in graph_flat:
            failures.append("the Spring node does not read %r (OCR: %r)" % (word, graph_flat))
    shutil.rmtree(out, ignore_errors=True)
    print("GUI: frame after keys %s, progress samples %s, panel OCR: %s"
          % (session.get("frame_after_keys"), progress, flat))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok: Blender window test (screenshots in %s)" % SHOTS)


if __name__ == "__main__":
    main()
