#!/usr/bin/env python3
"""A whole job attached by the front end from its launcher's process table.

A live Open MPI job of RANKS ranks (tests/e2e/pending.c, N pending operations each) is
attached by gdb with `mqd attach --launcher <mpirun's pid>`: the front end reads mpirun's
MPIR process table (Open MPI 4.1), or asks its PMIx server for the job's (Open MPI 5, which has
no MPIR table: frontends/pmix/), and attaches every rank, one inferior each, in MPI_COMM_WORLD
rank order.
Then `mqd dump --all`, natively and through the proxy in every cache mode
(testing/python/dump_matrix.py), and natively once more with every rank reached through a
real gdbserver --multi on loopback (`--gdbserver HOST=127.0.0.1:PORT`: the route a rank on
another host takes), with gdb's remote-protocol trace on (`set debug remote 1`, logged to a
file), as a user chasing a slow link has it: the front end must not take the binary packets
gdb then captures with a command's output for its own failure.

What attaching costs on that link: gdb re-sets its breakpoints in every inferior at each
attach, and the front end has it read their code from the files meanwhile
(frontends/gdb/mqd_gdb/execute.py, CodeFromFiles). With the rank's files found on this host
(`set sysroot /`, as the benches have it) and gdb's log of the link (`set remotelogfile`), the
last rank's attach must cost no more packets than the second's (it cost about 25 more per rank
attached before it), and the user's own `trust-readonly-sections` must hold again afterwards.
Once more with `mqd attach --without-thread-db`: each attach must cost fewer than 60 packets
(gdbserver asks for no libthread_db symbols, and gdb keeps the pages it reads while a rank
attaches: execute.PagesKept), and `remote symbol-lookup-packet`, the memory regions and the
dcache line size must be the user's again (a region of the user's own stays as it was). The
dump that follows each may fetch no rank's registers and no thread list, and send no
`qSymbol`: the front end switches through the thread gdb selected at each attach, reads no
rank's frames, read each rank's anchors (frontends/gdb/mqd_gdb/lookup.py) while gdb held its
registers, and adds the debug types offering gdbserver no look-ups. Once more with a
`gdbserver --attach` per rank (--gdbserver named once per rank for this host, in rank order):
rank i must be held through the i-th, and neither of two dumps, the native one, may send an
`Hg` on any connection: gdb's attach left each connection pointed at the thread the front end
reads the rank through (it asked no thread whether a branch trace was to be reopened:
execute.NoTraceReopened), and the front end reads through that thread (gdb 16 reads an
Inferior.read_memory as of the whole process: memory._direct).

Every dump must be byte-identical to the native one (JSON and text), list the ranks in rank
order with the pid, rank and host the launcher gave them, and show what every rank posted.

The front end shares one file's minimal symbols among the ranks that loaded it, moved to where
each loaded it, and a type among the ranks that search the same files
(frontends/gdb/mqd_gdb/lookup.py): in every rank, the address it gives for a symbol of the
executable, of libmpi and of the vDSO must be gdb's own (`&NAME` with the rank selected); and
once `mqd types` loaded Open MPI's debug types into one rank, that rank must find
ompi_communicator_t as gdb does, and another, which did not load them, still not.

usage: e2e_attach.py --build DIR --ompi-dll PATH --frontend PATH [--ranks 16] [--ops 10]
                     [--gdbserver PATH] [--shim PATH]
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from dump_matrix import DumpMatrix, summary  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from gdb_driver import gdb_command, gdb_dump  # noqa: E402
from gdbserver import GdbServer  # noqa: E402
from mpi_job import Job, check_against_manifests  # noqa: E402
from scratch import tear_down  # noqa: E402


# Symbols of the executable (with debug information, and without: _start), of libmpi and of the
# vDSO.
SHARED_SYMBOLS = ("mqd_e2e_parked", "_start", "ompi_mpi_comm_world", "__vdso_clock_gettime")

# Runs in gdb once the job is attached: every rank's answer by the front end and by gdb.
SYMBOLS_SCRIPT = r"""
import gdb, json
from mqd_gdb import lookup
TYPE = "ompi_communicator_t"
from mqd_gdb.inferiors import SelectedInferior
found = []
for inf in sorted(gdb.inferiors(), key=lambda i: i.num):
    if inf.pid == 0:
        continue
    with SelectedInferior(inf.num):
        for name in %r:
            ours = lookup.of(inf.num).address(name)
            try:
                theirs = int(gdb.parse_and_eval("(unsigned long long)&%%s" %% name))
            except gdb.error:
                theirs = None
            found.append([inf.num, name, ours, theirs])
