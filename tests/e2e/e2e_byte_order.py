#!/usr/bin/env python3
"""A debugger wrong about the target's byte order is named, not silently believed.

A live Open MPI job (tests/e2e/pending.c) parks with pending operations. gdb attaches to every
rank and dumps the queues through libmqdproxy.so and a real mqd-proxy-server running Open MPI's
libompi_dbg_msgq.so, but with the front end's target_to_host replaced (wrong_byte_order.py) by
one that swaps bytes for this little-endian target: a debugger that believes the target is
big-endian. The shim learns that byte order from the debugger and the DLL then reads every
integer byte-reversed.

What must happen (docs/transparency.md, "What the shim adds"):
  * every rank's dump (`mqd dump --all --json`, and the whole-job snapshot) carries the proxy's
    warning, naming both byte orders;
  * the shim's log (gdb's stderr) and the server's log say the same;
  * `mqd-proxy graph` on the snapshot names each rank in a `proxy-warning` explanation;
  * gdb survives, whatever the DLL made of the reversed integers.

usage: e2e_byte_order.py --build DIR --ompi-dll PATH --frontend PATH [--ranks 3] [--ops 4]
                         [--shim PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # importing the test infrastructure must not litter the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from gdb_driver import gdb_command  # noqa: E402
from mpi_job import Job  # noqa: E402
from scratch import tear_down  # noqa: E402
from servers import Server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WRONG_BYTE_ORDER = os.path.join(HERE, "wrong_byte_order.py")
# What the warning must say of this (little-endian) target and the debugger's claim.
SAYS = ("target_to_host says this process is big-endian", "its memory is little-endian")


def check_warnings(where, warnings, problems):
    if len(warnings) != 1 or not all(s in warnings[0] for s in SAYS):
        problems.append("%s: expected one warning saying %s; got %r" % (where, SAYS, warnings))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--ops", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    shim = args.shim or built.require("shim")
    program = built.require("pending")

    work = tempfile.mkdtemp(prefix="mqd-e2e-byte-order-")
    job = server = None
    passed = False
    started = time.time()
    try:
        job = Job(program, args.ranks, args.ops, work)
        server = Server(built.require("server"), "unix:" + os.path.join(work, "s.sock"),
                        args.ompi_dll, work, "unix")
        dumps_file = os.path.join(work, "dumps.json")
        snapshot_file = os.path.join(work, "snapshot.json")
        load = "mqd load --server %s --vendor-dll %s %s" % (server.endpoint, args.ompi_dll, shim)
        cmd = gdb_command(job.pids, args.frontend, "source " + WRONG_BYTE_ORDER) + [
            "-ex", load,
            "-ex", "mqd dump --all --json --output " + dumps_file,
            "-ex", "mqd snapshot " + snapshot_file]
        gdb = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=600)
        with open(os.path.join(work, "gdb.out"), "w") as f:
            f.write(gdb.stdout)
        problems = []
        if gdb.returncode != 0 or "Traceback" in gdb.stdout:
            raise Failure("gdb failed (%d):\n%s" % (gdb.returncode, gdb.stdout[-4000:]))
        if "target_to_host now swaps bytes" not in gdb.stdout:
            raise Failure("the wrong target_to_host was not installed:\n" + gdb.stdout[-4000:])

        dumps = json.load(open(dumps_file))
        if len(dumps) != args.ranks:
            problems.append("%d dumps for %d ranks" % (len(dumps), args.ranks))
        for d in dumps:
            check_warnings("the dump of inferior %s" % d.get("inferior"),
                           d.get("warnings", []), problems)
        snapshot = json.load(open(snapshot_file))
        for r in snapshot["ranks"]:
            check_warnings("the snapshot of inferior %s" % r.get("inferior"),
                           r.get("warnings", []), problems)

        shim_lines = [line for line in gdb.stdout.splitlines()
                      if "warn: mqd-proxy: " in line and all(s in line for s in SAYS)]
        if len(shim_lines) != args.ranks:
            problems.append("the shim logged %d byte-order warnings for %d ranks:\n%s"
                            % (len(shim_lines), args.ranks, gdb.stdout[-4000:]))
        server_lines = [line for line in open(server.log).read().splitlines()
                        if "warn: process " in line and all(s in line for s in SAYS)]
        if len(server_lines) != args.ranks:
            problems.append("the server logged %d byte-order warnings for %d ranks"
                            % (len(server_lines), args.ranks))

        graph = subprocess.run([built.require("cli"), "graph", snapshot_file, "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
        if graph.returncode != 0:
            raise Failure("mqd-proxy graph failed (%d): %s" % (graph.returncode, graph.stderr))
        named = sorted(r for f in json.loads(graph.stdout)["explanations"]
                       if f["kind"] == "proxy-warning" and all(s in f["text"] for s in SAYS)
                       for r in f["ranks"])
        if named != list(range(args.ranks)):
            problems.append("mqd-proxy graph named ranks %s in proxy-warning explanations, "
                            "expected %s" % (named, list(range(args.ranks))))
        status = verdict(problems, work,
                         "%d ranks, each warned of in its dump, its snapshot entry, the shim's "
                         "and the server's logs and the verdict: %s (%.1f s)"
                         % (args.ranks, shim_lines[0].split("warn: ", 1)[1][:120] if shim_lines
                            else "", time.time() - started))
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, server, job)


if __name__ == "__main__":
    sys.exit(main())
