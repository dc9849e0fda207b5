#!/usr/bin/env python3
"""End to end: a debugger that shows a rank in a state other than the live one, to a server
that reads the ranks on their node.

A live Open MPI job (tests/e2e/pending.c) parks; gdb attaches to every rank and dumps the job
twice, natively and then through libmqdproxy.so and a `--node-memory` server on this host.
Between the two dumps, tests/e2e/past_state.py makes gdb show rank 0 otherwise than it lives:
some of its bytes come back inverted (see there). The first dump proves every rank on the
node; at the second, the shim makes rank 0's epoch check while its update travels, and the
other ranks' updates are made ahead on the node with it, each proved at its own by its check
(docs/round-trips.md, "Reading the target on its node"). For rank 0 the debugger's bytes are
not the node's: its update must go again with the debugger's, the node refused, and what the
proxy shows must be what the native load shows with the same debugger. The other ranks'
checks hold. Then rank 0 is shown otherwise from before its set-up, and rank 1 from the
second dump (its update made ahead is found stale).

usage: e2e_past_state.py --build DIR --ompi-dll PATH --frontend PATH [--ops N] [--ranks 4]
                         [--shim PATH]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from gdb_driver import gdb_command  # noqa: E402
from mpi_job import Job  # noqa: E402
from scratch import tear_down  # noqa: E402
from servers import Server  # noqa: E402

# What rank 0 is shown otherwise, besides the top of its stack (past_state.py): Open
# MPI's table of communicators (opal_pointer_array_t), which the DLL reads first at every
# mqs_update_communicator_list.
CHANGED = ("ompi_mpi_communicators", 256)
PAST_STATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "past_state.py")


def dumps(pids, frontend, load, prefix, env, early=False, inferior=1):
    """gdb dumps the job, arms past_state.py for `inferior`, dumps again; returns gdb's output.
    Writes PREFIX-live.json and PREFIX-past.json. `early`: gdb arms it before its only dump,
    which sets every rank up (PREFIX-early.json)."""
    armed = "mqd-past-state %d %s %d" % ((inferior,) + CHANGED)
    if early:
        steps = ["-ex", armed, "-ex", "mqd dump --all --json --output %s-early.json" % prefix]
        written = prefix + "-early.json"
    else:
        steps = ["-ex", "mqd dump --all --json --output %s-live.json" % prefix,
                 "-ex", armed,
                 "-ex", "mqd dump --all --json --output %s-past.json" % prefix]
        written = prefix + "-past.json"
    cmd = gdb_command(pids, frontend, load) + ["-ex", "source " + PAST_STATE] + steps + [
        "-ex", "mqd-past-state"]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=600, env=dict(os.environ, **env))
    with open(prefix + "-gdb.txt", "w") as f:
        f.write(result.stdout)
    if result.returncode != 0 or "Traceback" in result.stdout or not os.path.exists(written):
        raise Failure("gdb failed (%d):\n%s" % (result.returncode, result.stdout[-4000:]))
    return result.stdout


def updates_served(log):
    """(updates served from refreshes ahead, more found stale, epoch checks made late, sent
    again) of each session summary in a shim's log, as strings."""
    return re.findall(r"session summary: .* (\d+) updates served from refreshes ahead and \d+ "
                      r"from epochs held \((\d+) more found stale\).* (\d+) epoch checks "
                      r"made late \((\d+) sent again\)", log)


