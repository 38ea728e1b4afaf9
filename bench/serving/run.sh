#!/usr/bin/env bash
# newsdesk serving /news, /news.json and /news.atom against nginx serving the same bytes the way
# a CDN edge would: nginx 2 workers, sendfile, gzip_static and brotli_static with .gz and .br
# files made by `gzip -9` and `brotli -q 11`.
#
# Three request modes per path, wrk -t2 -c64, alternating nginx and newsdesk, median of RUNS:
#   browser       Accept-Encoding: gzip, deflate, br
#   plain         no Accept-Encoding
#   revalidation  the browser's header plus If-None-Match with the server's own current ETag
# For each: requests/s, p99 and bytes per response of both, and the ratios.
# Then: the access log's cost (/news, browser mode, access_log on against off), and the fast
# paths under mixed load: the p99 a reader sees on /healthz and /news (probe.py, 200 requests a
# second) idle, and while another wrk floods filtered views and feeds, its generator at idle and
# at normal priority (see flood() below).
#
# Usage: bench/serving/run.sh [seconds-per-run]   (default 10; RUNS=3; EVENT_LOOPS=true runs
#        newsdesk with "event_loops": true; needs nginx with libnginx-mod-http-brotli-static, wrk
#        and brotli: scripts/setup --with-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-10}
runs=${RUNS:-3}
connections=64
threads=2
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

# Two newsdesk processes on the same saved pages: the one measured (no access log, as nginx's is
# off) and one with the access log on, written to a file, for the log's cost.
start_newsdesk() { # name access_log; sets $url (not a $(...) subshell: pids must be kept)
  cat >"$tmp/$1.json" <<EOF
{"splash_url": "$splash", "renderer": "splash", "wait": 0, "access_log": $2,
 "event_loops": ${EVENT_LOOPS:-false}, "refresh": {"jitter": 0, "retries": 0}}
EOF
  "$build/server/newsdesk" --config "$tmp/$1.json" --port 0 --broker-listen off \
    --templates "$root/templates" --static "$root/static" --sites-dir "$root/sites" \
    --store "$tmp/$1.db" >"$tmp/$1.out" 2>"$tmp/$1.log" &
  pids+=("$!")
  url=$(wait_for_line "$tmp/$1.out" 'url=http://127\.0\.0\.1:[0-9]+' 20 | sed 's/^url=//')
}
start_newsdesk quiet false
newsdesk=$url
start_newsdesk logging true
logging=$url
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
sleep 1 # the prebuilt views of the last refresh

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
nginx -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"
nginx=http://127.0.0.1:$nginx_port
for _ in $(seq 50); do curl -sf -o /dev/null "$nginx/news" && break; sleep 0.1; done

# --- wrk -------------------------------------------------------------------------------------
# run_wrk URL [wrk args...]: prints "requests_per_s p99_ms bytes_per_response non2xx".
run_wrk() {
  local url=$1
  shift
  wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency "$@" "$url" >"$tmp/wrk.txt" 2>&1
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    function bytes(v) { if (v ~ /GB$/) return v * 1073741824; if (v ~ /MB$/) return v * 1048576; if (v ~ /KB$/) return v * 1024; return v + 0 }
    /Requests\/sec:/ { rps = $2 }
    /^ +99%/ { p99 = ms($2) }
    /requests in/ { n = $1; read = bytes($5) }
    /Non-2xx/ { bad = $4 }
    END { printf "%.0f %.3f %.0f %d\n", rps, p99, (n ? read / n : 0), bad }' "$tmp/wrk.txt"
}
median() { python3 -c "import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
etag_of() { # server path
  curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip, deflate, br' "$1$2" | tr -d '\r' |
    awk 'tolower($1) == "etag:" { print $2 }'
}

browser=(-H 'Accept-Encoding: gzip, deflate, br')
echo "bench/serving on $(hostname), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ); wrk -t$threads -c$connections -d${seconds}s, median of $runs alternating runs; event_loops ${EVENT_LOOPS:-false}"
printf '%-24s %11s %11s %8s %9s %9s %8s %9s %9s\n' "path, mode" "nginx r/s" "newsdesk" "ratio" \
  "nginx p99" "nd p99" "ratio" "nginx B" "nd B"
for path in /news /news.json /news.atom; do
  for mode in browser plain revalidation; do
    n_rps=() d_rps=() n_p99=() d_p99=()
    for _ in $(seq "$runs"); do
      for side in nginx newsdesk; do
        base=$nginx
        [[ $side == newsdesk ]] && base=$newsdesk
        args=()
        case $mode in
        browser) args=("${browser[@]}") ;;
        revalidation) args=("${browser[@]}" -H "If-None-Match: $(etag_of "$base" "$path")") ;;
        esac
        read -r rps p99 per bad < <(run_wrk "$base$path" "${args[@]}")
        if [[ $side == nginx ]]; then n_rps+=("$rps") n_p99+=("$p99") n_bytes=$per
        else d_rps+=("$rps") d_p99+=("$p99") d_bytes=$per; fi
      done
    done
    nr=$(median "${n_rps[@]}") dr=$(median "${d_rps[@]}") np=$(median "${n_p99[@]}") dp=$(median "${d_p99[@]}")
    printf '%-24s %11.0f %11.0f %8s %9.2f %9.2f %8s %9s %9s\n' "$path $mode" "$nr" "$dr" \
      "$(ratio "$dr" "$nr")" "$np" "$dp" "$(ratio "$dp" "$np")" "$n_bytes" "$d_bytes"
  done
