"""Running gdb commands from the front end, their output kept from the user.

  quietly(command)   gdb.execute(command, to_string=True) for its effect alone
  output(command)    the text a read-only command prints
  Setting(name, on)  for a `with` block: a boolean gdb setting turned on or off, the user's
                     own value given back afterwards
  CodeFromFiles()    for a `with` block: gdb reads code from the loaded files, not the target
                     (see the class)
  NoSymbolOffers()   for a `with` block: gdbserver is offered no symbol look-ups (see the
                     class)
  NoTraceReopened()  for a `with` block: gdb asks no gdbserver it connects to for branch
                     traces to reopen (see the class)
  PagesKept()        for a `with` block around one attach: gdb reads the target a page at a
                     time and keeps what it read until the block ends (see the class)

What gdb captures for to_string includes its debug logs: with `set debug remote 1` the remote
protocol's packets, binary ones too (a library's bytes, vFile reads). gdb 13 decodes that
capture strictly as UTF-8 once the command has run, so a user tracing the link to a gdbserver
would see the command fail after it succeeded. A failure to decode is therefore not the
command's: quietly() takes the command as done (only its unwanted output was lost), output()
runs the read-only command again with the remote trace off for that moment and gives the
user's setting back. A failure of the command itself is gdb.error as before.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

import gdb


def quietly(command: str) -> None:
    try:
        gdb.execute(command, to_string=True)
    except UnicodeDecodeError:
        pass  # it ran; its output, not wanted, was not text


def output(command: str) -> str:
    try:
        return gdb.execute(command, to_string=True)
    except UnicodeDecodeError:
        pass
    before = gdb.parameter("debug remote")
    gdb.execute("set debug remote 0", to_string=True)
    try:
        return gdb.execute(command, to_string=True)
    finally:
        gdb.execute("set debug remote %d" % before, to_string=True)


class Setting:
    """For a `with` block: gdb's boolean (or auto-boolean) setting `name` is `on` (True or
    False) inside it, and the user's own value (auto too) comes back when the block ends,
    however it ends."""

    def __init__(self, name: str, on: bool) -> None:
        self.name = name
        self.on = on
        self.before: Optional[bool] = None

    def __enter__(self) -> None:
        self.before = gdb.parameter(self.name)
        quietly("set %s %s" % (self.name, "on" if self.on else "off"))

    def __exit__(self, *exc: Any) -> Literal[False]:
        before = {True: "on", False: "off", None: "auto"}[self.before]
        quietly("set %s %s" % (self.name, before))
        return False


class CodeFromFiles(Setting):
    """For a `with` block that makes gdb re-set its breakpoints (an attach, an
    add-symbol-file): gdb reads the read-only sections of loaded files (code, constants) from
    those files instead of the target (`trust-readonly-sections`).

    Why: at every attach and every symbol file added, gdb re-sets its breakpoints (its own
    longjmp and exception breakpoints too) in every inferior, and analyses each location's
    function prologue by reading its code. Through gdbserver each such read is an exchange, so
    the k-th rank attached to one gdb cost about 25 exchanges more per rank already attached:
    a 64-rank job's attach was about 60,000 exchanges, 20 minutes at a 20 ms round trip.
    The rule: inside the block gdb reads code only for that analysis; the files are the ones
    gdb took the processes' symbols from, whose read-only sections the processes map
    unchanged, so the analysis finds the same places. Outside the block the user's setting
    holds (docs/round-trips.md, "The debugger's own link")."""

    def __init__(self) -> None:
        super().__init__("trust-readonly-sections", True)


class NoSymbolOffers(Setting):
    """For a `with` block of attaches or symbol files added through gdbserver: gdb offers
    gdbserver no symbol look-ups (`remote symbol-lookup-packet`), so gdbserver does not load
    libthread_db for the processes attached meanwhile.

    Why: at each attach gdbserver asks gdb for libthread_db's symbols one packet each, 81 of
    the 155 exchanges an attach of an Open MPI rank costs through gdbserver
    (`mqd attach --without-thread-db` uses this for its attaches). gdb makes the offer again
    after every symbol file added: in a job attached without libthread_db the debug types'
    add-symbol-file would have gdbserver load it for the one rank selected (72 exchanges),
    and in one attached with it the offer costs an exchange that changes nothing (the type
    object holds no symbol gdbserver asks for), so debug_types.load() uses it too.
    What the user gives up, for the processes attached so: what gdbserver does with
    libthread_db, chiefly thread-local variables (gdb cannot find their address), until gdb
    offers the look-ups again (gdb does when a process loads a new library). The message
    queues and everything else the front end shows do not use it. Outside the block the
    user's setting holds (docs/round-trips.md, "The debugger's own link")."""

    def __init__(self) -> None:
        super().__init__("remote symbol-lookup-packet", False)


