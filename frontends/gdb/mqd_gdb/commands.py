"""The gdb commands, and the one Session they share (None until `mqd load`):

  mqd attach --launcher PID [--gdbserver HOST=ADDRESS ...] [--without-thread-db]
  mqd attach PID [PID ...]
      Attach a whole job, one inferior per rank: the ranks the launcher's MPIR process table
      names (Open MPI 4's mpirun, MPICH's mpiexec, Slurm's srun), or its PMIx server's (Open
      MPI 5's mpirun, PRRTE's prterun), in MPI_COMM_WORLD rank order, each labelled
      with its rank and host, a remote host's through its gdbserver --multi (several named
      for one host take its ranks in turn: job); or the processes named.
      --without-thread-db: gdbserver loads no libthread_db for them, a third of the
      exchanges of an attach (execute.NoSymbolOffers).
  mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
      Load an MQD DLL. Default: the target's MPIR_dll_name. DLL may be libmqdproxy.so; then
      --server and --vendor-dll set MQD_PROXY_SERVER and MQD_PROXY_DLL for it.
  mqd dump [--json] [--all] [--output FILE]
      Communicators, groups and the three queues of the current inferior (--all: of every
      inferior with a process), as text or JSON, to gdb's output or FILE. Loads the DLL first
      (as `mqd load`) if none is and, for Open MPI's DLL, the debug types into each inferior
      that lacks them.
  mqd snapshot OUT.json
      A whole-job snapshot (frontends/analysis/SNAPSHOT.md) written to OUT.json: the queues of
      `mqd dump --all`, and where each process is stopped (snapshot).
  mqd graph [--json] [--dot FILE] [--svg FILE] [--png FILE] [--html FILE] [--snapshot FILE]
      Who waits on whom: takes the snapshot in memory and runs the deadlock analysis on it
      here, in gdb's Python (analysis, the package mqd_analysis): prints the verdict as text,
      or JSON, writes the picture and report files named, and the snapshot with --snapshot.
  mqd types [OBJECT]
      Load debug types for a stripped libmpi (debug_types).
  mqd status
      What is loaded, and what was set up; the last 20 messages of the callbacks and the DLL;
      the pages of target memory kept for later commands, and what the last command that
      found some did with them (memory).

Every command runs inside one error boundary (_command): a failure the user can act on is an
MqdError, shown as one line, "mqd: ...", raised as gdb.GdbError (a command in a script stops
it); anything else is a bug of the front end's, shown as "mqd: internal error: TYPE: TEXT",
with its Python traceback only when the user asked gdb for tracebacks (`set python
print-stack full`). A command never runs another through gdb (gdb.execute would turn the
inner one's MqdError into a gdb.error, which the outer boundary could not tell from a bug):
`mqd dump`, `mqd snapshot` and `mqd graph` load the DLL by calling load(), as `mqd load`
does. `mqd dump --all`, `mqd snapshot` and `mqd graph` keep what they could read, and the
failures of the other inferiors in their place, and do not fail for them. register() makes
the commands known to gdb; ../mqd.py calls it each time it is sourced.

Each command's options are parsed by argparse (options.Parser, built with the command): a
mistake in them is an MqdError naming it, with the command's usage ("argument --output:
expected one argument (usage: mqd dump ...)"); the usage argparse prints is the one in the
command's help (its docstring, which gdb's `help` shows).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import traceback
from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple

import gdb

from . import analysis, debug_types, job, lookup, memory, render, snapshot
from .dump import dump, failed
from .errors import MqdError
from .execute import CodeFromFiles, NoSymbolOffers, NoTraceReopened
from .inferiors import SelectedInferior, find as find_inferior, select as select_inferior
from .options import Parser
from .session import Session

_session: Optional[Session] = None


def _dll_name_of_target() -> str:
    inferior = gdb.selected_inferior()
    address = lookup.of(inferior.num).address("MPIR_dll_name")
    try:
        if address is None:
            raise gdb.error("no such symbol")
        return memory.string(inferior, address).decode(errors="surrogateescape")
    except gdb.error:
        raise MqdError("the target has no MPIR_dll_name; name the DLL: mqd load PATH")


class MqdPrefix(gdb.Command):
    """Message queues of MPI processes through an MQD DLL.
