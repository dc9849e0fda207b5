#!/usr/bin/env python3
"""The front end reads each byte of the target once per command, and a later command uses what
an earlier one read only once gdbserver proved it unchanged.

A live Open MPI job (tests/e2e/pending.c); gdb reaches rank 0 through a real
`gdbserver --attach` on loopback behind an mqd-relay adding a 20 ms round trip (the debugger's
own remote link, as slow as a network's, where checking kept pages pays), loads Open MPI's DLL
natively (its `fetch_data` makes hundreds of small reads per dump) and, with gdb's remote
protocol traced, runs four `mqd dump` commands:

  1. the first, which also loads the DLL the target names (a command running another): no
     byte of target memory may be asked of gdbserver twice within the command
     (frontends/gdb/mqd_gdb/memory.py keeps the pages it read for the outermost command), and
     the dump shows what the rank posted;
  2. after gdb changed the target (MPI_COMM_WORLD's name, poked with tests/e2e/target_poke.py,
     with the count that makes the DLL read the names again): the dump shows the new name,
     proves with qCRC that some of what the first command kept is unchanged, and reads less
     than half the bytes of the first;
  3. after changes made outside gdb, through /proc/PID/mem, where gdb sees no event (as when
     another process writes a stopped rank's shared memory): the name again, and the buffer
     of the last receive the rank posted, among the pages of requests the DLL reads in a row.
     The dump shows both, and `mqd status` says a kept run was found changed: a kept page
     serves only once the stub's CRC proved it unchanged;
  4. with nothing changed: every run checked is found unchanged, and the dump reads nothing
     but kept pages again: the first (the read that points the stub at the process before
     the checks), and those of runs too short to be worth a check (one exchange either way).

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
from artefacts import Artefacts  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402
from remote_rank import packets_by_phase, run  # noqa: E402
from servers import Relay  # noqa: E402

POKE = os.path.join(HERE, "target_poke.py")
RTT_MS = 20  # the debugger link's round trip
PAGE = 4096  # what the front end reads for a small read
# MPI_COMM_WORLD's name, and the count Open MPI's DLL compares to decide whether to read the
# communicators again (it keeps them across updates otherwise).
COMMUNICATORS = "((opal_pointer_array_t *)&ompi_mpi_communicators)->number_free"
NAME = "((ompi_communicator_t *)&ompi_mpi_comm_world)->c_name[4]"
# The buffer of the last receive from a given rank that rank 0 posted (tests/e2e/pending.c
# posts those at every fourth index), in main's frame, and how it changes.
BUFFER = "((mca_pml_base_request_t *) requests[(n - 1) / 4 * 4])->req_addr"
BUFFER_CHANGE = 64
POKES = [(NAME, "'X'"),
         (COMMUNICATORS, COMMUNICATORS + " + 1")]

# Runs inside gdb, attached to rank 0 through gdbserver, with the front end loaded.
GDB_SCRIPT = r"""
import gdb, json, os, sys
cfg = json.loads(os.environ["MQD_MEMORY_TEST"])

def mark(what):
    sys.stderr.write("@@PHASE %s\n" % what)
    sys.stderr.flush()

def address(expression):
    return int(gdb.parse_and_eval("&(%s)" % expression))

def dump(n):
    mark("dump%d" % n)
    gdb.execute("mqd dump --json --output " + cfg["dumps"][n - 1])
    mark("between")
    with open(cfg["dumps"][n - 1] + ".status", "w") as f:
        f.write(gdb.execute("mqd status", to_string=True))

gdb.execute("mqd types", to_string=True)
# gdb 16 reads memory with binary 'x' packets when gdbserver offers them, and the trace of
# those holds raw bytes that gdb.execute(..., to_string=True) cannot decode: the test has gdb
# read in hex 'm' packets, the same exchanges (gdb 13 knows no such setting).
try:
    gdb.execute("set remote binary-upload-packet off")
except gdb.error:
    pass
gdb.execute("set debug remote 1")
# Loads the target's MPIR_dll_name first, with the same DLL (checked below): a command that
# runs another (mqd load) still keeps its pages to its end.
dump(1)
for lvalue, value in cfg["pokes"]:
    gdb.execute('poke "%s" "%s" %s' % (lvalue, value, cfg["journal"]))
