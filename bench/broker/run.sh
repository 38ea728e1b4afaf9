#!/usr/bin/env bash
# Broker benchmark: newsdesk-broker vs redis-server (Debian package) on the same loads, side
# by side in one run, on 127.0.0.1 only. Builds Release in build-bench/ at the repo root,
# starts both servers, prints a table with ratios, and stops both servers by itself.
#
#   bench/broker/run.sh     # REPEAT=5 MESSAGES=100000 RATES="10000 50000" CONNS=10000
#
# Exits non-zero if any run of any load lost, duplicated or reordered a message, if a load
# generator run failed, or if the idle probe did not reach every idle subscriber.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-bench"
REPEAT="${REPEAT:-5}"
MESSAGES="${MESSAGES:-100000}"
RATES="${RATES:-10000 50000}"
CONNS="${CONNS:-10000}"
COUNT="${COUNT:-1000}"
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

failures=()

# run NAME SIDE ARGS...: one load generator run against newsdesk (SIDE n) or redis (SIDE r);
# its RESULT line is appended to $tmp/NAME.SIDE and echoed.
run() {
  local name=$1 side=$2; shift 2
  local proto=newsdesk port=$broker_port pid=$broker_pid line rc=0
  [[ $side == r ]] && proto=redis port=$REDIS_PORT pid=$redis_pid
  line="$("$loadgen" --proto "$proto" --port "$port" --server-pid "$pid" "$@" | grep '^RESULT')" || rc=$?
  if [[ $rc != 0 || -z "$line" ]]; then
    failures+=("$name/$proto: load generator failed (exit $rc)")
    line="RESULT proto=$proto failed=1"
  fi
  echo "$line" >>"$tmp/$name.$side"
  echo "  $line"
}

# pair NAME ARGS...: REPEAT runs of one load, newsdesk and redis alternating so both see the
# same background load from other jobs on this machine.
pair() {
  local name=$1; shift
  for _ in $(seq "$REPEAT"); do
    run "$name" n "$@"
    run "$name" r "$@"
  done
}

# med NAME SIDE FIELD: the median of FIELD over the runs of NAME on SIDE
med() {
  sed -n "s/.* $3=\([^ ]*\).*/\1/p" "$tmp/$1.$2" | sort -g |
    awk '{a[NR] = $1} END { if (NR) print a[int((NR + 1) / 2)]; else print "n/a" }'
}

# check NAME SIDE: every run had zero loss, duplication and reordering
check() {
  local line
  while IFS= read -r line; do
    for f in lost dup reorder; do
      v="$(sed -n "s/.* $f=\([^ ]*\).*/\1/p" <<<"$line")"
      [[ "$v" == 0 ]] || failures+=("$1/$2: $f=${v:-missing}: $line")
    done
  done <"$tmp/$1.$2"
}

start_servers
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$root" rev-parse --short HEAD)"
echo "newsdesk-broker pid $broker_pid port $broker_port; redis-server $(redis-server --version | awk '{print $3}') pid $redis_pid port $REDIS_PORT"
echo "machine: $(nproc) cores; $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each figure: median of $REPEAT runs (each field separately); newsdesk and redis runs alternate"
echo

echo "raw results (server_cpu/client_cpu: share of the measured interval each main thread ran;"
echo "server_runq/client_runq: share it spent runnable but waiting for a CPU other jobs held):"
pair fan --mode topic --subs 10 --messages "$MESSAGES"
pair q --mode queue --subs 4 --messages "$MESSAGES" --count "$COUNT"
for rate in $RATES; do
  pair "lat$rate" --mode topic --subs 10 --messages "$MESSAGES" --rate "$rate"
  pair "qlat$rate" --mode queue --subs 4 --messages "$MESSAGES" --rate "$rate" --count "$COUNT"
done
# Fresh servers for the idle figure: nothing left over from the runs above in either RSS.
stop_servers
start_servers
run idle n --mode idle --conns "$CONNS"
run idle r --mode idle --conns "$CONNS"
# Fresh servers again so the stuck-subscriber figure is not mixed with the idle connections.
stop_servers
start_servers
run stuck n --mode stuck --messages 1000000
run stuck r --mode stuck --messages 1000000
stop_servers
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
row() { printf "| %-54s | %12s | %12s | %7s |\n" "$1" "$2" "$3" "$4"; }
pairrow() { # label NAME FIELD
  local n r
  n="$(med "$2" n "$3")"
  r="$(med "$2" r "$3")"
  row "$1" "$n" "$r" "$(ratio "$n" "$r")"
}

echo
row "load (100-byte payloads)" "newsdesk" "redis" "ratio"
row "------------------------------------------------------" "------------" "------------" "-------"
pairrow "fan-out 1->10 /topic vs PUBLISH, deliveries/s" fan deliveries_per_s
pairrow "queue 1->4 /queue vs RPUSH+BLMPOP COUNT $COUNT, deliv/s" q deliveries_per_s
pairrow "fan-out, deliveries per server CPU-second" fan deliveries_per_server_cpu_s
pairrow "queue, deliveries per server CPU-second" q deliveries_per_server_cpu_s
for rate in $RATES; do
  for p in p50 p99; do
    pairrow "fan-out 1->10 at $rate msg/s, $p latency (us)" "lat$rate" "${p}_us"
  done
  for p in p50 p99; do
    pairrow "queue 1->4 at $rate msg/s, $p latency (us)" "qlat$rate" "${p}_us"
  done
done
pairrow "RSS per idle subscriber, $CONNS conns (bytes)" idle bytes_per_conn
pairrow "peak RSS, 1 stuck sub, 1M msgs (KiB)" stuck rss_peak_kib
pairrow "RSS after, 1 stuck sub, 1M msgs (KiB)" stuck rss_after_kib
echo
echo "idle subscribers that received the probe: newsdesk=$(med idle n reached) redis=$(med idle r reached) (PUBSUB NUMSUB $(med idle r numsub)) of $CONNS"
echo "stuck subscriber disconnected by the server: newsdesk=$(med stuck n stuck_disconnected) redis=$(med stuck r stuck_disconnected)"
echo "median server CPU share / run-queue wait, fan-out: newsdesk $(med fan n server_cpu) / $(med fan n server_runq), redis $(med fan r server_cpu) / $(med fan r server_runq)"

for name in fan q $(for rate in $RATES; do echo "lat$rate qlat$rate"; done); do
  check "$name" n
  check "$name" r
done
for side in n r; do
  [[ "$(med idle $side reached)" == "$CONNS" ]] || failures+=("idle/$side: probe reached $(med idle $side reached) of $CONNS")
done
if ((${#failures[@]})); then
  echo
  printf 'FAIL: %s\n' "${failures[@]}"
  exit 1
fi
echo "every throughput and latency run: zero loss, duplication and reordering."
