#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Simulator throughput and memory (docs/PERFORMANCE.md): events per second from summary.json's
# run.events_per_s, peak memory from /usr/bin/time. Usage: bench/sim_bench.sh [path/to/backoff]
# The throughput runs pass -j 1, so that events per second are one engine's (the strategies in
# turn, as before they ran side by side); the time per attempt is measured both ways.
set -euo pipefail
cli="${1:-build/bin/backoff}"
[ -x "$cli" ] || { echo "sim_bench: $cli not built (make build)" >&2; exit 1; }

run() {
  local label="$1"; shift
  local out
  out=$(mktemp)
  /usr/bin/time -f "%M" -o "$out.rss" "$cli" sim "$@" -j 1 --format json --no-progress >"$out"
  python3 - "$label" "$out" "$out.rss" <<'PY'
import json, sys
label, path, rss = sys.argv[1:4]
doc = json.load(open(path))
run = doc["run"]
ops = sum(s["operations"] for s in doc["strategies"])
print(f"{label:<44} {run['events']:>12,} events {run['wall_s']:>8.3f} s "
      f"{run['events_per_s']/1e6:>7.2f} M events/s  {ops:>10,} operations  "
      f"peak RSS {int(open(rss).read().split()[-1])/1024:>7.1f} MiB")
PY
  rm -f "$out" "$out.rss"
}

# Whole-process time per attempt (issue 23): start-up, every strategy's run and the output, over
# the attempts of all strategies; the median of 5 runs, elapsed and CPU (user + system). The
# arguments after the label are passed as they are (add -j 1 for the strategies in turn).
per_attempt() {
  per_unit attempts "$@"
}

# The same over client operations (the system model's target: whole-process time per operation).
per_operation() {
  per_unit operations "$@"
}

per_unit() {
  local unit="$1" label="$2"; shift 2
  local out
  out=$(mktemp)
  for _ in 1 2 3 4 5; do
    /usr/bin/time -a -f "%e %U %S" -o "$out.time" "$cli" sim "$@" --format json --no-progress >"$out"
  done
  python3 - "$label" "$out" "$out.time" "$unit" <<'PY'
import json, statistics, sys
label, path, times, unit = sys.argv[1:5]
doc = json.load(open(path))
attempts = sum(s[unit] for s in doc["strategies"])
rows = [line.split() for line in open(times) if line.strip() and line[0].isdigit()]
wall = statistics.median(float(r[0]) for r in rows)
cpu = statistics.median(float(r[1]) + float(r[2]) for r in rows)
one = unit[:-1]
print(f"{label:<44} {attempts:>12,} {unit} {wall:>8.3f} s "
      f"{wall / attempts * 1e9:>7.1f} ns/{one} elapsed, {cpu / attempts * 1e9:.1f} ns/{one} CPU")
PY
  rm -f "$out" "$out.time"
}

per_attempt "one-client-burst x10, whole process" one-client-burst \
  --set workload.operations=20000 --set workload.rate_per_s=10000 --set server.max_busy=500
per_attempt "the same, strategies in turn (-j 1)" one-client-burst -j 1 \
  --set workload.operations=20000 --set workload.rate_per_s=10000 --set server.max_busy=500
run "one-client-burst (seed scale)" one-client-burst
run "one-client-burst x10 (20k ops, 500 slots)" one-client-burst \
  --set workload.operations=20000 --set workload.rate_per_s=10000 --set server.max_busy=500
run "one-client-burst x500 (10^6 ops, 25k slots)" one-client-burst \
  --set workload.operations=1000000 --set workload.rate_per_s=100000 --set server.max_busy=25000
run "mm1 (2 h, ~580k customers)" mm1 --set run.duration=2h
run "mm1 (24 h, ~6.9M customers)" mm1 --set run.duration=24h
run "tick-burst" tick-burst
# Issue 22's retry storms, each pinned to one point of its sweep and scaled up (>= 10 M events/s).
run "retry-failure-rate (x10 duration, failure 0.5)" retry-failure-rate --set failure_rate=0.5 \
  --set replications=1 --set run.duration=100s --set run.limit=200s
run "retry-client-count (1000 clients, failure 0.5, 1000 s)" retry-client-count --set clients=1000 \
  --set failure_rate=0.5 --set replications=1 --set run.duration=1000s --set run.limit=2000s
run "retry-layers (x20: 200k requests)" retry-layers --set workload.requests=200000 \
  --set workload.rate_per_s=2000
run "hedging-tail x500 (10^6 calls)" hedging-tail --set workload.operations=1000000 \
  --set run.limit=30h
run "hedging-overload (2x10^6 calls, u=0.3)" hedging-overload --set workload.utilization=0.3 \
  --set replications=1 --set workload.operations=2000000
run "outage-amplification (Isaev scale)" outage-amplification
run "outage-amplification x20 (100k calls/s)" outage-amplification --set workload.rate_per_s=100000
# The system model (docs/SYSTEMS.md): system-three-tier at 10^6 client operations per strategy
# (1200/s for 833 s, six strategies), whole-process time per client operation and events per
# second beside it.
per_operation "system-three-tier (10^6 operations a strategy)" system-three-tier \
  --set run.duration=833s
run "system-three-tier (10^6 operations a strategy)" system-three-tier --set run.duration=833s

# Sweep memory (issue 40): the --memory-limit estimate beside the measured peak RSS. The estimate
# is what a limit of 1 byte is refused with; the run is the same command without the limit.
# `sweep` writes its points to disk as they finish (memory grows with the grid only); `sim`, and
# `sweep --plot`, hold every run and build the outputs in memory. Target: within 25 %.
sweep_memory() {
  local label="$1" command="$2"; shift 2
  local estimate rss out
  out=$(mktemp -d)
  estimate=$("$cli" "$command" "$@" --memory-limit 1 2>&1 | sed -n 's/.*would need about \([0-9.]* [KMG]iB\).*/\1/p')
  /usr/bin/time -f "%M" -o "$out/rss" "$cli" "$command" "$@" --no-progress --out "$out/o" >/dev/null 2>&1
  rss=$(tail -n 1 "$out/rss")
  python3 - "$label" "$estimate" "$rss" <<'PY'
import sys
label, estimate, rss_kib = sys.argv[1], sys.argv[2], int(sys.argv[3])
value, unit = estimate.split()
est = float(value) * {"KiB": 1, "MiB": 1024, "GiB": 1024 ** 2}[unit]
print(f"{label:<58} estimate {estimate:>9}  peak RSS {rss_kib / 1024:>7.1f} MiB  "
      f"estimate/peak {est / rss_kib:5.2f}")
PY
  rm -rf "$out"
}
mm1_grid=(mm1 --set run.duration='"1s"' --set run.warmup='"0s"')
sweep_memory "sweep mm1, 50,000 points (spooled)" sweep "${mm1_grid[@]}" \
  --set 'sweep.workload.rate_per_s={start=0.001, stop=50, step=0.001}'
sweep_memory "sim mm1, the same 50,000 points (in memory)" sim "${mm1_grid[@]}" \
  --set 'sweep.workload.rate_per_s={start=0.001, stop=50, step=0.001}'
sweep_memory "sweep outage-tipping (built in)" sweep outage-tipping
# outage-tipping's runs hold more than outage-recovery's estimate counts (docs/PERFORMANCE.md).
sweep_memory "sweep mm1, 1,000,000 points: 1000 rates x 1000 service times" sweep "${mm1_grid[@]}" \
  --set 'sweep.workload.rate_per_s={start=0.05, stop=50, step=0.05}' \
  --set 'sweep.server.mean_service={start="1us", stop="1000us", step="1us"}'
