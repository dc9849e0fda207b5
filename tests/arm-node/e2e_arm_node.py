#!/usr/bin/env python3
"""The aarch64 node (issue 44): a native reference for another architecture at last.

An aarch64 machine with its own kernel (tools/arm-node/: qemu-system-aarch64, Debian 12's
arm64 kernel and packages) runs a live 4-rank Open MPI job of tests/e2e/pending.c, built for
aarch64. On the node, its own aarch64 gdb attaches every rank, loads Open MPI's aarch64 DLL
natively with the front end and dumps the queues: the reference. From this x86_64 host,
gdb-multiarch reaches the same ranks through a `gdbserver --attach` per rank on the node (the
node's files as its sysroot) and loads this build's shim, whose server is the aarch64
mqd-proxy-server on the node running the same DLL (TCP with a token). Every proxied dump (JSON,
the first text dump and its refresh) must be the node's native one byte for byte, addresses
and all, in each cache mode (epoch, call, off), from a server without and with --node-memory;
the --node-memory server's log must show every rank proved and read on the node in its epoch and
call sessions, and none in its off session (every read the debugger's). The dumps must show
what the ranks posted (their manifests).

usage: e2e_arm_node.py --build DIR --cross-build DIR [--ops N]
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from failure import Failure  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402
from node_job import NodeError, NodeJob  # noqa: E402
from scratch import tear_down  # noqa: E402

CACHE_MODES = ("epoch", "call", "off")
# The modes in which a --node-memory server reads a proved rank on the node; under `off` every
# read is the debugger's, the naive baseline
# (docs/round-trips.md, "Reading the target on its node").
NODE_READ_MODES = ("epoch", "call")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--cross-build", required=True)
    ap.add_argument("--ops", type=int, default=30)
    args = ap.parse_args()
    job = None
    passed = False
    try:
        job = NodeJob(args.build, args.cross_build, 4, args.ops)
        work = job.work
        native = job.native_dump(os.path.join(work, "native"))
        print("native (the node's gdb): first dump %.2f s, refresh %.2f s"
              % tuple(native["seconds"]), flush=True)
        problems = check_against_manifests(json.loads(native["json"]), job.manifests)
        if native["texts"][1] != native["texts"][0]:
            problems.append("the node's native refresh differs from its first dump")
        for node_memory in (False, True):
            server = job.start_server(["--node-memory"] if node_memory else [],
                                      "state-%s" % node_memory)
            for mode in CACHE_MODES:
                name = "%s%s" % ("node-" if node_memory else "", mode)
                found = job.proxied_dump(os.path.join(work, name), server,
                                         {"MQD_PROXY_CACHE": mode, "MQD_PROXY_READ_COST": "0"})
                print("%-10s (x86_64 gdb-multiarch, shim, aarch64 server on the node): first "
                      "dump %.2f s, refresh %.2f s" % ((name,) + tuple(found["seconds"])),
                      flush=True)
                for kind, mine, theirs in (("JSON", found["json"], native["json"]),
                                           ("first text", found["texts"][0], native["texts"][0]),
                                           ("refresh", found["texts"][1], native["texts"][1])):
                    if mine != theirs:
                        problems.append("%s: the %s dump differs from the node's native one "
                                        "(see %s)" % (name, kind, work))
            if node_memory:
                job.stop_server()  # its sessions' summaries are in its log
                log = job.server_log(server)
                with open(os.path.join(work, server.name + ".log"), "w") as f:
                    f.write(log)
                # Each session's lines, by its cache policy (the line that opens it says which).
                sessions = re.split(r"session opened: .*\(cache policy ", log)[1:]
                for policy in CACHE_MODES:
                    text = next((s for s in sessions if s.startswith(policy + ",")), "")
                    proved = [int(p) for p in
                              re.findall(r"memory read on this host, from pid (\d+)", text)]
                    want = sorted(job.pids) if policy in NODE_READ_MODES else []
                    if sorted(proved) != want:
                        problems.append("the --node-memory server's %s session read pids %s on "
                                        "the node, not %s (see %s)" % (
                                            policy, sorted(proved), want,
                                            os.path.join(work, server.name + ".log")))
        if problems:
            raise Failure("\n  ".join(["the aarch64 node's dumps:"] + problems[:40]))
        print(native["texts"][0][:2500])
        print("arm-node: %d proxied dumps identical to the node's native one (JSON, first, "
              "refresh), every rank read on the node by the --node-memory server"
              % (2 * len(CACHE_MODES)))
        passed = True
        return 0
    finally:
        if job is not None:
            tear_down(job.work, passed, job)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, NodeError) as e:
        print("FAIL:", e)
        sys.exit(1)
