"""springskin.distributed on Dask (issue #23): frame chunks baked as shards
on worker processes and merged give the bytes of a single-process bake.

- A LocalCluster of 2 single-threaded workers bakes BCN_Epileptic.X (LBS
  and springs, .pc2), Testwuson.X (its second animation, DQS with normals,
  .abc under SOURCE_DATE_EPOCH) and animation_with_skeleton.fbx (IRS, .pc2)
  in frame chunks; each cache equals springskin.bake's in this process,
  byte for byte. A job whose input does not exist is reported with its
  error and the others finish.
- A rerun after an interrupted run keeps the valid shards and bakes only
  the missing one; the cache is the same.
- A real `dask scheduler` and two `dask worker` processes on 127.0.0.1,
  one killed (SIGKILL) in the middle of a springs bake: Dask runs its tasks
  on the other worker and the cache is still the single bake's bytes.
- `springskin bake-many jobs.json --scheduler ADDR` (the CLI front) gives
  the same cache.

The reference bakes run here with the core's default threads, the workers
with one: the core's results do not depend on the thread count (issue
#17), so equal bytes are expected and required.
"""

import filecmp
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from api_helpers import BCN, CLI, MODELS, needs_models

distributed = pytest.importorskip("distributed", reason="python3-distributed is not installed")

import springskin  # noqa: E402
import springskin.distributed as sd  # noqa: E402

TESTWUSON = os.path.join(MODELS, "X", "Testwuson.X")
FBX = os.path.join(MODELS, "FBX", "animation_with_skeleton.fbx")
#: Any fixed date: the .abc records it (2023-11-14 22:13:20 UTC).
EPOCH = "1700000000"
#: Seconds to wait for the scheduler file and the workers.
START_TIMEOUT = 60.0

pytestmark = needs_models


def reference(tmp_path, job):
    """springskin.bake of the job in this process: the bytes to match."""
    job = sd.Job(job)
    rig = springskin.load(job["input"])
    out = tmp_path / ("ref-" + os.path.basename(job["output"]))
    springskin.bake(rig, out, frames=job["frames"], fps=job["fps"], method=job["method"],
                    graph=job["graph"], backend=job["backend"], animation=job["animation"],
                    normals=job["normals"])
    return out


@pytest.fixture(scope="module")
def client():
    # workers inherit the environment: the .abc date is fixed for them too
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
    if old is None:
        del os.environ["SOURCE_DATE_EPOCH"]
    else:
        os.environ["SOURCE_DATE_EPOCH"] = old


def test_local_cluster_equals_single_process(client, tmp_path):
    jobs = [
        {"input": BCN, "output": str(tmp_path / "bcn_lbs.pc2"), "method": "lbs"},
        {"input": BCN, "output": str(tmp_path / "bcn_spring.pc2"), "method": "spring",
         "frames": [3, 70]},
        {"input": TESTWUSON, "output": str(tmp_path / "wuson_dqs.abc"), "method": "dqs",
         "animation": 1, "normals": True},
        {"input": FBX, "output": str(tmp_path / "fbx_irs.pc2"), "method": "irs"},
        {"input": str(tmp_path / "missing.X"), "output": str(tmp_path / "missing.pc2")},
    ]
    reports = sd.bake(jobs, client=client, chunk=12, progress=False)
    assert [r["output"] for r in reports] == [j["output"] for j in jobs]
    bad = reports[-1]
    assert not bad["ok"] and "missing.X" in bad["error"]
    assert not os.path.exists(jobs[-1]["output"])
    for job, report in zip(jobs[:-1], reports[:-1]):
        assert report["ok"], report["error"]
        assert report["chunks"] >= 2 and report["workers"]
        assert filecmp.cmp(reference(tmp_path, job), job["output"], shallow=False), job
        # the shards went once the cache was written
        assert not os.path.exists(job["output"] + ".shards")
    assert reports[1]["frames"] == 68
    # both workers took part
    assert len({w for r in reports[:-1] for w in r["workers"]}) == 2
    with open(jobs[2]["output"], "rb") as f:
        assert b"_ai_DateWritten=Tue Nov 14 22:13:20 2023" in f.read()