Subcommands: mqd attach, mqd load, mqd dump, mqd snapshot, mqd graph, mqd types, mqd status."""

    def __init__(self) -> None:
        super().__init__("mqd", gdb.COMMAND_DATA, prefix=True)


# A command's body: (the command, its arguments as gdb.string_to_argv splits them, from_tty).
Body = Callable[[Any, List[str], bool], None]


def _command(fn: Body) -> Callable[[Any, str, bool], None]:
    """Runs a command body inside the front end's error boundary: an MqdError is the user's
    one line, "mqd: TEXT"; any other exception is a bug, "mqd: internal error: TYPE: TEXT",
    after its traceback when gdb's `python print-stack` is `full` (gdb itself prints none for
    a gdb.GdbError)."""
    def invoke(self: Any, arg: str, from_tty: bool) -> None:
        try:
            with memory.Command():
                fn(self, gdb.string_to_argv(arg), from_tty)
        except MqdError as e:
            raise gdb.GdbError("mqd: %s" % e)
        except gdb.GdbError:
            raise
        except Exception as e:  # a bug: its traceback only for a user who asked for them
            if _wants_tracebacks():
                gdb.write(traceback.format_exc(), gdb.STDERR)
            raise gdb.GdbError("mqd: internal error: %s: %s" % (type(e).__name__, e))
    return invoke


def _wants_tracebacks() -> bool:
    """Whether `set python print-stack full` is on (gdb's parameter "python print-stack":
    none, message or full)."""
    try:
        return gdb.parameter("python print-stack") == "full"
    except RuntimeError:  # a gdb without the parameter
        return False


class MqdAttach(gdb.Command):
    """Attach a whole job: mqd attach --launcher PID [--gdbserver HOST=ADDRESS ...] | mqd attach PID...