dump(2)
# Changes behind gdb's back: a byte of the name with the count (which makes the DLL read the
# names again), and the buffer of a receive the rank posted (in the heap, among the requests
# the DLL reads page after page).
name, count = address(cfg["name"]), address(cfg["count"])
gdb.execute("frame function main", to_string=True)
buffer = address(cfg["buffer"])
mem = os.open("/proc/%d/mem" % gdb.selected_inferior().pid, os.O_RDWR)
was = {name: os.pread(mem, 1, name), count: os.pread(mem, 4, count),
       buffer: os.pread(mem, 8, buffer)}

def add(where, n):
    value = int.from_bytes(was[where], sys.byteorder) + n
    os.pwrite(mem, value.to_bytes(len(was[where]), sys.byteorder), where)
    return value

os.pwrite(mem, b"Y", name)
add(count, -1)  # back to what it was before the poke: changed again, and every communicator
with open(cfg["buffers"], "w") as f:
    json.dump([int.from_bytes(was[buffer], sys.byteorder), add(buffer, cfg["buffer_change"])],
              f)
dump(3)
dump(4)
gdb.execute("set debug remote 0")
for where, old in was.items():
    os.pwrite(mem, old, where)
os.close(mem)
gdb.execute("unpoke " + cfg["journal"])
"""

READ = re.compile(r"Sending packet: \$m([0-9a-f]+),([0-9a-f]+)#")
# What `mqd status` says of the kept pages the last command checked.
CHECKS = re.compile(r"read (\d+) pages before its checks, checked (\d+) runs with qCRC "
                    r"\((\d+) pages unchanged, (\d+) runs changed\), dropped (\d+) pages "
                    r"unchecked")


def reads_by_phase(log):
    """{phase: [(address, length) of every memory packet gdb sent]} from gdb's stderr."""
    return {phase: [(int(m.group(1), 16), int(m.group(2), 16))
                    for m in map(READ.search, sent) if m]
            for phase, sent in packets_by_phase(log).items()}


def checks_of(status):
    """(pages read before the checks, runs checked, pages proved unchanged, runs changed, pages
    dropped unchecked) from `mqd status` after a dump (zeros when it found no kept page)."""
    found = CHECKS.search(status)
    if not found:
        raise Failure("mqd status says nothing of kept pages:\n" + status)
    return tuple(int(g) for g in found.groups())


def read_twice(reads):
    """The ranges asked for more than once, as (address, length) of the later packet."""
    seen, twice = [], []
    for address, length in sorted(reads):
        if seen and address < seen[-1][0] + seen[-1][1]:
            twice.append((address, length))
        if not seen or address + length > seen[-1][0] + seen[-1][1]:
            seen.append((address, length))
    return twice


def buffers_of(dump):
    """The buffer of every receive in the dump."""
    return [op["buffer"] for c in dump.get("communicators", [])
            for op in c["queues"]["receives"]["operations"]]


def comm_names(dump):
    return sorted(c["name"] for c in dump.get("communicators", []))


