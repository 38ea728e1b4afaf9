#!/bin/sh
# Builds bench_render (Release, build-bench/ at the repository root) and runs it against
# Debian's Chromium. Arguments are passed on: run.sh [chromium-path] [sequential-renders]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEWSDESK_BUILD_BENCH=ON >/dev/null
cmake --build "$root/build-bench" --target bench_render
"$root/build-bench/bench/render/bench_render" "$@"
