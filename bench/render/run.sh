#!/bin/sh
# Builds bench_render (Release, build-bench/ at the repository root) and runs it against the
# Chromium newsdesk would pick (chromium on PATH). Arguments are passed on:
#   bench/render/run.sh [chromium-path] [sequential-renders]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock); the
# build is inside it too, since every bench builds in the same build-bench/.
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "bench/render: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }
cmake -S "$root" -B "$root/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEWSDESK_BUILD_BENCH=ON >/dev/null
cmake --build "$root/build-bench" --target bench_render -j2 >/dev/null
echo "bench/render: $(date +%F), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$root/build-bench/bench/render/bench_render" "$@"
