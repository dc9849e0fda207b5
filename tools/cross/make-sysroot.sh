#!/usr/bin/env bash
# make-sysroot.sh ARCH DIR: a sysroot for one foreign Debian architecture, from Debian packages,
# without touching this machine's dpkg database (no `dpkg --add-architecture`: installing
# libopenmpi3:<arch> that way removes the host's Open MPI through libmunge2, which is not
# Multi-Arch).
#
# ARCH is a Debian architecture: arm64, ppc64el, s390x or i386. The script runs a private apt
# instance (its own state, lists, cache and empty status, APT::Architecture=ARCH) against this
# machine's Debian sources, downloads the libraries mqd-proxy builds against with their whole
# dependency closure (libc6 included, so qemu-user can run programs with -L DIR), plus the Open
# MPI development files and tools without their dependencies, unpacks every .deb into DIR with
# dpkg-deb -x, and turns absolute symlinks into relative ones (ppc64el's loader needs that).
# Re-running with the same package set is a no-op (DIR/.mqd-sysroot records it, written last).
# DIR may be shared by several builds (tests/cross/ keeps the sysroots in a cache outside the
# clone): runs for the same DIR wait for each other (flock on DIR.lock, at most 30 minutes).
set -euo pipefail

arch=${1:?usage: make-sysroot.sh ARCH DIR}
dir=${2:?usage: make-sysroot.sh ARCH DIR}
case "$arch" in arm64|ppc64el|s390x|i386) ;; *) echo "make-sysroot: unknown arch $arch" >&2; exit 2 ;; esac

# With dependencies: what the server, the test programs and a singleton Open MPI process need.
closure=(libstdc++6 doctest-dev libcapnp-dev libuv1-dev libzstd-dev libopenmpi3)
# Without dependencies: mpi.h and Open MPI's internal headers with the hwloc and libevent headers
# they include (for the type object, frontends/ompi-types); CLI11's headers (the server's
# command line; architecture-independent, no dependencies).
single=(libopenmpi-dev openmpi-common libhwloc-dev libevent-dev libcli11-dev)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir.lock"
flock -w 1800 9 || { echo "make-sysroot: $dir is being made by another run for over 30 minutes" >&2; exit 1; }
stamp="$dir/.mqd-sysroot"
want="$arch ${closure[*]} / ${single[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "make-sysroot: $dir is up to date ($arch)"
  exit 0
fi
rm -f "$stamp"  # written again last: a run stopped half-way leaves none
apt_dir="$dir/.apt"
rm -rf "$apt_dir"
mkdir -p "$apt_dir"/{lists/partial,archives/partial,sources.list.d,debs,preferences.d}
: > "$apt_dir/status"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$apt_dir/sources.list.d/"
elif [ -f /etc/apt/sources.list ]; then
  grep -E '^deb ' /etc/apt/sources.list > "$apt_dir/sources.list.d/debian.list"
else
  echo "deb $("$(dirname "$0")/../apt-mirror.sh") bookworm main" > "$apt_dir/sources.list.d/debian.list"
fi
apt_opts=(
  -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
  -o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::status=$apt_dir/status" -o "Dir::Cache=$apt_dir"
  -o "Dir::Cache::archives=$apt_dir/archives" -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d" -o "APT::Install-Recommends=false"
  -o "Debug::NoLocking=true" -o "Acquire::Languages=none" -o "APT::Sandbox::User=root"
)
# A mirror may be mid-sync (an index or a package of "unexpected size", a hash sum mismatch):
# each step is tried again after a pause. Indexes other than bookworm/main's (security and
# updates) are optional: bookworm-security has no s390x, and without them apt takes the
# packages from main, a consistent set. Only a package the sysroot needs that cannot be had
# after every try stops the script, with a sentence saying which.
# MQD_SYSROOT_PAUSES (seconds before each try, default "0 10 30 60") is for tests.
read -r -a pauses <<< "${MQD_SYSROOT_PAUSES:-0 10 30 60}"
main_index() { ls "$apt_dir/lists/" | grep -q "_dists_bookworm_main_binary-${arch}_Packages"; }
for pause in "${pauses[@]}"; do
  sleep "$pause"
  rm -rf "$apt_dir/lists" && mkdir -p "$apt_dir/lists/partial"
  if apt-get "${apt_opts[@]}" -qq update 2>"$apt_dir/update.err"; then break; fi
  if main_index; then
    echo "make-sysroot: some optional $arch indexes are missing (apt said: $(tr '\n' ' ' < "$apt_dir/update.err" | cut -c1-300)); using bookworm/main" >&2
    break
  fi
  echo "make-sysroot: no bookworm/main index for $arch yet (apt said: $(tr '\n' ' ' < "$apt_dir/update.err" | cut -c1-300)); trying again" >&2
done
if ! main_index; then
  echo "make-sysroot: cannot get the package index of bookworm/main for $arch after ${#pauses[@]} tries; is a Debian mirror reachable? (apt said: $(tr '\n' ' ' < "$apt_dir/update.err" | cut -c1-500))" >&2
  exit 1
fi
fetched=
for pause in "${pauses[@]}"; do
  sleep "$pause"
  if apt-get "${apt_opts[@]}" -qq -y --download-only install "${closure[@]}" 2>"$apt_dir/get.err" &&
     (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" -qq download "${single[@]}") 2>>"$apt_dir/get.err"; then
    fetched=yes
    break
  fi
  echo "make-sysroot: downloading the $arch packages failed (apt said: $(tr '\n' ' ' < "$apt_dir/get.err" | cut -c1-300)); trying again" >&2
done
if [ -z "$fetched" ]; then
  echo "make-sysroot: cannot download the packages the $arch sysroot needs (${closure[*]} ${single[*]}) after ${#pauses[@]} tries (apt said: $(tr '\n' ' ' < "$apt_dir/get.err" | cut -c1-500))" >&2
  exit 1
fi

n=0
for deb in "$apt_dir"/archives/*.deb "$apt_dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dir"
  n=$((n + 1))
done
# Absolute symlinks point into the host; make them relative to their place in the sysroot.
find "$dir" -path "$apt_dir" -prune -o -type l -lname '/*' -print | while read -r link; do
  target=$(readlink "$link")
  rel=$(realpath -m --relative-to="$(dirname "$link")" "$dir$target")
  ln -sfn "$rel" "$link"
done
rm -rf "$apt_dir"
echo "$want" > "$stamp"
echo "make-sysroot: $n packages unpacked into $dir ($arch, $(du -sh "$dir" | cut -f1))"
