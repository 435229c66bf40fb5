#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The twins at full size (docs/NETWORK.md, "A system for real"): each built-in twin run for real
# beside its simulation (`backoff load --system NAME --compare`), three times in a row, and held
# to the agreement the twins promise: success rate, load (attempts per operation) and goodput
# within 15 %, each service's amplification within 25 %, the same verdict on recovery. Prints
# each run's bounded figures (simulated, real, ratio) and exits 1 when a run is out of bounds.
# A run takes about 25 s a strategy of real time; nothing else should load the machine meanwhile
# (the real servers share its cores).
#
# Usage: bench/twin.sh [path/to/backoff] [runs] [twin...]   (defaults: build/bin/backoff, 3, both)
set -euo pipefail
cli="${1:-build/bin/backoff}"
runs="${2:-3}"
shift $(( $# > 2 ? 2 : $# ))
twins=("$@")
[ ${#twins[@]} -gt 0 ] || twins=(twin-outage twin-three-tier)
[ -x "$cli" ] || { echo "twin: $cli not built (make build)" >&2; exit 1; }
case "$runs" in ''|*[!0-9]*|0) echo "twin: runs must be a positive whole number" >&2; exit 2 ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for twin in "${twins[@]}"; do
  for run in $(seq 1 "$runs"); do
    out="$work/$twin-$run"
    log="$work/$twin-$run.log"
    if ! "$cli" load --system "$twin" --compare --out "$out" >"$log" 2>&1; then
      echo "twin: $twin run $run failed:" >&2
      tail -n 5 "$log" >&2
      exit 1
    fi
    echo "== $twin, run $run of $runs"
    # The agreement table: from its header to the line that counts the rows within bounds.
    sed -n '/^real against simulated:$/,/within bounds$/p' "$log" | tail -n +2
    grep -q ' NO$' "$log" && status=1
  done
done
exit "$status"
