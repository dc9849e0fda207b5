#!/usr/bin/env python3
"""The real topology (issue 18): the debugger reaches the rank over a network, not by ptrace.

Rank 0 of a live 4-rank Open MPI job of tests/e2e/pending (3N operations per rank) runs
under `gdbserver --attach`; gdb reaches it through an mqd-relay that adds the debugger link's
round trip, with the target's files local (`set sysroot /`, `file PROGRAM`, as a user with
a copy of the node's files has). Through the proxy, the shim reaches mqd-proxy-server through
a second relay with the server link's round trip. The front end runs `mqd load`, then
`mqd dump` twice (first dump, refresh), in these modes:

  native    Open MPI's DLL loaded in gdb (the reference; every proxied dump must equal it)
  cold      the proxy, first session ever (empty --state-dir)
  learned   the proxy, a fresh session after `cold` (learned look-ups and memory layout)
  node-cold the server's --node-memory in a first session ever: it reads the rank on this host
            once proved (another architecture under qemu-user cannot be proved: the callback
            path, measured as cold and learned)
  node-new  a server new to the DLL with --node-memory (empty --state-dir), the shim's learned
            look-ups answered ahead (MQD_PROXY_STATE_DIR): a new node's server for a debugger
            that used the DLL before
  node      the same after `learned` (learned look-ups on both sides)
The shim's learned look-ups live in the work directory: cold and node-cold start with none.

For each phase it prints the wall time, the debugger link's exchanges (a packet gdb sends and
its answer, counted by that link's relay: mqd-relay --exchanges-file; gdb's own remote trace
misses the packets of every command the front end runs with to_string) and, through the proxy, the server link's
round trips and bytes (the server's session counters). The table goes to
bench/RESULTS-real-topology.md.

The aarch64 node (--arm-node, tools/arm-node/): rank 0 of a 4-rank job on an aarch64 machine
with its own kernel under qemu-system-aarch64, reached through `gdbserver --attach` on the
node (the debugger's link: a Link to the node's forwarded port), the aarch64 server on the
node (the server link); the reference is the node's own gdb dumping the rank natively (no
debugger link), and the node modes prove and read the rank on the node.

usage: real_topology.py --build DIR [--sizes 10,100,1000] [--debugger-rtt 20]
                        [--server-rtt 20] [--native-max 100] [--output FILE]
                        [--arm-node BUILD/cross/aarch64 [--node-sizes 10,100,1000]]
Native dumps read the target in small pieces, each a round trip on the debugger link; above
--native-max operations per queue they are not run (marked so).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing", "python"))
sys.path.insert(0, HERE)
from bench import Build, Proxy, delta, human, round_trips, wire_bytes  # noqa
from artefacts import Artefacts  # noqa: E402
from daemon import start_daemon, stop_daemon  # noqa: E402
from failure import Failure, wait_for  # noqa: E402
from mpi_job import Job, check_against_manifests, open_mpi_dll  # noqa: E402
from ports import free_port  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cross"))
import e2e_cross as cross  # noqa: E402
from gdbserver import GdbServer  # noqa: E402
import node_job  # noqa: E402

PHASES = ("load", "first", "refresh")
MODES = ("native", "cold", "learned", "node-cold", "node-new", "node")
SERVER_OPTIONS = json.loads(os.environ.get("MQD_BENCH_SERVER_OPTIONS", "[]"))  # experiments

# Runs inside gdb: the front end's load and two dumps, each followed by the server's counters,
# with the debugger link's exchanges counted by its relay.
GDB_SCRIPT = r"""
import gdb, json, os, signal, subprocess, sys, time
cfg = json.loads(os.environ["MQD_BENCH"])
gdb.execute("source " + cfg["frontend"])
for command in cfg["before"]:
    gdb.execute(command, to_string=True)
if cfg["delay_signal"]:
    os.kill(cfg["delay_signal"], signal.SIGUSR1)   # the debugger link's delay starts now
seconds, counters, packets = [], [], []
def exchanges():
    return int(open(cfg["exchanges"]).read())
def phase(name, command):
    t, before = time.time(), exchanges()
    gdb.execute(command)
    seconds.append(time.time() - t)
    packets.append(exchanges() - before)
    if cfg["stats"]:
        out = subprocess.check_output(cfg["stats"])
        sessions = [s for s in json.loads(out) if s.get("dll")]
        counters.append(sessions[-1]["counters"] if sessions else {})
