"""MPI jobs and servers on a Slurm cluster (the simulated one of tools/cluster/cluster.py):
tests/e2e/pending.c launched across the nodes by `srun --mpi=pmix` (SrunJob) or by Open MPI's
mpirun inside `salloc` (SallocJob), and an mqd-proxy-server started on one node by Slurm, in a
step beside the job's (SlurmServer), or one on each node (SlurmServers). The ranks talk over
TCP on the cluster's subnet, as on a cluster without a faster network.

    from cluster_job import SrunJob, SlurmServer, SlurmServers
    job = SrunJob(cluster, program, ops=10, nodes=4, ranks=8, workdir=work)
    job.launcher                 # the pid `mqd attach --launcher` takes (srun's, or mpirun's)
    job.hosts                    # rank -> the node Slurm placed it on, from the ranks' manifests
    server = SlurmServer(cluster, job.job_id, "node1", server_bin, dll, work, "node1")
    server.endpoint              # tcp:NODE_ADDRESS:PORT, with server.token_file
    servers = SlurmServers(cluster, job.job_id, cluster.nodes, server_bin, dll, work)
    servers.setting              # every node's endpoint: the shim's `server` setting
    server.stop(); servers.stop(); job.stop()
"""
import os
import secrets
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "frontends", "gdb"))
from mqd_gdb import slurm  # noqa: E402  (the front end's: how `mqd attach` finds the job)
from daemon import start_daemon  # noqa: E402
from failure import LOADED_MACHINE_SLACK, Failure  # noqa: E402
from mpi_job import LaunchedJob  # noqa: E402


def _open_mpi_env(cluster):
    """Open MPI's settings for a job across the nodes: TCP between nodes, shared memory
    within one, both on the cluster's subnet only. The nodes' CPUs are this machine's few:
    ranks waiting in MPI yield the CPU (srun's ranks would spin, Open MPI not knowing them
    oversubscribed, and starve the ranks they wait for and Slurm's daemons), and run under the
    idle scheduling policy (tests/e2e/pending.c), so that however many spin, Slurm's daemons
    and the PMIx server in each node's slurmstepd, whom they wait for, get the CPU first.

    Two more for what the tests compare with the ranks' manifests, the same in 4.1 and 5.0
    (docs/open-mpi-5.md, "Across nodes: Slurm 24.11"): a record of every peer made at MPI_Init
    (mpi_add_procs_cutoff), since the DLL shows world rank 0 for a group member whose
    record a rank has not made yet, which Open MPI 5 makes for another node's ranks only when
    it first talks to them; and no hierarchical collectives (coll han), which on a job across
    nodes add communicators of Open MPI's own (a SPLIT_TYPE and a SPLIT of MPI_COMM_WORLD)
    beside the program's split."""
    subnet = cluster.subnet
    return cluster.env(dict(os.environ, OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader,tcp",
                            OMPI_MCA_btl_tcp_if_include=subnet,
                            OMPI_MCA_oob_tcp_if_include=subnet,
                            OMPI_MCA_rmaps_base_oversubscribe="1",
                            OMPI_MCA_mpi_yield_when_idle="1",
                            MQD_E2E_SCHED_IDLE="1",
                            OMPI_MCA_mpi_add_procs_cutoff="100000",
                            OMPI_MCA_coll="^han"))


class _SlurmJob(LaunchedJob):
    def _placed(self, cluster):
        """Where each rank runs: the host name its manifest gives (the node's own name)."""
        self.hosts = [m["host"] for m in self.manifests]
        self.job_id = _job_of(cluster, self.launcher)


def _job_of(cluster, pid):
    """The Slurm job whose launcher (srun, or an mpirun under salloc) is process `pid`, as the
    front end finds it."""
    job = slurm.job_of(pid, cluster.env())
    if job is None:
        raise Failure("Slurm knows no job of launcher %d" % pid)
    return job


