"""blender_cage.py — the cage in the Spring Skin modifier (issue #21) on a
character: what a rigger waits for in Blender.

The character is tests/blender's Rigify body (Rigify's human metarig, a
metaball body, bone-heat weights, keyed poses on frames 1..12; LBS); the
cage is made from it with Blender as tests/blender/test_cage_character.py
makes it (blender_testlib.make_cage: offset, voxel remesh, decimate to
about --cage vertices, offset, triangulate; the offset grows until Bind
Cage accepts it, every bone head inside). Timed, one run, medians:

1. Bind Cage (``object.springskin_bind_cage``: the cage read, checked and
   bound: MVC, SkelUp, CageUp);
2. a rest edit (the belly band of the cage scaled 1.2x horizontally) live:
   ``depsgraph.update()`` after the cage's coordinates were set, which
   reshapes (``Cage.reshape``), remakes the deformer and computes the frame;
   with the addon's own part (reshape + rebuild) printed beside;
3. frames with the edited cage (pose carried by ``Cage.pose``) against the
   same frames without a cage: the handler's time per frame;
4. a pose-time edit (Edit in Pose at frame 8, the copy's band moved):
   ``depsgraph.update()``, which runs CageRev (``Cage.reverse``), writes
   the rest cage and reshapes.

Usage (headless, after `make`):
    blender -b --factory-startup --python bench/blender_cage.py -- \\
        [--cage 200] [--repeats 9] [--build build]
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(prog="blender_cage.py")
    ap.add_argument("--cage", type=int, default=200, help="target cage vertex count")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    return ap.parse_args(argv)


ARGS = parse_args()
# blender_testlib reads REPO and BUILD from the arguments after "--"
sys.argv = [sys.argv[0], "--", os.path.join(HERE, ".."), os.path.abspath(ARGS.build)]
sys.path.insert(0, os.path.join(HERE, "..", "tests", "blender"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_testlib as T  # noqa: E402

VOXEL = 0.04
OFFSETS = (0.06, 0.09, 0.12, 0.15)
BELLY_SCALE = 1.2


def median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def main():
    T.enable_addon()
    runtime, cagemod = T.submodule("runtime"), T.submodule("cage")
    cagemod.UPDATE_INTERVAL = 0.0  # every edit applied (the throttle is not measured)
    body, arm, (first, last) = T.rigify_body()
    T.activate(body)
    assert bpy.ops.object.springskin_add(method="LBS") == {"FINISHED"}
    body.springskin.backend = "CPU"
    scene = bpy.context.scene
    cage = None
    for offset in OFFSETS:
        _, _, me, _ = T.make_cage(body, offset, VOXEL, ARGS.cage)
        cage = bpy.data.objects.new("Cage", me)
        scene.collection.objects.link(cage)
        body.springskin.cage = cage
        T.activate(body)
        t0 = time.perf_counter()
        _, error = T.call(bpy.ops.object.springskin_bind_cage)
        bind_ms = 1e3 * (time.perf_counter() - t0)
        if error is None:
            break
        print("offset %.2f m refused: %s" % (offset, error.splitlines()[-1][:160]))
        bpy.data.objects.remove(cage)
        cage = None
    assert cage is not None, "no offset up to %.2f m gave a cage Bind Cage accepts" % OFFSETS[-1]
    nv, nc = len(body.data.vertices), len(cage.data.vertices)
    depsgraph = bpy.context.evaluated_depsgraph_get()

    frames = list(range(first, last + 1))

    def play():
        for f in frames:
            scene.frame_set(f)

    plain_ms = median_ms(play, ARGS.repeats) / len(frames)

    # the belly band: between the heads of spine and spine.003, inside the shoulders
    rest = T.coords(cage.data).astype(np.float64)
    world = rest @ np.array(cage.matrix_world)[:3, :3].T + np.array(cage.matrix_world)[:3, 3]
    bones = arm.data.bones
    z0 = (arm.matrix_world @ bones["spine"].head_local).z
    z1 = (arm.matrix_world @ bones["spine.003"].head_local).z
    half = abs((arm.matrix_world @ bones["upper_arm.L"].head_local).x)
    band = (world[:, 2] >= z0) & (world[:, 2] <= z1) & (np.abs(world[:, 0]) < half)
    centre = world[band].mean(axis=0)
    edited = rest.copy()
    edited[band, :2] = centre[:2] + BELLY_SCALE * (rest[band, :2] - centre[:2])
    state = runtime.state_of(body)
    toggle = [rest, edited]
    addon_ms = []

    def edit():
        toggle.reverse()
        cage.data.vertices.foreach_set("co", toggle[0].astype(np.float32).ravel())
        cage.data.update()
        depsgraph.update()
        addon_ms.append(state.cage_ms)

    edit_ms = median_ms(edit, ARGS.repeats | 1)  # odd: ends edited
    assert state.cage_edit is not None
    caged_ms = median_ms(play, ARGS.repeats) / len(frames)

    scene.frame_set(8)
    T.activate(body)
    assert bpy.ops.object.springskin_cage_edit_in_pose() == {"FINISHED"}
    copy = cagemod.posed_copy(body)
    posed = T.coords(copy.data).astype(np.float64)
    moved = [posed, posed + np.where(band[:, None], [0.02, 0.0, 0.0], 0.0)]
    pose_ms = []

    def pose_edit():
        moved.reverse()
        copy.data.vertices.foreach_set("co", moved[0].astype(np.float32).ravel())
        copy.data.update()
        t0 = time.perf_counter()
        depsgraph.update()
        pose_ms.append(1e3 * (time.perf_counter() - t0))

    median_ms(pose_edit, ARGS.repeats)
    print()
    print("Rigify body: %d vertices, %d bones; cage %d vertices (%d in the belly band), "
          "LBS, CPU backend, one run, medians of %d" % (nv, len(bones), nc, int(band.sum()),
                                                       ARGS.repeats))
    print()
    print("| step | ms |")
    print("|---|---|")
    print("| Bind Cage (operator) | %.1f |" % bind_ms)
    print("| rest edit live: depsgraph.update() | %.1f |" % edit_ms)
    print("| of which reshape + deformer rebuild | %.1f |" % statistics.median(addon_ms))
    print("| frame without a cage (frame_set) | %.2f |" % plain_ms)
    print("| frame with the edited cage (frame_set) | %.2f |" % caged_ms)
    print("| pose-time edit live (CageRev + reshape): depsgraph.update() | %.1f |"
          % statistics.median(pose_ms))


main()
