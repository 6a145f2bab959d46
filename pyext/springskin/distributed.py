"""Bakes on a Dask cluster: frame chunks as tasks, shards merged (issue #23).

Each job (an input file baked to one cache) is split into frame chunks;
each chunk is a Dask task that bakes its frames as a frame shard
(:func:`springskin.bake` with ``shard=``) into the job's shard directory,
and one more task per job merges the shards (:func:`springskin.merge`)
into the cache: the bytes a single-process bake of the job writes (an
``.abc`` records its date unless ``SOURCE_DATE_EPOCH`` is set). SpringSkin
has no scheduler of its own: Dask places, retries and balances the tasks.

- Each worker process imports a job's file once, binds once (the
  attachment binding of the methods that need one goes through the binding
  cache, ``<shards>/binding.ssb``: the job's plan task binds, the workers
  load it) and makes the job's deformer once (the spring solver's setup
  takes seconds at 100k vertices); rig and deformer stay in the worker for
  the job's next chunks.
- A task whose worker dies is run again elsewhere by Dask (up to the
  scheduler's ``allowed-failures``); a shard is written under a temporary
  name and renamed, so a half-written one never counts.
- A job whose input fails to import is reported with the error, and the
  other jobs finish.
- A run that stops before a job's merge leaves no cache for it, only its
  shards; running again keeps every shard that is complete and valid (same
  bake, checksum) and bakes the rest.
- Spring frames that did not converge are collected from the chunks into
  the job's report (``warning``, ``spring_frames_unconverged``,
  ``spring_unconverged_frames``) and issued once per job as
  :class:`springskin.SpringNotConvergedWarning`; the cache is written.

Everything a worker reads or writes (inputs, shard directories, outputs) must
be at the same path on every worker (a shared file system) when the cluster
spans machines.

The command-line front is ``springskin bake-many jobs.json [--scheduler
tcp://HOST:PORT]`` (the ``springskin`` executable runs ``python3 -m
springskin.distributed``); see :func:`main`.
"""

import json
import os
import sys
import time
import warnings

from . import _checks
from .bake import (SpringNotConvergedWarning, _bake, _graph_doc, _spring_advice,
                   _unconverged_message)

__all__ = ["Job", "bake", "main"]

#: Frames per task by default.
DEFAULT_CHUNK = 25
#: Methods whose bake needs an attachment binding (ssk_graph_needs_binding
#: of their graph), and the one that also needs centers of rotation.
_BINDING_METHODS = ("rigid", "irs", "spring", "cor")
#: Rigs and deformers a worker keeps (the jobs it plans and runs).
_WORKER_RIGS = 8
_WORKER_DEFORMERS = 4
#: Seconds between two progress lines.
_PROGRESS_SECONDS = 1.0
#: Unconverged spring frames a job's report lists (SSK_BAKE_LISTED_FRAMES).
_LISTED_FRAMES = 8


class Job(dict):
    """One bake: a dict with the keys below (unknown keys are refused).

    - ``input``: str, the rigged file (any format Assimp reads).
    - ``output``: str, the cache, ``.pc2`` or ``.abc``.
    - ``method``: str (default "lbs") or ``graph``: a graph file path or
      dict, exclusive.
    - ``frames``: None (the whole animation) or [first, last] inclusive.
    - ``fps``: float (24), ``animation``: int (0), ``normals``: bool
      (False; ``.abc`` only), ``backend``: "cpu" (default) or "gl"/"auto".
    - ``shards``: the shard directory (default ``<output>.shards``).
    """

    KEYS = ("input", "output", "method", "graph", "frames", "fps", "animation", "normals",
            "backend", "shards")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        unknown = sorted(set(self) - set(self.KEYS))
        if unknown:
            raise ValueError(f"job: unknown key(s) {unknown}; expected {list(self.KEYS)}")
        for key in ("input", "output"):
            if key not in self:
                raise ValueError(f"job: missing {key!r}")
            self[key] = os.fspath(self[key])
        if self.get("method") is not None and self.get("graph") is not None:
            raise ValueError("job: method and graph exclude each other")
        self.setdefault("method", None if self.get("graph") is not None else "lbs")
        self.setdefault("graph", None)
        self.setdefault("frames", None)
        self.setdefault("fps", 24.0)
        self.setdefault("animation", 0)
        self.setdefault("normals", False)
        self.setdefault("backend", "cpu")
        self.setdefault("shards", self["output"] + ".shards")
        self["shards"] = os.fspath(self["shards"])


