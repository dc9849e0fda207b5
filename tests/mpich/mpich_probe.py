#!/usr/bin/env python3
"""What MQD shows of a live MPICH job, natively and through the proxy: the facts behind
docs/mpich.md.

A live MPICH job (Hydra's mpiexec) runs tests/e2e/pending.c (N operations per rank) or
tests/mpich/sessions.c (MODE "sessions" or "world"), built with MPICH's own mpicc. One gdb
attaches to every rank and dumps them all with the front end: natively (the DLL named by the
target's MPIR_dll_name, libtvmpich.so), then through libmqdproxy.so and mqd-proxy-server
running that DLL, over a unix socket (cache epoch, the first session), over TCP (epoch, learned
state) and with MQD_PROXY_CACHE=call and off. Each run dumps twice (JSON, then text).

It prints whether every proxied dump equals the native one byte for byte, and compares the
native dump with what each rank recorded (its manifest), operation by operation, naming each
field that differs. Nothing is asserted: this is a probe, not a test. Exit status 0 when the
dumps were made (whatever they show), 1 when the job or gdb failed. The files stay in --out.

usage: mpich_probe.py --mpich PREFIX --build DIR --frontend PATH --out DIR
                      (--pending N | --sessions sessions|world) [--ranks 4] [--native-only]
                      [--gdb-env NAME=VALUE ...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
from failure import Failure  # noqa: E402
from gdb_driver import gdb_command  # noqa: E402
from mpi_job import LaunchedJob  # noqa: E402
from servers import Server  # noqa: E402


class MpichJob(LaunchedJob):
    """PREFIX/bin/mpiexec -n RANKS PROGRAM ARGS... DIR, until stopped. Hydra needs nothing
    special as root."""

    def __init__(self, mpiexec, ranks, argv, workdir):
        super().__init__([mpiexec, "-n", str(ranks)] + argv, ranks, workdir, "the MPICH job")


def dump(pids, frontend, load, prefix, env_extra):
    """gdb attached to every rank: JSON then text. Returns (seconds, gdb's output)."""
    cmd = gdb_command(pids, frontend, load) + [
        "-ex", "mqd dump --all --json --output %s.json" % prefix,
        "-ex", "mqd dump --all --output %s.txt" % prefix,
        "-ex", "mqd status"]
    env = dict(os.environ)
    env.update(env_extra)
    started = time.time()
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=1800, env=env)
    with open(prefix + ".gdb.log", "w") as f:
        f.write(result.stdout)
    return time.time() - started, result.stdout


def compare_operation(op, got):
    """Fields of the dumped operation `got` that differ from what the rank posted (`op`)."""
    wrong = []
    peer = -1 if op["kind"] == "recv_any_source" else op["peer_local"]
    if got["desired_local_rank"] != peer:
        wrong.append("desired_local_rank %s (posted %s)" % (got["desired_local_rank"], peer))
    world = -1 if op["kind"] == "recv_any_source" else op["peer_world"]
    if got["desired_global_rank"] != world:
        wrong.append("desired_global_rank %s (posted %s)" % (got["desired_global_rank"], world))
    if op["kind"] == "recv_any_tag":
        if not got["tag_wild"]:
            wrong.append("tag_wild false (posted MPI_ANY_TAG)")
    elif got["tag_wild"] or got["desired_tag"] != op["tag"]:
        wrong.append("desired_tag %s%s (posted %s)" % (
            got["desired_tag"], " wild" if got["tag_wild"] else "", op["tag"]))
    if got["desired_length"] != op["bytes"]:
        wrong.append("desired_length %s (posted %s bytes)" % (got["desired_length"], op["bytes"]))
    if got["status"] != "pending":
        wrong.append("status %s" % got["status"])
    return wrong


