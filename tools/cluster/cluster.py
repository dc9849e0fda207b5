#!/usr/bin/env python3
"""A Slurm cluster of N nodes on this one machine, for the tests and the bench: each node is a
set of Linux namespaces (network, host name, process ids, mounts with its own /proc, /tmp and
/dev/shm) running its own `slurmd`; this host is the login node, running `slurmctld` and
`munged`, joined to the nodes by a bridge. A job's ranks on different nodes have their own host
names, addresses and process ids (the same pid may run on two nodes), and talk over TCP as on a
real cluster; a process on the login node sees them all, as root, but the tools reach them the
way a user's do: through Slurm (srun, sattach, squeue) and the nodes' addresses.

    from cluster import Cluster
    with Cluster(directory, nodes=4) as c:          # up: daemons started, every node idle
        subprocess.run(["srun", "-N4", "hostname"], env=c.env())
        c.address("node2")                          # "10.213.0.12"
        c.run_on("node2", ["ps", "-e"])             # a command inside node2's namespaces
    # down: every process of the cluster ended, namespaces and links removed

From a shell (`up` stays in the foreground until interrupted, then takes the cluster down):

    tools/cluster/cluster.py up --dir DIR [--nodes N] [--cpus C]
    SLURM_CONF=DIR/slurm.conf srun -N 4 hostname
    tools/cluster/cluster.py clean      # removes what a killed run left (links, namespaces)

Needs root, `ip`, `unshare`, `nsenter`, munge and Slurm's `slurmctld`, `slurmd` and client
(tools/install-deps.sh --test installs them). One cluster runs at a time: its names (the
bridge `mqdc0`, the namespaces `mqdc-nodeK`, the subnet 10.213.0.0/24, slurmctld's port) are
fixed, and `up` refuses to start beside another one's.

Tunables: the arguments above; MQD_CLUSTER_START_TIMEOUT (seconds for every node to come up,
default 120: the bound for a loaded machine, an idle one takes about 3 s).
"""
import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time

PREFIX = "mqdc"
BRIDGE = PREFIX + "0"
SUBNET = "10.213.0"
LOGIN_ADDRESS = SUBNET + ".1"
CTLD_PORT = 16817
SLURMD_PORT = 16818
# slurm.conf's %n: each node's spool, pid and log file in a directory of its own.
NODE_DIR = "nodes/%n"


class ClusterError(Exception):
    pass


def node_name(i):
    return "node%d" % i


def node_address(i):
    return "%s.%d" % (SUBNET, 10 + i)


def _run(argv, check=True, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if check and p.returncode != 0:
        raise ClusterError("%s failed (%d): %s" % (" ".join(argv), p.returncode, p.stdout.strip()))
    return p


def _links():
    out = _run(["ip", "-o", "link", "show"]).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]


def _namespaces():
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()]


def leftovers():
    """What a cluster left on this machine: its links and network namespaces (names)."""
    return ([l for l in _links() if l.startswith(PREFIX)] +
            [n for n in _namespaces() if n.startswith(PREFIX + "-")])


