#!/usr/bin/env python3
"""The whole job at once: how dumping every rank grows with the number of ranks.

For each rank count R (default 1, 16, 64): a live Open MPI job of R ranks (tests/e2e/pending,
OPS pending operations per rank; oversubscribed, the ranks parked without calling MPI) is
attached by one gdb with the front end (`mqd attach --launcher <mpirun>`), which then runs
`mqd dump --all --json` twice: the first dump (image and process set-up included) and a
refresh. Two topologies:

local  gdb attaches every rank itself (ptrace); the shim reaches the server through an
       injected RTT (0: a unix socket; else mqd-relay on TCP loopback, as bench.py), and a
       bandwidth where --rtts names one (100@10: 100 ms, 10 MB/s each way). Modes:
         native    Open MPI's DLL loaded in gdb (the reference; its JSON is compared with
                   every other)
         cold      through the proxy, first session ever (empty --state-dir; nothing learned
                   by the shim)
         learned   through the proxy, a fresh gdb and session after `cold` (learned look-ups,
                   memory)
         new-job   through the proxy after `learned`, with what the ranks read and their
                   set-ups forgotten, the look-ups kept: a job never seen, with a DLL the
                   server and the shim know (each rank's first update is guessed from the
                   first rank's: docs/round-trips.md, "A job never seen")
real   gdb reaches every rank through one `gdbserver --multi` for the host, behind an
       mqd-relay with --debugger-rtt (`mqd attach --launcher <mpirun> --gdbserver
       HOST=RELAY`, the target's files local: `set sysroot /`); the shim reaches the server
       through a relay with the largest of --rtts. Modes, with the learned state of the local
       runs (so a run of real alone starts with a cold session of its own, not timed):
         native    the DLL in gdb, every read a round trip on the debugger link (only up to
                   --native-max-ranks ranks: it costs minutes per rank)
         learned   the proxy, the DLL's reads answered by gdb over the debugger link
         node      the proxy with the server's --node-memory: it reads each proved rank on
                   this host itself
       The debugger link's exchanges (a packet gdb sends and gdbserver's answer) are counted
       per phase by its relay (mqd-relay --exchanges-file). --gdbserver-per-rank: a
       `gdbserver --attach` of each rank and a relay per rank instead, `--gdbserver` named
       once per rank (gdb then never points a connection at another rank, `Hg`); the
       exchanges of all.

Printed per run: the time of `mqd attach`, `mqd load`, the first dump and the refresh; round
trips and bytes on the server link for each dump (the server's session counters, `mqd-proxy
stats`); the resident memory (VmRSS) of gdb (the shim's host process), of the server and of
its workers after the refresh. Then the growth per rank between the two largest counts, and a
linear projection to 1,024 and 16,384 ranks. Written to bench/RESULTS-whole-job.md. With
--profile DIR, each dump's cProfile statistics of gdb's Python are written to DIR too.

usage: whole_job.py --build DIR [--ranks 1,16,64] [--ops 200] [--rtts 0,20]
                    [--topologies local,real] [--real-ranks R,...] [--debugger-rtt 20]
                    [--native-max-ranks 1] [--attach-options OPTS]
                    [--gdbserver-per-rank] [--output FILE] [--profile DIR]
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing", "python"))
from bench import (Build, Proxy, delta, forget, forget_job, human,  # noqa: E402
                   proxy_env, round_trips, wire_bytes)
from gdbserver import GdbServer  # noqa: E402
from mpi_job import Job, open_mpi_dll  # noqa: E402
from real_topology import Link  # noqa: E402

# Runs inside gdb: attaches the job, loads the DLL, dumps every rank `dumps` times; after each
# dump reads the server's session counters (with a server on every node, each one's last
# session's, summed) and the resident memory of the servers, their workers and gdb itself. With `exchanges` (the debugger link's relay's count, mqd-relay
# --exchanges-file), the exchanges of each phase on that link.
GDB_SCRIPT = r"""
import gdb, json, os, subprocess, time
cfg = json.loads(os.environ["MQD_BENCH"])

