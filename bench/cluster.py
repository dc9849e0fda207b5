#!/usr/bin/env python3
"""A Slurm job across nodes, dumped from the login node (issue 47): what a server on every node
costs and saves, by nodes and ranks.

For each shape NxR (N nodes, R ranks each; default 8x8 and 16x16): the simulated cluster of
tools/cluster/cluster.py with N nodes, and a live Open MPI job of N*R ranks launched by
`srun --mpi=pmix --ntasks-per-node=R` (tests/e2e/pending, OPS pending operations per rank).
gdb on the login node reaches each rank through a `gdbserver --attach` on its node (started
through Slurm, as `mqd attach` does for an srun), each behind an mqd-relay adding --rtt: the
debugger's links. Attached with `mqd attach --launcher <srun> --without-thread-db
--gdbserver NODE=RELAY ...`, then `mqd dump --all --json` twice (the first dump, with every
set-up, and a refresh). Modes:

  native   Open MPI's DLL loaded in gdb: every read of the DLL crosses a debugger link (only
           up to --native-max-ranks ranks: it costs seconds per rank); the reference
  cold     the shim, with a server with --node-memory on every node (one Slurm step, one
           task a node, each behind a relay adding --rtt: the server links), all named in
           the shim's `server` setting: a first session ever (nothing learned on either side)
  learned  the same after `cold`: the DLL's look-ups and the job's set-ups learned

Every proxied dump must equal the native one (or, above --native-max-ranks, the first proxied
run's, itself checked against the ranks' manifests). Printed per run: the time of `mqd attach`,
`mqd load`, the first dump and the refresh; exchanges on the debugger links per phase (the
relays count them); round trips and bytes on the server links (each node's session counters,
summed: the debugger asks one process at a time, so the round trips are waited for one after
another); the resident memory of gdb and of the servers and their workers (all nodes'). Then
the growth per node and per rank between the two shapes, projected to 1,024 nodes. Written to
bench/RESULTS-cluster.md.

Needs root and what the cluster test needs (tools/install-deps.sh --test); one cluster at a
time, so never beside `ctest -L cluster`.

usage: cluster.py --build DIR [--shapes 8x8,16x16] [--rtt 20] [--ops 200]
                  [--native-max-ranks 64] [--output FILE]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testing", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "cluster"))
sys.path.insert(0, os.path.join(HERE, "..", "frontends", "gdb"))
from bench import Build, delta, human, round_trips, wire_bytes  # noqa: E402
from cluster import Cluster  # noqa: E402
from cluster_job import SlurmServers, SrunJob  # noqa: E402
from mpi_job import check_against_manifests, open_mpi_dll  # noqa: E402
from mqd_gdb import slurm  # noqa: E402  (the front end's own start of gdbservers)
from real_topology import Link  # noqa: E402
from whole_job import check, run_gdb, timing  # noqa: E402

PROJECTED_NODES = 1024


class SlurmGdbservers:
    """A gdbserver --attach per rank on its node (through Slurm) and a relay in front of each
    (`links`), and the `mqd attach` command that reaches the ranks through them (`attach`).
    stop() ends the relays, and the gdbservers gdb did not reach (a gdb that failed part way):
    none may hold its rank for the next mode's."""

    def __init__(self, build, job, rtt, work, run):
        started = slurm.start_gdbservers(job.job_id, list(zip(job.hosts, job.pids)))
        self.gdbservers = [a for listed in started.values() for a in listed]
        self.links, named, turn = [], [], {}
        try:
            for rank, host in enumerate(job.hosts):
                address = started[host][turn.get(host, 0)]
                turn[host] = turn.get(host, 0) + 1
                self.links.append(Link(build, address, rtt, work, "debugger-%s-%d" % (run, rank)))
                named.append("--gdbserver %s=%s" % (host, self.links[-1].address))
        except BaseException:
            self.stop()
            raise
        self.attach = "mqd attach --launcher %d --without-thread-db %s" % (job.launcher,
                                                                           " ".join(named))

    def stop(self):
        stop_all(self.links)
        slurm.release_gdbservers(self.gdbservers)