class NoTraceReopened(Setting):
    """For a `with` block of connections to gdbservers and attaches through them: gdb does not
    ask whether each thread was already branch-traced (`remote read-btrace-conf-packet`).

    Why: connected to a gdbserver, gdb asks for every thread of its process whether the stub
    traces its branches (`qXfer:btrace-conf`, to go on showing a trace an earlier gdb
    started), pointing the connection at each thread first (`Hg`): two exchanges a thread
    but the first. And it leaves the connection pointed at the process's last thread, while
    the front end reads a rank through the thread gdb selected, so that the rank's first read
    in the first dump cost one `Hg` more: 64 exchanges of a 64-rank job's first dump.
    What the user gives up: a branch trace that an earlier gdb started on one of those stubs
    and left running (`record btrace`, then a disconnect from a `gdbserver --multi`) is not
    shown again through this connection; the front end shows no trace, and `record btrace`
    started afterwards works as before, since the user's setting comes back when the block
    ends (docs/round-trips.md, "The debugger's own link")."""

    def __init__(self) -> None:
        super().__init__("remote read-btrace-conf-packet", False)


class PagesKept:
    """For a `with` block around one attach, with the attached inferior selected from start to
    end: gdb reads that process's memory a page at a time and keeps each page it read for the
    rest of the block (a memory region over the whole address space with gdb's `cache`
    attribute, and `dcache line-size` of one page).

    Why: through gdbserver each read is an exchange, and while it attaches gdb 13 reads the
    executable's program headers and dynamic section four times over, in 56-byte pieces: 32
    of the 74 exchanges an attach of an Open MPI rank costs without libthread_db, which
    become 2.
    The rule: the process is stopped for the whole block (an attach stops it) and nothing
    else reads through the cache meanwhile, so a kept page is what a new read would give.
    gdb keeps its cache per address space, so no other inferior's reads are served from this
    one's pages. At the end the region goes, which empties the selected inferior's cache,
    and the user's line size comes back, which empties it again and gives it back its lines
    of the user's size; gdb's `mem auto` gives back the target's regions where gdb used them.
    Where the user, or the target, defined memory regions, nothing is changed and gdb reads
    as it would (docs/round-trips.md, "The debugger's own link")."""

    PAGE = 4096  # a line of gdb's cache: the smallest page of any Linux target

    def __init__(self) -> None:
        self.region: Optional[int] = None  # the memory region made for the block
        self.line = 0  # the user's dcache line size, given back
        self.from_target = False

    def __enter__(self) -> "PagesKept":
        shown = output("info mem")
        if "There are no memory regions defined." not in shown:
            return self
        self.from_target = "provided by the target" in shown
        self.line = gdb.parameter("dcache line-size")
        quietly("mem 0 0 cache")
        # There was none: the one region listed is this one.
        self.region = next(int(line.split()[0]) for line in output("info mem").splitlines()
                           if line[:1].isdigit())
        quietly("set dcache line-size %d" % self.PAGE)
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        if self.region is not None:
            quietly("delete mem %d" % self.region)
            if self.from_target:
                quietly("mem auto")
            quietly("set dcache line-size %d" % self.line)
        return False
