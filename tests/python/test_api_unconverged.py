"""Unconverged spring frames are never silent (issue #36, item 3).

Non-convergence is forced, cheaply and whatever the convergence test: a
spring node with "max_iterations": 2 and a threshold of 1e-9 model units
on frames 20..23 of BCN_Epileptic.X (posed frames: residuals 4e-4 to
6e-4 after two passes), a bake of 4 frames in a few milliseconds.

- springskin.bake's ``warning`` names the frames, their count and the
  spring node's "max_iterations" to raise; SpringNotConvergedWarning (a
  RuntimeWarning) is issued with the same text, after the cache is
  written (a warnings filter set to "error" raises with the file there);
  a shard bake says so too; a GL fallback warning and the springs' come
  on two lines.
- Converged bakes (LBS; springs whose test is "iterations", which always
  converge) have ``warning`` None and issue nothing.
- The CLI: `bake --strict` exits 1 naming the frames on stderr with the
  output kept, 0 when the springs converged; without --strict, 0.
"""

import copy
import json
import subprocess
import warnings

import pytest

import springskin
from api_helpers import BCN, CLI, needs_cli, needs_models, read_pc2

pytestmark = needs_models

FRAMES = (20, 23)

#: IRS relaxed by springs that stop after 2 passes, far above the threshold.
UNCONVERGED = {
    "version": 1,
    "nodes": [{"id": "skin", "type": "skinning", "method": "irs"},
              {"id": "relax", "type": "spring", "max_iterations": 2, "threshold": 1e-9},
              {"id": "out", "type": "output"}],
    "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}],
}


def graph_with(**spring):
    doc = copy.deepcopy(UNCONVERGED)
    doc["nodes"][1].update(spring)
    return doc


#: The same 2 passes reported as converged: the "iterations" test always is.
CONVERGED = graph_with(convergence="iterations", threshold=0.0)


@pytest.fixture(scope="module")
def bcn():
    return springskin.load(BCN)


def test_the_warning_category_is_exported():
    assert issubclass(springskin.SpringNotConvergedWarning, RuntimeWarning)
    assert "SpringNotConvergedWarning" in springskin.__all__


def test_unconverged_bake_names_the_frames_and_warns(bcn, tmp_path):
    out = tmp_path / "out.pc2"
    with pytest.warns(springskin.SpringNotConvergedWarning) as caught:
        stats = springskin.bake(bcn, out, frames=FRAMES, graph=UNCONVERGED, backend="cpu")
    assert stats["spring_frames_unconverged"] == 4
    assert [f for f, _ in stats["spring_unconverged_frames"]] == [20, 21, 22, 23]
    message = stats["warning"]
    assert message is not None
    assert "springs not converged at 4 of 4 frame(s) within 2 iterations" in message
    for frame in range(20, 24):
        assert f" {frame} (residual " in message
    assert "\"max_iterations\" of the graph's spring node 'relax' (now 2, default 100)" in message
    assert "multilevel" not in message  # the node already uses the default solver
    spring = [w for w in caught if w.category is springskin.SpringNotConvergedWarning]
    assert len(spring) == 1
    assert str(spring[0].message) in message
    assert spring[0].filename == __file__  # points at the caller's bake
    assert read_pc2(out)[2].shape[0] == 4  # the cache is written all the same


def test_warning_as_error_keeps_the_cache(bcn, tmp_path):
    out = tmp_path / "strict.pc2"
    with warnings.catch_warnings():
        warnings.simplefilter("error", springskin.SpringNotConvergedWarning)
        with pytest.raises(springskin.SpringNotConvergedWarning, match=r"frame\(s\) 20 "):
            springskin.bake(bcn, out, frames=FRAMES, graph=UNCONVERGED, backend="cpu")
    assert out.exists()