done
echo "(r/s ratio: newsdesk / nginx, goal >= 1.0x; p99 ratio: newsdesk / nginx, goal <= 1.0x; B: bytes per response, headers included)"

# --- the access log's cost ---------------------------------------------------------------------
off=() on=()
for _ in $(seq "$runs"); do
  read -r rps _ _ _ < <(run_wrk "$newsdesk/news" "${browser[@]}")
  off+=("$rps")
  read -r rps _ _ _ < <(run_wrk "$logging/news" "${browser[@]}")
  on+=("$rps")
done
o=$(median "${off[@]}") l=$(median "${on[@]}")
echo
echo "access log: /news browser mode $l r/s with it, $o r/s without: costs $(python3 -c "print(f'{(1 - $l / $o) * 100:.1f}%')") (goal <= 3%)"

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
  python3 "$root/bench/serving/probe.py" "$newsdesk" "$1" 200 "$seconds" | awk '{ print $2 }'
}
# flood PRIORITY: probes /healthz and /news while a second wrk floods; prints "healthz news r/s".
# The flood's generator runs here, on the same two cores as newsdesk, which a remote client's
# would not: at normal priority it takes CPU from newsdesk and from the probe alike; at idle
# priority (SCHED_IDLE) it runs on what they leave, so what slows the probes is newsdesk's own
# handling of the flood, which is what the goal is about. Both are reported.
flood() {
  local run=()
  [[ $1 == idle ]] && run=(chrt --idle 0)
  "${run[@]}" wrk -t1 -c32 -d"$((seconds * 2 + 4))s" -s "$tmp/flood.lua" "$newsdesk" >"$tmp/flood.txt" 2>&1 &
  local pid=$!
  sleep 1
  local h n
  h=$(probe /healthz) n=$(probe /news)
  wait "$pid" 2>/dev/null || true
  echo "$h $n $(awk '/Requests\/sec:/ { printf "%.0f", $2 }' "$tmp/flood.txt")"
}
idle_h=() idle_n=() normal_h=() normal_n=() normal_r=() low_h=() low_n=() low_r=()
for _ in $(seq "$runs"); do
  idle_h+=("$(probe /healthz)") idle_n+=("$(probe /news)")
  read -r h n r < <(flood normal)
  normal_h+=("$h") normal_n+=("$n") normal_r+=("$r")
  read -r h n r < <(flood idle)
  low_h+=("$h") low_n+=("$n") low_r+=("$r")
done
idle_health=$(median "${idle_h[@]}") idle_news=$(median "${idle_n[@]}")
echo
echo "mixed load, p99 (median of $runs): idle; under a flood of filtered views and feeds whose generator"
echo "runs at idle priority (newsdesk's own cost; goal <= 2x); and at normal priority (sharing the cores)"
for what in healthz news; do
  if [[ $what == healthz ]]; then i=$idle_health l=$(median "${low_h[@]}") n=$(median "${normal_h[@]}")
  else i=$idle_news l=$(median "${low_n[@]}") n=$(median "${normal_n[@]}"); fi
  printf '  /%-8s %6.2f ms idle; %6.2f ms flood at idle priority: %s; %6.2f ms flood at normal priority: %s\n' \
    "$what" "$i" "$l" "$(ratio "$l" "$i")" "$n" "$(ratio "$n" "$i")"
done
echo "  (flood: $(median "${low_r[@]}") r/s at idle priority, $(median "${normal_r[@]}") r/s at normal priority)"
