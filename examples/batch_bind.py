#!/usr/bin/env python3
"""Bind and bake every rigged file in a folder, with a CSV report.

For each file Assimp may read (by extension) under FOLDER: load it, bind it
when the method needs an attachment binding (timed), bake its first
animation to a temporary point cache (timed, ms per frame) and write one
CSV row: file, vertices, bones, bind ms, ms/frame, status. Files that
cannot be used (not a model, no skeleton, no animation, ...) get a row
whose status gives the reason; the run goes on. Each file is processed in
a child process of its own (unless --no-isolate), so that a file on which
the importer aborts (Assimp asserts on some broken files) or hangs costs
only its own row.

    PYTHONPATH=build/python /usr/bin/python3 examples/batch_bind.py \\
        /usr/share/assimp/models --method irs --out report.csv

Exit status: 0 when every file was processed (used or skipped with a
reason), 1 when none could be baked, 2 for usage errors.
"""

import argparse
import csv
import multiprocessing
import os
import signal
import sys
import tempfile
import time

import springskin

# Extensions of the formats Assimp imports (lower case).
ASSIMP_EXTENSIONS = {
    ".3d", ".3ds", ".3mf", ".ac", ".ac3d", ".acc", ".amf", ".ase", ".ask", ".b3d", ".blend",
    ".bvh", ".cob", ".csm", ".dae", ".dxf", ".enff", ".fbx", ".glb", ".gltf", ".hmp", ".ifc",
    ".ifczip", ".iqm", ".irr", ".irrmesh", ".lwo", ".lws", ".lxo", ".m3d", ".md2", ".md3",
    ".md5anim", ".md5camera", ".md5mesh", ".mdc", ".mdl", ".mesh", ".mot", ".ms3d", ".ndo",
    ".nff", ".obj", ".off", ".ogex", ".pk3", ".ply", ".pmx", ".prj", ".q3o", ".q3s", ".raw",
    ".scn", ".sib", ".smd", ".stl", ".stp", ".ter", ".uc", ".vta", ".x", ".x3d", ".x3db",
    ".xgl", ".xml", ".zae", ".zgl",
}
FIELDS = ["file", "vertices", "bones", "bind ms", "ms/frame", "status"]


def model_files(folder):
    """Files under `folder` with an Assimp extension, sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if os.path.splitext(name)[1].lower() in ASSIMP_EXTENSIONS:
                found.append(os.path.join(root, name))
    return found


def one_line(exc):
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def process(path, args, workdir):
    """The CSV row of one file."""
    row = {"file": path, "vertices": "", "bones": "", "bind ms": "", "ms/frame": "",
           "status": ""}
    try:
        rig = springskin.load(path)
    except (springskin.SpringSkinError, ValueError, OSError) as exc:
        row["status"] = f"skipped: {one_line(exc)}"
        return row
    row["vertices"] = rig.vertex_count
    row["bones"] = rig.bone_count
    binding = None
    # rigid, irs, spring need an attachment binding (Toothman 2020, ch. 3)
    if springskin.Graph.from_method(args.method, rig).needs_binding:
        start = time.perf_counter()
        try:
            binding = rig.bind()
        except (springskin.SpringSkinError, ValueError) as exc:
            row["status"] = f"skipped: bind failed: {one_line(exc)}"
            return row
        row["bind ms"] = f"{(time.perf_counter() - start) * 1000.0:.3f}"
    if rig.animation is None:
        row["status"] = "skipped: no animation to bake"
        return row
    frames = None
    if args.frames is not None:
        last = min(args.frames, rig.animation.frame_count(args.fps)) - 1
        frames = (0, last)
    output = os.path.join(workdir, f"{len(os.listdir(workdir))}.pc2")
    try:
        stats = springskin.bake(rig, output, frames=frames, fps=args.fps, method=args.method,
                                backend=args.backend, binding=binding)
    except (springskin.SpringSkinError, ValueError, OSError) as exc:
        row["status"] = f"failed: bake: {one_line(exc)}"
        return row
    finally:
        if os.path.exists(output):
            os.remove(output)
    row["ms/frame"] = f"{stats['ms_per_frame']:.3f}"
    row["status"] = f"ok: {stats['frame_count']} frames on {stats['backend']}"
    return row


def process_isolated(path, args, workdir):
    """process() in a forked child; a row telling how it died otherwise.

    The parent never runs the core itself (no OpenMP or GL threads exist
    when it forks), so fork is safe and cheap."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child():
        receiver.close()
        sender.send(process(path, args, workdir))
        sender.close()

    worker = context.Process(target=child, daemon=True)
    worker.start()
    sender.close()
    row = None
    timed_out = not receiver.poll(args.timeout)
    if not timed_out:
        try:
            row = receiver.recv()
        except EOFError:  # the child died before sending its row
            row = None
    if timed_out:
        worker.kill()
    worker.join()
    receiver.close()
    if row is not None:
        return row
    row = {field: "" for field in FIELDS}
    row["file"] = path
    if timed_out:
        row["status"] = f"skipped: timed out after {args.timeout:g} s"
    elif worker.exitcode is not None and worker.exitcode < 0:
        name = signal.Signals(-worker.exitcode).name
        row["status"] = f"skipped: the process died with {name} (the importer aborted)"
    else:
        row["status"] = f"skipped: the process exited with status {worker.exitcode}"
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="folder searched recursively for model files")
    parser.add_argument("--method", default="lbs", choices=springskin.METHODS,
                        help="skinning method (default lbs)")
    parser.add_argument("--backend", default="auto", choices=springskin.BACKENDS,
                        help="auto (default), cpu or gl")
    parser.add_argument("--out", default="report.csv", help="CSV report (default report.csv)")
    parser.add_argument("--frames", type=int, default=None,
                        help="bake at most the first N frames of each animation")
    parser.add_argument("--fps", type=float, default=24.0, help="frames per second (default 24)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed per file when isolated (default 600)")
    parser.add_argument("--no-isolate", dest="isolate", action="store_false",
                        help="process the files in this process (faster; a file that makes "
                             "the importer abort ends the run)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.error(f"not a folder: {args.folder}")
    if args.frames is not None and args.frames < 1:
        parser.error("--frames must be at least 1")
    if not args.fps > 0:
        parser.error("--fps must be > 0")

    files = model_files(args.folder)
    baked = 0
    with tempfile.TemporaryDirectory(prefix="batch_bind-") as workdir, \
            open(args.out, "w", newline="", encoding="utf-8") as report:
        writer = csv.DictWriter(report, fieldnames=FIELDS)
        writer.writeheader()
        for path in files:
            row = (process_isolated if args.isolate else process)(path, args, workdir)
            writer.writerow(row)
            report.flush()
            baked += row["status"].startswith("ok")
            print(f"{row['status'][:70]:70s} {path}", file=sys.stderr)
    print(f"{len(files)} file(s), {baked} baked with {args.method}; report: {args.out}")
    return 0 if baked else 1


if __name__ == "__main__":
    sys.exit(main())