phase("load", cfg["load"])
for i, name in enumerate(("first", "refresh")):
    phase(name, "mqd dump --output %s.%d.txt" % (cfg["out"], i))
gdb.execute("mqd dump --json --output %s.dump.json" % cfg["out"])  # for checking, not timed
with open(cfg["out"] + ".json", "w") as f:
    json.dump({"seconds": seconds, "counters": counters, "packets": packets}, f)
"""


class Link:
    """An mqd-relay in front of a TCP address, adding `rtt` ms (with `after_signal`, only
    once sent SIGUSR1); `address` is HOST:PORT. `exchanges` is the file where the relay keeps
    the number of exchanges it relayed (mqd-relay --exchanges-file)."""

    def __init__(self, build, connect, rtt, work, name, after_signal=False):
        ready = os.path.join(work, name + ".ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.exchanges = os.path.join(work, name + ".exchanges")
        self.proc = start_daemon(
            [build.relay, "--listen", "tcp:127.0.0.1:0", "--connect", "tcp:" + connect,
             "--delay-ms", str(rtt / 2.0), "--ready-file", ready,
             "--exchanges-file", self.exchanges] +
            (["--delay-after-signal"] if after_signal else []),
            lambda: os.path.exists(ready), "the relay of " + name)
        self.address = open(ready).read().strip().split(":", 1)[1]

    def stop(self):
        stop_daemon(self.proc)


class LocalRank:
    """A live rank under `gdbserver --attach`, reached by gdb through a Link."""

    def __init__(self, build, pid, rtt, work):
        self.server = GdbServer("gdbserver", work, attach_pid=pid)
        self.link = Link(build, "127.0.0.1:%d" % self.server.port, rtt, work, "debugger-link")
        self.gdb = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                    "-ex", "set sysroot /", "-ex", "file " + build.pending,
                    "-ex", "target remote " + self.link.address]
        self.delay_signal = None  # the link is slow from the start

    def stop(self):
        self.link.stop()
        self.server.stop()


class Cross:
    """The other architecture: ARCH's build of tests/e2e/pending as a singleton under
    `qemu-ARCH -g` (its gdb stub, reached through a Link) and ARCH's server under qemu-user
    with ARCH's own DLL from the sysroot (tests/cross/: the same set-up as e2e-ARCH)."""

    def __init__(self, arch, cross_build, sysroot):
        self.arch = arch
        self.sysroot = sysroot
        triple = cross.TRIPLES[arch]
        self.qemu = ["qemu-" + cross.PROCESSORS[arch],
                     "-L", sysroot]
        self.dll = "/usr/lib/%s/openmpi/lib/openmpi3/libompi_dbg_msgq.so" % triple
        foreign = Artefacts(cross_build)
        self.program = foreign.require("pending")
        self.server = foreign.require("server")
        self.types = os.path.join(cross_build, "share", "mqd-proxy", "ompi-types",
                                  cross.PROCESSORS[arch], "ompi_types.o")

    def rank(self, build, ops, rtt, work):
        return EmulatedRank(self, build, ops, rtt, work)

    def proxy(self, build, state, rtt, work, extra):
        return EmulatedProxy(self, build, state, rtt, work, extra)


class EmulatedRank:
    """The cross program under qemu's gdb stub behind a Link; gdb runs it to where it has
    posted everything (mqd_e2e_parked) before the measured phases, and the link's delay
    starts there: through qemu's stub gdb follows every shared library the program loads (Open
    MPI loads dozens) with small reads, minutes at 20 ms, which a user attaching to a stopped
    job does not pay."""

    def __init__(self, cross_target, build, ops, rtt, work):
        port = free_port()
        env = dict(os.environ, OMPI_MCA_ess_singleton_isolated="1", OMPI_MCA_pml="ob1",
                   OMPI_MCA_btl="self", OMPI_MCA_btl_base_warn_component_unused="0")
        self.target = cross.Emulated(cross_target.qemu + ["-g", str(port),
                                                          cross_target.program, str(ops), work],
                                     os.path.join(work, "target.log"), env)
        wait_for(lambda: _listening(port), 60, "qemu's gdb stub")
        self.link = Link(build, "127.0.0.1:%d" % port, rtt, work, "debugger-link",
                         after_signal=True)
        self.delay_signal = self.link.proc.pid
        self.gdb = ["gdb-multiarch", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                    "-iex", "set sysroot " + cross_target.sysroot,
                    "-iex", "set auto-load safe-path /",
                    "-ex", "set architecture " + cross.GDB_ARCH[cross_target.arch],
                    "-ex", "file " + cross_target.program,
                    "-ex", "target remote " + self.link.address,
                    "-ex", "break mqd_e2e_parked", "-ex", "continue"]

    def stop(self):
        self.link.stop()
        self.target.stop()


