#!/usr/bin/env python3
"""The front end reads each byte of the target once per command, and nothing it read serves the
next command.

A live Open MPI job (tests/e2e/pending.c); gdb reaches rank 0 through a real
`gdbserver --attach` on loopback, the debugger's own remote link, loads Open MPI's DLL natively
(its `fetch_data` makes hundreds of small reads per dump) and, with gdb's remote protocol
traced:

  - `mqd dump`, which first loads the DLL the target names (a command running another): no
    byte of target memory may be asked of gdbserver twice within the command
    (frontends/gdb/mqd_gdb/memory.py keeps the pages it read for the outermost command), and
    the dump shows what the rank posted;
  - a change gdb makes to the target between two commands (MPI_COMM_WORLD's name, poked with
    tests/e2e/target_poke.py, with the count that makes the DLL read the names again) shows
    in the next `mqd dump`: nothing read in one command serves the next.

The memory packets of each dump are printed: gdbserver carries up to about 8 KiB per packet,
so each is an exchange on a remote link.

usage: e2e_memory.py --build DIR --ompi-dll PATH --frontend PATH [--ops 10]
                     [--gdbserver PATH]
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
from failure import Failure, verdict  # noqa: E402
from gdbserver import run_gdb  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402
from remote_rank import packets_by_phase, run  # noqa: E402

POKE = os.path.join(HERE, "target_poke.py")
# MPI_COMM_WORLD's name, and the count Open MPI's DLL compares to decide whether to read the
# communicators again (it keeps them across updates otherwise).
COMMUNICATORS = "((opal_pointer_array_t *)&ompi_mpi_communicators)->number_free"
POKES = [("((ompi_communicator_t *)&ompi_mpi_comm_world)->c_name[4]", "'X'"),
         (COMMUNICATORS, COMMUNICATORS + " + 1")]

# Runs inside gdb, attached to rank 0 through gdbserver, with the front end loaded.
GDB_SCRIPT = r"""
import gdb, json, os, sys
cfg = json.loads(os.environ["MQD_MEMORY_TEST"])

def mark(what):
    sys.stderr.write("@@PHASE %s\n" % what)
    sys.stderr.flush()

gdb.execute("mqd types", to_string=True)
gdb.execute("set debug remote 1")
mark("dump1")
# Loads the target's MPIR_dll_name first, with the same DLL (checked below): a command that
# runs another (mqd load) still keeps its pages to its end.
gdb.execute("mqd dump --json --output " + cfg["dumps"][0])
with open(cfg["loaded"], "w") as f:
    f.write(gdb.execute("mqd status", to_string=True))
mark("poke")
for lvalue, value in cfg["pokes"]:
    gdb.execute('poke "%s" "%s" %s' % (lvalue, value, cfg["journal"]))
mark("dump2")
gdb.execute("mqd dump --json --output " + cfg["dumps"][1])
mark("end")
gdb.execute("set debug remote 0")
gdb.execute("unpoke " + cfg["journal"])
"""

READ = re.compile(r"Sending packet: \$m([0-9a-f]+),([0-9a-f]+)#")


def reads_by_phase(log):
    """{phase: [(address, length) of every memory packet gdb sent]} from gdb's stderr."""
    return {phase: [(int(m.group(1), 16), int(m.group(2), 16))
                    for m in map(READ.search, sent) if m]
            for phase, sent in packets_by_phase(log).items()}


def read_twice(reads):
    """The ranges asked for more than once, as (address, length) of the later packet."""
    seen, twice = [], []
    for address, length in sorted(reads):
        if seen and address < seen[-1][0] + seen[-1][1]:
            twice.append((address, length))
        if not seen or address + length > seen[-1][0] + seen[-1][1]:
            seen.append((address, length))
    return twice


def comm_names(dump):
    return sorted(c["name"] for c in dump.get("communicators", []))


def check(args, program, server, job, work):
    dumps = [os.path.join(work, "dump%d.json" % i) for i in (1, 2)]
    loaded = os.path.join(work, "status.txt")
    env = dict(os.environ, MQD_MEMORY_TEST=json.dumps(
        {"loaded": loaded, "dumps": dumps, "pokes": POKES,
         "journal": os.path.join(work, "poke.journal")}))
    log = run_gdb(server, program, "memory.gdb.py", GDB_SCRIPT, [args.frontend, POKE], env,
                  work)
    if not all(os.path.exists(d) for d in dumps):
        raise Failure("gdb wrote no dumps:\n%s" % log[-3000:])
    first, second = (json.load(open(d)) for d in dumps)
    reads = reads_by_phase(log)
    problems = check_against_manifests([first], job.manifests[:1])
    status = open(loaded).read()
    if os.path.realpath(args.ompi_dll) not in status and args.ompi_dll not in status:
        problems.append("the target's MPIR_dll_name is not %s: %s" % (args.ompi_dll,
                                                                     status[:500]))
    for phase in ("dump1", "dump2"):
        found = reads.get(phase, [])
        if not found:
            problems.append("%s sent no memory packet: is the remote protocol traced?"
                            % phase)
        twice = read_twice(found)
        if twice:
            problems.append("%s asked gdbserver for %d ranges it had read in the same "
                            "command: %s" % (phase, len(twice), ", ".join(
                                "%#x+%d" % r for r in twice[:5])))
        print("%s: %d memory packets, %d bytes" % (phase, len(found),
                                                   sum(n for _, n in found)))
    before, after = comm_names(first), comm_names(second)
    if "MPI_COMM_WORLD" not in before:
        problems.append("the first dump shows no MPI_COMM_WORLD: %s" % before)
    if "MPI_XOMM_WORLD" not in after or "MPI_COMM_WORLD" in after:
        problems.append("after MPI_COMM_WORLD's name was changed between the commands, "
                        "the next dump shows %s" % after)
    return verdict(problems, work, "each byte read once per command, and a change "
                   "between commands seen by the next") == 0


if __name__ == "__main__":
    sys.exit(run("mqd-e2e-memory-", check))
