#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the charts that docs/RESULTS.md shows, from the built-in scenarios at full scale:
#   scripts/results-charts.sh [build/bin/backoff]
# Runs each scenario with --plot into a temporary folder and copies the chosen charts (PNG) to
# docs/results/, named <scenario>-<chart>.png. Deterministic runs: the numbers in RESULTS.md are
# those of the same commands.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
backoff="${1:-build/bin/backoff}"
[ -x "$backoff" ] || { echo "results-charts: $backoff not built (make build)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p docs/results

charts=(
  "ethernet-clients:sweep-completed"
  "tick-burst:rate tick-burst:latency tick-burst:clients-latency"
  "one-client-burst:rate-log one-client-burst:window"
  "attempts-vs-operations:sweep-attempts"
  "outage-recovery:goodput outage-recovery:concurrency"
  "outage-tipping:sweep-recovered_runs"
  "aws-occ:sweep-attempts aws-occ:sweep-makespan_s"
)
for group in "${charts[@]}"; do
  scenario="${group%%:*}"
  "$backoff" sim "$scenario" --out "$work/$scenario" --plot --no-progress >/dev/null 2>&1
  for item in $group; do
    chart="${item#*:}"
    cp "$work/$scenario/$chart.png" "docs/results/$scenario-$chart.png"
  done
done
# Seed 004's own figures: the smira policy's delay against the attempt, linear and log.
"$backoff" delays --policy smira --attempts 12 --runs 3 --plot docs/results/smira-delays >/dev/null
rm -f docs/results/smira-delays.svg docs/results/smira-delays-log.svg
ls docs/results
