#!/usr/bin/env python3
"""End to end with a real debugger and real MPI.

A live Open MPI job (tests/e2e/pending.c) leaves N pending operations on every rank and parks.
gdb, with the mqd front end, attaches to every rank (one inferior each) and dumps all of them:
once with Open MPI's own DLL loaded natively, then through libmqdproxy.so and a real
mqd-proxy-server, over a unix socket and over TCP loopback. The dumps (text and JSON) must be
byte-identical, and they must show what each rank posted, as recorded in its manifest: tags,
peers (local and world), lengths, buffers, communicator names, sizes and group translations.

usage: e2e_openmpi.py --build DIR --ompi-dll PATH --frontend PATH --ops N [--ranks 4]
                     [--shim PATH]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from sshd_fixture import Sshd  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402

ANY_SOURCE_QUIRK = 4294967295  # Open MPI 4.1's DLL does not sign-extend MPI_ANY_SOURCE

# MPI_Comm_get_name returns "" for communicators the program did not name; Open MPI's DLL shows
# the internal names Open MPI gives them instead: "MPI COMMUNICATOR <cid> DUP FROM <parent>".
UNNAMED = {"dup": re.compile(r"MPI COMMUNICATOR \d+ DUP FROM 0$"),
           "split": re.compile(r"MPI COMMUNICATOR \d+ SPLIT FROM 0$")}


def find_communicator(communicators, label, facts):
    if facts["name"]:
        matches = [c for c in communicators if c["name"] == facts["name"]]
    else:
        matches = [c for c in communicators if UNNAMED[label].match(c["name"])]
    return matches[0] if len(matches) == 1 else None


class Failure(Exception):
    pass


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise Failure("timed out after %d s waiting for %s" % (seconds, what))


class Job:
    """mpirun -np RANKS --mca pml ob1 --mca btl self,vader pending OPS DIR, until stopped."""

    def __init__(self, program, ranks, ops, workdir):
        self.dir = workdir
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        # A sanitized build (tests/sanitize/) adds options for the MPI ranks alone.
        extra = os.environ.get("MQD_TEST_TARGET_ASAN_OPTIONS")
        if extra:
            env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), extra) if o)
        self.log = open(os.path.join(workdir, "mpirun.log"), "w")
        self.proc = subprocess.Popen(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
             "--mca", "pml", "ob1", "--mca", "btl", "self,vader", program, str(ops), workdir],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        ready = lambda: all(os.path.exists(os.path.join(workdir, "rank-%d.ready" % r))
                            for r in range(ranks))
        try:
            wait_for(lambda: ready() or self.proc.poll() is not None, 120, "the MPI job")
            if self.proc.poll() is not None:
                raise Failure("mpirun ended early:\n" + open(self.log.name).read())
        except Exception:
            self.stop()
            raise
        self.manifests = [json.load(open(os.path.join(workdir, "rank-%d.json" % r)))
                          for r in range(ranks)]
        self.pids = [m["pid"] for m in self.manifests]

    def stop(self):
        """Lets the ranks cancel, finalize and exit; kills the whole job if that fails."""
        open(os.path.join(self.dir, "stop"), "w").close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


class Endpoint:
    """A server the shim starts itself (ssh://): only its endpoint."""
    def __init__(self, endpoint):
        self.endpoint = endpoint


class Server:
    def __init__(self, binary, listen, dll, workdir, name):
        ready = os.path.join(workdir, name + ".ready")
        # One learned-state directory for every server of the run: the first session is cold,
        # later ones start from what it learned.
        self.proc = subprocess.Popen(
            [binary, "--listen", listen, "--dll", dll, "--ready-file", ready,
             "--state-dir", os.path.join(workdir, "state"),
             "--log-file", os.path.join(workdir, name + ".log")])
        wait_for(lambda: os.path.exists(ready) or self.proc.poll() is not None, 20, name)
        if self.proc.poll() is not None:
            raise Failure("%s did not start" % name)
        self.endpoint = open(ready).read().strip()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)
        if self.proc.returncode != 0:
            raise Failure("server exited with %d" % self.proc.returncode)


def gdb_command(pids, frontend, load):
    """gdb in batch mode attached to every rank (one inferior each), with the front end
    sourced and `load` run: add the commands to run then."""
    cmd = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    for i, pid in enumerate(pids):
        if i > 0:
            cmd += ["-ex", "add-inferior", "-ex", "inferior %d" % (i + 1)]
        cmd += ["-ex", "attach %d" % pid]
    return cmd + ["-ex", "inferior 1", "-ex", "source " + frontend, "-ex", load]


def tear_down(work, passed, *started):
    """Stops what a run started, in the order given (None, and lists of servers, allowed), and
    removes its work directory if it passed, unless MQD_KEEP is set."""
    for thing in started:
        for t in (thing if isinstance(thing, list) else [thing]):
            if t:
                t.stop()
    if passed and not os.environ.get("MQD_KEEP"):
        shutil.rmtree(work, ignore_errors=True)


