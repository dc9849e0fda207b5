#!/usr/bin/env python3
"""Writes replay-dump.json and replay-dump.txt: one dump (two processes, unusual cases: a
matched operation from any source, the host a launcher's table named, a group error, an
unknown group and global ranks (as MPICH's DLL shows them), queue errors, a dump stopped
midway, a process that failed, non-ASCII and invalid UTF-8) as the gdb front end itself writes
it, with its own renderer (frontends/gdb/mqd_gdb/render.py: as_json and as_text, which need no
gdb). DumpFormatTest checks that mqd-proxy replay writes the same dump byte for byte. (Every
value fits a 32-bit debugger's mqs_taddr_t and mqs_tword_t, so the test holds in the i686
build too.)

usage: make-replay-dump.py  (from anywhere; writes next to itself)
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing of the front end's package is left in the source tree
sys.path.insert(0, os.path.join(here, "..", "..", "..", "frontends", "gdb"))
from mqd_gdb import render  # noqa: E402

op = {"status": "pending", "desired_local_rank": 1, "desired_global_rank": 1, "tag_wild": False,
      "desired_tag": 7, "desired_length": 64, "system_buffer": False, "buffer": 0x7f001000,
      "actual_local_rank": 1, "actual_global_rank": 1, "actual_tag": 7, "actual_length": 64,
      "extra_text": ["Send: 0x1", "", "", "", ""]}
op2 = dict(op, status="matched", desired_local_rank=-1, tag_wild=True,
           system_buffer=True, extra_text=["", "x", "", "", ""])
# As MPICH's DLL shows an eager message no receive matched: no global ranks (-1), no length.
op3 = dict(op, status="complete", desired_global_rank=-1, actual_global_rank=-1,
           desired_length=0, actual_length=-1, buffer=0,
           extra_text=["", "", "", "", ""])
dumps = [
    {"inferior": 2, "pid": 1234, "rank": 1, "host": "node7",
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
                     "unexpected": {"rc": 2, "operations": []}}},
         {"unique_id": 7, "name": "--unnamed--", "local_rank": 0, "size": 4, "group": None,
          "queues": {"sends": {"rc": 2, "operations": []},
                     "receives": {"rc": 2, "operations": []},
                     "unexpected": {"rc": 2, "operations": [op3]}}}],
     "error": "mqs_get_communicator: oops"},
    {"inferior": 3, "pid": 99, "error": "mqs_update_communicator_list failed: \"x\" (3)"},
]
with open(os.path.join(here, "replay-dump.json"), "w") as f:
    f.write(render.as_json(dumps))
with open(os.path.join(here, "replay-dump.txt"), "w", encoding="utf-8") as f:
    f.write(render.as_text(dumps))
