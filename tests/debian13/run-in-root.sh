#!/usr/bin/env bash
# run-in-root.sh STEP ROOT SOURCE BUILD: one step of the Debian 13 part of the suite
# (tests/debian13/CMakeLists.txt), inside the Debian 13 root ROOT, with SOURCE read-only at
# /src and BUILD at /build.
#   main   makes ROOT or brings it up to date (tools/release-root/make-root.sh), then runs the
#          README's main command there: BUILD_DIR=/build ./quickstart.sh
#   tests  configures that build for the packaging tests too (MQD_TESTS_PACKAGING: the .deb
#          made, checked by lintian, installed in ROOT and used there) and for the simulated
#          cluster (MQD_TESTS_CLUSTER: Slurm 24.11 and Open MPI 5 across nodes), and runs its
#          unit, transparency, e2e, packaging and cluster tests:
#          ctest -L 'unit|transparency|e2e|packaging|cluster'
set -euo pipefail
step=${1:?usage: run-in-root.sh main|tests ROOT SOURCE BUILD}
root=${2:?} source=${3:?} build=${4:?}
tools=$source/tools/release-root
mkdir -p "$build"
enter=("$tools/enter.sh" "$root" --bind "$source:/src:ro" --bind "$build:/build")
case "$step" in
  main)
    "$tools/make-root.sh" trixie "$root"
    exec "${enter[@]}" env BUILD_DIR=/build /src/quickstart.sh ;;
  tests)
    exec "${enter[@]}" bash -c 'set -e
      cmake -DMQD_TESTS_PACKAGING=ON -DMQD_TESTS_CLUSTER=ON /build > /dev/null
      cmake --build /build -j2
      exec ctest --test-dir /build -L "unit|transparency|e2e|packaging|cluster" --output-on-failure \
        --timeout 1800 -j2' ;;
  *) echo "usage: run-in-root.sh main|tests ROOT SOURCE BUILD" >&2; exit 2 ;;
esac
