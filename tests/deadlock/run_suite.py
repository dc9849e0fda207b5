#!/usr/bin/env python3
"""The hang suite: real MPI programs that hang (or only look hung) in known ways, each
analysed from a live snapshot, natively and through the proxy.

For each case: launch `hang MODE` (hang.c) with Open MPI (ob1 over shared memory unless the
case says otherwise) and wait until every rank is in place; attach ONE gdb to every rank (one
inferior each) with the mqd front end; with Open MPI's DLL loaded natively, then through
libmqdproxy.so and a real mqd-proxy-server, in the same gdb session, run `mqd graph --json
--snapshot FILE` (a whole-job snapshot, analysed in gdb's Python and saved), and with the
native DLL `mqd snapshot` too. Then run `mqd-proxy graph` (the build's binary, which runs the
staged analysis package) on both saved snapshots. The checks:
  - `mqd snapshot` writes what `mqd graph --snapshot` does; the native and proxied snapshots
    are identical, and so are all four analyses (in gdb and from the saved file);
  - the verdict, the knots (MPI_COMM_WORLD ranks) and the explanation kinds are the case's;
  - for cases with a `classes` expectation, the ranks group as expected;
  - for cases with `progress`, a second snapshot after the job ran again gives the expected
    stuck and moved ranks (`mqd-proxy graph FIRST --compare SECOND`): it ran until every rank
    passed the token on again where ranks must move (hang.c's DIR/rank-R.passed), for 2 s
    where none may.
With --chromium, the case's HTML report is also rendered by headless Chromium and the
screenshot checked (render_check.py): the knot must be visible in the picture, as many
highlighted nodes as the knot has ranks, or none without a knot.

usage: run_suite.py --build DIR --ompi-dll PATH --frontend PATH --case NAME [--ranks N]
                    [--chromium] [--save-docs DIR]
Exit status 0 when every check passed, 1 otherwise (the work directory is kept then).
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
ANALYSIS = os.path.join(SOURCE, "frontends", "analysis")
sys.path.insert(0, ANALYSIS)
sys.path.insert(0, os.path.join(SOURCE, "testing", "python"))
from artefacts import Artefacts  # noqa: E402
from failure import LOADED_MACHINE_SLACK, Failure, wait_for  # noqa: E402
from gdb_driver import gdb_command, keeping_selection, selection_problem  # noqa: E402
from servers import Server  # noqa: E402

OB1 = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
# ucx over shared memory and TCP: Open MPI's ucx PML refuses to start without InfiniBand
# unless told that any transport and device will do.
UCX = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any"]

# The expected analysis of each program. knots: MPI_COMM_WORLD ranks of each knot (for the
# verdict "unknown": the possible knots); kinds: explanation kinds that must be among the
# analysis's; progress: the ranks stuck / moved between two snapshots, the job run in between
# (until every rank moved, where they must: main()).
ALL4 = [[0, 1, 2, 3]]
CASES = {
    "send-cycle": dict(mode="send-cycle", verdict="deadlock", knots=ALL4,
                       kinds=["send-cycle"], progress=dict(stuck=[0, 1, 2, 3], moved=[])),
    "recv-cycle": dict(mode="recv-cycle", verdict="deadlock", knots=ALL4,
                       kinds=["receive-cycle"]),
    "tag-mismatch": dict(mode="tag-mismatch", verdict="deadlock", knots=[[0, 1]],
                         kinds=["tag-mismatch"]),
    "comm-mismatch": dict(mode="comm-mismatch", verdict="deadlock", knots=[[0, 1]],
                          kinds=["communicator-mismatch"]),
    "any-source-deadlock": dict(mode="any-source-deadlock", verdict="deadlock", knots=ALL4,
                                kinds=["wildcard-blocked"]),
    "any-source-ok": dict(mode="any-source-ok", verdict="no deadlock", knots=[],
                          kinds=["cycle-broken"]),
    "waitall-stuck": dict(mode="waitall-stuck", verdict="deadlock", knots=[[0, 1]],
                          kinds=["receive-cycle"]),
    "waitany-ok": dict(mode="waitany-ok", verdict="no deadlock", knots=[],
                       kinds=["cycle-broken"]),
    "collective-missing": dict(mode="collective-missing", verdict="deadlock", knots=ALL4,
                               kinds=["collective-not-reached", "blocked-elsewhere"]),
    "recv-from-finalized": dict(mode="recv-from-finalized", verdict="deadlock", knots=ALL4,
                                kinds=["waits-for-finished", "collective-not-reached"]),
    "slow": dict(mode="slow", verdict="no deadlock", knots=[], kinds=[],
                 progress=dict(stuck=[], moved="most")),
    "ucx-empty": dict(mode="recv-cycle", mca=UCX, verdict="unknown", knots=ALL4,
                      kinds=["pml-invisible", "waits-unseen"]),
    "collective-missing-64": dict(mode="collective-missing", ranks=64, verdict="deadlock",
                                  knots=[list(range(64))],
                                  kinds=["collective-not-reached"],
                                  classes=[([0], "in MPI_Recv: receive from rank 1 on "
                                                 "MPI_COMM_WORLD (tag 7"),
                                           (list(range(1, 64)), "in MPI_Barrier on "
                                            "MPI_COMM_WORLD, waiting for rank 0")]),
}


class Job:
    """mpirun -np RANKS [MCA] hang MODE DIR, until stopped: every rank has written its ready
    file ({"rank", "pid", "role"}). Open MPI puts each rank in a process group of its own, so
    stopping kills the ranks by pid, then mpirun."""

    def __init__(self, program, mode, ranks, mca, workdir, timeout):
        self.dir, self.ranks, self.pids = workdir, ranks, []
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        self.log = open(os.path.join(workdir, "mpirun.log"), "w")
        self.proc = subprocess.Popen(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + mca +
            [program, mode, workdir], stdout=self.log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        paths = [os.path.join(workdir, "rank-%d.ready" % r) for r in range(ranks)]
        try:
            wait_for(lambda: all(os.path.exists(p) for p in paths) or
                     self.proc.poll() is not None, timeout, "%d ranks in place" % ranks)
            if self.proc.poll() is not None:
                raise Failure("mpirun ended early:\n" + open(self.log.name).read()[-3000:])
        except Exception:
            self._collect_pids()
            self.stop()
            raise
        self._collect_pids()

    def _collect_pids(self):
        self.pids, self.roles = [], {}
        for r in range(self.ranks):
            try:
                with open(os.path.join(self.dir, "rank-%d.ready" % r)) as f:
                    ready = json.load(f)
                self.pids.append(ready["pid"])
                self.roles[r] = ready["role"]
            except (OSError, ValueError):
                pass

    def not_in_place(self, snapshot_path):
        """Ranks that said they block but are not in an MPI call in the snapshot: a rank
        writes its ready file a second after it went on to its call, and a loaded machine may
        not have run it that far yet."""
        with open(snapshot_path) as f:
            ranks = json.load(f)["ranks"]
        return [r["rank"] for r in ranks if self.roles.get(r["rank"]) == "blocked" and
                not (r.get("state") or {}).get("mpi_call")]

    def freeze(self):
        """Stops every rank at once (SIGSTOP, one after the other in a few microseconds), as a
        parallel debugger stops a whole job: gdb then attaches rank after rank, and ranks still
        running meanwhile would move on (a message sent to a rank already stopped stays in
        flight, unseen: Open MPI's DLL has no unexpected queue). gdb attaches to stopped
        processes; they stay stopped when it detaches, until thaw()."""
        for pid in self.pids:
            os.kill(pid, signal.SIGSTOP)

    def thaw(self):
        for pid in self.pids:
            os.kill(pid, signal.SIGCONT)

    def passed(self):
        """{rank: how many times it has passed the token on} (slow mode: hang.c's
        DIR/rank-R.passed; 0 before its first)."""
        counts = {}
        for r in range(self.ranks):
            try:
                with open(os.path.join(self.dir, "rank-%d.passed" % r)) as f:
                    counts[r] = int(f.read())
            except (OSError, ValueError):
                counts[r] = 0
        return counts

    def stop(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def run_gdb(pids, frontend, loads, work, tag):
    """One gdb attached to every rank: for each (name, load command), load the DLL and run
    `mqd graph --json --snapshot NAME-TAG.json`, its printed analysis piped to
    NAME-TAG.gdb-analysis.json; with the first DLL, `mqd snapshot NAME-TAG.snapshot.json`
    first."""
    commands = []
    for i, (name, load) in enumerate(loads):
        prefix = os.path.join(work, "%s-%s" % (name, tag))
        if i > 0:
            commands += ["-ex", load]
        else:
            commands += ["-ex", "mqd snapshot %s.snapshot.json" % prefix]
        commands += ["-ex", "pipe mqd graph --json --snapshot %s.json | cat > "
                     "%s.gdb-analysis.json" % (prefix, prefix)]
    # The snapshot switches to every rank's main thread: the user's selection comes back.
    cmd = gdb_command(pids, frontend, loads[0][1]) + keeping_selection(commands)
    started = time.time()
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=1800)
    with open(os.path.join(work, "gdb-%s.log" % tag), "w") as f:
        f.write(result.stdout)
    problems = [line for line in result.stdout.splitlines()
                if line.startswith("mqd:") and not line.startswith(("mqd: loaded ",
                                                                     "mqd: snapshot of ")) or
                "Traceback" in line or line.startswith("Python Exception")]
    missing = [n for n, _ in loads if not os.path.exists(
        os.path.join(work, "%s-%s.json" % (n, tag)))]
    problem = selection_problem(result.stdout)
    if problem:
        problems.append(problem)
    if result.returncode != 0 or problems or missing:
        raise Failure("gdb failed (%d): %s\n%s" % (result.returncode, problems[:5],
                                                   result.stdout[-3000:]))
    return time.time() - started


def graph(mqd_proxy, args, work):
    """mqd-proxy graph ARGS (the build's binary, running the analysis staged in the build);
    its stdout (exit status 0 required)."""
    result = subprocess.run([mqd_proxy, "graph"] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=work, timeout=600)
    if result.returncode != 0:
        raise Failure("mqd-proxy graph %s: exit %d: %s" % (" ".join(args), result.returncode,
                                                          result.stderr.strip()))
    return result.stdout


def check_analysis(name, case, analysis):
    problems = []
    knots = analysis["knots"] if analysis["verdict"] == "deadlock" else \
        analysis["possible_knots"]
    if analysis["verdict"] != case["verdict"]:
        problems.append("verdict %r, expected %r" % (analysis["verdict"], case["verdict"]))
    if analysis["deadlock"] != (case["verdict"] == "deadlock"):
        problems.append("\"deadlock\": %s" % analysis["deadlock"])
    if sorted(knots) != sorted(case["knots"]):
        problems.append("knots %s, expected %s" % (knots, case["knots"]))
    kinds = {e["kind"] for e in analysis["explanations"]}
    for kind in case["kinds"]:
        if kind not in kinds:
            problems.append("no %r explanation (got %s)" % (kind, sorted(kinds)))
    for ranks, text in case.get("classes", []):
        match = [c for c in analysis["classes"] if c["ranks"] == ranks]
        if not match:
            problems.append("no class of exactly %s (classes: %s)" % (
                ranks, [c["ranges"] for c in analysis["classes"]]))
        elif text not in match[0]["description"]:
            problems.append("class %s is %r, expected it to contain %r" % (
                match[0]["ranges"], match[0]["description"], text))
    if "classes" in case and len(analysis["classes"]) != len(case["classes"]):
        problems.append("%d classes, expected %d" % (len(analysis["classes"]),
                                                     len(case["classes"])))
    return ["%s: %s" % (name, p) for p in problems]


def check_progress(name, case, progress, ranks):
    want = case["progress"]
    problems = []
    if progress["stuck"] != want["stuck"]:
        problems.append("stuck %s, expected %s" % (progress["stuck"], want["stuck"]))
    if want["moved"] == "most":
        if len(progress["moved"]) < ranks - 1:
            problems.append("moved %s: expected all ranks but at most one (the one computing)"
                            % progress["moved"])
    elif progress["moved"] != want["moved"]:
        problems.append("moved %s, expected %s" % (progress["moved"], want["moved"]))
    return ["%s: progress: %s" % (name, p) for p in problems]


def load_average():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--program", help="the hang program (default: BUILD/tests/deadlock/hang)")
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--chromium", action="store_true",
                    help="also render the HTML report in headless Chromium and check it")
    ap.add_argument("--save-docs", metavar="DIR",
                    help="copy the case's picture (SVG, PNG) and HTML report into DIR")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    case = CASES[args.case]
    ranks = case.get("ranks", 4)
    program = args.program or os.path.join(build, "tests", "deadlock", "hang")
    built = Artefacts(build)
    shim = built.require("shim")
    server_bin = built.require("server")
    mqd_proxy = built.require("cli")
    for path in (program, shim, server_bin, mqd_proxy, args.frontend, args.ompi_dll):
        if not os.path.exists(path):
            print("FAIL: %s is missing" % path)
            return 1
    work = tempfile.mkdtemp(prefix="mqd-deadlock-%s-" % args.case)
    job = server = None
    passed = False
    started = time.time()
    try:
        server = Server(server_bin, "unix:" + os.path.join(work, "s.sock"), args.ompi_dll, work,
                        "server")
        # The slack of a loaded machine for ranks that must come, and more for a large job.
        job = Job(program, case["mode"], ranks, case.get("mca", OB1), work,
                  timeout=LOADED_MACHINE_SLACK + 2 * ranks)
        launched = time.time()
        loads = [("native", "mqd load"),
                 ("proxy", "mqd load --server %s --vendor-dll %s %s"
                  % (server.endpoint, args.ompi_dll, shim))]
        job.freeze()
        seconds = run_gdb(job.pids, args.frontend, loads, work, "1")
        # A rank that said it blocks may not be in its call yet on a loaded machine: let the job
        # run and look again until every rank is, for twice the slack of a loaded machine (each
        # look is a whole gdb run); the pause between looks is no assumption, the next look
        # checks.
        deadline = time.time() + 2 * LOADED_MACHINE_SLACK
        late = job.not_in_place(os.path.join(work, "native-1.json"))
        while late:
            if time.time() > deadline:
                raise Failure("ranks %s still not in their MPI call %d s after the first "
                              "snapshot" % (late, 2 * LOADED_MACHINE_SLACK))
            print("%s: ranks %s not in their MPI call yet: taking the snapshots again"
                  % (args.case, late))
            job.thaw()
            time.sleep(2)
            job.freeze()
            seconds = run_gdb(job.pids, args.frontend, loads, work, "1")
            late = job.not_in_place(os.path.join(work, "native-1.json"))
        print("%s: %d ranks launched in %.1f s; one gdb, native and proxied snapshots: %.1f s "
              "(load average %.1f)" % (args.case, ranks, launched - started, seconds,
                                       load_average()))
        problems = []
        snaps = {n: open(os.path.join(work, "%s-1.json" % n)).read() for n, _ in loads}
        if snaps["native"] != snaps["proxy"]:
            problems.append("the proxied snapshot differs from the native one")
        if open(os.path.join(work, "native-1.snapshot.json")).read() != snaps["native"]:
            problems.append("mqd snapshot wrote another snapshot than mqd graph --snapshot")
        outputs = {}
        for n, _ in loads:
            outputs["%s (gdb)" % n] = open(os.path.join(work, "%s-1.gdb-analysis.json" % n)).read()
            outputs["%s (command line)" % n] = graph(mqd_proxy, ["%s-1.json" % n, "--json"],
                                                     work)
        reference = outputs["native (command line)"]
        for label, text in outputs.items():
            if text != reference:
                problems.append("the %s analysis differs from the native command line's" % label)
        analysis = json.loads(reference)
        problems += check_analysis(args.case, case, analysis)
        print(graph(mqd_proxy, ["native-1.json"], work), end="")
        if "progress" in case:
            before = job.passed()
            job.thaw()   # the job runs: gdb has detached
            ran = time.time()
            if case["progress"]["moved"]:
                # Ranks that must move: run until every one has passed the token on since the
                # first snapshot (then its state differs), with the slack of a loaded machine.
                wait_for(lambda: all(n > before[r] for r, n in job.passed().items()),
                         LOADED_MACHINE_SLACK, "every rank to pass the token on (%s before)"
                         % before)
            else:
                # Ranks that must not move: 2 s in which they could, a window to look through,
                # not a wait for anything (a stuck rank stays stuck however long it runs).
                time.sleep(2.0)
            gap = time.time() - ran
            job.freeze()
            run_gdb(job.pids, args.frontend, loads[:1], work, "2")
            compared = json.loads(graph(mqd_proxy, ["native-1.json", "--compare", "native-2.json",
                                                    "--json"], work))
            problems += check_progress(args.case, case, compared["progress"], ranks)
            print("progress after %.1f s: stuck %s, moved %s" % (
                gap, compared["progress"]["stuck"], compared["progress"]["moved"]))
        if args.chromium or args.save_docs:
            graph(mqd_proxy, ["native-1.json", "--html", "report.html", "--svg", "picture.svg",
                              "--png", "picture.png", "--dot", "picture.dot"], work)
        if args.chromium:
            import render_check
            from mqd_analysis.render_dot import MAX_RANK_NODES
            # One highlighted node per rank of a knot; per class of them in a large job.
            if len(analysis["ranks"]) > MAX_RANK_NODES:
                knot_nodes = len([c for c in analysis["classes"] if c["knot"] is not None])
            else:
                knot_nodes = len([r for r in analysis["ranks"] if r["knot"] is not None])
            try:
                problems += ["%s: report: %s" % (args.case, p) for p in
                             render_check.check_report(os.path.join(work, "report.html"),
                                                       os.path.join(work, "screenshot.png"),
                                                       analysis["verdict"], knot_nodes)]
            except render_check.RenderCheckError as e:
                raise Failure(str(e))
            print("%s: the report, rendered by headless Chromium, shows the verdict and %d "
                  "highlighted knot nodes" % (args.case, knot_nodes))
        if args.save_docs:
            os.makedirs(args.save_docs, exist_ok=True)
            for src, dst in (("picture.svg", "svg"), ("picture.png", "png"),
                             ("report.html", "html")):
                data = open(os.path.join(work, src), "rb").read()
                with open(os.path.join(args.save_docs, "%s.%s" % (args.case, dst)), "wb") as f:
                    f.write(data)
            if args.chromium:
                data = open(os.path.join(work, "screenshot.png"), "rb").read()
                with open(os.path.join(args.save_docs, "%s-report.png" % args.case), "wb") as f:
                    f.write(data)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        print("%s: %.1f s in all; CPU of the children: %.1f s user, %.1f s system" % (
            args.case, time.time() - started, usage.ru_utime, usage.ru_stime))
        if problems:
            for p in problems:
                print("FAIL: " + p)
            print("(files kept in %s)" % work)
            return 1
        from mqd_analysis.rankset import ranges
        print("ok: %s: %s, knots %s, explained by %s; native and proxied identical, in gdb and "
              "from the saved snapshot" % (
                  args.case, case["verdict"],
                  "; ".join("[%s]" % ranges(k) for k in case["knots"]) or "none",
                  ", ".join(case["kinds"]) or "nothing needed"))
        passed = True
        return 0
    except (Failure, subprocess.TimeoutExpired) as e:
        print("FAIL: %s: %s (files kept in %s)" % (args.case, e, work))
        return 1
    finally:
        if job:
            job.stop()
        if server:
            server.stop()
        if passed and not os.environ.get("MQD_KEEP"):
            import shutil
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