def against_manifests(dumps, manifests):
    """Lines saying, for every rank, what each posted operation looks like in the dump: found
    in which communicator and queue, and which fields differ; and what else the dump holds."""
    lines = []
    for d, m in zip(dumps, manifests):
        lines.append("rank %d (pid %d): %s" % (m["rank"], m["pid"], d.get("error", "dumped")))
        if "communicators" not in d:
            continue
        by_buffer = {}
        for c in d["communicators"]:
            for q, queue in c["queues"].items():
                for o in queue["operations"]:
                    by_buffer.setdefault(o["buffer"], []).append((c, q, o))
        seen = set()
        for op in m["operations"]:
            found = by_buffer.get(int(op["buffer"], 16), [])
            label = "%s %s tag %s on %s" % (op["kind"], "peer %s" % op["peer_local"],
                                            op["tag"], op["comm"])
            if not found:
                lines.append("  %s: NOT SHOWN" % label)
                continue
            for c, q, o in found:
                seen.add(id(o))
                wrong = compare_operation(op, o)
                lines.append("  %s: in %r (%s): %s" % (label, c["name"], q,
                                                      "; ".join(wrong) or "as posted"))
        for c in d["communicators"]:
            lines.append("  communicator %r id 0x%x: rank %s of %s, group %s" % (
                c["name"], c["unique_id"], c["local_rank"], c["size"],
                json.dumps(c["group"])))
            for q, queue in c["queues"].items():
                others = [o for o in queue["operations"] if id(o) not in seen]
                if queue.get("error") or queue["rc"] not in (2,):
                    lines.append("    %s: rc %s %s" % (q, queue["rc"], queue.get("error", "")))
                for o in others:
                    lines.append("    %s (not posted by this rank): %s" % (q, json.dumps(
                        {k: o[k] for k in ("status", "desired_local_rank",
                                           "desired_global_rank", "tag_wild", "desired_tag",
                                           "desired_length", "system_buffer", "buffer",
                                           "actual_local_rank", "actual_tag",
                                           "actual_length")})))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpich", required=True, help="build-mpich.sh's prefix")
    ap.add_argument("--build", required=True, help="the mqd-proxy build directory")
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pending", type=int)
    ap.add_argument("--sessions", choices=("sessions", "world"))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--native-only", action="store_true")
    ap.add_argument("--gdb-env", action="append", default=[])
    args = ap.parse_args()
    if (args.pending is None) == (args.sessions is None):
        ap.error("one of --pending N and --sessions MODE")
    mpich = os.path.abspath(args.mpich)
    build = os.path.abspath(args.build)
    work = os.path.abspath(args.out)
    os.makedirs(work, exist_ok=True)
    dll = os.path.join(mpich, "lib", "libtvmpich.so")
    shim = os.path.join(build, "shim", "libmqdproxy.so")
    server_bin = os.path.join(build, "server", "mqd-proxy-server")
    gdb_env = dict(kv.split("=", 1) for kv in args.gdb_env)

    if args.pending is not None:
        source, argv = os.path.join(HERE, "..", "e2e", "pending.c"), [str(args.pending)]
    else:
        source, argv = os.path.join(HERE, "sessions.c"), [args.sessions]
    program = os.path.join(work, os.path.splitext(os.path.basename(source))[0])
    subprocess.run([os.path.join(mpich, "bin", "mpicc"), "-g", "-O0", "-Wall", "-o", program,
                    source], check=True)

    job = None
    servers = []
    try:
        job = MpichJob(os.path.join(mpich, "bin", "mpiexec"), args.ranks, [program] + argv,
                       work)
        runs = [("native", "mqd load", {})]
        if not args.native_only:
            servers = [Server(server_bin, "unix:" + os.path.join(work, "s.sock"), dll, work,
                              "unix"),
                       Server(server_bin, "tcp:127.0.0.1:0", dll, work, "tcp")]
            for name, server, env in (("unix", servers[0], {}), ("tcp", servers[1], {}),
                                      ("unix-call", servers[0], {"MQD_PROXY_CACHE": "call"}),
                                      ("unix-off", servers[0], {"MQD_PROXY_CACHE": "off"})):
                runs.append((name, "mqd load --server %s --vendor-dll %s %s"
                             % (server.endpoint, dll, shim), env))
        outputs = {}
        for name, load, env in runs:
            prefix = os.path.join(work, name)
            seconds, log = dump(job.pids, args.frontend, load, prefix, dict(gdb_env, **env))
            if not os.path.exists(prefix + ".json"):
                print("%-9s gdb wrote no dump; its output:\n%s" % (name, log[-3000:]))
                outputs[name] = None
                continue
            outputs[name] = (open(prefix + ".json").read(), open(prefix + ".txt").read())
            mqd_lines = [line for line in log.splitlines() if line.startswith("mqd:")]
            print("%-9s %.2f s; %s" % (name, seconds, " | ".join(mqd_lines)[:300]))
        native = outputs.get("native")
        for name, _, _ in runs[1:]:
            if outputs.get(name) is None or native is None:
                continue
            same = [kind for i, kind in enumerate(("JSON", "text")) if outputs[name][i] ==
                    native[i]]
            print("%-9s identical to native: %s" % (name, ", ".join(same) or "NO"))
        if native is not None:
            report = against_manifests(json.loads(native[0]), job.manifests)
            with open(os.path.join(work, "report.txt"), "w") as f:
                f.write("\n".join(report) + "\n")
            print("\n".join(report))
        return 0
    except Failure as e:
        print("FAIL: %s (files in %s)" % (e, work))
        return 1
    finally:
        for s in servers:
            s.stop()
        if job:
            job.stop()


if __name__ == "__main__":
    sys.exit(main())
