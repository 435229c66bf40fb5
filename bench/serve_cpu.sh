#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Who saturates first, `backoff serve` or wrk? Server pinned to core 0 (one thread), wrk to core 1,
# 64 keep-alive connections on loopback, `--base-delay 0`. For each run prints the rate and each
# side's CPU: per request (task-clock / requests) and in cores (task-clock / run time). The side
# at 1.00 core is the one that limits the rate. Needs wrk and perf (Debian: wrk, linux-perf) and
# two cores. Runs of several binaries interleave, so a slow phase of the machine hits them all.
#
#   bench/serve_cpu.sh [-d SECONDS] [-n RUNS] build/bin/backoff [other/backoff ...]
set -euo pipefail
seconds=8
runs=3
while getopts d:n: flag; do
  case "$flag" in
    d) seconds=$OPTARG ;;
    n) runs=$OPTARG ;;
    *) echo "usage: bench/serve_cpu.sh [-d SECONDS] [-n RUNS] BACKOFF..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: bench/serve_cpu.sh [-d SECONDS] [-n RUNS] BACKOFF..." >&2; exit 2; }
for tool in wrk perf taskset; do
  command -v "$tool" >/dev/null || { echo "serve_cpu: $tool is not installed" >&2; exit 1; }
done
port=${PORT:-18072}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
server=

one_run() {
  local binary=$1
  taskset -c 0 "$binary" serve --port "$port" --base-delay 0 -q --threads 1 2>/dev/null &
  server=$!
  sleep 0.5
  perf stat -x, -e task-clock -p "$server" -- sleep $((seconds + 1)) 2>"$work/server" &
  local stat=$!
  sleep 0.3
  perf stat -x, -e task-clock taskset -c 1 wrk -t1 -c64 -d"${seconds}s" \
    "http://127.0.0.1:$port/api" 2>"$work/wrk" >"$work/wrk.out"
  wait "$stat"
  kill "$server"
  wait "$server" 2>/dev/null || true
  awk -v name="$binary" -v seconds="$seconds" \
    -v server_ms="$(cut -d, -f1 "$work/server" | head -n 1)" \
    -v wrk_ms="$(cut -d, -f1 "$work/wrk" | head -n 1)" \
    '/requests in/ { n = $1 }
     END {
       printf "%-28s %7.0f req/s  server %5.2f us/req (%.2f core)  wrk %5.2f us/req (%.2f core)\n",
              name, n / seconds, server_ms * 1000 / n, server_ms / 1000 / seconds,
              wrk_ms * 1000 / n, wrk_ms / 1000 / seconds
     }' "$work/wrk.out"
}

for ((run = 0; run < runs; run++)); do
  for binary in "$@"; do one_run "$binary"; done
done
