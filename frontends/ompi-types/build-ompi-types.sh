#!/usr/bin/env bash
# Builds the debug-type object for a stripped libmpi (see ompi_types.c) from the installed
# Open MPI development headers, and checks its layouts against the ELF symbol sizes of the
# installed libmpi. The result is loaded into gdb with `add-symbol-file OBJECT` (the gdb front
# end does it by itself when libmpi lacks the types).
#
# usage: build-ompi-types.sh OUT.o [--cc COMPILER] [--sysroot DIR]
#   --cc       C compiler for the target (default: cc); a cross compiler for another arch
#   --sysroot  root of the target's Debian packages (default: /); headers and libmpi are
#              looked up under it
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-ompi-types.sh OUT.o [--cc CC] [--sysroot DIR]}
shift
cc=cc sysroot=
while [ $# -gt 0 ]; do
  case "$1" in
    --cc) cc=$2; shift 2 ;;
    --sysroot) sysroot=$2; shift 2 ;;
    *) echo "build-ompi-types: unknown option $1" >&2; exit 2 ;;
  esac
done

triplet=$($cc -dumpmachine)
case "$triplet" in
  x86_64-*) multiarch=x86_64-linux-gnu ;;
  i?86-*) multiarch=i386-linux-gnu ;;
  aarch64-*) multiarch=aarch64-linux-gnu ;;
  powerpc64le-*) multiarch=powerpc64le-linux-gnu ;;
  s390x-*) multiarch=s390x-linux-gnu ;;
  *) multiarch=$triplet ;;
esac
ompi=$sysroot/usr/lib/$multiarch/openmpi
libmpi=$(ls "$sysroot"/usr/lib/"$multiarch"/libmpi.so.* 2>/dev/null | head -n 1 || true)
if [ ! -f "$ompi/include/openmpi/ompi_config.h" ] || [ -z "$libmpi" ]; then
  echo "build-ompi-types: no Open MPI headers or libmpi under ${sysroot:-/} for $multiarch" \
       "(install libopenmpi-dev)" >&2
  exit 1
fi

# The sizes the library's own objects have: the layouts must agree.
symsize() {
  readelf -W --dyn-syms "$libmpi" | awk -v s="$1" '$8 == s && !found { print $3; found = 1 }'
}
freelist=$(symsize mca_pml_base_send_requests)
pointers=$(symsize ompi_mpi_communicators)
if [ -z "$freelist" ] || [ -z "$pointers" ]; then
  echo "build-ompi-types: $libmpi lacks mca_pml_base_send_requests or ompi_mpi_communicators" >&2
  exit 1
fi

# Open MPI 5's internal headers include PMIx's (Debian's libopenmpi-dev depends on libpmix-dev,
# which installs them here); Open MPI 4.1's do not.
includes=(-I"$here/stub" -I"$ompi/include" -I"$ompi/include/openmpi")
pmix=$sysroot/usr/lib/$multiarch/pmix2/include
if [ -d "$pmix" ]; then
  includes+=(-I"$pmix")
fi
mkdir -p "$(dirname "$out")"
# With a sysroot, the compiler's /usr/include is the sysroot's: no host header can slip in.
$cc ${sysroot:+--sysroot="$sysroot"} -g -O0 -fno-eliminate-unused-debug-types -w \
  "${includes[@]}" \
  -DMQD_EXPECT_FREE_LIST_SIZE="$freelist" -DMQD_EXPECT_POINTER_ARRAY_SIZE="$pointers" \
  -c "$here/ompi_types.c" -o "$out"
echo "build-ompi-types: $out for $(basename "$libmpi") ($multiarch): opal_free_list_t $((freelist)) bytes," \
     "opal_pointer_array_t $((pointers)) bytes, as in the library"