class EmulatedProxy:
    """ARCH's server under qemu-user on TCP loopback, behind a Link for RTT > 0; the same
    attributes as bench.Proxy (endpoint, direct, stop)."""

    def __init__(self, cross_target, build, state, rtt, work, extra):
        ready = os.path.join(work, "server.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.server = cross.Emulated(cross_target.qemu + [
            cross_target.server, "--listen", "tcp:127.0.0.1:0", "--dll", cross_target.dll,
            "--ready-file", ready, "--state-dir", state] + SERVER_OPTIONS + extra,
            os.path.join(work, "server.log"))
        wait_for(lambda: os.path.exists(ready) or self.server.proc.poll() is not None, 120,
                 "the %s server" % cross_target.arch)
        self.direct = open(ready).read().strip()
        self.link = Link(build, self.direct.split(":", 1)[1], rtt, work, "server-link") \
            if rtt > 0 else None
        self.endpoint = "tcp:" + self.link.address if self.link else self.direct

    def stop(self):
        if self.link:
            self.link.stop()
        self.server.proc.send_signal(signal.SIGTERM)
        try:
            self.server.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        self.server.stop()


class NodeRank:
    """Rank 0 of the job on the aarch64 node (testing/python/node_job.py) under `gdbserver
    --attach` there, reached by this host's gdb-multiarch through a Link to the node's
    forwarded port: the debugger's link to a real node."""

    def __init__(self, job, build, rtt, work):
        job.start_gdbservers([0])
        self.link = Link(build, "127.0.0.1:%d" % job.node.port[node_job.GDBSERVER_PORT], rtt,
                         work, "debugger-link")
        self.gdb = job.remote_gdb([self.link.address])
        self.delay_signal = None  # the link is slow from the start

    def stop(self):
        self.link.stop()  # gdbserver ends with gdb's session


class NodeProxy:
    """The aarch64 server on the node, behind a Link for RTT > 0; the same attributes as
    bench.Proxy (endpoint, direct, stop), and its log's text once stopped (`log_text`)."""

    def __init__(self, job, build, state, rtt, work, extra):
        self.job = job
        self.server = job.start_server(SERVER_OPTIONS + extra, state)
        self.direct = self.server.endpoint
        self.link = Link(build, self.direct.split(":", 1)[1], rtt, work, "server-link") \
            if rtt > 0 else None
        self.endpoint = "tcp:" + self.link.address if self.link else self.direct
        self.log_text = ""

    def stop(self):
        if self.link:
            self.link.stop()
        self.job.stop_server()
        self.log_text = self.job.server_log(self.server)


def measure_node(build, cross_build, n, debugger_rtt, server_rtt):
    """Rows of one size on the aarch64 node: the node's own native dump of rank 0 (its gdb,
    the DLL loaded natively; no debugger link) and this host's through the proxy in every mode
    of MODES but native, each identical to the node's."""
    work = tempfile.mkdtemp(prefix="mqd-bench-node-")
    job = node_job.NodeJob(build.path, cross_build, 4, 3 * n)
    rows = []
    try:
        native = job.native_dump(os.path.join(work, "native"), [0])
        native["seconds"] = [0.0] + native["seconds"]  # the DLL's load: nothing to measure
        native["packets"] = ["-"] * len(PHASES)         # its gdb reads the ranks by ptrace
        rows.append(("native", native, None))
        reference = native["texts"][0]
        problems = check_against_manifests(json.loads(native["json"]), job.manifests[:1])
        if problems:
            raise Failure("the node's native dump does not show what rank 0 posted: %s"
                          % "; ".join(problems[:5]))
        shim_env = {"MQD_PROXY_TOKEN_FILE": job.token}
        for mode in MODES[1:]:
            state = "state-" + mode if mode in ("node-cold", "node-new") else "state"
            shim = dict(shim_env, MQD_PROXY_STATE_DIR=os.path.join(
                work, "shim-state-node-cold" if mode == "node-cold" else "shim-state"))
            server = NodeProxy(job, build, state, server_rtt, work,
                               ["--node-memory"] if mode.startswith("node") else [])
            try:
                load = "mqd load --server %s --vendor-dll %s %s" % (
                    server.endpoint, node_job.DLL, build.shim)
                found = run_gdb(build, NodeRank(job, build, debugger_rtt, work),
                                ["mqd types " + job.types], load, os.path.join(work, mode),
                                server.direct, shim)
            finally:
                server.stop()
            if mode.startswith("node") and \
                    "memory read on this host, from pid %d" % job.pids[0] not in server.log_text:
                raise Failure("%s: the server on the node did not prove rank 0 (see %s)"
                              % (mode, work))
            for i, text in enumerate(found["texts"]):
                if text != native["texts"][i]:
                    raise Failure("%s: dump %d at N=%d differs from the node's native one "
                                  "(see %s)" % (mode, i, n, work))
            rows.append((mode, found, found["counters"]))
    finally:
        job.stop()
    for directory in (work, job.work):  # kept when the run failed, for a look
        shutil.rmtree(directory, ignore_errors=True)
    return results("aarch64 node", n, rows, reference.count("\n      #"))


