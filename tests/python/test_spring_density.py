"""Springs at production density (issue #36): the surface multigrid solver's
passes do not grow when the mesh is subdivided, and the relative
convergence rule stops within its tolerance of the equilibrium on both.

BCN_Epileptic.X (3,014 vertices) and the same mesh subdivided once here
(each triangle into four at its edge midpoints, the skin weights of a
midpoint the mean of its edge's ends: 12k vertices), posed by the file's
own animation through rigs built from arrays. The equilibrium: 300
multigrid passes (its moves are then at the rounding of float positions;
the fixed point is the same for every solver and rule, spring.c).
"""
import os

import numpy as np
import pytest

import springskin as ss

BCN = "/usr/share/assimp/models/X/BCN_Epileptic.X"
FRAMES = (12, 30, 47, 64)

pytestmark = pytest.mark.skipif(not os.path.exists(BCN), reason="assimp-testmodels not installed")


def spring_graph(**fields):
    node = {"id": "relax", "type": "spring", "solver": "multigrid",
            "convergence": "relative"}
    node.update(fields)
    return {"version": 1,
            "nodes": [{"id": "skin", "type": "skinning", "method": "irs"}, node,
                      {"id": "out", "type": "output"}],
            "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}


def subdivide(positions, triangles, indices, weights):
    """Midpoint subdivision; weights of a midpoint: the mean of its ends'
    (dense over the bones, the K largest kept, renormalized)."""
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]],
                                    triangles[:, [2, 0]]]), axis=1)
    unique, inverse = np.unique(edges, axis=0, return_inverse=True)
    inverse = inverse.reshape(3, -1).T  # (F, 3): edges 01, 12, 20
    v = len(positions)
    mid = v + np.arange(len(unique))
    p = np.concatenate([positions, 0.5 * (positions[unique[:, 0]] + positions[unique[:, 1]])])
    bones = int(indices.max()) + 1
    dense = np.zeros((v, bones))
    np.add.at(dense, (np.repeat(np.arange(v), indices.shape[1]), indices.ravel()),
              weights.ravel())
    md = 0.5 * (dense[unique[:, 0]] + dense[unique[:, 1]])
    k = indices.shape[1]
    top = np.argsort(-md, axis=1)[:, :k]
    mw = np.take_along_axis(md, top, axis=1)
    mw /= mw.sum(axis=1, keepdims=True)
    a, b, c = triangles.T
    ab, bc, ca = mid[inverse[:, 0]], mid[inverse[:, 1]], mid[inverse[:, 2]]
    t = np.concatenate([np.stack([a, ab, ca], 1), np.stack([ab, b, bc], 1),
                        np.stack([ca, bc, c], 1), np.stack([ab, bc, ca], 1)])
    return (p, t, np.concatenate([indices, top]).astype(np.int32),
            np.concatenate([weights, mw]).astype(np.float32))


def array_rig(source, positions, triangles, indices, weights):
    b = source.bones
    return ss.Rig(positions, triangles, b.parents, b.bind_matrices, indices, weights,
                  heads=b.heads, tails=b.tails, bone_names=b.names)


def merged(source):
    """The file's meshes as one, in rig space (their object matrices do not
    move in this file's animation)."""
    k = max(m.influence_count for m in source.meshes)
    parts, offset = [], 0
    for m in source.meshes:
        p = m.positions.astype(np.float64) @ m.object_matrix[:3, :3].T.astype(np.float64)
        p += m.object_matrix[:3, 3]
        i = np.zeros((m.vertex_count, k), np.int64)
        w = np.zeros((m.vertex_count, k), np.float64)
        i[:, :m.influence_count] = m.bone_indices
        w[:, :m.influence_count] = m.weights
        parts.append((p, m.triangles.astype(np.int64) + offset, i, w))
        offset += m.vertex_count
    return tuple(np.concatenate([part[c] for part in parts]) for c in range(4))


@pytest.fixture(scope="module")
def rigs():
    source = ss.load(BCN)
    for f in FRAMES:
        assert np.allclose(source.object_matrices(f), source.object_matrices(0))
    args = merged(source)
    return source, array_rig(source, *args), array_rig(source, *subdivide(*args))


def solve(rig, source, graph):
    d = ss.Deformer(rig, graph=graph, backend="cpu")
    out = {}
    for f in FRAMES:
        x = d.deform(source.skinning_matrices(f), frame=f)
        out[f] = (x.copy(), d.spring_report)
    return out


def mean_edge(rig):
    m = rig.meshes[0]
    p, t = m.positions.astype(np.float64), m.triangles
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    return float(np.linalg.norm(p[e[:, 0]] - p[e[:, 1]], axis=1).mean())


