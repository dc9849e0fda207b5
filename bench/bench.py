#!/usr/bin/env python3
"""Round-trip economy benchmark: a remote dump, cold, learned and repeated, against native.

Three suites, each for N = 10, 100, 1000 pending operations per queue:

  openmpi    rank 0 of a live 4-rank Open MPI job (tests/e2e/pending: 3N operations per rank,
             on WORLD, a dup, a split and a named communicator), dumped by gdb with the mqd
             front end; the time is that of `mqd dump` inside gdb.
  mpich      the same under MPICH's Hydra, with MPICH's own DLL (a build with MQD_TESTS_MPICH).
  synthetic  a synthetic rank in the debugger harness (bench/mqd-bench-dump: five
             communicators, 15N operations) with the test DLL: pure proxy overhead, no gdb.

and in these modes:

  native    the vendor DLL loaded in the debugger (the reference)
  naive     the proxy with every optimisation off (MQD_PROXY_CACHE=off, no compression)
  cold      the proxy fully optimised, first session ever (empty --state-dir)
  learned   the proxy fully optimised, a fresh session after `cold` (learned look-ups, memory)
  repeat    the proxy fully optimised, a second refresh in the `cold` session

at injected RTT 0 (unix socket), 1 and 20 ms (mqd-relay on TCP loopback; compression is then
on, as by default for TCP). Round trips and bytes come from the server's session counters
(`mqd-proxy stats`). Every proxied Open MPI or MPICH dump is compared byte for byte with the
native one; every synthetic dump must see all the target's operations. It prints one table per
suite (wall time, round trips, bytes on the wire, ratio to native) and writes them, with the
machine and date, to bench/RESULTS.md.

usage: bench.py --build DIR [--suites openmpi,mpich,synthetic] [--sizes 10,100,1000] [--rtts 0,1,20]
                [--naive-max-rtt MS] [--output FILE]
The naive mode is measured up to --naive-max-rtt (default 1 ms); above, its time is
extrapolated from its measured round trips (marked so in the table).
MQD_BENCH_DEBUG=1 prints each mode's counters and the server's trace log.
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
from artefacts import Artefacts  # noqa: E402
from failure import wait_for  # noqa: E402
from mpi_job import Job, MpichJob, open_mpi_dll  # noqa: E402

DEBUG = bool(os.environ.get("MQD_BENCH_DEBUG"))

# Runs inside gdb: loads the front end, dumps `dumps` times, reading the server's counters
# around each dump.
GDB_SCRIPT = r"""
import gdb, json, os, subprocess, time
cfg = json.loads(os.environ["MQD_BENCH"])
gdb.execute("source " + cfg["frontend"])
gdb.execute(cfg["load"], to_string=True)
results = []
for i in range(cfg["dumps"]):
    t = time.time()
    gdb.execute("mqd dump --output %s.%d.txt" % (cfg["out"], i))
    elapsed = time.time() - t
    subprocess.run(cfg["between"], check=True)
    results.append(elapsed)
with open(cfg["out"] + ".json", "w") as f:
    json.dump(results, f)
