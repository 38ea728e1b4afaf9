#!/usr/bin/env bash
# Broker benchmark: newsdesk-broker vs redis-server (Debian package) on the same loads, and
# newsdesk-broker's MQTT listener vs Debian's mosquitto 2.0 on MQTT loads, side by side in one
# run, on 127.0.0.1 only. Builds Release in build-bench/ at the repo root, starts the servers,
# prints a table with ratios per protocol, and stops every server by itself.
#
#   bench/broker/run.sh     # REPEAT=5 MESSAGES=100000 RATES="10000 50000" CONNS=10000
#   PROTOS=mqtt bench/broker/run.sh   # only the MQTT loads (PROTOS="frame mqtt" by default)
#   MQTT loads: MQTT_SUBS=100 subscribers, MQTT_MESSAGES=50000, MQTT_RATE=50000 msg/s to each
#   of MQTT_LAT_SUBS="1 10" subscribers for latency, CONNS idle connections; QoS 0, 100 bytes.
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
PROTOS="${PROTOS:-frame mqtt}"
MQTT_SUBS="${MQTT_SUBS:-100}"
MQTT_MESSAGES="${MQTT_MESSAGES:-50000}"
MQTT_RATE="${MQTT_RATE:-50000}"
MQTT_LAT_SUBS="${MQTT_LAT_SUBS:-1 10}"
MOSQUITTO_PORT="${MOSQUITTO_PORT:-26883}"
frame=0; mqtt=0
[[ " $PROTOS " == *" frame "* ]] && frame=1
[[ " $PROTOS " == *" mqtt "* ]] && mqtt=1

((frame == 0)) || command -v redis-server >/dev/null || { echo "redis-server not installed (apt-get install redis-server)"; exit 1; }
((mqtt == 0)) || command -v mosquitto >/dev/null || { echo "mosquitto not installed (scripts/setup)"; exit 1; }

# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock).
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "bench/broker: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk-broker broker_loadgen -j2 >/dev/null
loadgen="$build/bench/broker/broker_loadgen"

tmp="$(mktemp -d)"
broker_pid=""
redis_pid=""
mosq_pid=""
cleanup() {
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null || true
  [[ -n "$redis_pid" ]] && kill -TERM "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  [[ -n "$mosq_pid" ]] && kill -TERM "$mosq_pid" 2>/dev/null && wait "$mosq_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Mosquitto as a broker for many clients: no persistence, no logging, no connection limit, and
# queues as large as newsdesk's default (262144 messages per subscriber).
printf '%s\n' "listener $MOSQUITTO_PORT 127.0.0.1" "allow_anonymous true" "persistence false" \
  "log_dest none" "max_connections -1" "max_queued_messages 262144" "set_tcp_nodelay true" \
  >"$tmp/mosquitto.conf"

start_servers() {
  # Every load comes from 127.0.0.1: no per-address cap (mqtt.max_connections_per_address, 256 by
  # default, would refuse the idle load's 10,000 connections; Mosquitto has none).
  NEWSDESK_BROKER_MQTT_MAX_CONNECTIONS_PER_ADDRESS=0 \
    "$build/broker/newsdesk-broker" --listen 127.0.0.1:0 >"$tmp/broker.out" 2>"$tmp/broker.err" &
  broker_pid=$!
  for _ in $(seq 100); do grep -q "^mqtt listening on" "$tmp/broker.out" 2>/dev/null && break; sleep 0.05; done
  broker_port="$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/broker.out")"
  broker_mqtt_port="$(sed -n 's/^mqtt listening on .*:\([0-9]*\)$/\1/p' "$tmp/broker.out")"
  if ((frame)); then
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
      --maxclients 20000 --daemonize no --logfile "$tmp/redis.log" &
    redis_pid=$!
    for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  fi
  if ((mqtt)); then
    mosquitto -c "$tmp/mosquitto.conf" >"$tmp/mosquitto.out" 2>&1 &
    mosq_pid=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$MOSQUITTO_PORT") 2>/dev/null && break; sleep 0.05; done
  fi
}
stop_servers() {
  kill -TERM $broker_pid $redis_pid $mosq_pid 2>/dev/null || true
  wait $broker_pid $redis_pid $mosq_pid 2>/dev/null || true
  broker_pid=""
  redis_pid=""
  mosq_pid=""
}

failures=()

