#!/usr/bin/env bash
# Many sites on one newsdesk (issues 26 and 41): memory, CPU per refresh, /news size, how long
# until every site is on /news.json, whether the cycle keeps up, and /news throughput while a
# refresh cycle runs against idle. Two kinds of site:
#   feeds: siteserver.py serves N RSS feeds of 30-90 items made from real headlines, one new item
#          per feed per minute, 304 to If-None-Match / If-Modified-Since when unchanged;
#   pages: siteserver.py serves N HTML front pages, each one of the saved pages of BBC, AP,
#          Reuters and Hacker News (40 KB to 1.4 MB, from ../shared/fixtures/pages, read by the
#          project's own site files in sites/ through the direct renderer), every headline of
#          each site its own, two of them changed on every fetch; no ETag (a front page is
#          dynamic: every refresh fetches and parses the whole page).
# For each N (default 60 600 3000), on 127.0.0.1 only:
#   - the server writes a site file per site into a temp --sites-dir;
#   - newsdesk (Release, build-bench/ at the repository root) with those N sites only, refresh
#     interval INTERVAL (feeds: 60 s; pages: 60 s, and 300 s from 3,000 sites, the issue's
#     figures), jitter and render cap at their defaults, a fresh SQLite store in a temp dir,
#     the access log off. Its timeout is set to TIMEOUT (600 s) so that the idle phase, in
#     which the server holds requests unanswered, ends no refresh in a failure.
# Then, for that N:
#   1. cold start: time from launch until every site has a last_success in /news.json's `sites`
#      (polled; at most COLD_MAX s), and from the log, until each has been refreshed once;
#   2. CPU: utime+stime of newsdesk (/proc/PID/stat) over CYCLES x 60 s with no client load but a
#      /readyz probe a second (curl -m 1). The feeds the feed server answered in the window
#      (200 and 304) are the site refreshes: CPU per site per cycle = CPU / refreshes, CPU per
#      cycle = CPU / (refreshes / N). The same from launch to the window's end (cold start
#      included) is printed too, for when the window saw few refreshes;
#   3. /news identity bytes and the headline count;
#   4. busy: as soon as the server sees a refresh burst, a second with at least the cycle's mean
#      rate of fetches (N / interval; cycles start together: every site is due at start-up, then
#      every interval +/- 10% jitter; at most BURST_WAIT s, default one interval), wrk -t1 -c16 -d WRK_SECONDS with
#      Accept-Encoding: br on /news, /readyz probed each second alongside; the feeds fetched
#      during the run are printed, to show a cycle ran;
#   5. idle: the feed server holds every feed request (newsdesk's refreshes wait, none ends, so
#      nothing changes), newsdesk is given until its CPU falls under 10% of a core (at most
#      QUIET_MAX s), then the same wrk run; the ratio busy/idle is the goal's figure;
#   6. RSS: peak (VmHWM) and at the end (VmRSS), descriptors (peak), from /proc once a second;
#      whether the cycle kept up: the longest time between two fetches of one site (from the
#      server, before the idle phase) against 1.5 x the interval;
#      warn/error log lines; how long SIGTERM takes (at most 20 s, then SIGKILL).
# newsdesk is killed (and the rest skipped) when its RSS passes MAX_RSS_MB. Phases 1 and 2 always
# run (at most COLD_MAX + CYCLES x 60 s); 3-5 only while the N's run is under MAX_SECONDS (a
# skipped phase is reported), so a newsdesk that answers nothing costs no more than that. Results are printed per N beside the issue's
# goals, then as a Markdown table for the README.
#
# The machine has 2 cores shared by newsdesk, the feed server, curl and wrk (not pinned: newsdesk
# may use both when no client runs), and other people's builds: expect noisy figures.
#
# Usage: bench/scale/run.sh [feeds|pages] [N...]   (default: feeds 60 600 3000)
#   CYCLES=2 WRK_SECONDS=10 COLD_MAX=130 BURST_WAIT= QUIET_MAX=30 MAX_RSS_MB=4096 INTERVAL=
#   MAX_SECONDS (per N; default COLD_MAX + CYCLES x interval + 150); feeds 60 600 3000 take about
#   15 minutes, pages 60 600 3000 about 25
#   KEEP=1 keeps the temp dir (logs, samples); needs wrk: scripts/setup --with-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench/scale
build=$root/build-bench
stories=${NEWSDESK_SHARED_STORIES_CSV:-$root/../shared/stories/uci-news-dev.csv}
cycles=${CYCLES:-2}
wrk_seconds=${WRK_SECONDS:-10}
cold_max=${COLD_MAX:-130}
quiet_max=${QUIET_MAX:-30}
max_rss_mb=${MAX_RSS_MB:-4096}
feed_timeout=${TIMEOUT:-600}
kind=feeds
[[ ${1:-} == feeds || ${1:-} == pages ]] && { kind=$1; shift; }
sizes=("$@")
((${#sizes[@]})) || sizes=(60 600 3000)
# The refresh interval for N sites: the issue's figures are pages at 60 s, and 300 s from 3,000.
interval_for() {
  if [[ -n ${INTERVAL:-} ]]; then echo "$INTERVAL"
  elif [[ $kind == pages ]] && (($1 >= 3000)); then echo 300
  else echo 60; fi
}
# The saved pages and the site files that read them (SITE_FILE=PAGE_FILE).
pages_dir=${NEWSDESK_SHARED_PAGES:-$root/../shared/fixtures/pages}
templates="$root/sites/bbc.json=$pages_dir/bbc-2025-news-rendered.html,$root/sites/apnews.json=$pages_dir/apnews-2026-world-rendered.html,$root/sites/reuters.json=$pages_dir/reuters-2026-world-rendered.html,$root/sites/hackernews.json=$pages_dir/hn-2022.html"

for tool in wrk curl python3 flock; do
  command -v "$tool" >/dev/null || { echo "$bench: $tool is missing (scripts/setup --with-bench)" >&2; exit 2; }
done
[[ -f $stories ]] || { echo "$bench: saved headlines not found: $stories" >&2; exit 2; }
if [[ $kind == pages ]]; then
  for pair in ${templates//,/ }; do
    [[ -f ${pair#*=} ]] || { echo "$bench: saved page not found: ${pair#*=}" >&2; exit 2; }
  done
fi
for n in "${sizes[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 10000)) || { echo "$bench: N must be 1..10000, got '$n'" >&2; exit 2; }
done

# One benchmark at a time on this shared machine (bench/metrics/run.sh explains the lock).
exec 9>/tmp/newsdesk-bench.lock
flock -n 9 || { echo "$bench: another benchmark holds /tmp/newsdesk-bench.lock; waiting for it" >&2; flock 9; }

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/newsdesk-ccache} CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
nice cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
nice cmake --build "$build" --target newsdesk page_headlines >/dev/null
newsdesk_bin=$build/server/newsdesk

tmp=$(mktemp -d /tmp/newsdesk-bench-scale-XXXXXX)
cleanup() {
  # This shell's own background jobs (newsdesk, the feed server, samplers, probes), by id.
  local job
  for job in $(jobs -p); do kill -KILL "$job" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ ${KEEP:-} == 1 ]]; then echo "$bench: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
hz=$(getconf CLK_TCK)

now() { date +%s.%N; }
calc() { python3 -c "import math; print($1)"; }
say() { printf '  %s\n' "$*"; }

# Waits (at most $3 s) until file $1 has a line matching $2 and prints the match; fails early
# when process $4 has ended.
wait_for_line() {
  local deadline=$((SECONDS + $3))
  until grep -m1 -o -E "$2" "$1" 2>/dev/null; do
    if ((SECONDS >= deadline)) || ! kill -0 "$4" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
}

# utime+stime of process $1 in seconds ("" once it is gone).
cpu_seconds() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) } # the fields after the command name
  read -r -a f <<<"$stat"
  calc "(${f[11]} + ${f[12]}) / $hz"
}

feed_stat() { # $1: a counter of the site server's /_stats
  curl -s -m 5 "$feeds/_stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'] or 0)"
}

# Once a second: time rss_kb hwm_kb cpu_ticks fds, to $dir/samples; kills newsdesk past the cap.
sampler() {
  local pid=$1 out=$2 cap_kb=$((max_rss_mb * 1024)) status rss hwm stat fds
  while kill -0 "$pid" 2>/dev/null; do
    status=$(cat "/proc/$pid/status" 2>/dev/null) || break
    rss=$(awk '/^VmRSS:/ {print $2}' <<<"$status")
    hwm=$(awk '/^VmHWM:/ {print $2}' <<<"$status")
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || break
    stat=${stat##*) }
    read -r -a f <<<"$stat"
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    echo "$(now) ${rss:-0} ${hwm:-0} $((f[11] + f[12])) $fds" >>"$out"
    if ((${rss:-0} > cap_kb)); then
      echo "$(now) $rss" >"$out.killed"
      kill -KILL "$pid" 2>/dev/null
      break
    fi
    sleep 1
  done
}

# /readyz once a second until file $2 exists, each with curl -m 1; lines "seconds http_code".
readyz_probe() {
  local url=$1 stop=$2 out=$3
  until [[ -e $stop ]]; do
    curl -s -o /dev/null -m 1 -w '%{time_total} %{http_code}\n' "$url/readyz" >>"$out" || true
    sleep 1
  done
}
readyz_summary() { # $1: the probe's lines
  [[ -s $1 ]] || { echo "no probes"; return; }
  awk '{n++; if ($2 == "200" && $1 < 1) ok++; else if ($2 == "503" && $1 < 1) no++; else late++
        if ($1 > max) max = $1}
       END {printf "%d/%d answered 200 within 1 s (%d 503, %d no answer within 1 s; slowest %.2f s)", ok, n, no, late, max}' "$1"
}

# /news.json status: "sites with_success headlines" ("- - -" when no answer within 15 s).
news_json_status() {
  curl -s -m 15 --compressed -H 'Accept-Encoding: br' "$newsdesk/news.json" | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    print("- - -"); sys.exit()
s = d.get("sites", [])
print(len(s), sum(1 for x in s if x.get("last_success")), len(d.get("headlines", [])))'
}

# wrk against /news: prints "requests_per_s p99_ms requests timeouts non2xx".
run_wrk() {
  timeout $((wrk_seconds + 30)) wrk -t1 -c16 -d"${wrk_seconds}s" --timeout 5s --latency \
    -H 'Accept-Encoding: br' "$newsdesk/news" >"$1" 2>&1 || true
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec:/ { rps = $2 }
    /^ +99%/ { p99 = ms($2) }
    /requests in/ { n = $1 }
    /Socket errors/ { for (i = 1; i <= NF; i++) if ($i == "timeout") t = $(i + 1) }
    /Non-2xx/ { bad = $NF }
    END { printf "%.0f %s %d %d %d\n", rps, (p99 == "" || n == 0 ? "-" : sprintf("%.1f", p99)), n, t, bad }' "$1"
}

# Waits until newsdesk's CPU over 2 s is under 10% of a core, at most $1 s; prints the wait.
wait_quiet() {
  local start=$SECONDS a b
  while ((SECONDS - start < $1)); do
    a=$(cpu_seconds "$pid")
    sleep 2
    b=$(cpu_seconds "$pid")
    [[ -n $a && -n $b ]] || break
    (($(calc "int(($b - $a) / 2 < 0.10)"))) && { echo "$((SECONDS - start)) s"; return; }
  done
  echo "not quiet after $1 s"
}

declare -A result
run_size() {
  local n=$1 dir=$tmp/n$1 t0 began interval max_seconds
  interval=$(interval_for "$n")
  max_seconds=${MAX_SECONDS:-$((cold_max + (cycles + 1) * interval + 150))}
  mkdir -p "$dir"
  began=$SECONDS
  left() { echo $((max_seconds - (SECONDS - began))); }
  alive() { kill -0 "$pid" 2>/dev/null; }
  echo
  echo "== $n $kind == (interval $interval s; load average $(cut -d" " -f1-3 /proc/loadavg))"

  local serve=(--feeds "$n")
  [[ $kind == pages ]] &&
    serve=(--pages "$n" --templates "$templates" --page-headlines "$build/bench/scale/page_headlines")
  python3 "$root/bench/scale/siteserver.py" "${serve[@]}" --interval "$interval" \
    --site-files "$dir/sites" --headlines "$stories" >"$dir/feeds.out" 2>&1 &
  local feed_pid=$!
  feeds=$(wait_for_line "$dir/feeds.out" 'http://127\.0\.0\.1:[0-9]+' 120 "$feed_pid") ||
    { echo "$bench: the site server did not start:" >&2; cat "$dir/feeds.out" >&2; exit 1; }

  python3 - "$dir" "$interval" "$feed_timeout" >"$dir/config.json" <<'EOF'
import json, sys
d, interval, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
names = json.load(open(d + "/site-names.json"))
print(json.dumps({"log_level": "info", "access_log": False, "timeout": timeout,
                  "refresh": {"interval": interval}, "sites": names}))
EOF
  t0=$(now)
  "$newsdesk_bin" --config "$dir/config.json" --port 0 --broker-listen 127.0.0.1:0 \
    --templates "$root/templates" --static "$root/static" --sites-dir "$dir/sites" \
    --store "$dir/store.db" >"$dir/newsdesk.out" 2>"$dir/newsdesk.err" &
  pid=$!
  sampler "$pid" "$dir/samples" &
  newsdesk=$(wait_for_line "$dir/newsdesk.out" 'url=http://127\.0\.0\.1:[0-9]+' 120 "$pid" | sed 's/^url=//') || true
  result[$n,status]=ok
  if [[ -z $newsdesk ]]; then
    say "newsdesk did not start; its last lines:"
    tail -n 5 "$dir/newsdesk.out" "$dir/newsdesk.err" | sed 's/^/    /'
    result[$n,status]="did not start: $(tail -n 1 "$dir/newsdesk.err" "$dir/newsdesk.out" 2>/dev/null | grep -v '^==>' | grep . | tail -n 1 | cut -c1-160)"
    kill -KILL "$pid" 2>/dev/null || true
    kill "$feed_pid" 2>/dev/null || true
    return
  fi
  say "newsdesk $newsdesk (pid $pid), feeds $feeds; started in $(calc "round($(now) - $t0, 1)") s"

  # 1. Cold start.
  local cold="" st sites ok heads poll_every
  poll_every=$(calc "2 + $n / 1000")
  while alive && (($(calc "int($(now) - $t0 < $cold_max)"))); do
    read -r sites ok heads < <(news_json_status)
    result[$n,sites_ok]="$ok/$sites" result[$n,headlines]=$heads
    if [[ $sites != - ]] && ((sites == n && ok == n)); then
      cold=$(calc "round($(now) - $t0, 1)")
      break
    fi
    sleep "$poll_every"
  done
  local all_fetched
  all_fetched=$(feed_stat all_served_at)
  [[ $all_fetched != 0 ]] && all_fetched="$(calc "round($all_fetched - $t0, 1)") s" || all_fetched="not yet"
  if [[ -n $cold ]]; then
    result[$n,cold]="$cold s"
  else
    if [[ ${result[$n,sites_ok]} == "-/-" ]]; then
      result[$n,cold]="not within ${cold_max} s (/news.json never answered within 15 s)"
    else
      result[$n,cold]="not within ${cold_max} s (${result[$n,sites_ok]} sites)"
    fi
  fi
  local logged
  logged=$(grep -o 'msg="site refreshed" site=[a-z0-9_]*' "$dir/newsdesk.out" | sort -u | wc -l)
  say "every site on /news.json: ${result[$n,cold]}; every feed fetched once: $all_fetched; sites logged as refreshed: $logged of $n"

  # 2. CPU over CYCLES x 60 s, /readyz probed.
  local window=$((cycles * interval)) c0 c1 r0 r1 w0 w1 refreshes nm0 nm1
  if alive; then # the figure the goals need most: never skipped for time
    c0=$(cpu_seconds "$pid") r0=$(feed_stat requests) nm0=$(feed_stat not_modified) w0=$(now)
    readyz_probe "$newsdesk" "$dir/readyz1.stop" "$dir/readyz1" &
    local end=$((SECONDS + window))
    while alive && ((SECONDS < end)); do sleep 1; done
    touch "$dir/readyz1.stop"
    c1=$(cpu_seconds "$pid") r1=$(feed_stat requests) nm1=$(feed_stat not_modified) w1=$(now)
    if [[ -n $c1 ]]; then
      refreshes=$((r1 - r0))
      result[$n,cpu]=$(calc "round($c1 - $c0, 2)")
      result[$n,refreshes]=$refreshes
      result[$n,cpu_pct]=$(calc "round(100 * ($c1 - $c0) / ($w1 - $w0))")
      if ((refreshes > 0)); then
        result[$n,cpu_cycle]=$(calc "round(($c1 - $c0) * $n / $refreshes, 2)")
        result[$n,cpu_site]=$(calc "round(1000 * ($c1 - $c0) / $refreshes, 1)")
      fi
      say "CPU over $(calc "round($w1 - $w0)") s: ${result[$n,cpu]} s (${result[$n,cpu_pct]}% of a core); $refreshes feeds fetched ($((nm1 - nm0)) answered 304) = $(calc "round($refreshes / $n, 2)") cycles"
      say "CPU per cycle: ${result[$n,cpu_cycle]:--} s; per site per cycle: ${result[$n,cpu_site]:--} ms"
      local total_fetched
      total_fetched=$(feed_stat requests)
      result[$n,cpu_site_all]=$(calc "round(1000 * $c1 / max($total_fetched, 1), 1)")
      say "since launch ($(calc "round($w1 - $t0)") s, cold start included): $(calc "round($c1, 1)") s CPU for $total_fetched feeds fetched = ${result[$n,cpu_site_all]} ms per site refresh"
    fi
    result[$n,readyz_cycle]=$(readyz_summary "$dir/readyz1")
    say "/readyz during the cycles: ${result[$n,readyz_cycle]}"
  else
    say "CPU window skipped: newsdesk is gone"
  fi

  # 3. /news bytes.
  if alive && (($(left) > 20)); then
    local bytes
    bytes=$(curl -s -m 20 -H 'Accept-Encoding: identity' -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "$newsdesk/news" || true)
    read -r code size took <<<"$bytes"
    if [[ $code == 200 ]]; then
      result[$n,news_bytes]=$size
      say "/news identity: $size bytes (took $(calc "round($took, 2)") s); /news.json had ${result[$n,headlines]:-?} headlines"
    else
      result[$n,news_bytes]="no answer in 20 s"
      say "/news identity: ${result[$n,news_bytes]}"
    fi
  fi

  # 4. Busy: wrk while a refresh burst runs.
  if alive && (($(left) > wrk_seconds + 20)); then
    local burst_min=$((n / interval)) burst_wait=${BURST_WAIT:-$interval} prev cur waited=$SECONDS rb0 rb1 most
    ((burst_min >= 1)) || burst_min=1
    prev=$(feed_stat requests)
    most=$(($(left) - wrk_seconds - 25))
    ((most < burst_wait)) || most=$burst_wait
    local deadline=$((SECONDS + most))
    while ((SECONDS < deadline)) && alive; do
      sleep 1
      cur=$(feed_stat requests)
      ((cur - prev >= burst_min)) && break
      prev=$cur
    done
    waited=$((SECONDS - waited))
    ((cur - prev >= burst_min)) || say "no burst of $burst_min fetches a second within $most s: the run below may miss the cycle"
    rb0=$(feed_stat requests)
    readyz_probe "$newsdesk" "$dir/readyz2.stop" "$dir/readyz2" &
    read -r rps p99 reqs tmo bad < <(run_wrk "$dir/wrk-busy.txt")
    touch "$dir/readyz2.stop"
    rb1=$(feed_stat requests)
    result[$n,busy]="$rps $p99 $reqs $tmo $bad" result[$n,busy_fetched]=$((rb1 - rb0))
    result[$n,readyz_busy]=$(readyz_summary "$dir/readyz2")
    say "/news (br) during a cycle: $rps req/s, p99 $p99 ms ($reqs requests, $tmo timeouts over 5 s, $bad non-2xx); started after ${waited} s of waiting for a burst; $((rb1 - rb0)) feeds fetched during the run"
    say "/readyz during that run: ${result[$n,readyz_busy]}"
  elif alive; then
    say "busy run skipped: out of time"
  fi

  # Whether the cycle kept up, before the idle phase holds every fetch.
  local gap late
  gap=$(feed_stat max_gap) late=$(feed_stat late)
  result[$n,gap]="$gap $late" result[$n,interval]=$interval
  say "the longest time between two fetches of one site: $gap s (1.5 x the interval: $(calc "1.5 * $interval") s; $late fetches later than that)"

  # 5. Idle: feeds held, nothing refreshes.
  if alive && (($(left) > wrk_seconds + 15)); then
    curl -s -m 5 -X POST "$feeds/_hold?on=1" >/dev/null
    local q qmax=$(($(left) - wrk_seconds - 10))
    ((qmax < quiet_max)) || qmax=$quiet_max
    q=$(wait_quiet "$qmax")
    local h0 h1
    h0=$(feed_stat requests)
    read -r rps p99 reqs tmo bad < <(run_wrk "$dir/wrk-idle.txt")
    h1=$(feed_stat requests)
    result[$n,idle]="$rps $p99 $reqs $tmo $bad"
    say "/news (br) idle (feeds held; quiet after $q; $((h1 - h0)) feeds answered during it): $rps req/s, p99 $p99 ms ($reqs requests, $tmo timeouts, $bad non-2xx)"
    read -r brps _ <<<"${result[$n,busy]:-0}"
    if ((rps > 0)) && [[ -n ${result[$n,busy]:-} ]]; then
      result[$n,ratio]=$(calc "round(100 * $brps / $rps)")
      say "during a cycle / idle: ${result[$n,ratio]}%"
    fi
  elif alive; then
    say "idle run skipped: out of time"
  fi

  # 6. Memory, descriptors, log, shutdown.
  local last hwm peakfds
  if [[ -s $dir/samples ]]; then
    last=$(tail -n 1 "$dir/samples")
    hwm=$(awk '{if ($3 > m) m = $3} END {print m}' "$dir/samples")
    peakfds=$(awk '{if ($5 > m) m = $5} END {print m}' "$dir/samples")
    result[$n,rss_peak]=$((hwm / 1024))
    result[$n,rss_end]=$(($(awk '{print $2}' <<<"$last") / 1024))
    result[$n,fds]=$peakfds
  fi
  if [[ -f $dir/samples.killed ]]; then
    local kt krss
    read -r kt krss <"$dir/samples.killed"
    result[$n,status]="killed at RSS $((krss / 1024)) MB (over MAX_RSS_MB=$max_rss_mb), $(calc "round($kt - $t0)") s after start"
    say "newsdesk ${result[$n,status]}"
  elif ! alive; then
    result[$n,status]="exited by itself"
    say "newsdesk exited by itself; last lines:"
    tail -n 5 "$dir/newsdesk.out" "$dir/newsdesk.err" | sed 's/^/    /'
  fi
  say "RSS peak ${result[$n,rss_peak]:-?} MB, at the end ${result[$n,rss_end]:-?} MB; descriptors peak ${result[$n,fds]:-?}"
  local warns # before SIGTERM
  warns=$(cat "$dir/newsdesk.out" "$dir/newsdesk.err" | grep -c -E 'level=(warn|error)' || true)
  result[$n,warns]=$warns
  say "warn/error log lines: $warns$( ((warns)) && echo ", e.g.: $(cat "$dir/newsdesk.out" "$dir/newsdesk.err" | grep -m1 -E 'level=(warn|error)' | cut -c1-200)")"
  if alive; then
    curl -s -m 5 -X POST "$feeds/_hold?on=0" >/dev/null || true
    local s0=$SECONDS
    kill -TERM "$pid"
    while alive && ((SECONDS - s0 < 20)); do sleep 0.5; done
    if alive; then
      kill -KILL "$pid"
      result[$n,shutdown]="over 20 s (killed)"
    else
      result[$n,shutdown]="$((SECONDS - s0)) s"
    fi
    say "SIGTERM to exit: ${result[$n,shutdown]}"
  fi
  wait "$pid" 2>/dev/null || true
  kill "$feed_pid" 2>/dev/null || true
  wait "$feed_pid" 2>/dev/null || true
  say "($((SECONDS - began)) s for this N)"
}

echo "bench/scale: newsdesk $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') with N $kind from a local server, CYCLES=$cycles, wrk -t1 -c16 -d${wrk_seconds}s (br); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${sizes[@]}"; do run_size "$n"; done

# --- goals and the table ---------------------------------------------------------------------
field() { local v=${result[$1,$2]:-}; echo "${v:--}"; }
wrk_field() { # $1 N, $2 busy|idle, $3 index (0 rps, 1 p99)
  local v=${result[$1,$2]:-}
  [[ -n $v ]] || { echo -; return; }
  read -r -a a <<<"$v"
  echo "${a[$3]}"
}
verdict() { (($(calc "int($1)"))) && echo "met" || echo "NOT met"; }
echo
echo "== goals (issues 26 and 41: $kind) =="
goal() { # $1 description, $2 figure, $3 python condition on x, or "" when there is no figure
  local v=$2
  if [[ $v =~ ^[0-9.]+$ ]]; then say "$1: $v -> $(verdict "$(sed "s/x/$v/g" <<<"$3")")"; else say "$1: $v -> no figure"; fi
}
cold_s() { local c; c=$(field "$1" cold); [[ $c =~ ^([0-9.]+)\ s$ ]] && echo "${BASH_REMATCH[1]}" || echo "$c"; }
gap_s() { local g; g=$(field "$1" gap); echo "${g%% *}"; }
late_n() { local g; g=$(field "$1" gap); [[ $g == *" "* ]] && echo "${g##* }" || echo -; }
for n in "${sizes[@]}"; do
  if [[ $kind == pages && $n == 600 ]]; then
    goal "600 pages: RSS peak <= 200 MB" "$(field 600 rss_peak)" "x <= 200"
    goal "600 pages: every site on /news.json within 20 s" "$(cold_s 600)" "x <= 20"
    goal "600 pages: /news during a cycle >= 50% of idle" "$(field 600 ratio)" "x >= 50"
    goal "600 pages: /news p99 during a cycle <= 100 ms" "$(wrk_field 600 busy 1)" "x <= 100"
  elif [[ $kind == pages && $n == 3000 ]]; then
    goal "3000 pages: RSS peak <= 600 MB" "$(field 3000 rss_peak)" "x <= 600"
    goal "3000 pages: every site on /news.json within 120 s" "$(cold_s 3000)" "x <= 120"
    goal "3000 pages: no fetch later than 1.5 x the interval (fetches later)" "$(late_n 3000)" "x == 0"
    goal "3000 pages: /news during a cycle >= 50% of idle" "$(field 3000 ratio)" "x >= 50"
  elif [[ $kind == feeds && $n == 600 ]]; then
    goal "600 feeds: RSS peak <= 400 MB" "$(field 600 rss_peak)" "x <= 400"
    goal "600 feeds: CPU per site per cycle <= 20 ms" "$(field 600 cpu_site)" "x <= 20"
    goal "600 feeds: /news during a cycle >= 50% of idle" "$(field 600 ratio)" "x >= 50"
    goal "600 feeds: /news p99 during a cycle <= 100 ms" "$(wrk_field 600 busy 1)" "x <= 100"
    goal "600 feeds: /news identity bytes <= 1.5 MB" "$(field 600 news_bytes)" "x <= 1.5e6"
  elif [[ $kind == feeds && $n == 3000 ]]; then
    goal "3000 feeds: RSS peak <= 300 MB" "$(field 3000 rss_peak)" "x <= 300"
    goal "3000 feeds: every site on /news.json within 30 s" "$(cold_s 3000)" "x <= 30"
    goal "3000 feeds: CPU per feed refresh <= 15 ms" "$(field 3000 cpu_site)" "x <= 15"
  fi
done
flat=()
for n in "${sizes[@]}"; do
  cs=${result[$n,cpu_site]:-}
  [[ -n $cs ]] && flat+=("$n: $cs ms") || true
done
say "cost per site flat from 60 to 3,000 (CPU per site per cycle in the window): ${flat[*]:-no figures}"

echo
echo "| $kind (interval) | RSS peak / end | descriptors | CPU per cycle | CPU per site refresh (since launch) | /news identity | every site on /news.json | longest gap between fetches (late) | /news (br) idle | /news (br) during a cycle | during / idle | /readyz within 1 s during cycles |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for n in "${sizes[@]}"; do
  if [[ ${result[$n,status]} == "did not start"* ]]; then
    echo "| $n | ${result[$n,status]} | | | | | | | | | | |"
    continue
  fi
  nb=$(field "$n" news_bytes)
  [[ $nb =~ ^[0-9]+$ ]] && nb="$(calc "f'{$nb / 1e6:.2f}'") MB"
  idle="$(wrk_field "$n" idle 0) req/s, p99 $(wrk_field "$n" idle 1) ms"
  busy="$(wrk_field "$n" busy 0) req/s, p99 $(wrk_field "$n" busy 1) ms"
  rz=$(field "$n" readyz_cycle)
  rz=${rz%% answered*}
  note=""
  [[ ${result[$n,status]} != ok ]] && note=" (${result[$n,status]})"
  cc="$(field "$n" cpu_cycle) s"
  [[ ${result[$n,refreshes]:-} == 0 ]] && cc="no refresh in $((cycles * $(field "$n" interval))) s, $(field "$n" cpu) s CPU"
  echo "| $n ($(field "$n" interval) s) | $(field "$n" rss_peak) / $(field "$n" rss_end) MB$note | $(field "$n" fds) | $cc | $(field "$n" cpu_site) ms ($(field "$n" cpu_site_all) ms) | $nb | $(field "$n" cold) | $(gap_s "$n") s ($(late_n "$n")) | $idle | $busy | $(field "$n" ratio)% | $rz |"
done
