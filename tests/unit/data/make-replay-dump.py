#!/usr/bin/env python3
"""Writes replay-dump.json and replay-dump.txt: one dump (two processes, unusual cases: a
matched operation from any source, a group error, queue errors, a dump stopped midway, a
process that failed, non-ASCII and invalid UTF-8) as the gdb front end itself writes it, with
frontends/gdb/mqd.py's own render() and json.dumps(indent=1). DumpFormatTest checks that
mqd-proxy replay writes the same dump byte for byte. (Every value fits a 32-bit debugger's
mqs_taddr_t and mqs_tword_t, so the test holds in the i686 build too.)

usage: make-replay-dump.py  (from anywhere; writes next to itself)
"""
import importlib.util
import json
import os
import sys
import types

here = os.path.dirname(os.path.abspath(__file__))

# Just enough of gdb's module for mqd.py to load outside gdb.
gdb = types.ModuleType("gdb")
gdb.Command = type("Command", (), {"__init__": lambda self, *a, **k: None})
gdb.error = gdb.GdbError = gdb.MemoryError = type("error", (Exception,), {})
gdb.COMMAND_DATA = gdb.COMPLETE_FILENAME = gdb.SYMBOL_VAR_DOMAIN = gdb.SYMBOL_STRUCT_DOMAIN = 0
sys.modules["gdb"] = gdb
spec = importlib.util.spec_from_file_location(
    "mqd", os.path.join(here, "..", "..", "..", "frontends", "gdb", "mqd.py"))
mqd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mqd)

op = {"status": "pending", "desired_local_rank": 1, "desired_global_rank": 1, "tag_wild": False,
      "desired_tag": 7, "desired_length": 64, "system_buffer": False, "buffer": 0x7f001000,
      "actual_local_rank": 1, "actual_global_rank": 1, "actual_tag": 7, "actual_length": 64,
      "extra_text": ["Send: 0x1", "", "", "", ""]}
op2 = dict(op, status="matched", desired_local_rank=-1, tag_wild=True,
           system_buffer=True, extra_text=["", "x", "", "", ""])
dumps = [
    {"inferior": 2, "pid": 1234, "rank": 1,
     "dll": b"caf\xc3\xa9 \xff".decode("utf-8", "replace"),
     "communicators": [
         {"unique_id": 5, "name": "MPI_COMM_WORLD", "local_rank": 1, "size": 2,
          "group": [0, 1],
          "queues": {"sends": {"rc": 2, "operations": [op]},
                     "receives": {"rc": 2, "operations": [op2]},
                     "unexpected": {"rc": 1, "error": "no info", "operations": []}}},
         {"unique_id": 6, "name": "c", "local_rank": 0, "size": 1,
          "group": {"error": "bad", "rc": 9},
          "queues": {"sends": {"rc": 9, "error": "boom", "operations": []},
                     "receives": {"rc": 9, "operations": [op], "error": "late"},
                     "unexpected": {"rc": 2, "operations": []}}}],
     "error": "mqs_get_communicator: oops"},
    {"inferior": 3, "pid": 99, "error": "mqs_update_communicator_list failed: \"x\" (3)"},
]
with open(os.path.join(here, "replay-dump.json"), "w") as f:
    f.write(json.dumps(dumps, indent=1) + "\n")
with open(os.path.join(here, "replay-dump.txt"), "w", encoding="utf-8") as f:
    f.write("".join((mqd.render(d) if "communicators" in d else
                     "Inferior %d: process %d: %s" % (d["inferior"], d["pid"], d["error"])) + "\n"
                    for d in dumps))
