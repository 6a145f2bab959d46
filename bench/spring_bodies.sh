#!/usr/bin/env bash
# The springs on characters at production density (issue #36,
# docs/springs-at-density.md): builds bench/cor_bodies.py's walking body at
# about 15k, 60k and 240k vertices with Blender (once, into
# $BUILD/bench-bodies), then runs bench/spring_bodies.py on them.
#   bash bench/spring_bodies.sh [extra spring_bodies.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench-bodies
if ! ls "$OUT"/body_*.fbx >/dev/null 2>&1; then
  mkdir -p "$OUT"
  blender -b --factory-startup --python bench/cor_bodies.py -- "$OUT" --animation walk \
    --resolution 0.015 | grep '^body:'
fi
PYTHONPATH=$BUILD/python /usr/bin/python3 bench/spring_bodies.py \
  $(ls "$OUT"/body_*.fbx | sort -t_ -k2 -n) "$@"
