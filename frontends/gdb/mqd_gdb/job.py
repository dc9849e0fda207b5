"""The whole job, attached by `mqd attach`: every rank one inferior, in MPI_COMM_WORLD rank
order, each labelled with its rank and host.

  read_proctable(pid)     what the launcher says: its MPIR process table (Open MPI 4's
                          mpirun, MPICH's Hydra mpiexec, Slurm's srun), read by attaching to it
                          and detaching again; for a launcher without one (Open MPI 5's
                          mpirun, PRRTE's prterun), its PMIx server's process table, asked by
                          the PMIx tool mqd-pmix-procs (frontends/pmix/)
  gdbservers_for(launcher, ranks, servers)
                          the gdbservers named, and for the ranks of a Slurm job on hosts
                          none is named for, one gdbserver --attach each, started on the node
                          through Slurm (slurm.py)
  attach(ranks, servers, started)
                          one inferior per rank: attached locally, or through a gdbserver
                          named for the rank's host (--multi; or --attach, holding the rank;
                          the host's ranks in turn when it has several); a local process an
                          inferior holds already is kept there. If it fails part way, the
                          gdbservers of `started` (those gdbservers_for started) it did not
                          connect to are ended (slurm.release_gdbservers): none keeps its rank
  label(num)              the Rank behind inferior `num`, if `mqd attach` made it

The MPIR process table (the MPIR process acquisition interface that launchers publish for
debuggers) is an array of MPIR_PROCDESC {char *host_name; char *executable_name; int pid;},
MPIR_proctable_size entries long, entry i being MPI_COMM_WORLD rank i. Debian's launchers
carry no debug types for it, so it is read as raw memory, laid out by the launcher's own
pointer size and byte order.

Open MPI 5 has no MPIR table: its launcher runs a PMIx server, which answers a PMIx tool with
the job's process table (rank, host, pid, executable). The helper does that from this host, as
the launcher's user, within PMIX_TIMEOUT seconds, and prints one line per rank.
"""
from __future__ import annotations

import os
import struct
import subprocess
from typing import Dict, List, Optional, Sequence

import gdb

from . import lookup, memory, slurm
from .analysis import FRONTEND_DIR
from .errors import MqdError
from .hosts import is_this_host
from .execute import PagesKept, Setting, quietly
from .inferiors import (SelectedInferior, big_endian, find as find_inferior, is_local,
                        remember_thread)

# A launcher's table larger than this is taken for garbage, not a job.
MAX_RANKS = 1 << 20

# The PMIx helper, staged and installed three levels above the front end's directory
# (frontends/CMakeLists.txt), and how long its launcher's server may take to answer.
PMIX_PROCS = os.path.normpath(os.path.join(FRONTEND_DIR, "..", "..", "..", "libexec", "mqd-proxy",
                                           "mqd-pmix-procs"))
PMIX_TIMEOUT = 30


class Rank:
    """One rank as the launcher described it."""

    def __init__(self, rank: Optional[int], host: Optional[str], executable: Optional[str],
                 pid: int) -> None:
        self.rank, self.host, self.executable, self.pid = rank, host, executable, pid


# inferior number -> Rank, for the inferiors `mqd attach` made from a launcher's table
_labels: Dict[int, Rank] = {}


def label(num: int) -> Optional[Rank]:
    """The Rank `mqd attach` put in inferior `num` (None for any other inferior)."""
    rank = _labels.get(num)
    if rank is None:
        return None
    try:  # the label holds while the inferior holds that process
        return rank if find_inferior(num).pid == rank.pid else None
    except MqdError:  # the inferior is gone
        return None


def _new_inferior(connected: bool) -> int:
    """A new inferior, on the current inferior's connection if `connected`, else on none; its
    number."""
    before = {i.num for i in gdb.inferiors()}
    quietly("add-inferior" if connected else "add-inferior -no-connection")
    return max({i.num for i in gdb.inferiors()} - before)


