#!/usr/bin/env bash
# make-image.sh DIR: the image of an aarch64 node that tools/arm-node/node.py boots under
# qemu-system-aarch64: Debian 12's arm64 kernel (DIR/vmlinuz) and a root of Debian 12's arm64
# packages packed as an initramfs (DIR/root.cpio): Open MPI, gdb, gdbserver, Python, sshd and
# the libraries mqd-proxy-server runs on. The node runs from RAM: nothing it does outlives it.
#
# The root is made by mmdebstrap's `extract` variant from this machine's mirror: the packages
# and their dependencies unpacked, no maintainer script run (they would need an aarch64
# machine, or qemu-user registered with binfmt_misc, which is global to this host). What
# those scripts would set up for the node is done here: the accounts, sshd's host key and
# configuration; the kernel modules' index and the loader's cache are made by the node's own
# init at boot (the node keeps a handful of modules: depmod takes no time). DIR/root keeps the unpacked tree: the debugger's side uses it as gdb's
# sysroot (the node's own files, byte for byte).
#
# The node's init (node-init, copied to /init) mounts the kernel's file systems, brings up the
# network (qemu's user-mode network: 10.0.2.15, its gateway 10.0.2.2), starts sshd and says
# "mqd-arm-node: ready" on the console. DIR/id_ed25519 is the key root logs in with (made
# here, for this image only).
#
# Re-running is cheap: DIR/.mqd-image records the package list and this directory's scripts'
# hash, written last; runs for the same DIR wait for each other (flock on DIR.lock, at most 30
# minutes). About 1 minute and 1.1 GB on the first run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: make-image.sh DIR}
command -v mmdebstrap >/dev/null || {
  echo "make-image: needs mmdebstrap (tools/install-deps.sh --test installs it)" >&2; exit 1; }
command -v cpio >/dev/null || {
  echo "make-image: needs cpio (tools/install-deps.sh --test installs it)" >&2; exit 1; }

# What the node runs: its kernel; the MPI job and what starts it; gdb (native, with its Python)
# and gdbserver; sshd and the tools node-init uses; what the project's aarch64 server links.
packages=(linux-image-arm64 kmod mount hostname iproute2 procps openssh-server bash dash coreutils
          util-linux grep sed findutils tar libc-bin
          openmpi-bin libopenmpi3 gdb gdbserver python3
          libcapnp-0.9.2 libuv1 libzstd1 libstdc++6)
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
exec 9>"$dir.lock"
flock -w 1800 9 || { echo "make-image: $dir is being made by another run for over 30 minutes" >&2; exit 1; }
stamp=$dir/.mqd-image
want="arm64 bookworm ${packages[*]} $(cat "$here/make-image.sh" "$here/node-init" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "make-image: $dir is up to date" >&2
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
root=$dir/root
mirror=$("$here/../apt-mirror.sh")
echo "make-image: unpacking Debian 12's arm64 packages into $root from $mirror" >&2
include=$(IFS=,; echo "${packages[*]}")
mmdebstrap --quiet --arch=arm64 --variant=extract --include="$include" bookworm "$root" "$mirror" >&2

# Accounts: root, sshd's privilege-separation user, nobody.
cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
sshd:x:100:65534::/run/sshd:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
printf 'root:*:20000:0:99999:7:::\nsshd:*:20000:0:99999:7:::\nnobody:*:20000:0:99999:7:::\n' \
  > "$root/etc/shadow"
chmod 640 "$root/etc/shadow"
echo arm-node > "$root/etc/hostname"
printf '127.0.0.1 localhost\n10.0.2.15 arm-node\n' > "$root/etc/hosts"

# sshd: Debian's configuration as its postinst installs it, one host key, root by key only.
cp "$root/usr/share/openssh/sshd_config" "$root/etc/ssh/sshd_config"
cat > "$root/etc/ssh/sshd_config.d/mqd-arm-node.conf" <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
UseDNS no
UsePAM no
EOF
ssh-keygen -q -t ed25519 -N '' -C arm-node -f "$root/etc/ssh/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C mqd-arm-node -f "$dir/id_ed25519"
mkdir -p -m 700 "$root/root/.ssh"
cp "$dir/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
echo "[127.0.0.1]:* $(cut -d' ' -f1,2 "$root/etc/ssh/ssh_host_ed25519_key.pub")" > "$dir/known_hosts"

# mpirun and mpiexec, as openmpi-bin's postinst makes them (through update-alternatives).
ln -s mpirun.openmpi "$root/usr/bin/mpirun"
ln -s mpiexec.openmpi "$root/usr/bin/mpiexec"

# The kernel, outside the root. The modules the node never loads, and documentation, stay out
# of the initramfs (smaller, quicker to unpack).
kernel=$(basename "$root"/boot/vmlinuz-*)
version=${kernel#vmlinuz-}
cp "$root/boot/$kernel" "$dir/vmlinuz"
cp "$here/node-init" "$root/init"
chmod 755 "$root/init"
echo "make-image: packing the initramfs" >&2
(cd "$root" && find . \( -path ./boot -o -path ./usr/share/doc -o -path ./usr/share/man \
     -o -path ./usr/share/locale -o -path ./usr/share/info \
     -o \( -path "./lib/modules/$version/kernel/*" -a ! -path "*/virtio/*" -a ! -name 'virtio_net.ko' \
           -a ! -name '*failover.ko' -a ! -type d \) \) -prune -o -print |
   cpio --quiet -o -H newc > "$dir/root.cpio")
echo "$want" > "$stamp"
echo "make-image: $dir is ready ($(du -sh "$dir/root.cpio" | cut -f1) initramfs, kernel $version)" >&2
