#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer fuzzers (the `fuzz` CMake preset: clang, ASan + UBSan) and runs each:
# first every input in fuzz/regressions/<target>/ (all must pass), then fuzzing for
# SECONDS_PER_TARGET seconds from a scratch copy of fuzz/corpus/<target>/ (the committed corpus
# does not grow). Prints one summary line per target; exits 1 if any target crashed, leaked,
# ran out of memory or timed out, naming the saved input.
# Targets run side by side, FUZZ_JOBS at once (default: one per core).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60; FUZZ_TARGETS="spec script" for some)
#        scripts/fuzz.sh --build-only             (builds the fuzzers and runs none: CI's prebuild)
set -euo pipefail

build_only=false
if [ "${1:-}" = --build-only ]; then
  build_only=true
  shift
fi
seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
targets=(${FUZZ_TARGETS:-spec duration scenario script http_request fault_schedule})

# The longest input worth trying, per target.
max_len() {
  case "$1" in
    spec | duration) echo 512 ;;
    http_request) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

if [ ! -f build-fuzz/CMakeCache.txt ]; then cmake --preset fuzz >/dev/null; fi
# Quiet when it builds; the compiler's messages when it does not.
if ! build_log="$(cmake --build build-fuzz --parallel "${JOBS:-2}" --target "${targets[@]/%/_fuzzer}" 2>&1)"; then
  printf '%s\n' "${build_log}" | grep -E -A3 'error|FAILED' | head -n 60 >&2
  echo "fuzz: the fuzzers do not build (above)" >&2
  exit 1
fi
if [ "${build_only}" = true ]; then exit 0; fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/backoff-fuzz.XXXXXX")"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# One target: its regressions, then SECONDS of fuzzing. Its summary line goes to $work/summary,
# what went wrong to $work/problems; the exit status says whether it failed.
fuzz_target() {
  local t="$1"
  local bin="$root/build-fuzz/bin/${t}_fuzzer"
  local work="$scratch/$t"
  mkdir -p "$work/corpus" "$work/artifacts"
  exec >"$work/summary" 2>"$work/problems"
  # Regressions: each input once; any failure is a regression.
  shopt -s nullglob
  local regressions=("$root/fuzz/regressions/$t"/*)
  shopt -u nullglob
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$bin" -timeout=10 -rss_limit_mb=2048 "${regressions[@]}" >"$work/regressions.log" 2>&1; then
      echo "$t: a regression input fails again; see $work/regressions.log" >&2
      tail -n 30 "$work/regressions.log" >&2
      return 1
    fi
  fi
  cp "$root/fuzz/corpus/$t"/* "$work/corpus/"
  local rc=0
  (cd "$work" && "$bin" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
     corpus "$root/fuzz/corpus/$t" >"$work/fuzz.log" 2>&1) || rc=$?
  local runs rate rss
  runs=$(grep -a 'stat::number_of_executed_units' "$work/fuzz.log" | awk '{print $2}')
  rate=$(grep -a 'stat::average_exec_per_sec' "$work/fuzz.log" | awk '{print $2}')
  rss=$(grep -a 'stat::peak_rss_mb' "$work/fuzz.log" | awk '{print $2}')
  local found=("$work/artifacts"/*)
  [ -e "${found[0]}" ] || found=()
  printf '%-13s %12s execs %8s exec/s %5ss %6s MB peak rss  %d new crash files\n' \
    "$t" "${runs:-?}" "${rate:-?}" "$seconds" "${rss:-?}" "${#found[@]}"
  if [ "$rc" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    echo "$t: the fuzzer failed (exit $rc); log: $work/fuzz.log" >&2
    grep -a -m1 -E 'ERROR: |fuzz property violated|Assertion' "$work/fuzz.log" >&2 || true
    for f in "${found[@]}"; do
      echo "  input: $f  (reproduce: $bin $f; keep it in fuzz/regressions/$t/ once fixed)" >&2
    done
    return 1
  fi
}

# Targets run side by side, one per core (FUZZ_JOBS): each still gets SECONDS of its own.
jobs="${FUZZ_JOBS:-$(nproc)}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: FUZZ_JOBS must be a positive whole number" >&2; exit 2; }
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  (rc=0; fuzz_target "$t" || rc=$?; echo "$rc" >"$scratch/$t.rc") &
done
wait
status=0
for t in "${targets[@]}"; do
  cat "$scratch/$t/summary" 2>/dev/null || true
  cat "$scratch/$t/problems" >&2 2>/dev/null || true
  [ "$(cat "$scratch/$t.rc" 2>/dev/null)" = 0 ] || status=1
done
if [ "$status" -eq 0 ]; then rm -rf "$scratch"; fi
exit "$status"