def Quiet() -> Setting:
    """For a `with` block: gdb keeps the notifications it would print for the user's own
    attach, detach and inferior switches ("[Switching to inferior N ...]", the frame a process
    stopped in) to itself; the command prints one summary instead."""
    return Setting("suppress-cli-notifications", True)


def _byte_order() -> str:
    return ">" if big_endian() else "<"


def read_proctable(pid: int) -> List[Rank]:
    """The ranks of the job launched by process `pid`, in rank order: from its MPIR process
    table, or, when it has none, from its PMIx server. Attaches to the launcher in an inferior
    of its own, reads, detaches and removes that inferior. MqdError when `pid` cannot be
    attached or offers neither."""
    previous = gdb.selected_inferior().num
    num = _new_inferior(connected=False)
    try:
        with SelectedInferior(num):
            try:
                quietly("attach %d" % pid)
            except gdb.error as e:
                raise MqdError("cannot attach to the launcher %d: %s" % (pid, e))
            try:
                ranks = _read_table(pid)
            finally:
                quietly("detach")
    finally:
        quietly("inferior %d" % previous)
        quietly("remove-inferiors %d" % num)
    return ranks if ranks is not None else _read_pmix(pid)


def _read_pmix(pid: int) -> List[Rank]:
    """The ranks the PMIx server of launcher `pid` lists (module docstring)."""
    neither = ("process %d publishes no MPIR process table (no MPIR_proctable), and no PMIx "
               "process table: %%s. Attach to the job's launcher (Open MPI's mpirun, MPICH's "
               "mpiexec, Slurm's srun), or name the ranks' pids" % pid)
    if not os.access(PMIX_PROCS, os.X_OK):
        raise MqdError(neither % ("the PMIx helper %s is not installed" % PMIX_PROCS))
    try:
        run = subprocess.run([PMIX_PROCS, str(pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace",
                             timeout=PMIX_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise MqdError(neither % ("its PMIx server did not answer in %d s" % PMIX_TIMEOUT))
    except OSError as e:
        raise MqdError(neither % ("cannot run %s: %s" % (PMIX_PROCS, e)))
    if run.returncode != 0:
        said = run.stderr.strip().replace("mqd-pmix-procs: ", "", 1) or \
            "mqd-pmix-procs failed (%d)" % run.returncode
        raise MqdError(neither % said)
    ranks: List[Rank] = []
    for line in run.stdout.splitlines():
        fields = line.split("\t", 3)
        if len(fields) != 4 or not fields[0].isdigit() or not fields[1].isdigit():
            raise MqdError(neither % ("mqd-pmix-procs printed %r" % line))
        rank, rank_pid = int(fields[0]), int(fields[1])
        if rank != len(ranks) or rank_pid <= 0 or rank >= MAX_RANKS:
            raise MqdError(neither % ("mqd-pmix-procs listed rank %d (pid %d) as the %dth"
                                      % (rank, rank_pid, len(ranks))))
        ranks.append(Rank(rank, fields[2] or None, fields[3] or None, rank_pid))
    if not ranks:
        raise MqdError(neither % "its PMIx server lists no process")
    return ranks


def _read_table(pid: int) -> Optional[List[Rank]]:
    """The launcher's MPIR process table; None when it has none (no MPIR_proctable)."""
    try:
        size = int(gdb.parse_and_eval("(int) MPIR_proctable_size"))
        table = int(gdb.parse_and_eval("(unsigned long) MPIR_proctable"))
    except gdb.error:
        return None
    if table == 0 or size <= 0:
        raise MqdError("the launcher %d has no processes in its MPIR process table yet (size "
                       "%d): has the job started?" % (pid, size))
    if size > MAX_RANKS:
        raise MqdError("the launcher %d says its job has %d ranks: not believed" % (pid, size))
    pointer = gdb.lookup_type("char").pointer()
    width = pointer.sizeof
    # {char *, char *, int}, padded to the pointers' alignment
    stride = (2 * width + 4 + width - 1) // width * width
    layout = _byte_order() + ("QQi" if width == 8 else "IIi")
    inf = gdb.selected_inferior()
    try:
        raw = bytes(inf.read_memory(table, size * stride))
    except gdb.MemoryError as e:
        raise MqdError("cannot read the launcher's MPIR process table: %s" % e)

    strings = {}  # launchers point many ranks at one host name: each is read once

    def string(address: int) -> Optional[str]:
        if address == 0:
            return None
        if address not in strings:
            try:
                strings[address] = gdb.Value(address).cast(pointer).string("utf-8", "replace")
            except gdb.error:
                strings[address] = None
        return strings[address]

    ranks = []
    for i in range(size):
        host, executable, rank_pid = struct.unpack_from(layout, raw, i * stride)
        if rank_pid <= 0:
            raise MqdError("the launcher's MPIR process table gives rank %d the pid %d"
                           % (i, rank_pid))
        ranks.append(Rank(i, string(host), string(executable), rank_pid))
    return ranks


def gdbservers_for(launcher: int, ranks: List[Rank],
                   servers: Dict[str, List[str]]) -> Dict[str, List[str]]:
    """`servers`, and for every rank on a host that is neither this machine nor named there,
    when `launcher` runs a Slurm job (its srun, or an mpirun in its allocation), a
    gdbserver --attach started on its node through Slurm (slurm.start_gdbservers). Otherwise `servers` as given: attach() then says
    which host wants a gdbserver named."""
    away = [(r.host, r.pid) for r in ranks
            if r.host is not None and not is_this_host(r.host) and r.host not in servers]
    if not away:
        return servers
    job = slurm.job_of(launcher)
    if job is None:
        return servers
    return dict(servers, **slurm.start_gdbservers(job, away))


def attach(ranks: List[Rank], servers: Dict[str, List[str]],
           started: Sequence[str] = ()) -> List[int]:
    """Attaches every rank, in the order given, one inferior each: locally when its host is
    this machine and `servers` names no gdbserver for it, else through a gdbserver of the
    list `servers[host]` (addresses for `target extended-remote`, one connection each): the
    host's ranks go to its gdbservers in turn, the first rank to the first. A
    `gdbserver --multi` attaches the rank; a `gdbserver --attach` must hold the rank's
    process already. With a gdbserver per rank, gdb never has to point a connection at
    another process (`Hg`) before it reads a rank: one exchange less per rank and command
    through a remote link.
    Returns the inferior numbers. An inferior without a process and without a program (gdb's
    first, when it started with none) is used first.
    When it fails part way (or is interrupted), the ranks attached so far stay, and the
    gdbservers of `started` (those gdbservers_for started for this attach, each holding its
    rank) it did not connect to are ended (slurm.release_gdbservers): none is left holding
    its rank stopped, with a port open, in a step that would never end."""
    connected: Dict[str, int] = {}  # gdbserver address -> an inferior on its connection
    try:
        return _attach_each(ranks, servers, connected)
    except BaseException:
        slurm.release_gdbservers([a for a in started if a not in connected])
        raise


def _attach_each(ranks: List[Rank], servers: Dict[str, List[str]],
                 connected: Dict[str, int]) -> List[int]:
    """attach()'s work, each gdbserver it connects to added to `connected`."""
    on_host: Dict[Optional[str], int] = {}  # host -> its ranks sent to its gdbservers so far
    nums: List[int] = []
    for r in ranks:
        listed = servers.get(r.host) if r.host is not None else None
        if not listed and not is_this_host(r.host):
            raise MqdError("rank %s runs on %s: name a gdbserver --multi there, as "
                           "--gdbserver %s=HOST:PORT (Slurm's srun as the launcher starts "
                           "them itself)" % (r.rank, r.host, r.host))
        held = None if listed else _local_inferior_of(r.pid)
        if held is not None:  # attached already (an earlier `mqd attach`, or by hand)
            if r.rank is not None:
                _labels[held] = r
            nums.append(held)
            continue
        server: Optional[str] = None
        if listed:
            turn = on_host.get(r.host, 0)
            on_host[r.host] = turn + 1
            server = listed[turn % len(listed)]
        num = _inferior_for(server, connected.get(server) if server is not None else None)
        inf = find_inferior(num)  # its pid and program follow the attach
        try:
            with SelectedInferior(num):
                if server and server not in connected:
                    _connect(server, r)
                    connected[server] = num
                if inf.pid != r.pid:  # not held by a gdbserver --attach
                    try:
                        with PagesKept():
                            quietly("attach %d" % r.pid)
                    except gdb.error as e:
                        raise MqdError("cannot attach to %s: %s" % (_who(r), e))
                if server and inf.progspace.filename is None:
                    # gdb 13, attaching through its second extended-remote connection or
                    # later, sometimes loads no program for the process: no symbols at all.
                    # Not left attached so: the inferior goes (_discard).
                    quietly("detach")
                    raise MqdError("gdb attached %s through the gdbserver %s but loaded no "
                                   "program for it (gdb 13 may not, attaching through more "
                                   "than one gdbserver connection): name one gdbserver --multi "
                                   "for the host, or a gdbserver --attach per rank"
                                   % (_who(r), server))
                remember_thread(num)
                # While gdb holds the rank's registers (lookup.py's docstring).
                lookup.of(num).read_anchors()
                if server:
                    memory.learn_stub(inf)
                    memory.note_stack_top(inf)
        except MqdError:
            _discard(num, nums)  # the ranks attached so far stay
            raise
        if r.rank is not None:  # a launcher's rank, not a bare pid
            _labels[num] = r
        nums.append(num)
    return nums


def _connect(server: str, r: Rank) -> None:
    """Connects the selected inferior, new, to the gdbserver `server` for rank `r`: a
    `gdbserver --multi`, which holds no process yet, or a `gdbserver --attach` of that rank's
    process. (gdb reads the program headers of a process it finds so four times over too, but
    before it selects the process's thread, and gdb's cache serves only reads made with a
    thread selected: PagesKept would change nothing here.) MqdError if it cannot be reached
    or holds another process, which is left to it."""
    try:
        quietly("target extended-remote %s" % server)
    except gdb.error as e:
        raise MqdError("cannot reach the gdbserver %s for %s: %s" % (server, r.host, e))
    held = gdb.selected_inferior().pid
    if held not in (0, r.pid):
        quietly("disconnect")
        raise MqdError("the gdbserver %s holds process %d, not %s: name each host's gdbservers "
                       "in the order of its ranks" % (server, held, _who(r)))


def _discard(num: int, kept: List[int]) -> None:
    """Removes inferior `num`, which holds no process, unless it is one of `kept` or gdb's
    last; the selection moves to the first of `kept`, if any."""
    inf = next((i for i in gdb.inferiors() if i.num == num), None)
    if inf is None or inf.pid != 0 or num in kept or len(gdb.inferiors()) == 1:
        return
    other = kept[0] if kept else next(i.num for i in gdb.inferiors() if i.num != num)
    quietly("inferior %d" % other)
    quietly("remove-inferiors %d" % num)


def _local_inferior_of(pid: int) -> Optional[int]:
    """The inferior that holds local process `pid`, if one does."""
    for inf in gdb.inferiors():
        if inf.pid == pid and is_local(inf):
            return inf.num
    return None


def _who(r: Rank) -> str:
    if r.rank is None:
        return "process %d" % r.pid
    return "rank %d (pid %d on %s)" % (r.rank, r.pid, r.host or "this host")


def _inferior_for(server: Optional[str], on_connection: Optional[int]) -> int:
    """An inferior to attach a rank to: for a local rank, gdb's empty first inferior or a new
    one without a connection to a gdbserver; for a remote one, a new inferior on the
    connection of `on_connection` (an inferior already on that gdbserver), or one without
    any connection, to be connected."""
    if on_connection is not None:
        with SelectedInferior(on_connection):
            return _new_inferior(connected=True)
    for inf in gdb.inferiors():
        if inf.pid == 0 and inf.progspace.filename is None and inf.connection is None \
                and inf.num not in _labels:
            return inf.num
    return _new_inferior(connected=False)
