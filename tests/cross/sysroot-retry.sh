#!/usr/bin/env bash
# sysroot-retry.sh MAKE-SYSROOT: make-sysroot.sh against a mirror that is mid-sync. An apt-get
# placed first on PATH fails like a resyncing mirror: the first `update` loses every index
# ("File has unexpected size ... Mirror sync in progress?"), the second loses the optional
# security index, and the first package download fails with a hash sum mismatch. The script
# must try again, build a whole i386 sysroot, and say what it did; then, with a mirror that
# never recovers, fail with a sentence that names what it could not get.
set -euo pipefail
make_sysroot=${1:?usage: sysroot-retry.sh MAKE-SYSROOT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
real=$(command -v apt-get)
mkdir -p "$work/bin"
cat > "$work/bin/apt-get" <<SHIM
#!/usr/bin/env bash
# A mirror mid-sync, driven by counters in $work.
count() { local n=\$(cat "$work/\$1" 2>/dev/null || echo 0); echo \$((n + 1)) > "$work/\$1"; echo \$((n + 1)); }
for a in "\$@"; do
  case "\$a" in
    update)
      n=\$(count updates)
      if [ "\$n" -eq 1 ] || [ -n "\${MQD_MIRROR_BROKEN:-}" ]; then
        echo "E: Failed to fetch http://archive.example/debian/dists/bookworm/main/binary-i386/Packages.xz  File has unexpected size (123 != 456). Mirror sync in progress?" >&2
        exit 100
      fi
      "$real" "\$@"; rc=\$?
      # The security index vanishes, as it does for an architecture the mirror is resyncing.
      rm -f "\$(ls -d "\${MQD_LISTS}"/*security*Packages* 2>/dev/null | head -1)" 2>/dev/null || true
      echo "E: Failed to fetch http://security.archive.example/dists/bookworm-security/main/binary-i386/Packages.xz  File has unexpected size. Mirror sync in progress?" >&2
      exit 100 ;;
    install)
      if [ "\$(count installs)" -eq 1 ]; then
        echo "E: Failed to fetch http://archive.example/debian/pool/main/g/gcc-12/libstdc++6_12.2.0-14_i386.deb  Hash Sum mismatch" >&2
        exit 100
      fi ;;
  esac
done
exec "$real" "\$@"
SHIM
chmod +x "$work/bin/apt-get"

# The lists directory make-sysroot uses (to drop the security index from it).
export MQD_LISTS="$work/sysroot/.apt/lists"
out=$(PATH="$work/bin:$PATH" MQD_SYSROOT_PAUSES="0 1 1 1" "$make_sysroot" i386 "$work/sysroot" 2>&1) || {
  echo "$out"; echo "sysroot-retry: make-sysroot.sh failed against a mirror that recovers" >&2; exit 1; }
echo "$out"
fail=0
grep -q "trying again" <<< "$out" || { echo "sysroot-retry: no retry was reported" >&2; fail=1; }
grep -q "optional i386 indexes are missing" <<< "$out" || {
  echo "sysroot-retry: the missing security index was not reported" >&2; fail=1; }
for f in lib/ld-linux.so.2 usr/include/capnp/rpc.h usr/lib/i386-linux-gnu/libmpi.so.40 \
         usr/include/doctest/doctest.h .mqd-sysroot; do
  [ -e "$work/sysroot/$f" ] || { echo "sysroot-retry: the sysroot lacks $f" >&2; fail=1; }
done

# A mirror that never recovers: a clear sentence and a failure, not a half-made sysroot.
rm -rf "$work/sysroot2"
if out=$(PATH="$work/bin:$PATH" MQD_MIRROR_BROKEN=1 MQD_SYSROOT_PAUSES="0 0" \
         "$make_sysroot" i386 "$work/sysroot2" 2>&1); then
  echo "$out"; echo "sysroot-retry: make-sysroot.sh succeeded against a broken mirror" >&2; fail=1
fi
echo "$out" | tail -1
grep -q "cannot get the package index of bookworm/main for i386 after 2 tries" <<< "$out" || {
  echo "sysroot-retry: the failure does not say what could not be had" >&2; fail=1; }
[ ! -e "$work/sysroot2/.mqd-sysroot" ] || { echo "sysroot-retry: a stamp was left" >&2; fail=1; }
exit $fail
