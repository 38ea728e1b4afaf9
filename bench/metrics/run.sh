#!/usr/bin/env bash
# What metrics cost: /news and broker throughput with metrics enabled versus disabled.
#
# Builds newsdesk, splash-standin and broker_loadgen (Release, build-bench/ at the repository
# root), starts the stand-in serving saved real front pages for the shipped sites, and two
# newsdesk instances that differ only in NEWSDESK_METRICS (true / false): each with its own
# store in a temp dir, its own HTTP and broker port, the access log off in both. Then, in
# ROUNDS rounds that alternate which instance goes first:
#   1. /news: wrk -t2 -c64 (keep-alive) against each instance: requests/s and p99;
#   2. broker: broker_loadgen fan-out (1 publisher, SUBS subscribers of one /topic, 100-byte
#      payloads) against each instance's embedded broker: deliveries/s.
# While the metrics-on instance is measured, its /metrics is scraped once a second (Prometheus
# defaults to every 15 s), so rendering /metrics is part of the cost. Prints the median of each
# figure and the on/off ratios.
#
# "metrics": false turns off GET /metrics and the per-request counting behind it. The broker's
# own counters (broker/stats.hpp: relaxed atomics, added once per batch) are always on and have
# no switch, so the broker figures measure only the effect of the HTTP side's counting and of
# the scrapes sharing the process, not the broker's counters themselves.
#
# Only one benchmark runs at a time on this shared machine: everything from the build on runs
# under flock /tmp/newsdesk-bench.lock (the build too: two builds in build-bench/ at once, or a
# build beside someone's measurement, spoil both). Everything listens on 127.0.0.1 and is
# stopped on exit.
#
# Usage: bench/metrics/run.sh [seconds-per-wrk-run]   (default 15; ROUNDS=3 MESSAGES=1000000
#        SUBS=10; needs wrk: scripts/setup --with-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-15}
rounds=${ROUNDS:-3}
messages=${MESSAGES:-1000000}
subs=${SUBS:-10}
connections=64
threads=2
pages=${NEWSDESK_SHARED_PAGES:-$root/../shared/fixtures/pages}
build=$root/build-bench
lock=/tmp/newsdesk-bench.lock

for tool in wrk curl python3 flock; do
  command -v "$tool" >/dev/null || { echo "bench/metrics: $tool is missing (scripts/setup --with-bench)" >&2; exit 2; }
done
if [[ ! -f $pages/cnn-2025-home-rendered.html ]]; then
  echo "bench/metrics: saved pages not found in $pages" >&2
  exit 2
fi

exec 9>"$lock"
if ! flock -n 9; then
  echo "bench/metrics: another benchmark holds $lock; waiting for it" >&2
  flock 9
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk splash-standin broker_loadgen -j2 >/dev/null
loadgen=$build/bench/broker/broker_loadgen

