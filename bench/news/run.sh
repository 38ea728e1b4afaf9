#!/usr/bin/env bash
# /news served from memory, against nginx serving the same bytes as a static file.
#
# Builds newsdesk and splash-standin (Release, build-bench/ at the repository root), starts the
# stand-in serving saved real front pages for the shipped sites, newsdesk rendering them through
# it (--renderer splash), saves the exact /news bytes, starts nginx on them, and runs wrk against
# both on this machine (same threads and connections):
#   1. quiet: newsdesk vs nginx, requests/s, p50, p99 and the ratios;
#   2. newsdesk again while POST /api/refresh?site=cnn keeps the 4 MB CNN page parsing;
#   3. renders the stand-in received per 1,000 /news requests during the quiet run.
# Everything listens on 127.0.0.1 and is stopped on exit.
#
# Usage: bench/news/run.sh [seconds-per-run]  (default 15; needs nginx and wrk:
#        scripts/setup --with-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-15}
connections=64
threads=2
pages=${NEWSDESK_SHARED_PAGES:-$root/../shared/fixtures/pages}
build=$root/build-bench

for tool in nginx wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "bench/news: $tool is missing (scripts/setup --with-bench)" >&2; exit 2; }
done
if [[ ! -f $pages/cnn-2025-home-rendered.html ]]; then
  echo "bench/news: saved pages not found in $pages" >&2
  exit 2
fi

# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock).
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "bench/news: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk splash-standin >/dev/null

