#!/usr/bin/env bash
# newsdesk serving /news, /news.json and /news.atom against nginx serving the same bytes the way
# a CDN edge would: nginx 2 workers, sendfile, gzip_static and brotli_static with .gz and .br
# files made by `gzip -9` and `brotli -q 11`.
#
# The servers run on the first half of the cores and every client (wrk, the probe, the flood) on
# the other half, as clients on other machines would: sharing cores, the clients' own scheduling
# decided the tail latencies and moved requests/s by a third between runs.
#
# Three request modes per path, wrk -t2 -c64, alternating nginx and newsdesk, RUNS rounds:
#   browser       Accept-Encoding: gzip, deflate, br
#   plain         no Accept-Encoding
#   revalidation  the browser's header plus If-None-Match with the server's own current ETag
# For each: requests/s, p99, CPU time per request (the server's processes, from /proc: unlike
# requests/s, it does not depend on how much of the two cores wrk took in that run) and bytes per
# response of both (medians), and the ratios. A ratio is the median of each round's ratio: this
# machine's speed drifts by a third over tens of seconds, and the two runs of a round are
# adjacent in time, where the medians of each side's runs need not be.
# Then: the access log's cost (/news, browser mode, access_log on against off), and the fast
# paths under mixed load: the p99 a reader sees on /healthz and /news (probe.py, 200 requests a
# second) idle, and while another wrk floods filtered views and feeds (see flood() below).
#
# At the end, /news's three request-per-second ratios against their goals (browser >= 1.2x,
# plain >= 1.0x, revalidation >= 1.1x); the bench exits 1, loudly, when one is below 1.0x.
#
# Usage: bench/serving/run.sh [seconds-per-wrk-run]   (default 3; RUNS=5 rounds; each probe runs
#        PROBE_SECONDS=10; EVENT_LOOPS=true runs newsdesk with "event_loops": true; PATHS="/news"
#        measures only those paths; MIXED=false leaves out the access log's cost and the mixed
#        load; needs nginx with libnginx-mod-http-brotli-static, wrk and brotli:
#        scripts/setup --with-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-3}
runs=${RUNS:-5}
probe_seconds=${PROBE_SECONDS:-10}
connections=64
threads=2
cores=$(nproc)
((cores >= 2)) || { echo "$bench: needs two cores or more (servers and clients on cores of their own)" >&2; exit 2; }
server_cores=0-$((cores / 2 - 1)) client_cores=$((cores / 2))-$((cores - 1))
on_server_cores=(taskset -c "$server_cores") on_client_cores=(taskset -c "$client_cores")
pages=${NEWSDESK_SHARED_PAGES:-$root/../shared/fixtures/pages}
build=$root/build-bench
bench=bench/serving

for tool in nginx wrk curl brotli gzip python3; do
  command -v "$tool" >/dev/null || { echo "$bench: $tool is missing (scripts/setup --with-bench)" >&2; exit 2; }
done
brotli_module=/usr/lib/nginx/modules/ngx_http_brotli_static_module.so
[[ -f $brotli_module ]] || { echo "$bench: $brotli_module is missing (scripts/setup --with-bench)" >&2; exit 2; }
[[ -f $pages/cnn-2025-home-rendered.html ]] || { echo "$bench: saved pages not found in $pages" >&2; exit 2; }

exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "$bench: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk splash-standin >/dev/null

