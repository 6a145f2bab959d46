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

For each configuration, every frame of the walk twice (the first pass
untimed: binding, caches), then timed: `scene.frame_set(f)` and the whole
evaluated mesh read (`foreach_get` of its vertex positions), which is what
playback costs a rigger. Configurations: the Armature modifier alone; the
Spring Skin modifier (object.springskin_add) with each --methods entry
(the Armature modifier it takes over disabled). Spring rows also give the
passes per frame and the frames whose springs did not converge.

Usage (headless, after `make`):
    blender -b --factory-startup --python bench/blender_body_playback.py -- \\
        [--resolution 0.013] [--levels 1] [--methods spring,lbs] [--build build]
        [--export BODY.fbx]

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


def play(body, frames):
    """ms per frame of frame_set + the evaluated mesh read, per frame (the
    second pass over `frames`)."""
    scene = bpy.context.scene
    n = len(body.data.vertices)
    out = np.empty(3 * n, dtype=np.float32)
    times = []
    for timed in (False, True):
        for f in frames:
            t = time.perf_counter()
            scene.frame_set(f)
            ev = body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
            ev.vertices.foreach_get("co", out)
            dt = time.perf_counter() - t
            if timed:
                times.append(dt * 1e3)
    return np.array(times)


def main():
    ap = argparse.ArgumentParser(prog="blender_body_playback.py")
    ap.add_argument("--resolution", type=float, default=0.013)
    ap.add_argument("--levels", type=int, default=1)
    ap.add_argument("--methods", default="spring,lbs")
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
    armature = next(m for m in body.modifiers if m.type == "ARMATURE")
    times = play(body, frames)
    rows.append(("Armature modifier", times, None))
    base = float(np.mean(times))
    for method in args.methods.split(","):
        T.activate(body)
        assert bpy.ops.object.springskin_add(method=method.upper()) == {"FINISHED"}
        times = play(body, frames)
        state = runtime.state_of(body)
        unconverged = sorted(state.unconverged) if state is not None else []
        rows.append(("Spring Skin, %s (%s)" % (method, state.backend if state else "?"), times,
                     unconverged))
        T.activate(body)
        assert bpy.ops.object.springskin_remove() == {"FINISHED"}
        armature = next(m for m in body.modifiers if m.type == "ARMATURE")
        armature.show_viewport = armature.show_render = True
    print("\nbody: %d vertices, frames %d..%d, Blender %s, %d threads\n"
          % (nv, first, last, bpy.app.version_string, os.cpu_count()))
    print("| modifier | ms/frame mean / median / max | fps | x Armature | springs not converged |")
    print("|---|---:|---:|---:|---|")
    for name, t, unconverged in rows:
        print("| %s | %.1f / %.1f / %.1f | %.1f | %.2f | %s |"
              % (name, t.mean(), np.median(t), t.max(), 1e3 / t.mean(), t.mean() / base,
                 "-" if unconverged is None else
                 ("%d of %d: %s" % (len(unconverged), len(frames),
                                    ", ".join("%g" % f for f in unconverged))
                  if unconverged else "0 of %d" % len(frames))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
