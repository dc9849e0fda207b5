#!/usr/bin/env bash
# enter.sh DIR [--bind HOST:INSIDE[:ro]]... COMMAND...: runs COMMAND as root inside the Debian
# root DIR (tools/release-root/make-root.sh), in a mount namespace of its own, so every mount
# made for it goes with it, whatever way it ends: /proc, /dev (the host's, with /dev/pts and a
# /dev/shm of its own for Open MPI's shared memory), /sys (hwloc reads the topology there), a
# /tmp of its own, the host's resolv.conf (apt), and each --bind. The root's processes are the
# host's: gdb attaches and ptrace works as on the host.
set -euo pipefail
dir=${1:?usage: enter.sh DIR [--bind HOST:INSIDE[:ro]]... COMMAND...}
shift
binds=()
while [ "${1:-}" = "--bind" ]; do
  binds+=("$2")
  shift 2
done
[ $# -gt 0 ] || { echo "enter.sh: no command" >&2; exit 2; }
[ -x "$dir/bin/bash" ] || { echo "enter.sh: $dir is no Debian root" >&2; exit 1; }
setup='set -e
dir=$1; shift
mount --make-rprivate /
mount --bind "$dir" "$dir"  # / a mount point inside, as ip netns exec needs (tests/cluster/)
mount -t proc proc "$dir/proc"
mount --rbind /dev "$dir/dev"
mount -t tmpfs -o mode=1777 shm "$dir/dev/shm"
mount --rbind /sys "$dir/sys"
mount -t tmpfs -o mode=1777 tmp "$dir/tmp"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
while [ "$1" != "--" ]; do
  IFS=: read -r from to mode <<< "$1"
  mkdir -p "$dir$to"
  mount --bind "$from" "$dir$to"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$dir$to"; fi
  shift
done
shift
exec chroot "$dir" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"'
exec unshare --mount bash -c "$setup" enter "$dir" "${binds[@]}" -- "$@"