def rss(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0

def children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            out += [int(c) for c in open("/proc/%d/task/%s/children" % (pid, task)).read().split()]
    except OSError:
        pass
    return out

def exchanges():
    return sum(int(open(f).read()) for f in cfg["exchanges"])

def phase(command, quiet=True):
    t, before = time.time(), exchanges()
    gdb.execute(command, to_string=quiet)
    result["packets"].append(exchanges() - before)
    return time.time() - t

gdb.execute("source " + cfg["frontend"])
from mqd_gdb import memory as frontend_memory  # noqa: E402
result = {"dumps": [], "counters": [], "packets": [], "reads": []}
result["attach"] = phase(cfg["attach"])
result["load"] = phase(cfg["load"])
result["reads"].append(dict(frontend_memory.reads))
for i in range(cfg["dumps"]):
    if cfg["profile"]:
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    result["dumps"].append(phase("mqd dump --all --json --output %s.%d.json" % (cfg["out"], i),
                                 quiet=False))
    if cfg["profile"]:
        profiler.disable()
        profiler.dump_stats("%s.%d.prof" % (cfg["profile"], i))
    result["reads"].append(dict(frontend_memory.reads))
    if cfg["server"]:
        total = {}
        for endpoint in cfg["direct"]:
            stats = json.loads(subprocess.check_output([cfg["cli"], "--server", endpoint,
                                                        "stats", "--json"]))
            sessions = [s for s in stats if s.get("dll")]
            for key, value in (sessions[-1]["counters"] if sessions else {}).items():
                total[key] = total.get(key, 0) + value
        result["counters"].append(total)
result["rss_gdb"] = rss(os.getpid())
if cfg["server"]:
    result["rss_server"] = sum(rss(s) for s in cfg["server"])
    result["rss_workers"] = [rss(c) for s in cfg["server"] for c in children(s)]
with open(cfg["out"] + ".result.json", "w") as f:
    json.dump(result, f)
"""


def run_gdb(build, attach, load, out, server=None, direct=None, dumps=2, shim_env=None,
            links=(), profile=None):
    """One gdb over the whole job, attached by the front end's `attach` command, through the
    debugger `links` (real_topology.Link, one per gdbserver) if any; returns the script's
    result dict (with `packets`, those links' exchanges in each phase: attach, load, each
    dump) and the dumps' JSON. `server` and `direct`: the server's pid and endpoint, or lists
    of them (a server on every node). `profile`: each dump's cProfile statistics are written
    to PROFILE.N.prof, N the dump's number."""
    script = out + ".gdb.py"
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    env = dict(os.environ, **(shim_env or {}))
    env["MQD_BENCH"] = json.dumps({
        "frontend": build.frontend, "attach": attach, "load": load, "out": out,
        "dumps": dumps, "cli": build.cli, "profile": profile,
        "direct": direct if isinstance(direct, list) else [direct] if direct else [],
        "server": server if isinstance(server, list) else [server] if server else [],
        "exchanges": [link.exchanges for link in links]})
    # The target's files are this host's (a user with a copy of the nodes' files): gdb must
    # not fetch them over the debugger link.
    files = ["-iex", "set sysroot /"] if links else []
    result = subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex",
                             "set debuginfod enabled off"] + files + ["-x", script],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=7200)
    path = out + ".result.json"
    if result.returncode != 0 or not os.path.exists(path):
        raise SystemExit("FAIL: gdb (%s):\n%s" % (out, result.stdout[-3000:]))
    found = json.load(open(path))
    if not links:
        del found["packets"]
    texts = [open("%s.%d.json" % (out, i)).read() for i in range(dumps)]
    return found, texts