def test_multigrid_passes_grow_less_with_density_and_stop_near_equilibrium(rigs):
    """Measured (2026-12-08, the relative rule with its five-pass mean
    contraction and the bound that shrinks by at most that contraction a
    pass; the multigrid's unrounded step and Anderson depth 8): passes per
    frame at FRAMES, coarse / fine: multigrid 16 20 19 18 / 27 43 30 30
    (1.78x on average for 3.7x the vertices; 2.0x on 2026-12-07 with depth
    4 and the rounded step); the multilevel solver needed 2.4x under an
    earlier, looser estimate. Issue #36's bar, at most 1.5x from 15k to
    250k vertices, is met on the Rigify family from 15k to 60k
    (bench/spring_bodies.sh) but not here; this guards what is."""
    source, coarse, fine = rigs
    assert fine.vertex_count > 3.5 * coarse.vertex_count
    passes = {}
    for name, rig in (("coarse", coarse), ("fine", fine)):
        got = solve(rig, source, spring_graph(max_iterations=1000))
        ref = solve(rig, source, spring_graph(convergence="iterations", max_iterations=300))
        h = mean_edge(rig)
        for f in FRAMES:
            x, report = got[f]
            assert report["converged"], (name, f, report)
            dist = np.linalg.norm(x - ref[f][0], axis=1).max()
            # the rule's estimate is 1e-3 of the mean edge; issue #36 asks for 0.5%
            assert dist <= 5e-3 * h, (name, f, dist / h)
        passes[name] = [got[f][1]["iterations"] for f in FRAMES]
    assert np.mean(passes["fine"]) <= 2.0 * np.mean(passes["coarse"]), passes
    assert max(passes["fine"]) <= 2.2 * max(passes["coarse"]), passes
    bones = solve(fine, source, spring_graph(solver="multilevel", max_iterations=1000))
    assert all(bones[f][1]["converged"] for f in FRAMES)
    per_bone = [bones[f][1]["iterations"] for f in FRAMES]
    assert np.mean(passes["fine"]) <= 0.5 * np.mean(per_bone), (passes, per_bone)


def test_relative_rule_at_rest_stops_at_once(rigs):
    source, coarse, _ = rigs
    d = ss.Deformer(coarse, graph=spring_graph(), backend="cpu")
    rest = np.tile(np.eye(4, dtype=np.float32), (len(source.bones), 1, 1))
    x = d.deform(rest, frame=0)
    r = d.spring_report
    assert r["converged"] and r["iterations"] <= 2, r
    # the first stage at rest is the rest pose to rounding (IRS: about 1e-4 of an edge)
    assert np.abs(x - coarse.meshes[0].positions).max() <= 1e-3 * mean_edge(coarse)


def test_displacement_rule_stops_far_from_equilibrium_where_relative_does_not(rigs):
    """The paper's absolute rule (AABB_min x 1e-4) on the subdivided mesh
    stops farther from the equilibrium than the relative rule: what issue
    #36 replaces it for."""
    source, _, fine = rigs
    ref = solve(fine, source, spring_graph(convergence="iterations", max_iterations=300))
    old = solve(fine, source, spring_graph(solver="multilevel", convergence="displacement"))
    new = solve(fine, source, spring_graph())
    h = mean_edge(fine)
    far_old = max(np.linalg.norm(old[f][0] - ref[f][0], axis=1).max() for f in FRAMES) / h
    far_new = max(np.linalg.norm(new[f][0] - ref[f][0], axis=1).max() for f in FRAMES) / h
    assert far_new <= 5e-3 < far_old, (far_new, far_old)


def test_multigrid_on_gl_as_on_the_cpu(rigs):
    """The default solver on GL (llvmpipe here): the force passes on the
    device, the multigrid's correction on the host, so the passes and the
    stopping pass are the CPU's, and the result too but for the IRS first
    stage's last bits (tests/c/test_backends.c compares a rigid first stage
    bit for bit). The subdivided mesh (12k vertices), two frames."""
    source, _, fine = rigs
    try:
        gl = ss.Deformer(fine, graph=spring_graph(), backend="gl")
    except ss.SpringSkinError as e:
        pytest.skip("no GL here: %s" % e)
    cpu = ss.Deformer(fine, graph=spring_graph(), backend="cpu")
    h = mean_edge(fine)
    for f in FRAMES[:2]:
        skin = source.skinning_matrices(f)
        xc = cpu.deform(skin, frame=f).copy()
        xg = gl.deform(skin, frame=f).copy()
        rc, rg = cpu.spring_report, gl.spring_report
        assert rg["converged"] and rc["converged"], (f, rc, rg)
        assert abs(rg["iterations"] - rc["iterations"]) <= 1, (f, rc, rg)
        assert np.abs(xc - xg).max() <= 1e-3 * h, (f, np.abs(xc - xg).max() / h)
