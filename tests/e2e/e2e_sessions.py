#!/usr/bin/env python3
"""MPI-4 Sessions on Open MPI 5, end to end: what Open MPI's DLL shows of communicators made
from process sets, natively and through the proxy alike.

A live 4-rank Open MPI job runs tests/mpich/sessions.c (built with Open MPI's mpicc), MODE
"sessions" (MPI_Init never called) or "world" (MPI_Init first): it makes communicators from
"mpi://WORLD" (unnamed, and named) and "mpi://SELF" with MPI_Comm_create_from_group, leaves
operations pending on them, writes what it did to a manifest and parks. gdb attaches the ranks
with `mqd attach --launcher` (Open MPI 5's mpirun has no MPIR table: its PMIx server's) and
dumps them natively and through the proxy in every mode (testing/python/dump_matrix.py).

Every proxied dump must equal the native one byte for byte, and the native one must show what
docs/open-mpi-5.md ("MPI-4 Sessions") states of Open MPI 5.0's DLL:
  * every communicator the program made is listed with its local rank and size: a named one by
    its name, the others as "MPI COMM <extended cid> FROM GROUP";
  * every receive posted, with its tag (or wildcard), peer (MPI_ANY_SOURCE as the DLL's
    unsigned -1) and length in bytes, pending; every send posted past the eager limit, pending;
    a small (eager) send complete, or gone once Open MPI freed its request;
  * MPI_COMM_WORLD and MPI_COMM_SELF listed once in mode "world", not at all in "sessions";
  * the group, as world ranks: the manifest's (ranks of "mpi://WORLD") in mode "world"; in
    mode "sessions" every member is world rank 0, the DLL translating through MPI_COMM_WORLD's
    group, which a Sessions-only program never initialises.

usage: e2e_sessions.py --build DIR --ompi-dll PATH --frontend PATH --program PATH
                       --mode sessions|world [--ranks 4] [--shim PATH]
"""
import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
from artefacts import Artefacts  # noqa: E402
from dump_matrix import DumpMatrix, summary  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from mpi_job import ANY_SOURCE_QUIRK, OpenMpiJob  # noqa: E402
from scratch import tear_down  # noqa: E402

FROM_GROUP = re.compile(r"MPI COMM 0x[0-9a-f]+ FROM GROUP$")
BUILT_IN = ("MPI_COMM_WORLD", "MPI_COMM_SELF")
RECEIVES = ("recv", "recv_any_source", "recv_any_tag")
SENDS = ("send", "send_small")


def find(communicators, facts):
    """The dumped communicator the manifest's `facts` describe, or None."""
    if facts["name"]:
        matches = [c for c in communicators if c["name"] == facts["name"]]
    else:
        matches = [c for c in communicators
                   if FROM_GROUP.match(c["name"]) and c["size"] == facts["size"]]
    return matches[0] if len(matches) == 1 else None


def check_rank(dump, m, mode):
    who = "rank %d (%s)" % (m["rank"], mode)
    if dump.get("error"):
        return ["%s: %s" % (who, dump["error"])]
    problems = []
    names = [c["name"] for c in dump["communicators"]]
    for name in BUILT_IN:
        want = 1 if mode == "world" else 0
        if names.count(name) != want:
            problems.append("%s: %s listed %d times, expected %d" % (who, name,
                                                                     names.count(name), want))
    for label, facts in m["communicators"].items():
        c = find(dump["communicators"], facts)
        if c is None:
            problems.append("%s: communicator %s (%r) missing or ambiguous in %s"
                            % (who, label, facts["name"], names))
            continue
        if (c["local_rank"], c["size"]) != (facts["rank"], facts["size"]):
            problems.append("%s: %s is rank %s of %s, expected %d of %d" % (
                who, label, c["local_rank"], c["size"], facts["rank"], facts["size"]))
        group = facts["group"] if mode == "world" or label == "world" else [0] * facts["size"]
        if c["group"] != group:
            problems.append("%s: %s group %s, expected %s" % (who, label, c["group"], group))
        posted = [op for op in m["operations"] if op["comm"] == label]
        for queue, kinds in (("sends", SENDS), ("receives", RECEIVES)):
            want = [op for op in posted if op["kind"] in kinds]
            have = {o["buffer"]: o for o in c["queues"][queue]["operations"]}
            unknown = set(have) - {int(op["buffer"], 16) for op in want}
            if unknown:
                problems.append("%s: %s %s: operations not posted, buffers %s" % (
                    who, label, queue, sorted(hex(b) for b in unknown)))
            for op in want:
                got = have.get(int(op["buffer"], 16))
                if got is None and op["kind"] == "send_small":
                    continue  # complete, and its request freed
                if got is None:
                    problems.append("%s: %s %s with buffer %s missing" % (who, label,
                                                                         op["kind"], op["buffer"]))
                    continue
                problems += check_operation("%s: %s %s tag %s" % (who, label, op["kind"],
                                                                   op["tag"]), op, got)
    return problems


def check_operation(where, op, got):
    problems = []
    if got["desired_length"] != op["bytes"]:
        problems.append("%s: length %s, posted %s" % (where, got["desired_length"], op["bytes"]))
    if op["kind"] != "send_small" and got["status"] != "pending":
        problems.append("%s: status %s" % (where, got["status"]))
    if op["kind"] == "recv_any_tag":
        if not got["tag_wild"]:
            problems.append("%s: not shown as a wildcard tag" % where)
    elif got["tag_wild"] or got["desired_tag"] != op["tag"]:
        problems.append("%s: tag %s" % (where, got["desired_tag"]))
    peer = ANY_SOURCE_QUIRK if op["kind"] == "recv_any_source" else op["peer_local"]
    if got["desired_local_rank"] != peer:
        problems.append("%s: peer %s, expected %s" % (where, got["desired_local_rank"], peer))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--program", required=True, help="tests/mpich/sessions.c, built by mpicc")
    ap.add_argument("--mode", required=True, choices=("sessions", "world"))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    shim = args.shim or built.require("shim")

    work = tempfile.mkdtemp(prefix="mqd-e2e-sessions-")
    job = matrix = None
    passed = False
    try:
        job = OpenMpiJob([args.program, args.mode], args.ranks, work)
        matrix = DumpMatrix(built.require("server"), args.ompi_dll, shim, work,
                            built.require("relay"))
        outputs = matrix.dump(job.pids, args.frontend,
                              "dump of %d ranks, the Sessions program (%s)"
                              % (args.ranks, args.mode),
                              "mqd attach --launcher %d" % job.proc.pid)
        problems = matrix.differences(outputs)
        dumps = json.loads(outputs["native"][0])
        if len(dumps) != len(job.manifests):
            problems.append("%d inferiors dumped, %d ranks" % (len(dumps), len(job.manifests)))
        for dump, m in zip(dumps, job.manifests):
            problems += check_rank(dump, m, args.mode)
        print(summary(dumps))
        status = verdict(problems, work,
                         "Open MPI Sessions (%s): native and proxied dumps (unix, TCP; cache "
                         "epoch, call, off; node memory) identical, showing every session "
                         "communicator and what every rank posted" % args.mode)
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, matrix, job)


if __name__ == "__main__":
    sys.exit(main())
