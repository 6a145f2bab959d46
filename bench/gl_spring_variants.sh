#!/bin/bash
# bench/gl_spring_variants.sh - the GL spring solver's variants against the
# default, in one run on one machine (for a GPU lent by the `device` tool):
#   bash bench/gl_spring_variants.sh [BUILD_DIR] [SIZES]
# A warm-up run first fills the driver's shader cache (a process that
# compiles the shaders cold is slow); then two rounds of bench_spring's
# multilevel rows per variant, interleaved, so that a drift of the
# machine reaches them alike. The variants are the developer switches of
# core/backends (README "GL springs"): the default, the plain read-back
# (glGetBufferSubData), the host's watch, and handoffs that block at once
# (no spin). test_backends checks the variants' results.
set -u
build=${1:-build}
sizes=${2:-100000}
bench="$build/bench/bench_spring"
[ -x "$bench" ] || { echo "gl_spring_variants: no $bench (build first)" >&2; exit 2; }
variants=("default" "SSK_GL_READBACK=plain" "SSK_GL_SPRING_WATCH=host" "SSK_GL_SPIN_US=0")
"$bench" --sizes "$sizes" --repeats 3 --backend gl > /dev/null || exit 1
for round in 1 2; do
    for v in "${variants[@]}"; do
        echo "== round $round: $v"
        if [ "$v" = default ]; then set --; else read -r -a env_args <<< "$v"; set -- "${env_args[@]}"; fi
        env "$@" "$bench" --sizes "$sizes" --repeats 9 --backend gl |
            grep -E '^\| (animation|bend|twist)' | grep '| multilevel |' || exit 1
    done
done
