#!/usr/bin/env bash
# check-confined.sh BUILD SYSROOT: a cross build used its sysroot and its cross toolchain, never
# this host's headers: no compiled file's dependencies (the compiler's .d files) lie under the
# host's /usr/include or /usr/local/include, every header from a library comes from SYSROOT,
# and every ELF file the build produced is for the build's machine.
set -euo pipefail
build=${1:?usage: check-confined.sh BUILD SYSROOT}
sysroot=${2:?usage: check-confined.sh BUILD SYSROOT}

mapfile -t depfiles < <(find "$build" -name '*.o.d' -path '*/CMakeFiles/*')
if [ ${#depfiles[@]} -eq 0 ]; then
  echo "check-confined: no dependency files under $build (not built?)" >&2
  exit 1
fi
host=$(cat "${depfiles[@]}" | tr ' \\' '\n\n' | grep -E '^/usr/(local/)?include/' | sort -u || true)
if [ -n "$host" ]; then
  echo "check-confined: host headers used by the cross build in $build:" >&2
  echo "$host" | head -20 >&2
  exit 1
fi
from_sysroot=$(cat "${depfiles[@]}" | tr ' \\' '\n\n' | grep -c "^$sysroot/usr/include/capnp/" || true)
if [ "$from_sysroot" -eq 0 ]; then
  echo "check-confined: no Cap'n Proto header came from $sysroot" >&2
  exit 1
fi

expected=$(sed -n 's/^set(CMAKE_SYSTEM_PROCESSOR "\(.*\)")/\1/p' "$build"/CMakeFiles/*/CMakeSystem.cmake | head -1)
case "$expected" in
  aarch64) want="AArch64" ;;
  ppc64le) want="PowerPC64" ;;
  s390x) want="IBM S/390" ;;
  i686) want="Intel 80386" ;;
  *) echo "check-confined: unknown processor '$expected' in $build" >&2; exit 1 ;;
esac
n=0
while read -r f; do
  m=$(readelf -h "$f" 2>/dev/null | sed -n 's/^ *Machine: *//p')
  [ -z "$m" ] && continue
  if [ "$m" != "$want" ]; then
    echo "check-confined: $f is for '$m', not '$want'" >&2
    exit 1
  fi
  n=$((n + 1))
done < <(find "$build" -type f \( -name '*.so' -o -name '*.o' -o -perm -u+x \) -not -path '*/CMakeFiles/CMakeTmp/*')
echo "check-confined: ${#depfiles[@]} objects compiled against $sysroot, $n ELF files for $want"