def test_rerun_keeps_valid_shards(client, tmp_path):
    job = {"input": BCN, "output": str(tmp_path / "again.pc2"), "method": "spring",
           "frames": [0, 39]}
    first = sd.bake([job], client=client, chunk=10, progress=False, keep_shards=True)[0]
    assert first["ok"] and first["chunks"] == 4 and first["reused_chunks"] == 0
    # an interrupted run: no cache, one shard missing, one damaged
    os.remove(job["output"])
    shards = sorted(p for p in os.listdir(job["output"] + ".shards") if p.endswith(".ssks"))
    assert len(shards) == 4
    os.remove(os.path.join(job["output"] + ".shards", shards[1]))
    with open(os.path.join(job["output"] + ".shards", shards[3]), "r+b") as f:
        f.seek(-10, os.SEEK_END)
        byte = f.read(1)
        f.seek(-10, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0xFF]))
    again = sd.bake([job], client=client, chunk=10, progress=False)[0]
    assert again["ok"], again["error"]
    assert again["reused_chunks"] == 2
    assert filecmp.cmp(reference(tmp_path, job), job["output"], shallow=False)


def test_frame_dependent_job_is_reported(client, tmp_path):
    graph = {"version": 1, "nodes": [
        {"id": "skin", "type": "skinning", "method": "irs"},
        {"id": "relax", "type": "spring", "mode": "frame_dependent"},
        {"id": "out", "type": "output"}],
        "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}
    job = {"input": BCN, "output": str(tmp_path / "dep.pc2"), "graph": graph, "frames": [0, 9]}
    report = sd.bake([job], client=client, chunk=5, progress=False)[0]
    assert not report["ok"]
    assert "frame-dependent" in report["error"]
    assert not os.path.exists(job["output"])


def test_unconverged_springs_are_reported(client, tmp_path, capsys):
    """Issue #36: springs stopped after 2 passes (threshold 1e-9) on frames
    20..23 in chunks of 2: the job's report names all 4 frames, one
    SpringNotConvergedWarning is issued, the cache is written; bake-many
    prints a warning, and with --strict (or "strict": true) exits 1."""
    graph = {"version": 1, "nodes": [
        {"id": "skin", "type": "skinning", "method": "irs"},
        {"id": "relax", "type": "spring", "max_iterations": 2, "threshold": 1e-9},
        {"id": "out", "type": "output"}],
        "edges": [{"from": "skin", "to": "relax"}, {"from": "relax", "to": "out"}]}
    job = {"input": BCN, "output": str(tmp_path / "unconverged.pc2"), "graph": graph,
           "frames": [20, 23]}
    with pytest.warns(springskin.SpringNotConvergedWarning, match="unconverged.pc2|BCN"):
        report = sd.bake([job], client=client, chunk=2, progress=False)[0]
    assert report["ok"], report["error"]
    assert report["chunks"] == 2 and os.path.exists(job["output"])
    assert report["spring_frames_unconverged"] == 4
    assert [f for f, _ in report["spring_unconverged_frames"]] == [20, 21, 22, 23]
    assert "springs not converged at 4 of 4 frame(s) within 2 iterations: frame(s) 20 " \
           "(residual " in report["warning"]
    assert "'relax' (now 2, default 100)" in report["warning"]
    lbs = sd.bake([{"input": BCN, "output": str(tmp_path / "lbs.pc2"), "frames": [20, 23]}],
                  client=client, chunk=2, progress=False)[0]
    assert lbs["ok"] and lbs["warning"] is None and lbs["spring_frames_unconverged"] == 0
    # the command line, on this cluster
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps([job]))
    address = client.scheduler.address
    capsys.readouterr()
    assert sd.main([str(jobs_file), "--scheduler", address, "--quiet", "--chunk", "2"]) == 0
    err = capsys.readouterr().err
    assert f"springskin: warning: {BCN}: springs not converged at 4 of 4 frame(s)" in err
    assert sd.main([str(jobs_file), "--scheduler", address, "--quiet", "--chunk", "2",
                    "--strict"]) == 1
    err = capsys.readouterr().err
    assert f"springskin: error: {BCN}: springs not converged at 4 of 4 frame(s)" in err
    assert f"{job['output']} is written and kept (--strict)" in err
    assert os.path.exists(job["output"])
    jobs_file.write_text(json.dumps({"jobs": [job], "strict": True, "chunk": 2}))
    assert sd.main([str(jobs_file), "--scheduler", address, "--quiet"]) == 1
    jobs_file.write_text(json.dumps({"jobs": [job], "strict": "yes"}))
    assert sd.main([str(jobs_file), "--scheduler", address, "--quiet"]) == 2