def measure(build, ranks, ops, rtts, work, topologies, debugger_rtt, native_max_ranks,
            attach_options="", per_rank=False, profile=None):
    """Rows for one job of `ranks` ranks, in each of `topologies`; `profile`: run_gdb's."""
    arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
    dll = open_mpi_dll(arch)
    rows = []
    job = Job(build.pending, ranks, ops, work)
    local = "mqd attach --launcher %d" % job.proc.pid
    try:
        # The local native dump is every run's reference, in either topology.
        def profiled(name):
            return profile and os.path.join(profile, "%d-%s" % (ranks, name))

        native, texts = run_gdb(build, local, "mqd load", os.path.join(work, "native"),
                                profile=profiled("native"))
        reference = texts[0]
        operations = sum(len(q["operations"]) for d in json.loads(reference)
                         for c in d.get("communicators", []) for q in c["queues"].values())
        base = {"ranks": ranks, "ops": operations}

        def proxied(topology, mode, rtt, state, attach, options=(), links=(), mbps=None):
            proxy = Proxy(build, dll, state, rtt, work, options,
                          bandwidth=mbps * 1e6 if mbps else None)
            try:
                load = "mqd load --server %s %s" % (proxy.endpoint, build.shim)
                name = "%s-%s-%s" % (topology, mode, link_name(rtt, mbps))
                result, texts = run_gdb(build, attach, load, os.path.join(work, name),
                                        proxy.proc.pid, proxy.direct,
                                        shim_env=proxy_env(mode, proxy), links=links,
                                        profile=profiled(name))
            finally:
                proxy.stop()
            check(texts, reference, "%s %s at %s" % (topology, mode, link_name(rtt, mbps)),
                  work)
            first = delta(result["counters"][0], {})
            refresh = delta(result["counters"][1], result["counters"][0])
            return dict(base, topology=topology, mode=mode, rtt=rtt, mbps=mbps,
                        **timing(result),
                        rts=(round_trips(first), round_trips(refresh)),
                        bytes=(wire_bytes(first), wire_bytes(refresh)),
                        rss_server=result["rss_server"], rss_workers=result["rss_workers"])

        if "local" in topologies:
            rows.append(dict(base, topology="local", mode="native", rtt=None, **timing(native)))
            report(rows[-1])
            for rtt, mbps in rtts:
                state = os.path.join(work, "state-" + link_name(rtt, mbps))
                forget(state)
                for mode in ("cold", "learned", "new-job"):
                    if mode == "new-job":
                        forget_job(state)
                    rows.append(proxied("local", mode, rtt, state, local, mbps=mbps))
                    report(rows[-1])
        if "real" in topologies:
            rtt = max(r for r, _ in rtts)
            state = os.path.join(work, "state-%g" % rtt)
            if "local" not in topologies:  # the real runs are learned sessions
                forget(state)
                proxied("local", "cold", 0, state, local)
            rows += measure_real(build, job, base, reference, work, rtt, debugger_rtt,
                                 native_max_ranks, lambda *a, **k: proxied("real", *a, **k),
                                 state, attach_options, per_rank)
    finally:
        job.stop()
    return rows


class DebuggerLinks:
    """The real topology's debugger side, for one gdb: one `gdbserver --multi` for this host
    behind a relay with `rtt` (kept for every gdb), or with `per_rank` a `gdbserver --attach`
    of each rank behind a relay of its own (made anew for each gdb: such a gdbserver ends
    with its gdb). `attach` is the `mqd attach` command that reaches the ranks through them."""

    def __init__(self, build, job, rtt, work, attach_options, per_rank):
        self.build, self.job, self.rtt, self.work = build, job, rtt, work
        self.attach_options, self.per_rank = attach_options, per_rank
        self.gdbservers, self.links, self.runs = [], [], 0

    def open(self):
        """The relays for the next gdb (a real_topology.Link each)."""
        if self.per_rank:
            self.close()
            self.runs += 1
            for i, pid in enumerate(self.job.pids):
                self.add(GdbServer("gdbserver", self.work, attach_pid=pid,
                                   name="gdbserver-%d-%d" % (self.runs, i)),
                         "debugger-link-%d-%d" % (self.runs, i))
        elif not self.links:
            self.add(GdbServer("gdbserver", self.work), "debugger-link")
        self.attach = "mqd attach --launcher %d %s %s" % (self.job.proc.pid, " ".join(
            "--gdbserver %s=%s" % (socket.gethostname(), link.address) for link in self.links),
            self.attach_options)
        return self.links

    def add(self, gdbserver, name):
        self.gdbservers.append(gdbserver)
        self.links.append(Link(self.build, "127.0.0.1:%d" % gdbserver.port, self.rtt,
                               self.work, name))

    def close(self):
        for link in self.links:
            link.stop()
        for gdbserver in self.gdbservers:
            gdbserver.stop()
        self.gdbservers, self.links = [], []


