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
from failure import Failure, verdict  # noqa: E402
from gdb_driver import gdb_dump  # noqa: E402
from mpi_job import Job, check_against_manifests  # noqa: E402
from scratch import tear_down  # noqa: E402
from servers import Server  # noqa: E402
from sshd import Sshd  # noqa: E402


class Endpoint:
    """A server the shim starts itself (ssh://): only its endpoint."""
    def __init__(self, endpoint):
        self.endpoint = endpoint


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
    job = servers = sshd = None
    passed = False
    try:
        job = Job(program, args.ranks, args.ops, work)
        servers = [Server(server_bin, "unix:" + os.path.join(work, "s.sock"), args.ompi_dll,
                          work, "unix"),
                   Server(server_bin, "tcp:127.0.0.1:0", args.ompi_dll, work, "tcp")]
        # (name, load command, environment): native first, then the proxy in every cache mode.
        # unix (epoch) is the first session ever, tcp (epoch, compressed) a fresh session with
        # learned look-ups and memory; call and off are the conservative modes.
        runs = [("native", "mqd load", {})]
        proxied = [("unix", servers[0], {}), ("tcp", servers[1], {}),
                   ("unix-call", servers[0], {"MQD_PROXY_CACHE": "call"}),
                   ("unix-off", servers[0], {"MQD_PROXY_CACHE": "off"})]
        if args.ssh:
            sshd = Sshd(work)
            proxied.append(("ssh", Endpoint(sshd.url(server_bin)),
                            {"MQD_PROXY_SSH_OPTIONS": sshd.options}))
        for name, server, env in proxied:
            runs.append((name, "mqd load --server %s --vendor-dll %s %s"
                         % (server.endpoint, args.ompi_dll, shim), env))
        outputs = {}
        for name, load, env in runs:
            prefix = os.path.join(work, name)
            seconds = gdb_dump(job.pids, args.frontend, load, prefix, env)
            outputs[name] = (open(prefix + ".json").read(), open(prefix + ".txt").read())
            print("%-9s dump of %d ranks with %d pending operations each: %.2f s"
                  % (name, args.ranks, args.ops, seconds))
        problems = []
        for name, _, _ in proxied:
            for i, kind in enumerate(("JSON", "text")):
                if outputs[name][i] != outputs["native"][i]:
                    problems.append("%s dump (%s) differs from the native one: see %s" % (
                        name, kind, work))
        dumps = json.loads(outputs["native"][0])
        problems += check_against_manifests(dumps, job.manifests)
        comms = [c for d in dumps for c in d.get("communicators", [])]
        total = sum(len(q["operations"]) for c in comms for q in c["queues"].values())
        print("dumped %d operations on %d communicators across %d ranks"
              % (total, len(comms), len(dumps)))
        status = verdict(problems, work,
                         "native and proxied dumps (unix, TCP%s; cache epoch, call, off) "
                         "identical, and matching what every rank posted"
                         % (", ssh" if args.ssh else ""))
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, servers, sshd, job)


if __name__ == "__main__":
    sys.exit(main())