# run NAME SIDE ARGS...: one load generator run against newsdesk (SIDE n), redis (SIDE r),
# newsdesk's MQTT listener (SIDE m) or mosquitto (SIDE q); its RESULT line is appended to
# $tmp/NAME.SIDE and echoed.
run() {
  local name=$1 side=$2; shift 2
  local proto=newsdesk port=$broker_port pid=$broker_pid line rc=0
  [[ $side == r ]] && proto=redis port=$REDIS_PORT pid=$redis_pid
  [[ $side == m ]] && proto=mqtt port=$broker_mqtt_port pid=$broker_pid
  [[ $side == q ]] && proto=mqtt port=$MOSQUITTO_PORT pid=$mosq_pid
  line="$("$loadgen" --proto "$proto" --port "$port" --server-pid "$pid" "$@" | grep '^RESULT')" || rc=$?
  if [[ $rc != 0 || -z "$line" ]]; then
    failures+=("$name/$side: load generator failed (exit $rc)")
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

# mpair NAME ARGS...: the same for MQTT, newsdesk and mosquitto alternating.
mpair() {
  local name=$1; shift
  for _ in $(seq "$REPEAT"); do
    run "$name" m "$@"
    run "$name" q "$@"
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
echo "newsdesk-broker pid $broker_pid port $broker_port mqtt $broker_mqtt_port"
((frame)) && echo "redis-server $(redis-server --version | awk '{print $3}') pid $redis_pid port $REDIS_PORT"
((mqtt)) && echo "$(mosquitto -h | head -1) pid $mosq_pid port $MOSQUITTO_PORT"
echo "machine: $(nproc) cores; $(uname -r); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each figure: median of $REPEAT runs (each field separately); the two servers' runs alternate"
echo

echo "raw results (server_cpu/client_cpu: share of the measured interval each main thread ran;"
echo "server_runq/client_runq: share it spent runnable but waiting for a CPU other jobs held):"
if ((frame)); then
  pair fan --mode topic --subs 10 --messages "$MESSAGES"
  pair q --mode queue --subs 4 --messages "$MESSAGES" --count "$COUNT"
  for rate in $RATES; do
    pair "lat$rate" --mode topic --subs 10 --messages "$MESSAGES" --rate "$rate"
    pair "qlat$rate" --mode queue --subs 4 --messages "$MESSAGES" --rate "$rate" --count "$COUNT"
  done
fi
if ((mqtt)); then
  mpair mfan --mode topic --subs "$MQTT_SUBS" --messages "$MQTT_MESSAGES"
  for subs in $MQTT_LAT_SUBS; do
    mpair "mlat$subs" --mode topic --subs "$subs" --messages "$((MQTT_RATE * 2))" --rate "$MQTT_RATE"
  done
fi
# Fresh servers for the idle figures: nothing left over from the runs above in any RSS.
stop_servers
start_servers
if ((frame)); then
  run idle n --mode idle --conns "$CONNS"
  run idle r --mode idle --conns "$CONNS"
fi
if ((mqtt)); then
  stop_servers
  start_servers
  run midle m --mode idle --conns "$CONNS"
  run midle q --mode idle --conns "$CONNS"
fi
if ((frame)); then
  # Fresh servers again so the stuck-subscriber figure is not mixed with the idle connections.
  stop_servers
  start_servers
  run stuck n --mode stuck --messages 1000000
  run stuck r --mode stuck --messages 1000000
fi
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

if ((frame)); then
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
fi
if ((mqtt)); then
  echo
  row "MQTT 3.1.1, QoS 0 (100-byte payloads)" "newsdesk" "mosquitto" "ratio"
  row "------------------------------------------------------" "------------" "------------" "-------"
  mrow() { # label NAME FIELD: newsdesk's MQTT (m) against mosquitto (q)
    local n r
    n="$(med "$2" m "$3")"
    r="$(med "$2" q "$3")"
    row "$1" "$n" "$r" "$(ratio "$n" "$r")"
  }
  mrow "fan-out 1->$MQTT_SUBS, deliveries/s" mfan deliveries_per_s
  mrow "fan-out 1->$MQTT_SUBS, deliveries per server CPU-second" mfan deliveries_per_server_cpu_s
  for subs in $MQTT_LAT_SUBS; do
    mrow "1->$subs at $MQTT_RATE msg/s, deliveries/s" "mlat$subs" deliveries_per_s
    for p in p50 p99; do
      mrow "1->$subs at $MQTT_RATE msg/s, $p latency (us)" "mlat$subs" "${p}_us"
    done
  done
  mrow "RSS per idle MQTT connection, $CONNS conns (bytes)" midle bytes_per_conn
  echo
  echo "idle connections that received the probe: newsdesk=$(med midle m reached) mosquitto=$(med midle q reached) of $CONNS"
  echo "median server CPU share / run-queue wait, fan-out: newsdesk $(med mfan m server_cpu) / $(med mfan m server_runq), mosquitto $(med mfan q server_cpu) / $(med mfan q server_runq)"
  echo "mosquitto median losses (reported, not checked): fan-out $(med mfan q lost), latency $(for subs in $MQTT_LAT_SUBS; do printf '%s ' "$(med "mlat$subs" q lost)"; done)"
  check mfan m
  for subs in $MQTT_LAT_SUBS; do
    check "mlat$subs" m
  done
  [[ "$(med midle m reached)" == "$CONNS" ]] || failures+=("midle/m: probe reached $(med midle m reached) of $CONNS")
fi
if ((${#failures[@]})); then
  echo
  printf 'FAIL: %s\n' "${failures[@]}"
  exit 1
fi
echo "every newsdesk throughput and latency run: zero loss, duplication and reordering."
