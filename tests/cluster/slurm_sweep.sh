#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A sweep's emitted Slurm job on a real one-node Slurm (slurm_cluster.sh: its own slurm.conf,
# state folders and munge key under a temporary folder, never /etc):
#   1. `--emit slurm` into a folder whose name needs sbatch's escapes, with MaxArraySize read from
#      the cluster (one shard too many is refused);
#   2. sbatch from another folder with --export=NONE (the job needs nothing from the submitter's
#      environment), one array task cancelled midway, the array run to its end;
#   3. the same script submitted again: the finished shards are skipped, the cancelled one runs;
#   4. the printed merge command, compared with the unsharded sweep byte for byte; every task's
#      log in DIR/logs.
# Exit 0: all held; 77 (ctest SKIP): the cluster could not run here (not root, a daemon missing or
# refused); anything else: a failure, with the cluster's logs.
# Usage: slurm_sweep.sh BACKOFF
set -euo pipefail

backoff="${1:?usage: slurm_sweep.sh BACKOFF}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/backoff-slurm.XXXXXX")"
# The cluster's sockets live in its folder, and a socket's path has at most 107 bytes: under a
# deep TMPDIR, the cluster goes to a folder of its own in /tmp.
cluster="${work}/cluster"
cluster_parent=""
if [ "${#cluster}" -gt 64 ]; then
  cluster_parent="$(mktemp -d /tmp/backoff-slurm.XXXXXX)"
  cluster="${cluster_parent}/cluster"
fi
failed=1

fail() {
  echo "slurm_sweep: FAILED: $*" >&2
  exit 1
}

finish() {
  "${here}/slurm_cluster.sh" stop "${cluster}" || true
  if [ "${failed}" -ne 0 ] && [ -d "${cluster}" ]; then
    for log in "${cluster}"/log/*.log "${job}"/logs/*; do
      [ -f "${log}" ] || continue
      echo "--- ${log} (last lines)" >&2
      tail -n 20 "${log}" >&2
    done
  fi
  rm -rf "${work}" ${cluster_parent:+"${cluster_parent}"}
}
job="${work}/job 'q' \"d\" #x %a"
trap finish EXIT

# Eight points x two strategies x 16 replications of ten simulated minutes: about 4 s a shard on
# one core, so that a cancel lands while a task runs.
sweep=(outage-tipping --set replications=16 --set 'run.duration="600s"')
shards=4

status=0
env="$(SLURM_TEST_MAX_ARRAY_SIZE="${shards}" "${here}/slurm_cluster.sh" start "${cluster}")" ||
  status=$?
if [ "${status}" -eq 77 ]; then
  failed=0
  exit 77
fi
[ "${status}" -eq 0 ] || fail "the cluster did not start (exit ${status})"
eval "${env}"
export SLURM_CONF

"${backoff}" sweep "${sweep[@]}" --threads 2 --out "${work}/whole" --no-progress >/dev/null

# 1. The cluster's MaxArraySize (set to the shard count): one shard more is refused.
if "${backoff}" sweep "${sweep[@]}" --emit slurm --shards $((shards + 1)) --out "${work}/over" \
  >/dev/null 2>"${work}/over.err"; then
  fail "--shards $((shards + 1)) was emitted past MaxArraySize ${shards}"
fi
grep -q "this cluster's MaxArraySize is ${shards}" "${work}/over.err" ||
  fail "no MaxArraySize in: $(cat "${work}/over.err")"
merge="$("${backoff}" sweep "${sweep[@]}" --emit slurm --shards "${shards}" --out "${job}")"

# Waits until no task of the job is pending or running (at most $2 seconds).
await_job() {
  local id="$1" deadline=$((SECONDS + $2))
  while [ -n "$(squeue -h -j "${id}" 2>/dev/null)" ]; do
    [ "${SECONDS}" -lt "${deadline}" ] || fail "job ${id} still queued after $2 s: $(squeue -j "${id}")"
    sleep 0.2
  done
}

# 2. Submitted from elsewhere, with none of this environment; task 1 cancelled once it runs.
mkdir -p "${work}/elsewhere"
first="$(cd "${work}/elsewhere" && sbatch --parsable --export=NONE "${job}/backoff-sweep.sbatch")"
first="${first%%;*}"
deadline=$((SECONDS + 60))
until grep -qs "shard 2/${shards} from the Slurm job array task 1" "${job}"/logs/*_1.err; do
  [ "${SECONDS}" -lt "${deadline}" ] || fail "task 1 did not start its shard within 60 s"
  sleep 0.2
done
sleep 0.5
scancel "${first}_1"
await_job "${first}" 120
[ ! -e "${job}/shards/shard-2-of-${shards}.json" ] ||
  fail "the cancelled task wrote its shard: the cancel came too late to test anything"
for i in 1 3 4; do
  [ -f "${job}/shards/shard-${i}-of-${shards}.json" ] || fail "shard ${i} was not written"
done
[ -z "$(ls -A "${work}/elsewhere")" ] || fail "a log went to the folder sbatch ran in"

# 3. The same script again: three shards skipped, the cancelled one run.
second="$(sbatch --parsable "${job}/backoff-sweep.sbatch")"
second="${second%%;*}"
await_job "${second}" 120
skipped="$(cat "${job}"/logs/*"-${second}_"*.err | grep -c "skipped: already complete" || true)"
[ "${skipped}" -eq 3 ] || fail "the resubmitted array skipped ${skipped} shards, not 3"
[ -f "${job}/shards/shard-2-of-${shards}.json" ] || fail "the resubmission did not run shard 2"
logs="$(find "${job}/logs" -name "backoff-sweep-*.err" | wc -l)"
[ "${logs}" -eq $((2 * shards)) ] || fail "${logs} task logs in DIR/logs, not $((2 * shards))"

# 4. The printed merge command, then the unsharded sweep's outputs byte for byte.
sh -c "${merge}" >"${work}/merged.out"
cmp "${job}/merged/sweep.csv" "${work}/whole/sweep.csv" || fail "sweep.csv differs"
for summary in "${job}/merged/summary.json" "${work}/whole/summary.json"; do
  # The wall time (the merge sums the shards') is the only field that may differ.
  /usr/bin/python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
d["run"].pop("wall_s", None); d["run"].pop("events_per_s", None)
print(json.dumps(d, sort_keys=True))' "${summary}" >"${summary}.cmp"
done
cmp "${job}/merged/summary.json.cmp" "${work}/whole/summary.json.cmp" || fail "summary.json differs"

failed=0
echo "slurm_sweep: ok: ${shards} shards on Slurm $(sinfo -V | cut -d' ' -f2), task 1 cancelled and" \
  "rerun, 3 skipped, merged = unsharded"
