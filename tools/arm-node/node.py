#!/usr/bin/env python3
"""An aarch64 node of its own: Debian 12's arm64 kernel and packages under qemu-system-aarch64
(tools/arm-node/make-image.sh makes the image), reached from this host by ssh and by the TCP
ports the caller forwards to it. The node's processes are aarch64 processes of an aarch64
kernel: its gdb and gdbserver ptrace them, and a server on it reads their memory as on a real
ARM node. qemu's TCG emulates the CPU on this host's cores, so the node is slower than real
hardware: measure against its own native runs.

    from node import Node
    with Node(image, forwards=[7777, 2345]) as node:   # boots, waits for sshd
        node.run("uname -m")                           # a command over ssh: CompletedProcess
        node.put({"/host/file": "/opt/file"})         # files into the node (tar over ssh)
        node.port[7777]                               # the host's port for the node's 7777
    # qemu ended: nothing is left of the node but the log given (if any)

From a shell (boots the node, makes the image first if needed, runs COMMAND in it, shuts it
down; exits with COMMAND's status):

    tools/arm-node/node.py [--image DIR] [--put LOCAL:REMOTE]... [--forward PORT]... -- COMMAND

Tunables (environment): MQD_ARM_NODE_IMAGE (the image directory, default
${XDG_CACHE_HOME:-~/.cache}/mqd-proxy/arm-node/bookworm-arm64), MQD_ARM_NODE_CPUS (default 2),
MQD_ARM_NODE_MEMORY (default 4G), MQD_ARM_NODE_BOOT_TIMEOUT (seconds, default 600: the bound
for a loaded machine; an idle 2-core host boots it in about 10 s).
"""
import argparse
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
READY = "mqd-arm-node: ready"


def default_image():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("MQD_ARM_NODE_IMAGE",
                          os.path.join(cache, "mqd-proxy", "arm-node", "bookworm-arm64"))


def make_image(image):
    """Makes or checks the image (make-image.sh: a no-op when it is up to date)."""
    subprocess.run([os.path.join(HERE, "make-image.sh"), image], check=True)


