"""Sharded springs bakes on a Dask LocalCluster against one process (issue #23).

    PYTHONPATH=build/python /usr/bin/python3 bench/distributed_bake.py \
        [--vertices 100000] [--frames 100] [--bakes 8] [--workers 2] [--chunk 25]

The limb: bench/limb.h's tube (rings of 64 vertices along +Y, 8 bones in a
chain, 4 inverse-distance weights per vertex, 1 / (0.05 + d^4)), written
here as glTF 2.0 files (one per bake, each animated with a different phase:
joint b bends about Z by 0.3 sin(2t + b + k) and twists about Y by
0.4 cos(2t + b / 2 + k), a key per frame at 24 fps) so that each bake is a
file import as in production.

One run measures, on the same machine:
- sequential: the bakes one after another in this process (import, bind,
  springs bake to .pc2) with the core's threads on every CPU;
- cluster: springskin.distributed.bake of the same jobs on a LocalCluster
  of `workers` single-threaded workers (core_threads=1), frame chunks of
  `chunk`, shards merged to .pc2; the cluster is started before the clock
  (its start-up is reported on its own);
- the wall ratio cluster / sequential (issue #23's bar: <= 1.15);
- the per-task scheduling overhead: 400 empty tasks through the same
  cluster (wall / tasks, both workers busy), and what the bake's own tasks
  lost: (wall x workers - the tasks' own seconds) / tasks;
- the merge throughput: shard bytes read / merge seconds, over the bakes;
- that every cluster cache equals the sequential one, byte for byte.
"""

import argparse
import filecmp
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np

import springskin
import springskin.distributed as sd

SEGMENTS = 64
BONES = 8
LENGTH = 8.0
RADIUS = 0.5
INFLUENCES = 4
FPS = 24.0
EMPTY_TASKS = 400