# --------------------------------------------------------------------------
# Worker side.
# --------------------------------------------------------------------------

# (input path, mtime_ns, size) -> Rig; (that key, the job's deformer
# options) -> Deformer; in this worker process, the last _WORKER_RIGS each.
_rigs = {}
_deformers = {}


def _remember(cache, key, value, size):
    while len(cache) >= size:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def _rig_key(path):
    st = os.stat(path)
    return (os.path.abspath(path), st.st_mtime_ns, st.st_size)


def _rig(path):
    """The worker's rig of `path`, imported once per file version."""
    import springskin

    key = _rig_key(path)
    rig = _rigs.get(key)
    return rig if rig is not None else _remember(_rigs, key, springskin.load(path), _WORKER_RIGS)


def _deformer(rig, job):
    """The worker's deformer of the job (its method or graph, binding and
    backend), made once."""
    import springskin

    key = (_rig_key(job["input"]), job["method"], json.dumps(job["graph"], sort_keys=True),
           job["backend"], os.path.abspath(job["shards"]))
    d = _deformers.get(key)
    if d is None:
        d = _remember(_deformers, key, springskin.Deformer(
            rig, method=job["method"], graph=job["graph"], backend=job["backend"],
            binding=_binding(rig, job)), _WORKER_DEFORMERS)
    return d


def _worker_name():
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _plan(job):
    """Task: import the input; the job's frame range and vertex count."""
    rig = _rig(job["input"])
    if not rig.animations:
        raise ValueError(f"{job['input']!r} has no animation to bake")
    count = rig.animations[job["animation"]].frame_count(job["fps"])
    _binding(rig, job)  # bound once here, loaded from the cache by the chunks
    first, last = (0, count - 1) if job["frames"] is None else tuple(job["frames"])
    if not 0 <= first <= last <= count - 1:
        raise ValueError(f"frames {first}..{last} are not a range of the animation "
                         f"(0..{count - 1} at {job['fps']} fps)")
    return {"first": first, "last": last, "vertices": rig.vertex_count}


def _binding(rig, job):
    """The binding of the job's method through the binding cache, or None."""
    if job["graph"] is not None or job["method"] not in _BINDING_METHODS:
        return None
    os.makedirs(job["shards"], exist_ok=True)
    return rig.bind(cache=os.path.join(job["shards"], "binding.ssb"), cor=job["method"] == "cor")


def _chunk(job, first, last, core_threads, plan):
    """Task: bake frames first..last of the job as a shard. `plan` (the
    plan task's result) ties the chunks to the worker that imported the
    file: Dask runs a task where its inputs are, so a job's chunks stay on
    one worker (one import, one deformer) until work stealing moves some
    to an idle worker."""
    del plan
    import springskin

    if core_threads:
        springskin.configure_threads(core_threads)
    t0 = time.perf_counter()
    rig = _rig(job["input"])
    # no warning issued here: the driver issues one per job
    stats, _ = _bake(rig, path=None, frames=(first, last), fps=job["fps"], method=None,
                     graph=None, backend="auto", binding=None, animation=job["animation"],
                     gl_context=None, normals=job["normals"], cage=None, cage_edit=None,
                     implicit_operators=None, shard=job["shards"], deformer=_deformer(rig, job))
    return {"first": first, "last": last, "seconds": time.perf_counter() - t0,
            "reused": stats["shard_reused"], "worker": _worker_name(),
            "spring_frames_unconverged": stats["spring_frames_unconverged"],
            "spring_unconverged_frames": stats["spring_unconverged_frames"],
            "spring_iterations_max": stats["spring_iterations_max"]}


def _merge(job, first, last, keep_shards, *chunks):
    """Task: merge the job's shards into its output (after every chunk);
    then, unless keep_shards, remove the shards, the binding cache and the
    directory when nothing else is in it."""
    import springskin

    del chunks  # only ordering: every chunk is done
    report = springskin.merge(job["shards"], job["output"], frames=(first, last))
    if not keep_shards:
        for name in os.listdir(job["shards"]):
            if name.endswith(".ssks") or name == "binding.ssb":
                os.remove(os.path.join(job["shards"], name))
        try:
            os.rmdir(job["shards"])
        except OSError:
            pass  # something else is in it
    return report


