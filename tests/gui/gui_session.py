"""Helpers of the Blender side of the GUI tests (blender_session.py,
weight_paint_session.py): files exchanged with the driver, failure
reporting, and area boxes in X11 coordinates."""

import json
import os
import traceback

import bpy


def helpers(out, log):
    """(write, fail, guarded) for a session writing into directory `out`,
    keeping its log dict `log` (with an "errors" list) in out/log.json."""

    def write(name, data):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, os.path.join(out, name))

    def fail(message):
        log["errors"].append(message)
        write("log.json", log)
        print("GUI SESSION FAILED: " + message, flush=True)
        bpy.ops.wm.quit_blender()

    def guarded(fn):
        def run():
            try:
                return fn()
            except Exception:
                fail(traceback.format_exc())
                return None
        return run

    return write, fail, guarded


def area_box(win, area):
    """(x, y, width, height) of `area` in X11 window coordinates (top-left
    origin; Blender's are bottom-left)."""
    return [area.x, win.height - (area.y + area.height), area.width, area.height]
