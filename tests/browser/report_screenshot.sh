#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The browser test of issues 6 and 23: opens report.html files in headless Chromium (Debian's
# `chromium`, installed here only when missing, so only runs of this test pay for it), takes a
# screenshot of each, and fails unless every chart image decoded, the page is under 1 MB, and
# the advice leads it: a ranking table (<table class="ranking">, id "ranking", or "boundary" for
# a metastable map) with at least one row, as the browser parsed it. report.html marks the images
# on <body>: data-images="images-ok N/N" once every <img class="chart"> has loaded with a non-zero
# width.
#
#   tests/browser/report_screenshot.sh [--out SHOTS_DIR] REPORT_DIR_OR_HTML...
#   tests/browser/report_screenshot.sh --backoff build/bin/backoff [--out SHOTS_DIR]
#
# Every table must fit the page at a 1400-pixel window (report.html marks on <body>
# data-tables="tables-fit N" when no table is wider than its box; only lists of names in a cell
# may take a second line). With --backoff, it first runs `backoff sim` on three built-in scenarios
# (a plain run with an outage, a sweep and a metastable map) into a temporary folder and checks
# their reports and the reports index (the ctest form). Screenshots are SHOTS_DIR/<report's folder
# name>.png (default: a temporary folder, printed at the end): look at them.
set -eu

out=""
backoff=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --backoff) backoff="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) break ;;
  esac
done

work="$(mktemp -d "${TMPDIR:-/tmp}/backoff-browser-XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM
[ -n "$out" ] || out="$work/shots"
mkdir -p "$out"

index=""
if [ -n "$backoff" ]; then
  "$backoff" sim outage-amplification retry-client-count metastable-map --plot --no-progress \
    --out "$work/suite" >/dev/null
  set -- "$work/suite/outage-amplification" "$work/suite/retry-client-count" \
    "$work/suite/metastable-map" "$@"
  index="$work/suite/index.html"
fi
if [ $# -eq 0 ]; then
  echo "report_screenshot.sh: no report given (see --help)" >&2
  exit 2
fi

browser=""
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "report_screenshot.sh: chromium is missing (apt-get install chromium, as root)" >&2
    exit 1
  fi
  echo "report_screenshot.sh: installing chromium" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
  }
  browser=chromium
fi

# No network, no profile, nothing that phones home: the report must stand on its own.
run_browser() {
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$work/profile" \
    --virtual-time-budget=10000 "$@" 2>>"$work/browser.log"
}

status=0
# The tables of a page (its DOM dumped at a 1400-pixel window: $2), as its script measured them.
tables_fit() {
  marker="$(printf '%s' "$2" | grep -o 'data-tables="[^"]*"' | head -n 1 || true)"
  case "$marker" in
    'data-tables="tables-fit '*) return 0 ;;
    *) echo "FAIL $1: ${marker:-no table measured}: a table is wider than the page at 1400 px" >&2
       return 1 ;;
  esac
}
if [ -n "$index" ]; then
  if tables_fit "$index" "$(run_browser --window-size=1400,4000 --dump-dom "file://$index" || true)"; then echo "ok   $index: its table fits"; else status=1; fi
fi
for report in "$@"; do
  [ -d "$report" ] && report="$report/report.html"
  if [ ! -f "$report" ]; then
    echo "FAIL $report: no such file" >&2
    status=1
    continue
  fi
  abs="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
  name="$(basename "$(dirname "$abs")")"
  # Issue 23: a page an SRE can open anywhere, mailed or attached: under 1 MB (1,000,000 bytes).
  size="$(wc -c <"$abs")"
  if [ "$size" -ge 1000000 ]; then
    echo "FAIL $report: $size bytes, over the 1 MB a report may weigh" >&2
    status=1
  fi
  dom="$(run_browser --window-size=1400,4000 --dump-dom "file://$abs" || true)"
  # The ranking table as the browser parsed it (an unclosed tag before it would swallow it):
  # the table element, then a body row with a cell.
  table="$(printf '%s' "$dom" | tr '\n' ' ' |
    grep -o '<table class="ranking" id="\(ranking\|boundary\)">.*</table>' | head -n 1 || true)"
  if [ -z "$table" ]; then
    echo "FAIL $report: no ranking table" >&2
    status=1
  elif ! printf '%s' "$table" | grep -q '<tbody>[[:space:]]*<tr><td'; then
    echo "FAIL $report: the ranking table has no rows" >&2
    status=1
  fi
  tables_fit "$abs" "$dom" || status=1
  marker="$(printf '%s' "$dom" | grep -o 'data-images="[^"]*"' | head -n 1 || true)"
  run_browser --screenshot="$out/$name.png" --window-size=1200,4000 "file://$abs" >/dev/null || true
  case "$marker" in
    'data-images="images-ok '*)
      count="${marker#data-images=\"images-ok }"
      count="${count%\"}"
      if [ "${count%%/*}" = "0" ]; then
        echo "FAIL $report: no charts in the report" >&2
        status=1
      else
        echo "ok   $report: $count charts loaded, $size bytes, ranking table; screenshot $out/$name.png"
      fi
      ;;
    *)
      echo "FAIL $report: ${marker:-the page did not finish loading} (chromium log: $out/browser.log)" >&2
      status=1
      ;;
  esac
  [ -s "$out/$name.png" ] || { echo "FAIL $report: no screenshot" >&2; status=1; }
done
[ "$status" -eq 0 ] && echo "screenshots in $out"
# Keep the log for a failure's diagnosis only when the shots are kept elsewhere.
[ "$status" -eq 0 ] || cp "$work/browser.log" "$out/browser.log" 2>/dev/null || true
exit "$status"
