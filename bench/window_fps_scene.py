"""Background half of bench/blender_window_fps.py: the walking Rigify body
of bench/blender_body_playback.py (--levels subdivisions, automatic
weights), saved as OUT/scene.blend.

    blender -b --factory-startup --python bench/window_fps_scene.py -- REPO BUILD OUT [LEVELS] [RESOLUTION]
"""

import importlib.util
import os
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
argv = sys.argv[sys.argv.index("--") + 1:]
OUT = os.path.abspath(argv[2])
LEVELS = int(os.environ.get("SSK_FPS_LEVELS", "1"))
RESOLUTION = float(os.environ.get("SSK_FPS_RESOLUTION", "0.013"))
spec = importlib.util.spec_from_file_location("bbp", os.path.join(HERE, "blender_body_playback.py"))
bbp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bbp)
T = bbp.T
body, arm, (first, last) = T.rigify_body(RESOLUTION, keyer=T.key_walk)
bbp.subdivide(body, LEVELS)
scene = bpy.context.scene
scene.frame_start, scene.frame_end = first, last
bpy.ops.wm.save_as_mainfile(filepath=os.path.join(OUT, "scene.blend"))
print("scene saved: %s (%d vertices), %s, frames %d..%d"
      % (body.name, len(body.data.vertices), arm.name, first, last))
