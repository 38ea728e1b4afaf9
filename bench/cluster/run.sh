#!/usr/bin/env bash
# Several newsdesk instances sharing one PostgreSQL store, on this machine: renders per site per
# interval with three instances, propagation from commit to the SSE frame on another instance
# (p50, p99), takeover after SIGKILL of the lease holder, and /news through HAProxy with three
# instances against one alone. cluster_bench.cpp says how each is measured. It starts its own
# PostgreSQL (initdb/pg_ctl as the postgres user in a temporary folder) and stops it on exit.
#
# Usage: bench/cluster/run.sh [cluster_bench flags]   (e.g. --rounds 500 --trials 5)
#        bench/cluster/run.sh --only faults            issue 47's: PostgreSQL frozen 3 x 20 s, an
#                                                      instance started afresh behind HAProxy,
#                                                      2,000 /events readers (--only freeze,
#                                                      restart or readers for one of them)
#        bench/cluster/run.sh --only busy              /news p99 with refreshes against without
#        needs postgresql, haproxy and wrk: scripts/setup --with-bench
#        BENCH_BUILD=build uses that build tree (as scripts/build left it) instead of a Release
#        one of its own in build-bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BENCH_BUILD:-$root/build-bench}
[[ $build = /* ]] || build=$root/$build

for tool in wrk haproxy; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
    { echo "bench/cluster: $tool is missing (scripts/setup --with-bench)" >&2; exit 2; }
done
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
  { echo "bench/cluster: PostgreSQL is missing (scripts/setup installs it)" >&2; exit 2; }

# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock).
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "bench/cluster: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

[[ -n ${BENCH_BUILD:-} ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk cluster_bench >/dev/null

echo "bench/cluster on $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/cluster/cluster_bench" --haproxy "$(command -v haproxy || echo /usr/sbin/haproxy)" "$@"
echo "bench/cluster: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