def test_more_frames_than_listed_are_counted(bcn, tmp_path):
    doc = graph_with(solver="jacobi", chebyshev_rho=0.0)
    with pytest.warns(springskin.SpringNotConvergedWarning):
        stats = springskin.bake(bcn, tmp_path / "out.pc2", frames=(10, 30), graph=doc,
                                backend="cpu")
    assert stats["spring_frames_unconverged"] == 21
    assert "at 21 of 21 frame(s)" in stats["warning"]
    assert "17 (residual " in stats["warning"] and " and 13 more;" in stats["warning"]
    # the advice matches the solver: jacobi could use the default one
    assert 'give it "solver": "auto"' in stats["warning"]


def test_deformer_and_method_spring_advice(bcn, tmp_path):
    deformer = springskin.Deformer(bcn, graph=UNCONVERGED, backend="cpu")
    with pytest.warns(springskin.SpringNotConvergedWarning, match="'relax' \\(now 2"):
        springskin.bake(bcn, tmp_path / "out.pc2", frames=FRAMES, deformer=deformer)
    # method "spring" has no graph to edit: the message says which one
    from springskin.bake import _spring_advice
    assert 'Graph.from_method("spring", rig)' in _spring_advice(None, "spring")
    assert _spring_advice(None, "lbs") == ""


def test_shard_bake_says_so(bcn, tmp_path):
    shards = tmp_path / "shards"
    with pytest.warns(springskin.SpringNotConvergedWarning):
        stats = springskin.bake(bcn, shard=shards, frames=FRAMES, graph=UNCONVERGED,
                                backend="cpu")
    assert stats["shard_reused"] is False
    assert "springs not converged at 4 of 4 frame(s)" in stats["warning"]
    # a kept shard is not deformed again: nothing to report (documented)
    with warnings.catch_warnings():
        warnings.simplefilter("error", springskin.SpringNotConvergedWarning)
        again = springskin.bake(bcn, shard=shards, frames=FRAMES, graph=UNCONVERGED,
                                backend="cpu")
    assert again["shard_reused"] is True and again["warning"] is None


@pytest.mark.parametrize("kind", ["lbs", "springs"])
def test_converged_bakes_have_no_warning(bcn, tmp_path, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("error", springskin.SpringNotConvergedWarning)
        if kind == "lbs":
            stats = springskin.bake(bcn, tmp_path / "out.pc2", frames=FRAMES, method="lbs",
                                    backend="cpu")
        else:
            stats = springskin.bake(bcn, tmp_path / "out.pc2", frames=FRAMES, graph=CONVERGED,
                                    backend="cpu")
            assert stats["spring_iterations"] == 8
    assert stats["spring_frames_unconverged"] == 0
    assert stats["warning"] is None


def test_a_fallback_warning_comes_first(bcn, tmp_path):
    """backend "auto" on a machine without a hardware GPU says why it used
    the CPU; the springs' message follows on its own line."""
    plain = springskin.bake(bcn, tmp_path / "lbs.pc2", frames=FRAMES, method="lbs",
                            backend="auto")
    with pytest.warns(springskin.SpringNotConvergedWarning) as caught:
        stats = springskin.bake(bcn, tmp_path / "out.pc2", frames=FRAMES, graph=UNCONVERGED,
                                backend="auto")
    spring = str([w for w in caught
                  if w.category is springskin.SpringNotConvergedWarning][0].message)
    if plain["warning"] is None:
        assert stats["warning"] == spring
    else:
        assert stats["warning"] == plain["warning"] + "\n" + spring


# --------------------------------------------------------------------------
# The CLI: bake --strict.
# --------------------------------------------------------------------------

def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


@needs_cli
def test_cli_strict_exits_1_and_keeps_the_output(tmp_path):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(UNCONVERGED))
    out = tmp_path / "out.pc2"
    r = cli("bake", BCN, "-o", out, "--graph", graph, "--frames", "20:23", "--backend", "cpu",
            "--strict")
    assert r.returncode == 1, r.stderr
    assert "springskin: error: springs not converged at 4 of 4 frame(s) within 2 iterations: " \
           "frame(s) 20 (residual " in r.stderr
    assert ", 23 (residual " in r.stderr
    assert f"{out} is written and kept" in r.stderr
    assert '"max_iterations" of the spring node in' in r.stderr
    assert read_pc2(out)[2].shape[0] == 4
    # the summary on stdout is the one without --strict
    plain = cli("bake", BCN, "-o", tmp_path / "plain.pc2", "--graph", graph, "--frames", "20:23",
                "--backend", "cpu")
    assert plain.returncode == 0, plain.stderr
    assert "error" not in plain.stderr
    assert plain.stdout.splitlines()[1:] == r.stdout.splitlines()[1:]
    assert "springs not converged at frame(s): 20 (residual " in plain.stdout


