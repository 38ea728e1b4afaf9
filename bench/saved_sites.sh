# Sourced by bench/news/run.sh and bench/metrics/run.sh: waiting for a process's output, and the
# Splash stand-in serving the saved real front pages under the shipped sites' URLs.
# Expects: $bench (name for messages), $root, $build, $pages, $tmp, and the array pids.

# Waits (at most $3 seconds) until file $1 contains a line matching $2; prints the match.
wait_for_line() {
  local deadline=$((SECONDS + $3))
  until grep -m1 -o -E "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "$bench: gave up waiting for '$2' in $1:" >&2; cat "$1" >&2; exit 1; }
    sleep 0.1
  done
}

# Starts the stand-in (output in $tmp/standin.out); sets standin_args, standin_pid and splash.
start_saved_sites_standin() {
  standin_args=(
    "https://edition.cnn.com/=$pages/cnn-2025-home-rendered.html"
    "https://news.ycombinator.com/=$pages/hn-2022.html"
    "https://www.bbc.com/news=$pages/bbc-2025-news-rendered.html"
    "https://www.reuters.com/world/=$pages/reuters-2026-world-rendered.html"
    "https://apnews.com/world-news=$pages/apnews-2026-world-rendered.html"
    "https://www.aljazeera.com/=$root/tests/fixtures/scrapers/aljazeera-2024-home.html"
  )
  "$build/tests/server/splash-standin" "${standin_args[@]}" >"$tmp/standin.out" 2>&1 &
  standin_pid=$!
  pids+=("$standin_pid")
  splash=$(wait_for_line "$tmp/standin.out" 'http://127\.0\.0\.1:[0-9]+' 10)
}
