#!/usr/bin/env python3
"""End to end with MPICH's own DLL, the original MQD.

A live MPICH job under Hydra (4 ranks) runs tests/e2e/pending.c (N pending operations per rank)
or, with --sessions MODE, tests/mpich/sessions.c (communicators made from MPI-4 process sets;
MODE "sessions" alone or "world" beside MPI_Init), both built with MPICH's mpicc. gdb, with the
mqd front end, attaches to every rank and dumps them all: with libtvmpich.so (the DLL the
target's MPIR_dll_name names) loaded natively, then through libmqdproxy.so and real servers
running it, over a unix socket and TCP, in every cache mode (testing/python/dump_matrix.py).

Every proxied dump must equal the native one byte for byte (JSON and text), and the native dump
must show what every rank posted and was sent, by MPICH's rules (tests/mpich/mpich_manifest.py).
With --sessions, also what docs/mpich.md ("MPI-4 sessions") states: the communicators made
from process sets are listed like any other, and MPI_COMM_WORLD, MPI_COMM_SELF and
MPI_ICOMM_WORLD are listed even when the program never called MPI_Init.

usage: e2e_mpich.py --build DIR --mpich PREFIX --frontend PATH --program PATH
                    (--ops N | --sessions sessions|world) [--ranks 4] [--shim PATH] [--launcher]
"""
import argparse
import json
import os
import socket
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
from artefacts import Artefacts  # noqa: E402
from dump_matrix import DumpMatrix, summary  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from mpi_job import MpichJob  # noqa: E402
from mpich_manifest import check_against_manifests  # noqa: E402
from scratch import tear_down  # noqa: E402

BUILT_IN = ("MPI_COMM_WORLD", "MPI_COMM_SELF", "MPI_ICOMM_WORLD")


def sessions_findings(dumps, mode):
    """What docs/mpich.md says MQD shows of a Sessions program, rank by rank."""
    problems = []
    for d in dumps:
        names = [c["name"] for c in d.get("communicators", [])]
        for name in BUILT_IN:
            if names.count(name) != 1:
                problems.append("rank %s (%s): %r listed %d times, expected once (MPICH builds "
                                "it%s)" % (d["rank"], mode, name, names.count(name),
                                           " without MPI_Init" if mode == "sessions" else ""))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--mpich", required=True, help="tools/mpich/build-mpich.sh's prefix")
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--program", required=True, help="pending.c or sessions.c, built by MPICH")
    ap.add_argument("--ops", type=int)
    ap.add_argument("--sessions", choices=("sessions", "world"))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    ap.add_argument("--launcher", action="store_true",
                    help="gdb attaches the ranks with `mqd attach --launcher` (Hydra's MPIR "
                         "process table) instead of one `attach PID` each")
    args = ap.parse_args()
    if (args.ops is None) == (args.sessions is None):
        ap.error("one of --ops N and --sessions MODE")
    built = Artefacts(os.path.abspath(args.build))
    shim = args.shim or built.require("shim")
    server_bin = built.require("server")
    dll = os.path.join(args.mpich, "lib", "libtvmpich.so")
    argv = [args.program] + ([str(args.ops)] if args.sessions is None else [args.sessions])
    what = ("%d pending operations per rank" % args.ops if args.sessions is None
            else "the Sessions program (%s)" % args.sessions)

    work = tempfile.mkdtemp(prefix="mqd-e2e-mpich-")
    job = matrix = None
    passed = False
    try:
        job = MpichJob(args.mpich, args.ranks, argv, work)
        matrix = DumpMatrix(server_bin, dll, shim, work, built.require("relay"))
        attach = "mqd attach --launcher %d" % job.proc.pid if args.launcher else None
        outputs = matrix.dump(job.pids, args.frontend, "dump of %d ranks, %s" % (args.ranks,
                                                                                 what), attach)
        problems = matrix.differences(outputs)
        dumps = json.loads(outputs["native"][0])
        problems += check_against_manifests(dumps, job.manifests)
        if args.launcher:
            hosts = {d.get("host") for d in dumps}
            if hosts != {socket.gethostname()}:
                problems.append("hosts from Hydra's table: %s" % sorted(map(str, hosts)))
        if args.sessions:
            problems += sessions_findings(dumps, args.sessions)
        print(summary(dumps))
        status = verdict(problems, work,
                         "MPICH: native and proxied dumps (unix, TCP; cache epoch, call, off; node memory) "
                         "identical, and showing what every rank posted and was sent")
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, matrix, job)


if __name__ == "__main__":
    sys.exit(main())
