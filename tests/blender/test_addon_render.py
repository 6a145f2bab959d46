"""A background Cycles (CPU) render uses the same positions as the viewport.

    blender -b --factory-startup --python tests/blender/test_addon_render.py -- REPO [BUILD]

The render runs with its own (render) depsgraph; the addon's handlers must
deform with the pose of the depsgraph they are given. A test handler,
appended after the addon's, checks that the addon read the pose from the
render depsgraph's evaluated armature, evaluates the render depsgraph when
Cycles sets a frame and records the evaluated mesh of the Spring Skin
object and of a reference copy deformed by Blender's Armature modifier.
Checked:

- the render evaluates a frame the viewport is not at (the scene's frame
  is set without evaluating the viewport), and its mesh equals Blender's
  Armature modifier in that same render depsgraph, then the viewport's
  evaluated mesh at that frame;
- with motion blur, Cycles evaluates subframes; each subframe's mesh equals
  the Armature modifier's at that subframe.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_testlib as T  # noqa: E402

PARITY = 1e-4
#: The same deformation read through two depsgraphs: float32 round off only.
SAME = 1e-6

captures = []
names = {}
posed_from = []   # as_pointer() of the evaluated armature each deform read


def record_pose_source():
    """Wrap the addon's pose reader to record which evaluated armature (of
    which depsgraph) it read: the viewport's and the render's are different
    copies. (Output alone cannot tell them apart in background mode, where
    the viewport depsgraph follows the render's frame.)"""
    rig = T.submodule("rig")
    original = getattr(rig.pose_matrices, "__wrapped__", rig.pose_matrices)

    def pose_matrices(arm_eval, rd):
        posed_from.append(arm_eval.as_pointer())
        return original(arm_eval, rd)

    pose_matrices.__wrapped__ = original
    rig.pose_matrices = pose_matrices


def capture(scene, depsgraph):
    if depsgraph is None or depsgraph.mode != "RENDER":
        return
    arm = bpy.data.objects[names["arm"]]
    assert posed_from and posed_from[-1] == arm.evaluated_get(depsgraph).as_pointer(), \
        "the addon read the pose of another depsgraph than the render's"
    depsgraph.update()  # evaluate what the addon's handler just wrote
    ours = T.evaluated(bpy.data.objects[names["mesh"]], depsgraph)
    ref = T.evaluated(bpy.data.objects[names["ref"]], depsgraph)
    captures.append((scene.frame_current, scene.frame_subframe, ours, ref))


def set_up(displace=False):
    mesh, arm, (first, last) = T.fbx_character()
    if displace:  # a Displace above the Armature modifier, in both (issue #37, item 3)
        mod = mesh.modifiers.new("Displace", "DISPLACE")
        mod.strength = 0.02 * T.diagonal(mesh)
        with bpy.context.temp_override(object=mesh, active_object=mesh):
            bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
    ref = T.reference_copy(mesh)
    T.activate(mesh)
    result, err = T.call(bpy.ops.object.springskin_add, method="LBS")
    assert result == {"FINISHED"}, err
    names.update(mesh=mesh.name, ref=ref.name, arm=arm.name)
    record_pose_source()
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 1
    scene.cycles.use_denoising = False
    scene.render.resolution_x = scene.render.resolution_y = 16
    scene.render.resolution_percentage = 100
    camera = next((o for o in bpy.data.objects if o.type == "CAMERA"), None)
    if camera is None:
        camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
        scene.collection.objects.link(camera)
        camera.location = (0, -6, 1)
        camera.rotation_euler = (1.5, 0, 0)
    scene.camera = camera
    return mesh, ref, first, last


def _render():
    captures.clear()
    failures = []

    def check(scene, depsgraph):  # an assertion in a handler would only be printed
        try:
            capture(scene, depsgraph)
        except AssertionError as exc:
            failures.append(str(exc))
    check.__name__ = "capture"
    bpy.app.handlers.frame_change_post.append(check)
    try:
        bpy.ops.render.render(write_still=False)
    finally:
        bpy.app.handlers.frame_change_post.remove(check)
    assert not failures, failures[0]


def test_render_uses_the_render_depsgraph_and_matches_the_viewport():
    mesh, ref, first, last = set_up()
    scene = bpy.context.scene
    diag = T.diagonal(mesh)
    scene.frame_set(first)
    viewport_first = T.evaluated(mesh)
    target = (first + last) // 2
    scene.frame_current = target  # no viewport evaluation at `target`
    _render()
    at_target = [c for c in captures if c[0] == target and c[1] == 0.0]
    assert at_target, "no render-depsgraph evaluation at frame %d: %s" % (
        target, [(c[0], c[1]) for c in captures])
    _, _, rendered, blender = at_target[-1]
    err = np.abs(rendered - blender).max() / diag
    assert err <= PARITY, "render depsgraph vs Blender's modifier: %.3g" % err
    moved = np.abs(rendered - viewport_first).max() / diag
    assert moved > 1e-3, "the render shows the viewport's frame %d, not %d" % (first, target)
    scene.frame_set(target)
    viewport = T.evaluated(mesh)
    err = np.abs(rendered - viewport).max() / diag
    assert err <= SAME, "render vs viewport at frame %d: %.3g of the diagonal" % (target, err)
    print("     frame %d: render = viewport within %.1e, = Armature modifier within %.1e"
          % (target, err, np.abs(rendered - blender).max() / diag))


def test_render_with_a_displace_above():
    """The render depsgraph's first pass evaluates the Displace above Spring
    Skin alone (frame_change_pre holds Spring Skin back), and the rendered
    mesh equals Blender's Armature modifier on the same stack."""
    mesh, ref, first, last = set_up(displace=True)
    scene = bpy.context.scene
    diag = T.diagonal(mesh)
    target = (first + last) // 2
    scene.frame_current = target
    _render()
    at_target = [c for c in captures if c[0] == target and c[1] == 0.0]
    assert at_target, "no render-depsgraph evaluation at frame %d" % target
    _, _, rendered, blender = at_target[-1]
    err = np.abs(rendered - blender).max() / diag
    assert err <= PARITY, "render with a Displace above vs Blender's modifier: %.3g" % err
    flags = [(m.name, m.show_viewport, m.show_render) for m in mesh.modifiers]
    assert ("Spring Skin", True, True) in flags and ("Displace", True, True) in flags, flags


def test_motion_blur_subframes():
    mesh, ref, first, last = set_up()
    scene = bpy.context.scene
    scene.render.use_motion_blur = True
    scene.render.motion_blur_shutter = 1.0
    scene.cycles.motion_blur_position = "CENTER"
    diag = T.diagonal(mesh)
    target = first + 3
    scene.frame_set(target)
    _render()
    sub = [c for c in captures if c[1] != 0.0 or c[0] != target]
    assert sub, "Cycles evaluated no motion step: %s" % [(c[0], c[1]) for c in captures]
    shapes = []
    for frame, subframe, ours, blender in captures:
        err = np.abs(ours - blender).max() / diag
        assert err <= PARITY, "frame %d + %.3f: %.3g" % (frame, subframe, err)
        shapes.append(ours)
    spread = max(np.abs(a - shapes[0]).max() for a in shapes) / diag
    assert spread > 1e-4, "every motion step shows the same mesh"
    print("     motion steps: %s" % ", ".join("%g" % (f + s) for f, s, _, _ in captures))
    scene.render.use_motion_blur = False


def main():
    T.enable_addon()
    runner = T.Runner("test_addon_render")
    runner.run(test_render_uses_the_render_depsgraph_and_matches_the_viewport)
    runner.run(test_render_with_a_displace_above)
    runner.run(test_motion_blur_subframes)
    runner.finish()


main()