tmp=$(mktemp -d /tmp/newsdesk-bench-serving-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [[ -f $tmp/nginx.pid ]] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

source "$root/bench/saved_sites.sh"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
start_saved_sites_standin

# No refresh after the first while it is measured (a refresh's parsing on the servers' core took a
# 3 s run from 85,000 to 11,000 requests/s): this compares serving, which is all nginx does.
# Two newsdesk processes on the same saved pages: the one measured (no access log, as nginx's is
# off) and one with the access log on, written to a file, for the log's cost.
start_newsdesk() { # name access_log; sets $url (not a $(...) subshell: pids must be kept)
  cat >"$tmp/$1.json" <<EOF
{"splash_url": "$splash", "renderer": "splash", "wait": 0, "access_log": $2,
 "event_loops": ${EVENT_LOOPS:-false}, "refresh": {"interval": 3600, "jitter": 0, "retries": 0}}
EOF
  "${on_server_cores[@]}" "$build/server/newsdesk" --config "$tmp/$1.json" --port 0 --broker-listen off \
    --templates "$root/templates" --static "$root/static" --sites-dir "$root/sites" \
    --store "$tmp/$1.db" >"$tmp/$1.out" 2>"$tmp/$1.log" &
  pids+=("$!")
  pid=$!
  url=$(wait_for_line "$tmp/$1.out" 'url=http://127\.0\.0\.1:[0-9]+' 20 | sed 's/^url=//')
}
start_newsdesk quiet false
newsdesk=$url newsdesk_pids=$pid
start_newsdesk logging true
logging=$url logging_pids=$pid
for server in "$newsdesk" "$logging"; do
  deadline=$((SECONDS + 60))
  until curl -s "$server/news.json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["sites"] and all(s["ok"] for s in d["sites"]) else 1)'; do
    ((SECONDS < deadline)) || { echo "$bench: not every site refreshed on $server" >&2; exit 1; }
    sleep 0.5
  done
done
# The views are compressed quick while the headlines arrive, then at the best effort once they
# have been still for 20 s (nginx's files are made with brotli -q 11): wait for those.
for server in "$newsdesk" "$logging"; do
  deadline=$((SECONDS + 90))
  until curl -s -D - -o /dev/null -H 'Accept-Encoding: br' "$server/news" | tr -d '\r' |
    grep -qi '^etag: .*-br"$'; do
    ((SECONDS < deadline)) || { echo "$bench: /news on $server never compressed at the best effort" >&2; exit 1; }
    sleep 1
  done
done

# --- nginx on the same bytes, precompressed the way nginx's static modules expect --------------
mkdir -p "$tmp/www"
for path in news news.json news.atom; do
  curl -s -o "$tmp/www/$path" "$newsdesk/$path"
  gzip -9 -k "$tmp/www/$path"
  brotli -q 11 -k "$tmp/www/$path"
done
chmod 755 "$tmp" "$tmp/www" && chmod 644 "$tmp"/www/*
nginx_port=$(free_port)
cat >"$tmp/nginx.conf" <<EOF
load_module $brotli_module;
worker_processes 2;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  gzip_static on;
  gzip_vary on;
  brotli_static on;
  client_body_temp_path $tmp/nginx-body;
  proxy_temp_path $tmp/nginx-proxy;
  fastcgi_temp_path $tmp/nginx-fastcgi;
  uwsgi_temp_path $tmp/nginx-uwsgi;
  scgi_temp_path $tmp/nginx-scgi;
  server {
    listen 127.0.0.1:$nginx_port;
    location = /news { default_type "text/html; charset=utf-8"; alias $tmp/www/news; }
    location = /news.json { default_type "application/json; charset=utf-8"; alias $tmp/www/news.json; }
    location = /news.atom { default_type "application/atom+xml; charset=utf-8"; alias $tmp/www/news.atom; }
  }
}
EOF
"${on_server_cores[@]}" nginx -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"
nginx=http://127.0.0.1:$nginx_port
for _ in $(seq 50); do curl -sf -o /dev/null "$nginx/news" && break; sleep 0.1; done
nginx_pids="$(cat "$tmp/nginx.pid") $(pgrep -d ' ' -P "$(cat "$tmp/nginx.pid")")" # master, workers

# --- wrk -------------------------------------------------------------------------------------
# cpu_ticks PID...: user + system CPU time of those processes (all their threads), in clock ticks.
cpu_ticks() {
  local pid total=0
  for pid in "$@"; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
  done
  echo "$total"
}
tick_us=$((1000000 / $(getconf CLK_TCK)))
# run_wrk "SERVER_PIDS" URL [wrk args...]: prints "requests_per_s p99_ms bytes_per_response
# cpu_us_per_request".
run_wrk() {
  local server_pids=($1) url=$2
  shift 2
  local before ticks attempt
  for attempt in 1 2; do
    before=$(cpu_ticks "${server_pids[@]}")
    "${on_client_cores[@]}" wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency "$@" "$url" >"$tmp/wrk.txt" 2>&1 || true
    ticks=$(($(cpu_ticks "${server_pids[@]}") - before))
    awk '/requests in/ && $1 > 0 { done = 1 } END { exit !done }' "$tmp/wrk.txt" && break
    # A run that completed no request is shown, then run again; a second one stops the
    # benchmark rather than print a made-up figure.
    echo "$bench: no request completed on $url (attempt $attempt):" >&2
    sed 's/^/  /' "$tmp/wrk.txt" >&2
    ((attempt == 1)) || exit 1
  done
  awk -v cpu_us=$((ticks * tick_us)) '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    function bytes(v) { if (v ~ /GB$/) return v * 1073741824; if (v ~ /MB$/) return v * 1048576; if (v ~ /KB$/) return v * 1024; return v + 0 }
    /Requests\/sec:/ { rps = $2 }
    /^ +99%/ { p99 = ms($2) }
    /requests in/ { n = $1; read = bytes($5) }
    END { printf "%.0f %.3f %.0f %.2f\n", rps, p99, (n ? read / n : 0), (n ? cpu_us / n : 0) }' "$tmp/wrk.txt"
}
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
# paired_ratio "A1 A2 ..." "B1 B2 ...": the median of A1/B1, A2/B2, ...
paired_ratio() {
  python3 -c "import statistics, sys
a, b = (list(map(float, v.split())) for v in sys.argv[1:])
print(f'{statistics.median(x / y for x, y in zip(a, b)):.2f}x')" "$1" "$2"
}
etag_of() { # server path
  curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip, deflate, br' "$1$2" | tr -d '\r' |
    awk 'tolower($1) == "etag:" { print $2 }'
}

# /news shows ages in minutes, so newsdesk builds it again when a minute turns, under a new tag
# (nginx's copy never changes): a revalidation run across the turn would send the old tag and
# get 200s. The first request of a new minute starts that build, so runs start clear of the
# turn, after a request and the moment the build takes.
clear_of_minute_turn() { # server
  local second
  while second=$((10#$(date +%S))); ((second < 2 || second > 57 - seconds)); do sleep 0.5; done
  curl -s -o /dev/null -H 'Accept-Encoding: br' "$1/news"
  sleep 2
}
browser=(-H 'Accept-Encoding: gzip, deflate, br')
echo "bench/serving on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$root" rev-parse --short HEAD), load average $(cut -d" " -f1-3 /proc/loadavg): servers on cores $server_cores, clients on cores $client_cores;"
echo "wrk -t$threads -c$connections -d${seconds}s, $runs rounds alternating nginx and newsdesk; event_loops ${EVENT_LOOPS:-false}"
printf '%-24s %10s %9s %6s %9s %7s %6s %8s %7s %6s %8s %8s\n' "path, mode" "nginx r/s" "newsdesk" \
  "ratio" "nginx p99" "nd p99" "ratio" "nginx us" "nd us" "ratio" "nginx B" "nd B"
declare -A news_ratio # mode -> /news's requests/s ratio
for path in ${PATHS:-/news /news.json /news.atom}; do
  for mode in browser plain revalidation; do
    n_rps=() d_rps=() n_p99=() d_p99=() n_cpu=() d_cpu=()
    for _ in $(seq "$runs"); do
      for side in nginx newsdesk; do
        base=$nginx server_pids=$nginx_pids
        [[ $side == newsdesk ]] && base=$newsdesk server_pids=$newsdesk_pids
        clear_of_minute_turn "$base"
        args=()
        case $mode in
        browser) args=("${browser[@]}") ;;
        revalidation) args=("${browser[@]}" -H "If-None-Match: $(etag_of "$base" "$path")") ;;
        esac
        read -r rps p99 per cpu < <(run_wrk "$server_pids" "$base$path" "${args[@]}")
        if [[ $side == nginx ]]; then n_rps+=("$rps") n_p99+=("$p99") n_cpu+=("$cpu") n_bytes=$per
        else d_rps+=("$rps") d_p99+=("$p99") d_cpu+=("$cpu") d_bytes=$per; fi
      done
    done
    nr=$(median "${n_rps[@]}") dr=$(median "${d_rps[@]}") np=$(median "${n_p99[@]}") dp=$(median "${d_p99[@]}")
    nc=$(median "${n_cpu[@]}") dc=$(median "${d_cpu[@]}")
    rps_ratio=$(paired_ratio "${d_rps[*]}" "${n_rps[*]}")
    [[ $path == /news ]] && news_ratio[$mode]=$rps_ratio
    printf '%-24s %10.0f %9.0f %6s %9.2f %7.2f %6s %8.2f %7.2f %6s %8s %8s\n' "$path $mode" "$nr" "$dr" \
      "$rps_ratio" "$np" "$dp" "$(paired_ratio "${d_p99[*]}" "${n_p99[*]}")" \
      "$nc" "$dc" "$(paired_ratio "${d_cpu[*]}" "${n_cpu[*]}")" \
      "$n_bytes" "$d_bytes"
  done
done
echo "(values: medians of the rounds; ratios: newsdesk / nginx, the median of the rounds' ratios;"
echo " r/s goal >= 1.0x, p99 goal <= 1.0x; us: the server's CPU time per request, user + system, all"
echo " its processes and threads; B: bytes per response, headers included)"

# --- the access log's cost ---------------------------------------------------------------------
if [[ ${MIXED:-true} != false ]]; then
off=() on=() off_cpu=() on_cpu=()
for _ in $(seq "$runs"); do
  read -r rps _ _ cpu < <(run_wrk "$newsdesk_pids" "$newsdesk/news" "${browser[@]}")
  off+=("$rps") off_cpu+=("$cpu")
  read -r rps _ _ cpu < <(run_wrk "$logging_pids" "$logging/news" "${browser[@]}")
  on+=("$rps") on_cpu+=("$cpu")
done
o=$(median "${off[@]}") l=$(median "${on[@]}") oc=$(median "${off_cpu[@]}") lc=$(median "${on_cpu[@]}")
echo
echo "access log, /news browser mode (goal <= 3%): $l r/s with it, $o r/s without (ratio $(paired_ratio "${on[*]}" "${off[*]}"));"
echo "  CPU per request $lc us with it, $oc us without (ratio $(paired_ratio "${on_cpu[*]}" "${off_cpu[*]}"))"

# --- fast paths under mixed load ------------------------------------------------------------------
cat >"$tmp/flood.lua" <<'EOF'
-- Filtered views and feeds, each request a different one.
local paths = {"/news?q=", "/news.json?q=", "/news.atom?q=", "/news.feed.json?q="}
local words = {"war", "election", "storm", "court", "market", "police", "ai", "trump", "climate",
               "health", "china", "russia", "sport", "music", "space", "water", "fire", "school"}
local n = 0
request = function()
  n = n + 1
  local path = paths[n % #paths + 1] .. words[n % #words + 1] .. "&limit=" .. (n % 50 + 1)
  return wrk.format("GET", path, {["Accept-Encoding"] = "gzip, deflate, br"})
end
EOF
probe() { # path: p99 in ms of a reader's requests, 200 a second on one connection (probe.py)
  "${on_client_cores[@]}" python3 "$root/bench/serving/probe.py" "$newsdesk" "$1" 200 "$probe_seconds" | awk '{ print $2 }'
}
# flood: probes /healthz and /news while a second wrk floods; prints "healthz news r/s". The
# flood's generator runs at idle priority (SCHED_IDLE) on the clients' cores, so the probe, on
# the same cores, never waits for it: what slows the probe is newsdesk's handling of the flood.
flood() {
  "${on_client_cores[@]}" chrt --idle 0 wrk -t1 -c32 -d"$((probe_seconds * 2 + 4))s" -s "$tmp/flood.lua" \
    "$newsdesk" >"$tmp/flood.txt" 2>&1 &
  local pid=$!
  sleep 1
  local h n
  h=$(probe /healthz) n=$(probe /news)
  wait "$pid" 2>/dev/null || true
  echo "$h $n $(awk '/Requests\/sec:/ { printf "%.0f", $2 }' "$tmp/flood.txt")"
}
idle_h=() idle_n=() flood_h=() flood_n=() flood_r=()
for _ in $(seq "$runs"); do
  idle_h+=("$(probe /healthz)") idle_n+=("$(probe /news)")
  read -r h n r < <(flood)
  flood_h+=("$h") flood_n+=("$n") flood_r+=("$r")
done
echo
echo "mixed load, a reader's p99 ($runs rounds, medians; ratio: the median of the rounds' ratios), idle"
echo "and under a flood of filtered views and feeds (goal <= 2x):"
for what in healthz news; do
  if [[ $what == healthz ]]; then i=("${idle_h[@]}") f=("${flood_h[@]}")
  else i=("${idle_n[@]}") f=("${flood_n[@]}"); fi
  printf '  /%-8s %6.2f ms idle, %6.2f ms under the flood: %s\n' "$what" "$(median "${i[@]}")" \
    "$(median "${f[@]}")" "$(paired_ratio "${f[*]}" "${i[*]}")"
done
echo "  (the flood: $(median "${flood_r[@]}") requests/s)"
fi

# --- /news against its goals --------------------------------------------------------------------
if [[ -n ${news_ratio[browser]:-} ]]; then
  echo
  echo "/news requests/s against nginx: browser ${news_ratio[browser]} (goal >= 1.2x), plain" \
    "${news_ratio[plain]} (goal >= 1.0x), revalidation ${news_ratio[revalidation]} (goal >= 1.1x);" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for mode in browser plain revalidation; do
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1].rstrip('x')) < 1.0 else 1)" "${news_ratio[$mode]}"; then
      echo "$bench: FAILED: /news $mode serves ${news_ratio[$mode]} of nginx's requests/s, below 1.0x" >&2
      failed=1
    fi
  done
  exit "${failed:-0}"
fi
