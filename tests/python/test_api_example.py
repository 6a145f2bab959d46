"""examples/batch_bind.py on a small folder of Debian's Assimp test models:
the CSV report has a row per model file, with the counts and timings of
the usable ones and the reason for the others."""

import argparse
import csv
import faulthandler
import importlib.util
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import springskin
from api_helpers import BCN, MODELS, SOURCE_DIR, needs_models

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "batch_bind.py")


@needs_models
def test_batch_bind_report(tmp_path):
    folder = tmp_path / "models"
    (folder / "sub").mkdir(parents=True)
    for name in ("BCN_Epileptic.X", "anim_test.x", "test.x"):
        shutil.copy(os.path.join(MODELS, "X", name), folder / name)
    (folder / "sub" / "junk.fbx").write_bytes(b"\x00not a model" * 64)
    (folder / "notes.txt").write_text("not a model extension: not listed")
    report = tmp_path / "report.csv"
    result = subprocess.run(
        [sys.executable, EXAMPLE, str(folder), "--method", "irs", "--backend", "cpu",
         "--frames", "4", "--out", str(report)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    with open(report, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["file", "vertices", "bones", "bind ms", "ms/frame", "status"]
        rows = {os.path.relpath(row["file"], folder): row for row in reader}
    expected = {"BCN_Epileptic.X", "anim_test.x", "test.x", os.path.join("sub", "junk.fbx")}
    assert set(rows) == expected

    for name in ("BCN_Epileptic.X", "anim_test.x"):
        row = rows[name]
        rig = springskin.load(folder / name)
        assert (int(row["vertices"]), int(row["bones"])) == (rig.vertex_count, rig.bone_count)
        assert float(row["bind ms"]) > 0.0 and float(row["ms/frame"]) > 0.0
        assert row["status"] == "ok: 4 frames on cpu"
    assert rows["BCN_Epileptic.X"]["vertices"] == "3014"

    no_bones = rows["test.x"]
    assert no_bones["status"].startswith("skipped: SpringSkinError: ")
    assert "no mesh has bones" in no_bones["status"]
    assert no_bones["vertices"] == no_bones["ms/frame"] == ""
    junk = rows[os.path.join("sub", "junk.fbx")]
    assert junk["status"].startswith("skipped: SpringSkinError: Assimp could not import")
    assert f"{len(expected)} file(s), 2 baked with irs" in result.stdout


@needs_models
def test_batch_bind_lbs_needs_no_binding(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(os.path.join(MODELS, "X", "anim_test.x"), folder / "anim_test.x")
    report = tmp_path / "r.csv"
    result = subprocess.run(
        [sys.executable, EXAMPLE, str(folder), "--method", "lbs", "--backend", "cpu",
         "--frames", "2", "--out", str(report), "--no-isolate"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    with open(report, newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["bind ms"] == "" and row["status"] == "ok: 2 frames on cpu"


def test_batch_bind_usage_errors(tmp_path):
    result = subprocess.run([sys.executable, EXAMPLE, str(tmp_path / "none")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "not a folder" in result.stderr
    result = subprocess.run([sys.executable, EXAMPLE, str(tmp_path), "--method", "blend"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "invalid choice: 'blend'" in result.stderr


def load_example():
    spec = importlib.util.spec_from_file_location("batch_bind", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def crash(path, args, workdir):
    faulthandler.disable()  # pytest's handler would print the child's stack
    os.abort()  # as Assimp's ai_assert does on some broken files


def hang(path, args, workdir):
    time.sleep(60)


@pytest.mark.parametrize("work,status", [
    (crash, "skipped: the process died with SIGABRT (the importer aborted)"),
    (hang, "skipped: timed out after 0.5 s"),
])
def test_batch_bind_isolates_a_file_that_kills_the_process(tmp_path, monkeypatch, work, status):
    """Assimp aborts on some files (invalid/OutOfMemory.off, after trying to
    allocate 15 GB): the isolated run records it and goes on."""
    example = load_example()
    monkeypatch.setattr(example, "process", work)
    args = argparse.Namespace(timeout=0.5)
    start = time.monotonic()
    row = example.process_isolated("broken.off", args, str(tmp_path))
    assert time.monotonic() - start < 30
    assert row == {"file": "broken.off", "vertices": "", "bones": "", "bind ms": "",
                   "ms/frame": "", "status": status}


@needs_models
@pytest.mark.skipif(shutil.which("blender") is None, reason="no blender (Debian's blender 3.4 "
                    "runs the system Python 3.11; not a build dependency)")
def test_inside_blender_gives_the_same_positions(tmp_path):
    """The package imports in Blender's Python (Debian's Blender uses the
    system interpreter) and deforms exactly as outside."""
    out = tmp_path / "blender.npy"
    script = (
        "import numpy, springskin\n"
        f"rig = springskin.load({BCN!r})\n"
        "d = springskin.Deformer(rig, method='dqs', backend='cpu')\n"
        f"numpy.save({str(out)!r}, d.deform_frame(17))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.path.dirname(os.path.dirname(springskin.__file__)),
                    os.environ.get("PYTHONPATH", "")) if p))
    result = subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1",
                             "--python-expr", script], capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    rig = springskin.load(BCN)
    expected = springskin.Deformer(rig, method="dqs", backend="cpu").deform_frame(17)
    np.testing.assert_array_equal(np.load(out), expected)