def _new_token_file(path):
    """A new server token in `path`, readable by its owner alone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (secrets.token_hex(32) + "\n").encode())
    os.close(fd)
    return path


# How many times a job is started before its start-up failure fails the test. Open MPI's TCP
# wire-up across nodes now and then crashes a rank inside MPI_Init (4.1 under srun: a call
# through a NULL active-message callback in mca_btl_tcp.so's receive handler, about one start
# in tens on a loaded machine; 5.0 under srun too, in ob1's mca_pml_ob1_recv_frag_callback_match
# from the same receive path, seen once in a few starts on Debian 13): the job is started
# again, its failure printed; what a test checks begins once every rank is parked.
STARTS = 3


class SrunJob(_SlurmJob):
    """srun --mpi=pmix -N NODES -n RANKS PROGRAM OPS DIR: Slurm starts every rank (PMIx),
    `per_node` of them on each node if given (else as Slurm places them). A rank that dies
    ends the step (--kill-on-bad-exit), so that a failed start ends at once."""

    def __init__(self, cluster, program, ops, nodes, ranks, workdir, per_node=None):
        spread = ["--ntasks-per-node=%d" % per_node] if per_node else []
        super().__init__(["srun", "--mpi=pmix", "--kill-on-bad-exit=1", "-N", str(nodes),
                          "-n", str(ranks)] + spread + ["--job-name=pending", program, str(ops)],
                         ranks, workdir, "the srun job", _open_mpi_env(cluster), starts=STARTS)
        self.launcher = self.proc.pid
        self._placed(cluster)


class SallocJob(_SlurmJob):
    """salloc -N NODES mpirun -np RANKS PROGRAM OPS DIR: Open MPI's mpirun on this host,
    its daemons started on the nodes through srun."""

    def __init__(self, cluster, program, ops, nodes, ranks, workdir):
        super().__init__(["salloc", "-N", str(nodes), "--job-name=pending", "mpirun",
                          "--allow-run-as-root", "--oversubscribe", "--map-by", "node", "-np",
                          str(ranks), program,
                          str(ops)], ranks, workdir, "the salloc job", _open_mpi_env(cluster),
                         starts=STARTS)
        # salloc's child: mpirun, the launcher with the MPIR table
        with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
            children = [int(c) for c in f.read().split()]
        if len(children) != 1:
            self.stop()
            raise Failure("salloc has children %s, not one mpirun" % children)
        self.launcher = children[0]
        self._placed(cluster)


class SlurmServer:
    """mqd-proxy-server on `node`, started by Slurm in a step of job `job_id` (srun --jobid
    --overlap), listening on every address of the node with a token, reading the node's
    processes (--node-memory); its log and ready file in `workdir` (a directory the nodes
    share with this host)."""

    def __init__(self, cluster, job_id, node, server_bin, dll, workdir, name):
        self.name = name
        self.log = os.path.join(workdir, name + ".log")
        ready = os.path.join(workdir, name + ".ready")
        self.token_file = _new_token_file(os.path.join(workdir, name + ".token"))
        argv = ["srun", "--jobid=" + job_id, "--overlap", "--input=none", "-w", node, "-N1",
                "-n1", "--job-name=mqd-proxy-server", server_bin, "--listen", "tcp:0.0.0.0:0",
                "--token-file", self.token_file, "--dll", dll, "--node-memory",
                "--state-dir", "none", "--ready-file", ready, "--log-file", self.log]
        self.proc = start_daemon(argv, lambda: os.path.exists(ready), name, log=self.log,
                                 env=cluster.env(), start_new_session=True)
        port = open(ready).read().strip().rsplit(":", 1)[1]
        self.endpoint = "tcp:%s:%s" % (cluster.address(node), port)

    def stop(self):
        """SIGTERM to srun, which ends the step: the server gets SIGTERM and exits."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=LOADED_MACHINE_SLACK)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def steps_of(cluster, job_id):
    """The names of job `job_id`'s running steps."""
    out = subprocess.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%j"], env=cluster.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return sorted(line.strip() for line in out.splitlines() if line.strip())



class SlurmServers:
    """mqd-proxy-server on each of `nodes`, started by Slurm in one step of job `job_id` (one
    task a node), each listening on every address of its node with one token, reading its
    node's processes (--node-memory); their logs and ready files in `workdir`, named
    node-server-NODE; with `learn`, each keeps learned state in `workdir`/state-NODE (else
    none). `endpoints` lists them in the order of `nodes`, as the shim's `server` setting
    takes them (`setting`); `pids` are their supervisors' on this host (the login node sees
    every node's processes)."""

    def __init__(self, cluster, job_id, nodes, server_bin, dll, workdir, learn=False):
        self.nodes = list(nodes)
        self.logs = {n: os.path.join(workdir, "node-server-%s.log" % n) for n in self.nodes}
        ready = {n: os.path.join(workdir, "node-server-%s.ready" % n) for n in self.nodes}
        self.token_file = _new_token_file(os.path.join(workdir, "servers.token"))
        # Each task names its files after its node ($SLURMD_NODENAME).
        state = '"$MQD_SERVERS_DIR/state-$SLURMD_NODENAME"' if learn else "none"
        script = ('exec "$0" "$@"'
                  ' --ready-file "$MQD_SERVERS_DIR/node-server-$SLURMD_NODENAME.ready"'
                  ' --log-file "$MQD_SERVERS_DIR/node-server-$SLURMD_NODENAME.log"'
                  ' --state-dir ' + state)
        argv = ["srun", "--jobid=" + job_id, "--overlap", "--input=none",
                "--nodelist=" + ",".join(self.nodes), "-N", str(len(self.nodes)),
                "--ntasks-per-node=1", "--job-name=mqd-proxy-servers", "/bin/sh", "-c", script,
                server_bin, "--listen", "tcp:0.0.0.0:0", "--token-file", self.token_file,
                "--dll", dll, "--node-memory"]
        env = cluster.env(dict(os.environ, MQD_SERVERS_DIR=workdir))
        self.proc = start_daemon(argv, lambda: all(os.path.exists(r) for r in ready.values()),
                                 "the servers' step", env=env, start_new_session=True)
        self.endpoints = ["tcp:%s:%s" % (cluster.address(n),
                                         open(ready[n]).read().strip().rsplit(":", 1)[1])
                          for n in self.nodes]
        self.setting = " ".join(self.endpoints)
        self.pids = _supervisors(self.token_file)

    def stop(self):
        """SIGTERM to srun, which ends the step."""
        SlurmServer.stop(self)


def _supervisors(token_file):
    """The host's pids of the mqd-proxy-servers started with `token_file` whose parent is none
    of them (their supervisors, not their workers)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % entry) as f:
                if f.read().strip() != "mqd-proxy-serve":  # the program's name, cut at 15
                    continue
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % entry) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if token_file.encode() in argv:
            found[int(entry)] = parent
    return sorted(pid for pid, parent in found.items() if parent not in found)