tmp=$(mktemp -d /tmp/newsdesk-bench-news-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [[ -f $tmp/nginx.pid ]] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench=bench/news
source "$root/bench/saved_sites.sh"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- the stand-in, serving the saved pages for the shipped sites' URLs -----------------------
start_saved_sites_standin

# Renders so far, per the stand-in (it prints its counts on SIGUSR1).
renders_total() {
  local before
  before=$(grep -c '^renders ' "$tmp/standin.out" || true)
  kill -USR1 "$standin_pid"
  for _ in $(seq 50); do
    (($(grep -c '^renders ' "$tmp/standin.out" || true) >= before + ${#standin_args[@]})) && break
    sleep 0.05
  done
  tail -n "${#standin_args[@]}" "$tmp/standin.out" | awk '{n += $3} END {print n}'
}

# --- newsdesk: every shipped site, rendered through the stand-in -----------------------------
# The interval is the default (5 min): background refreshes are time-driven, so none falls in a
# short run. manual_min_interval 0 lets scenario 2 ask for CNN again and again. The access log is
# off, as nginx's is below: both serve without writing a line per request.
cat >"$tmp/config.json" <<EOF
{"splash_url": "$splash", "renderer": "splash", "wait": 0, "log_level": "info", "access_log": false,
 "refresh": {"manual_min_interval": 0, "jitter": 0, "retries": 0}}
EOF
"$build/server/newsdesk" --config "$tmp/config.json" --port 0 --broker-listen 127.0.0.1:0 \
  --templates "$root/templates" --static "$root/static" --sites-dir "$root/sites" \
  --store "$tmp/store.db" >"$tmp/newsdesk.out" 2>"$tmp/newsdesk.log" &
pids+=("$!")
newsdesk=$(wait_for_line "$tmp/newsdesk.out" 'url=http://127\.0\.0\.1:[0-9]+' 20 | sed 's/^url=//')

sites_ok() {
  curl -s "$newsdesk/news.json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ok = [s for s in d["sites"] if s["ok"]]
print(len(ok), len(d["sites"]), len(d["headlines"]))'
}
deadline=$((SECONDS + 60))
until read -r ok total count < <(sites_ok) && ((ok == total && total > 0)); do
  ((SECONDS < deadline)) || { echo "bench/news: not every site refreshed:" >&2; curl -s "$newsdesk/news.json" | head -c 2000 >&2; exit 1; }
  sleep 0.5
done

# --- nginx, serving the exact /news bytes ------------------------------------------------------
mkdir -p "$tmp/www"
curl -s -o "$tmp/www/news.html" "$newsdesk/news"
page_bytes=$(stat -c %s "$tmp/www/news.html")
chmod 755 "$tmp" "$tmp/www" && chmod 644 "$tmp/www/news.html" # nginx's workers drop root
nginx_port=$(free_port)
cat >"$tmp/nginx.conf" <<EOF
worker_processes auto;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx-body;
  proxy_temp_path $tmp/nginx-proxy;
  fastcgi_temp_path $tmp/nginx-fastcgi;
  uwsgi_temp_path $tmp/nginx-uwsgi;
  scgi_temp_path $tmp/nginx-scgi;
  server {
    listen 127.0.0.1:$nginx_port;
    location = /news { default_type "text/html; charset=utf-8"; alias $tmp/www/news.html; }
  }
}
EOF
nginx -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$nginx_port/news" && break; sleep 0.1; done
cmp -s "$tmp/www/news.html" <(curl -s "http://127.0.0.1:$nginx_port/news") || { echo "bench/news: nginx serves other bytes" >&2; exit 1; }

# --- wrk -----------------------------------------------------------------------------------------
# Runs wrk against $1, saving its report to $2; prints "requests_per_s p50_ms p99_ms requests".
run_wrk() {
  wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency "$1" >"$2"
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec:/ { rps = $2 }
    /^ +50%/ { p50 = ms($2) }
    /^ +99%/ { p99 = ms($2) }
    /requests in/ { n = $1 }
    /Non-2xx|Socket errors/ { print "bench/news: " $0 > "/dev/stderr" }
    END { printf "%.0f %.3f %.3f %d\n", rps, p50, p99, n }' "$2"
}

echo "page: $page_bytes bytes, $count headlines from $total sites; wrk -t$threads -c$connections -d${seconds}s, $(nproc) cores"
read -r n_rps n_p50 n_p99 n_requests < <(run_wrk "http://127.0.0.1:$nginx_port/news" "$tmp/wrk-nginx.txt")
renders_before=$(renders_total)
read -r d_rps d_p50 d_p99 d_requests < <(run_wrk "$newsdesk/news" "$tmp/wrk-newsdesk.txt")
renders_after=$(renders_total)

# Scenario 2: CNN's 4 MB page parsed over and over while wrk runs.
# newsdesk logs to stdout or stderr depending on its version: count in both.
cnn_refreshes() { cat "$tmp/newsdesk.out" "$tmp/newsdesk.log" | grep -c 'msg="site refreshed" site=cnn' || true; }
refreshed_before=$(cnn_refreshes)
(
  end=$((SECONDS + seconds + 1))
  while ((SECONDS < end)); do
    curl -s -o /dev/null -X POST "$newsdesk/api/refresh?site=cnn"
    sleep 0.05
  done
) &
refresher=$!
pids+=("$refresher")
read -r b_rps b_p50 b_p99 b_requests < <(run_wrk "$newsdesk/news" "$tmp/wrk-busy.txt")
wait "$refresher" 2>/dev/null || true
refreshed=$(($(cnn_refreshes) - refreshed_before))

ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
echo
printf '%-34s %12s %10s %10s\n' "run" "requests/s" "p50 ms" "p99 ms"
printf '%-34s %12s %10s %10s\n' "nginx (static file)" "$n_rps" "$n_p50" "$n_p99"
printf '%-34s %12s %10s %10s\n' "newsdesk /news (quiet)" "$d_rps" "$d_p50" "$d_p99"
printf '%-34s %12s %10s %10s\n' "newsdesk /news (CNN parsing)" "$b_rps" "$b_p50" "$b_p99"
echo
echo "newsdesk / nginx requests/s: $(ratio "$d_rps" "$n_rps")   (target >= 0.8x)"
echo "newsdesk / nginx p99:        $(ratio "$d_p99" "$n_p99")   (target <= 2x)"
echo "p99 while parsing / quiet:   $(ratio "$b_p99" "$d_p99")   (target <= 2x; $refreshed CNN refreshes of $(stat -c %s "$pages/cnn-2025-home-rendered.html") bytes parsed during the run)"
renders=$((renders_after - renders_before))
echo "renders sent to Splash during the quiet run: $renders for $d_requests /news requests = $(python3 -c "print(f'{$renders * 1000 / $d_requests:.2f}')") per 1,000 (reference design: 2,000); $renders_before at startup for ${#standin_args[@]} sites"
