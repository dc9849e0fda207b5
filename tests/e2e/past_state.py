"""Sourced into gdb after the mqd front end, by e2e_past_state.py: makes gdb a debugger that
shows one rank in a state that is not the live one, as a replaying debugger does.

`mqd-past-state INFERIOR SYMBOL SPAN` arms it: from then on, every read of that inferior's
memory the front end makes (for the DLL, or for libmqdproxy.so) gets its bytes inverted where it
overlaps one of two ranges: the first range of the inferior ever read but its 16 AT_RANDOM bytes
(a DLL's first read at mqs_setup_process, or the window libmqdproxy.so reads with the set-up:
the range a node server's epoch check compares; AT_RANDOM's are the proof of identity, which
never change), and SPAN bytes at SYMBOL's address. Every other byte, and every read before the
command, is gdb's own.
`mqd-past-state` alone prints "past-state: N reads changed", and the reads made since arming."""
import struct

import gdb

import mqd_gdb.memory as memory

_live_read = memory.read
_first = {}  # inferior number -> (address, size) of its first read
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


def _at_random(inferior):
    """The inferior's AT_RANDOM address, from its auxiliary vector (the ranks run here)."""
    with open("/proc/%d/auxv" % inferior.pid, "rb") as f:
        auxv = f.read()
    for key, value in struct.iter_unpack("=QQ", auxv[:len(auxv) // 16 * 16]):
        if key == 25:  # AT_RANDOM
            return value
    return None


def _read(inferior, address, size):
    data = _live_read(inferior, address, size)
    if inferior.num not in _first and (size != 16 or address != _at_random(inferior)):
        _first[inferior.num] = (address, size)
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
            gdb.execute("inferior %d" % user, to_string=True)
            _armed.update(inferior=number, ranges=[_first[number], (at, span)])
            print("past-state: inferior %d changed at %s" % (
                number, " ".join("0x%x+%d" % r for r in _armed["ranges"])))
            return
        print("past-state: %d reads changed" % _armed["changed"])
        print("past-state: reads since: " + " ".join("0x%x+%d" % r for r in _armed["reads"][:12]))


PastState()
