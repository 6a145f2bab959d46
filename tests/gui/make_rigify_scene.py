"""Background half of tests/gui/test_sketch_window.py: Rigify's human
metarig with a metaball body and automatic weights
(blender_testlib.rigify_body, no animation), saved as OUT/scene.blend.

    blender -b --factory-startup --python tests/gui/make_rigify_scene.py -- REPO BUILD OUT
"""

import os
import sys

import bpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender"))
import blender_testlib as T  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])
body, arm, (first, last) = T.rigify_body(keyer=lambda _arm: (1, 10))
bpy.ops.wm.save_as_mainfile(filepath=os.path.join(OUT, "scene.blend"))
print("scene saved: %s, %s, frames %d..%d" % (body.name, arm.name, first, last))
