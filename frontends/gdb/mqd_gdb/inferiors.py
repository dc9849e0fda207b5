"""gdb's inferiors as the front end uses them: each inferior with a process is one MPI process
(its own mqs_process and its own image). find() one by number, select one for a `with` block
(symbol and type look-ups follow the selected inferior), tell whether it runs on this machine.
"""
from __future__ import annotations

from typing import Any, Dict, Literal, Optional, Tuple

import gdb

from .errors import MqdError
from .execute import quietly


def find(num: int) -> gdb.Inferior:
    """The inferior numbered `num`; MqdError if it is gone."""
    # Most often the selected one: a process's memory is read with it selected. A native
    # dump asks for it at every read of the DLL's (gdb.inferiors() builds the whole list each
    # time: a fifth of a 64-rank job's native refresh).
    inf = gdb.selected_inferior()
    if inf.num == num:
        return inf
    for inf in gdb.inferiors():
        if inf.num == num:
            return inf
    raise MqdError("inferior %d is gone" % num)


# inferior number -> (pid, a thread of it) that select() switched to: Inferior.threads()
# makes gdb fetch the thread list anew, from every process on a gdbserver connection, in
# 4 KiB pieces, which costs a job's selections exchanges that grow with its ranks.
_threads: Dict[int, Tuple[int, gdb.InferiorThread]] = {}


def select(num: int) -> None:
    """Makes inferior `num` current, quietly (switching through one of its threads prints no
    frame, unlike the `inferior` command). The caller gives the user's selection back (a
    SelectedInferior block around it)."""
    inf = find(num)
    kept = _threads.get(num)
    if kept is not None and kept[0] == inf.pid and kept[1].is_valid() \
            and kept[1].inferior.num == num:
        kept[1].switch()
        return
    threads = inf.threads()
    if threads:
        _threads[num] = (inf.pid, threads[0])
        threads[0].switch()
    else:
        quietly("inferior %d" % num)


def remember_thread(num: int) -> None:
    """After the front end attached inferior `num` itself: the thread gdb selected there is
    the one select() switches through, without fetching the thread list."""
    inf, thread = find(num), gdb.selected_thread()
    if thread is not None and thread.inferior.num == num:
        _threads[num] = (inf.pid, thread)


class SelectedInferior:
    """Selects an inferior for the duration of a `with` block (symbol look-ups and, in gdb 13,
    memory reads follow it), and gives the previous thread (or inferior) back afterwards. The
    outermost block also gives back the frame the user had selected: also when the block
    loaded a symbol file, which makes gdb select the innermost frame. A block inside another
    leaves frames alone: the front end reads no frame of the ranks it selects, and through
    gdbserver computing one costs exchanges (the thread's registers, its stack)."""

    _depth = 0  # blocks entered and not left, in this gdb

    def __init__(self, num: int) -> None:
        self.num = num
        self.previous = 0  # the inferior selected when the block began
        self.thread: Optional[gdb.InferiorThread] = None
        self.frame: Optional[gdb.Frame] = None

    def __enter__(self) -> None:
        self.previous = gdb.selected_inferior().num
        self.thread = gdb.selected_thread()
        self.frame = None
        if SelectedInferior._depth == 0:
            try:
                self.frame = gdb.selected_frame()
            except gdb.error:  # no process, or no stack
                pass
        SelectedInferior._depth += 1
        try:
            if self.previous != self.num:
                select(self.num)
        except BaseException:
            SelectedInferior._depth -= 1
            raise

    def __exit__(self, *exc: Any) -> Literal[False]:
        SelectedInferior._depth -= 1
        # The block may have switched threads itself (snapshot.take does).
        if self.thread is not None and self.thread.is_valid():
            if gdb.selected_thread() != self.thread:
                self.thread.switch()
        elif gdb.selected_inferior().num != self.previous:
            select(self.previous)
            return False
        if self.frame is not None and self.frame.is_valid() and \
                gdb.selected_thread() == self.thread and self.frame != gdb.selected_frame():
            self.frame.select()
        return False


def big_endian() -> bool:
    """Whether the selected inferior's target is big-endian, as gdb says: bytes 1 0 0 0 read
    as a 32-bit integer of the inferior's architecture, which follows `set endian`. (`show
    endian` says the same but computes the selected frame first: through gdbserver, the
    thread's registers, an exchange per rank.)"""
    unsigned = gdb.selected_inferior().architecture().integer_type(32, False)
    return int(gdb.Value(b"\x01\x00\x00\x00", unsigned)) != 1


def is_local(inf: gdb.Inferior) -> bool:
    """True when gdb runs the inferior on this machine (not through gdbserver or qemu's stub,
    where its pid means nothing here)."""
    connection = getattr(inf, "connection", None)
    return connection is None or connection.type == "native"


def image_name(num: int) -> str:
    """The name of inferior `num`'s program, for messages."""
    inf = find(num)
    return inf.progspace.filename or "inferior %d" % num