# One rank loads the debug types, the next does not: only the first may find the type now.
first, second = [i.num for i in sorted(gdb.inferiors(), key=lambda i: i.num) if i.pid][:2]
size = lambda t: None if t is None else t.sizeof
types = {"before": [size(lookup.of(n).type(TYPE)) for n in (first, second)]}
with SelectedInferior(first):
    gdb.execute("mqd types", to_string=True)
    types["gdb"] = size(gdb.lookup_type(TYPE).strip_typedefs())
types["after"] = [size(lookup.of(n).type(TYPE)) for n in (first, second)]
with open(%r, "w") as f:
    json.dump({"symbols": found, "types": types}, f)
"""


def check_shared_symbols(pids, frontend, attach, work):
    """Every rank's front-end address of SHARED_SYMBOLS against gdb's own."""
    out = os.path.join(work, "symbols.json")
    script = os.path.join(work, "symbols.gdb.py")
    with open(script, "w") as f:
        f.write(SYMBOLS_SCRIPT % (SHARED_SYMBOLS, out))
    result = subprocess.run(gdb_command(pids, frontend, "mqd status", attach) +
                            ["-ex", "source " + script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=600)
    if result.returncode != 0 or not os.path.exists(out) or "Traceback" in result.stdout:
        return ["the symbol check failed (%d):\n%s" % (result.returncode, result.stdout[-3000:])]
    answers = json.load(open(out))
    found, types = answers["symbols"], answers["types"]
    problems = ["inferior %d: the front end says %s is at %s, gdb %s" % (n, name, ours, theirs)
                for n, name, ours, theirs in found if ours != theirs or ours is None]
    if len(found) != len(pids) * len(SHARED_SYMBOLS):
        problems.append("%d answers for %d ranks" % (len(found), len(pids)))
    expected = {"before": [None, None], "gdb": types["gdb"], "after": [types["gdb"], None]}
    if not types["gdb"] or types != expected:
        problems.append("ompi_communicator_t's size in two ranks, before and after the first "
                        "loaded the debug types: %s, expected %s" % (types, expected))
    return problems


# `mqd attach --without-thread-db` spares gdbserver's questions for libthread_db's symbols (81
# packets of an attach of an Open MPI rank, 155 in all), and gdb keeps the pages it read while
# it attaches (32 packets of the 74 left become 2): an attach costs fewer than this.
WITHOUT_THREAD_DB_MAX = 60


def check_attach_cost(pids, frontend, attach, ranks, work, native_json, thread_db=True):
    """gdb attaches the job through gdbserver (`attach`) with its log of the link on: the
    packets gdb sent from one rank's vAttach to the next (a line "w $PACKET" per packet) may
    not grow with the ranks attached before, give or take 10 percent (the thread list gdb
    fetches grows with them, 4 KiB a packet); trust-readonly-sections is off (gdb's default)
    before and after. Without `thread_db`, attached with --without-thread-db: each attach
    costs fewer than WITHOUT_THREAD_DB_MAX packets (gdb keeps the pages it read while it
    attaches, execute.PagesKept), `remote symbol-lookup-packet` is auto (gdb's default) after,
    and so are the memory regions (none, the target's), with the user's dcache line size
    (128 here). With `thread_db` the user has a memory region of their own over all memory,
    which must be there after, alone and as it was. The dump that follows must be
    `native_json`."""
    name = "attach" if thread_db else "attach-without-thread-db"
    log = os.path.join(work, name + ".link.log")
    show = ("python print('mqd-trust: %s, mqd-symbols: %s, mqd-line: %s' % (gdb.parameter("
            "'trust-readonly-sections'), gdb.parameter('remote symbol-lookup-packet'), "
            "gdb.parameter('dcache line-size')))")
    user = ["mem 0 0 rw"] if thread_db else ["set dcache line-size 128"]
    out = os.path.join(work, name + ".dump.json")
    result = subprocess.run(gdb_command(pids, frontend, "mqd load",
                                        attach if thread_db else attach + " --without-thread-db",
                                        before=["set sysroot /", "set remotelogfile " + log]
                                        + user)
                            + ["-ex", show, "-ex", "info mem",
                               "-ex", "mqd dump --all --json --output " + out],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=600)
    if result.returncode != 0 or not os.path.exists(log) or "Traceback" in result.stdout:
        return ["the attach through gdbserver failed (%d):\n%s"
                % (result.returncode, result.stdout[-3000:])]
    problems = []
    line = 64 if thread_db else 128
    if "mqd-trust: False, mqd-symbols: None, mqd-line: %d" % line not in result.stdout:
        problems.append("trust-readonly-sections, remote symbol-lookup-packet or dcache "
                        "line-size after %s is not the user's (off, auto, %d):\n%s"
                        % (name, line, result.stdout[-1000:]))
    regions = re.findall(r"^\d+\s+y\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(.*?)\s*$",
                         result.stdout, re.M)
    mode = "user-defined" if thread_db else "provided by the target"
    wanted = [("0x0000000000000000", "0x10000000000000000", "rw nocache")] if thread_db else []
    if regions != wanted or "Using memory regions %s" % mode not in result.stdout and \
            "Using %s memory regions" % mode not in result.stdout:
        problems.append("the memory regions after %s are %s (%s), not the user's %s:\n%s"
                        % (name, regions, mode, wanted, result.stdout[-1000:]))
    if open(out).read() != native_json:
        problems.append("the dump after %s differs from the native one: see %s" % (name, out))
    sent = [line for line in open(log, "rb").read().decode("latin-1").split("\n")
            if line.startswith(("w $", "w +$"))]
    starts = [i for i, line in enumerate(sent) if "$vAttach;" in line]
    if len(starts) != ranks:
        return problems + ["%d attaches in gdb's log of the link for %d ranks: see %s"
                           % (len(starts), ranks, log)]
    costs = [b - a for a, b in zip(starts, starts[1:])]
    lines = open(log, "rb").read().decode("latin-1").split("\n")
    dump = next(i for i, line in enumerate(lines) if line.startswith("c mqd dump"))
    dumped = [line for line in lines[dump:] if line.startswith(("w $", "w +$"))]
    offers = sum(1 for line in dumped if line.startswith("w $qSymbol"))
    if offers:
        problems.append("the dump after %s sent %d qSymbol packets (none: the debug types' "
                        "add-symbol-file offers gdbserver no look-ups): see %s"
                        % (name, offers, log))
    registers = sum(1 for line in dumped if line.startswith("w $g#"))
    lists = sum(1 for line in dumped if line.startswith("w $qXfer:threads:read"))
    print("%-9s the dump of %d ranks attached by mqd attach: %d packets, %d for registers, %d "
          "for thread lists" % ("gdbserver", ranks, len(dumped), registers, lists))
    # The front end switches through the thread gdb selected at the attach, reads no frame of
    # a rank, and read the ranks' anchors while gdb held their registers (lookup.py): gdb
    # fetches no rank's registers (one fetch at most: the user's own thread) and no thread list.
    if registers > 1 or lists > 0:
        problems.append("the dump fetched registers %d times and the thread list %d times "
                        "through gdbserver (at most once, and never): see %s"
                        % (registers, lists, log))
    print("%-9s packets from each rank's attach to the next's (%s), ranks 0 to %d: %s"
          % ("gdbserver", name, ranks - 2, " ".join(map(str, costs))))
    if not thread_db and max(costs) >= WITHOUT_THREAD_DB_MAX:
        problems.append("an attach --without-thread-db cost %d packets to gdbserver (fewer than "
                        "%d): see %s" % (max(costs), WITHOUT_THREAD_DB_MAX, log))
    if ranks >= 3 and costs[-1] > costs[1] + max(10, costs[1] // 10):
        problems.append("the attach of rank %d cost %d packets to gdbserver, rank 1's %d: an "
                        "attach costs more with every rank attached before it (%s)"
                        % (ranks - 2, costs[-1], costs[1], costs))
    return problems


def check_gdbserver_per_rank(pids, frontend, launcher, host, gdbserver, ranks, work,
                             native_json):
    """`mqd attach` with a `gdbserver --attach` per rank, all named for this host in rank
    order (--gdbserver given once per rank): rank i must be held through the i-th (its
    inferior's connection names that gdbserver's port), two dumps must be `native_json`, and
    gdb, with the remote protocol traced for every connection, may point no connection at
    another thread (`Hg`) in either: each rank has its own connection, which the attach
    leaves pointed at the thread the front end reads it through."""
    servers = [GdbServer(gdbserver, work, attach_pid=pid, name="gdbserver-%d" % i)
               for i, pid in enumerate(pids)]
    try:
        trace = os.path.join(work, "per-rank.remote.log")
        out = os.path.join(work, "per-rank.dump.json")
        attach = "mqd attach --launcher %d %s" % (launcher, " ".join(
            "--gdbserver %s=127.0.0.1:%d" % (host, s.port) for s in servers))
        show = ("python print('mqd-connections: %s' % ' '.join('%d:%s' % (i.num, "
                "i.connection.details) for i in gdb.inferiors() if i.pid))")
        result = subprocess.run(gdb_command(pids, frontend, "mqd load", attach,
                                            before=["set sysroot /"])
                                + ["-ex", show, "-ex", "set logging file " + trace,
                                   "-ex", "set logging debugredirect on",
                                   "-ex", "set logging enabled on", "-ex", "set debug remote 1",
                                   "-ex", "mqd dump --all --json --output " + out,
                                   "-ex", "echo mqd-second-dump\\n",
                                   "-ex", "mqd dump --all --json --output " + out + ".2"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", timeout=600)
    finally:
        for s in servers:
            s.stop()
    if result.returncode != 0 or not os.path.exists(out) or "Traceback" in result.stdout:
        return ["the attach through a gdbserver per rank failed (%d):\n%s"
                % (result.returncode, result.stdout[-3000:])]
    problems = []
    for path in (out, out + ".2"):
        if open(path).read() != native_json:
            problems.append("a dump through a gdbserver per rank differs from the native one: "
                            "see %s" % path)
    shown = re.search(r"^mqd-connections: (.*)$", result.stdout, re.M)
    ports = [c.split(":")[-1] for c in shown.group(1).split()] if shown else []
    if ports != [str(s.port) for s in servers]:
        problems.append("ranks 0 to %d held through the gdbservers at ports %s, not %s"
                        % (ranks - 1, ports, [s.port for s in servers]))
    text = open(trace, errors="replace").read()
    if "mqd-second-dump" not in text:
        return problems + ["no second dump in gdb's trace: see " + trace]
    counts = []
    for part in text.split("mqd-second-dump", 1):
        sent = [line for line in part.split("\n") if "[remote] Sending packet: " in line]
        counts.append((len(sent), sum(1 for line in sent if "Sending packet: $Hg" in line)))
    print("%-9s two dumps of %d ranks through a gdbserver --attach each: %d and %d packets, "
          "%d and %d Hg" % ("gdbserver", ranks, counts[0][0], counts[1][0], counts[0][1],
                            counts[1][1]))
    for which, (sent, pointed) in zip(("first", "second"), counts):
        if not sent or pointed:
            problems.append("the %s dump through a gdbserver per rank sent %d packets, %d of "
                            "them Hg (none: every rank has its own connection): see %s"
                            % (which, sent, pointed, trace))
    return problems


def check_labels(dumps, manifests, host):
    """Every rank in rank order, in increasing inferiors, with the launcher's pid and host."""
    problems = []
    if [d.get("rank") for d in dumps] != [m["rank"] for m in manifests]:
        problems.append("ranks in the dump's order: %s" % [d.get("rank") for d in dumps])
    inferiors = [d["inferior"] for d in dumps]
    if inferiors != sorted(inferiors):
        problems.append("inferiors not in rank order: %s" % inferiors)
    for d, m in zip(dumps, manifests):
        if (d.get("pid"), d.get("host")) != (m["pid"], host):
            problems.append("rank %d: pid %s on %s, the launcher says %d on %s"
                            % (m["rank"], d.get("pid"), d.get("host"), m["pid"], host))
    return problems


def check_no_table(frontend, work):
    """`mqd attach --launcher` of a process that is no launcher (neither an MPIR table nor a
    PMIx server): one sentence that says both, at once, and nothing attached."""
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        out = subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                              "-ex", "source " + frontend,
                              "-ex", "mqd attach --launcher %d" % bystander.pid,
                              "-ex", "info inferiors"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", timeout=120).stdout
    finally:
        bystander.kill()
        bystander.wait()
    with open(os.path.join(work, "no-table.log"), "w") as f:
        f.write(out)
    said = [line for line in out.splitlines() if line.startswith("mqd:")]
    wanted = ("process %d publishes no MPIR process table" % bystander.pid,
              "and no PMIx process table", "runs no PMIx server a tool can attach to")
    if len(said) != 1 or not all(w in said[0] for w in wanted):
        return ["mqd attach --launcher of a process that is no launcher said %s, not one "
                "sentence with %s: see no-table.log" % (said, wanted)]
    if "Traceback" in out or str(bystander.pid) in out.split(said[0])[-1]:
        return ["mqd attach --launcher of a process that is no launcher left it attached or "
                "failed in Python: see no-table.log"]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--ops", type=int, default=10)
    ap.add_argument("--gdbserver", default="gdbserver")
    ap.add_argument("--shim", help="the libmqdproxy.so gdb loads (default: BUILD's)")
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    shim = args.shim or built.require("shim")
    host = socket.gethostname()

    work = tempfile.mkdtemp(prefix="mqd-e2e-attach-")
    job = matrix = server = None
    passed = False
    try:
        job = Job(built.require("pending"), args.ranks, args.ops, work)
        attach = "mqd attach --launcher %d" % job.proc.pid
        matrix = DumpMatrix(built.require("server"), args.ompi_dll, shim, work,
                            built.require("relay"))
        what = "dump of %d ranks attached from mpirun's table" % args.ranks
        outputs = matrix.dump(job.pids, args.frontend, what, attach)
        problems = matrix.differences(outputs)

        server = GdbServer(args.gdbserver, work)
        prefix = os.path.join(work, "gdbserver")
        trace = prefix + ".remote.log"
        seconds = gdb_dump(job.pids, args.frontend, "mqd load", prefix, {},
                           "%s --gdbserver %s=127.0.0.1:%d" % (attach, host, server.port),
                           before=["set logging file " + trace, "set logging debugredirect on",
                                   "set logging enabled on", "set debug remote 1"])
        if not os.path.exists(trace) or "[remote] Packet received" not in open(
                trace, errors="replace").read():
            problems.append("gdb's remote-protocol trace was not on: see " + trace)
        print("%-9s %s, every rank through gdbserver: %.2f s" % ("gdbserver", what, seconds))
        for ext, i in ((".json", 0), (".txt", 1)):
            if open(prefix + ext).read() != outputs["native"][i]:
                problems.append("the dump through gdbserver (%s) differs from the native one: "
                                "see %s" % (ext, work))

        for thread_db in (True, False):
            problems += check_attach_cost(job.pids, args.frontend,
                                          "%s --gdbserver %s=127.0.0.1:%d"
                                          % (attach, host, server.port), args.ranks, work,
                                          outputs["native"][0], thread_db)
        problems += check_gdbserver_per_rank(job.pids, args.frontend, job.proc.pid, host,
                                             args.gdbserver, args.ranks, work,
                                             outputs["native"][0])
        problems += check_shared_symbols(job.pids, args.frontend, attach, work)
        problems += check_no_table(args.frontend, work)
        dumps = json.loads(outputs["native"][0])
        problems += check_labels(dumps, job.manifests, host)
        problems += check_against_manifests(dumps, job.manifests)
        print(summary(dumps))
        status = verdict(problems, work,
                         "%d ranks attached from the launcher's table, in rank order with its "
                         "pids and host, through gdbserver at a cost that does not grow with "
                         "the ranks, each rank's symbols where gdb has them; native, proxied (unix, TCP; epoch, call, off; node memory) and "
                         "through gdbserver dumps identical and as posted" % args.ranks)
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, server, matrix, job)


if __name__ == "__main__":
    sys.exit(main())
