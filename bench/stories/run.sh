#!/usr/bin/env bash
# Stories: newsdesk's assignment side by side with the anchors' duplicate rules on labelled
# headlines, unrelated headlines mixed in, speed and memory (bench_stories.cpp says what and how),
# then `newsdesk --stories` as a whole process on a large file (headlines per second).
#
# Builds Release in build-bench/ at the repository root. The unrelated headlines are what the
# shipped scrapers find on the saved front pages (../shared/fixtures/pages: other years).
#
# Usage: bench/stories/run.sh [LABELLED.csv [LANGUAGES.csv]]  (defaults
# ../shared/stories/uci-news-dev.csv and ../shared/stories/multilingual-dev.csv: the second has a
# LANG column and is scored per language first; LANGUAGES_ONLY=1 stops after that)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=$root/../shared
labelled=${1:-$shared/stories/uci-news-dev.csv}
languages=${2:-$shared/stories/multilingual-dev.csv}
pages=${NEWSDESK_SHARED_PAGES:-$shared/fixtures/pages}
build=$root/build-bench
[[ -f $labelled ]] || { echo "bench/stories: $labelled not found" >&2; exit 2; }
[[ -f $languages ]] || { echo "bench/stories: $languages not found" >&2; exit 2; }

exec 9>/tmp/newsdesk-bench.lock # one benchmark at a time (bench/metrics/run.sh explains)
flock -n 9 || { echo "bench/stories: waiting for another benchmark" >&2; flock 9; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target newsdesk bench_stories >/dev/null

tmp=$(mktemp -d /tmp/newsdesk-bench-stories-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Unrelated headlines: every shipped site's saved page, through its scraper.
for pair in cnn:cnn-2025-home-rendered.html bbc:bbc-2025-news-rendered.html \
            reuters:reuters-2026-world-rendered.html apnews:apnews-2026-world-rendered.html \
            hackernews:hn-2022.html; do
  site=${pair%%:*}
  page=$pages/${pair#*:}
  [[ -f $page ]] || { echo "bench/stories: $page not found" >&2; exit 2; }
  year=$(grep -o -m1 '20[0-9][0-9]' <<<"${pair#*:}")
  "$build/server/newsdesk" --try-site "$site" --html "$page" --json >"$tmp/$site-$year.json"
done
python3 - "$tmp" <<'PY'
import csv, datetime, glob, json, re, sys, urllib.parse
tmp = sys.argv[1]
with open(f"{tmp}/unrelated.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["ID", "TITLE", "URL", "HOSTNAME", "TIMESTAMP"])
    n = 0
    for path in sorted(glob.glob(f"{tmp}/*-*.json")):
        # A page's headlines were seen together, in the middle of the year its file names.
        year = int(re.search(r"-(\d{4})\.json$", path).group(1))
        seen = int(datetime.datetime(year, 6, 15, tzinfo=datetime.timezone.utc).timestamp() * 1000)
        for h in json.load(open(path))["headlines"]:
            n += 1
            host = urllib.parse.urlparse(h["url"]).hostname or ""
            out.writerow([f"u{n}", h["title"], h["url"], host, seen])
PY
"$build/bench/stories/bench_stories" "$labelled" "$tmp/unrelated.csv" "$languages"
[[ -z ${LANGUAGES_ONLY:-} ]] || exit 0

# The whole process: the labelled file 100 times over (new ids, a day later each time).
python3 - "$labelled" "$tmp/large.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
with open(sys.argv[2], "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["ID", "TITLE", "URL", "HOSTNAME", "TIMESTAMP"])
    for k in range(100):
        for r in rows:
            out.writerow([f"{k}-{r['ID']}", r["TITLE"], r["URL"], r["HOSTNAME"], int(r["TIMESTAMP"]) + k * 86400000])
PY
lines=$(($(wc -l <"$tmp/large.csv") - 1))
start=$(date +%s.%N)
"$build/server/newsdesk" --stories "$tmp/large.csv" >"$tmp/large.out"
end=$(date +%s.%N)
python3 -c "
n=$lines; t=$end-$start
print(f'newsdesk --stories, whole process: {n} headlines in {t:.2f} s = {n/t:,.0f} headlines/s (goal >= 50,000)')"
