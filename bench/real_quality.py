"""Artifact measures of every method on real characters, against LBS of the
same rig and frames (issue #15: spikes, crumples and tears of IRS and the
springs on Rigify and Mixamo-style bodies).

    PYTHONPATH=build/python /usr/bin/python3 bench/real_quality.py FILE [FILE ...]
        [--methods dqs,cor,rigid,irs,spring] [--fps 24] [--frames N] [--backend cpu]

For each file and method, over the frames of the first animation (all of
them, or N spread evenly with --frames):

- turned: the share of (triangle, frame) pairs whose face normal turns more
  than 60 degrees away from LBS's face normal at the same frame (a spike, a
  fold or a crumple turns faces; LBS's own candy wrapper does not count,
  since LBS is the reference), and the largest share at one frame;
- stretch: the largest edge stretch (deformed length / rest length, over
  every triangle edge and frame) divided by LBS's largest edge stretch;
- seams: the largest distance between vertices that coincide at rest (the
  welded topology, `Rig.weld`), as a fraction of the rest diagonal.

Prints a Markdown table. Rest lengths, normals and distances are in rig
space (each mesh's rows moved by its object matrix at the frame).
"""

import argparse
import os
import sys

import numpy as np

import springskin

TURN_DEGREES = 60.0
DEFAULT_METHODS = "dqs,cor,rigid,irs,spring"


def rig_space(rig, positions, objects):
    out = np.empty(positions.shape, dtype=np.float64)
    for i, mesh in enumerate(rig.meshes):
        m = np.asarray(objects[i], dtype=np.float64)
        out[mesh.rows] = np.asarray(positions[mesh.rows], np.float64) @ m[:3, :3].T + m[:3, 3]
    return out


def triangles_of(rig):
    return np.concatenate([mesh.triangles.astype(np.int64) + mesh.first_vertex
                           for mesh in rig.meshes if mesh.triangle_count])


def face_normals(points, triangles):
    a, b, c = (points[triangles[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    length = np.linalg.norm(n, axis=1)
    ok = length > 0
    n[ok] /= length[ok][:, None]
    return n, ok


def edge_lengths(points, edges):
    return np.linalg.norm(points[edges[:, 0]] - points[edges[:, 1]], axis=1)


def measure(path, methods, fps, frame_limit, backend):
    rig = springskin.load(path)
    if rig.animation is None:
        raise SystemExit("%s: no animation" % path)
    count = rig.animation.frame_count(fps=fps)
    frames = sorted(set(int(round(x)) for x in np.linspace(0, count - 1,
                                                           min(count, frame_limit or count))))
    triangles = triangles_of(rig)
    edges = np.unique(np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                                              triangles[:, [2, 0]]]), axis=1), axis=0)
    rest = rig_space(rig, rig.rest_positions(), [m.object_matrix for m in rig.meshes])
    rest_length = edge_lengths(rest, edges)
    keep = rest_length > 0
    edges, rest_length = edges[keep], rest_length[keep]
    diagonal = float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0)))
    weld = rig.weld
    members = np.asarray(weld["members"], dtype=np.int64)
    representatives = np.asarray(weld["points"], dtype=np.int64)[members]
    cos_limit = np.cos(np.radians(TURN_DEGREES))

    samples = [rig.sample(frame=f, fps=fps) for f in frames]
    lbs = springskin.Deformer(rig, method="lbs", backend=backend)
    lbs_points = [rig_space(rig, lbs.deform(s, o), o) for s, o in samples]
    lbs_normals = [face_normals(p, triangles) for p in lbs_points]
    lbs_stretch = max(float((edge_lengths(p, edges) / rest_length).max()) for p in lbs_points)

    rows = []
    for method in methods:
        deformer = springskin.Deformer(rig, method=method, backend=backend)
        turned = total = 0
        worst_frame_share, worst_frame = 0.0, frames[0]
        stretch, seam = 0.0, 0.0
        for f, (s, o), (ln, lok) in zip(frames, samples, lbs_normals):
            try:
                out = deformer.deform(s, o, frame=f)
            except springskin.SpringDivergedError:
                out = deformer.deform(s, o, frame=f)
            points = rig_space(rig, out, o)
            n, ok = face_normals(points, triangles)
            valid = ok & lok
            bad = valid & ((n * ln).sum(axis=1) < cos_limit)
            turned += int(bad.sum())
            total += int(valid.sum())
            share = float(bad.sum()) / max(1, int(valid.sum()))
            if share > worst_frame_share:
                worst_frame_share, worst_frame = share, f
            stretch = max(stretch, float((edge_lengths(points, edges) / rest_length).max()))
            if len(members):
                seam = max(seam, float(np.linalg.norm(points[members] - points[representatives],
                                                      axis=1).max()))
        rows.append((method, turned / max(1, total), worst_frame_share, worst_frame,
                     stretch / lbs_stretch, seam / diagonal))
    return rig, frames, lbs_stretch, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--fps", type=float, default=24.0)
    parser.add_argument("--frames", type=int, default=0, help="frames spread evenly (0: all)")
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    print("| rig | vertices | frames | method | triangles turned > 60 deg from LBS "
          "(all frames / worst frame) | largest edge stretch / LBS's | seam gap / diagonal |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for path in args.files:
        rig, frames, lbs_stretch, rows = measure(path, methods, args.fps, args.frames,
                                                 args.backend)
        name = os.path.basename(path)
        for method, share, worst, worst_frame, stretch, seam in rows:
            print("| %s | %d | %d | %s | %.2f%% / %.2f%% (frame %d) | %.2f | %.1e |" % (
                name, rig.vertex_count, len(frames), method, 100 * share, 100 * worst,
                worst_frame, stretch, seam))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
