#!/usr/bin/python3
"""The core's stages form a layering without cycles: each file includes
headers of its own stage or of a lower one, never of a higher one.

    /usr/bin/python3 tests/check_layers.py [REPO]

The order, lowest first (docs/architecture.md):

    model < io < kernels < backends < bind < graph < preview

and above the core, the programs and bindings (`cli/`, `pyext/src/`,
`bench/`), which include the public header `springskin.h` only; and no
import cycles between the modules of the Python package and of the Blender
addon (deferred imports inside functions count). Inside
`core/`, an internal header is named with its stage (`"kernels/spring.h"`);
`springskin.h` (core/include) is below every stage. Prints one line per
violation and exits 1 when there is one (CTest runs it as `layers`).
"""

import os
import re
import sys

STAGES = ["model", "io", "kernels", "backends", "bind", "graph", "preview"]
PUBLIC = "springskin.h"
ABOVE_CORE = ["cli", os.path.join("pyext", "src"), "bench"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_SUFFIXES = (".c", ".h")


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def sources(directory):
    for root, _, names in os.walk(directory):
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(root, name)


def check(repo):
    problems = []
    core = os.path.join(repo, "core")
    found = sorted(d for d in os.listdir(core)
                   if os.path.isdir(os.path.join(core, d)) and d != "include")
    for d in found:
        if d not in STAGES:
            problems.append("core/%s: a folder that is no stage (stages: %s)"
                            % (d, ", ".join(STAGES)))
    for stage in STAGES:
        rank = STAGES.index(stage)
        for path in sources(os.path.join(core, stage)):
            rel = os.path.relpath(path, repo)
            for inc in includes(path):
                if inc == PUBLIC or inc.endswith((".glsl", ".comp")):
                    continue
                parts = inc.split("/")
                if len(parts) != 2 or parts[0] not in STAGES:
                    problems.append("%s: includes \"%s\": name an internal header with its "
                                    "stage (\"<stage>/%s\")" % (rel, inc, parts[-1]))
                    continue
                if not os.path.isfile(os.path.join(core, inc)):
                    problems.append("%s: includes \"%s\", which is not in core/" % (rel, inc))
                    continue
                if STAGES.index(parts[0]) > rank:
                    problems.append("%s: includes \"%s\": stage %s is above %s"
                                    % (rel, inc, parts[0], stage))
    for top in ABOVE_CORE:
        for path in sources(os.path.join(repo, top)):
            rel = os.path.relpath(path, repo)
            local = os.path.dirname(path)
            for inc in includes(path):
                if inc == PUBLIC or os.path.isfile(os.path.join(local, inc)):
                    continue
                problems.append("%s: includes \"%s\": above the core only the public header "
                                "%s is available" % (rel, inc, PUBLIC))
    return problems


PY_PACKAGES = [os.path.join("pyext", "springskin"), os.path.join("addon", "springskin_blender")]
PY_IMPORT = re.compile(r"^\s*from\s+\.(\w*)\s+import\s+([\w, ]+)", re.M)


def python_cycles(repo):
    """Import cycles between the modules of each Python package, counting
    imports inside functions too (a deferred import hides a circle, it does
    not remove it)."""
    problems = []
    for package in PY_PACKAGES:
        directory = os.path.join(repo, package)
        modules = {n[:-3] for n in os.listdir(directory) if n.endswith(".py")}
        edges = {}
        for m in sorted(modules):
            with open(os.path.join(directory, m + ".py"), encoding="utf-8") as f:
                text = f.read()
            targets = set()
            for module, names in PY_IMPORT.findall(text):
                if module:
                    targets.add(module)
                else:
                    targets.update(n.strip().split(" as ")[0] for n in names.split(","))
            edges[m] = {t for t in targets if t in modules and t != m and m != "__init__"}
        state = {}

        def visit(m, path):
            state[m] = 1
            for t in sorted(edges[m]):
                if state.get(t) == 1:
                    cycle = path[path.index(t):] + [t]
                    problems.append("%s: import cycle %s" % (package, " -> ".join(cycle)))
                elif not state.get(t):
                    visit(t, path + [t])
            state[m] = 2

        for m in sorted(edges):
            if not state.get(m):
                visit(m, [m])
    return problems


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    problems = check(repo) + python_cycles(repo)
    for p in problems:
        print("layers: " + p)
    stage_files = sum(1 for s in STAGES for _ in sources(os.path.join(repo, "core", s)))
    print("layers: %d core files in %d stages (%s), %d problem(s)"
          % (stage_files, len(STAGES), " < ".join(STAGES), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
