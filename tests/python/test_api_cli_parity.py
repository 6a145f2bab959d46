"""The Python API gives exactly what the springskin CLI gives for the same
input: info counts, bakes (file bytes and per-frame deform), bindings."""

import re
import subprocess

import numpy as np
import pytest

import springskin
from api_helpers import BCN, CLI, SOURCE_DIR, needs_cli, needs_models, read_pc2

pytestmark = [needs_models, needs_cli]


def cli(*args):
    result = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def bcn():
    return springskin.load(BCN)


def test_info_counts_match(bcn):
    text = cli("info", BCN, "--fps", 30)
    meshes = re.findall(r"^  '(.*)': (\d+) vertices, (\d+) triangles$", text, re.M)
    assert [(m.name, m.vertex_count, m.triangle_count) for m in bcn.meshes] == \
        [(name, int(v), int(f)) for name, v, f in meshes]
    bones, deforming, influences = map(int, re.search(
        r"bones: (\d+) \((\d+) deforming\), max influences per vertex: (\d+)", text).groups())
    assert (bcn.bone_count, bcn.deforming_bone_count, bcn.max_influences) == \
        (bones, deforming, influences)
    name, seconds, frames = re.search(r"\[0\] '(.*)': ([\d.]+) s, (\d+) frames", text).groups()
    assert bcn.animation.name == name
    assert bcn.animation.duration == pytest.approx(float(seconds), abs=5e-4)
    assert bcn.animation.frame_count(30) == int(frames)


@pytest.mark.parametrize("method", ["lbs", "dqs", "irs"])
def test_bake_equals_cli_bake_and_deform_frame(bcn, tmp_path, method):
    ours = tmp_path / f"py_{method}.pc2"
    theirs = tmp_path / f"cli_{method}.pc2"
    cli("bake", BCN, "-o", theirs, "--method", method, "--backend", "cpu", "--frames", "0:20",
        "--fps", 30)
    stats = springskin.bake(bcn, ours, frames=(0, 20), fps=30, method=method, backend="cpu")
    assert stats["frame_count"] == 21
    assert ours.read_bytes() == theirs.read_bytes()
    start, _, frames = read_pc2(theirs)
    assert start == 0.0 and frames.shape == (21, 3014, 3)
    deformer = springskin.Deformer(bcn, method=method, backend="cpu")
    for frame in (0, 7, 20):
        np.testing.assert_array_equal(deformer.deform_frame(frame, fps=30), frames[frame])
        # the same through the explicit sampling API
        skinning, objects = bcn.sample(frame, fps=30)
        np.testing.assert_array_equal(deformer.deform(skinning, objects), frames[frame])
    assert np.abs(frames[20] - frames[0]).max() > 1e-3  # the animation moves


def test_graph_bake_equals_cli(bcn, tmp_path):
    graph = f"{SOURCE_DIR}/examples/graphs/irs_bulge.json"
    theirs = tmp_path / "cli.pc2"
    ours = tmp_path / "py.pc2"
    cli("bake", BCN, "-o", theirs, "--graph", graph, "--backend", "cpu", "--frames", "10:30")
    springskin.bake(bcn, ours, frames=range(10, 31), graph=graph, backend="cpu")
    assert ours.read_bytes() == theirs.read_bytes()
    # and frame by frame with the keyed bulge evaluated at each frame
    _, _, frames = read_pc2(theirs)
    deformer = springskin.Deformer(bcn, graph=graph, backend="cpu")
    np.testing.assert_array_equal(deformer.deform_frame(20), frames[10])


def test_binding_equals_cli_bind(bcn, tmp_path):
    path = tmp_path / "cli.bind"
    out = cli("bind", BCN, "-o", path, "--method", "direct", "--smooth", 4)
    assert "bound 3014 vertices to 54 bones" in out
    theirs = springskin.load_binding(path, bcn)
    ours = bcn.bind(method="direct", smooth_iterations=4)
    assert (theirs.method, theirs.smooth_iterations) == ("direct", 4)
    np.testing.assert_array_equal(ours.bones, theirs.bones)
    np.testing.assert_array_equal(ours.t, theirs.t)
    np.testing.assert_array_equal(ours.scale_vectors, theirs.scale_vectors)
    # the CLI reuses a binding the API saved
    saved = tmp_path / "py.bind"
    ours.save(saved)
    assert "reused" in cli("bind", BCN, "-o", saved, "--method", "direct", "--smooth", 4)
