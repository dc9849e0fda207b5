"""A live Open MPI job on the aarch64 node (tools/arm-node/), dumped two ways: natively by the
node's own aarch64 gdb with Open MPI's aarch64 DLL loaded in it, and from this x86_64 host by
gdb-multiarch through each rank's gdbserver on the node, with this build's shim and the
aarch64 mqd-proxy-server running on the node beside the ranks (TCP with a token, as a node
reached over a network is served). tests/arm-node/ and bench/real_topology.py use it.

    from node_job import NodeJob
    job = NodeJob(host_build, cross_build, ranks=4, ops=30)   # boots the node, starts the job
    native = job.native_dump(prefix)           # {seconds, texts, json}: on the node
    server = job.start_server(["--node-memory"], "fresh")   # the aarch64 server on the node
    proxied = job.proxied_dump(prefix, server, {"MQD_PROXY_CACHE": "call"})
    job.stop_server()
    job.server_log(server)                      # what the node's server logged
    job.stop()                                  # the job ends, the node powers off

A dump is `mqd dump --all --json` (kept as the `json` text) and `mqd dump --all` twice (the
first dump and a refresh; `texts`), each timed (`seconds`: first, refresh).
"""
import json
import os
import secrets
import shlex
import subprocess
import sys
import tempfile

from artefacts import Artefacts
from failure import LOADED_MACHINE_SLACK, Failure, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "arm-node"))
from node import Node, NodeError, default_image, make_image  # noqa: E402,F401 (NodeError: for callers)

OPT = "/opt/mqd"                       # the project's aarch64 files on the node
DLL = "/usr/lib/aarch64-linux-gnu/openmpi/lib/openmpi3/libompi_dbg_msgq.so"
SERVER_PORT = 7777
GDBSERVER_PORT = 2345                  # rank R's gdbserver listens on GDBSERVER_PORT + R

# gdb's part of a dump, the same on both sides: the front end, the types of Debian's stripped
# libmpi, the DLL (natively or through the shim), then the dumps, each timed; writes
# OUT.json, OUT.0.txt, OUT.1.txt and OUT.seconds.
DUMP_SCRIPT = r"""
import gdb, json, os, time
cfg = json.loads(os.environ["MQD_NODE_DUMP"])
gdb.execute("source " + cfg["frontend"])
gdb.execute("mqd types " + cfg["types"])
gdb.execute(cfg["load"])
seconds = []
for i in range(2):
    t = time.time()
    gdb.execute("mqd dump --all --output %s.%d.txt" % (cfg["out"], i))
    seconds.append(time.time() - t)
gdb.execute("mqd dump --all --json --output %s.json" % cfg["out"])
with open(cfg["out"] + ".seconds", "w") as f:
    json.dump(seconds, f)
"""


class NodeServer:
    """The aarch64 mqd-proxy-server running on the node (NodeJob.start_server)."""

    def __init__(self, name, endpoint, log):
        self.name, self.endpoint, self.log = name, endpoint, log