@needs_cli
@pytest.mark.parametrize("kind", ["lbs", "springs"])
def test_cli_strict_exits_0_when_converged(tmp_path, kind):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(CONVERGED))
    how = ["--method", "lbs"] if kind == "lbs" else ["--graph", graph]
    r = cli("bake", BCN, "-o", tmp_path / "out.pc2", *how, "--frames", "20:23", "--backend",
            "cpu", "--strict")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    if kind == "springs":
        assert "0 frame(s) not converged" in r.stdout


@needs_cli
def test_cli_strict_shard(tmp_path):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(UNCONVERGED))
    r = cli("bake", BCN, "--shard", tmp_path / "d", "--graph", graph, "--frames", "20:23",
            "--backend", "cpu", "--strict")
    assert r.returncode == 1, r.stderr
    (shard,) = (tmp_path / "d").glob("frames-*.ssks")
    assert f"{shard} is written and kept" in r.stderr


def test_unsettled_vertices_are_named_per_vertex():
    """Deformer.spring_unsettled (the Blender panel's per-vertex display):
    after springs stopped at their cap, the vertices whose estimated
    distance to the equilibrium is at least the tolerance are marked (>= 1),
    and the largest value is the residual over the rule's threshold of the
    worst vertex; after a converged solve none is; a graph without springs
    gives zeros; GL refuses, naming the CPU."""
    import numpy as np
    rig = springskin.load(BCN)
    skin, objects = rig.skinning_matrices(30), rig.object_matrices(30)
    stopped = copy.deepcopy(UNCONVERGED)
    stopped["nodes"][1].pop("threshold")  # the default, relative rule
    stopped["nodes"][1]["max_iterations"] = 8
    d = springskin.Deformer(rig, graph=springskin.Graph(stopped, rig), backend="cpu")
    assert d.spring_unsettled().shape == (rig.vertex_count,)
    assert not d.spring_unsettled().any()  # before a deform
    d.deform(skin, objects, frame=30)
    report, u = d.spring_report, d.spring_unsettled()
    assert not report["converged"]
    assert u.dtype == np.float32 and np.isfinite(u).all() and (u >= 0).all()
    assert (u >= 1).sum() > 0 and (u < 1).sum() > 0, (u >= 1).sum()
    # the converged solve of the same frame: nothing unsettled
    full = springskin.Deformer(rig, method="spring", backend="cpu")
    full.deform(skin, objects, frame=30)
    assert full.spring_report["converged"]
    settled = full.spring_unsettled()
    assert settled.max() < 1 and settled.max() > 0
    # the ones marked moved most in the stopped solve's last pass: they are
    # where it is still far from the converged result
    far = np.linalg.norm(d.deform(skin, objects, frame=30) - full.deform(skin, objects,
                                                                         frame=30), axis=1)
    u = d.spring_unsettled()
    assert far[u >= 1].mean() > 2 * far[u < 1].mean()
    lbs = springskin.Deformer(rig, method="lbs", backend="cpu")
    lbs.deform(skin, objects)
    assert not lbs.spring_unsettled().any()
    try:
        gl = springskin.Deformer(rig, method="spring", backend="gl")
    except (springskin.SpringSkinError, RuntimeError, ValueError):
        return  # no GL here
    gl.deform(skin, objects, frame=30)
    with pytest.raises(springskin.SpringSkinError, match="CPU backend only"):
        gl.spring_unsettled()