class NodeError(Exception):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """A booted node (see the module's docstring). `port[P]` is the host's port on 127.0.0.1
    that reaches the node's TCP port P; `root` is the image's unpacked tree (the node's files,
    for gdb's sysroot); `console` the file with the node's console."""

    def __init__(self, image=None, forwards=(), console=None, cpus=None, memory=None):
        self.image = image or default_image()
        self.root = os.path.join(self.image, "root")
        self._work = tempfile.mkdtemp(prefix="mqd-arm-node-")
        self.console = console or os.path.join(self._work, "console.log")
        self.port = {p: _free_port() for p in [22] + list(forwards)}
        forward = ",".join("hostfwd=tcp:127.0.0.1:%d-:%d" % (host, guest)
                           for guest, host in self.port.items())
        cpus = cpus or os.environ.get("MQD_ARM_NODE_CPUS", "2")
        memory = memory or os.environ.get("MQD_ARM_NODE_MEMORY", "4G")
        argv = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-smp", str(cpus),
                "-m", memory, "-kernel", os.path.join(self.image, "vmlinuz"),
                "-initrd", os.path.join(self.image, "root.cpio"),
                "-append", "console=ttyAMA0 rdinit=/init panic=-1 quiet",
                "-nographic", "-no-reboot", "-monitor", "none", "-serial", "file:" + self.console,
                "-netdev", "user,id=net0," + forward,
                # no option ROM: the node boots its kernel directly, never from the network,
                # and the ROM (Debian's ipxe-qemu) is only a recommendation of qemu's
                "-device", "virtio-net-pci,netdev=net0,romfile="]
        self._ssh = ["ssh", "-i", os.path.join(self.image, "id_ed25519"),
                     "-o", "UserKnownHostsFile=" + os.path.join(self.image, "known_hosts"),
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                     "-o", "ControlMaster=auto", "-o",
                     "ControlPath=" + os.path.join(self._work, "ssh-%C"),
                     "-o", "ControlPersist=yes", "-o", "ServerAliveInterval=10",
                     "-p", str(self.port[22]), "root@127.0.0.1"]
        self.qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self._work, "qemu.err"), "w"),
                                     start_new_session=True)
        self.boot_seconds = None
        try:
            self._wait_ready(float(os.environ.get("MQD_ARM_NODE_BOOT_TIMEOUT", "600")))
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout):
        started = time.time()
        while True:
            if self.qemu.poll() is not None:
                raise NodeError("qemu-system-aarch64 ended (%d) before the node was ready: %s\n%s"
                                % (self.qemu.returncode, self._tail(
                                    os.path.join(self._work, "qemu.err")),
                                   self._tail(self.console)))
            text = open(self.console, errors="replace").read() \
                if os.path.exists(self.console) else ""
            if READY in text:
                break
            if "sshd did not start" in text:
                raise NodeError("the node's sshd did not start:\n" + self._tail(self.console))
            if time.time() - started > timeout:
                raise NodeError("the node was not ready after %d s:\n%s"
                                % (timeout, self._tail(self.console)))
            time.sleep(0.2)
        # sshd is listening; the first connection becomes the master of the others.
        self.run("true")
        self.boot_seconds = time.time() - started

    @staticmethod
    def _tail(path, lines=30):
        try:
            return "".join(open(path, errors="replace").readlines()[-lines:])
        except OSError:
            return ""

    def ssh(self, command):
        """The argv that runs `command` (a shell command line) on the node."""
        return self._ssh + ["--", command]

    def run(self, command, check=True, timeout=1800, **kwargs):
        """Runs `command` on the node; its output captured as text (CompletedProcess)."""
        result = subprocess.run(self.ssh(command), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                timeout=timeout, **kwargs)
        if check and result.returncode != 0:
            raise NodeError("on the node, `%s` failed (%d):\n%s%s" % (
                command, result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
        return result

    def put(self, files):
        """Copies {host path: node path} (files, kept executable or not) into the node."""
        script = []
        with tempfile.TemporaryDirectory() as staging:
            for i, (local, remote) in enumerate(sorted(files.items())):
                name = "%d" % i
                os.symlink(os.path.abspath(local), os.path.join(staging, name))
                script.append("mkdir -p %s && mv -T %s %s" % (
                    shlex.quote(os.path.dirname(remote) or "/"), name, shlex.quote(remote)))
            tar = subprocess.Popen(["tar", "-C", staging, "-chf", "-"] +
                                   [str(i) for i in range(len(files))], stdout=subprocess.PIPE)
            staged = "d=$(mktemp -d) && cd $d && tar -xf - && %s && rm -rf $d" % " && ".join(
                script)
            result = subprocess.run(self.ssh(staged), stdin=tar.stdout, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, timeout=1800)
            tar.stdout.close()
            tar.wait()
        if result.returncode != 0 or tar.returncode != 0:
            raise NodeError("copying %s into the node failed:\n%s" % (
                ", ".join(sorted(files)), result.stderr[-3000:]))

    def get(self, remote):
        """The bytes of the node's file `remote`."""
        result = subprocess.run(self.ssh("cat " + shlex.quote(remote)), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        if result.returncode != 0:
            raise NodeError("reading %s from the node failed: %s" % (remote, result.stderr))
        return result.stdout

    def stop(self):
        """Powers the node off (qemu ends) and removes what ran it; a node that does not power
        off in 20 s has its qemu killed. Idempotent."""
        if self.qemu.poll() is None:
            subprocess.run(self.ssh("echo o > /proc/sysrq-trigger"), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            try:
                self.qemu.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.qemu.pid, signal.SIGKILL)
                self.qemu.wait()
        subprocess.run(self._ssh[:-1] + ["-O", "exit", "root@127.0.0.1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.path.exists(self._work) and not self.console.startswith(self._work):
            subprocess.run(["rm", "-rf", self._work])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        if os.path.exists(self._work):
            subprocess.run(["rm", "-rf", self._work])


def main():
    ap = argparse.ArgumentParser(
        description="Boot the aarch64 node (making its image first if needed), run COMMAND in "
        "it over ssh, shut it down; exits with COMMAND's status.",
        epilog="Environment: MQD_ARM_NODE_IMAGE (the default --image), MQD_ARM_NODE_CPUS "
        "(default 2), MQD_ARM_NODE_MEMORY (default 4G), MQD_ARM_NODE_BOOT_TIMEOUT (seconds, "
        "default 600).")
    ap.add_argument("--image", default=default_image(),
                    help="the image directory, made by make-image.sh if needed (default %(default)s)")
    ap.add_argument("--put", action="append", default=[], metavar="LOCAL:REMOTE",
                    help="copy a host file into the node first")
    ap.add_argument("--forward", action="append", type=int, default=[], metavar="PORT",
                    help="forward a host port to the node's TCP PORT (printed)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no COMMAND")
    make_image(args.image)
    with Node(args.image, args.forward) as node:
        print("node.py: node ready after %.1f s; ssh on 127.0.0.1:%d%s" % (
            node.boot_seconds, node.port[22], "".join(
                ", its port %d on 127.0.0.1:%d" % (p, node.port[p]) for p in args.forward)),
            file=sys.stderr)
        if args.put:
            node.put(dict(p.split(":", 1) for p in args.put))
        result = subprocess.run(node.ssh(" ".join(shlex.quote(c) for c in command)),
                                stdin=subprocess.DEVNULL)
        return result.returncode


if __name__ == "__main__":
    sys.exit(main())
