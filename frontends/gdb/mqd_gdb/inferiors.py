"""gdb's inferiors as the front end uses them: each inferior with a process is one MPI process
(its own mqs_process and its own image). find() one by number, select one for a `with` block
(symbol and type look-ups follow the selected inferior), tell whether it runs on this machine.
"""
import gdb

from .errors import MqdError


def find(num):
    """The inferior numbered `num`; MqdError if it is gone."""
    for inf in gdb.inferiors():
        if inf.num == num:
            return inf
    raise MqdError("inferior %d is gone" % num)


def _select(num):
    """Makes inferior `num` current, quietly (switching through one of its threads prints no
    frame, unlike the `inferior` command)."""
    inf = find(num)
    threads = inf.threads()
    if threads:
        threads[0].switch()
    else:
        gdb.execute("inferior %d" % num, to_string=True)


class SelectedInferior:
    """Selects an inferior for the duration of a `with` block (symbol look-ups follow it), and
    gives the previous thread (or inferior) back afterwards."""

    def __init__(self, num):
        self.num = num
        self.previous = None
        self.thread = None

    def __enter__(self):
        self.previous = gdb.selected_inferior().num
        self.thread = gdb.selected_thread()
        if self.previous != self.num:
            _select(self.num)

    def __exit__(self, *exc):
        if self.previous is not None and self.previous != self.num:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
            else:
                _select(self.previous)
        return False


def is_local(inf):
    """True when gdb runs the inferior on this machine (not through gdbserver or qemu's stub,
    where its pid means nothing here)."""
    connection = getattr(inf, "connection", None)
    return connection is None or connection.type == "native"


def image_name(num):
    """The name of inferior `num`'s program, for messages."""
    inf = find(num)
    return inf.progspace.filename or "inferior %d" % num