# --------------------------------------------------------------------------
# Driver.
# --------------------------------------------------------------------------

def _chunks(first, last, chunk):
    return [(a, min(a + chunk - 1, last)) for a in range(first, last + 1, chunk)]


def _error_text(exc):
    return f"{type(exc).__name__}: {exc}"


def bake(jobs, client=None, chunk=DEFAULT_CHUNK, core_threads=1, progress=True, workers=None,
         keep_shards=False):
    """Bake every job on a Dask cluster; a report per job.

    Parameters
    ----------
    jobs : iterable of dict or Job
        See :class:`Job`: ``input``, ``output``, ``method`` or ``graph``,
        ``frames``, ``fps``, ``animation``, ``normals``, ``backend``,
        ``shards``.
    client : distributed.Client, optional
        The cluster to run on. None: a ``LocalCluster`` on this machine
        (`workers` processes, default one per CPU, one thread each), closed
        at the end.
    chunk : int, default 25
        Frames per task (>= 1).
    core_threads : int or None, default 1
        Threads of the SpringSkin core in each task
        (:func:`springskin.configure_threads`): 1 suits one single-threaded
        worker per core; None keeps the worker's setting (every CPU).
    progress : bool, default True
        A plain progress line on stderr (tasks done, jobs merged).
    workers : int, optional
        Worker processes of the LocalCluster that `client=None` starts.
    keep_shards : bool, default False
        Keep a job's shards (and binding cache) after its merge; by default
        they are removed once the cache is written. A job that does not
        reach its merge always keeps them, for the next run.

    Returns
    -------
    list of dict
        Per job, in order: ``input``, ``output``, ``ok`` (bool), ``error``
        (None or the text of the exception that stopped the job: an import
        error, a frame range outside the animation, a refused
        frame-dependent graph...), ``frames`` (baked into the cache),
        ``vertices``, ``chunks``, ``reused_chunks`` (valid shards kept from
        an earlier run), ``seconds`` (from submission to its merge),
        ``chunk_seconds`` (the tasks' own time, summed), ``workers``
        (addresses that baked its chunks), ``merge`` (the merge's report:
        :func:`springskin.merge`), ``spring_frames_unconverged`` (spring
        frames of its chunks that did not converge within the spring
        node's ``max_iterations``), ``spring_unconverged_frames`` (the
        first 8 of them, (frame, final residual), in frame order) and
        ``warning`` (None, or the message on them that
        :func:`springskin.bake` gives: the frames, their count, what to
        change). Chunks kept from an earlier run (``reused_chunks``) were
        not deformed again and add nothing to these.

    Warns
    -----
    SpringNotConvergedWarning
        Once per job whose springs did not converge at some frames (its
        ``warning``); its cache is written all the same.

    Raises
    ------
    ValueError, TypeError
        A malformed job or argument (nothing is run).
    ImportError
        Dask's ``distributed`` is not installed (Debian:
        python3-distributed).
    """
    from distributed import Client, LocalCluster, as_completed

    jobs = [j if isinstance(j, Job) else Job(j) for j in jobs]
    chunk = _checks.integer(chunk, "chunk", 1, 2**31 - 1)
    if core_threads is not None:
        core_threads = _checks.integer(core_threads, "core_threads", 1, 256)
    cluster = None
    if client is None:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        reports = _run(client, jobs, chunk, core_threads, progress, keep_shards, as_completed)
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
    for r in reports:
        if r["warning"] is not None:
            warnings.warn(f"{r['input']}: {r['warning']}", SpringNotConvergedWarning,
                          stacklevel=2)
    return reports