def _start(args, env):
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def test_real_scheduler_with_a_worker_killed(tmp_path):
    env = dict(os.environ, SOURCE_DATE_EPOCH=EPOCH)
    scheduler_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m"]
    procs = [_start(dask + ["distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                            "--port", "0", "--no-dashboard", "--scheduler-file",
                            str(scheduler_file)], env)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert scheduler_file.exists(), "the scheduler did not start"
        for _ in range(2):
            procs.append(_start(dask + ["distributed.cli.dask_worker", "--scheduler-file",
                                        str(scheduler_file), "--nthreads", "1", "--no-nanny",
                                        "--host", "127.0.0.1", "--no-dashboard"], env))
        address = json.loads(scheduler_file.read_text())["address"]
        c = distributed.Client(address)
        try:
            c.wait_for_workers(2, timeout=START_TIMEOUT)
            job = {"input": BCN, "output": str(tmp_path / "killed.pc2"), "method": "spring"}
            shards = job["output"] + ".shards"
            result = {}
            run = threading.Thread(target=lambda: result.update(
                report=sd.bake([job], client=c, chunk=4, progress=False)[0]))
            run.start()
            # kill one worker once the first shards exist, well before the last
            deadline = time.monotonic() + START_TIMEOUT
            done = 0
            while time.monotonic() < deadline:
                done = len([p for p in os.listdir(shards) if p.endswith(".ssks")]) \
                    if os.path.isdir(shards) else 0
                if done >= 2:
                    break
                time.sleep(0.01)
            procs[1].send_signal(signal.SIGKILL)
            procs[1].wait()
            assert 2 <= done < 20, f"{done} of 20 shards when the worker was killed"
            run.join(START_TIMEOUT * 2)
            assert not run.is_alive()
            report = result["report"]
            assert report["ok"], report["error"]
            assert len(c.scheduler_info()["workers"]) == 1
            assert filecmp.cmp(reference(tmp_path, job), job["output"], shallow=False)

            # the CLI front on the same scheduler (one worker left)
            if CLI and os.path.exists(CLI):
                jobs_file = tmp_path / "jobs.json"
                cli_out = tmp_path / "cli.abc"
                jobs_file.write_text(json.dumps({"jobs": [
                    {"input": BCN, "output": str(cli_out), "method": "dqs"}], "chunk": 30}))
                r = subprocess.run([CLI, "bake-many", str(jobs_file), "--scheduler", address,
                                    "--quiet"], env=env, capture_output=True, text=True,
                                   timeout=START_TIMEOUT * 2)
                assert r.returncode == 0, r.stderr
                assert "baked 80 frames" in r.stdout
                old = os.environ.get("SOURCE_DATE_EPOCH")
                os.environ["SOURCE_DATE_EPOCH"] = EPOCH
                try:
                    ref = reference(tmp_path, {"input": BCN, "output": str(cli_out),
                                               "method": "dqs"})
                finally:
                    if old is None:
                        del os.environ["SOURCE_DATE_EPOCH"]
                    else:
                        os.environ["SOURCE_DATE_EPOCH"] = old
                assert filecmp.cmp(ref, cli_out, shallow=False)
        finally:
            c.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