def read(path):
    with open(path) as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    work = tempfile.mkdtemp(prefix="mqd-e2e-past-")
    job = server = None
    passed = False
    try:
        job = Job(built.require("pending"), args.ranks, args.ops, work)
        server = Server(built.require("server"), "unix:" + os.path.join(work, "node.sock"),
                        args.ompi_dll, work, "node", extra=["--node-memory"])
        native = dumps(job.pids, args.frontend, "mqd load", os.path.join(work, "native"), {})
        shim_log = os.path.join(work, "shim.log")
        proxied = dumps(job.pids, args.frontend, "mqd load --server %s --vendor-dll %s %s"
                        % (server.endpoint, args.ompi_dll, args.shim or built.require("shim")),
                        os.path.join(work, "node"),
                        {"MQD_PROXY_LOG": "info", "MQD_PROXY_LOG_FILE": shim_log})
        problems = []
        changed = {}
        for name, output in (("native", native), ("node", proxied)):
            found = re.findall(r"past-state: (\d+) reads changed", output)
            changed[name] = found[-1] if found else None
            if not found or int(found[-1]) == 0:
                problems.append("%s: gdb showed rank 0 as it lives (%s)" % (name, found))
        for state in ("live", "past"):
            if read(os.path.join(work, "native-%s.json" % state)) != \
                    read(os.path.join(work, "node-%s.json" % state)):
                problems.append("the %s dump through the node server is not the native one: "
                                "see %s" % (state, work))
        if read(os.path.join(work, "native-live.json")) == \
                read(os.path.join(work, "native-past.json")):
            problems.append("the changed bytes of rank 0 change nothing in its dump: the test "
                            "proves nothing (changed at %s)" % (changed["native"],))
        late = updates_served(read(shim_log))
        # Rank 0's update of each dump checked late: that of the first held, that of the second
        # went again; every other rank's made ahead on the node with it, its check the
        # debugger's bytes.
        wanted = (str(2 * (args.ranks - 1)), "0", "1", "1")
        if late[-1:] != [wanted]:
            problems.append("the shim served %s updates from refreshes ahead (found stale) and "
                            "made epoch checks late (sent again), not %s: see %s"
                            % (late[-1:], wanted, shim_log))
        # Rank 0 shown otherwise from its set-up on: the proof the shim makes late finds the
        # debugger's top of its stack not the node's, and its set-up goes again with the
        # debugger's bytes, which the node refuses; the other ranks' proofs hold.
        dumps(job.pids, args.frontend, "mqd load", os.path.join(work, "native"), {}, early=True)
        early_log = os.path.join(work, "shim-early.log")
        dumps(job.pids, args.frontend, "mqd load --server %s --vendor-dll %s %s"
              % (server.endpoint, args.ompi_dll, args.shim or built.require("shim")),
              os.path.join(work, "node"),
              {"MQD_PROXY_LOG": "info", "MQD_PROXY_LOG_FILE": early_log}, early=True)
        if read(os.path.join(work, "native-early.json")) != \
                read(os.path.join(work, "node-early.json")):
            problems.append("the dump of rank 0 shown otherwise from its set-up on through the "
                            "node server is not the native one: see %s" % work)
        proofs = re.findall(r"session summary: .* (\d+) set-ups proved late \((\d+) sent "
                            r"again\)", read(early_log))
        if proofs[-1:] != [(str(args.ranks - 1), "1")]:
            problems.append("the shim proved %s set-ups late (sent again), not %d (1): see %s"
                            % (proofs[-1:], args.ranks - 1, early_log))
        # Rank 1 shown otherwise at the second dump: its update made ahead on the node, with
        # rank 0's, from the live bytes, is found stale at its own (the debugger's check is
        # not the node's), goes again with the debugger's bytes, and the node refuses it.
        dumps(job.pids, args.frontend, "mqd load", os.path.join(work, "native-other"), {},
              inferior=2)
        other_log = os.path.join(work, "shim-other.log")
        dumps(job.pids, args.frontend, "mqd load --server %s --vendor-dll %s %s"
              % (server.endpoint, args.ompi_dll, args.shim or built.require("shim")),
              os.path.join(work, "node-other"),
              {"MQD_PROXY_LOG": "info", "MQD_PROXY_LOG_FILE": other_log}, inferior=2)
        for state in ("live", "past"):
            if read(os.path.join(work, "native-other-%s.json" % state)) != \
                    read(os.path.join(work, "node-other-%s.json" % state)):
                problems.append("the %s dump with rank 1 shown otherwise through the node "
                                "server is not the native one: see %s" % (state, work))
        late = updates_served(read(other_log))
        wanted = (str(2 * (args.ranks - 1) - 1), "1", "2", "0")
        if late[-1:] != [wanted]:
            problems.append("with rank 1 shown otherwise, the shim served %s updates from "
                            "refreshes ahead (found stale) and made epoch checks late (sent "
                            "again), not %s: see %s" % (late[-1:], wanted, other_log))
        server_log = server.log
        server.stop()
        server = None
        refused = re.findall(r"memory read through the debugger: pid (\d+)'s memory",
                             read(server_log))
        expected = [str(job.pids[0])] * 2 + [str(job.pids[1])]
        if refused != expected:
            problems.append("the node server refused %s, not rank 0 (pid %d) twice and then "
                            "rank 1 (pid %d): see %s"
                            % (refused, job.pids[0], job.pids[1], server_log))
        print("rank 0 shown with bytes inverted in %s reads natively, %s through the node server"
              % (changed["native"], changed["node"]))
        status = verdict(problems, work, "a rank the debugger shows in another state than it "
                         "lives is shown as the debugger shows it, through a node server too")
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, server, job)


if __name__ == "__main__":
    sys.exit(main())