class NodeJob:
    def __init__(self, build, cross_build, ranks, ops, image=None, forwards=()):
        host, cross = Artefacts(build), Artefacts(cross_build)
        self.shim = host.require("shim")
        self.frontend = host.require("frontend")
        self.program = cross.require("pending")
        self.server_bin = cross.require("server")
        self.types = os.path.join(cross_build, "share", "mqd-proxy", "ompi-types", "aarch64",
                                  "ompi_types.o")
        if not os.path.exists(self.types):
            raise Failure("missing %s (build the aarch64 cross build first)" % self.types)
        self.ranks, self.ops = ranks, ops
        self.work = tempfile.mkdtemp(prefix="mqd-node-job-")
        self.token = os.path.join(self.work, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        image = image or default_image()
        make_image(image)
        self.node = Node(image, [SERVER_PORT] + [GDBSERVER_PORT + r for r in range(ranks)] +
                         list(forwards), console=os.path.join(self.work, "console.log"))
        self.servers = 0
        try:
            print("node_job: the node booted in %.1f s" % self.node.boot_seconds, flush=True)
            self.node.put({self.program: OPT + "/pending", self.server_bin: OPT + "/server",
                           self.types: OPT + "/ompi_types.o", self.token: OPT + "/token",
                           os.path.dirname(self.frontend): OPT + "/gdb"})
            self.node.run("chmod 600 %s/token && mkdir -p /tmp/job" % OPT)
            self._start_job()
        except BaseException:
            self.stop()
            raise

    def _start_job(self):
        """mpirun on the node, as mpi_job.OpenMpiJob runs it on this host; waits until every
        rank has posted and written its manifest."""
        self.node.run(
            "cd /tmp/job; OMPI_MCA_rmaps_base_oversubscribe=1 setsid nohup mpirun "
            "--allow-run-as-root --oversubscribe -np %d --mca pml ob1 --mca btl self,vader "
            "%s/pending %d /tmp/job > mpirun.log 2>&1 < /dev/null &" % (self.ranks, OPT, self.ops))
        ready = " && ".join("test -e /tmp/job/rank-%d.ready" % r for r in range(self.ranks))
        try:
            wait_for(lambda: self.node.run(ready, check=False).returncode == 0,
                     120 + LOADED_MACHINE_SLACK, "the MPI job on the node")
        except Failure as e:
            raise Failure("%s; mpirun said:\n%s" % (e, self.node.run(
                "cat /tmp/job/mpirun.log", check=False).stdout[-3000:]))
        self.manifests = [json.loads(self.node.get("/tmp/job/rank-%d.json" % r))
                          for r in range(self.ranks)]
        self.pids = [m["pid"] for m in self.manifests]

    @staticmethod
    def _dump_config(frontend, types, load, out):
        """DUMP_SCRIPT's configuration (its environment variable's value)."""
        return json.dumps({"frontend": frontend, "types": types, "load": load, "out": out})

    def native_dump(self, prefix, ranks=None):
        """The node's own gdb attached to every rank (or those of `ranks`) with the DLL loaded
        natively: the reference. Results are fetched to PREFIX.*."""
        pids = [self.pids[r] for r in (ranks if ranks is not None else range(self.ranks))]
        out = "/tmp/job/native"
        config = self._dump_config(OPT + "/gdb/mqd.py", OPT + "/ompi_types.o", "mqd load " + DLL,
                                   out)
        self.node.put({self._script(): "/tmp/job/dump.py"})
        commands = []
        for i, pid in enumerate(pids):
            if i:
                commands += ["add-inferior", "inferior %d" % (i + 1)]
            commands.append("attach %d" % pid)
        attach = " ".join("-ex " + shlex.quote(c) for c in commands)
        command = ("MQD_NODE_DUMP=%s gdb -q -nx -batch -iex 'set debuginfod enabled off' %s "
                   "-ex 'inferior 1' -x /tmp/job/dump.py" % (shlex.quote(config), attach))
        result = self.node.run(command, check=False, timeout=3600)
        self._check_gdb("the node's gdb", result.returncode, result.stdout + result.stderr, out)
        return self._fetched(out, prefix)

    def _script(self):
        path = os.path.join(self.work, "dump.py")
        with open(path, "w") as f:
            f.write(DUMP_SCRIPT)
        return path

    def _fetched(self, out, prefix):
        for suffix in (".json", ".0.txt", ".1.txt", ".seconds"):
            with open(prefix + suffix, "wb") as f:
                f.write(self.node.get(out + suffix))
        return self._read(prefix)

    @staticmethod
    def _read(prefix):
        return {"seconds": json.load(open(prefix + ".seconds")),
                "texts": [open("%s.%d.txt" % (prefix, i)).read() for i in range(2)],
                "json": open(prefix + ".json").read()}

    @staticmethod
    def _check_gdb(who, rc, log, out):
        errors = [line for line in log.splitlines() if line.startswith("mqd:")
                  and not line.startswith(("mqd: loaded ", "mqd: attached ", "mqd: types "))]
        if rc != 0 or errors or "Traceback" in log:
            raise Failure("%s failed (%d) writing %s:\n%s" % (who, rc, out, log[-4000:]))

    def start_server(self, options, state):
        """The aarch64 server on the node's port SERVER_PORT with `options` (e.g.
        ["--node-memory"]) and its state in /tmp/STATE on the node (a new name: a server new to
        the DLL); the one before it, if any, is stopped."""
        self.stop_server()
        self.servers += 1
        name = "server-%d" % self.servers
        log = "/tmp/job/%s.log" % name
        self.node.run("rm -f /tmp/job/server.ready; "
                      "setsid nohup %s/server --listen tcp:0.0.0.0:%d --token-file %s/token "
                      "--dll %s --state-dir /tmp/%s --ready-file /tmp/job/server.ready "
                      "--log-level debug %s > %s 2>&1 < /dev/null &"
                      % (OPT, SERVER_PORT, OPT, DLL, state,
                         " ".join(shlex.quote(o) for o in options), log))
        wait_for(lambda: self.node.run("test -s /tmp/job/server.ready", check=False).returncode
                 == 0, 60 + LOADED_MACHINE_SLACK, "the server on the node")
        return NodeServer(name, "tcp:127.0.0.1:%d" % self.node.port[SERVER_PORT], log)

    def stop_server(self):
        """Stops the node's server (SIGTERM: its session summaries reach its log) and waits
        for it to end."""
        self.node.run("pkill -TERM -f '^%s/server' ; for i in $(seq 300); do "
                      "pgrep -f '^%s/server' > /dev/null || exit 0; sleep 0.1; done; exit 1"
                      % (OPT, OPT), check=False)

    def server_log(self, server):
        return self.node.get(server.log).decode(errors="replace")

    def start_gdbservers(self, ranks=None):
        """A `gdbserver --attach` on the node for every rank (or those of `ranks`), rank R's
        on GDBSERVER_PORT + R; each ends with its debugger's session (any left from a session
        that failed are ended first)."""
        ranks = ranks if ranks is not None else range(self.ranks)
        self.node.run("pkill -x gdbserver; for i in $(seq 300); do pgrep -x gdbserver > "
                      "/dev/null || break; sleep 0.1; done; " + " ".join(
                          "setsid nohup gdbserver --attach :%d %d > /tmp/job/gdbserver-%d.log "
                          "2>&1 < /dev/null &" % (GDBSERVER_PORT + r, self.pids[r], r)
                          for r in ranks))
        listening = " && ".join("ss -Htln sport = :%d | grep -q LISTEN" % (GDBSERVER_PORT + r)
                                for r in ranks)
        wait_for(lambda: self.node.run(listening, check=False).returncode == 0,
                 60 + LOADED_MACHINE_SLACK, "the ranks' gdbservers on the node")

    def remote_gdb(self, addresses):
        """This host's gdb-multiarch (batch) with one inferior per gdbserver address (HOST:PORT),
        the node's files as its sysroot and the aarch64 program loaded locally."""
        cmd = ["gdb-multiarch", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-iex", "set sysroot " + self.node.root, "-iex", "set auto-load safe-path /",
               "-ex", "set architecture aarch64"]
        for i, address in enumerate(addresses):
            if i:
                cmd += ["-ex", "add-inferior", "-ex", "inferior %d" % (i + 1)]
            cmd += ["-ex", "file " + self.program, "-ex", "target remote " + address]
        return cmd + ["-ex", "inferior 1"]

    def proxied_dump(self, prefix, server, env):
        """This host's gdb-multiarch reaching every rank through its gdbserver on the node,
        the shim loaded against `server`; `env` is the shim's (MQD_PROXY_CACHE, ...)."""
        self.start_gdbservers()
        cmd = self.remote_gdb(["127.0.0.1:%d" % self.node.port[GDBSERVER_PORT + r]
                               for r in range(self.ranks)])
        load = "mqd load --server %s --vendor-dll %s %s" % (server.endpoint, DLL, self.shim)
        full_env = dict(os.environ, MQD_PROXY_TOKEN_FILE=self.token, **env)
        full_env["MQD_NODE_DUMP"] = self._dump_config(self.frontend, self.types, load, prefix)
        result = subprocess.run(cmd + ["-x", self._script()], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=full_env, timeout=3600)
        self._check_gdb("gdb-multiarch", result.returncode, result.stdout, prefix)
        return self._read(prefix)

    def stop(self):
        """Lets the ranks finish (as mpi_job does), then powers the node off."""
        try:
            if self.node.qemu.poll() is None:
                self.node.run("touch /tmp/job/stop; for i in $(seq 60); do "
                              "pgrep -x mpirun > /dev/null || exit 0; sleep 1; done",
                              check=False, timeout=120)
        finally:
            self.node.stop()
