#!/usr/bin/env bash
# build-mpich.sh: an MPICH with its message-queue debugger DLL (libtvmpich.so), built from
# Debian's own source package, installed into a cache outside the clone. Prints the
# installation prefix on stdout; everything else goes to stderr.
#
# Debian's binary mpich is not configured with --enable-debuginfo, so it ships no MQD DLL. This
# script fetches the same source Debian builds (`apt-get source`, through a private apt
# instance that never touches this machine's apt state), unpacks it with dpkg-source -x
# (Debian's patches applied), and configures it for the tests: the DLL, the ch3 device, Hydra,
# debug information, and nothing else (docs/mpich.md says why each option is there).
#
# The prefix is CACHE/<upstream version>-<hash>, the hash over the Debian version, the
# configure options and this recipe's revision. CACHE is $MQD_MPICH_CACHE, or
# ${XDG_CACHE_HOME:-$HOME/.cache}/mqd-proxy/mpich. PREFIX/.mqd-mpich-stamp holds the key and is
# written last: a run that finds it holding the same key does nothing; any other state (no
# stamp, an interrupted build, another key) builds again from scratch. Concurrent runs for the
# same cache wait for each other (flock).
#
# Settings (environment):
#   MQD_MPICH_CACHE           the cache directory (default above)
#   MQD_MPICH_JOBS            make -j (default 2)
#   MQD_MPICH_DEBIAN_VERSION  the source package version (default 4.0.2-3, bookworm's)
#   MQD_MPICH_PAUSES          seconds to wait before each apt try (default "0 10 30 60")
# Exit status: 0 with the prefix printed; 1 with a sentence saying what failed (and, for a
# failed build step, the end of its log and where the whole log is).
set -euo pipefail

say() { echo "build-mpich: $*" >&2; }
die() { say "$*"; exit 1; }

debian_version=${MQD_MPICH_DEBIAN_VERSION:-4.0.2-3}
upstream_version=${debian_version%-*}
jobs=${MQD_MPICH_JOBS:-2}
# Raise when the recipe changes in a way the options do not show (the steps below).
recipe=1
configure_options=(
  --enable-debuginfo              # builds lib/libtvmpich.so and sets MPIR_dll_name to it
  --with-device=ch3:nemesis       # its receive queues are the ones the 4.0.2 DLL walks
  --with-pm=hydra                 # mpiexec
  --enable-g=dbg                  # -g everywhere, as Debian builds: gdb sees MPICH's frames
                                  # and globals (the DLL's own 7 types come from dbginit.c,
                                  # which MPICH compiles with -g whatever this says)
  --enable-fast=O2
  --disable-fortran --disable-cxx --disable-romio   # the tests are C only, and do no MPI-IO
  --with-datatype-engine=dataloop # not the embedded yaksa, whose generated code is large
  --with-hwloc=/usr               # Debian's hwloc (libhwloc-dev), not the embedded copy
  --disable-static                # libtool would compile every file twice
  --disable-dependency-tracking
  --no-recursion                  # skips configuring MPICH's test suite (test/mpi): a third of
                                  # configure's time, for tests `make` does not build
)
key="mpich $debian_version recipe $recipe: ${configure_options[*]}"
hash=$(printf '%s' "$key" | sha256sum | cut -c1-12)
cache=${MQD_MPICH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mqd-proxy/mpich}
prefix="$cache/$upstream_version-$hash"
stamp="$prefix/.mqd-mpich-stamp"

up_to_date() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; }
if up_to_date; then
  echo "$prefix"
  exit 0
fi

for tool in apt-get dpkg-source gcc make flock xz strings; do
  command -v "$tool" >/dev/null ||
    die "$tool is missing; tools/install-deps.sh --test installs what building MPICH needs"
done
[ -f /usr/include/hwloc.h ] ||
  die "hwloc's headers are missing (/usr/include/hwloc.h); install libhwloc-dev (tools/install-deps.sh --test)"

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if up_to_date; then  # another run built it while this one waited
  echo "$prefix"
  exit 0
fi

work="$cache/.build-$upstream_version-$hash"
log="$cache/$upstream_version-$hash.log"
# What an interrupted or failed build left (its sources and objects, kept for a look at its
# logs) goes now: under the lock no other build is running. Other keys' prefixes stay.
rm -rf "$cache"/.build-* "$prefix"
mkdir -p "$work"
: > "$log"
say "building MPICH $debian_version into $prefix (log: $log)"
started=$SECONDS

# cpu: the CPU seconds (user + system) used so far by the processes this script waited for,
# from bash's `times` (second line), which must run in this shell, not in a $(...) subshell.
# On a busy machine wall time says little; CPU time says what the build costs (docs/mpich.md).
cpu_now() {
  times > "$work/times"
  cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%d", t }' "$work/times")
}

