#!/usr/bin/env bash
# Bytes on the wire and client CPU per page for the saved front pages (../shared/fixtures/pages)
# served by nginx the way a CDN edge serves them (gzip_static and brotli_static, files made by
# `gzip -9` and `brotli -q 11`), fetched three ways with libcurl (curl(1), the library newsdesk's
# client is built on, with the same Accept-Encoding):
#   plain   no Accept-Encoding: what the Beast client newsdesk had before issue 45 sent
#   gzip    Accept-Encoding: gzip, decoded
#   br      Accept-Encoding: deflate, gzip, br, zstd (newsdesk's), decoded: nginx picks br
# Bytes are curl's count of the answer (header and body as received); CPU is the client's user +
# system time over ROUNDS fetches of each page on one kept-alive connection, per page.
# nginx runs as one process (no master, no change of user: the files stay the caller's).
# Prints one row per page, the totals and the ratios plain/br, and the load average.
# Usage: bench/fetch/run.sh [rounds]   (default 20; needs nginx with its brotli module, brotli
#        and curl: scripts/setup)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench/fetch
rounds=${1:-20}
pages=${NEWSDESK_SHARED_PAGES:-$root/../shared/fixtures/pages}
for tool in nginx curl brotli gzip python3; do
  command -v "$tool" >/dev/null || { echo "$bench: $tool is missing (scripts/setup)" >&2; exit 2; }
done
brotli_module=/usr/lib/nginx/modules/ngx_http_brotli_static_module.so
[[ -f $brotli_module ]] || { echo "$bench: $brotli_module is missing (scripts/setup)" >&2; exit 2; }
ls "$pages"/*.html >/dev/null 2>&1 || { echo "$bench: no saved pages in $pages" >&2; exit 2; }

tmp=$(mktemp -d /tmp/newsdesk-bench-fetch-XXXXXX)
cleanup() {
  [[ -f $tmp/nginx.pid ]] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/www"
cp "$pages"/*.html "$tmp/www/"
for f in "$tmp"/www/*.html; do
  gzip -9 -k "$f"
  brotli -q 11 -k "$f"
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/nginx.conf" <<CONF
load_module $brotli_module;
master_process off;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  keepalive_requests 100000;
  gzip_static on;
  brotli_static on;
  default_type text/html;
  client_body_temp_path $tmp/body; proxy_temp_path $tmp/proxy; fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi; scgi_temp_path $tmp/scgi;
  server { listen 127.0.0.1:$port; root $tmp/www; }
}
CONF
nginx -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/error.log"
base=http://127.0.0.1:$port
for _ in $(seq 50); do curl -s -o /dev/null "$base/" && break; sleep 0.1; done

# fetch MODE PAGE: "bytes cpu_us_per_fetch" for ROUNDS fetches of PAGE on one connection.
fetch() {
  local mode=$1 page=$2 args=() urls=() i
  case $mode in
    plain) args=() ;;
    gzip) args=(-H 'Accept-Encoding: gzip' --compressed) ;;
    br) args=(--compressed) ;;
  esac
  for ((i = 0; i < rounds; i++)); do urls+=("$base/$page"); done
  local bytes
  bytes=$(curl -s "${args[@]}" -o /dev/null -w '%{size_header} %{size_download}\n' "$base/$page" |
    awk '{ print $1 + $2 }')
  local start end me=$BASHPID # this subshell: curl's CPU lands in its children's times
  start=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
  curl -s "${args[@]}" "${urls[@]}" >/dev/null
  end=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$me/stat)
  echo "$bytes $(((end - start) * 1000000 / $(getconf CLK_TCK) / rounds))"
}

printf '%-36s %12s %12s %12s %8s | %10s %10s %10s\n' page plain_bytes gzip_bytes br_bytes plain/br \
  plain_us gzip_us br_us
tp=0 tg=0 tb=0 cp=0 cg=0 cb=0
for f in "$tmp"/www/*.html; do
  page=$(basename "$f")
  read -r bp up < <(fetch plain "$page")
  read -r bg ug < <(fetch gzip "$page")
  read -r bb ub < <(fetch br "$page")
  printf '%-36s %12d %12d %12d %8.2f | %10d %10d %10d\n' "$page" "$bp" "$bg" "$bb" \
    "$(echo "$bp / $bb" | bc -l)" "$up" "$ug" "$ub"
  tp=$((tp + bp)) tg=$((tg + bg)) tb=$((tb + bb)) cp=$((cp + up)) cg=$((cg + ug)) cb=$((cb + ub))
done
printf '%-36s %12d %12d %12d %8.2f | %10d %10d %10d\n' total "$tp" "$tg" "$tb" \
  "$(echo "$tp / $tb" | bc -l)" "$cp" "$cg" "$cb"
echo "bytes on the wire per refresh, plain/br: $(echo "$tp / $tb" | bc -l | cut -c1-5)x;" \
  "plain/gzip: $(echo "$tp / $tg" | bc -l | cut -c1-5)x; client CPU per refresh, br/plain:" \
  "$(echo "$cb / ($cp + 1)" | bc -l | cut -c1-5)x"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
