#!/usr/bin/env bash
# Broker benchmark: newsdesk-broker vs redis-server (Debian package) on the same loads, side
# by side in one run, on 127.0.0.1 only. Builds Release in build-bench/ at the repo root,
# starts both servers, prints a table with ratios, and stops both servers by itself.
#
#   bench/broker/run.sh            # REPEAT=3 MESSAGES=100000 RATE=50000 CONNS=10000
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-bench"
REPEAT="${REPEAT:-3}"
MESSAGES="${MESSAGES:-100000}"
RATE="${RATE:-50000}"
CONNS="${CONNS:-10000}"
REDIS_PORT="${REDIS_PORT:-26399}"

command -v redis-server >/dev/null || { echo "redis-server not installed (apt-get install redis-server)"; exit 1; }

# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock).
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "bench/broker: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk-broker broker_loadgen -j2 >/dev/null
loadgen="$build/bench/broker/broker_loadgen"

tmp="$(mktemp -d)"
broker_pid=""
redis_pid=""
cleanup() {
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
  [[ -n "$redis_pid" ]] && kill -TERM "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

start_servers() {
  "$build/broker/newsdesk-broker" --listen 127.0.0.1:0 >"$tmp/broker.out" 2>"$tmp/broker.err" &
  broker_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$tmp/broker.out" 2>/dev/null && break; sleep 0.05; done
  broker_port="$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/broker.out")"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --maxclients 20000 --daemonize no --logfile "$tmp/redis.log" &
  redis_pid=$!
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
}
stop_servers() {
  kill -TERM "$broker_pid" "$redis_pid" 2>/dev/null || true
  wait "$broker_pid" "$redis_pid" 2>/dev/null || true
  broker_pid=""
  redis_pid=""
}

# field NAME LINE -> value of NAME=... in a RESULT line
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# median of REPEAT runs of one load by the field $KEY (default deliveries_per_s); echoes the
# RESULT line of the median run
median_run() {
  local key="${KEY:-deliveries_per_s}"
  local proto=$1 port=$2; shift 2
  local lines=()
  for _ in $(seq "$REPEAT"); do
    lines+=("$("$loadgen" --proto "$proto" --port "$port" "$@" | grep '^RESULT')")
  done
  printf '%s\n' "${lines[@]}" | awk -v key="$key" '{for(i=1;i<=NF;i++) if ($i ~ "^" key "=") {split($i,a,"="); print a[2] "\t" $0}}' \
    | sort -n | awk -v m=$(( (REPEAT + 1) / 2 )) 'NR==m {sub(/^[^\t]*\t/, ""); print}'
}

start_servers
echo "newsdesk-broker pid $broker_pid port $broker_port; redis-server $(redis-server --version | awk '{print $3}') pid $redis_pid port $REDIS_PORT"
echo "machine: $(nproc) cores; $(uname -r); each figure: median of $REPEAT runs (by deliveries/s, or by p99 for fixed-rate runs)"
echo

declare -A R
run_pair() { # key, loadgen args...
  local key=$1; shift
  R[$key.n]="$(median_run newsdesk "$broker_port" "$@")"
  R[$key.r]="$(median_run redis "$REDIS_PORT" "$@")"
  echo "  ${R[$key.n]}"
  echo "  ${R[$key.r]}"
}

echo "raw results:"
run_pair fan --mode topic --subs 10 --messages "$MESSAGES"
run_pair q --mode queue --subs 4 --messages "$MESSAGES"
KEY=p99_us run_pair lat --mode topic --subs 10 --messages "$MESSAGES" --rate "$RATE"
KEY=p99_us run_pair qlat --mode queue --subs 4 --messages "$MESSAGES" --rate "$RATE"
idle_n="$("$loadgen" --proto newsdesk --port "$broker_port" --mode idle --conns "$CONNS" --server-pid "$broker_pid" | grep '^RESULT')"
idle_r="$("$loadgen" --proto redis --port "$REDIS_PORT" --mode idle --conns "$CONNS" --server-pid "$redis_pid" | grep '^RESULT')"
echo "  $idle_n"
echo "  $idle_r"
# Fresh servers so the stuck-subscriber figure is not mixed with the idle connections.
stop_servers
start_servers
stuck_n="$("$loadgen" --proto newsdesk --port "$broker_port" --mode stuck --messages 1000000 --server-pid "$broker_pid" | grep '^RESULT')"
stuck_r="$("$loadgen" --proto redis --port "$REDIS_PORT" --mode stuck --messages 1000000 --server-pid "$redis_pid" | grep '^RESULT')"
echo "  $stuck_n"
echo "  $stuck_r"
stop_servers

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
row() { printf "| %-50s | %14s | %14s | %8s |\n" "$1" "$2" "$3" "$4"; }

echo
row "load (100-byte payloads)" "newsdesk" "redis" "ratio"
row "--------------------------------------------------" "--------------" "--------------" "--------"
for k in fan q; do
  label="fan-out 1->10 /topic, deliveries/s"
  [[ $k == q ]] && label="queue 1->4 (/queue vs LPUSH+BRPOP), deliv/s"
  n="$(field deliveries_per_s "${R[$k.n]}")"; r="$(field deliveries_per_s "${R[$k.r]}")"
  row "$label" "$n" "$r" "$(ratio "$n" "$r")"
done
for k in lat qlat; do
  what="fan-out 1->10"; [[ $k == qlat ]] && what="queue 1->4"
  for p in p50 p99; do
    n="$(field ${p}_us "${R[$k.n]}")"; r="$(field ${p}_us "${R[$k.r]}")"
    row "$what at $RATE msg/s, $p latency (us)" "$n" "$r" "$(ratio "$n" "$r")"
  done
done
for k in fan q lat qlat; do
  for side in n r; do
    l="${R[$k.$side]}"
    if [[ "$(field lost "$l")" != 0 || "$(field dup "$l")" != 0 || "$(field reorder "$l")" != 0 ]]; then
      echo "WARNING: $k/$side lost=$(field lost "$l") dup=$(field dup "$l") reorder=$(field reorder "$l")"
    fi
  done
done
n="$(field bytes_per_conn "$idle_n")"; r="$(field bytes_per_conn "$idle_r")"
row "RSS per idle subscriber, $CONNS conns (bytes)" "$n" "$r" "$(ratio "$n" "$r")"
n="$(field rss_peak_kib "$stuck_n")"; r="$(field rss_peak_kib "$stuck_r")"
row "peak RSS, 1 stuck sub, 1M msgs (KiB)" "$n" "$r" "$(ratio "$n" "$r")"
n="$(field rss_after_kib "$stuck_n")"; r="$(field rss_after_kib "$stuck_r")"
row "RSS after, 1 stuck sub, 1M msgs (KiB)" "$n" "$r" "$(ratio "$n" "$r")"
echo "stuck subscriber disconnected by the server: newsdesk=$(field stuck_disconnected "$stuck_n") redis=$(field stuck_disconnected "$stuck_r")"
echo "lost/dup/reorder on every throughput and latency run: see raw results (all 0 expected)."