"""


class Build:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        built = Artefacts(self.path)
        self.artefacts = built  # for what only some suites need
        self.frontend = built.require("frontend")
        self.shim = built.require("shim")
        self.server = built.require("server")
        self.relay = built.require("relay")
        self.cli = built.require("cli")
        self.pending = built.require("pending")
        self.dumper = built.require("bench_dump")
        self.testdll = built.require("testdll_l3")


class Proxy:
    """A server (with its learned-state directory) and, for RTT > 0, a relay in front of it."""

    def __init__(self, build, dll, state, rtt, work, options=(), shim_state=None,
                 bandwidth=None):
        # The shim's learned look-ups (MQD_PROXY_STATE_DIR, proxy_env) live beside the
        # server's --state-dir unless told otherwise, so that forget(state) makes a first
        # session ever on both sides.
        self.shim_state = shim_state or state + "-shim"
        ready = os.path.join(work, "server.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.log = os.path.join(work, "server.log")
        self.proc = subprocess.Popen(
            [build.server, "--listen", "unix:" + os.path.join(work, "s.sock"), "--dll", dll,
             "--state-dir", state, "--ready-file", ready, "--log-file", self.log] +
            list(options) + (["--log-level", "trace"] if DEBUG else []))
        wait_for(lambda: os.path.exists(ready), 20, "the server")
        self.direct = open(ready).read().strip()
        self.relay = None
        self.endpoint = self.direct
        if rtt > 0 or bandwidth:
            # A relay only speaks TCP to its server: a second listener would need a second
            # server, so the relay connects to the unix socket and listens on TCP. `bandwidth`:
            # bytes per second each way, at most.
            rready = os.path.join(work, "relay.ready")
            if os.path.exists(rready):
                os.unlink(rready)
            self.relay = subprocess.Popen(
                [build.relay, "--listen", "tcp:127.0.0.1:0", "--connect", self.direct,
                 "--delay-ms", str(rtt / 2.0), "--ready-file", rready] +
                (["--bandwidth", str(int(bandwidth))] if bandwidth else []))
            wait_for(lambda: os.path.exists(rready), 20, "the relay")
            self.endpoint = open(rready).read().strip()

    def stop(self):
        if self.relay:
            self.relay.send_signal(signal.SIGTERM)
            self.relay.wait(timeout=20)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        if DEBUG:
            print(open(self.log).read())


def session_counters(build, direct):
    """The counters of the server's most recent session with a DLL."""
    out = subprocess.check_output([build.cli, "--server", direct, "stats", "--json"])
    sessions = [s for s in json.loads(out) if s.get("dll")]
    return sessions[-1]["counters"] if sessions else {}


def delta(after, before):
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


def round_trips(c):
    # The shim's waits for set-ups answered from records are one round trip at most each; the
    # server counts those set-ups as calls behind.
    return c.get("rt.calls", 0) + c.get("rt.callbacks", 0) + c.get("client.recalled_waits", 0)


def wire_bytes(c):
    return c.get("wire.bytes_in", 0) + c.get("wire.bytes_out", 0)


def human(n):
    if n < 10 * 1024:
        return "%d B" % n
    if n < 10 * 1024 * 1024:
        return "%.1f KiB" % (n / 1024)
    return "%.1f MiB" % (n / 1024 / 1024)


def forget(state):
    """A first session ever: no learned state on the server's side or the shim's."""
    for path in (state, state + "-shim"):
        if os.path.exists(path):
            shutil.rmtree(path)


def forget_job(state):
    """A job never seen with a DLL already known: the look-ups stay learned on both sides, what
    the processes read (blocks-*) and their set-ups (setups-*) are forgotten."""
    for path in (state, state + "-shim"):
        if os.path.isdir(path):
            for name in os.listdir(path):
                if name.startswith(("blocks-", "setups-")):
                    os.unlink(os.path.join(path, name))


def proxy_env(mode, proxy):
    """The shim's settings for a mode; its learned look-ups go to proxy.shim_state."""
    env = {"MQD_PROXY_STATE_DIR": proxy.shim_state}
    if mode == "naive":
        env.update({"MQD_PROXY_CACHE": "off", "MQD_PROXY_COMPRESS": "off"})
    if DEBUG:
        env["MQD_PROXY_LOG"] = "debug"
    return env


# ---- the Open MPI suite ----

