#!/usr/bin/env python3
"""The whole job at once: how dumping every rank grows with the number of ranks.

For each rank count R (default 1, 16, 64): a live Open MPI job of R ranks (tests/e2e/pending,
OPS pending operations per rank; oversubscribed, the ranks parked without calling MPI) is
attached by one gdb with the front end (`mqd attach --launcher <mpirun>`), which then runs
`mqd dump --all --json` twice: the first dump (image and process set-up included) and a
refresh. Modes:

  native    Open MPI's DLL loaded in gdb (the reference; its JSON is compared with every other)
  cold      through the proxy, first session ever (empty --state-dir; nothing learned by the shim)
  learned   through the proxy, a fresh gdb and session after `cold` (learned look-ups, memory)

at each injected RTT between the shim and the server (0: a unix socket; else mqd-relay on TCP
loopback, as bench.py). gdb is local to the ranks (ptrace): this is the topology "gdb local to
the ranks, server behind an RTT".

Printed per run: the time of `mqd attach`, `mqd load`, the first dump and the refresh; round
trips and bytes on the server link for each dump (the server's session counters, `mqd-proxy
stats`); the resident memory (VmRSS) of gdb (the shim's host process), of the server and of
its workers after the refresh. Then the growth per rank between the two largest counts, and a
linear projection to 1,024 and 16,384 ranks. Written to bench/RESULTS-whole-job.md.

usage: whole_job.py --build DIR [--ranks 1,16,64] [--ops 200] [--rtts 0,20] [--output FILE]
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing", "python"))
from bench import (Build, OMPI_DLL_GLOB, Proxy, delta, forget, human, proxy_env,  # noqa: E402
                   round_trips, wire_bytes)
from mpi_job import Job  # noqa: E402

# Runs inside gdb: attaches the job, loads the DLL, dumps every rank `dumps` times; after each
# dump reads the server's session counters and the resident memory of the server, its workers
# and gdb itself.
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

gdb.execute("source " + cfg["frontend"])
result = {"dumps": [], "counters": []}
t = time.time()
gdb.execute(cfg["attach"], to_string=True)
result["attach"] = time.time() - t
t = time.time()
gdb.execute(cfg["load"], to_string=True)
result["load"] = time.time() - t
for i in range(cfg["dumps"]):
    t = time.time()
    gdb.execute("mqd dump --all --json --output %s.%d.json" % (cfg["out"], i))
    result["dumps"].append(time.time() - t)
    if cfg["server"]:
        stats = json.loads(subprocess.check_output([cfg["cli"], "--server", cfg["direct"],
                                                    "stats", "--json"]))
        sessions = [s for s in stats if s.get("dll")]
        result["counters"].append(sessions[-1]["counters"] if sessions else {})
result["rss_gdb"] = rss(os.getpid())
if cfg["server"]:
    result["rss_server"] = rss(cfg["server"])
    result["rss_workers"] = [rss(c) for c in children(cfg["server"])]
with open(cfg["out"] + ".result.json", "w") as f:
    json.dump(result, f)
"""


def run_gdb(build, job, load, out, server=None, direct=None, dumps=2, shim_env=None):
    """One gdb over the whole job; returns the script's result dict and the dumps' JSON."""
    script = out + ".gdb.py"
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    env = dict(os.environ, **(shim_env or {}))
    env["MQD_BENCH"] = json.dumps({
        "frontend": build.frontend, "attach": "mqd attach --launcher %d" % job.proc.pid,
        "load": load, "out": out, "dumps": dumps, "cli": build.cli, "direct": direct,
        "server": server})
    result = subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                             "-x", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=7200)
    path = out + ".result.json"
    if result.returncode != 0 or not os.path.exists(path):
        raise SystemExit("FAIL: gdb (%s):\n%s" % (out, result.stdout[-3000:]))
    texts = [open("%s.%d.json" % (out, i)).read() for i in range(dumps)]
    return json.load(open(path)), texts


def measure(build, ranks, ops, rtts, work):
    """Rows for one job of `ranks` ranks."""
    arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
    dll = OMPI_DLL_GLOB.format(arch=arch)
    rows = []
    job = Job(build.pending, ranks, ops, work)
    try:
        native, texts = run_gdb(build, job, "mqd load", os.path.join(work, "native"))
        reference = texts[0]
        operations = sum(len(q["operations"]) for d in json.loads(reference)
                         for c in d.get("communicators", []) for q in c["queues"].values())
        base = {"ranks": ranks, "ops": operations}
        rows.append(dict(base, mode="native", rtt=None, **timing(native)))
        report(rows[-1])
        for rtt in rtts:
            state = os.path.join(work, "state-%g" % rtt)
            for mode in ("cold", "learned"):
                if mode == "cold":
                    forget(state)
                proxy = Proxy(build, dll, state, rtt, work)
                try:
                    load = "mqd load --server %s %s" % (proxy.endpoint, build.shim)
                    result, texts = run_gdb(build, job, load,
                                            os.path.join(work, "%s-%g" % (mode, rtt)),
                                            proxy.proc.pid, proxy.direct,
                                            shim_env=proxy_env(mode, proxy))
                finally:
                    proxy.stop()
                for i, text in enumerate(texts):
                    if text != reference:
                        raise SystemExit("FAIL: %s at %g ms, dump %d differs from the native "
                                         "one (see %s)" % (mode, rtt, i, work))
                first = delta(result["counters"][0], {})
                refresh = delta(result["counters"][1], result["counters"][0])
                rows.append(dict(base, mode=mode, rtt=rtt, **timing(result),
                                 rts=(round_trips(first), round_trips(refresh)),
                                 bytes=(wire_bytes(first), wire_bytes(refresh)),
                                 rss_server=result["rss_server"],
                                 rss_workers=result["rss_workers"]))
                report(rows[-1])
    finally:
        job.stop()
    return rows