def check(args, program, server, job, work):
    dumps = [os.path.join(work, "dump%d.json" % i) for i in (1, 2, 3, 4)]
    # The stub's qCRC cost pinned at gdbserver's (about 1.25 s per MiB measured here): whether
    # a run is worth a check never depends on how loaded the machine is (the exchange's time
    # has the relay's round trip as its floor).
    env = dict(os.environ, MQD_GDB_CRC_COST="1.25", MQD_MEMORY_TEST=json.dumps(
        {"dumps": dumps, "pokes": POKES, "name": NAME, "count": COMMUNICATORS, "buffer": BUFFER,
         "buffer_change": BUFFER_CHANGE, "buffers": os.path.join(work, "buffers.json"), "journal": os.path.join(work, "poke.journal")}))
    relay = Relay(Artefacts(os.path.abspath(args.build)).relay,
                  "tcp:127.0.0.1:%d" % server.port, RTT_MS, work, "debugger-link")
    try:
        log = run_gdb(relay, program, "memory.gdb.py", GDB_SCRIPT, [args.frontend, POKE], env,
                      work)
    finally:
        relay.stop()
    if not all(os.path.exists(d) for d in dumps):
        raise Failure("gdb wrote no dumps:\n%s" % log[-3000:])
    shown = [json.load(open(d)) for d in dumps]
    reads = reads_by_phase(log)
    problems = check_against_manifests(shown[:1], job.manifests[:1])
    status = open(dumps[0] + ".status").read()
    if os.path.realpath(args.ompi_dll) not in status and args.ompi_dll not in status:
        problems.append("the target's MPIR_dll_name is not %s: %s" % (args.ompi_dll,
                                                                     status[:500]))
    read_bytes, checks = {}, {}
    for n in (1, 2, 3, 4):
        phase = "dump%d" % n
        found = reads.get(phase, [])
        again, runs, proved, changed, dropped = checks[n] = checks_of(
            open(dumps[n - 1] + ".status").read())
        read_bytes[n] = sum(length for _, length in found)
        twice = read_twice(found)
        if twice:
            problems.append("%s asked gdbserver for %d ranges it had read in the same "
                            "command: %s" % (phase, len(twice), ", ".join(
                                "%#x+%d" % r for r in twice[:5])))
        if n in (2, 4) and proved == 0:  # dump3's checks may all find its change
            problems.append("%s proved nothing the earlier command read unchanged" % phase)
        print("%s: %d memory packets, %d bytes; kept pages: %d read first, %d runs checked "
              "with qCRC, %d pages unchanged, %d runs changed, %d pages dropped unchecked" % (
                  phase, len(found), read_bytes[n], again, runs, proved, changed, dropped))
    if read_bytes[1] == 0:
        problems.append("dump1 sent no memory packet: is the remote protocol traced?")
    if read_bytes[2] * 2 > read_bytes[1]:
        problems.append("dump2 read %d bytes, dump1 %d: the pages dump1 read, proved "
                        "unchanged, should serve most of dump2" % (read_bytes[2], read_bytes[1]))
    # Nothing changed: every run checked is unchanged, and the dump reads again only the first
    # kept page and those of runs too short to be worth a check.
    if checks[4][3] != 0 or read_bytes[4] > (checks[4][0] + checks[4][4]) * PAGE:
        problems.append("dump4, with nothing changed since dump3, found %d runs changed and "
                        "read %d bytes, with %d pages read before the checks and %d dropped" % (
                            checks[4][3], read_bytes[4], checks[4][0], checks[4][4]))
    old, new = json.load(open(os.path.join(work, "buffers.json")))
    before = (buffers_of(shown[0]).count(old), buffers_of(shown[0]).count(new))
    for n in (2, 3, 4):
        buffers = buffers_of(shown[n - 1])
        expected = before if n < 3 else (before[0] - 1, before[1] + 1)
        if (buffers.count(old), buffers.count(new)) != expected:
            problems.append("dump%d shows %d receives into %#x and %d into %#x, not %d and %d"
                            % (n, buffers.count(old), old, buffers.count(new), new,
                               expected[0], expected[1]))
    if checks[3][3] == 0:
        problems.append("dump3 found no kept run changed: the request changed behind gdb's "
                        "back should have been in a checked one")
    names = [comm_names(d) for d in shown]
    for n, expected in ((1, "MPI_COMM_WORLD"), (2, "MPI_XOMM_WORLD"), (3, "MPI_YOMM_WORLD"),
                        (4, "MPI_YOMM_WORLD")):
        others = {"MPI_COMM_WORLD", "MPI_XOMM_WORLD", "MPI_YOMM_WORLD"} - {expected}
        if expected not in names[n - 1] or others & set(names[n - 1]):
            problems.append("dump%d should show %s: it shows %s" % (n, expected,
                                                                   names[n - 1]))
    return verdict(problems, work, "each byte read once per command, and a change "
                   "between commands seen by the next, whether gdb made it or not") == 0


if __name__ == "__main__":
    sys.exit(run("mqd-e2e-memory-", check))