def _listening(port):
    """Whether something listens on TCP `port`, seen in /proc/net/tcp: connecting to find out
    would use up qemu's gdb stub, which takes one connection."""
    with open("/proc/net/tcp") as f:
        return any(fields[1].endswith(":%04X" % port) and fields[3] == "0A"
                   for fields in (line.split() for line in f.readlines()[1:]))


def run_gdb(build, rank, before, load, out, direct=None, env_extra=None):
    """One gdb session through `rank` (stopped afterwards), with `env_extra` in its
    environment: {seconds, counters, packets, texts}."""
    try:
        script = out + ".gdb.py"
        with open(script, "w") as f:
            f.write(GDB_SCRIPT)
        stats = [build.cli, "--server", direct, "stats", "--json"] if direct else None
        env = dict(os.environ, **(env_extra or {}))
        env["MQD_BENCH"] = json.dumps(
            {"frontend": build.frontend, "before": before, "load": load, "out": out,
             "stats": stats, "delay_signal": rank.delay_signal,
             "exchanges": rank.link.exchanges})
        result = subprocess.run(rank.gdb + ["-x", script], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, timeout=7200)
    finally:
        rank.stop()
    if result.returncode != 0 or not os.path.exists(out + ".json"):
        raise Failure("gdb failed (%d):\n%s" % (result.returncode, result.stderr[-3000:]))
    found = json.load(open(out + ".json"))
    found["texts"] = [open("%s.%d.txt" % (out, i)).read() for i in range(2)]
    found["dump"] = json.load(open(out + ".dump.json"))
    return found