def measure_real(build, job, base, reference, work, rtt, debugger_rtt, native_max_ranks,
                 proxied, state, attach_options="", per_rank=False):
    """The real topology's rows: one gdbserver --multi for this host behind a relay with
    `debugger_rtt`, every rank attached there; with `per_rank`, a gdbserver --attach and a
    relay per rank, each rank reached through its own."""
    rows = []
    debugger = DebuggerLinks(build, job, debugger_rtt, work, attach_options, per_rank)
    try:
        if base["ranks"] <= native_max_ranks:
            links = debugger.open()
            result, texts = run_gdb(build, debugger.attach, "mqd load",
                                    os.path.join(work, "real-native"), links=links)
            check(texts, reference, "real native", work)
            rows.append(dict(base, topology="real", mode="native", rtt=None,
                             debugger_rtt=debugger_rtt, **timing(result)))
            report(rows[-1])
        for mode, options in (("learned", ()), ("node", ("--node-memory",))):
            links = debugger.open()
            row = proxied(mode, rtt, state, debugger.attach, options, links=links)
            rows.append(dict(row, debugger_rtt=debugger_rtt))
            report(rows[-1])
    finally:
        debugger.close()
    return rows


def check(texts, reference, what, work):
    for i, text in enumerate(texts):
        if text != reference:
            raise SystemExit("FAIL: %s, dump %d differs from the native one (see %s)"
                             % (what, i, work))


def timing(result):
    # The front end's reads of the targets' memory in each dump, and how many were refused.
    reads = [(after["asked"] - before["asked"], after["refused"] - before["refused"])
             for before, after in zip(result["reads"], result["reads"][1:])]
    found = {"attach": result["attach"], "load": result["load"], "first": result["dumps"][0],
             "refresh": result["dumps"][1], "rss_gdb": result["rss_gdb"], "reads": reads}
    if "packets" in result:
        found["packets"] = result["packets"]
    return found


def link_name(rtt, mbps):
    """A server link's RTT and bandwidth as --rtts names it: 100, or 100@10 (10 MB/s)."""
    return "%g" % rtt + ("@%g" % mbps if mbps else "")


def parse_links(text):
    """--rtts: RTTs in ms, each with an optional @MB/s: [(rtt, mbps or None), ...]."""
    found = []
    for item in text.split(","):
        rtt, _, mbps = item.partition("@")
        found.append((float(rtt), float(mbps) if mbps else None))
    return found


def links(r):
    """The RTTs of a row's links: the debugger's (real topology) and the server's (proxied),
    with the server link's bandwidth where it is limited."""
    parts = []
    if r.get("debugger_rtt") is not None:
        parts.append("debugger %g ms" % r["debugger_rtt"])
    if r["rtt"] is not None:
        parts.append("server %g ms" % r["rtt"] + (", %g MB/s" % r["mbps"] if r.get("mbps")
                                                  else ""))
    return ", ".join(parts) or "—"


def reads(r):
    """A row's debugger reads (the front end's) in the first dump and the refresh, each with
    how many the targets refused."""
    return " / ".join("%d (%d refused)" % pair for pair in r["reads"])


