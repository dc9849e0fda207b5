#!/usr/bin/env python3
"""A Slurm job across nodes (issue 47, first part): the simulated cluster of
tools/cluster/cluster.py (NODES nodes, each its own network, host name, process ids and /proc,
a slurmd each, slurmctld and munged on this host, the login node) runs tests/e2e/pending.c
as an Open MPI job of RANKS ranks spread over every node, launched by `srun --mpi=pmix`.

gdb on the login node attaches it with `mqd attach --launcher <srun's pid>`: the front end
reads srun's MPIR process table and, the ranks being on other nodes, has Slurm start a
`gdbserver --attach` per rank on its node (a step beside the job's), reached at the node's
address. The native dump (Open MPI's DLL loaded into gdb) must show what every rank posted, on
the node its manifest names; the step of gdbservers must end once gdb has detached.

Then an mqd-proxy-server started on the first node by Slurm (a step of the job, TCP with a
token, --node-memory), and the same dump through the shim: JSON and text identical to the
native one, and the server's log showing every rank of its own node read on the node, and no
other (the other nodes' ranks are read through the debugger).

Then a server on every node, twice (docs/round-trips.md, "A server on every node"). First
started by Slurm in one step (one task a node), each listening on TCP with one token, all named
in the shim's `server` setting: the native dump, each server reading exactly its own node's
ranks there; the last node's server is then killed (every process of it, from inside the
node) and gdb dumps again: the other nodes' ranks as natively, the killed node's each with the
proxy's error, and gdb goes on. Then as a user gets them: the setting slurm:JOB, which has srun
start a server with --stdio on each node of the job (a step each), the stream being srun's
stdin and stdout. `mqd-proxy doctor` checks each in turn; gdb's dump is the native one, each
server reading its own node's ranks (its log relayed by srun into the shim's); once the last
node's server is killed and its srun has ended, the shim starts it again through a new srun
and that node's ranks dump as natively too. Once gdb is gone, so are the servers' steps.

Once more with the job launched by Open MPI's mpirun inside `salloc` (its daemons started
through srun): attached from mpirun's table, gdbservers started through Slurm as well, the
native dump as posted. Then one of its ranks held by another tracer: `mqd attach` says which
and why, gdb goes on, and no rank stays attached. And an attach that fails part way (a node
named with a gdbserver that is not there): the gdbservers Slurm started for the ranks after
it end, and no rank stays traced.

Finally the cluster goes down, and nothing of it may be left: no link, no namespace, no
process, no mount.

usage: e2e_cluster.py --build DIR --ompi-dll PATH [--nodes 4] [--ranks 8] [--ops 10]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "cluster"))
from artefacts import Artefacts  # noqa: E402
from cluster import Cluster, leftovers  # noqa: E402
from cluster_job import SallocJob, SlurmServer, SlurmServers, SrunJob, steps_of  # noqa: E402
from failure import LOADED_MACHINE_SLACK, Failure, verdict, wait_for  # noqa: E402
from gdb_driver import gdb_command, gdb_dump  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402
from scratch import tear_down  # noqa: E402

# gdb's own settings for every session but the first native dump: the login node has the ranks'
# files at the same paths, as a cluster's shared image does. Without a sysroot gdb (16 most of
# all) reads each rank's libraries through its node's gdbserver, about 2 s a rank
# (docs/debuggers.md); the first session keeps gdb's default, as a user without that setting.
LOCAL_FILES = ("set sysroot /",)


def check_hosts(dumps, job, nodes):
    """Every rank dumped with the node its manifest names, and every node running some."""
    problems = ["rank %d: dumped on %s, runs on %s" % (d["rank"], d.get("host"), host)
                for d, host in zip(dumps, job.hosts) if d.get("host") != host]
    idle = sorted(set(nodes) - set(job.hosts))
    if idle:
        problems.append("no rank ran on %s (hosts: %s)" % (", ".join(idle), job.hosts))
    return problems


def native_dump(a, dll, job, work, name, before=LOCAL_FILES):
    """gdb attaches the job from its launcher's table and dumps it natively; returns the JSON
    and the text."""
    prefix = os.path.join(work, name)
    seconds = gdb_dump(job.pids, a.frontend, "mqd load " + dll, prefix,
                       attach="mqd attach --launcher %d" % job.launcher, before=before)
    print("%s: %.2f s" % (name, seconds), flush=True)
    with open(prefix + ".json") as j, open(prefix + ".txt") as t:
        return j.read(), t.read()


def leftover_problems(cluster_dir):
    """What the cluster left behind after going down."""
    problems = ["left behind: %s" % ", ".join(leftovers())] if leftovers() else []
    mine = subprocess.run(["pgrep", "-a", "-f", cluster_dir], stdout=subprocess.PIPE,
                          text=True).stdout.strip()
    if mine:
        problems.append("processes left behind:\n" + mine)
    # Slurm's launchers on the login node name no directory (mpirun's srun, for one); only
    # this cluster runs them here (a zombie is an ended one its new parent has yet to reap)
    listed = subprocess.run(["ps", "-C", "srun,salloc", "-o", "pid=,stat=,args="],
                            stdout=subprocess.PIPE, text=True).stdout.splitlines()
    launchers = [line for line in listed if line.split()[1][0] != "Z"]
    if launchers:
        problems.append("launchers left behind:\n" + "\n".join(launchers))
    # slurmd, slurmctld and munged name the cluster's directory; a job step's slurmstepd
    # does not
    steps = subprocess.run(["pgrep", "-a", "-x", "slurmstepd"], stdout=subprocess.PIPE,
                           text=True).stdout.strip()
    if steps:
        problems.append("job steps left behind:\n" + steps)
    with open("/proc/self/mountinfo") as f:
        mounts = [line for line in f if "mqdc" in line or cluster_dir in line]
    if mounts:
        problems.append("mounts left behind:\n" + "".join(mounts))
    return problems


def run_jobs(cluster, a, args, work):
    """The srun job, dumped natively and through a server on the first node, then the salloc
    job, dumped natively; every job and server stopped before the cluster goes down."""
    problems = []
    nodes = cluster.nodes
    job = server = servers = None
    try:
        srun_dir = os.path.join(work, "srun")
        os.mkdir(srun_dir)
        job = SrunJob(cluster, a.pending, args.ops, len(nodes), args.ranks, srun_dir)
        print("srun job %s: ranks on %s" % (job.job_id, job.hosts), flush=True)
        native = native_dump(a, args.ompi_dll, job, work, "srun-native", before=())
        dumps = json.loads(native[0])
        problems += check_against_manifests(dumps, job.manifests)
        problems += check_hosts(dumps, job, nodes)
        gdbservers_end(cluster, job)

        server = SlurmServer(cluster, job.job_id, nodes[0], a.server, args.ompi_dll, work,
                             "server-" + nodes[0])
        prefix = os.path.join(work, "srun-proxy")
        seconds = gdb_dump(job.pids, a.frontend, "mqd load --server %s --vendor-dll %s %s"
                           % (server.endpoint, args.ompi_dll, a.shim), prefix,
                           {"MQD_PROXY_TOKEN_FILE": server.token_file,
                            "MQD_PROXY_READ_COST": "0"},
                           attach="mqd attach --launcher %d" % job.launcher, before=LOCAL_FILES)
        print("srun-proxy (server on %s): %.2f s" % (nodes[0], seconds), flush=True)
        with open(prefix + ".json") as j, open(prefix + ".txt") as t:
            proxied = (j.read(), t.read())
        problems += ["the proxied dump's %s differs from the native one: see %s"
                     % (kind, work) for i, kind in enumerate(("JSON", "text"))
                     if proxied[i] != native[i]]
        gdbservers_end(cluster, job)
        server.stop()
        problems += read_on_node(server.log, job, nodes[0])
        server = None

        servers = SlurmServers(cluster, job.job_id, nodes, a.server, args.ompi_dll, work)
        problems += every_node(cluster, a, args, job, native, work, "tcp", servers.setting,
                               {"MQD_PROXY_TOKEN_FILE": servers.token_file},
                               lambda node, shim: open(servers.logs[node]).read())
        gdbservers_end(cluster, job)
        servers.stop()
        servers = None

        problems += doctor_every_node(cluster, a, args, job, work)
        problems += every_node(cluster, a, args, job, native, work, "slurm",
                               slurm_setting(a, job), {}, relayed_log)
        gdbservers_end(cluster, job)
        servers_end(cluster, job)
        job.stop()
        job = None

        salloc_dir = os.path.join(work, "salloc")
        os.mkdir(salloc_dir)
        job = SallocJob(cluster, a.pending, args.ops, len(nodes), args.ranks, salloc_dir)
        print("salloc job %s: mpirun %d, ranks on %s" % (job.job_id, job.launcher, job.hosts),
              flush=True)
        dumps = json.loads(native_dump(a, args.ompi_dll, job, work, "salloc-native")[0])
        problems += check_against_manifests(dumps, job.manifests)
        problems += check_hosts(dumps, job, nodes)
        gdbservers_end(cluster, job)
        problems += rank_held_elsewhere(cluster, a, job)
        problems += attach_fails_part_way(cluster, a, job)
    finally:
        for started in (server, servers, job):
            if started:
                started.stop()
    return problems


def rank_held_elsewhere(cluster, a, job):
    """A rank another tracer holds (a gdbserver of someone else's, on its node): the front end's
    gdbserver cannot attach it. `mqd attach` must fail saying which rank, on which node, and
    gdbserver's own words; gdb goes on; the step of gdbservers ends, and the ranks it had
    attached are let go."""
    node, pid = job.hosts[-1], job.pids[-1]
    holder = subprocess.Popen(cluster.enter(node) + ["gdbserver", "--attach", ":0", str(pid)],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    problems = []
    try:
        said = ""
        while "Listening on port" not in said:
            line = holder.stdout.readline()
            if not line:
                return ["the holding gdbserver did not attach rank %d on %s: %s"
                        % (pid, node, said)]
            said += line
        problems += failed_attach(
            cluster, a, job, "",
            ("pid %d on %s: Cannot attach to process %d" % (pid, node, pid), "already traced"),
            "with rank %d on %s held by another tracer" % (pid, node), exempt=(node, pid))
    finally:
        # nsenter forked to enter the node's pid namespace: its child is the gdbserver
        with open("/proc/%d/task/%d/children" % (holder.pid, holder.pid)) as f:
            for child in f.read().split():
                os.kill(int(child), signal.SIGKILL)
        holder.kill()
        holder.wait()
        # Its attach stopped the rank: let it run, to see the stop file and end with the job,
        # once the kernel has detached the dead tracer (a SIGCONT before that is lost).
        wait_for(lambda: tracer_of(cluster, node, pid) == 0, LOADED_MACHINE_SLACK,
                 "the holding gdbserver to let rank %d on %s go" % (pid, node))
        cluster.run_on(node, ["kill", "-CONT", str(pid)])
    print("a rank held by another tracer: mqd attach says so, gdb goes on", flush=True)
    return problems


def attach_fails_part_way(cluster, a, job):
    """`mqd attach` failing after Slurm started its gdbservers: a node named with a gdbserver
    that is not there (--gdbserver NODE=127.0.0.1:1), that node's first rank neither the
    job's first nor its last. The ranks before it are attached, the attach fails saying which
    gdbserver it could not reach, and gdb goes on; the gdbservers started for the ranks after
    it, never connected, must not stay holding their ranks: once gdb is gone no rank is
    traced and the step of gdbservers has ended."""
    node = next(h for h in job.hosts[1:] if h != job.hosts[0])
    later = [h for h in job.hosts[job.hosts.index(node) + 1:] if h != node]
    if not later:
        return ["attach_fails_part_way: no rank on another node after %s's first (hosts %s)"
                % (node, job.hosts)]
    problems = failed_attach(cluster, a, job, " --gdbserver %s=127.0.0.1:1" % node,
                             ("cannot reach the gdbserver 127.0.0.1:1 for %s" % node,),
                             "with no gdbserver at %s's address" % node)
    print("an attach that failed part way: gdb goes on, the gdbservers it did not reach end",
          flush=True)
    return problems


def failed_attach(cluster, a, job, options, wanted, what, exempt=None):
    """`mqd attach --launcher L OPTIONS` in gdb, which must fail saying each of `wanted`, with
    no traceback, and go on to its next command; once gdb is gone, the step of gdbservers must
    end and no rank but `exempt` (node, pid) stay traced. The problems, `what` naming the
    case."""
    cmd = gdb_command(job.pids, a.frontend, "python print('mqd-test: gdb goes on')",
                      attach="mqd attach --launcher %d%s" % (job.launcher, options),
                      before=LOCAL_FILES)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=600).stdout
    problems = []
    missing = [w for w in wanted + ("mqd-test: gdb goes on",) if w not in out]
    if missing or "Traceback" in out:
        problems.append("mqd attach %s: %s not said:\n%s" % (what, missing, out[-3000:]))
    gdbservers_end(cluster, job)
    held = [(h, p) for h, p in zip(job.hosts, job.pids)
            if (h, p) != exempt and tracer_of(cluster, h, p) != 0]
    if held:
        problems.append("ranks still traced after mqd attach %s failed: %s" % (what, held))
    return problems


def tracer_of(cluster, node, pid):
    """The pid tracing process `pid` of `node` (0: none)."""
    status = cluster.run_on(node, ["cat", "/proc/%d/status" % pid], stdout=subprocess.PIPE,
                            text=True).stdout
    return int(re.search(r"^TracerPid:\s*(\d+)", status, re.M).group(1))


def read_on_node(log, job, node):
    """The server whose log is `log`, on `node`, read exactly that node's ranks there."""
    with open(log) as f:
        proved = set(int(p) for p in re.findall(r"memory read on this host, from pid (\d+)",
                                                f.read()))
    own = set(pid for pid, host in zip(job.pids, job.hosts) if host == node)
    if proved == own:
        return []
    return ["the server on %s read pids %s on its node, its ranks are %s: see %s"
            % (node, sorted(proved), sorted(own), log)]


def slurm_setting(a, job):
    """The shim's `server` setting for a server on every node of `job`, Slurm starting each:
    the one line a user types (the server's absolute path: the nodes have no install)."""
    return "slurm:%s%s" % (job.job_id, a.server)


def doctor_every_node(cluster, a, args, job, work):
    """`mqd-proxy doctor` with the setting slurm:JOB checks the server on each node in turn,
    each started through srun, every check passed."""
    env = dict(os.environ, MQD_PROXY_SERVER=slurm_setting(a, job), MQD_PROXY_DLL=args.ompi_dll)
    run = subprocess.run([a.cli, "doctor"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=300, env=env)
    with open(os.path.join(work, "doctor.txt"), "w") as f:
        f.write(run.stdout)
    checked = re.findall(r"^== slurm:%s@(\S+?)/" % job.job_id, run.stdout, re.M)
    passed = run.stdout.count("all checks passed")
    if run.returncode != 0 or checked != cluster.nodes or passed != len(cluster.nodes) or \
            "authentication: by Slurm" not in run.stdout:
        return ["mqd-proxy doctor with %s (exit %d) checked %s, %d passed, not every node of "
                "%s: see %s/doctor.txt" % (slurm_setting(a, job), run.returncode, checked, passed,
                                           cluster.nodes, work)]
    print("doctor: the server Slurm starts on each of %s, every check passed" % checked,
          flush=True)
    return []


def relayed_log(node, shim_log):
    """What `node`'s server wrote, as srun relays it into the shim's log ("srun NODE: ...")."""
    prefix = "srun %s: " % node
    return "".join(line.split(prefix, 1)[1] for line in shim_log.splitlines(True)
                   if prefix in line)


def every_node(cluster, a, args, job, native, work, label, setting, env, server_log):
    """gdb dumps the job through a server on every node, the shim's `server` setting being
    `setting`: the native dump, each server reading its own node's ranks there
    (`server_log(node, shim_log)` is what that node's server logged). Then the last node's
    server is killed (its every process, from inside the node) and gdb dumps again, and goes
    on to its last command: the other nodes' ranks as natively, and the killed node's
    - each with the proxy's error when its server listened on TCP (label "tcp": nothing
      starts it again);
    - as natively when Slurm started it (label "slurm": once its srun has ended, the shim
      re-establishes the session through a new srun, which starts a new server, and says so)."""
    problems = []
    killed = cluster.nodes[-1]
    kill = " ".join(cluster.enter(killed) + ["pkill", "-KILL", "-x", "mqd-proxy-serve"])
    if label == "slurm":
        # Then the wait for that node's srun to end, which closes the shim's stream (till then
        # srun holds it open). The bracket keeps pgrep from matching the shell that runs it.
        kill += ("; for i in $(seq 600); do pgrep -f 'nodelist=%s[%s] --nodes=1' >/dev/null "
                 "|| break; sleep 0.1; done" % (killed[:-1], killed[-1]))
    before, after = (os.path.join(work, "every-node-%s-%s.json" % (label, w))
                     for w in ("before", "after"))
    shim_log = os.path.join(work, "every-node-%s-shim.log" % label)
    gdb_out = os.path.join(work, "every-node-%s-gdb.txt" % label)
    load = "mqd load --server '%s' --vendor-dll %s %s" % (setting, args.ompi_dll, a.shim)
    cmd = gdb_command(job.pids, a.frontend, load, "mqd attach --launcher %d" % job.launcher,
                      LOCAL_FILES)
    cmd += ["-ex", "mqd dump --all --json --output " + before, "-ex", "shell " + kill,
            "-ex", "mqd dump --all --json --output " + after, "-ex", "mqd status",
            "-ex", "echo mqd-e2e: gdb lives\\n"]
    env = dict(os.environ, MQD_PROXY_READ_COST="0", MQD_PROXY_LOG="info",
               MQD_PROXY_LOG_FILE=shim_log, **env)
    started = time.time()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=900, env=env)
    print("every-node %s (%s: a server on each of %d nodes, then %s's killed): %.2f s"
          % (label, setting, len(cluster.nodes), killed, time.time() - started), flush=True)
    with open(gdb_out, "w") as f:
        f.write(run.stdout)
    if run.returncode != 0 or "mqd-e2e: gdb lives" not in run.stdout or "Traceback" in run.stdout:
        return ["gdb with a server on every node (%s) failed (%d): see %s"
                % (label, run.returncode, gdb_out)]
    if not os.path.exists(before) or open(before).read() != native[0]:
        problems.append("the dump through a server on every node (%s) differs from the native "
                        "one: see %s" % (label, before))
    with open(shim_log) as f:
        said = f.read()
    for node in cluster.nodes:
        proved = set(int(p) for p in re.findall(r"memory read on this host, from pid (\d+)",
                                                server_log(node, said)))
        own = set(pid for pid, host in zip(job.pids, job.hosts) if host == node)
        if proved != own:
            problems.append("the server on %s (%s) read pids %s on its node, its ranks are %s: "
                            "see %s" % (node, label, sorted(proved), sorted(own), work))
    # The second dump, nothing having run since the attach: each rank's epoch check read from
    # what the first read of its stack's top, no exchange
    # (docs/round-trips.md, "The debugger's own link");
    # at least one stack page trusted a rank of the nodes not killed.
    trusted = re.findall(r"trusted (\d+) stack pages of processes stopped since their attach",
                         run.stdout)
    others = sum(1 for host in job.hosts if host != killed)
    if not trusted or int(trusted[-1]) < others:
        problems.append("the second dump (%s) trusted %s stack pages, not one or more a rank of "
                        "the %d not on %s: see %s" % (label, trusted[-1:], others, killed,
                                                      gdb_out))
    native_ranks = json.loads(native[0])
    dumped = json.loads(open(after).read()) if os.path.exists(after) else []
    if len(dumped) != len(native_ranks):
        return problems + ["after the kill (%s), %d ranks dumped, not %d"
                           % (label, len(dumped), len(native_ranks))]
    for mine, theirs, host in zip(dumped, native_ranks, job.hosts):
        if host == killed and label == "tcp" and "error" not in mine:
            problems.append("rank %d on %s, whose server was killed, dumped without an error"
                            % (theirs["rank"], host))
        elif (host != killed or label == "slurm") and mine != theirs:
            problems.append("rank %d on %s dumped otherwise once %s's server was killed (%s): "
                            "see %s" % (theirs["rank"], host, killed, label, after))
    if label == "slurm" and "session re-established with slurm:%s@%s" % (job.job_id, killed) \
            not in said:
        problems.append("the shim did not say it re-established %s's session through srun: see "
                        "%s" % (killed, shim_log))
    routed = re.findall(r"(\d+) node servers, home \S+: (\d+) ranks on their nodes", said)
    if routed != [(str(len(cluster.nodes)), str(len(job.pids)))]:
        problems.append("the shim said %s of its node servers, not %d servers and %d ranks: see "
                        "%s" % (routed, len(cluster.nodes), len(job.pids), shim_log))
    return problems


def servers_end(cluster, job):
    """Waits for the servers' steps srun started for the shim to end, gdb having gone."""
    wait_for(lambda: "mqd-proxy-server" not in steps_of(cluster, job.job_id),
             LOADED_MACHINE_SLACK, "the servers' steps of job %s to end once gdb exited"
             % job.job_id)


def gdbservers_end(cluster, job):
    """Waits for the step of gdbservers the front end started to end, gdb having detached."""
    wait_for(lambda: "mqd-gdbservers" not in steps_of(cluster, job.job_id),
             LOADED_MACHINE_SLACK, "the gdbservers' step of job %s to end once gdb detached"
             % job.job_id)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--ops", type=int, default=10)
    args = ap.parse_args()
    a = Artefacts(args.build)
    # Under the build: the nodes have a /tmp of their own, and share this directory with the
    # login node, as a cluster shares its home directories.
    work = tempfile.mkdtemp(prefix="mqd-cluster-", dir=os.path.join(args.build, "tests"))
    cluster_dir = os.path.join(work, "cluster")
    problems = []
    try:
        with Cluster(cluster_dir, nodes=args.nodes) as cluster:
            # The user's environment on the login node: gdb's front end asks this Slurm.
            env = cluster.env()
            os.environ.clear()
            os.environ.update(env)
            problems += run_jobs(cluster, a, args, work)
        problems += leftover_problems(cluster_dir)
    except Failure as e:
        problems.append(str(e))
    tear_down(work, not problems)
    return verdict(problems, work, "a %d-node Slurm job dumped natively and through a "
                   "server Slurm started, from srun's and mpirun's tables; nothing left"
                   % args.nodes)


if __name__ == "__main__":
    sys.exit(main())