class GdbRankSuite:
    """Rank 0 of a live 4-rank job of tests/e2e/pending (3N operations per rank), dumped by
    gdb with the front end: natively with `dll`, then through the proxy."""

    def __init__(self, build, work, dll, job):
        self.build = build
        self.work = work
        self.dll = dll
        self.job = job
        self.reference = None
        self.operations = 0

    def _gdb(self, load, out, dumps, direct, env_extra):
        script = out + ".gdb.py"
        with open(script, "w") as f:
            f.write(GDB_SCRIPT)
        between = os.path.join(self.work, "between.sh")
        marks = out + ".marks"
        with open(between, "w") as f:
            # Records the server's counters after each dump (nothing to record natively).
            f.write("#!/bin/sh\n")
            if direct:
                f.write("%s --server %s stats --json >> %s\necho '\x1e' >> %s\n"
                        % (self.build.cli, direct, marks, marks))
        os.chmod(between, 0o755)
        env = dict(os.environ)
        env.update(env_extra)
        env["MQD_BENCH"] = json.dumps({"frontend": self.build.frontend, "load": load, "out": out,
                                       "dumps": dumps, "between": [between]})
        subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                        "-p", str(self.job.pids[0]), "-x", script], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=7200)
        seconds = json.load(open(out + ".json"))
        counters = []
        if direct:
            for chunk in open(marks).read().split("\x1e")[:-1]:
                sessions = [s for s in json.loads(chunk) if s.get("dll")]
                counters.append(sessions[-1]["counters"] if sessions else {})
        texts = [open("%s.%d.txt" % (out, i)).read() for i in range(dumps)]
        return seconds, counters, texts

    def native(self):
        seconds, _, texts = self._gdb("mqd load", os.path.join(self.work, "native"), 1, None,
                                      {})
        self.reference = texts[0]
        self.operations = self.reference.count("\n      #")
        return seconds[0]

    def proxied(self, proxy, mode, dumps, tag):
        load = "mqd load --server %s %s" % (proxy.endpoint, self.build.shim)
        seconds, counters, texts = self._gdb(load, os.path.join(self.work, tag), dumps,
                                             proxy.direct, proxy_env(mode, proxy))
        for i, text in enumerate(texts):
            if text != self.reference:
                raise SystemExit("FAIL: %s dump %d differs from the native one (see %s)"
                                 % (tag, i, self.work))
        return seconds, counters

    def stop(self):
        self.job.stop()


class OpenMpiSuite(GdbRankSuite):
    name = "openmpi"

    def __init__(self, build, n, work):
        arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
        super().__init__(build, work, open_mpi_dll(arch),
                         Job(build.pending, 4, 3 * n, work))


class MpichSuite(GdbRankSuite):
    """The same program under MPICH's Hydra, dumped with MPICH's own DLL (tests/mpich/)."""
    name = "mpich"

    def __init__(self, build, n, work):
        prefix = build.artefacts.require("mpich_prefix")
        super().__init__(build, work, os.path.join(prefix, "lib", "libtvmpich.so"),
                         MpichJob(prefix, 4, [build.artefacts.require("mpich_pending"),
                                              str(3 * n)], work))


# ---- the synthetic suite ----