tmp=$(mktemp -d /tmp/newsdesk-bench-metrics-XXXXXX)
pids=()
cleanup() {
  local rc=$?
  if ((rc != 0 && rc != 130 && rc != 3)); then # 3: check_alive has said what happened
    for f in "$tmp"/*/newsdesk.out "$tmp"/*/newsdesk.log; do
      [[ -s $f ]] && { echo "bench/metrics: last lines of ${f#"$tmp"/}:" >&2; tail -n 5 "$f" >&2; }
    done
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

bench=bench/metrics
source "$root/bench/saved_sites.sh"

# --- the stand-in, serving the saved pages for the shipped sites' URLs -----------------------
start_saved_sites_standin

# --- two newsdesk instances, identical but for NEWSDESK_METRICS ---------------------------------
# An hour's interval keeps background refreshes (a 4 MB parse each for CNN) out of even a long
# run; the access log is off in both, so the only difference is the metrics switch.
cat >"$tmp/config.json" <<EOF
{"splash_url": "$splash", "renderer": "splash", "wait": 0, "log_level": "info", "access_log": false,
 "refresh": {"interval": 3600, "jitter": 0, "retries": 0}}
EOF
declare -A http broker pid
for side in on off; do
  mkdir "$tmp/$side"
  metrics=true
  [[ $side == off ]] && metrics=false
  NEWSDESK_METRICS=$metrics "$build/server/newsdesk" --config "$tmp/config.json" --port 0 \
    --broker-listen 127.0.0.1:0 --templates "$root/templates" --static "$root/static" \
    --sites-dir "$root/sites" --store "$tmp/$side/store.db" \
    >"$tmp/$side/newsdesk.out" 2>"$tmp/$side/newsdesk.log" &
  pid[$side]=$!
  pids+=("$!")
done
# Stops the benchmark, saying how, if the instance $1 is no longer running.
check_alive() {
  kill -0 "${pid[$1]}" 2>/dev/null && return 0
  local rc=0
  wait "${pid[$1]}" || rc=$?
  echo "bench/metrics: newsdesk (metrics $1) died during the run, exit status $rc" >&2
  exit 3
}
for side in on off; do
  http[$side]=$(wait_for_line "$tmp/$side/newsdesk.out" 'url=http://127\.0\.0\.1:[0-9]+' 20 | sed 's/^url=//')
  broker[$side]=$(wait_for_line "$tmp/$side/newsdesk.out" 'service=broker address=[0-9.]+:[0-9]+' 20 | sed 's/.*://')
done

# Both must serve the same page: every site refreshed, the same headlines.
sites_ok() {
  curl -s "$1/news.json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ok = [s for s in d["sites"] if s["ok"]]
print(len(ok), len(d["sites"]), len(d["headlines"]))'
}
declare -A count
for side in on off; do
  deadline=$((SECONDS + 60))
  until read -r ok total count[$side] < <(sites_ok "${http[$side]}") && ((ok == total && total > 0)); do
    ((SECONDS < deadline)) || { echo "bench/metrics: not every site refreshed ($side):" >&2; curl -s "${http[$side]}/news.json" | head -c 2000 >&2; exit 1; }
    sleep 0.5
  done
done
bytes_on=$(curl -s "${http[on]}/news" | wc -c)
bytes_off=$(curl -s "${http[off]}/news" | wc -c)
if [[ ${count[on]} != "${count[off]}" ]]; then
  echo "bench/metrics: the instances show different pages (${count[on]} vs ${count[off]} headlines)" >&2
  exit 1
fi
metrics_on=$(curl -s -o /dev/null -w '%{http_code}' "${http[on]}/metrics")
metrics_off=$(curl -s -o /dev/null -w '%{http_code}' "${http[off]}/metrics")
if [[ $metrics_on != 200 || $metrics_off != 404 ]]; then
  echo "bench/metrics: GET /metrics answered $metrics_on (on) and $metrics_off (off); expected 200 and 404" >&2
  exit 1
fi

# --- measuring -----------------------------------------------------------------------------------
# Scrapes $1/metrics once a second until killed, appending each status code and size to $2.
scraper() {
  while :; do
    curl -s -o /dev/null -w '%{http_code} %{size_download}\n' --max-time 5 "$1/metrics" >>"$2" || echo "000 0" >>"$2"
    sleep 1
  done
}
scraper_pid=
start_scraper() {
  [[ $1 == on ]] || return 0
  scraper "${http[on]}" "$tmp/scrapes.txt" &
  scraper_pid=$!
  pids+=("$scraper_pid")
}
stop_scraper() {
  [[ -n $scraper_pid ]] || return 0
  kill "$scraper_pid" 2>/dev/null || true
  wait "$scraper_pid" 2>/dev/null || true
  scraper_pid=
}

# Runs wrk against $1, saving its report to $2; prints "requests_per_s p99_ms".
run_wrk() {
  wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency "$1" >"$2"
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec:/ { rps = $2 }
    /^ +99%/ { p99 = ms($2) }
    /Non-2xx|Socket errors/ { print "bench/metrics: " $0 > "/dev/stderr" }
    END { printf "%.0f %.3f\n", rps, p99 }' "$2"
}
# Runs the fan-out load against broker port $1; prints its RESULT line.
run_broker() {
  "$loadgen" --proto newsdesk --port "$1" --mode topic --subs "$subs" --messages "$messages" | grep '^RESULT'
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {printf "%.12g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { python3 -c "print(f'{$1 / $2:.3f}')"; }

echo "page: $bytes_on bytes (on) / $bytes_off bytes (off), ${count[on]} headlines from $total sites"
echo "machine: $(nproc) cores, $(uname -r); $(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg) before"
echo "$rounds rounds, alternating which instance goes first"
echo "wrk -t$threads -c$connections -d${seconds}s; broker_loadgen topic 1 -> $subs subscribers, $messages messages of 100 bytes"
echo "metrics-on instance: GET /metrics scraped once a second while it is measured"
echo

# Warm-up, not counted: a few seconds of /news and one broker run against each instance.
for side in on off; do
  wrk -t"$threads" -c"$connections" -d2s "${http[$side]}/news" >/dev/null
  sleep 0.2
  check_alive "$side"
  run_broker "${broker[$side]}" >/dev/null || check_alive "$side"
done

# Each figure is kept per round; on and off of one round ran back to back, so their ratio
# (paired) is less exposed to other load on the machine than the ratio of the medians.
declare -A rps p99 dps lost
for side in on off; do rps[$side]=""; p99[$side]=""; dps[$side]=""; lost[$side]=0; done
rps_ratios="" p99_ratios="" dps_ratios=""
declare -A this # the current round
echo "raw results:"
for round in $(seq "$rounds"); do
  order=(on off)
  ((round % 2 == 0)) && order=(off on)
  for side in "${order[@]}"; do
    start_scraper "$side"
    read -r r p < <(run_wrk "${http[$side]}/news" "$tmp/wrk-$side-$round.txt")
    stop_scraper
    sleep 0.2
    check_alive "$side"
    rps[$side]+=" $r" p99[$side]+=" $p"
    this[rps.$side]=$r this[p99.$side]=$p
    echo "  round $round  /news   metrics $side: $r requests/s, p99 $p ms"
  done
  for side in "${order[@]}"; do
    start_scraper "$side"
    line=$(run_broker "${broker[$side]}") || check_alive "$side"
    stop_scraper
    check_alive "$side"
    d=$(field deliveries_per_s "$line")
    dps[$side]+=" $d"
    this[dps.$side]=$d
    lost[$side]=$((lost[$side] + $(field lost "$line") + $(field dup "$line") + $(field reorder "$line")))
    echo "  round $round  broker metrics $side: $line"
  done
  for k in rps p99 dps; do this[$k]=$(ratio "${this[$k.on]}" "${this[$k.off]}"); done
  rps_ratios+=" ${this[rps]}" p99_ratios+=" ${this[p99]}" dps_ratios+=" ${this[dps]}"
  echo "  round $round  on / off: requests/s ${this[rps]}, p99 ${this[p99]}, deliveries/s ${this[dps]}"
done

declare -A m_rps m_p99 m_dps
for side in on off; do
  # shellcheck disable=SC2086 # the collected figures are split into arguments on purpose
  m_rps[$side]=$(median ${rps[$side]}) m_p99[$side]=$(median ${p99[$side]}) m_dps[$side]=$(median ${dps[$side]})
done
scrapes=$(wc -l <"$tmp/scrapes.txt")
scrapes_ok=$(grep -c '^200 ' "$tmp/scrapes.txt" || true)
scrape_bytes=$(awk '$1 == 200 {b = $2} END {print b + 0}' "$tmp/scrapes.txt")

echo
# shellcheck disable=SC2086 # as above
{
  printf '%-30s %12s %12s %10s %10s\n' "median of $rounds rounds" "metrics on" "metrics off" "on / off" "paired"
  printf '%-30s %12s %12s %10s %10s\n' "/news requests/s" "${m_rps[on]}" "${m_rps[off]}" "$(ratio "${m_rps[on]}" "${m_rps[off]}")" "$(median $rps_ratios)"
  printf '%-30s %12s %12s %10s %10s\n' "/news p99 ms" "${m_p99[on]}" "${m_p99[off]}" "$(ratio "${m_p99[on]}" "${m_p99[off]}")" "$(median $p99_ratios)"
  printf '%-30s %12s %12s %10s %10s\n' "broker fan-out deliveries/s" "${m_dps[on]}" "${m_dps[off]}" "$(ratio "${m_dps[on]}" "${m_dps[off]}")" "$(median $dps_ratios)"
}
echo "on / off: ratio of the medians; paired: median of the per-round ratios"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg) (other work on this shared machine skews single runs)"
echo "/metrics scrapes during the metrics-on runs: $scrapes ($scrapes_ok answered 200, $scrape_bytes bytes each)"
echo "broker messages lost, duplicated or reordered: on ${lost[on]}, off ${lost[off]} (0 expected)"
echo "The broker's own counters are always on (relaxed atomics, once per batch); 'metrics' switches"
echo "only GET /metrics and the per-request HTTP counting."