def _run(client, jobs, chunk, core_threads, progress, keep_shards, as_completed):
    reports = []
    for job in jobs:
        reports.append({"input": job["input"], "output": job["output"], "ok": False,
                        "error": None, "frames": 0, "vertices": 0, "chunks": 0,
                        "reused_chunks": 0, "seconds": 0.0, "chunk_seconds": 0.0,
                        "workers": [], "merge": None, "spring_frames_unconverged": 0,
                        "spring_unconverged_frames": [], "warning": None,
                        "_start": time.perf_counter(), "_baked": 0, "_iterations": 0})
    # which job and what each future is
    role = {}
    # every future stays referenced until the run ends: a worker that dies
    # loses the results it holds, and the scheduler recomputes a lost
    # result (a plan a later chunk needs, a chunk the merge needs) from the
    # futures' task specs only while some client holds them
    held = []
    futures = as_completed()
    for i, job in enumerate(jobs):
        f = client.submit(_plan, job, key=f"springskin-plan-{i}-{os.getpid()}-{time.time_ns()}",
                          pure=False)
        role[f.key] = (i, "plan")
        held.append(f)
        futures.add(f)
    total_tasks, done_tasks, merged = len(jobs), 0, 0
    last_line = 0.0
    for f in futures:
        i, what = role[f.key]
        report = reports[i]
        done_tasks += 1
        try:
            result = f.result()
        except Exception as exc:  # the job failed; the others go on
            if report["error"] is None:
                report["error"] = _error_text(exc)
            result = None
        if result is not None and what == "plan":
            job = jobs[i]
            report["vertices"] = result["vertices"]
            ranges = _chunks(result["first"], result["last"], chunk)
            report["chunks"] = len(ranges)
            parts = [client.submit(_chunk, job, a, b, core_threads, f, pure=False)
                     for a, b in ranges]
            held.extend(parts)
            for p in parts:
                role[p.key] = (i, "chunk")
                futures.add(p)
            m = client.submit(_merge, job, result["first"], result["last"], keep_shards, *parts,
                              pure=False)
            role[m.key] = (i, "merge")
            held.append(m)
            futures.add(m)
            total_tasks += len(parts) + 1
        elif result is not None and what == "chunk":
            report["chunk_seconds"] += result["seconds"]
            report["reused_chunks"] += bool(result["reused"])
            if not result["reused"]:  # a kept shard was not deformed
                report["_baked"] += result["last"] - result["first"] + 1
            report["spring_frames_unconverged"] += result["spring_frames_unconverged"]
            report["spring_unconverged_frames"] = sorted(
                report["spring_unconverged_frames"] +
                [tuple(p) for p in result["spring_unconverged_frames"]])[:_LISTED_FRAMES]
            report["_iterations"] = max(report["_iterations"], result["spring_iterations_max"])
            if result["worker"] not in report["workers"]:
                report["workers"].append(result["worker"])
        elif result is not None and what == "merge":
            report["merge"] = result
            report["frames"] = result["frame_count"]
            report["ok"] = report["error"] is None
            report["seconds"] = time.perf_counter() - report["_start"]
            merged += 1
        elif what in ("chunk", "plan"):
            # the merge depending on a failed chunk fails too; nothing to add
            pass
        now = time.perf_counter()
        if progress and (now - last_line >= _PROGRESS_SECONDS or done_tasks == total_tasks):
            last_line = now
            print(f"\rbake-many: {done_tasks}/{total_tasks} tasks, {merged}/{len(jobs)} jobs "
                  f"merged", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    for job, r in zip(jobs, reports):
        if r["spring_frames_unconverged"]:
            r["warning"] = _unconverged_message(
                r["spring_frames_unconverged"], r["_baked"], r["spring_unconverged_frames"],
                r["_iterations"], _spring_advice(_graph_doc(job["graph"]), job["method"]))
        for key in ("_start", "_baked", "_iterations"):
            del r[key]
        if r["error"] is None and not r["ok"]:
            r["error"] = "the job did not finish"
    return reports


# --------------------------------------------------------------------------
# Command line: springskin bake-many jobs.json [--scheduler tcp://HOST:PORT]
# --------------------------------------------------------------------------

_USAGE = """usage: springskin bake-many JOBS.json [--scheduler tcp://HOST:PORT] [--chunk N]
                           [--workers N] [--core-threads N] [--quiet] [--strict]

Bakes every job of JOBS.json on a Dask cluster (python3-distributed): each
job's frames in chunks of N (default 25) as tasks writing frame shards,
merged into the job's cache at the end: the bytes 'springskin bake' writes
(set SOURCE_DATE_EPOCH for .abc dates). JOBS.json: a list of jobs, or
{"jobs": [...], "chunk": N, "strict": false}; a job: {"input": FILE, "output": OUT.pc2|.abc,
"method": M or "graph": G.json, "frames": [A, B], "fps": 24, "animation": 0,
"normals": false, "backend": "cpu", "shards": DIR (default OUT.shards)}.

options:
  --scheduler ADDR   a running scheduler ('dask scheduler'; workers:
                     'dask worker ADDR'); default: a LocalCluster here
  --chunk N          frames per task (default 25)
  --workers N        LocalCluster worker processes (default: one per CPU)
  --core-threads N   core threads per task (default 1)
  --keep-shards      keep each job's shards after its merge
  --quiet            no progress line
  --json             also print the reports as JSON
  --strict           exit 1 when the springs of a job did not converge at
                     some frames (its cache is still written and kept);
                     also "strict": true in JOBS.json

Prints one line per job (frames, vertices, seconds, workers, or its error),
a warning on stderr naming a job's spring frames that did not converge
within their iterations, and a JSON report with --json. Exit status: 0 when
every job finished, 1 when one failed (the others still finish) or, with
--strict, when one has unconverged spring frames, 2 on a usage error. A
rerun keeps the valid shards of an interrupted run.
"""


def main(argv=None):
    """The ``springskin bake-many`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    options = {"--scheduler": None, "--chunk": str(DEFAULT_CHUNK), "--workers": None,
               "--core-threads": "1"}
    flags = {"--quiet": False, "--json": False, "--keep-shards": False, "--strict": False}
    path = None
    it = iter(argv)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in options:
            options[name] = value if eq else next(it, None)
            if options[name] is None:
                print(f"springskin: error: option '{name}' needs a value", file=sys.stderr)
                return 2
        elif arg in flags:
            flags[arg] = True
        elif arg.startswith("-"):
            print(f"springskin: error: unknown option '{arg}'\nTry 'springskin bake-many "
                  f"--help'.", file=sys.stderr)
            return 2
        elif path is None:
            path = arg
        else:
            print(f"springskin: error: unexpected argument '{arg}'", file=sys.stderr)
            return 2
    if path is None:
        print("springskin: error: missing JOBS.json", file=sys.stderr)
        return 2
    try:
        numbers = {k: int(options[k]) for k in ("--chunk", "--workers", "--core-threads")
                   if options[k] is not None}
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        if isinstance(spec, dict):
            numbers.setdefault("--chunk", spec.get("chunk", DEFAULT_CHUNK))
            if not isinstance(spec.get("strict", False), bool):
                raise ValueError("\"strict\": expected true or false")
            flags["--strict"] = flags["--strict"] or spec.get("strict", False)
            spec = spec.get("jobs")
        if not isinstance(spec, list):
            raise ValueError("expected a list of jobs or {\"jobs\": [...]}")
        jobs = [Job(j) for j in spec]
    except (OSError, ValueError, TypeError) as exc:
        print(f"springskin: error: {path}: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (ValueError, TypeError)) else 1
    client = None
    if options["--scheduler"]:
        from distributed import Client

        client = Client(options["--scheduler"])
    try:
        with warnings.catch_warnings():
            # printed below, one line per job
            warnings.simplefilter("ignore", SpringNotConvergedWarning)
            reports = bake(jobs, client=client, chunk=numbers.get("--chunk", DEFAULT_CHUNK),
                           core_threads=numbers.get("--core-threads", 1),
                           progress=not flags["--quiet"], workers=numbers.get("--workers"),
                           keep_shards=flags["--keep-shards"])
    finally:
        if client is not None:
            client.close()
    strict_failed = False
    for r in reports:
        if r["ok"]:
            print(f"baked {r['frames']} frames x {r['vertices']} vertices in {r['seconds']:.3f} s "
                  f"({r['chunks']} chunks, {r['reused_chunks']} kept, on "
                  f"{len(r['workers'])} worker(s)) -> {r['output']}")
        else:
            print(f"springskin: error: {r['input']}: {r['error']}", file=sys.stderr)
        if r["warning"] is not None and flags["--strict"]:
            strict_failed = True
            kept = f"; {r['output']} is written and kept" if r["ok"] else ""
            print(f"springskin: error: {r['input']}: {r['warning']}{kept} (--strict)",
                  file=sys.stderr)
        elif r["warning"] is not None:
            print(f"springskin: warning: {r['input']}: {r['warning']}", file=sys.stderr)
    if flags["--json"]:
        print(json.dumps(reports, indent=1))
    return 0 if all(r["ok"] for r in reports) and not strict_failed else 1


if __name__ == "__main__":
    sys.exit(main())
