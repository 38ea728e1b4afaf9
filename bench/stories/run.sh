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
# LANG column and is scored per language first; LANGUAGES_ONLY=1 stops after that, PROCESS_ONLY=1
# runs only the whole process on the mixed stream; KEEP=DIR keeps its input and output there)
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
if [[ -z ${PROCESS_ONLY:-} ]]; then
  "$build/bench/stories/bench_stories" "$labelled" "$tmp/unrelated.csv" "$languages"
  [[ -z ${LANGUAGES_ONLY:-} ]] || exit 0
fi

# The whole process on a mixed stream: the labelled file 100 times over (298,900 rows, no LANG:
# each row's language detected) with the languages file 100 times over (49,900 rows, LANG as
# declared) spread evenly among them, new ids, a day later each time over.
python3 - "$labelled" "$languages" "$tmp/large.csv" <<'PY'
import csv, sys
english = list(csv.DictReader(open(sys.argv[1], newline="")))
languages = list(csv.DictReader(open(sys.argv[2], newline="")))
with open(sys.argv[3], "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["ID", "TITLE", "URL", "HOSTNAME", "TIMESTAMP", "LANG"])
    day = 86400000
    for k in range(100):
        # Row i of the languages file goes where its share of the copy falls among the English.
        merged = [(i / len(english), 0, r) for i, r in enumerate(english)]
        merged += [((i + 0.5) / len(languages), 1, r) for i, r in enumerate(languages)]
        for _, lang_file, r in sorted(merged, key=lambda m: (m[0], m[1])):
            out.writerow([f"{k}-{'m' if lang_file else ''}{r['ID']}", r["TITLE"], r["URL"],
                          r["HOSTNAME"], int(r["TIMESTAMP"]) + k * day,
                          r["LANG"] if lang_file else ""])
PY
lines=$(($(wc -l <"$tmp/large.csv") - 1))
load=$(cut -d' ' -f1 /proc/loadavg) # before the run: what else the machine was doing
start=$(date +%s.%N)
"$build/server/newsdesk" --stories "$tmp/large.csv" >"$tmp/large.out"
end=$(date +%s.%N)
python3 -c "
n=$lines; t=$end-$start
print(f'newsdesk --stories, whole process, mixed stream: {n:,} headlines in {t:.2f} s = '
      f'{n/t:,.0f} headlines/s (goal >= 50,000; load average $load before the run, $(nproc) cores)')"
[[ -z ${KEEP:-} ]] || cp "$tmp/large.csv" "$tmp/large.out" "$KEEP"/