def measure(build, n, debugger_rtt, server_rtt, native_max, cross_target=None):
    """Rows of one size, one per mode of MODES (native: same architecture, up to
    native_max)."""
    work = tempfile.mkdtemp(prefix="mqd-bench-real-")
    rows = []
    job = None
    try:
        if cross_target is None:
            arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
            dll = open_mpi_dll(arch)
            job = Job(build.pending, 4, 3 * n, work)
            rank = lambda mode: LocalRank(build, job.pids[0], debugger_rtt, work)  # noqa: E731
            proxy = lambda state, extra: Proxy(build, dll, state, server_rtt,  # noqa: E731
                                               work, SERVER_OPTIONS + extra)
            before, vendor = [], ""
        else:
            def rank(mode):
                os.makedirs(os.path.join(work, mode))
                return cross_target.rank(build, 3 * n, debugger_rtt, os.path.join(work, mode))
            proxy = lambda state, extra: cross_target.proxy(  # noqa: E731
                build, state, server_rtt, work, extra)
            before, vendor = ["mqd types " + cross_target.types], \
                "--vendor-dll %s " % cross_target.dll
        reference = None
        if cross_target is None and n <= native_max:
            native = run_gdb(build, rank("native"), before, "mqd load " + dll,
                             os.path.join(work, "native"))
            reference = native["texts"][0]
            rows.append(("native", native, None))
        # Under qemu-user the process on this host is qemu, whose memory and AT_RANDOM are not
        # the guest's: no proof is possible there, and the callback path is `learned`.
        for mode in MODES[1:3] if cross_target else MODES[1:]:
            # Server and shim state: the server's is new in node-cold and node-new, the
            # shim's in node-cold only.
            state = os.path.join(work, "state-" + mode if mode in ("node-cold", "node-new")
                                 else "state")
            shim = {"MQD_PROXY_STATE_DIR": os.path.join(
                work, "shim-state-node-cold" if mode == "node-cold" else "shim-state")}
            log = os.path.join(work, "server.log")
            seen = os.path.getsize(log) if os.path.exists(log) else 0  # earlier modes' lines
            server = proxy(state, ["--node-memory"] if mode.startswith("node") else [])
            try:
                load = "mqd load --server %s %s%s" % (server.endpoint, vendor, build.shim)
                found = run_gdb(build, rank(mode), before, load, os.path.join(work, mode),
                                server.direct, shim)
            finally:
                server.stop()
            if mode.startswith("node"):
                with open(log) as f:
                    f.seek(seen if os.path.getsize(log) >= seen else 0)
                    proved = "memory read on this host" in f.read()
                print("%s N=%d %s: the rank was %s" % (
                    cross_target.arch if cross_target else platform.machine(), n, mode,
                    "proved and read on this host" if proved else "not proved (callback path)"))
                if cross_target is None and not proved:
                    raise Failure("%s: the server did not prove the rank (see %s)" % (mode, work))
            if found["texts"][1] != found["texts"][0]:
                raise Failure("%s: the refresh at N=%d differs from the first dump (see %s)"
                              % (mode, n, work))
            if cross_target is None:
                reference = reference or found["texts"][0]
                if found["texts"][0] != reference:
                    raise Failure("%s dump at N=%d differs from the %s one (see %s)"
                                  % (mode, n, rows[0][0] if rows else "cold", work))
                manifests = job.manifests[:1]
            else:
                # Each emulated run is a new process with its own heap: its dump is checked
                # against what it posted; gdb reports qemu's pid for it.
                reference = found["texts"][0]
                manifests = [json.load(open(os.path.join(work, mode, "rank-0.json")))]
                manifests[0]["pid"] = found["dump"].get("pid")
            problems = check_against_manifests([found["dump"]], manifests)
            if problems:
                raise Failure("%s dump at N=%d does not show what the rank posted: %s (see %s)"
                              % (mode, n, "; ".join(problems[:5]), work))
            rows.append((mode, found, found["counters"]))
        operations = reference.count("\n      #")
    finally:
        if job is not None:
            job.stop()
    shutil.rmtree(work, ignore_errors=True)
    return results(cross_target.arch if cross_target else platform.machine(), n, rows,
                   operations)


def results(target, n, rows, operations):
    """The rows of a size, [(mode, found, counters)], as the table's records, each printed."""
    result = []
    for mode, found, counters in rows:
        previous = {}
        for i, name in enumerate(PHASES):
            d = {}
            if counters:
                d = delta(counters[i], previous)
                previous = counters[i]
            result.append({"target": target, "n": n, "ops": operations, "mode": mode,
                           "phase": name,
                           "seconds": found["seconds"][i], "packets": found["packets"][i],
                           "rts": round_trips(d) if counters else None,
                           "bytes": wire_bytes(d) if counters else None})
            print("%s N=%d %-7s %-7s %8.3f s, debugger link %5s exchanges, server link %s"
                  % (target, n, mode, name, found["seconds"][i], found["packets"][i],
                     "%d round trips, %s" % (round_trips(d), human(wire_bytes(d)))
                     if counters else "-"), flush=True)
    return result


