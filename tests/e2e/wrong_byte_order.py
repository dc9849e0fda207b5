# Sourced into gdb after the mqd front end and before `mqd load` (tests/e2e/e2e_byte_order.py):
# makes the front end a debugger that is wrong about the target's byte order. Its
# target_to_host swaps bytes for this target of its own byte order, as a debugger that took the
# target for the other byte order would; everything else stays the front end's.
import ctypes

import mqd_gdb.callbacks


def _swaps_always(self, process, src, dst, size):
    ctypes.memmove(dst, ctypes.string_at(src, size)[::-1], size)


mqd_gdb.callbacks.Callbacks._cb_target_to_host = _swaps_always
print("wrong_byte_order: target_to_host now swaps bytes for this target")
