#!/usr/bin/env bash
# run-cross-tests.sh CTEST BUILD: a cross build's own tests (ctest in BUILD), after saying how that
# build's programs run here: for the 32-bit debugger side (i686), natively or under qemu-i386,
# as its toolchain's probe decided (cmake/toolchains/cross-common.cmake); for a foreign target,
# under its qemu-user emulator.
set -euo pipefail
ctest=${1:?usage: run-cross-tests.sh CTEST BUILD}
build=${2:?usage: run-cross-tests.sh CTEST BUILD}
cache="$build/CMakeCache.txt"
runner=$(sed -n 's/^MQD_CROSS_RUNNER:STRING=//p' "$cache")
if [ -n "$runner" ]; then
  why=$(sed -n 's/^MQD_CROSS_RUNNER_WHY:STRING=//p' "$cache")
  echo "run-cross-tests: i386 programs run $runner here: $why"
else
  arch=$(sed -n 's/^set(CMAKE_SYSTEM_PROCESSOR "\(.*\)")/\1/p' "$build"/CMakeFiles/*/CMakeSystem.cmake | head -1)
  echo "run-cross-tests: $arch programs run under qemu-user"
fi
exec "$ctest" --test-dir "$build" --output-on-failure --timeout 1500
