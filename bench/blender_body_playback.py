"""blender_body_playback.py — timeline playback of a walking Rigify body at
production density in Blender, the Spring Skin modifier next to Blender's
own Armature modifier on the same mesh in the same session (issue #36's
"the 80k-vertex body plays back with Spring at 10 fps or better", issue
#37's "measure Blender the way a rigger uses it").

The body: blender_testlib.rigify_body (Rigify's human metarig, a metaball
body, automatic weights) with blender_testlib.key_walk (25 frames: a walk,
135-degree knee and elbow bends, a 90-degree torso turn), subdivided
--levels times as bench/cor_bodies.py does (about 20k vertices at the
default resolution, 80k after one subdivision).

Per method (--methods), the Spring Skin modifier is added
(object.springskin_add) and then --rounds times, in turn: Blender's
Armature modifier on the same mesh (Spring Skin disabled, the addon's
handlers removed; Preserve Volume on for DQS, its reference), then Spring
Skin (the Armature modifier disabled, as the addon leaves it). Alternating
in one session cancels the machine's drift (it changes a frame's time by
up to 2x over minutes); the ratio is of the medians over every round.

Each timing is of what a rigger waits for:
- playback: every frame of the walk twice (the first pass untimed), timed
  `scene.frame_set(f)` and the whole evaluated mesh read (`foreach_get`
  of its vertex positions);
- pose edit: at frame 10, three bones (POSE_BONES) rotated a little more
  each time, `view_layer.update()` and the evaluated mesh read, 25 times
  (the second of two passes).
Spring rows also give the frames whose springs did not converge.

Usage (headless, after `make`):
    blender -b --factory-startup --python bench/blender_body_playback.py -- \\
        [--resolution 0.013] [--levels 1] [--methods spring,lbs] [--rounds 3]
        [--build build] [--export BODY.fbx]

About 10k vertices: --resolution 0.018 --levels 0; 80k: the defaults.

Prints one Markdown table.
"""

import argparse
import os
import sys
import time

import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "blender"))
_argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
_build = _argv[_argv.index("--build") + 1] if "--build" in _argv else os.path.join(HERE, "..",
                                                                                  "build")
sys.argv = [sys.argv[0], "--", os.path.join(HERE, ".."), _build]
import blender_testlib as T  # noqa: E402


def subdivide(body, levels):
    """As bench/cor_bodies.py: the metaball's slivers dissolved first (the
    binding refuses triangles of area 0), then each level split by
    Blender's beauty rule and dissolved again."""
    T.activate(body)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="SELECT")
    bpy.ops.mesh.remove_doubles(threshold=1e-5)
    bpy.ops.mesh.dissolve_degenerate(threshold=1e-4)
    bpy.ops.object.mode_set(mode="OBJECT")
    for _ in range(levels):
        T.activate(body)
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.select_all(action="SELECT")
        bpy.ops.mesh.subdivide(number_cuts=1)  # weights interpolated
        bpy.ops.mesh.quads_convert_to_tris(quad_method="BEAUTY")
        bpy.ops.mesh.dissolve_degenerate(threshold=1e-6)
        bpy.ops.object.mode_set(mode="OBJECT")


def _read(body, out):
    body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices.foreach_get(
        "co", out)


def play(body, frames):
    """ms per frame of frame_set + the evaluated mesh read, per frame (the
    second pass over `frames`)."""
    scene = bpy.context.scene
    out = np.empty(3 * len(body.data.vertices), dtype=np.float32)
    times = []
    for timed in (False, True):
        for f in frames:
            t = time.perf_counter()
            scene.frame_set(f)
            _read(body, out)
            dt = time.perf_counter() - t
            if timed:
                times.append(dt * 1e3)
    return np.array(times)


#: The pose-change path: bones a rigger grabs at one frame (rotations on top
#: of the walk's keys, which stay until the frame changes).
POSE_BONES = ("forearm.L", "shin.R", "spine.002")


def pose_edits(body, arm, count=25):
    """ms per pose edit (POSE_BONES rotated, view_layer.update, the
    evaluated mesh read) at the current frame; the second of two passes."""
    out = np.empty(3 * len(body.data.vertices), dtype=np.float32)
    bones = [arm.pose.bones[n] for n in POSE_BONES]
    rest = [tuple(pb.rotation_euler) for pb in bones]
    times = []
    for timed in (False, True):
        for i in range(count):
            t = time.perf_counter()
            for j, pb in enumerate(bones):
                pb.rotation_euler[j % 3] = rest[j][j % 3] + 0.02 * (i + 1)
            bpy.context.view_layer.update()
            _read(body, out)
            dt = time.perf_counter() - t
            if timed:
                times.append(dt * 1e3)
    for pb, r in zip(bones, rest):
        pb.rotation_euler = r
    bpy.context.view_layer.update()
    return np.array(times)


