#!/bin/sh
# Builds bench_selectors in Release in build-bench/ at the repository root and runs it.
# Arguments are passed on: run.sh [runs]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-bench" --target bench_selectors
"$root/build-bench/bench/selectors/bench_selectors" "$@"
