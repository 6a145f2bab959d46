"""blender_armature.py — per-frame time of Blender's own Armature modifier.

Builds, inside Blender, the same generated limb that bench/bench_skinning.c
uses (a tube of 64 segments per ring, floor(N/64) rings, length 8, radius 0.5,
a chain of 8 connected bones along +Y, 4 influences per vertex = the 4 nearest
bone centers with weights 1/(0.05 + d^4) normalized), poses it with the same
bend/twist pose as bench_skinning.c, and times the Armature modifier with
Preserve Volume off (linear blend skinning, "lbs") and on (dual quaternion
skinning, "dqs").

Each timed frame: change the pose (untimed), then time
    depsgraph = bpy.context.evaluated_depsgraph_get(); depsgraph.update()
plus obtaining the evaluated object and reading one evaluated vertex. The
script checks that the evaluated mesh really changes every frame, and, before
timing, that Blender's evaluated LBS result matches a numpy reference of the
bench's skinning matrices (so both programs deform the same mesh the same way).

Usage (headless):
    blender -b --factory-startup --python bench/blender_armature.py -- \
        --sizes 10000,100000,1000000 [--repeats N] [--ours build/bench/bench_skinning]

Prints a Markdown table (vertices | method | Blender Armature ms/frame |
M vertices/s); with --ours it also runs that bench_skinning binary with the
same sizes and prints a combined table with the speed-up of SpringSkin.
Setup time (mesh, vertex groups, armature) is reported but not measured.
Uses only modules bundled with Blender (bpy, numpy, standard library).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import bpy
import numpy as np

SEGMENTS = 64
BONES = 8
INFLUENCES = 4
LENGTH = 8.0
RADIUS = 0.5
BONE_LENGTH = LENGTH / BONES
WEIGHT_BIAS = 0.05           # weight = 1 / (WEIGHT_BIAS + d^4), as in bench_skinning.c
PHASE_STEP = 0.1             # phase of frame r = PHASE_STEP * r, as in bench_skinning.c
BEND_AMPLITUDE = 0.3
TWIST_AMPLITUDE = 0.4
REFERENCE_TOLERANCE = 1e-3   # max |Blender LBS - numpy LBS| allowed, in mesh units
MOVED_EPSILON = 1e-6         # a probe vertex must move more than this between frames


def parse_args():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(prog="blender_armature.py")
    ap.add_argument("--sizes", default="10000,100000,1000000",
                    help="comma-separated target vertex counts (64*floor(N/64) are generated)")
    ap.add_argument("--repeats", type=int, default=0,
                    help="timed frames per size and mode (default: as bench_skinning.c)")
    ap.add_argument("--ours", default=None,
                    help="path of the bench_skinning binary to compare with")
    args = ap.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    return args


def default_repeats(nv):
    return 31 if nv >= 1000000 else 101 if nv >= 100000 else 301


# --------------------------------------------------------------------------
# Limb geometry and weights (numpy port of make_limb in bench_skinning.c)
# --------------------------------------------------------------------------

def make_limb(target):
    """Returns (positions (nv,3) f32, triangles (nf,3) i32,
    bone indices (nv,4) i32, weights (nv,4) f32), computed in float32 the
    way bench_skinning.c does."""
    rings = target // SEGMENTS
    if rings < 2:
        raise ValueError("size %d gives fewer than 2 rings" % target)
    nv = rings * SEGMENTS
    f32 = np.float32
    r = np.arange(rings)
    y = f32(LENGTH) * r.astype(f32) / f32(rings - 1)                   # (rings,)
    a = 2 * np.pi * np.arange(SEGMENTS) / SEGMENTS                     # float64 as in C
    pos = np.empty((rings, SEGMENTS, 3), dtype=f32)
    pos[:, :, 0] = (RADIUS * np.cos(a)).astype(f32)[None, :]
    pos[:, :, 1] = y[:, None]
    pos[:, :, 2] = (RADIUS * np.sin(a)).astype(f32)[None, :]

    bl = f32(BONE_LENGTH)
    nearest = np.floor(y / bl).astype(np.int64)
    nearest = np.minimum(nearest, BONES - 1)
    first = np.maximum(nearest - 1, 0)
    first = np.where(first + INFLUENCES > BONES, BONES - INFLUENCES, first)
    ring_idx = first[:, None] + np.arange(INFLUENCES)[None, :]          # (rings,4)
    center = bl * (ring_idx.astype(f32) + f32(0.5))
    d = np.abs(y[:, None] - center) / bl
    w = f32(1.0) / (f32(WEIGHT_BIAS) + d * d * d * d)
    # the C code sums sequentially in float; do the same
    s = w[:, 0].copy()
    for i in range(1, INFLUENCES):
        s = s + w[:, i]
    w = (w / s[:, None]).astype(f32)

    idx = np.repeat(ring_idx.astype(np.int32), SEGMENTS, axis=0)        # (nv,4)
    wts = np.repeat(w, SEGMENTS, axis=0)

    rr = np.arange(rings - 1)[:, None]
    ss = np.arange(SEGMENTS)[None, :]
    va = (rr * SEGMENTS + ss)
    vb = (rr * SEGMENTS + (ss + 1) % SEGMENTS)
    vc = va + SEGMENTS
    vd = vb + SEGMENTS
    tri = np.empty((rings - 1, SEGMENTS, 2, 3), dtype=np.int32)
    tri[:, :, 0, 0], tri[:, :, 0, 1], tri[:, :, 0, 2] = va, vc, vb
    tri[:, :, 1, 0], tri[:, :, 1, 1], tri[:, :, 1, 2] = vb, vc, vd
    return pos.reshape(nv, 3), tri.reshape(-1, 3), idx, wts


# --------------------------------------------------------------------------
# Pose (numpy port of pose() in bench_skinning.c) and reference skinning
# --------------------------------------------------------------------------

def pose_angles(phase):
    """(bend about Z, twist about Y) of every joint for `phase`."""
    b = np.arange(BONES)
    return BEND_AMPLITUDE * np.sin(phase + b), TWIST_AMPLITUDE * np.cos(phase + 0.5 * b)


def _rot(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    r = np.eye(3)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def skin_matrices(phase):
    """(BONES,4,4) skinning matrices, as bench_skinning.c's pose()."""
    bend, twist = pose_angles(phase)
    out = np.empty((BONES, 4, 4))
    for b in range(BONES):
        head = np.array([0.0, BONE_LENGTH * b, 0.0])
        r = _rot(2, bend[b]) @ _rot(1, twist[b])
        local = np.eye(4)
        local[:3, :3] = r
        local[:3, 3] = head - r @ head
        out[b] = local if b == 0 else out[b - 1] @ local
    return out