def clean():
    """Removes what a killed cluster left: every process in one of its node namespaces, the
    namespaces, the bridge and its links."""
    for ns in [n for n in _namespaces() if n.startswith(PREFIX + "-")]:
        pids = _run(["ip", "netns", "pids", ns], check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        _run(["ip", "netns", "delete", ns], check=False)
    for link in [l for l in _links() if l.startswith(PREFIX)]:
        _run(["ip", "link", "delete", link], check=False)


def _slurm_conf(directory, nodes, cpus):
    """The cluster's slurm.conf: munge authentication, no cgroups (process groups track a step's
    processes), every node with `cpus` CPUs whatever the machine has, and one partition whose
    CPUs may be shared by up to 8 tasks each (a test's ranks and its tools' steps together)."""
    d = directory
    lines = [
        "ClusterName=mqdc",
        "SlurmctldHost=%s(%s)" % (os.uname().nodename, LOGIN_ADDRESS),
        "SlurmctldPort=%d" % CTLD_PORT,
        "SlurmdPort=%d" % SLURMD_PORT,
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "AuthInfo=socket=%s/munge/munge.socket" % d,
        "StateSaveLocation=%s/ctld" % d,
        "SlurmctldPidFile=%s/ctld/slurmctld.pid" % d,
        "SlurmctldLogFile=%s/ctld/slurmctld.log" % d,
        "SlurmdSpoolDir=%s/%s/spool" % (d, NODE_DIR),
        "SlurmdPidFile=%s/%s/slurmd.pid" % (d, NODE_DIR),
        "SlurmdLogFile=%s/%s/slurmd.log" % (d, NODE_DIR),
        # the nodes report what is configured here, not the machine's 2 cores
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "MailProg=/bin/true",
        # a machine running a job of hundreds of ranks answers late; 10 s by default
        "MessageTimeout=60",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=60",
        "InactiveLimit=0",
        "KillWait=5",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    for i in range(1, nodes + 1):
        lines.append("NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=%d State=UNKNOWN" % (
            node_name(i), node_address(i), node_name(i), cpus))
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP "
                 "OverSubscribe=FORCE:8")
    return "\n".join(lines) + "\n"


def _slurm_version():
    """(major, minor) of the Slurm installed (`slurmd -V`: "slurm-wlm 22.05.8")."""
    words = _run(["slurmd", "-V"]).stdout.split()
    try:
        major, minor = words[-1].split(".")[:2]
        return int(major), int(minor)
    except (IndexError, ValueError):
        raise ClusterError("cannot tell Slurm's version from `slurmd -V`: %r" % " ".join(words))


def _hosts(nodes):
    lines = ["127.0.0.1 localhost", "%s %s login" % (LOGIN_ADDRESS, os.uname().nodename)]
    lines += ["%s %s" % (node_address(i), node_name(i)) for i in range(1, nodes + 1)]
    return "\n".join(lines) + "\n"


class Cluster:
    """The cluster of the module's docstring. `directory` holds its configuration, state and
    logs (slurm.conf, ctld/slurmctld.log, nodes/NAME/slurmd.log, munge/munged.log); it is made
    if missing and kept afterwards, for the logs."""

    def __init__(self, directory, nodes=4, cpus=8, log=sys.stderr):
        if nodes < 1 or nodes > 200:
            raise ClusterError("a cluster has 1 to 200 nodes, not %d" % nodes)
        self.directory = os.path.abspath(directory)
        self.nodes = [node_name(i) for i in range(1, nodes + 1)]
        self.cpus = cpus
        self._log = log
        self._procs = {}     # what: Popen (munged, slurmctld, nodeK)
        self._up = False

    # -- what a user of the cluster needs ------------------------------------------------
    def env(self, base=None):
        """An environment for Slurm's commands (srun, sbatch, squeue, scontrol) on the login
        node: `base` (default: this process's) with this cluster's SLURM_CONF and no other
        SLURM_* variable (a caller inside a real Slurm job has its job's)."""
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = self.conf
        return env

    @property
    def conf(self):
        return os.path.join(self.directory, "slurm.conf")

    @property
    def subnet(self):
        """The nodes' network, as ADDRESS/BITS."""
        return SUBNET + ".0/24"

    def address(self, node):
        return node_address(self.nodes.index(node) + 1)

    def init_pid(self, node):
        """The host's pid of the node's first process (pid 1 in the node): the one child of
        the `unshare` that made its namespaces."""
        unshare = self._procs[node].pid
        with open("/proc/%d/task/%d/children" % (unshare, unshare)) as f:
            return int(f.read().split()[0])

    def enter(self, node):
        """The command that runs what follows it inside the node's namespaces, as its root, in
        the node's root directory: entering a mount namespace puts a process at that
        namespace's own root, which is not the node's when the cluster runs in a chroot (the
        Debian 13 root of tests/debian13/), whose /proc and programs are its own."""
        return ["nsenter", "-t", str(self.init_pid(node)), "-a", "-r", "-w"]

    def run_on(self, node, argv, **kw):
        """Runs argv inside the node's namespaces (enter()); subprocess.run's keywords."""
        return subprocess.run(self.enter(node) + list(argv), **kw)

    # -- up and down ---------------------------------------------------------------------
    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()

    def up(self):
        if os.geteuid() != 0:
            raise ClusterError("a simulated cluster needs root (namespaces, links, slurmd)")
        left = leftovers()
        if left:
            raise ClusterError("another cluster is up or a killed one left %s: take it down, "
                               "or run tools/cluster/cluster.py clean" % ", ".join(left))
        self._up = True
        d = self.directory
        for sub in ["ctld", "munge"] + ["nodes/%s/spool" % n for n in self.nodes]:
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(os.path.join(d, "munge"), 0o700)
        with open(self.conf, "w") as f:
            f.write(_slurm_conf(d, len(self.nodes), self.cpus))
        if _slurm_version() >= (23, 11):  # node_init says why
            with open(os.path.join(d, "cgroup.conf"), "w") as f:
                f.write("CgroupPlugin=disabled\n")
        with open(os.path.join(d, "hosts"), "w") as f:
            f.write(_hosts(len(self.nodes)))
        self._start_munge()
        self._network()
        self._start(["slurmctld", "-D", "-i", "-f", self.conf], "slurmctld",
                    os.path.join(d, "ctld", "stdout"))
        for i, node in enumerate(self.nodes, 1):
            self._start_node(i, node)
        self._wait_idle()

    def down(self):
        """Ends every process of the cluster (a node's init ends its whole pid namespace),
        removes its links and namespaces; idempotent."""
        if not self._up:
            return
        self._up = False
        for what in list(self._procs):
            if what.startswith("node"):
                self._stop(what, signal.SIGKILL)
        for what in ("slurmctld", "munged"):
            if what in self._procs:
                self._stop(what, signal.SIGTERM)
        clean()

    # -- the pieces ----------------------------------------------------------------------
    def _start(self, argv, what, output, **kw):
        with open(output, "ab") as out:
            self._procs[what] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL, **kw)

    def _stop(self, what, sig):
        proc = self._procs.pop(what)
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _start_munge(self):
        m = os.path.join(self.directory, "munge")
        key = os.path.join(m, "munge.key")
        if not os.path.exists(key):
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            os.write(fd, secrets.token_bytes(1024))
            os.close(fd)
        socket = os.path.join(m, "munge.socket")
        # --force: munged runs as root here, with its files in the cluster's directory
        self._start(["munged", "-F", "--force", "--key-file=" + key, "--socket=" + socket,
                     "--pid-file=" + os.path.join(m, "munged.pid"),
                     "--log-file=" + os.path.join(m, "munged.log"),
                     "--seed-file=" + os.path.join(m, "munged.seed")], "munged",
                    os.path.join(m, "stdout"))
        self._wait(lambda: os.path.exists(socket), "munged", "munge/munged.log")

    def _network(self):
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", LOGIN_ADDRESS + "/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        for i in range(1, len(self.nodes) + 1):
            ns, host_end, node_end = "%s-%s" % (PREFIX, node_name(i)), "%s%dh" % (PREFIX, i), \
                "%s%dn" % (PREFIX, i)
            _run(["ip", "netns", "add", ns])
            _run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end])
            _run(["ip", "link", "set", node_end, "netns", ns])
            _run(["ip", "link", "set", host_end, "master", BRIDGE])
            _run(["ip", "link", "set", host_end, "up"])
            inside = ["ip", "netns", "exec", ns]
            _run(inside + ["ip", "link", "set", node_end, "name", "eth0"])
            _run(inside + ["ip", "addr", "add", node_address(i) + "/24", "dev", "eth0"])
            _run(inside + ["ip", "link", "set", "eth0", "up"])
            _run(inside + ["ip", "link", "set", "lo", "up"])

    def _start_node(self, i, node):
        # unshare --kill-child: the node's pid 1, and with it every process of the node, dies
        # with the unshare this object holds, whoever kills it.
        # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup file systems
        # slurmd looks at as it starts.
        argv = ["nsenter", "--net=/run/netns/%s-%s" % (PREFIX, node),
                "unshare", "--uts", "--pid", "--mount", "--fork", "--mount-proc",
                "--kill-child", sys.executable, os.path.abspath(__file__), "node-init",
                "--dir", self.directory, "--node", node]
        self._start(argv, node, os.path.join(self.directory, "nodes", node, "stdout"))

    def _wait(self, ready, what, log):
        limit = float(os.environ.get("MQD_CLUSTER_START_TIMEOUT", "120"))
        deadline = time.time() + limit
        while time.time() < deadline:
            dead = [w for w, p in self._procs.items() if p.poll() is not None]
            if dead:
                raise ClusterError("%s ended while the cluster came up (see %s)" % (
                    ", ".join(dead), os.path.join(self.directory, log)))
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError("%s not ready after %d s (see %s)" % (
            what, limit, os.path.join(self.directory, log)))

    def _wait_idle(self):
        def idle():
            p = subprocess.run(["sinfo", "-N", "-h", "-o", "%N %T"], env=self.env(),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            states = dict(line.split() for line in p.stdout.splitlines() if line.strip())
            return p.returncode == 0 and all(states.get(n) == "idle" for n in self.nodes)
        self._wait(idle, "every node idle", "nodes/*/slurmd.log and ctld/slurmctld.log")


def node_init(directory, node):
    """A node's pid 1, inside its namespaces: names the host, gives it its own /tmp, /dev/shm
    and /etc/hosts, runs slurmd, reaps every orphan, and ends when slurmd does (which ends the
    node's every process)."""
    subprocess.run(["hostname", node], check=True)
    for where in ("/tmp", "/dev/shm"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", where], check=True)
    # cgroups of the node's own, empty: the cluster tracks a step's processes by process
    # group, and no slurmd may touch the machine's cgroups (v1 or v2), which every node would
    # share. Slurm 22.05, which cannot be told to leave cgroups alone, finds a v1 layout with
    # one named hierarchy, of this node alone and without controllers; later ones are told
    # (cgroup.conf).
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/sys/fs/cgroup"],
                   check=True)
    os.mkdir("/sys/fs/cgroup/systemd")
    subprocess.run(["mount", "-t", "cgroup", "-o", "none,name=%s-%s" % (PREFIX, node), "cgroup",
                    "/sys/fs/cgroup/systemd"], check=True)
    subprocess.run(["mount", "--bind", os.path.join(directory, "hosts"), "/etc/hosts"],
                   check=True)
    slurmd = subprocess.Popen(["slurmd", "-D", "-N", node, "-f",
                               os.path.join(directory, "slurm.conf")])

    def forward(sig, _frame):
        slurmd.send_signal(sig)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while True:
        pid, status = os.wait()
        if pid == slurmd.pid:
            sys.exit(os.waitstatus_to_exitcode(status) & 0xff)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring a cluster up; take it down at Ctrl-C or SIGTERM")
    up.add_argument("--dir", required=True)
    up.add_argument("--nodes", type=int, default=4)
    up.add_argument("--cpus", type=int, default=8)
    sub.add_parser("clean", help="remove what a killed cluster left")
    init = sub.add_parser("node-init", help=argparse.SUPPRESS)
    init.add_argument("--dir", required=True)
    init.add_argument("--node", required=True)
    args = parser.parse_args()
    if args.command == "node-init":
        return node_init(args.dir, args.node)
    if args.command == "clean":
        clean()
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # (A shell starts a background job with SIGINT ignored: `kill -INT` must still take it down.)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with Cluster(args.dir, args.nodes, args.cpus) as c:
            print("cluster up: %d nodes; SLURM_CONF=%s" % (len(c.nodes), c.conf), flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except ClusterError as e:
        print("cluster: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
