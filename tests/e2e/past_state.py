"""Sourced into gdb after the mqd front end, by e2e_past_state.py: makes gdb a debugger that
shows one rank in a state that is not the live one, as a replaying debugger does.

`mqd-past-state INFERIOR SYMBOL SPAN` arms it: from then on, every read of that inferior's
memory the front end makes (for the DLL, or for libmqdproxy.so) gets its bytes inverted where it
overlaps one of two ranges: the 64 bytes at its main thread's stack pointer (the innermost
frame, which a replay stopped at another point shows otherwise), and SPAN bytes at SYMBOL's
address. Every other byte, and every read before the command, is gdb's own.
`mqd-past-state` alone prints "past-state: N reads changed", and the reads made since arming."""
import gdb

import mqd_gdb.memory as memory

STACK_BYTES = 64  # what a replay elsewhere shows otherwise, from the stack pointer up
_live_read = memory.read
_armed = {"inferior": None, "ranges": [], "changed": 0, "reads": []}


def _invert(data, address, ranges):
    changed = None
    for start, length in ranges:
        low, high = max(start, address), min(start + length, address + len(data))
        if low < high:
            changed = changed or bytearray(data)
            for i in range(low - address, high - address):
                changed[i] ^= 0xff
    return bytes(changed) if changed else None


def _stack_pointer():
    """The selected inferior's main thread's stack pointer (its LWP is the process's pid)."""
    inferior = gdb.selected_inferior()
    current = gdb.selected_thread()
    main = [t for t in inferior.threads() if t.ptid[1] == inferior.pid]
    main[0].switch()
    sp = int(gdb.parse_and_eval("(unsigned long) $sp"))
    if current is not None and current.inferior == inferior:
        current.switch()
    return sp


def _read(inferior, address, size):
    data = _live_read(inferior, address, size)
    if inferior.num != _armed["inferior"]:
        return data
    _armed["reads"].append((address, size))
    changed = _invert(data, address, _armed["ranges"])
    if changed is None:
        return data
    _armed["changed"] += 1
    return changed


memory.read = _read


class PastState(gdb.Command):
    """mqd-past-state [INFERIOR SYMBOL SPAN]: show INFERIOR in another state from now on, or
    report what was changed."""

    def __init__(self):
        super().__init__("mqd-past-state", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        words = arg.split()
        if words:
            number, symbol, span = int(words[0]), words[1], int(words[2])
            user = gdb.selected_inferior().num
            gdb.execute("inferior %d" % number, to_string=True)
            at = int(gdb.parse_and_eval("(unsigned long) &%s" % symbol))
            sp = _stack_pointer()
            gdb.execute("inferior %d" % user, to_string=True)
            _armed.update(inferior=number, ranges=[(sp, STACK_BYTES), (at, span)])
            print("past-state: inferior %d changed at %s" % (
                number, " ".join("0x%x+%d" % r for r in _armed["ranges"])))
            return
        print("past-state: %d reads changed" % _armed["changed"])
        print("past-state: reads since: " + " ".join("0x%x+%d" % r for r in _armed["reads"][:12]))


PastState()
