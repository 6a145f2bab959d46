"""Background half of tests/gui/test_blender_window.py: the FBX test
character imported by Blender's FBX importer, saved as OUT/scene.blend.

    blender -b --factory-startup --python tests/gui/make_scene.py -- REPO BUILD OUT
"""

import os
import sys

import bpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blender"))
import blender_testlib as T  # noqa: E402

OUT = os.path.abspath(sys.argv[sys.argv.index("--") + 3])
mesh, arm, (first, last) = T.fbx_character()
bpy.ops.wm.save_as_mainfile(filepath=os.path.join(OUT, "scene.blend"))
print("scene saved: %s, %s, frames %d..%d" % (mesh.name, arm.name, first, last))
