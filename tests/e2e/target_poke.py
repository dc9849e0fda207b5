# target_poke.py: gdb commands that corrupt a live MPI process's memory and put it back, for
# tests that feed a vendor MQD DLL corrupted target data (tests/e2e/e2e_corrupt.py).
#
#   source target_poke.py
#   poke EXPRESSION VALUE JOURNAL
#       Evaluates the lvalue EXPRESSION in the current inferior (with debug types loaded, e.g.
#       by `mqd types`), appends its address and original bytes to the JSON-lines file
#       JOURNAL, then assigns VALUE to it (`set var`). Prints "poked ADDRESS SIZE OLD -> NEW".
#   unpoke JOURNAL
#       Writes every original recorded in JOURNAL back, newest first, into the current
#       inferior, and empties JOURNAL. Prints "restored N".
#
# Only the target's memory changes: nothing in the debugger or the DLL is touched. A poke
# whose expression gdb cannot evaluate fails the command (gdb -batch goes on with the next
# one, so callers check the printed line).

import json
import os

import gdb


class Poke(gdb.Command):
    """poke EXPRESSION VALUE JOURNAL: assign VALUE to EXPRESSION, remembering the old bytes."""

    def __init__(self):
        super().__init__("poke", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) != 3:
            raise gdb.GdbError("usage: poke EXPRESSION VALUE JOURNAL")
        expression, value, journal = argv
        lvalue = gdb.parse_and_eval(expression)
        address = int(lvalue.address)
        size = lvalue.type.sizeof
        inferior = gdb.selected_inferior()
        old = bytes(inferior.read_memory(address, size))
        with open(journal, "a") as f:
            f.write(json.dumps({"pid": inferior.pid, "address": address,
                                "bytes": old.hex()}) + "\n")
        gdb.execute("set var %s = %s" % (expression, value), to_string=True)
        now = gdb.parse_and_eval(expression)
        gdb.write("poked 0x%x %d %s -> %s\n" % (address, size, int.from_bytes(
            old, "little" if "little" in gdb.execute("show endian", to_string=True) else "big",
            signed=True), now))


class Unpoke(gdb.Command):
    """unpoke JOURNAL: write back every original recorded by poke, newest first."""

    def __init__(self):
        super().__init__("unpoke", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) != 1:
            raise gdb.GdbError("usage: unpoke JOURNAL")
        journal = argv[0]
        inferior = gdb.selected_inferior()
        entries = []
        if os.path.exists(journal):
            with open(journal) as f:
                entries = [json.loads(line) for line in f if line.strip()]
        mine = [e for e in entries if e["pid"] == inferior.pid]
        for e in reversed(mine):
            inferior.write_memory(e["address"], bytes.fromhex(e["bytes"]))
        with open(journal, "w") as f:
            for e in entries:
                if e["pid"] != inferior.pid:
                    f.write(json.dumps(e) + "\n")
        gdb.write("restored %d\n" % len(mine))


Poke()
Unpoke()
