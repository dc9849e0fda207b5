#!/usr/bin/env python3
"""A real foreign-architecture Open MPI process, debugged from x86_64 through the proxy.

The e2e program (tests/e2e/pending.c), built for ARCH against that architecture's Open MPI,
runs as a singleton under `qemu-ARCH -L SYSROOT -g PORT` and leaves pending operations on four
communicators (receives nobody matches, large sends to itself). mqd-proxy-server, built for
ARCH, runs under qemu-user too and serves ARCH's own libompi_dbg_msgq.so from the sysroot over
TCP loopback. The x86_64 gdb-multiarch connects to qemu's gdb stub, stops the program once it
has parked, loads the mqd front end with this build's x86_64 libmqdproxy.so and the type object
built for ARCH, and dumps the queues (JSON and text, twice: cold and repeat). The dump must show
what the program recorded in its manifest: tags, peers, lengths, buffers, communicator names,
sizes and groups; and the server must have served it with ARCH's DLL.

usage: e2e_cross.py --build DIR --arch ARCH --cross-build DIR --sysroot DIR --emulator QEMU
                    [--ops N]
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import LOADED_MACHINE_SLACK, Failure, wait_for  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402

TRIPLES = {"aarch64": "aarch64-linux-gnu", "ppc64el": "powerpc64le-linux-gnu",
           "s390x": "s390x-linux-gnu"}
PROCESSORS = {"aarch64": "aarch64", "ppc64el": "ppc64le", "s390x": "s390x"}
GDB_ARCH = {"aarch64": "aarch64", "ppc64el": "powerpc:common64", "s390x": "s390:64-bit"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Emulated:
    """A program of the foreign architecture under qemu-user, killed (with its process group)
    when stopped."""

    def __init__(self, argv, log, env=None):
        self.log = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--arch", required=True, choices=sorted(TRIPLES))
    ap.add_argument("--cross-build", required=True)
    ap.add_argument("--sysroot", required=True)
    ap.add_argument("--emulator", required=True)
    ap.add_argument("--ops", type=int, default=24)
    args = ap.parse_args()
    triple = TRIPLES[args.arch]
    dll = "/usr/lib/%s/openmpi/lib/openmpi3/libompi_dbg_msgq.so" % triple
    if not os.path.exists(args.sysroot + dll):
        raise Failure("the sysroot has no %s" % dll)
    foreign = Artefacts(args.cross_build)
    program = foreign.require("pending")
    server_bin = foreign.require("server")
    types = os.path.join(args.cross_build, "share", "mqd-proxy", "ompi-types",
                         PROCESSORS[args.arch], "ompi_types.o")
    host = Artefacts(args.build)
    shim = host.require("shim")
    frontend = host.require("frontend")
    for f in (program, server_bin, types, shim, frontend):
        if not os.path.exists(f):
            raise Failure("missing %s (build first)" % f)
    qemu = [args.emulator, "-L", args.sysroot]

    work = tempfile.mkdtemp(prefix="mqd-e2e-%s-" % args.arch)
    server = target = None
    try:
        ready = os.path.join(work, "server.ready")
        server = Emulated(qemu + [server_bin, "--listen", "tcp:127.0.0.1:0", "--dll", dll,
                                  "--ready-file", ready, "--state-dir",
                                  os.path.join(work, "state"), "--log-level", "debug"],
                          os.path.join(work, "server.log"))
        wait_for(lambda: os.path.exists(ready) or server.proc.poll() is not None, 120,
                 "the %s server" % args.arch)
        if server.proc.poll() is not None:
            raise Failure("server exited:\n" + open(os.path.join(work, "server.log")).read())
        endpoint = open(ready).read().strip()

        port = free_port()
        env = dict(os.environ, OMPI_MCA_ess_singleton_isolated="1", OMPI_MCA_pml="ob1",
                   OMPI_MCA_btl="self", OMPI_MCA_btl_base_warn_component_unused="0")
        target = Emulated(qemu + ["-g", str(port), program, str(args.ops), work],
                          os.path.join(work, "target.log"), env)

        # gdb-multiarch starts the stopped program, lets it run to mqd_e2e_parked (everything
        # posted, manifest written), then dumps through the proxy. qemu's gdb stub may not
        # listen yet when gdb connects (and a probe would take its one connection): gdb retries
        # a refused connection, for the slack of a loaded machine rather than its 15 s.
        out = os.path.join(work, "dump")
        load = "mqd load --server %s --vendor-dll %s %s" % (endpoint, dll, shim)
        cmd = ["gdb-multiarch", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
               "-iex", "set tcp auto-retry on",
               "-iex", "set tcp connect-timeout %d" % LOADED_MACHINE_SLACK,
               "-iex", "set sysroot " + args.sysroot, "-iex", "set auto-load safe-path /",
               "-ex", "set architecture " + GDB_ARCH[args.arch],
               "-ex", "file " + program, "-ex", "target remote 127.0.0.1:%d" % port,
               "-ex", "break mqd_e2e_parked", "-ex", "continue",
               "-ex", "source " + frontend, "-ex", "mqd types " + types, "-ex", load,
               "-ex", "mqd dump --json --output %s.json" % out,
               "-ex", "mqd dump --json --output %s-repeat.json" % out,
               "-ex", "mqd dump --output %s.txt" % out,
               "-ex", "kill"]
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=600)
        log = result.stdout
        open(os.path.join(work, "gdb.log"), "w").write(log)
        errors = [l for l in log.splitlines() if l.startswith("mqd:") and "loaded" not in l
                  and "types" not in l]
        if result.returncode != 0 or errors or not os.path.exists(out + ".json"):
            raise Failure("gdb failed (%d):\n%s\ntarget:\n%s" % (
                result.returncode, log[-4000:], open(os.path.join(work, "target.log")).read()))
        if "Traceback" in log:
            raise Failure("the front end printed a Python traceback:\n" + log[-4000:])

        manifest = json.load(open(os.path.join(work, "rank-0.json")))
        dumps = json.load(open(out + ".json"))
        if not isinstance(dumps, list):
            dumps = [dumps]
        # Through qemu's gdb stub gdb does not see the emulated process's pid; the manifest's
        # pid is qemu's. The dump is the only inferior, so its pid must be what gdb reports.
        for d in dumps:
            if d.get("pid") is not None and d["pid"] != manifest["pid"]:
                print("note: gdb reports pid %s for the emulated process (qemu's is %s)"
                      % (d["pid"], manifest["pid"]))
                manifest["pid"] = d["pid"]
        problems = check_against_manifests(dumps, [manifest])
        repeat = json.load(open(out + "-repeat.json"))
        if repeat != json.load(open(out + ".json")):
            problems.append("the repeat dump differs from the first")
        posted = len(manifest["operations"])
        shown = sum(len(c["queues"][q]["operations"]) for d in dumps for c in d["communicators"]
                    for q in ("sends", "receives"))
        if shown != posted:
            problems.append("%d operations shown, %d posted" % (shown, posted))
        server_log = open(os.path.join(work, "server.log")).read()
        if "libompi_dbg_msgq.so" not in server_log:
            problems.append("the server log does not show the vendor DLL being loaded")
        if problems:
            raise Failure("%s dump does not match the program:\n  %s\n%s" % (
                args.arch, "\n  ".join(problems[:40]), open(out + ".txt").read()[:4000]))
        comms = sorted(c["name"] for d in dumps for c in d["communicators"])
        print("e2e %s: %d operations on %d communicators (%s) shown as posted, through the %s "
              "server and its own libompi_dbg_msgq.so" % (
                  args.arch, posted, len(comms), ", ".join(comms), args.arch))
        print(open(out + ".txt").read()[:3000])
    finally:
        if target:
            target.stop()
        if server:
            server.proc.send_signal(signal.SIGTERM)
            try:
                server.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            server.stop()
        if os.environ.get("MQD_E2E_KEEP"):
            print("kept", work)
        else:
            subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
