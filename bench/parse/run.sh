#!/bin/sh
# Builds bench_parse in Release in build-bench/ at the repository root and runs it.
# Arguments are passed on: run.sh [page.html] [runs]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-bench" --target bench_parse
"$root/build-bench/bench/parse/bench_parse" "$@"