def timing(result):
    return {"attach": result["attach"], "load": result["load"], "first": result["dumps"][0],
            "refresh": result["dumps"][1], "rss_gdb": result["rss_gdb"]}


def report(r):
    print("%3d ranks %-7s %-6s attach %6.2f s, load %5.2f s, first dump %6.2f s, refresh "
          "%6.2f s%s; RSS gdb %s%s" % (
              r["ranks"], r["mode"], "" if r["rtt"] is None else "%g ms" % r["rtt"],
              r["attach"], r["load"], r["first"], r["refresh"],
              "" if "rts" not in r else ", round trips %d / %d, bytes %s / %s" % (
                  r["rts"][0], r["rts"][1], human(r["bytes"][0]), human(r["bytes"][1])),
              human(r["rss_gdb"]),
              "" if "rss_server" not in r else ", server %s, workers %s" % (
                  human(r["rss_server"]), " ".join(human(w) for w in r["rss_workers"]))),
          flush=True)


def table(rows):
    lines = ["| ranks | operations | mode | RTT | attach | load | first dump | refresh | round "
             "trips (first / refresh) | bytes (first / refresh) | RSS gdb | RSS server | RSS "
             "workers |", "|" + "---|" * 13]
    for r in rows:
        proxied = "rts" in r
        lines.append("| %d | %d | %s | %s | %.2f s | %.2f s | %.2f s | %.2f s | %s | %s | %s | "
                     "%s | %s |" % (
                         r["ranks"], r["ops"], r["mode"],
                         "—" if r["rtt"] is None else "%g ms" % r["rtt"], r["attach"],
                         r["load"], r["first"], r["refresh"],
                         "%d / %d" % r["rts"] if proxied else "—",
                         "%s / %s" % (human(r["bytes"][0]), human(r["bytes"][1]))
                         if proxied else "—", human(r["rss_gdb"]),
                         human(r["rss_server"]) if proxied else "—",
                         " + ".join(human(w) for w in r["rss_workers"]) if proxied else "—"))
    return lines


def growth(rows):
    """Per added rank between the two largest rank counts, and the linear projection to 1,024
    and 16,384 ranks, for each mode and RTT."""
    lines = ["| mode | RTT | per added rank | at 1,024 ranks | at 16,384 ranks |",
             "|---|---|---|---|---|"]
    keys = sorted({(r["mode"], r["rtt"]) for r in rows}, key=lambda k: (k[1] or -1, k[0]))
    for mode, rtt in keys:
        mine = sorted((r for r in rows if (r["mode"], r["rtt"]) == (mode, rtt)),
                      key=lambda r: r["ranks"])
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
        for name, key, show in measures:
            get = key if callable(key) else (lambda r, k=key: r[k])
            slope = (get(b) - get(a)) / n
            at = lambda ranks: get(b) + slope * (ranks - b["ranks"])  # noqa: E731
            lines.append("| %s | %s | %s: %s | %s | %s |" % (
                mode, "—" if rtt is None else "%g ms" % rtt, name, show(slope), show(at(1024)),
                show(at(16384))))
    return lines


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", default="1,16,64")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--rtts", default="0,20")
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS-whole-job.md"))
    args = ap.parse_args()
    build = Build(args.build)
    rows = []
    for ranks in [int(x) for x in args.ranks.split(",")]:
        work = tempfile.mkdtemp(prefix="mqd-bench-job-")
        try:
            rows += measure(build, ranks, args.ops, [float(x) for x in args.rtts.split(",")],
                            work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    lines = ["# mqd-proxy benchmark: the whole job", "",
             "Date: %s. Machine: %s, %d CPUs, %s." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.node(),
                 os.cpu_count(), platform.platform()), "",
             "One gdb attached to every rank of a live Open MPI job (`mqd attach --launcher`), "
             "`mqd dump --all --json` twice; %d pending operations per rank. gdb is local to "
             "the ranks; RTT is the shim's link to the server. Every proxied dump equals the "
             "native one byte for byte. RSS after the refresh." % args.ops, "",
             "Reproduce: `python3 bench/whole_job.py --build build --ranks %s --ops %d --rtts %s`"
             % (args.ranks, args.ops, args.rtts), ""] + table(rows) + [
             "", "## Growth and projection", "",
             "Linear between the two largest rank counts measured.", ""] + growth(rows) + [""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