def table(rows, native_max):
    lines = ["| target | N per queue | operations | mode | load | first dump | refresh | debugger link "
             "exchanges (load / first / refresh) | server link round trips | server link "
             "bytes |", "|---|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for r in rows:
        by.setdefault((r["target"], r["n"], r["mode"]), {})[r["phase"]] = r
    order = list(MODES)
    for (target, n, mode), p in sorted(by.items(), key=lambda kv: (kv[0][0] != platform.machine(),
                                                                   kv[0][0], kv[0][1],
                                                                   order.index(kv[0][2]))):
        ops = p["load"]["ops"]
        lines.append("| %s | %d | %d | %s | %.2f s | %.2f s | %.2f s | %s | %s | %s |" % (
            target, n, ops, mode, p["load"]["seconds"], p["first"]["seconds"], p["refresh"]["seconds"],
            " / ".join(str(p[x]["packets"]) for x in PHASES),
            " / ".join(str(p[x]["rts"]) for x in PHASES) if p["load"]["rts"] is not None
            else "-",
            " / ".join(human(p[x]["bytes"]) for x in PHASES) if p["load"]["bytes"] is not None
            else "-"))
    sizes = sorted({r["n"] for r in rows if r["target"] == platform.machine()})
    skipped = [n for n in sizes if n > native_max]
    if skipped:
        lines.append("")
        lines.append("Native not run at N = %s (above --native-max %d): the native DLL reads "
                     "the target in small pieces, each an exchange on the debugger link."
                     % (", ".join(map(str, skipped)), native_max))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--debugger-rtt", type=float, default=20)
    ap.add_argument("--server-rtt", type=float, default=20)
    ap.add_argument("--native-max", type=int, default=100)
    ap.add_argument("--arch", choices=sorted(cross.TRIPLES),
                    help="also measure a rank of ARCH under qemu-user (needs --cross-build, "
                         "--sysroot: a build with MQD_CROSS=ARCH has both under BUILD/cross)")
    ap.add_argument("--cross-build")
    ap.add_argument("--sysroot")
    ap.add_argument("--cross-sizes", default="100")
    ap.add_argument("--arm-node", metavar="CROSS_BUILD",
                    help="also measure rank 0 of a job on the aarch64 node (tools/arm-node/), "
                         "with the programs of CROSS_BUILD (BUILD/cross/aarch64), against the "
                         "node's own native dump")
    ap.add_argument("--node-sizes", default="10,100,1000")
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS-real-topology.md"))
    args = ap.parse_args()
    build = Build(args.build)
    cross_target = None
    if args.arch:
        if not (args.cross_build and args.sysroot):
            ap.error("--arch needs --cross-build and --sysroot")
        cross_target = Cross(args.arch, args.cross_build, args.sysroot)
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        rows += measure(build, n, args.debugger_rtt, args.server_rtt, args.native_max)
    if cross_target:
        for n in [int(s) for s in args.cross_sizes.split(",") if s]:
            rows += measure(build, n, args.debugger_rtt, args.server_rtt, args.native_max,
                            cross_target)
    if args.arm_node:
        for n in [int(x) for x in args.node_sizes.split(",") if x]:
            rows += measure_node(build, args.arm_node, n, args.debugger_rtt, args.server_rtt)
    text = table(rows, args.native_max)
    print(text)
    command = ("python3 bench/real_topology.py --build BUILD --sizes %s --debugger-rtt %g "
               "--server-rtt %g --native-max %d" % (args.sizes, args.debugger_rtt,
                                                    args.server_rtt, args.native_max))
    if cross_target:
        command += (" --arch %s --cross-build BUILD/cross/%s --sysroot BUILD/cross/%s "
                    "--cross-sizes %s" % (args.arch, args.arch, os.path.basename(
                        args.sysroot.rstrip("/")), args.cross_sizes))
    if args.arm_node:
        command += " --arm-node BUILD/cross/aarch64 --node-sizes %s" % args.node_sizes
    with open(args.output, "w") as f:
        f.write("# The real topology: gdb through gdbserver, the shim through the server link\n\n"
                "`%s`, %s, %s, %d cores.\n\n"
                "Same architecture: rank 0 of a 4-rank Open MPI job, which gdb reaches through "
                "`gdbserver --attach` behind a relay with a %g ms round trip; the shim reaches "
                "the server through a relay with %g ms. Another architecture: the program as a "
                "singleton under `qemu-ARCH -g` (its gdb stub behind the first relay) and ARCH's "
                "server under qemu-user behind the second: there is no native reference, since "
                "gdb cannot load ARCH's DLL. Every proxied dump is identical to the native one, "
                "or to the first proxied one. Debugger link exchanges are counted by its relay "
                "(a packet gdb sent to gdbserver or the stub, and its answer). Modes: native (the DLL in gdb), cold (first session "
                "ever, on both sides), learned (a later session), node-cold and node (the same "
                "with the server's --node-memory, which reads the proved rank on this host; not "
                "under qemu-user, where no proof is possible), node-new (a server new to the DLL, "
                "with --node-memory, for a shim that kept its learned look-ups: a new node).\n\n"
                "%s\n"
                % (command, datetime.date.today().isoformat(), platform.machine(),
                   os.cpu_count(), args.debugger_rtt, args.server_rtt, text))
    print("written to " + args.output)


if __name__ == "__main__":
    sys.exit(main())
