"""spring_bodies.py — the springs on characters at production density (issue
#36): bench/cor_bodies.py's walking Rigify body at about 15k, 60k and 240k
vertices, every frame, each spring solver and convergence rule against LBS
on the same mesh in the same run.

    blender -b --factory-startup --python bench/cor_bodies.py -- DIR --animation walk \\
        --resolution 0.015
    PYTHONPATH=build/python /usr/bin/python3 bench/spring_bodies.py DIR/body_*.fbx \\
        [--solvers multilevel,multigrid] [--convergence displacement,relative] \\
        [--check 6,12,19] [--backend cpu]

(`bash bench/spring_bodies.sh` does both.) Per file and (solver,
convergence): passes per frame (mean, largest), deform ms per frame (the
deformer's own time: IRS first stage and springs), frames not converged,
and at the --check frames the distance to the equilibrium relative to the
local edge length (largest and 99th percentile over the vertices).

The equilibrium of a frame: the multigrid solver run for --reference-passes
passes (600: its moves are then at the rounding of float positions; the
fixed point of every solver is the same, spring.c). The local edge length of a vertex: the mean rest length
of its edges to vertices outside its short-edge cluster (edges shorter than
0.1 of the vertex's mean edge join a cluster, which moves as one:
spring.c "Short-edge clusters"), in rig space.
"""

import argparse
import time

import numpy as np

import springskin as ss


def graph(solver, convergence, **extra):
    node = {"id": "relax", "type": "spring", "solver": solver, "convergence": convergence}
    node.update(extra)
    return {"version": 1,
            "nodes": [{"id": "skin", "type": "skinning", "method": "irs"}, node,
                      {"id": "out", "type": "output"}],
            "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}


def local_edge_length(rig):
    """(V,) the local edge length of every whole-rig row (module docstring)."""
    out = []
    for m in rig.meshes:
        p = m.positions.astype(np.float64) @ m.object_matrix[:3, :3].T.astype(np.float64)
        t = m.triangles
        e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
        e = np.unique(np.sort(e, axis=1), axis=0)
        length = np.linalg.norm(p[e[:, 0]] - p[e[:, 1]], axis=1)
        n = len(p)
        total, count = np.zeros(n), np.zeros(n)
        for side in (0, 1):
            np.add.at(total, e[:, side], length)
            np.add.at(count, e[:, side], 1)
        mean = total / np.maximum(count, 1)
        short = length < 0.1 * np.minimum(mean[e[:, 0]], mean[e[:, 1]])
        # clusters: union-find over the short edges
        parent = np.arange(n)

        def find(a):
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a
        for a, b in e[short]:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        root = np.array([find(a) for a in range(n)])
        outer = root[e[:, 0]] != root[e[:, 1]]
        total2, count2 = np.zeros(n), np.zeros(n)
        for side in (0, 1):
            np.add.at(total2, root[e[outer, side]], length[outer])
            np.add.at(count2, root[e[outer, side]], 1)
        h = total2[root] / np.maximum(count2[root], 1)
        h[count2[root] == 0] = mean[count2[root] == 0]
        out.append(h)
    return np.concatenate(out)


def run(rig, g, frames, backend):
    d = ss.Deformer(rig, graph=g, backend=backend)
    d.deform_frame(frames[0])  # set-up outside the timing
    passes, unconverged, times, results = [], [], [], {}
    for f in frames:
        t = time.perf_counter()
        x = d.deform_frame(f)
        times.append(time.perf_counter() - t)
        r = d.spring_report
        passes.append(r["iterations"])
        if not r["converged"]:
            unconverged.append(f)
        results[f] = x.copy()
    return passes, unconverged, times, results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--solvers", default="multilevel,multigrid")
    ap.add_argument("--convergence", default="displacement,relative")
    ap.add_argument("--check", default="6,12,19", help="frames compared with the equilibrium")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--reference-passes", type=int, default=600,
                    help="multigrid passes of the equilibrium (its moves reach the rounding of "
                         "float positions, about 1e-7, within 100-300 on these bodies)")
    args = ap.parse_args()
    checks = [int(f) for f in args.check.split(",") if f]
    print("| vertices | solver | convergence | passes/frame mean / max | ms/frame (LBS) | "
          "not converged | distance / local edge at frames %s: max / p99 |" % args.check)
    print("|---:|---|---|---|---|---|---|")
    for path in args.files:
        rig = ss.load(path)
        frames = list(range(rig.animations[0].frame_count()))
        h = local_edge_length(rig)
        lbs = ss.Deformer(rig, method="lbs", backend=args.backend)
        lbs.deform_frame(0)
        t = time.perf_counter()
        for f in frames:
            lbs.deform_frame(f)
        lbs_ms = (time.perf_counter() - t) / len(frames) * 1e3
        ref = {}
        ref_d = ss.Deformer(rig, graph=graph("multigrid", "iterations",
                                             max_iterations=args.reference_passes),
                            backend="cpu")
        for f in checks:
            ref[f] = ref_d.deform_frame(f).copy()
        for solver in args.solvers.split(","):
            for conv in args.convergence.split(","):
                g = graph(solver, conv, max_iterations=args.max_iterations)
                passes, bad, times, res = run(rig, g, frames, args.backend)
                dist = np.concatenate([np.linalg.norm(res[f] - ref[f], axis=1) / h
                                       for f in checks if f in res])
                print("| %d | %s | %s | %.1f / %d | %.1f (%.1f) | %d of %d | %.4f / %.4f |" % (
                    rig.vertex_count, solver, conv, np.mean(passes), max(passes),
                    np.median(times) * 1e3, lbs_ms, len(bad), len(frames), dist.max(),
                    np.percentile(dist, 99)), flush=True)


if __name__ == "__main__":
    main()
