#!/bin/sh
# Builds bench_extraction (Release, build-bench/ at the repository root, through scripts/build
# and its compiler cache) and runs it on the saved pages in ../shared/fixtures/pages with the
# labels in bench/extraction/labels.txt.
# Arguments are passed on: run.sh [--show] [--labels FILE] [--pages DIR]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_TYPE=Release BUILD_TARGETS=bench_extraction "$root/scripts/build" "$root/build-bench" >/dev/null
"$root/build-bench/bench/extraction/bench_extraction" "$@"
