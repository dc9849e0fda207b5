#!/usr/bin/env bash
# Installs the Debian packages mqd-proxy needs, and only those that are missing, on Debian 12
# (bookworm) or Debian 13 (trixie).
# Runs apt-get as root (directly, or through sudo when available).
#   install-deps.sh          what building, the demo and the native tests need
#   install-deps.sh --packaging  also what the packaging tests need (tests/packaging/):
#                            systemd's tools and lintian
#   install-deps.sh --release-root  what the Debian 13 root of tests/debian13/ has: --packaging,
#                            and Slurm and munge for the simulated cluster (tests/cluster/)
#   install-deps.sh --cross  also what the cross-architecture tests need (tests/cross/): cross
#                            compilers, qemu-user and gdb-multiarch (the foreign libraries come
#                            in per-architecture sysroots, tools/cross/make-sysroot.sh)
#   install-deps.sh --test   everything the whole test suite needs: --cross, clang with its
#                            sanitizer and libFuzzer runtimes (tests/fuzz/), openssh-server
#                            for the ssh:// tests (tests/cli/), --packaging, Graphviz and
#                            Chromium (the deadlock analysis: tests/analysis/, tests/deadlock/),
#                            mypy (the front ends' type check: tests/frontend/), and what
#                            building MPICH from Debian's source package needs (tools/mpich/),
#                            mmdebstrap for the Debian 13 part (tests/debian13/, on Debian 12)
#                            and for the aarch64 node, with qemu-system-arm and cpio
#                            (tests/arm-node/); Slurm and munge for the simulated cluster
#                            (tools/cluster/, tests/cluster/)
set -euo pipefail

# The one package set that differs between the releases: the fuzz build's clang (tests/fuzz/).
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
case "$codename" in
  bookworm) llvm=14 ;;
  trixie) llvm=19 ;;
  *) echo "install-deps: knows Debian 12 (bookworm) and Debian 13 (trixie); this machine is" \
          "'${codename:-unknown}' (/etc/os-release)" >&2
     exit 1 ;;
esac

packages=(
  # build, with a compiler cache (quickstart.sh keeps it outside the clone)
  g++ cmake make pkg-config binutils ccache
  # libraries
  capnproto libcapnp-dev libuv1-dev libzstd-dev libcli11-dev doctest-dev
  # PMIx's tool library: `mqd attach --launcher` of an Open MPI 5 job (frontends/pmix/)
  libpmix-dev
  # the real debugger and the real MPI: gdb with its Python, gdbserver (how gdb reaches ranks
  # on other hosts: `mqd attach --gdbserver`), Open MPI and its development headers (for the
  # debug-type object of the stripped libmpi)
  gdb gdbserver python3 openmpi-bin libopenmpi-dev
  # pytest runs the Python tests (tests/cli/, tests/packaging/, tests/analysis/)
  python3-pytest
  # the security tests make their TLS certificates at run time with the openssl command
  openssl
  # the sanitized test build (MQD_SANITIZE, tests/sanitize/): gcc's sanitizer runtimes
  libasan8 libubsan1
  # packaging (packaging/, tests/packaging/): man pages from --help, and the .deb's
  # dependencies (cpack finds its ELF files with file, and runs dpkg-shlibdeps on them)
  help2man dpkg-dev file
)
mode=${1:-}
case "$mode" in
  ""|--packaging|--release-root|--cross|--test) ;;
  *) echo "usage: install-deps.sh [--packaging|--release-root|--cross|--test]" >&2; exit 2 ;;
esac
# the simulated cluster (tools/cluster/, tests/cluster/): Slurm's controller, node daemon and
# commands, munge for their authentication, and the namespaces' tools (ip, unshare, nsenter).
# Debian starts no daemon of theirs where nothing runs services (a container, a chroot); the
# cluster runs its own, with its own configuration and key.
cluster=(slurmctld slurmd slurm-client munge iproute2 util-linux)
if [ "$mode" = --release-root ] || [ "$mode" = --test ]; then
  packages+=("${cluster[@]}")
fi
if [ "$mode" = --packaging ] || [ "$mode" = --release-root ] || [ "$mode" = --test ]; then
  # systemd for systemd-socket-activate and systemd-analyze (tests/packaging/: socket
  # activation, the units verified; systemd does not need to be running); lintian for the .deb
  # (packaging-deb)
  packages+=(systemd lintian)
fi
if [ "$mode" = --cross ] || [ "$mode" = --test ]; then
  packages+=(
    g++-aarch64-linux-gnu g++-powerpc64le-linux-gnu g++-s390x-linux-gnu g++-i686-linux-gnu
    qemu-user gdb-multiarch
    # make-sysroot.sh: a private apt instance, dpkg-deb, realpath
    apt dpkg coreutils ca-certificates
  )
  if [ "$mode" = --test ]; then
    # clang for the fuzz build; openssh-server for the ssh:// tests, which run their own sshd
    # on a loopback port (testing/python/sshd.py)
    packages+=("clang-$llvm" "libclang-rt-$llvm-dev" openssh-server)
    # the deadlock analysis (tests/analysis/, tests/deadlock/): Graphviz's dot for the
    # pictures, and Chromium to render the HTML report headless and check the screenshot
    packages+=(graphviz chromium)
    # the type check of the front ends' Python (frontend-types, tests/frontend/): mypy
    packages+=(mypy)
    # MPICH with its debugger DLL (tools/mpich/build-mpich.sh): Debian's source package through
    # a private apt instance, unpacked by dpkg-source (dpkg-dev, above; xz), built against
    # Debian's hwloc instead of MPICH's embedded copy
    packages+=(xz-utils libhwloc-dev)
    # the Debian 13 part of the suite on Debian 12 (tests/debian13/): a Debian 13 root made
    # from Debian's packages (tools/release-root/); the aarch64 node (tests/arm-node/): a
    # machine emulator, and its image made by mmdebstrap from Debian's arm64 packages and
    # packed by cpio (tools/arm-node/)
    packages+=(mmdebstrap qemu-system-arm cpio)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}"; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
