#!/usr/bin/env bash
# run-sanitized.sh BUILD [--also-suppress FILE] [CTEST-ARGS...]: runs tests of a sanitized
# build (MQD_SANITIZE=...) with ctest, and fails unless every test passed and no process wrote
# a sanitizer report.
#
# Every process the tests start inherits these options: test programs, servers and the
# workers they fork, gdb (tests/e2e preloads the ASan runtime there), MPI ranks. Each report
# goes to its own file in a private directory (log_path), because a report from a server's
# worker or from a process that outlives its test would otherwise be lost in a log nobody
# reads; after ctest, any such file fails the run and is printed. A finding stops its process
# at once (halt_on_error; UBSan is compiled with -fno-sanitize-recover). lsan.supp holds the
# suppressions: leaks in other projects' code, each with its reason; --also-suppress adds a
# file of suppressions that hold only for the tests run (LSan reads one file: they are joined).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run-sanitized.sh BUILD [--also-suppress FILE] [CTEST-ARGS...]}
shift
extra=()
if [ "${1:-}" = "--also-suppress" ]; then
  extra=("${2:?usage: run-sanitized.sh BUILD [--also-suppress FILE] [CTEST-ARGS...]}")
  shift 2
fi
reports=$(mktemp -d "${TMPDIR:-/tmp}/mqd-sanitize-XXXXXX")
suppressions="$reports.lsan.supp"  # beside the reports, which must hold only reports
cat "$here/lsan.supp" "${extra[@]}" > "$suppressions" || exit 1

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan"
export LSAN_OPTIONS="suppressions=$suppressions:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"

ctest --test-dir "$build" --output-on-failure --no-tests=error "$@"
rc=$?

# One warning is not a finding: kj starts every new fiber stack with a longjmp from the fresh
# stack before any of our code runs on it, so ASan (told of fiber stacks only from our code,
# proxy-server/worker/AsanFiber.h) sees a jump from an unknown stack and declines to clear it: there
# is nothing on a fresh stack to clear. ASan prints that warning once per process; a file that
# holds nothing else is not counted. Anything else in any file fails the run.
benign='^==[0-9]+==WARNING: ASan is ignoring requested __asan_handle_no_return: stack type: default |^False positive error reports may follow$|^For details see https://github.com/google/sanitizers/issues/189$'
count=0
notes=0
for f in $(find "$reports" -type f | sort); do
  if ! grep -Eqv "$benign|^[[:space:]]*$" "$f"; then
    notes=$((notes + 1))
    continue
  fi
  count=$((count + 1))
  echo "=== sanitizer report $(basename "$f") ==="
  cat "$f"
done
[ "$notes" -gt 0 ] && echo "run-sanitized: $notes process(es) noted kj's fiber start-up (not a finding)"
if [ "$count" -gt 0 ]; then
  echo "run-sanitized: $count sanitizer report(s); failing"
  [ "$rc" -eq 0 ] && rc=1
fi
rm -rf "$reports" "$suppressions"
exit "$rc"