class SyntheticSuite:
    name = "synthetic"

    def __init__(self, build, n, work):
        self.build = build
        self.n = n
        self.work = work
        self.dll = build.testdll
        self.operations = 0

    def _run(self, dll, dumps, direct, env_extra):
        env = dict(os.environ)
        env.update(env_extra)
        proc = subprocess.Popen([self.build.dumper, "--dll", dll, "--ops", str(self.n),
                                 "--dumps", str(dumps)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env)
        seconds, counters = [], []
        for _ in range(dumps):
            line = proc.stdout.readline()
            if not line:
                break
            result = json.loads(line)
            self.operations = result["operations"]
            seconds.append(result["seconds"])
            if direct:
                counters.append(session_counters(self.build, direct))
            proc.stdin.write("\n")
            proc.stdin.flush()
        proc.stdin.close()
        if proc.wait(timeout=7200) != 0 or len(seconds) != dumps:
            raise SystemExit("FAIL: mqd-bench-dump failed (%s)" % dll)
        return seconds, counters

    def native(self):
        return self._run(self.dll, 1, None, {})[0][0]

    def proxied(self, proxy, mode, dumps, tag):
        env = proxy_env(mode, proxy)
        env.update({"MQD_PROXY_SERVER": proxy.endpoint, "MQD_PROXY_DLL": self.dll})
        return self._run(self.build.shim, dumps, proxy.direct, env)

    def stop(self):
        pass


# ---- driver ----

def run_suite(suite_class, build, sizes, rtts, naive_max_rtt):
    rows = []
    for n in sizes:
        work = tempfile.mkdtemp(prefix="mqd-bench-")
        suite = suite_class(build, n, work)
        try:
            native = suite.native()
            row = {"suite": suite.name, "n": n, "ops": suite.operations}
            rows.append(dict(row, mode="native", rtt=None, seconds=native, rts=0, bytes=0,
                             note=""))
            print("%s N=%d (%d operations): native %.3f s"
                  % (suite.name, n, suite.operations, native), flush=True)
            for rtt in rtts:
                state = os.path.join(work, "state-%g" % rtt)
                for mode in ("naive", "cold", "learned"):
                    if mode == "naive" and rtt > naive_max_rtt:
                        zero = [r for r in rows if r["n"] == n and r["mode"] == "naive"
                                and r["rtt"] == 0]
                        if zero:
                            z = zero[0]
                            rows.append(dict(row, mode="naive", rtt=rtt,
                                             seconds=z["seconds"] + z["rts"] * rtt / 1000.0,
                                             rts=z["rts"], bytes=z["bytes"],
                                             note="extrapolated: 0 ms time + round trips x RTT"))
                        continue
                    if mode == "cold":
                        forget(state)
                    proxy = Proxy(build, suite.dll, state, rtt, work)
                    dumps = 2 if mode == "cold" else 1
                    try:
                        seconds, counters = suite.proxied(proxy, mode, dumps,
                                                          "%s-%g" % (mode, rtt))
                    finally:
                        proxy.stop()
                    names = [mode, "repeat"] if mode == "cold" else [mode]
                    previous = {}
                    for name, s, c in zip(names, seconds, counters):
                        d = delta(c, previous)
                        previous = c
                        if DEBUG:
                            print(json.dumps(d, indent=1))
                        rows.append(dict(row, mode=name, rtt=rtt, seconds=s, rts=round_trips(d),
                                         bytes=wire_bytes(d), note=""))
                        print("%s N=%d %-7s RTT %4.1f ms: %8.3f s, %6d round trips, %s"
                              % (suite.name, n, name, rtt, s, round_trips(d),
                                 human(wire_bytes(d))), flush=True)
        finally:
            suite.stop()
            shutil.rmtree(work, ignore_errors=True)
    return rows


def table(rows):
    native = {r["n"]: r["seconds"] for r in rows if r["mode"] == "native"}
    lines = ["| N | operations | mode | RTT | wall time | round trips | bytes on the wire "
             "| ratio to native | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    order = {"native": 0, "naive": 1, "cold": 2, "learned": 3, "repeat": 4}
    for r in sorted(rows, key=lambda r: (r["n"], -1 if r["rtt"] is None else r["rtt"],
                                         order[r["mode"]])):
        ratio = r["seconds"] / native[r["n"]] if native.get(r["n"]) else 0
        nat = r["mode"] == "native"
        lines.append("| %d | %d | %s | %s | %.3f s | %s | %s | %s | %s |" % (
            r["n"], r["ops"], r["mode"], "—" if r["rtt"] is None else "%g ms" % r["rtt"],
            r["seconds"], "—" if nat else "{:,}".format(r["rts"]),
            "—" if nat else human(r["bytes"]), "1.00" if nat else "%.2f" % ratio, r["note"]))
    return lines


DESCRIPTIONS = {
    "openmpi": [
        "## Open MPI: one rank dumped by gdb",
        "",
        "Rank 0 of a live 4-rank Open MPI {ompi} job (`--mca pml ob1 --mca btl self,vader`)",
        "with N pending operations per queue (3N per rank: receives from specific and any",
        "source/tag, large unmatched sends, on WORLD, a dup, a split and a named",
        "communicator). gdb with the mqd front end dumps it; time is the wall time of",
        "`mqd dump` measured inside gdb (the first proxied dump includes image and process",
        "set-up). Every proxied dump is checked byte for byte against the native one.",
    ],
    "mpich": [
        "## MPICH: one rank dumped by gdb with MPICH's own DLL",
        "",
        "The same program and dump as the Open MPI suite, under MPICH 4.0.2 (ch3:nemesis,",
        "Hydra; built by `tools/mpich/build-mpich.sh`) with its `libtvmpich.so`. The rank also",
        "shows the messages sent to it that no receive matched (its unexpected queue). Every",
        "proxied dump is checked byte for byte against the native one. Needs a build with",
        "`MQD_TESTS_MPICH`.",
    ],
    "synthetic": [
        "## Synthetic: pure proxy overhead, no gdb",
        "",
        "A synthetic rank (five communicators, N operations in each of their three queues:",
        "15N) in the debugger harness, dumped by `bench/mqd-bench-dump` through the test DLL",
        "natively and through the proxy. Target memory and look-ups are answered in-process,",
        "so the time is the proxy's own. Every dump must see all operations.",
    ],
}


def open_mpi_version():
    """The version of the Open MPI on PATH, as `mpirun --version` says it ("4.1.4", "5.0.7")."""
    try:
        out = subprocess.run(["mpirun", "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "(unknown version)"
    words = out.split("\n", 1)[0].split()
    return words[-1] if words else "(unknown version)"


def write_results(sections, path, args):
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = ["# mqd-proxy benchmark", "",
             "Date: %s. Machine: %s, %d CPUs (%s), %s." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.node(),
                 os.cpu_count(), cpu, platform.platform()),
             "",
             "Modes: `native` the vendor DLL in the debugger; `naive` the proxy with every",
             "optimisation off (`MQD_PROXY_CACHE=off`, no compression); `cold` fully optimised,",
             "first session ever (empty learned state); `learned` a fresh session that starts",
             "from what `cold` learned; `repeat` a second refresh in the `cold` session. RTT is",
             "injected by `mqd-relay` on TCP loopback (compression then on, as by default for",
             "TCP); RTT 0 is a direct unix socket. Round trips and bytes come from the server's",
             "session counters (`mqd-proxy stats`).",
             "",
             "Here gdb attaches the rank itself. The topology users have, gdb reaching the rank",
             "through gdbserver over its own link (`bench/real_topology.py`, with an aarch64",
             "rank under qemu-user), has its tables in RESULTS-real-topology.md; the whole job",
             "of 1 to 64 ranks (`bench/whole_job.py`) in RESULTS-whole-job.md. Open MPI 5.0",
             "on Debian 13: RESULTS-open-mpi-5.md (this benchmark run in the Debian 13 root of",
             "tests/debian13/, docs/open-mpi-5.md).",
             "",
             "Reproduce: `python3 bench/bench.py --build build --suites %s --sizes %s --rtts %s`"
             % (args.suites, args.sizes, args.rtts), ""]
    ompi = open_mpi_version()
    for name, rows in sections:
        lines += [line.replace("{ompi}", ompi) for line in DESCRIPTIONS[name]] + [""] + \
            table(rows) + [""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def main():
    # SIGTERM (and Ctrl-C) unwind through the suites' clean-up: no job, server or relay is left.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--suites", default="openmpi,synthetic")
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--rtts", default="0,1,20")
    ap.add_argument("--naive-max-rtt", type=float, default=1)
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    args = ap.parse_args()
    build = Build(args.build)
    sizes = [int(x) for x in args.sizes.split(",")]
    rtts = [float(x) for x in args.rtts.split(",")]
    suites = {"openmpi": OpenMpiSuite, "mpich": MpichSuite, "synthetic": SyntheticSuite}
    sections = []
    for name in args.suites.split(","):
        if name not in suites:
            raise SystemExit("bench: unknown suite %r" % name)
        sections.append((name, run_suite(suites[name], build, sizes, rtts,
                                         args.naive_max_rtt)))
    write_results(sections, args.output, args)


if __name__ == "__main__":
    main()