def gdb_dump(pids, frontend, load, out_prefix, env_extra=None):
    """One gdb attached to every rank (one inferior each); writes OUT.json and OUT.txt (two
    refreshes: the second is a repeat refresh of a stopped-again target)."""
    cmd = gdb_command(pids, frontend, load) + [
        "-ex", "mqd dump --all --json --output %s.json" % out_prefix,
        "-ex", "mqd dump --all --output %s.txt" % out_prefix]
    started = time.time()
    env = dict(os.environ)
    env.update(env_extra or {})
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=1200, env=env)
    elapsed = time.time() - started
    errors = [line for line in result.stdout.splitlines() if line.startswith("mqd:")
              and "loaded" not in line]
    if result.returncode != 0 or errors or not os.path.exists(out_prefix + ".json"):
        raise Failure("gdb failed (%d):\n%s" % (result.returncode, result.stdout[-4000:]))
    if "Traceback" in result.stdout:
        raise Failure("the front end printed a Python traceback:\n" + result.stdout[-4000:])
    return elapsed


def check_against_manifests(dumps, manifests):
    """The dump shows what every rank did."""
    problems = []
    if len(dumps) != len(manifests):
        return ["%d inferiors dumped, %d ranks" % (len(dumps), len(manifests))]
    for dump, m in zip(dumps, manifests):
        who = "rank %d" % m["rank"]
        if dump.get("error"):
            problems.append("%s: %s" % (who, dump["error"]))
            continue
        if dump["pid"] != m["pid"] or dump["rank"] != m["rank"]:
            problems.append("%s: dumped pid %s rank %s" % (who, dump["pid"], dump["rank"]))
        for label, facts in m["communicators"].items():
            c = find_communicator(dump["communicators"], label, facts)
            if c is None:
                problems.append("%s: communicator %r (%s) missing or ambiguous"
                                % (who, facts["name"], label))
                continue
            if (c["local_rank"], c["size"]) != (facts["rank"], facts["size"]):
                problems.append("%s: %s is rank %s of %s, expected %d of %d" % (
                    who, c["name"], c["local_rank"], c["size"], facts["rank"],
                    facts["size"]))
            if c["group"] != facts["group"]:
                problems.append("%s: %s group %s, expected %s" % (
                    who, c["name"], c["group"], facts["group"]))
            expected = [op for op in m["operations"] if op["comm"] == label]
            for queue, kinds in (("sends", ("send",)),
                                 ("receives", ("recv", "recv_any_source", "recv_any_tag"))):
                want = [op for op in expected if op["kind"] in kinds]
                have = c["queues"][queue]["operations"]
                if len(have) != len(want):
                    problems.append("%s: %s %s: %d operations, posted %d" % (
                        who, c["name"], queue, len(have), len(want)))
                by_buffer = {op["buffer"]: op for op in have}
                for op in want:
                    got = by_buffer.get(int(op["buffer"], 16))
                    if got is None:
                        problems.append("%s: %s %s: %s with buffer %s missing" % (
                            who, c["name"], queue, op["kind"], op["buffer"]))
                        continue
                    problems += check_operation(who, c["name"], op, got)
            unexpected = c["queues"]["unexpected"]
            if unexpected["rc"] != 1:  # Open MPI 4.1.4: no information
                problems.append("%s: unexpected queue answered %s" % (who, unexpected["rc"]))
    return problems


def check_operation(who, comm, op, got):
    where = "%s: %s %s tag %s" % (who, comm, op["kind"], op["tag"])
    problems = []
    if got["status"] != "pending":
        problems.append("%s: status %s" % (where, got["status"]))
    if got["desired_length"] != op["bytes"]:
        problems.append("%s: length %s, posted %s" % (where, got["desired_length"], op["bytes"]))
    if op["kind"] == "recv_any_tag":
        if not got["tag_wild"]:
            problems.append("%s: not shown as a wildcard tag" % where)
    elif got["tag_wild"] or got["desired_tag"] != op["tag"]:
        problems.append("%s: tag %s" % (where, got["desired_tag"]))
    if op["kind"] == "recv_any_source":
        if got["desired_local_rank"] != ANY_SOURCE_QUIRK:
            problems.append("%s: source %s, expected any (%d)" % (
                where, got["desired_local_rank"], ANY_SOURCE_QUIRK))
    else:
        if (got["desired_local_rank"], got["desired_global_rank"]) != (op["peer_local"],
                                                                         op["peer_world"]):
            problems.append("%s: peer %s/%s, expected %s/%s" % (
                where, got["desired_local_rank"], got["desired_global_rank"],
                op["peer_local"], op["peer_world"]))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    ap.add_argument("--ssh", action="store_true",
                    help="also dump through ssh://: a loopback sshd (tests/cli/sshd_fixture.py) "
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
        if problems:
            for p in problems[:50]:
                print("FAIL: " + p)
            print("(%d problems; files kept in %s)" % (len(problems), work))
            return 1
        print("ok: native and proxied dumps (unix, TCP%s; cache epoch, call, off) identical, "
              "and matching what every rank posted" % (", ssh" if args.ssh else ""))
        passed = True
        return 0
    except Failure as e:
        print("FAIL: %s (files kept in %s)" % (e, work))
        return 1
    finally:
        tear_down(work, passed, servers, sshd, job)


if __name__ == "__main__":
    sys.exit(main())
