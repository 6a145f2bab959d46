"""Rig creation time with the welded topology, and a frame of rigid skinning
on a rig with a UV seam (the copies are welded after the kernel).

    PYTHONPATH=build/python /usr/bin/python3 bench/rig_create.py [--rings 1000] [--segments 1000]

The rig: a tube of `rings` x (`segments` + 1) vertices whose last column
repeats the first (a UV seam as an importer writes it: one coincident pair
per ring), 4 bones along it, two influences per vertex. Prints the median of 5 `springskin.Rig(...)` constructions (copy,
validation, weight normalization, adjacency, and the weld: grid search,
union-find, welded adjacency, shading triangles) and of 20 rigid frames.
"""

import argparse
import statistics
import time

import numpy as np

import springskin


def tube(rings, segments):
    a = np.linspace(0.0, 2.0 * np.pi, segments + 1)   # the last column = the first
    y = np.linspace(0.0, 4.0, rings)
    angle, height = np.meshgrid(a, y)
    positions = np.stack([np.cos(angle), height, np.sin(angle)], -1).reshape(-1, 3)
    positions = positions.astype(np.float32)
    positions[:, [0, 2]] = np.round(positions[:, [0, 2]], 6)   # exact copies at the seam
    index = np.arange(rings * (segments + 1)).reshape(rings, segments + 1)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[:-1, 1:], index[1:, 1:]], -1)
    quads = quads.reshape(-1, 4)
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [2, 1, 3]]]).astype(np.int32)
    return positions, triangles


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rings", type=int, default=1000)
    parser.add_argument("--segments", type=int, default=1000)
    args = parser.parse_args()
    positions, triangles = tube(args.rings, args.segments)
    bones = 4
    bind = np.tile(np.eye(4, dtype=np.float32), (bones, 1, 1))
    bind[:, 1, 3] = np.arange(bones)
    parents = np.arange(bones) - 1
    bone = np.clip(positions[:, 1].astype(int), 0, bones - 1)
    indices = np.stack([bone, np.minimum(bone + 1, bones - 1)], -1).astype(np.int32)
    weights = np.full((len(positions), 2), 0.5, np.float32)

    seconds = []
    for _ in range(5):
        start = time.perf_counter()
        rig = springskin.Rig(positions, triangles, parents, bind, indices, weights)
        seconds.append(time.perf_counter() - start)
    weld = rig.weld
    deformer = springskin.Deformer(rig, method="rigid", backend="cpu")
    pose = rig.rest_pose()
    pose[2] = np.array([[1, 0, 0, 0], [0, 0, -1, 2], [0, 1, 0, 0], [0, 0, 0, 1]],
                       np.float32) @ pose[2]
    deformer.deform(pose)
    frames = []
    for _ in range(20):
        start = time.perf_counter()
        deformer.deform(pose)
        frames.append(time.perf_counter() - start)
    print("| vertices | welded groups | joined vertices | rig creation s | rigid ms/frame |")
    print("|---:|---:|---:|---:|---:|")
    print("| %d | %d | %d | %.3f | %.3f |" % (
        rig.vertex_count, weld["group_count"], weld["member_count"],
        statistics.median(seconds), 1000.0 * statistics.median(frames)))


if __name__ == "__main__":
    main()
