#!/usr/bin/env bash
# Runs each fuzz target over its committed corpus, then fuzzes it for SECONDS from there.
#   run-fuzz.sh BINDIR CORPUSDIR SECONDS [TARGET...]
# BINDIR holds the fuzz executables (<clang build>/tests/fuzz), CORPUSDIR/<target>/ their
# corpora (read only: what the fuzzing finds goes to a scratch directory). Fails on any crash,
# leak, sanitizer report, timeout (-timeout, seconds per input) or out-of-memory; the input
# that caused it is kept as $WORKDIR/<target>/crash-* (WORKDIR: a temporary directory unless
# set) and its path printed. Prints each target's exec count, exec/s and coverage.
set -euo pipefail
bindir=$1 corpus=$2 seconds=$3
shift 3
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_server_connection fuzz_parsers)

work=${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/mqd-fuzz.XXXXXX")}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  exe=$bindir/$t
  [ -x "$exe" ] || { echo "run-fuzz: no fuzz target $exe" >&2; exit 1; }
  [ -d "$corpus/$t" ] || { echo "run-fuzz: no corpus $corpus/$t" >&2; exit 1; }
  mkdir -p "$work/$t/new"
  log=$work/$t/log
  # -timeout: the slack of a loaded machine (60 s) for one input, under ASan beside other
  # tests; an input that hangs still fails, one that is merely slow there does not.
  common=(-timeout=60 -rss_limit_mb=2048 -print_final_stats=1 "-artifact_prefix=$work/$t/")
  echo "== $t: the corpus ($(ls "$corpus/$t" | wc -l) inputs)"
  # The recorded sessions and the regression inputs must still open a session and reach the
  # DLL (FuzzServerConnection.cc): after a protocol change, stale ones are only refused.
  seeds=("$corpus/$t"/session-* "$corpus/$t"/regress-*)
  if [ "$t" = fuzz_server_connection ] && ! MQD_FUZZ_REQUIRE_DLL_CALLS=1 "$exe" "${common[@]}" \
      -runs=0 "${seeds[@]}" >"$log.seeds" 2>&1; then
    tail -n 20 "$log.seeds"
    echo "run-fuzz: $t: a recorded session no longer reaches the DLL (log $log.seeds)"
    status=1
    continue
  fi
  if ! "$exe" "${common[@]}" -runs=0 "$corpus/$t" >"$log.corpus" 2>&1; then
    tail -n 60 "$log.corpus"
    echo "run-fuzz: $t FAILED on its own corpus (see above; log $log.corpus)"
    status=1
    continue
  fi
  echo "== $t: ${seconds} s of fuzzing"
  if ! "$exe" "${common[@]}" -max_total_time="$seconds" "$work/$t/new" "$corpus/$t" \
      >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "run-fuzz: $t FAILED; reproducer(s): $(ls "$work/$t"/crash-* "$work/$t"/leak-* \
          "$work/$t"/timeout-* "$work/$t"/oom-* 2>/dev/null | tr '\n' ' ')"
    status=1
    continue
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  echo "$t: ${execs} execs, ${speed} exec/s, ${cov}, $(ls "$work/$t/new" | wc -l) new inputs," \
       "no crash"
done
[ -n "${WORKDIR:-}" ] || [ $status -ne 0 ] || rm -rf "$work"
exit $status