def stop_all(links):
    for link in links:
        link.stop()


def measure(build, dll, shape, rtt, ops, native_max_ranks, work):
    """The rows of one shape (nodes, ranks per node)."""
    nodes, per_node = shape
    rows = []
    with Cluster(os.path.join(work, "cluster"), nodes=nodes, cpus=max(8, 2 * per_node)) as c:
        env = c.env()
        os.environ.clear()
        os.environ.update(env)
        os.mkdir(os.path.join(work, "job"))
        job = SrunJob(c, build.pending, ops, nodes, nodes * per_node, os.path.join(work, "job"),
                      per_node)
        servers = server_links = None
        try:
            base = {"nodes": nodes, "ranks": nodes * per_node}
            reference = None
            if base["ranks"] <= native_max_ranks:
                debugger = SlurmGdbservers(build, job, rtt, work, "native")
                try:
                    result, texts = run_gdb(build, debugger.attach, "mqd load " + dll,
                                            os.path.join(work, "native"), links=debugger.links)
                finally:
                    debugger.stop()
                reference = texts[0]
                posted("native", reference, job)
                rows.append(dict(base, mode="native", **timing(result)))
                report(rows[-1])
            servers = SlurmServers(c, job.job_id, c.nodes, build.server, dll, work, learn=True)
            server_links = [Link(build, e.split(":", 1)[1], rtt, work, "server-%d" % i)
                            for i, e in enumerate(servers.endpoints)]
            shim_env = {"MQD_PROXY_TOKEN_FILE": servers.token_file,
                        "MQD_PROXY_STATE_DIR": os.path.join(work, "shim-state"),
                        "MQD_PROXY_READ_COST": "0"}
            load = "mqd load --server '%s' --vendor-dll %s %s" % (
                " ".join("tcp:" + link.address for link in server_links), dll, build.shim)
            for mode in ("cold", "learned"):
                debugger = SlurmGdbservers(build, job, rtt, work, mode)
                try:
                    result, texts = run_gdb(build, debugger.attach, load,
                                            os.path.join(work, mode), servers.pids,
                                            servers.endpoints, shim_env=shim_env,
                                            links=debugger.links)
                finally:
                    debugger.stop()
                if reference is None:
                    reference = texts[0]
                    posted(mode, reference, job)
                check(texts, reference, "%dx%d %s" % (nodes, per_node, mode), work)
                first = delta(result["counters"][0], {})
                refresh = delta(result["counters"][1], result["counters"][0])
                rows.append(dict(base, mode=mode, **timing(result),
                                 rts=(round_trips(first), round_trips(refresh)),
                                 bytes=(wire_bytes(first), wire_bytes(refresh)),
                                 rss_servers=result["rss_server"] + sum(result["rss_workers"])))
                report(rows[-1])
        finally:
            stop_all(server_links or [])
            if servers:
                servers.stop()
            job.stop()
    return rows


def posted(mode, dump, job):
    """Says where the reference dump differs from what the ranks posted. Not a failure: from 64
    ranks on, Open MPI 4.1 makes a process's peers' records only when it first talks to them
    (its mpi_add_procs_cutoff), and the DLL shows a group member it has no record of as 0, as
    it is (docs/debuggers.md: its quirks are shown, not "fixed"). The proxied dumps must equal
    the reference."""
    problems = check_against_manifests(json.loads(dump), job.manifests)
    if problems:
        print("note: the %s dump differs from the ranks' manifests in %d places, e.g. %s"
              % (mode, len(problems), problems[0][:200]), flush=True)


def report(r):
    line = "%dx%d %-8s attach %6.2f s  load %5.2f s  first %6.2f s  refresh %6.2f s" % (
        r["nodes"], r["ranks"] // r["nodes"], r["mode"], r["attach"], r["load"], r["first"],
        r["refresh"])
    if "packets" in r:
        line += "  debugger exchanges %d / %d" % tuple(r["packets"][2:4])
    if "rts" in r:
        line += "  server round trips %d / %d, %s / %s" % (r["rts"] + tuple(
            human(b) for b in r["bytes"]))
    print(line, flush=True)