def reference_lbs(pos, idx, wts, skin):
    p = pos.astype(np.float64)
    out = np.zeros_like(p)
    for i in range(INFLUENCES):
        m = skin[idx[:, i]]                                   # (nv,4,4)
        q = np.einsum("nij,nj->ni", m[:, :3, :3], p) + m[:, :3, 3]
        out += wts[:, i:i + 1] * q
    return out


def _quat_from_matrix(r):
    """Unit quaternion (w,x,y,z) of a rotation matrix (w >= 0 branch is enough
    for the moderate rotations of this pose, checked by the assert)."""
    w = np.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    assert w > 0.1
    return np.array([w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w),
                     (r[1, 0] - r[0, 1]) / (4 * w)])


def _qmul(a, b):
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def reference_dqs(pos, idx, wts, skin):
    """Dual-quaternion skinning (Kavan et al.) with hemisphere alignment to
    the first influence; used only to report how close Preserve Volume is."""
    q0 = np.array([_quat_from_matrix(m[:3, :3]) for m in skin])         # (B,4)
    t = np.concatenate([np.zeros((BONES, 1)), skin[:, :3, 3]], axis=1)
    qe = 0.5 * _qmul(t, q0)
    ref = q0[idx[:, 0]]
    b0 = np.zeros((len(pos), 4))
    be = np.zeros((len(pos), 4))
    for i in range(INFLUENCES):
        sgn = np.sign(np.sum(q0[idx[:, i]] * ref, axis=1))
        sgn[sgn == 0] = 1
        b0 += (wts[:, i] * sgn)[:, None] * q0[idx[:, i]]
        be += (wts[:, i] * sgn)[:, None] * qe[idx[:, i]]
    n = np.linalg.norm(b0, axis=1)[:, None]
    b0 /= n
    be /= n
    conj = b0 * np.array([1, -1, -1, -1])
    trans = 2 * _qmul(be, conj)[:, 1:]
    p = np.concatenate([np.zeros((len(pos), 1)), pos.astype(np.float64)], axis=1)
    rotated = _qmul(_qmul(b0, p), conj)[:, 1:]
    return rotated + trans


# --------------------------------------------------------------------------
# Blender scene
# --------------------------------------------------------------------------

def clear_scene():
    for ob in list(bpy.data.objects):
        bpy.data.objects.remove(ob, do_unlink=True)
    for coll in (bpy.data.meshes, bpy.data.armatures):
        for block in list(coll):
            coll.remove(block)


