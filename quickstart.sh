#!/usr/bin/env bash
# mqd-proxy on a fresh Debian 12 or Debian 13 machine, in one command:
#   ./quickstart.sh         install what is missing, build, run the main job: a live 4-rank
#                           Open MPI job, gdb attached to every rank, queues through the proxy
#   ./quickstart.sh test    install what is missing, build (also a sanitized copy), run the
#                           whole test suite
# BUILD_DIR (default: build), JOBS (default: 2), MQD_CROSS (architectures tested besides
# x86_64; default for `test`: all) and MQD_COMPILER_CACHE (where ccache keeps what was compiled,
# for the next build of any clone; default: ~/.cache/mqd-proxy/ccache; empty: none) can be set
# in the environment.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-main}
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
compiler_cache=${MQD_COMPILER_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/mqd-proxy/ccache}

case "$mode" in
  main|test) ;;
  *) echo "usage: ./quickstart.sh [test]"; exit 2 ;;
esac

# The test suite includes the cross-architecture tests (tests/cross/): foreign servers under
# qemu-user and a 32-bit debugger side. MQD_CROSS overrides which architectures.
# It also builds and tests a sanitized copy (ASan+UBSan, tests/sanitize/) and includes a
# bounded fuzz run (tests/fuzz/: a clang build with sanitizers, fuzz-smoke).
if [ "$mode" = test ]; then
  tools/install-deps.sh --test
  cross=${MQD_CROSS-aarch64;ppc64el;s390x;i686;i686-taddr64}
  sanitized=ON
  fuzz=ON
  # MPICH with its message-queue DLL (tests/mpich/): Debian ships none, so the script builds
  # one from Debian's source package into a cache outside the clone, once per version and
  # options (about 2.5 minutes on 2 idle cores; docs/mpich.md, "The build").
  mpich=$(tools/mpich/build-mpich.sh)
  # every test option on: a missing tool fails the configure with its sentence, never a skip
  tests="-DMQD_TESTS_MPI=ON -DMQD_TESTS_SSH=ON -DMQD_TESTS_ANALYSIS=ON -DMQD_TESTS_PACKAGING=ON"
  tests+=" -DMQD_TESTS_MPICH=ON -DMQD_MPICH_PREFIX=$mpich"
  # A Slurm cluster simulated on this machine (tests/cluster/: namespaces, a slurmd a node).
  tests+=" -DMQD_TESTS_CLUSTER=ON"
  # On Debian 12, the project is also built and tested in a Debian 13 root (tests/debian13/:
  # Open MPI 5, Cap'n Proto 1.1, gdb 16), made from Debian's packages once per machine.
  if [ "$(. /etc/os-release && echo "$VERSION_CODENAME")" = bookworm ]; then
    tests+=" -DMQD_TESTS_DEBIAN13=ON"
  fi
  # An aarch64 node with its own kernel (tests/arm-node/: qemu-system-aarch64, Debian's arm64
  # kernel and packages), whose programs are the aarch64 cross build's.
  case ";$cross;" in
    *";aarch64;"*) tests+=" -DMQD_TESTS_ARM_NODE=ON" ;;
  esac
else
  tools/install-deps.sh
  cross=${MQD_CROSS-}
  sanitized=OFF
  fuzz=OFF
  tests="-DMQD_TESTS_MPI=ON"  # the main job's MPI program (tests/e2e/pending)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQD_TESTS=ON $tests "-DMQD_CROSS=$cross" \
  -DMQD_SANITIZED_COPY=$sanitized "-DMQD_FUZZ=$fuzz" "-DMQD_COMPILER_CACHE=$compiler_cache"
cmake --build "$build" -j"$jobs"

if [ "$mode" = test ]; then
  # Two tests at a time (JOBS): tests that must not overlap say so (RUN_SERIAL, PROCESSORS,
  # RESOURCE_LOCK: tests/CMakeLists.txt), and the long ones start first (COST).
  ctest --test-dir "$build" --output-on-failure --timeout 1800 -j"$jobs"
else
  tools/mpi-demo.sh "$build"
fi
