"""blender_spring_skin.py — per-frame time of the Spring Skin modifier in Blender
next to Blender's own Armature modifier, on the same mesh and poses.

The mesh, weights, armature and poses are those of bench/blender_armature.py
(the generated limb of bench_skinning.c: a tube of 64 vertices per ring,
8 bones, 4 influences per vertex), imported from that script. For each
method (LBS = Preserve Volume off, DQS = on):

1. Blender's Armature modifier alone (as blender_armature.py measures it);
2. the Spring Skin modifier of the addon (object.springskin_add with that
   method; the Armature modifier it takes over is disabled): the whole
   integration per frame, which is what a rigger waits for:

       change the pose (untimed), then time
       depsgraph.update()   # armature evaluation; the addon's
                            # depsgraph_update_post handler reads the pose,
                            # deforms with the core, writes the object's
                            # one-frame .pc2 and tags the object; Blender's
                            # second pass re-runs its modifier stack (the
                            # Mesh Cache modifier reads the file)
       + reading one evaluated vertex

   and, inside it, the addon's handler (pose read + deform + file write)
   and the core's deform alone.

Before timing, an LBS or DQS result is checked against Blender's Armature
modifier on one pose (within 1e-4 of the bounding-box diagonal); the other
methods (e.g. --methods spring) are timed the same way, their distance
from LBS printed.

Usage (headless, after `make`):
    blender -b --factory-startup --python bench/blender_spring_skin.py -- \\
        [--size 100000] [--repeats 101] [--methods lbs,dqs] [--backend cpu]
        [--threads N] [--spin MICROSECONDS]
        [--build build]

Prints one Markdown table. Uses bpy, numpy and the staged addon in
<build>/addon (made by `make`).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time

import addon_utils
import bpy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PARITY = 1e-4


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(prog="blender_spring_skin.py")
    ap.add_argument("--size", type=int, default=100000,
                    help="target vertex count (64*floor(N/64) are generated)")
    ap.add_argument("--repeats", type=int, default=101, help="timed frames per mode")
    ap.add_argument("--methods", default="lbs,dqs")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "gl", "auto"))
    ap.add_argument("--threads", type=int, default=None,
                    help="springskin.configure_threads(threads=...) first (default: as is)")
    ap.add_argument("--spin", type=int, default=None,
                    help="springskin.configure_threads(spin_microseconds=...) first "
                         "(default: as is, 50)")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"),
                    help="CMake build directory holding addon/springskin_blender")
    return ap.parse_args(argv)


def load_armature_bench():
    spec = importlib.util.spec_from_file_location("blender_armature",
                                                  os.path.join(HERE, "blender_armature.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the helpers; main() runs only as a script
    return module


def evaluated_coords(ob):
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    me = ob.evaluated_get(depsgraph).data
    co = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def time_spring_skin(ob, arm_ob, bench, state_of, repeats):
    """Per-frame seconds of the whole integration, and the addon's handler and
    deform milliseconds per frame."""
    probe = len(ob.data.vertices) - 1
    bench.set_pose(arm_ob, 0.0)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    prev = tuple(ob.evaluated_get(depsgraph).data.vertices[probe].co)
    total, handler, deform = [], [], []
    for r in range(repeats):
        bench.set_pose(arm_ob, bench.PHASE_STEP * (r + 1))
        frames_before = state_of(ob).frames
        t0 = time.perf_counter()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        depsgraph.update()
        co = tuple(ob.evaluated_get(depsgraph).data.vertices[probe].co)
        total.append(time.perf_counter() - t0)
        state = state_of(ob)
        if state.frames != frames_before + 1:
            raise RuntimeError("frame %d: the handler did not deform exactly once (%d)"
                               % (r, state.frames - frames_before))
        handler.append(state.last_ms)
        deform.append(state.deform_ms)
        if max(abs(a - b) for a, b in zip(co, prev)) <= bench.MOVED_EPSILON:
            raise RuntimeError("frame %d: the evaluated mesh did not change" % r)
        prev = co
    return total, handler, deform


def main():
    args = parse_args()
    bench = load_armature_bench()
    addon_parent = os.path.abspath(os.path.join(args.build, "addon"))
    if not os.path.isfile(os.path.join(addon_parent, "springskin_blender", "__init__.py")):
        raise SystemExit("no staged addon in %s: run `make` first" % addon_parent)
    sys.path.insert(0, addon_parent)
    addon_utils.enable("springskin_blender", default_set=True)
    runtime = sys.modules["springskin_blender.runtime"]
    ssk = sys.modules["springskin_blender.native"].require()
    threads, spin = ssk.configure_threads(args.threads, args.spin)
    print("core threading: %d threads, idle spin %d us" % (threads, spin), flush=True)
    print("Blender %s, Python %s, numpy %s, %d CPUs"
          % (bpy.app.version_string, sys.version.split()[0], np.__version__, os.cpu_count()),
          flush=True)

    pos, tri, idx, wts = bench.make_limb(args.size)
    rows = []
    for method in [m.strip().lower() for m in args.methods.split(",") if m.strip()]:
        bench.clear_scene()
        for ng in list(bpy.data.node_groups):
            bpy.data.node_groups.remove(ng)
        arm_ob = bench.build_armature()
        ob, mod, _ = bench.build_mesh(pos, tri, idx, wts, arm_ob)
        ob.parent = arm_ob
        preserve = method == "dqs"  # the reference of the other methods: LBS
        # 1. Blender's Armature modifier alone
        blender = bench.time_mode(ob, mod, arm_ob, pos, preserve, args.repeats)
        check_phase = 0.7
        bench.set_pose(arm_ob, check_phase)
        reference = evaluated_coords(ob)
        # 2. the Spring Skin modifier
        bpy.context.view_layer.objects.active = ob
        ob.select_set(True)
        t0 = time.perf_counter()
        result = bpy.ops.object.springskin_add(method=method.upper())
        add_seconds = time.perf_counter() - t0
        assert result == {"FINISHED"}, result
        ob.springskin.backend = args.backend.upper()
        ours = evaluated_coords(ob)
        diag = float(np.linalg.norm(pos.max(axis=0) - pos.min(axis=0)))
        err = float(np.abs(ours - reference).max()) / diag
        state = runtime.state_of(ob)
        print("%s: %d vertices; Add Spring Skin (read weights, bind, first frame) %.2f s; "
              "backend %s (%s); |Spring Skin - Armature modifier| = %.1e of the diagonal"
              % (method.upper(), len(pos), add_seconds, state.backend, state.device_name, err),
              flush=True)
        # LBS and DQS must equal Blender's modifier; the other methods are
        # other deformers (the column is their distance from LBS/DQS)
        if method in ("lbs", "dqs") and err > PARITY:
            raise RuntimeError("the Spring Skin result differs from Blender's by %.3g" % err)
        total, handler, deform = time_spring_skin(ob, arm_ob, bench, runtime.state_of,
                                                  args.repeats)
        rows.append((len(pos), method, statistics.median(blender), statistics.median(total),
                     statistics.median(handler), statistics.median(deform), state.device_name))

    print()
    print("| vertices | method | Blender Armature modifier ms/frame | Spring Skin modifier "
          "ms/frame | of which: addon handler ms | of which: core deform ms | "
          "rest (armature, modifier stack with the Mesh Cache read) ms | device |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for nv, method, blender, total, handler, deform, device in rows:
        print("| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |"
              % (nv, method.upper(), 1e3 * blender, 1e3 * total, handler, deform,
                 1e3 * total - handler, device))
    print("(medians of %d frames; each frame: pose change untimed, then depsgraph.update() "
          "and one evaluated vertex read)" % args.repeats)
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)   # Blender would otherwise exit 0 after a failing --python script