def build_armature():
    arm = bpy.data.armatures.new("LimbArmature")
    arm_ob = bpy.data.objects.new("LimbArmature", arm)
    bpy.context.scene.collection.objects.link(arm_ob)
    bpy.context.view_layer.objects.active = arm_ob
    arm_ob.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    prev = None
    for b in range(BONES):
        eb = arm.edit_bones.new("bone%d" % b)
        eb.head = (0.0, BONE_LENGTH * b, 0.0)
        eb.tail = (0.0, BONE_LENGTH * (b + 1), 0.0)
        eb.roll = 0.0
        if prev is not None:
            eb.parent = prev
            eb.use_connect = True
        prev = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in arm_ob.pose.bones:
        pb.rotation_mode = "XYZ"   # matrix = Rz * Ry * Rx, i.e. bend(Z) · twist(Y)
    return arm_ob


def build_mesh(pos, tri, idx, wts, arm_ob):
    """Returns (mesh object, dict of setup timings in seconds)."""
    timings = {}
    t0 = time.perf_counter()
    me = bpy.data.meshes.new("limb")
    nv, nf = len(pos), len(tri)
    me.vertices.add(nv)
    me.vertices.foreach_set("co", pos.ravel())
    me.loops.add(3 * nf)
    me.loops.foreach_set("vertex_index", tri.ravel())
    me.polygons.add(nf)
    me.polygons.foreach_set("loop_start", np.arange(0, 3 * nf, 3, dtype=np.int32))
    me.polygons.foreach_set("loop_total", np.full(nf, 3, dtype=np.int32))
    me.update(calc_edges=True)
    ob = bpy.data.objects.new("limb", me)
    bpy.context.scene.collection.objects.link(ob)
    timings["mesh"] = time.perf_counter() - t0

    # Vertex groups: VertexGroup.add takes one weight per call, so group the
    # (bone, weight) pairs by identical weight. Weights depend only on the
    # ring, so this is at most one call per (bone, ring): 64 vertices a call.
    t0 = time.perf_counter()
    groups = [ob.vertex_groups.new(name="bone%d" % b) for b in range(BONES)]
    bone = idx.ravel()
    weight = wts.ravel()
    vert = np.repeat(np.arange(nv, dtype=np.int64), INFLUENCES)
    calls = 0
    for b in range(BONES):
        sel = bone == b
        vb, wb = vert[sel], weight[sel]
        if len(vb) == 0:
            continue
        uniq, inverse = np.unique(wb, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        splits = np.cumsum(np.bincount(inverse, minlength=len(uniq)))[:-1]
        for u, chunk in zip(uniq.tolist(), np.split(vb[order], splits)):
            groups[b].add(chunk.tolist(), u, "REPLACE")
            calls += 1
    timings["vertex groups"] = time.perf_counter() - t0
    timings["vertex group add() calls"] = calls

    mod = ob.modifiers.new("Armature", "ARMATURE")
    mod.object = arm_ob
    mod.use_vertex_groups = True
    mod.use_bone_envelopes = False
    mod.use_deform_preserve_volume = False
    return ob, mod, timings


def set_pose(arm_ob, phase):
    bend, twist = pose_angles(phase)
    for b, pb in enumerate(arm_ob.pose.bones):
        pb.rotation_euler = (0.0, float(twist[b]), float(bend[b]))


def evaluated_coords(ob):
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    me = ob.evaluated_get(dg).data
    co = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def time_mode(ob, mod, arm_ob, pos, preserve_volume, repeats):
    """Returns the list of per-frame seconds; raises if a frame did not
    re-evaluate the mesh."""
    mod.use_deform_preserve_volume = preserve_volume
    probe = len(pos) - 1                 # a vertex at the far end of the chain
    rest = tuple(float(c) for c in pos[probe])
    set_pose(arm_ob, 0.0)
    dg = bpy.context.evaluated_depsgraph_get()   # warm-up frame, untimed
    dg.update()
    prev = tuple(ob.evaluated_get(dg).data.vertices[probe].co)
    times = []
    for r in range(repeats):
        set_pose(arm_ob, PHASE_STEP * (r + 1))   # +1: every frame differs from warm-up
        t0 = time.perf_counter()
        dg = bpy.context.evaluated_depsgraph_get()
        dg.update()
        ob_eval = ob.evaluated_get(dg)
        co = tuple(ob_eval.data.vertices[probe].co)
        times.append(time.perf_counter() - t0)
        moved = max(abs(a - b) for a, b in zip(co, prev))
        off_rest = max(abs(a - b) for a, b in zip(co, rest))
        if moved <= MOVED_EPSILON or off_rest <= MOVED_EPSILON:
            raise RuntimeError("frame %d: evaluated mesh did not change (moved %g, off rest %g)"
                               % (r, moved, off_rest))
        prev = co
    return times


# --------------------------------------------------------------------------
# Comparison with bench_skinning
# --------------------------------------------------------------------------

def run_ours(binary, sizes, repeats):
    cmd = [binary, "--sizes", ",".join(str(s) for s in sizes), "--backends", "cpu"]
    if repeats > 0:
        cmd += ["--repeats", str(repeats)]
    print("running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    result = {}
    # | vertices | backend | method | ms/frame | M vertices/s | upload | compute | readback |
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0].isdigit() and cells[1] == "cpu":
            result[(int(cells[0]), cells[2].lower())] = float(cells[3])
    if not result:
        raise RuntimeError("could not parse any row of %s output" % binary)
    return result


def main():
    args = parse_args()
    print("Blender %s, Python %s, numpy %s, %d CPUs"
          % (bpy.app.version_string, sys.version.split()[0], np.__version__, os.cpu_count()),
          flush=True)
    rows = []   # (vertices, method, median seconds)
    for size in args.sizes:
        clear_scene()
        t0 = time.perf_counter()
        pos, tri, idx, wts = make_limb(size)
        t_numpy = time.perf_counter() - t0
        nv = len(pos)
        arm_ob = build_armature()
        ob, mod, setup = build_mesh(pos, tri, idx, wts, arm_ob)
        print("%d vertices, %d triangles: setup numpy %.2f s, mesh %.2f s, vertex groups %.2f s "
              "(%d add() calls)" % (nv, len(tri), t_numpy, setup["mesh"], setup["vertex groups"],
                                    setup["vertex group add() calls"]), flush=True)

        # Correctness: Blender's LBS equals the bench's skinning matrices applied
        # to the same weights; Preserve Volume is compared with a DQS reference.
        check_phase = 0.7
        set_pose(arm_ob, check_phase)
        skin = skin_matrices(check_phase)
        mod.use_deform_preserve_volume = False
        err_lbs = float(np.abs(evaluated_coords(ob) - reference_lbs(pos, idx, wts, skin)).max())
        mod.use_deform_preserve_volume = True
        dqs_blender = evaluated_coords(ob)
        err_dqs = float(np.abs(dqs_blender - reference_dqs(pos, idx, wts, skin)).max())
        diff_modes = float(np.abs(dqs_blender - reference_lbs(pos, idx, wts, skin)).max())
        print("check: max |Blender LBS - reference LBS| = %.2e, max |Blender DQS - reference "
              "DQS| = %.2e, max |DQS - LBS| = %.2e" % (err_lbs, err_dqs, diff_modes), flush=True)
        if err_lbs > REFERENCE_TOLERANCE:
            raise RuntimeError("Blender's LBS does not match the bench_skinning limb/pose")
        if diff_modes <= REFERENCE_TOLERANCE:
            raise RuntimeError("Preserve Volume did not change the result")

        reps = args.repeats if args.repeats > 0 else default_repeats(nv)
        for method, preserve in (("lbs", False), ("dqs", True)):
            times = time_mode(ob, mod, arm_ob, pos, preserve, reps)
            med = statistics.median(times)
            rows.append((nv, method, med))
            q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (med, med, med)
            print("| %d | %s | %.3f | %.1f |  (%d frames; min %.3f, quartiles %.3f-%.3f ms)"
                  % (nv, method, 1e3 * med, nv / med / 1e6, reps, 1e3 * min(times),
                     1e3 * q1, 1e3 * q3), flush=True)

    print()
    print("| vertices | method | Blender Armature ms/frame (median) | M vertices/s |")
    print("|---:|---|---:|---:|")
    for nv, method, med in rows:
        print("| %d | %s | %.3f | %.1f |" % (nv, method, 1e3 * med, nv / med / 1e6))

    if args.ours:
        print()
        ours = run_ours(args.ours, args.sizes, args.repeats)
        print()
        print("| vertices | method | Blender Armature ms/frame | SpringSkin CPU ms/frame | speed-up |")
        print("|---:|---|---:|---:|---:|")
        for nv, method, med in rows:
            mine = ours.get((nv, method))
            if mine is None:
                print("| %d | %s | %.3f | n/a | n/a |" % (nv, method, 1e3 * med))
            else:
                speedup = "%.1fx" % (1e3 * med / mine) if mine > 0 else "n/a"
                print("| %d | %s | %.3f | %.3f | %s |" % (nv, method, 1e3 * med, mine, speedup))
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)   # Blender would otherwise exit 0 after a failing --python script