# A step of the build, its output in the log; on failure, the step's name and the log's end.
step() {
  local what=$1
  shift
  local t0=$SECONDS c0
  cpu_now
  c0=$cpu
  echo "=== $what: $*" >> "$log"
  if ! "$@" >> "$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "$what failed (the whole log: $log)"
  fi
  cpu_now
  say "$what: $((SECONDS - t0)) s (CPU $((cpu - c0)) s)"
  steps+=("$what $((SECONDS - t0)) s wall, $((cpu - c0)) s CPU")
}
steps=()

# ---- the source package, through a private apt instance ----
apt_dir="$work/apt"
mkdir -p "$apt_dir"/{lists/partial,archives/partial,sources.list.d,preferences.d}
: > "$apt_dir/status"
# bookworm main's deb-src, from the Debian archive this machine uses for its binaries.
mirror=$("$(dirname "$0")/../apt-mirror.sh")
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=
[ -f "$keyring" ] && signed="[signed-by=$keyring] "
echo "deb-src $signed$mirror bookworm main" > "$apt_dir/sources.list.d/mpich-src.list"
apt_opts=(
  -o "Dir::State=$apt_dir" -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::State::status=$apt_dir/status" -o "Dir::Cache=$apt_dir"
  -o "Dir::Cache::archives=$apt_dir/archives" -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d" -o "Debug::NoLocking=true"
  -o "Acquire::Languages=none" -o "APT::Sandbox::User=root"
)
# A mirror may be mid-sync (an index or a file of "unexpected size", a hash sum mismatch):
# each try starts again after a pause, as tools/cross/make-sysroot.sh does.
read -r -a pauses <<< "${MQD_MPICH_PAUSES:-0 10 30 60}"
src="$work/src"
fetched=
t0=$SECONDS
for pause in "${pauses[@]}"; do
  sleep "$pause"
  rm -rf "$apt_dir/lists" "$src" && mkdir -p "$apt_dir/lists/partial" "$src"
  if apt-get "${apt_opts[@]}" -qq update 2>"$apt_dir/err" &&
     (cd "$src" && apt-get "${apt_opts[@]}" -qq source --download-only "mpich=$debian_version") \
       >>"$log" 2>>"$apt_dir/err"; then
    fetched=yes
    break
  fi
  say "fetching the mpich $debian_version source package from $mirror failed (apt said: $(tr '\n' ' ' < "$apt_dir/err" | cut -c1-300)); trying again"
done
if [ -z "$fetched" ]; then
  offered=$(apt-cache "${apt_opts[@]}" showsrc mpich 2>/dev/null | awk '/^Version:/ { printf "%s ", $2 }')
  die "cannot fetch Debian's mpich $debian_version source package from $mirror after ${#pauses[@]} tries (apt said: $(tr '\n' ' ' < "$apt_dir/err" | cut -c1-400))${offered:+; the mirror offers: $offered}"
fi
say "source package fetched: $((SECONDS - t0)) s"
# dpkg-source applies debian/patches/series (4.0.2-3: missing-conf.patch, an m4 file that only
# autogen.sh reads; the shipped configure is used as it is).
step "unpacking (dpkg-source -x)" dpkg-source -x "$src/mpich_$debian_version.dsc" "$src/mpich"

# ---- configure, build, install ----
cd "$src/mpich"
# Debian builds with its own paths and flags; these are the tests' (see above). The shell's
# compiler and flags would change the build without changing the key: start without them.
unset CC CXX CFLAGS CPPFLAGS CXXFLAGS LDFLAGS LIBS MPICHLIB_CFLAGS MPICHLIB_CPPFLAGS \
  MPICHLIB_LDFLAGS
step configure ./configure --prefix="$prefix" "${configure_options[@]}"
step "make -j$jobs" make -j"$jobs"
step "make install" make install

cpu_now
dll="$prefix/lib/libtvmpich.so"
[ -f "$dll" ] || die "the build installed no $dll: was --enable-debuginfo honoured? (log: $log)"
# (grep without -q: under pipefail, strings killed by an early exit would fail the check)
strings "$prefix/lib/libmpi.so" | grep -xF "$dll" > /dev/null ||
  die "libmpi.so's MPIR_dll_name does not name $dll (log: $log)"
# What the build cost, for docs/mpich.md: wall and CPU seconds, step by step.
{
  echo "mpich $debian_version: ${configure_options[*]}"
  echo "make -j$jobs on $(nproc) processors, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  printf '%s\n' "${steps[@]}"
  echo "total $((SECONDS - started)) s wall, $cpu s CPU"
} > "$prefix/.mqd-mpich-build"
cd "$cache"
rm -rf "$work"
echo "$key" > "$stamp"
say "done in $((SECONDS - started)) s: $prefix"
echo "$prefix"
