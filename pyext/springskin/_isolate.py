"""Isolated imports (issue #19): Assimp, a library SpringSkin keeps, can
crash on a malformed file (a stack overflow on deeply nested .x and .dae, a
segfault on huge numbers, allocations that never end). Inside a Python
batch or a Dask worker such a crash would kill the whole process, so
:func:`springskin.load` with ``isolate=True`` first imports the file in a
child process with a memory and a time limit. A crash, the limit or the
timeout there becomes an :class:`ImportError` naming the file; a normal
import error is raised again with its own type and message; only a file
the child imported is then imported here (Assimp is deterministic: the
same file imports the same way). The cost: one more import and a Python
start-up (about 0.1 s) per file."""

import json
import os
import signal
import subprocess
import sys

from . import _core

#: Exit status of the child after an import error it reports as JSON.
_REPORTED = 3

# The child: limits, then the import; an error goes back as JSON on stdout.
_PROBE = r"""
import json, resource, sys
limit = int(sys.argv[2])
if limit > 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    from springskin import _core
    _core.import_scene(sys.argv[1])
except BaseException as e:
    print(json.dumps({"type": type(e).__name__, "message": str(e),
                      "status": getattr(e, "status", None),
                      "errno": getattr(e, "errno", None)}))
    sys.stdout.flush()
    sys.exit(%d)
""" % _REPORTED

#: Built-in exception types an import error may be raised again as.
_BUILTIN = {t.__name__: t for t in (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                                    PermissionError, OSError, ValueError, TypeError)}


def default_memory_limit():
    """Half of this machine's physical memory, in bytes (0 when unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 0


def under_address_sanitizer():
    """True in the sanitizer build's tests (the runtime preloaded): an
    address-space limit cannot be applied there."""
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def probe(path, memory_limit, timeout):
    """Import `path` in a child process (RLIMIT_AS = memory_limit bytes, 0:
    none; killed after `timeout` seconds); returns when it imported, raises
    otherwise (see the module's doc)."""
    if under_address_sanitizer():
        memory_limit = 0  # ASan's shadow memory needs terabytes of address space
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, path, str(int(memory_limit))],
                              stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ImportError(f"{path}: the import did not finish within {timeout:g} s in an "
                          f"isolated process (killed); the file cannot be imported safely",
                          path=path) from None
    code = done.returncode
    if code == 0:
        return
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        raise ImportError(f"{path}: the importer crashed ({name}) in an isolated process; "
                          f"the file cannot be imported safely (Assimp's parser fails on it)",
                          path=path)
    if code == _REPORTED:
        try:
            report = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            report = None
        if report is not None:
            kind, message = report["type"], report["message"]
            if kind == "MemoryError" or any(sign in message for sign in (
                    "bad_alloc", "failed to map segment", "Cannot allocate memory")):
                raise ImportError(f"{path}: the import needed more than the memory limit "
                                  f"({memory_limit / 2**30:.1f} GiB) in an isolated process",
                                  path=path)
            if kind in ("SpringSkinError", "GLError", "GLUnavailableError"):
                error = _core.SpringSkinError(message)
                error.status = report["status"]
                raise error
            if kind in _BUILTIN:
                if issubclass(_BUILTIN[kind], OSError) and report["errno"] is not None:
                    raise _BUILTIN[kind](report["errno"], message.split("] ", 1)[-1])
                raise _BUILTIN[kind](message)
            raise ImportError(f"{path}: {kind}: {message}", path=path)
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    raise ImportError(f"{path}: the import exited with status {code} in an isolated process"
                      + (": " + " | ".join(tail) if tail else ""), path=path)
