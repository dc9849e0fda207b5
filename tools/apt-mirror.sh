#!/usr/bin/env bash
# Prints the Debian archive this machine's apt uses for its binaries (the first URI that is
# not a security archive, from /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list),
# for the project's private apt instances (tools/cross/make-sysroot.sh, tools/mpich/).
# The project names no mirror of its own: without one here it says so and exits 1.
set -euo pipefail
mirror=
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
    /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/ && $i !~ /security/) { print $i; exit } }' \
    /etc/apt/sources.list)
fi
if [ -z "$mirror" ]; then
  echo "apt-mirror: no Debian archive in this machine's apt configuration" \
       "(/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list): add one" >&2
  exit 1
fi
echo "$mirror"