def table(rows):
    out = ["| nodes x ranks | mode | attach | load | first dump | refresh | debugger link "
           "exchanges (first / refresh) | server links: round trips (first / refresh) | bytes "
           "(first / refresh) | RSS gdb | RSS servers (all nodes) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %d x %d | %s | %.2f s | %.2f s | %.2f s | %.2f s | %s | %s | %s | %s | %s |"
                   % (r["nodes"], r["ranks"] // r["nodes"], r["mode"], r["attach"], r["load"],
                      r["first"], r["refresh"],
                      "%d / %d" % tuple(r["packets"][2:4]) if "packets" in r else "",
                      "%d / %d" % r["rts"] if "rts" in r else "",
                      "%s / %s" % tuple(human(b) for b in r["bytes"]) if "bytes" in r else "",
                      human(r["rss_gdb"]),
                      human(r["rss_servers"]) if "rss_servers" in r else ""))
    return "\n".join(out)


def growth(rows):
    """Per added node and per added rank between the two largest shapes' learned runs, and the
    projection to PROJECTED_NODES nodes of the largest shape's ranks per node."""
    learned = sorted((r for r in rows if r["mode"] == "learned"), key=lambda r: r["ranks"])
    if len(learned) < 2:
        return "(one shape measured: no growth)"
    a, b = learned[-2], learned[-1]
    dn, dr = b["nodes"] - a["nodes"], b["ranks"] - a["ranks"]
    out = ["| learned | per added node | per added rank | projected to %d nodes x %d ranks |"
           % (PROJECTED_NODES, b["ranks"] // b["nodes"]), "|---|---|---|---|"]
    for key, unit in (("attach", "s"), ("first", "s"), ("refresh", "s"), ("rss_gdb", "B"),
                      ("rss_servers", "B")):
        per_rank = (b[key] - a[key]) / dr
        projected = b[key] + per_rank * (PROJECTED_NODES * b["ranks"] // b["nodes"] - b["ranks"])
        show = (lambda v: "%.3f s" % v) if unit == "s" else (lambda v: human(int(v)))
        out.append("| %s | %s | %s | %s |" % (key, show((b[key] - a[key]) / dn), show(per_rank),
                                              show(projected)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--shapes", default="8x8,16x16")
    ap.add_argument("--rtt", type=float, default=20)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--native-max-ranks", type=int, default=64)
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS-cluster.md"))
    args = ap.parse_args()
    build = Build(args.build)
    dll = open_mpi_dll()
    shapes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    for shape in shapes:
        work = tempfile.mkdtemp(prefix="mqd-bench-cluster-",
                                dir=os.path.join(os.path.abspath(args.build), "tests"))
        rows += measure(build, dll, shape, args.rtt, args.ops, args.native_max_ranks, work)
    command = "python3 bench/cluster.py --build BUILD --shapes %s --rtt %g --ops %d " \
        "--native-max-ranks %d" % (args.shapes, args.rtt, args.ops, args.native_max_ranks)
    text = ["# A Slurm job across nodes: a server on every node", "",
            "Made by `%s` on %s (%s, %d cores), %s." % (
                command, platform.node(), platform.machine(), os.cpu_count(),
                datetime.date.today().isoformat()), "",
            "The simulated cluster of tools/cluster/ on this one machine; %g ms round trip on "
            "every debugger link (gdb to each rank's gdbserver) and every server link (the "
            "shim to each node's server). Times in seconds; the attach is gdb's own "
            "(`--without-thread-db`)." % args.rtt, "", table(rows), "", growth(rows), ""]
    with open(args.output, "w") as f:
        f.write("\n".join(text))
    print("written to %s" % args.output)


if __name__ == "__main__":
    main()
