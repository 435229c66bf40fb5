#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What `backoff try` costs around a command that succeeds at once: `backoff try -- true` against
# plain `true` and Debian's `retry -t 1 true` (package `retry`, installed if missing and allowed),
# each run RUNS times (default 1000) from this shell; prints milliseconds per run.
#
#   bench/try_overhead.sh build/bin/backoff [RUNS]
set -euo pipefail
backoff=${1:?usage: bench/try_overhead.sh path/to/backoff [runs]}
runs=${2:-1000}
truth=$(type -P true)   # the program, not the shell builtin
if ! command -v retry >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq retry >/dev/null
fi

per_run_ms() {
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null 2>&1; done
  end=$(date +%s%N)
  awk -v ns=$((end - start)) -v n="$runs" 'BEGIN { printf "%.2f", ns / 1e6 / n }'
}

printf '%-32s %8s ms\n' "$truth" "$(per_run_ms "$truth")"
printf '%-32s %8s ms\n' "backoff try -- $truth" "$(per_run_ms "$backoff" try -- "$truth")"
printf '%-32s %8s ms\n' "backoff --version" "$(per_run_ms "$backoff" --version)"
if command -v retry >/dev/null; then
  printf '%-32s %8s ms\n' "retry -t 1 $truth" "$(per_run_ms retry -t 1 "$truth")"
else
  echo "retry: not installed (apt-get install retry)"
fi