def report(r):
    print("%3d ranks %-5s %-7s %-26s attach %6.2f s, load %5.2f s, first dump %6.2f s, "
          "refresh %6.2f s, debugger reads %s%s%s; RSS gdb %s%s" % (
              r["ranks"], r["topology"], r["mode"], links(r),
              r["attach"], r["load"], r["first"], r["refresh"], reads(r),
              "" if "rts" not in r else ", round trips %d / %d, bytes %s / %s" % (
                  r["rts"][0], r["rts"][1], human(r["bytes"][0]), human(r["bytes"][1])),
              "" if "packets" not in r else ", debugger link exchanges %s" % " / ".join(
                  str(p) for p in r["packets"]),
              human(r["rss_gdb"]),
              "" if "rss_server" not in r else ", server %s, workers %s" % (
                  human(r["rss_server"]), " ".join(human(w) for w in r["rss_workers"]))),
          flush=True)


def table(rows):
    lines = ["| ranks | operations | topology | mode | links' RTT | attach | load | first dump | "
             "refresh | server link round trips (first / refresh) | server link bytes (first / "
             "refresh) | debugger reads (first / refresh) | debugger link exchanges (attach / "
             "load / first / refresh) | RSS gdb | RSS server | RSS workers |", "|" + "---|" * 16]
    for r in rows:
        proxied = "rts" in r
        lines.append("| %d | %d | %s | %s | %s | %.2f s | %.2f s | %.2f s | %.2f s | %s | %s | "
                     "%s | %s | %s | %s | %s |" % (
                         r["ranks"], r["ops"], r["topology"], r["mode"], links(r), r["attach"],
                         r["load"], r["first"], r["refresh"],
                         "%d / %d" % r["rts"] if proxied else "—",
                         "%s / %s" % (human(r["bytes"][0]), human(r["bytes"][1]))
                         if proxied else "—",
                         reads(r),
                         " / ".join(str(p) for p in r["packets"]) if "packets" in r else "—",
                         human(r["rss_gdb"]),
                         human(r["rss_server"]) if proxied else "—",
                         " + ".join(human(w) for w in r["rss_workers"]) if proxied else "—"))
    return lines


def growth(rows):
    """Per added rank between the two largest rank counts, and the linear projection to 1,024
    and 16,384 ranks, for each mode and RTT."""
    lines = ["| topology | mode | links' RTT | per added rank | at 1,024 ranks | "
             "at 16,384 ranks |", "|---|---|---|---|---|---|"]
    group = lambda r: (r["topology"], r["mode"], links(r))  # noqa: E731
    order = {r["mode"]: i for i, r in enumerate(rows)}
    for k in sorted({group(r) for r in rows}, key=lambda k: (k[0], k[2], order[k[1]])):
        mine = sorted((r for r in rows if group(r) == k), key=lambda r: r["ranks"])
        if len(mine) < 2:
            continue
        a, b = mine[-2], mine[-1]
        n = b["ranks"] - a["ranks"]
        measures = [("first dump", "first", lambda v: "%.2f s" % v),
                    ("refresh", "refresh", lambda v: "%.2f s" % v),
                    ("RSS gdb", "rss_gdb", human)]
        if "rts" in b:
            measures += [("round trips (first)", lambda r: r["rts"][0], lambda v: "%d" % v),
                         ("bytes (first)", lambda r: r["bytes"][0], human),
                         ("RSS server + workers",
                          lambda r: r["rss_server"] + sum(r["rss_workers"]), human)]
        if "packets" in b:
            measures += [("debugger link exchanges (first)", lambda r: r["packets"][2],
                          lambda v: "%d" % v)]
        for name, key, show in measures:
            get = key if callable(key) else (lambda r, k=key: r[k])
            slope = (get(b) - get(a)) / n
            at = lambda ranks: get(b) + slope * (ranks - b["ranks"])  # noqa: E731
            lines.append("| %s | %s | %s | %s: %s | %s | %s |" % (
                k[0], k[1], k[2], name, show(slope), show(at(1024)), show(at(16384))))
    return lines


