"""The MPI job of the end-to-end tests: tests/e2e/pending.c run by Open MPI's mpirun
(Job), every rank leaving pending operations on MPI_COMM_WORLD, a dup, a split and a named
communicator and parking until told to stop; and the check that a dump shows what each rank
posted (check_against_manifests), from the manifest each rank writes (WORKDIR/rank-R.json:
pid, rank, host name, communicators with names, sizes and groups, and every operation with
kind, peer, tag, count (in elements), length in bytes and buffer). MpichJob runs such a program
under MPICH's Hydra instead (tests/mpich/).

    from mpi_job import Job, check_against_manifests
    job = Job(build_pending, 4, 10, work)      # ranks parked: job.pids, job.manifests
    problems = check_against_manifests(dumps, job.manifests)   # [] when all is as posted
    job.stop()
"""
import json
import os
import re
import signal
import subprocess

from failure import Failure, wait_for

def open_mpi_dll(multiarch=None, root=""):
    """Open MPI's message-queue DLL where Debian installs it under ROOT for MULTIARCH (default:
    this machine's): Debian 12's Open MPI 4.1 (libopenmpi3) or Debian 13's 5.0 (libopenmpi40);
    the 4.1 path when there is neither, for the caller's own "missing" message."""
    if multiarch is None:
        multiarch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
    paths = ["%s/usr/lib/%s/openmpi/lib/%s/libompi_dbg_msgq.so" % (root, multiarch, d)
             for d in ("openmpi3", "openmpi40")]
    return next((p for p in paths if os.path.exists(p)), paths[0])


ANY_SOURCE_QUIRK = 4294967295  # Open MPI's DLL (4.1 and 5.0) does not sign-extend MPI_ANY_SOURCE

# MPI_Comm_get_name returns "" for communicators the program did not name; Open MPI's DLL shows
# the internal names Open MPI gives them instead: "MPI COMMUNICATOR <cid> DUP FROM <parent>"
# (Open MPI 4.1), "MPI COMM <cid> DUP FROM <parent>" (5.0).
UNNAMED = {"dup": re.compile(r"MPI COMM(UNICATOR)? \d+ DUP FROM 0$"),
           "split": re.compile(r"MPI COMM(UNICATOR)? \d+ SPLIT FROM 0$")}


def find_communicator(communicators, label, facts):
    if facts["name"]:
        matches = [c for c in communicators if c["name"] == facts["name"]]
    else:
        matches = [c for c in communicators if UNNAMED[label].match(c["name"])]
    return matches[0] if len(matches) == 1 else None


class LaunchedJob:
    """An MPI job started by COMMAND (its launcher and program, then WORKDIR), whose ranks each
    write WORKDIR/rank-R.ready and rank-R.json and park until WORKDIR/stop exists. `name`
    names the job and `launcher` the command in failures; `env` is the launcher's. Every rank
    must be ready within 120 s, or a second a rank for a job of more.

    `starts` > 1 lets a job that fails before every rank is ready (its launcher ended, or the
    ranks did not all get ready in time) be started again, up to that many times in all, its
    failure printed first: for a launch whose MPI library is known to lose a start-up race
    now and then (SrunJob's), which is no part of what a test checks. Each start after the
    first gets a directory of its own, WORKDIR/start-N (`dir`): a rank of a failed start may
    still finish its start-up after its launcher ended (a node's slurmstepd kills it only
    later), and would then write its manifest where the next start's rank writes its own; in
    its own directory it finds the `stop` its start was given, and exits."""

    def __init__(self, command, ranks, workdir, name, env=None, starts=1):
        launcher = os.path.basename(command[0])
        for start in range(1, starts + 1):
            self.dir = workdir if start == 1 else os.path.join(workdir, "start-%d" % start)
            os.makedirs(self.dir, exist_ok=True)
            try:
                self._start(command, ranks, self.dir, name, launcher, env)
                break
            except Failure as e:
                if start == starts:
                    raise
                print("%s failed to start (attempt %d of %d), starting it again: %s"
                      % (name, start, starts, e), flush=True)
        self.manifests = [json.load(open(os.path.join(self.dir, "rank-%d.json" % r)))
                          for r in range(ranks)]
        self.pids = [m["pid"] for m in self.manifests]

    def _start(self, command, ranks, workdir, name, launcher, env):
        self.log = open(os.path.join(workdir, launcher + ".log"), "w")
        self.proc = subprocess.Popen(command + [workdir], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
        ready = lambda: all(os.path.exists(os.path.join(workdir, "rank-%d.ready" % r))
                            for r in range(ranks))
        try:
            wait_for(lambda: ready() or self.proc.poll() is not None, max(120, ranks), name)
        except Failure as e:
            self.stop()
            raise Failure("%s; %s's output:\n%s" % (e, launcher, open(self.log.name).read()))
        except BaseException:
            self.stop()
            raise
        if self.proc.poll() is not None:
            self.stop()
            raise Failure(launcher + " ended early:\n" + open(self.log.name).read())

    def stop(self):
        """Lets the ranks cancel, finalize and exit; kills the whole job if that fails."""
        open(os.path.join(self.dir, "stop"), "w").close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # The launcher's whole session: mpirun puts the srun that starts its daemons in a
            # process group of its own.
            kill_session(self.proc.pid)
            self.proc.wait()
        self.log.close()


def kill_session(sid):
    """SIGKILL to every process of session `sid`."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


class OpenMpiJob(LaunchedJob):
    """mpirun -np RANKS --mca pml ob1 --mca btl self,vader PROGRAM ARGS... DIR, until stopped:
    Open MPI's mpirun (4.1's, or 5.0's, which is PRRTE's prterun)."""

    def __init__(self, argv, ranks, workdir):
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        # A sanitized build (tests/sanitize/) adds options for the MPI ranks alone.
        extra = os.environ.get("MQD_TEST_TARGET_ASAN_OPTIONS")
        if extra:
            env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), extra) if o)
        super().__init__(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
             "--mca", "pml", "ob1", "--mca", "btl", "self,vader"] + argv,
            ranks, workdir, "the MPI job", env)


class Job(OpenMpiJob):
    """mpirun ... pending OPS DIR (tests/e2e/pending.c), until stopped."""

    def __init__(self, program, ranks, ops, workdir):
        super().__init__([program, str(ops)], ranks, workdir)


class MpichJob(LaunchedJob):
    """PREFIX/bin/mpiexec -n RANKS PROGRAM ARGS... DIR, until stopped: MPICH's Hydra, by
    absolute path (Open MPI owns mpiexec on PATH). Hydra needs nothing special as root."""

    def __init__(self, prefix, ranks, argv, workdir):
        super().__init__([os.path.join(prefix, "bin", "mpiexec"), "-n", str(ranks)] + argv,
                         ranks, workdir, "the MPICH job")


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
            if unexpected["rc"] != 1:  # Open MPI 4.1 and 5.0: no information
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
