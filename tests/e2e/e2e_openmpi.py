#!/usr/bin/env python3
"""End to end with a real debugger and real MPI.

A live Open MPI job (tests/e2e/pending.c) leaves N pending operations on every rank and parks.
gdb, with the mqd front end, attaches to every rank (one inferior each) and dumps all of them:
once with Open MPI's own DLL loaded natively, then through libmqdproxy.so and a real
mqd-proxy-server, over a unix socket and over TCP loopback. The dumps (text and JSON) must be
byte-identical, and they must show what each rank posted, as recorded in its manifest: tags,
peers (local and world), lengths, buffers, communicator names, sizes and group translations.

usage: e2e_openmpi.py --build DIR --ompi-dll PATH --frontend PATH --ops N [--ranks 4]
                     [--shim PATH] [--ssh]
The job, the servers, gdb and sshd are the shared test infrastructure of testing/python.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from dump_matrix import DumpMatrix, summary  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from mpi_job import Job, check_against_manifests  # noqa: E402
from scratch import tear_down  # noqa: E402
from sshd import Sshd  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    ap.add_argument("--ssh", action="store_true",
                    help="also dump through ssh://: a loopback sshd (testing/python/sshd.py) "
                         "runs mqd-proxy-server --stdio, as docs/configuration.md describes "
                         "(ssh:// servers)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    built = Artefacts(build)
    shim = args.shim or built.require("shim")
    server_bin = built.require("server")
    program = built.require("pending")

    work = tempfile.mkdtemp(prefix="mqd-e2e-")
    job = matrix = sshd = None
    passed = False
    try:
        job = Job(program, args.ranks, args.ops, work)
        matrix = DumpMatrix(server_bin, args.ompi_dll, shim, work, built.require("relay"))
        if args.ssh:
            sshd = Sshd(work)
            matrix.add("ssh", sshd.url(server_bin), {"MQD_PROXY_SSH_OPTIONS": sshd.options})
        outputs = matrix.dump(job.pids, args.frontend, "dump of %d ranks with %d pending "
                              "operations each" % (args.ranks, args.ops))
        problems = matrix.differences(outputs)
        dumps = json.loads(outputs["native"][0])
        problems += check_against_manifests(dumps, job.manifests)
        print(summary(dumps))
        status = verdict(problems, work,
                         "native and proxied dumps (unix, TCP%s; cache epoch, call, off; node memory) "
                         "identical, and matching what every rank posted"
                         % (", ssh" if args.ssh else ""))
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, matrix, sshd, job)


if __name__ == "__main__":
    sys.exit(main())
