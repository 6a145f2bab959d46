"""blender_window_fps.py — timeline playback in Blender's real window
(Xvfb, the viewport drawn by Mesa llvmpipe), Spring Skin against Blender's
Armature modifier on the same walking Rigify body in the same session
(issue #37's "the same in the real window under Xvfb (frames per second
over a played range)").

The body: bench/window_fps_scene.py (blender_body_playback.py's, 80k
vertices by default). The session (bench/window_fps_session.py) plays the
walk with "Play Every Frame" for SSK_FPS_SECONDS (4) per run, alternating
the Armature modifier (the addon's handlers removed; Preserve Volume for
DQS) and Spring Skin, SSK_FPS_ROUNDS (3) times per method, and counts
frame changes per second. The viewport's drawing is in every frame of both
(the same mesh), so the ratio is smaller than bench/blender_body_playback.py's.

    /usr/bin/python3 bench/blender_window_fps.py [REPO] [BUILD]
    SSK_FPS_LEVELS=0 SSK_FPS_RESOLUTION=0.018 ... (about 10k vertices)

Prints one Markdown table (medians over the rounds).
"""

import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.argv = [sys.argv[0], sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, ".."),
            sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "build")]
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gui"))
import test_blender_window as W  # noqa: E402


def main():
    out = tempfile.mkdtemp(prefix="ssk_fps_")
    with W.blender_window("../../bench/window_fps_session.py", out, "window_fps.log",
                          scene="../../bench/window_fps_scene.py") as (_env, blender):
        blender.wait(timeout=1200)
    with open(os.path.join(out, "log.json")) as f:
        log = json.load(f)
    if log["errors"]:
        sys.exit("session errors: %s" % log["errors"])
    print("\nbody: %d vertices, window %s, Xvfb + llvmpipe\n" % (log["vertices"], log["window"]))
    print("| method | Armature modifier fps | Spring Skin fps | Spring Skin / Armature |")
    print("|---|---:|---:|---:|")
    for method in dict.fromkeys(r["method"] for r in log["rows"]):
        ref = statistics.median(r["fps"] for r in log["rows"]
                                if r["method"] == method and r["armature"])
        ours = statistics.median(r["fps"] for r in log["rows"]
                                 if r["method"] == method and not r["armature"])
        print("| %s%s | %.1f | %.1f | %.2f |" % (method, " (vs Preserve Volume)"
                                                 if method == "dqs" else "", ref, ours,
                                                 ours / ref if ref else 0.0))


if __name__ == "__main__":
    main()
