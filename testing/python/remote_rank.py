"""A test of the gdb front end over gdb's remote protocol: rank 0 of a live 4-rank Open MPI job
(tests/e2e/pending.c) under a real `gdbserver --attach` on loopback, the debugger's own remote
link. run() parses the options such a test takes, starts the job and gdbserver, runs the test's
check and tears everything down (the scratch directory is kept when the check fails);
packets_by_phase() reads the packets gdb sent, from a script that marks its phases.

    import remote_rank
    def check(args, program, server, job, work):   # True when the test passed
        log = gdbserver.run_gdb(server, program, ...)
        ... remote_rank.packets_by_phase(log) ...
    sys.exit(remote_rank.run("mqd-e2e-NAME-", check))

Options: --build DIR --ompi-dll PATH --frontend PATH [--ops 10] [--gdbserver PATH]
"""
import argparse
import os
import tempfile

from artefacts import Artefacts
from gdbserver import GdbServer
from mpi_job import Job
from scratch import tear_down

# How a gdb script marks the start of a phase on stderr, followed by the phase's name; gdb's
# remote-protocol trace (`set debug remote 1`) goes there too.
PHASE_MARK = "@@PHASE "


def run(prefix, check):
    """Runs `check(args, program, server, job, work)` against rank 0 behind gdbserver; returns
    the exit status (0 when it returned True)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--gdbserver", default="gdbserver")
    args = ap.parse_args()
    program = Artefacts(os.path.abspath(args.build)).require("pending")
    work = tempfile.mkdtemp(prefix=prefix)
    job = server = None
    passed = False
    try:
        job = Job(program, 4, args.ops, work)
        server = GdbServer(args.gdbserver, work, attach_pid=job.pids[0])
        passed = check(args, program, server, job, work)
        return 0 if passed else 1
    finally:
        tear_down(work, passed, server, job)


def packets_by_phase(log):
    """{phase: [every packet gdb sent in it, as traced]} from gdb's stderr with the script's
    phase marks."""
    packets, phase = {}, None
    for line in log.splitlines():
        if line.startswith(PHASE_MARK):
            phase = line.split()[1]
            packets[phase] = []
        elif phase and "Sending packet:" in line:
            packets[phase].append(line)
    return packets
