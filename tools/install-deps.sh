#!/usr/bin/env bash
# Installs the Debian 12 packages mqd-proxy needs, and only those that are missing.
# Runs apt-get as root (directly, or through sudo when available).
set -euo pipefail

packages=(
  # build
  g++ cmake make pkg-config binutils
  # libraries
  capnproto libcapnp-dev libuv1-dev libzstd-dev doctest-dev
  # the real debugger and the real MPI: gdb with its Python, Open MPI and its development
  # headers (for the debug-type object of the stripped libmpi)
  gdb python3 openmpi-bin libopenmpi-dev
)

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