def use_armature(body, arm, on, preserve=False):
    """Switch the body between Blender's Armature modifier (`on`; Preserve
    Volume: `preserve`) and the Spring Skin modifier, and the addon's
    handlers with it (removed while the Armature modifier is timed)."""
    runtime = T.submodule("runtime")
    armature = body.modifiers[body.springskin.armature_modifier]
    spring = runtime.has_spring_skin(body)
    if on:
        runtime._remove_handlers()
        spring.show_viewport = False
        armature.object = arm  # rebuilds the depsgraph relations
        armature.use_deform_preserve_volume = preserve
        armature.show_viewport = True
    else:
        armature.show_viewport = False
        armature.object = None
        armature.use_deform_preserve_volume = False
        spring.show_viewport = True
        runtime.register()


def main():
    ap = argparse.ArgumentParser(prog="blender_body_playback.py")
    ap.add_argument("--resolution", type=float, default=0.013)
    ap.add_argument("--levels", type=int, default=1)
    ap.add_argument("--methods", default="spring,lbs")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternations of the Armature modifier and Spring Skin per method")
    ap.add_argument("--build", default=_build)
    ap.add_argument("--export", default="",
                    help="also write the body to this FBX (bench/spring_bodies.py reads it)")
    args = ap.parse_args(_argv)
    T.enable_addon()
    runtime = T.submodule("runtime")
    body, arm, (first, last) = T.rigify_body(args.resolution, keyer=T.key_walk)
    subdivide(body, args.levels)
    frames = list(range(first, last + 1))
    nv = len(body.data.vertices)
    if args.export:
        for o in bpy.context.view_layer.objects:
            o.select_set(o in (body, arm))
        bpy.ops.export_scene.fbx(filepath=args.export, use_selection=True)
    rows = []
    for method in args.methods.split(","):
        T.activate(body)
        assert bpy.ops.object.springskin_add(method=method.upper()) == {"FINISHED"}
        preserve = method.lower() == "dqs"
        ref, ours, ref_pose, ours_pose = [], [], [], []
        for _ in range(args.rounds):
            use_armature(body, arm, True, preserve)
            ref.append(play(body, frames))
            bpy.context.scene.frame_set(10)
            ref_pose.append(pose_edits(body, arm))
            use_armature(body, arm, False)
            ours.append(play(body, frames))
            bpy.context.scene.frame_set(10)
            ours_pose.append(pose_edits(body, arm))
        state = runtime.state_of(body)
        unconverged = sorted(state.unconverged) if state is not None else []
        # each round's ratio of medians (the two runs of a round are next to
        # each other in time), then their spread over the rounds
        per_round = sorted(np.median(o) / np.median(r) for r, o in zip(ref, ours))
        rows.append((method, state.backend if state else "?", preserve,
                     np.concatenate(ref), np.concatenate(ours),
                     np.concatenate(ref_pose), np.concatenate(ours_pose), unconverged,
                     per_round))
        T.activate(body)
        assert bpy.ops.object.springskin_remove() == {"FINISHED"}
        armature = next(m for m in body.modifiers if m.type == "ARMATURE")
        armature.show_viewport = armature.show_render = True
    print("\nbody: %d vertices, frames %d..%d, Blender %s, %d threads, %d rounds\n"
          % (nv, first, last, bpy.app.version_string, os.cpu_count(), args.rounds))
    print("| method | Armature modifier ms (median) | Spring Skin ms (median) | x Armature "
          "| x per round (min / median / max) "
          "| fps Armature / Spring Skin | pose edit ms Armature / Spring Skin (x) "
          "| springs not converged |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for method, backend, preserve, ref, ours, ref_pose, ours_pose, unconverged, per_round \
            in rows:
        print("| %s (%s)%s | %.2f | %.2f | %.2f | %.2f / %.2f / %.2f | %.0f / %.0f "
              "| %.2f / %.2f (%.2f) | %s |"
              % (method, backend, ", vs Preserve Volume" if preserve else "",
                 np.median(ref), np.median(ours), np.median(ours) / np.median(ref),
                 per_round[0], float(np.median(per_round)), per_round[-1],
                 1e3 / ref.mean(), 1e3 / ours.mean(),
                 np.median(ref_pose), np.median(ours_pose),
                 np.median(ours_pose) / np.median(ref_pose),
                 "-" if method.lower() != "spring" else
                 ("%d of %d: %s" % (len(unconverged), len(frames),
                                    ", ".join("%g" % f for f in unconverged))
                  if unconverged else "0 of %d" % len(frames))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