def document(rows, args):
    """The results file's lines: how the rows were measured, their table, the growth."""
    return ["# mqd-proxy benchmark: the whole job", "",
            "Date: %s. Machine: %s, %d CPUs, %s." % (
                datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.node(),
                os.cpu_count(), platform.platform()), "",
            "One gdb attached to every rank of a live Open MPI job (`mqd attach --launcher`), "
            "`mqd dump --all --json` twice; %d pending operations per rank. Local topology: gdb "
            "attaches the ranks itself, the shim reaches the server through the RTT shown. "
            "Real topology: gdb reaches every rank through %s behind a relay with the "
            "debugger link's RTT (`mqd attach --gdbserver`); "
            "native there only up to %d rank(s), as it costs minutes per rank; `node` is the "
            "server's --node-memory. Every dump equals the local native one byte for byte. "
            "RSS after the refresh." % (
                args.ops, "a `gdbserver --attach` of its own, each"
                if args.gdbserver_per_rank else "one `gdbserver --multi` for the host",
                args.native_max_ranks), "",
            "Reproduce: `python3 bench/whole_job.py --build build --ranks %s --ops %d --rtts %s "
            "--topologies %s%s --debugger-rtt %g --native-max-ranks %d%s%s`"
            % (args.ranks, args.ops, args.rtts, args.topologies,
               " --real-ranks " + args.real_ranks if args.real_ranks else "",
               args.debugger_rtt, args.native_max_ranks,
               " --attach-options='%s'" % args.attach_options if args.attach_options else "",
               " --gdbserver-per-rank" if args.gdbserver_per_rank else ""),
            ""] + table(rows) + [
            "", "## Growth and projection", "",
            "Linear between the two largest rank counts measured.", ""] + growth(rows) + [""]


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", default="1,16,64")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--rtts", default="0,20", help="the server link's RTTs (ms) in the local "
                    "topology, each with an optional bandwidth in MB/s (100@10); the real "
                    "topology takes the largest RTT")
    ap.add_argument("--topologies", default="local,real")
    ap.add_argument("--real-ranks", help="the rank counts measured in the real topology "
                    "(default: all of --ranks)")
    ap.add_argument("--debugger-rtt", type=float, default=20,
                    help="the debugger link's RTT (ms) in the real topology")
    ap.add_argument("--native-max-ranks", type=int, default=1,
                    help="the largest job dumped natively in the real topology")
    ap.add_argument("--attach-options", default="",
                    help="more options of `mqd attach` in the real topology "
                    "(e.g. --without-thread-db)")
    ap.add_argument("--gdbserver-per-rank", action="store_true",
                    help="in the real topology, a gdbserver --attach and a relay per rank "
                    "instead of one gdbserver --multi for the host")
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS-whole-job.md"))
    ap.add_argument("--profile", metavar="DIR",
                    help="write each dump's cProfile statistics of gdb's Python to DIR "
                    "(RANKS-native.N.prof, RANKS-TOPOLOGY-MODE-LINK.N.prof; N 0 for the "
                    "first dump, 1 the refresh; read them with `python3 -m pstats`); the "
                    "profiler about doubles the dumps' times")
    args = ap.parse_args()
    profile = args.profile
    if profile:
        os.makedirs(profile, exist_ok=True)
    topologies = args.topologies.split(",")
    if not topologies or set(topologies) - {"local", "real"}:
        ap.error("--topologies: local, real or both")
    build = Build(args.build)
    rows = []
    real = [int(x) for x in (args.real_ranks or args.ranks).split(",")]
    for ranks in [int(x) for x in args.ranks.split(",")]:
        work = tempfile.mkdtemp(prefix="mqd-bench-job-")
        these = [t for t in topologies if t == "local" or ranks in real]
        try:
            rows += measure(build, ranks, args.ops, parse_links(args.rtts),
                            work, these, args.debugger_rtt, args.native_max_ranks,
                            args.attach_options, args.gdbserver_per_rank,
                            profile and os.path.abspath(profile))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    lines = document(rows, args)
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