def limb_gltf(path, vertices, frames, phase):
    """Writes the limb as PATH (.gltf) + PATH.bin; keys at frames 0..frames
    (one past the last baked frame, so the frame count never rounds down)."""
    rings = max(2, vertices // SEGMENTS)
    y = np.linspace(0.0, LENGTH, rings)
    a = np.linspace(0.0, 2.0 * np.pi, SEGMENTS, endpoint=False)
    ang, hy = np.meshgrid(a, y)
    pos = np.stack([RADIUS * np.cos(ang), hy, RADIUS * np.sin(ang)], -1).reshape(-1, 3)
    pos = pos.astype(np.float32)
    idx = np.arange(rings * SEGMENTS).reshape(rings, SEGMENTS)
    nxt = np.roll(idx, -1, axis=1)
    tri = np.concatenate([np.stack([idx[:-1], idx[1:], nxt[:-1]], -1).reshape(-1, 3),
                          np.stack([nxt[:-1], idx[1:], nxt[1:]], -1).reshape(-1, 3)])
    tri = tri.astype(np.uint32)
    # weights: the bone containing the ring, the one before and the two after
    bone_len = LENGTH / BONES
    own = np.clip((pos[:, 1] / bone_len).astype(int), 0, BONES - 1)
    joints = np.clip(own[:, None] + np.array([-1, 0, 1, 2]), 0, BONES - 1)
    d = np.abs(pos[:, 1:2] - (joints + 0.5) * bone_len) / bone_len
    w = 1.0 / (0.05 + d ** 4)
    # a bone listed twice (clamped) counts once
    for k in range(1, INFLUENCES):
        dup = (joints[:, k:k + 1] == joints[:, :k]).any(1)
        w[dup, k] = 0.0
    w = (w / w.sum(1, keepdims=True)).astype(np.float32)
    joints = joints.astype(np.uint16)
    ibm = np.zeros((BONES, 4, 4), np.float32)
    for b in range(BONES):
        m = np.eye(4, dtype=np.float32)
        m[1, 3] = -b * bone_len
        ibm[b] = m.T  # column-major
    times = (np.arange(frames + 1) / FPS).astype(np.float32)
    t = times.astype(np.float64)
    rot = []
    for b in range(BONES):
        bend = 0.3 * np.sin(2.0 * t + b + phase)
        twist = 0.4 * np.cos(2.0 * t + b / 2.0 + phase)
        # q = bend about Z times twist about Y, (x, y, z, w)
        cz, sz = np.cos(bend / 2), np.sin(bend / 2)
        cy, sy = np.cos(twist / 2), np.sin(twist / 2)
        q = np.stack([-sz * sy, cz * sy, sz * cy, cz * cy], -1)
        rot.append(q.astype(np.float32))
    blobs, views, accessors = [], [], []

    def add(array, kind, ctype, target=None, minmax=False):
        data = np.ascontiguousarray(array).tobytes()
        offset = sum(len(b) for b in blobs)
        blobs.append(data + b"\0" * (-len(data) % 4))
        view = {"buffer": 0, "byteOffset": offset, "byteLength": len(data)}
        if target:
            view["target"] = target
        views.append(view)
        acc = {"bufferView": len(views) - 1, "componentType": ctype,
               "count": int(array.shape[0]), "type": kind}
        if minmax:
            flat = array.reshape(array.shape[0], -1)
            acc["min"] = [float(v) for v in flat.min(0)]
            acc["max"] = [float(v) for v in flat.max(0)]
        accessors.append(acc)
        return len(accessors) - 1

    a_pos = add(pos, "VEC3", 5126, 34962, minmax=True)
    a_joint = add(joints, "VEC4", 5123, 34962)
    a_weight = add(w, "VEC4", 5126, 34962)
    a_index = add(tri.reshape(-1), "SCALAR", 5125, 34963)
    a_ibm = add(ibm, "MAT4", 5126)
    a_time = add(times, "SCALAR", 5126, minmax=True)
    a_rot = [add(r, "VEC4", 5126) for r in rot]
    # node 0: the mesh; nodes 1..BONES: the joint chain
    nodes = [{"name": "limb", "mesh": 0, "skin": 0}]
    for b in range(BONES):
        node = {"name": f"bone{b}", "translation": [0.0, 0.0 if b == 0 else bone_len, 0.0]}
        if b + 1 < BONES:
            node["children"] = [b + 2]
        nodes.append(node)
    doc = {
        "asset": {"version": "2.0", "generator": "springskin bench/distributed_bake.py"},
        "scene": 0, "scenes": [{"nodes": [0, 1]}], "nodes": nodes,
        "meshes": [{"name": "limb", "primitives": [{
            "attributes": {"POSITION": a_pos, "JOINTS_0": a_joint, "WEIGHTS_0": a_weight},
            "indices": a_index}]}],
        "skins": [{"joints": list(range(1, BONES + 1)), "inverseBindMatrices": a_ibm,
                   "skeleton": 1}],
        "animations": [{"name": "wave", "samplers": [
            {"input": a_time, "output": a_rot[b], "interpolation": "LINEAR"}
            for b in range(BONES)], "channels": [
            {"sampler": b, "target": {"node": b + 1, "path": "rotation"}}
            for b in range(BONES)]}],
        "buffers": [{"uri": os.path.basename(path) + ".bin",
                     "byteLength": sum(len(b) for b in blobs)}],
        "bufferViews": views, "accessors": accessors,
    }
    with open(path + ".bin", "wb") as f:
        for b in blobs:
            f.write(b)
    with open(path, "w") as f:
        json.dump(doc, f)
    return rings * SEGMENTS


def empty_task():
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vertices", type=int, default=100_000)
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--bakes", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=25)
    ap.add_argument("--keep", help="keep the files in this directory")
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    root = args.keep or tempfile.mkdtemp(prefix="ssk-dist-bench-")
    os.makedirs(root, exist_ok=True)
    jobs, seq_out = [], []
    for k in range(args.bakes):
        src = os.path.join(root, f"limb{k}.gltf")
        nv = limb_gltf(src, args.vertices, args.frames, phase=0.7 * k)
        jobs.append({"input": src, "output": os.path.join(root, f"cluster{k}.pc2"),
                     "method": "spring", "frames": [0, args.frames - 1]})
        seq_out.append(os.path.join(root, f"single{k}.pc2"))
    print(f"{args.bakes} springs bakes of a {nv}-vertex limb (glTF), {args.frames} frames each; "
          f"{os.cpu_count()} CPUs")

    # sequential, one process, every CPU
    springskin.configure_threads(0)
    t0 = time.perf_counter()
    for job, out in zip(jobs, seq_out):
        rig = springskin.load(job["input"])
        springskin.bake(rig, out, method="spring", frames=tuple(job["frames"]), backend="cpu")
    seq = time.perf_counter() - t0
    print(f"sequential (1 process, {springskin.configure_threads()[0]} core threads): "
          f"{seq:.2f} s")

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(args.workers)
    print(f"LocalCluster start-up ({args.workers} workers): {time.perf_counter() - t0:.2f} s")
    try:
        t0 = time.perf_counter()
        reports = sd.bake(jobs, client=client, chunk=args.chunk, core_threads=1, progress=False)
        wall = time.perf_counter() - t0
        # empty tasks: the scheduler's own cost per task
        t1 = time.perf_counter()
        client.gather([client.submit(empty_task, pure=False) for _ in range(EMPTY_TASKS)])
        per_empty = (time.perf_counter() - t1) / EMPTY_TASKS
    finally:
        client.close()
        cluster.close()
    bad = [r for r in reports if not r["ok"]]
    if bad:
        print("failed:", bad, file=sys.stderr)
        return 1
    same = all(filecmp.cmp(a, j["output"], shallow=False) for a, j in zip(seq_out, jobs))
    tasks = sum(r["chunks"] + 2 for r in reports)  # plan + chunks + merge per job
    busy = sum(r["chunk_seconds"] for r in reports)
    merge_s = sum(r["merge"]["wall_seconds"] for r in reports)
    merge_mb = sum(r["merge"]["bytes_read"] for r in reports) / 1e6
    print(f"cluster ({args.workers} single-threaded workers, chunks of {args.chunk} frames, "
          f"{tasks} tasks): {wall:.2f} s")
    print(f"wall ratio cluster / sequential: {wall / seq:.3f}")
    print(f"per-task scheduling overhead: {1e3 * per_empty:.2f} ms ({EMPTY_TASKS} empty tasks); "
          f"the bake's tasks: {1e3 * (wall * args.workers - busy) / tasks:.1f} ms of idle or "
          f"non-chunk worker time per task (plans, merges, imports outside the chunks' clocks "
          f"and scheduling)")
    print(f"merge: {merge_mb:.1f} MB of shards in {merge_s:.2f} s: {merge_mb / merge_s:.0f} MB/s")
    print(f"caches identical to the sequential bakes: {same}")
    if not args.keep:
        shutil.rmtree(root)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
