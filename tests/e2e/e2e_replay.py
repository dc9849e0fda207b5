#!/usr/bin/env python3
"""Record and replay, end to end with a real debugger and real MPI.

A live Open MPI job (tests/e2e/pending.c, testing/python/mpi_job.py), or with --mpich an MPICH
job of the same program built by MPICH's mpicc (tests/mpich/), is dumped by gdb
with the mqd front end through libmqdproxy.so and a real server, with MQD_PROXY_RECORD set,
once per cache policy asked for. Then, with the job gone and against a fresh server (no learned
state) with the same DLL:

  * `mqd-proxy replay FILE --json` must print exactly the live `mqd dump --all --json`, and
    `mqd-proxy replay FILE` exactly the live `mqd dump --all` text, and exit 0;
  * a recording whose gdb was killed (SIGKILL) right after its dump must replay to the same
    JSON: the file is readable up to the last refresh the debugger made;
  * replaying against a different DLL (--dll, the test DLL), or a tampered recording (target
    memory zeroed; a recorded result changed), must exit 1 and name a difference;
  * an unreadable recording (cut inside its file header) must exit 2 naming the file.

The live server has --node-memory: a recorded session must be served from the debugger's
answers alone, or its replay would lack the memory read on the node.

It prints the recordings' sizes and how long each live dump and each replay took.

usage: e2e_replay.py --build DIR --dll PATH --frontend PATH --ops N
                     --test-dll PATH --tamper PATH [--policies epoch,off] [--ranks 4]
                     [--shim PATH] [--mpich PREFIX --program PATH] [--launcher]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from gdb_driver import gdb_command, gdb_dump  # noqa: E402
from mpi_job import Job, MpichJob  # noqa: E402
from scratch import tear_down  # noqa: E402
from servers import Server  # noqa: E402


def replay(cli, endpoint, recording, *extra):
    """Runs `mqd-proxy replay`; returns (exit status, stdout, stderr, seconds)."""
    started = time.time()
    result = subprocess.run([cli, "--server", endpoint, "replay", recording] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return (result.returncode, result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"), time.time() - started)


def gdb_dump_then_die(pids, frontend, load, out_prefix, env_extra, attach):
    """Like gdb_dump, but gdb is killed with SIGKILL right after the JSON dump: no unload, no
    exit handlers, whatever the shim had not written yet is lost."""
    cmd = gdb_command(pids, frontend, load, attach) + [
        "-ex", "mqd dump --all --json --output %s.json" % out_prefix,
        "-ex", "shell kill -KILL $PPID"]
    env = dict(os.environ)
    env.update(env_extra)
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=600, env=env)
    # A dead tracer can leave its tracees in group-stop: let them run (and finish) again.
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    if result.returncode != -9 or not os.path.exists(out_prefix + ".json"):
        raise Failure("gdb was to dump and die of SIGKILL, but exited %d:\n%s"
                      % (result.returncode, result.stdout[-3000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--dll", required=True, help="the vendor DLL")
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--policies", default="epoch,off")
    ap.add_argument("--test-dll", required=True, help="another DLL, for the negative check")
    ap.add_argument("--tamper", required=True, help="the mqd-record-tamper program")
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    ap.add_argument("--mpich", help="run the job under this MPICH (build-mpich.sh's prefix)")
    ap.add_argument("--program", help="with --mpich: pending.c built by its mpicc")
    ap.add_argument("--launcher", action="store_true",
                    help="gdb attaches the ranks with `mqd attach --launcher`: the recording "
                         "labels each with the host the launcher's table names")
    args = ap.parse_args()
    if bool(args.mpich) != bool(args.program):
        ap.error("--mpich and --program go together")
    build = os.path.abspath(args.build)
    built = Artefacts(build)
    shim = args.shim or built.require("shim")
    server_bin = built.require("server")
    cli = built.require("cli")
    policies = args.policies.split(",")

    work = tempfile.mkdtemp(prefix="mqd-e2e-replay-")
    job = live_server = replay_server = other_server = None
    passed = False
    problems = []
    try:
        # ---- record: live dumps through the shim ----
        if args.mpich:
            job = MpichJob(args.mpich, args.ranks, [args.program, str(args.ops)], work)
        else:
            job = Job(built.require("pending"), args.ranks, args.ops, work)
        # A server that would read the ranks on this host (--node-memory) must not for a
        # recorded session: its replay has only what the debugger answered.
        live_server = Server(server_bin, "unix:" + os.path.join(work, "live.sock"),
                             args.dll, work, "live", extra=["--node-memory"])
        load = "mqd load --server %s --vendor-dll %s %s" % (live_server.endpoint,
                                                            args.dll, shim)
        attach = "mqd attach --launcher %d" % job.proc.pid if args.launcher else None
        recordings = {}
        for policy in policies:
            recording = os.path.join(work, "%s.mqdrec" % policy)
            prefix = os.path.join(work, "live-" + policy)
            seconds = gdb_dump(job.pids, args.frontend, load, prefix,
                               {"MQD_PROXY_RECORD": recording, "MQD_PROXY_CACHE": policy},
                               attach)
            recordings[policy] = (recording, open(prefix + ".json").read(),
                                  open(prefix + ".txt").read())
            print("live dump (cache %s) of %d ranks with %d pending operations each: %.2f s, "
                  "recorded into %d bytes" % (policy, args.ranks, args.ops, seconds,
                                              os.path.getsize(recording)))
        killed = os.path.join(work, "killed.mqdrec")
        gdb_dump_then_die(job.pids, args.frontend, load, os.path.join(work, "live-killed"),
                          {"MQD_PROXY_RECORD": killed}, attach)
        killed_json = open(os.path.join(work, "live-killed.json")).read()
        print("live dump by a gdb killed right after it: recorded into %d bytes"
              % os.path.getsize(killed))
        live_server.stop()
        with open(live_server.log) as f:
            opened = f.read().count("recorded: no memory read on this host")
        if opened != len(policies) + 1:
            problems.append("the live server read on its host for %d of the %d recorded "
                            "sessions: see %s" % (len(policies) + 1 - opened, len(policies) + 1,
                                                  live_server.log))
        live_server = None
        job.stop()
        job = None

        # ---- replay: no job, fresh servers (no learned state: a state directory of their
        # own) with the same DLL, and with the test DLL for the negative check ----
        fresh = os.path.join(work, "fresh")
        os.mkdir(fresh)
        replay_server = Server(server_bin, "unix:" + os.path.join(fresh, "replay.sock"),
                               args.dll, fresh, "replay")
        other_server = Server(server_bin, "unix:" + os.path.join(fresh, "other.sock"),
                              args.test_dll, fresh, "other")
        endpoint = replay_server.endpoint
        for policy, (recording, live_json, live_text) in recordings.items():
            rc, out, err, seconds = replay(cli, endpoint, recording, "--json", "--stats")
            print("replay (cache %s) --json: exit %d in %.2f s\n%s"
                  % (policy, rc, seconds, err.rstrip()))
            if rc != 0:
                problems.append("replay of the %s recording exited %d" % (policy, rc))
            if out != live_json:
                with open(os.path.join(work, "replay-%s.json" % policy), "w") as f:
                    f.write(out)
                problems.append("replay of the %s recording (JSON) differs from the live dump: "
                                "see %s" % (policy, work))
            rc, out, err, seconds = replay(cli, endpoint, recording)
            if rc != 0 or out != live_text:
                with open(os.path.join(work, "replay-%s.txt" % policy), "w") as f:
                    f.write(out)
                problems.append("replay of the %s recording (text) exited %d or differs from "
                                "the live dump: see %s" % (policy, rc, work))

        rc, out, err, seconds = replay(cli, endpoint, killed, "--json")
        if rc != 0 or out != killed_json:
            problems.append("replay of the recording of a killed gdb: exit %d, %s\n%s"
                            % (rc, "same JSON" if out == killed_json else "other JSON",
                               err.rstrip()))
        else:
            print("replay of the recording of a killed gdb: exit 0, JSON identical")

        # ---- negative checks ----
        recording = recordings[policies[0]][0]
        rc, out, err, _ = replay(cli, other_server.endpoint, recording, "--json", "--dll",
                                 args.test_dll)
        first = [line for line in err.splitlines() if "difference" in line]
        print("replay against %s: exit %d; %s" % (os.path.basename(args.test_dll), rc,
                                                  first[0] if first else err.strip()))
        if rc != 1 or not first:
            problems.append("replay against another DLL exited %d without naming a difference"
                            % rc)
        for mode in ("memory", "result"):
            tampered = os.path.join(work, "tampered-%s.mqdrec" % mode)
            subprocess.run([args.tamper, recording, tampered, mode], check=True,
                           stdout=subprocess.DEVNULL)
            rc, out, err, _ = replay(cli, endpoint, tampered, "--json")
            first = [line for line in err.splitlines() if "difference" in line]
            print("replay of a recording tampered with (%s): exit %d; %s"
                  % (mode, rc, first[0] if first else err.strip()))
            if rc != 1 or not first:
                problems.append("a recording tampered with (%s) replayed with exit %d" % (mode, rc))
        damaged = os.path.join(work, "tampered-damage.mqdrec")
        subprocess.run([args.tamper, recording, damaged, "damage"], check=True,
                       stdout=subprocess.DEVNULL)
        rc, out, err, _ = replay(cli, endpoint, damaged)
        print("replay of a recording with a damaged block: exit %d; %s" % (rc, err.strip()))
        if rc != 2 or damaged not in err or "is damaged" not in err:
            problems.append("a recording with a damaged block replayed with exit %d" % rc)
        cut = os.path.join(work, "cut.mqdrec")
        with open(recording, "rb") as f, open(cut, "wb") as g:
            g.write(f.read(10))
        rc, out, err, _ = replay(cli, endpoint, cut)
        print("replay of a recording cut inside its header: exit %d; %s" % (rc, err.strip()))
        if rc != 2 or cut not in err:
            problems.append("an unreadable recording replayed with exit %d" % rc)

        status = verdict(problems, work,
                         "replays (%s) identical to the live dumps, a killed debugger's "
                         "recording replays, another DLL and tampered recordings are caught"
                         % ", ".join(policies))
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, live_server, replay_server, other_server, job)


if __name__ == "__main__":
    sys.exit(main())