--launcher PID: the job's launcher; its MPIR process table (Open MPI 4's mpirun, MPICH's mpiexec,
Slurm's srun) or its PMIx server (Open MPI 5's mpirun, PRRTE's prterun) names every rank's host
and pid. Each rank is attached in an inferior of its own, in
MPI_COMM_WORLD rank order, and labelled with its rank and host. A rank on another host is
attached through the gdbserver --multi that --gdbserver names for that host; name several for
one host and its ranks go to them in turn (one per rank spares an exchange per rank and dump).
For Slurm's srun, a rank on a node no --gdbserver names is attached through a gdbserver --attach
that Slurm starts on its node, in a job step beside the job's (srun --jobid --overlap).
PID...: attach these processes, one inferior each.
--without-thread-db: gdbserver loads no libthread_db for the processes attached: an attach
through it costs a third of the exchanges, and gdb cannot read their thread-local variables."""

    def __init__(self) -> None:
        super().__init__("mqd attach", gdb.COMMAND_RUNNING)
        self.parser = Parser("mqd attach", usage="mqd attach --launcher PID [--gdbserver "
                             "HOST=ADDRESS ...] [--without-thread-db] | mqd attach PID...")
        self.parser.add_argument("--launcher", type=_pid, metavar="PID")
        self.parser.add_argument("--gdbserver", type=_host_address, action="append",
                                 default=[], metavar="HOST=ADDRESS")
        self.parser.add_argument("--without-thread-db", action="store_true")
        self.parser.add_argument("pids", nargs="*", type=_pid, metavar="PID")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        options = self.parser.parse(argv)
        launcher, pids = options.launcher, options.pids
        thread_db = not options.without_thread_db
        servers: Dict[str, List[str]] = {}
        for host, address in options.gdbserver:
            servers.setdefault(host, []).append(address)
        if (launcher is None) == (not pids):
            raise MqdError(self.parser.usage_line())
        offers: ContextManager[Any] = NoSymbolOffers()
        if thread_db:
            offers = contextlib.nullcontext()
        # Each attach (the launcher's too) re-sets gdb's breakpoints in every inferior.
        with job.Quiet(), CodeFromFiles(), NoTraceReopened(), offers:
            named = {a for listed in servers.values() for a in listed}
            if launcher is not None:
                ranks = job.read_proctable(launcher)
                servers = job.gdbservers_for(launcher, ranks, servers)
            else:
                ranks = [job.Rank(None, None, None, pid) for pid in pids]
            started = [a for listed in servers.values() for a in listed if a not in named]
            nums = job.attach(ranks, servers, started)
        if launcher is not None:
            gdb.write("mqd: attached %d ranks of the job of launcher %d (inferiors %s; hosts: "
                      "%s)\n" % (len(nums), launcher, _ranges(nums),
                                  ", ".join(sorted({r.host or "?" for r in ranks}))))
        else:
            gdb.write("mqd: attached %d processes (inferiors %s)\n" % (len(nums),
                                                                        _ranges(nums)))


def _ranges(nums: List[int]) -> str:
    """"1, 3-5" for [1, 3, 4, 5]."""
    spans: List[List[int]] = []
    for n in nums:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in spans)


def _pid(text: str) -> int:
    """A process id on the command line (argparse's `type`)."""
    try:
        pid = int(text)
    except ValueError:
        pid = 0
    if pid <= 0:
        raise argparse.ArgumentTypeError("not a process id: %s" % text)
    return pid


def _host_address(text: str) -> Tuple[str, str]:
    """--gdbserver's HOST=ADDRESS as (host, address) (argparse's `type`)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError("not HOST=ADDRESS: %s" % text)
    host, address = text.split("=", 1)
    return host, address


class MqdLoad(gdb.Command):
    """Load an MQD DLL: mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
DLL defaults to the target's MPIR_dll_name. It may be libmqdproxy.so: --server and
--vendor-dll then set MQD_PROXY_SERVER and MQD_PROXY_DLL before it is loaded."""

    def __init__(self) -> None:
        super().__init__("mqd load", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)
        self.parser = Parser("mqd load")
        self.parser.add_argument("--server", metavar="ENDPOINT")
        self.parser.add_argument("--vendor-dll", metavar="NAME")
        self.parser.add_argument("dll", nargs="?", metavar="DLL")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        options = self.parser.parse(argv)
        if options.server is not None:
            os.environ["MQD_PROXY_SERVER"] = options.server
        if options.vendor_dll is not None:
            os.environ["MQD_PROXY_DLL"] = options.vendor_dll
        load(options.dll)


def load(path: Optional[str] = None) -> Session:
    """Loads the DLL at `path` (None: the one the target's MPIR_dll_name names) as the session
    every command uses, and says so: `mqd load`, and the commands that need a DLL when none is
    loaded. MqdError when it cannot be loaded; the session loaded before stays then."""
    global _session
    if path is None:
        path = _dll_name_of_target()
    _session = Session(path)
    gdb.write("mqd: loaded %s: %s (compatibility %d)\n"
              % (path, _session.version, _session.compatibility))
    return _session


def _read_dumps(everything: bool) -> List[Dict[str, Any]]:
    """The dump of the current inferior, or of every inferior with a process; loads the DLL
    first (as `mqd load`) if none is. A process that cannot be read is its failure. Open MPI's
    debug types are loaded only for Open MPI's DLL (Session.is_open_mpi): another MPI's
    DLL (MPICH's) asks for its own library's types, which no object of Open MPI's provides."""
    session = _session if _session is not None else load()
    nums = [i.num for i in gdb.inferiors() if i.pid != 0] if everything else \
        [gdb.selected_inferior().num]
    # The user's selection is given back once, at the end: each process is selected in turn
    # and left selected for the next (a switch back after each costs a thread switch, and
    # through gdbserver exchanges).
    with SelectedInferior(gdb.selected_inferior().num):
        if len(nums) > 1:
            # Every process set up before the first is refreshed: libmqdproxy.so can then
            # refresh the others ahead with the first one's update. The first rank is set up
            # whole, then every other image, then every other process: libmqdproxy.so answers
            # the images' set-ups from the first one's record without waiting, and waits once
            # for all of them. A set-up the DLL refuses is kept, and reported in the loop
            # below. docs/round-trips.md, "The whole job"
            for step, todo in ((_set_up, nums[:1]), (_set_up_image, nums[1:]),
                               (_set_up, nums[1:])):
                for num in todo:
                    with SelectedInferior(num):
                        try:
                            step(session, num)
                        except MqdError:
                            pass
        dumps = []
        for num in nums:
            try:
                if gdb.selected_inferior().num != num:
                    select_inferior(num)
                _set_up(session, num)
                dumps.append(dump(session, num))
            except MqdError as e:
                process = session.processes.get(num)
                dumps.append(failed(num, find_inferior(num).pid, str(e),
                                    process.warnings if process else ()))
    return dumps


def _set_up(session: Session, num: int) -> None:
    """The image and process of inferior `num` set up (Session.ensure_process), with Open MPI's
    debug types loaded first for Open MPI's DLL."""
    if session.is_open_mpi():
        debug_types.ensure(num)
    session.ensure_process(num)


def _set_up_image(session: Session, num: int) -> None:
    """The image of inferior `num` set up (Session.ensure_image), as _set_up."""
    if session.is_open_mpi():
        debug_types.ensure(num)
    session.ensure_image(num)


def _write_file(path: str, text: str) -> None:
    """Writes `text` to `path` in UTF-8, whatever gdb's locale (the DLL's names and lines are
    UTF-8, abi.text), in one write: a 256-rank job's JSON is tens of MB, which a text file's
    encoder writes in twice the time."""
    try:
        with open(path, "wb") as f:
            f.write(text.encode("utf-8"))
    except OSError as e:
        raise MqdError("cannot write %s: %s" % (path, e.strerror or e))


def _whole_job_snapshot() -> Dict[str, Any]:
    """The snapshot of every inferior with a process (snapshot.take)."""
    if not any(i.pid != 0 for i in gdb.inferiors()):
        raise MqdError("no process to take a snapshot of: attach to the job's processes first "
                       "(one inferior each)")
    return snapshot.take(_read_dumps(everything=True))


def _summary(snap: Dict[str, Any]) -> str:
    unread = len([r for r in snap["ranks"] if "communicators" not in r])
    return "%d processes%s" % (len(snap["ranks"]),
                               ", %d could not be read" % unread if unread else "")


class MqdDump(gdb.Command):
    """Show message queues: mqd dump [--json] [--all] [--output FILE]
Communicators, groups and the three queues of the current inferior (--all: every inferior
with a process), as text or JSON, written to gdb's output or to FILE."""

    def __init__(self) -> None:
        super().__init__("mqd dump", gdb.COMMAND_DATA)
        self.parser = Parser("mqd dump")
        self.parser.add_argument("--json", action="store_true")
        self.parser.add_argument("--all", action="store_true", dest="everything")
        self.parser.add_argument("--output", metavar="FILE")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        options = self.parser.parse(argv)
        everything = options.everything
        dumps = _read_dumps(everything)
        if options.json:
            text = render.as_json(dumps if everything else dumps[0])
        else:
            text = render.as_text(dumps)
        if options.output:
            _write_file(options.output, text)
        else:
            gdb.write(text)
        failures = [d for d in dumps if "communicators" not in d]
        if failures and not everything:
            raise MqdError(failures[0]["error"])


class MqdSnapshot(gdb.Command):
    """Write a whole-job snapshot: mqd snapshot OUT.json
Every inferior's queues (as mqd dump --all reads them), where its main thread is stopped
(frames and innermost MPI call), Open MPI's PML and the host, as frontends/analysis/SNAPSHOT.md
defines them: the input of mqd graph's analysis, and of mqd-proxy graph without a debugger."""

    def __init__(self) -> None:
        super().__init__("mqd snapshot", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)
        self.parser = Parser("mqd snapshot")
        self.parser.add_argument("output", metavar="OUT.json")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        output = self.parser.parse(argv).output
        snap = _whole_job_snapshot()
        _write_file(output, snapshot.as_json(snap))
        gdb.write("mqd: snapshot of %s written to %s\n" % (_summary(snap), output))


class MqdGraph(gdb.Command):
    """Who waits on whom: mqd graph [--json] [--dot FILE] [--svg FILE] [--png FILE] [--html FILE] [--snapshot FILE]
Takes a whole-job snapshot (as mqd snapshot) and runs the deadlock analysis on it: prints the
verdict, each deadlock's ranks and likely cause (--json: the analysis as JSON); --dot, --svg,
--png and --html write the picture and a self-contained HTML report (SVG, PNG and HTML need
Graphviz's dot); --snapshot also writes the snapshot, for mqd-proxy graph later."""

    def __init__(self) -> None:
        super().__init__("mqd graph", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)
        self.parser = Parser("mqd graph")
        self.parser.add_argument("--json", action="store_true")
        for name in ("dot", "svg", "png", "html", "snapshot"):
            self.parser.add_argument("--" + name, metavar="FILE")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        options = self.parser.parse(argv)
        mqd_analysis = analysis.load()
        snap = _whole_job_snapshot()
        if options.snapshot:
            _write_file(options.snapshot, snapshot.as_json(snap))
        try:
            result = mqd_analysis.analyse(mqd_analysis.parse_snapshot(
                snap, options.snapshot or "the snapshot"))
            mqd_analysis.outputs.write_files(result, dot=options.dot, svg=options.svg,
                                             png=options.png, html=options.html)
        except (mqd_analysis.SnapshotError, mqd_analysis.outputs.RenderError) as e:
            raise MqdError(str(e))
        gdb.write(mqd_analysis.outputs.verdict(result, as_json=options.json))


class MqdTypes(gdb.Command):
    """Load debug types for a stripped libmpi: mqd types [OBJECT]"""

    def __init__(self) -> None:
        super().__init__("mqd types", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)
        self.parser = Parser("mqd types")
        self.parser.add_argument("object", nargs="?", metavar="OBJECT")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        options = self.parser.parse(argv)
        with SelectedInferior(gdb.selected_inferior().num):  # keeps the user's frame
            path = debug_types.load(options.object)
        gdb.write("mqd: loaded debug types from %s\n" % path)


class MqdStatus(gdb.Command):
    """What mqd has loaded and set up, and the pages of target memory it keeps: mqd status"""

    def __init__(self) -> None:
        super().__init__("mqd status", gdb.COMMAND_DATA)
        self.parser = Parser("mqd status")

    @_command
    def invoke(self, argv: List[str], from_tty: bool) -> None:
        self.parser.parse(argv)
        if _session is None:
            gdb.write("mqd: no DLL loaded\n")
            return
        gdb.write("mqd: %s: %s (compatibility %d)\n"
                  % (_session.path, _session.version, _session.compatibility))
        for num, p in sorted(_session.processes.items()):
            gdb.write("  inferior %d: set-up rc %s, has-queues %s\n"
                      % (num, p.set_up, p.has_queues and p.has_queues[0]))
        for line in _session.messages[-20:]:
            gdb.write("  " + line + "\n")
        pages, processes = memory.kept_pages()
        checks = memory.last_checks
        gdb.write("  memory: %d pages of %d processes kept for later commands; the last to "
                  "find kept pages read %d pages before its checks, checked %d runs with "
                  "qCRC (%d pages unchanged, %d runs changed), dropped %d pages "
                  "unchecked and trusted %d stack pages of processes stopped since their "
                  "attach\n"
                  % (pages, processes, checks["read"], checks["runs"], checks["proved"],
                     checks["changed"], checks["dropped"], checks["trusted"]))
        gdb.write("  reads: %d asked of the targets' memory since the front end was loaded, %d "
                  "of them refused\n" % (memory.reads["asked"], memory.reads["refused"]))


def register() -> None:
    """Makes the `mqd` commands known to gdb (again: a command registered twice replaces the
    first)."""
    MqdPrefix()
    MqdAttach()
    MqdLoad()
    MqdDump()
    MqdSnapshot()
    MqdGraph()
    MqdTypes()
    MqdStatus()
