#!/usr/bin/env python3
"""The gdb front end's own Python at many ranks, without gdb, MPI or the proxy: what a
refresh of a whole job costs past the DLL's calls.

A job of R ranks (default 64 and 256), each with OPS pending operations (default 200) shaped
as Open MPI's DLL gives them in bench/whole_job.py's job: half sends, half receives on
MPI_COMM_WORLD, each with three lines of extra_text (one with an address, so unique, and two
that repeat), and MPI_COMM_SELF empty. Timed, best of --repeat runs each:

  read     every operation's fields out of a filled mqs_pending_operation, as dump.py reads
           them (abi.Abi.operation_fields, abi.text), against ctypes' field by field (the
           front end's way before it)
  json     `mqd dump --all --json`'s text of the dumps (render.as_json), against
           json.dumps(value, indent=1), the bytes it must equal (checked)
  refresh  the same text again with every operation a render.Record and every queue,
           group and list of communicators a render.Items of the last text, as dump.py gives
           a refresh of a hung job (checked too)
  text     `mqd dump --all`'s text (render.as_text)

Printed as a table; nothing written. The numbers are this machine's: compare runs of one
machine (bench/RESULTS-whole-job.md says where the time of a refresh goes in gdb).

usage: frontend.py [--ranks 64,256] [--ops 200] [--repeat 3]
"""
import argparse
import ctypes
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "frontends", "gdb"))
# mqd_gdb's package imports gdb; abi and render do not: load them as modules of a bare
# package.
import types  # noqa: E402

_package = types.ModuleType("mqd_gdb")
_package.__path__ = [os.path.join(HERE, "..", "frontends", "gdb", "mqd_gdb")]
sys.modules["mqd_gdb"] = _package
from mqd_gdb import abi, render  # noqa: E402


def operation(i, rank):
    return {"status": "pending", "desired_local_rank": (rank + 1) % 7,
            "desired_global_rank": (rank + 1) % 7, "tag_wild": False, "desired_tag": 30000 + i,
            "desired_length": 262144, "system_buffer": False, "buffer": 139732607426576 + i,
            "actual_local_rank": 1, "actual_global_rank": 1, "actual_tag": 30000 + i,
            "actual_length": 262144,
            "extra_text": ["Send: 0x%x" % (0x55ec92061f00 + 64 * i),
                           "Data: %d instances of MPI datatype" % (1 << (i % 4)), "MPI_", "", ""]}


def job(ranks, ops):
    def queues(operations):
        return {"sends": {"rc": abi.MQS_END_OF_LIST, "operations": operations[:len(operations) // 2]},
                "receives": {"rc": abi.MQS_END_OF_LIST, "operations": operations[len(operations) // 2:]},
                "unexpected": {"rc": abi.MQS_END_OF_LIST, "operations": []}}
    return [{"inferior": r + 1, "pid": 1000 + r, "rank": r, "dll": "Open MPI v4.1.4",
             "communicators": [
                 {"unique_id": 0, "name": "MPI_COMM_WORLD", "local_rank": r, "size": ranks,
                  "group": list(range(ranks)), "queues": queues([operation(i, r) for i in range(ops)])},
                 {"unique_id": 1, "name": "MPI_COMM_SELF", "local_rank": 0, "size": 1,
                  "group": [r], "queues": queues([])}]}
            for r in range(ranks)]


def records(dumps):
    """`dumps` with each operation a render.Record, and each queue's list of them, each group
    and each list of communicators a render.Items, as dump.py makes them."""
    made = json.loads(json.dumps(dumps), object_hook=lambda d: render.Record(d)
                      if "status" in d else d)
    for d in made:
        for c in d["communicators"]:
            c["group"] = render.Items(c["group"])
            for q in c["queues"].values():
                q["operations"] = render.Items(q["operations"])
        d["communicators"] = render.Items(d["communicators"])
    return made


def structs(dumps):
    """Each operation of `dumps` as the DLL fills an mqs_pending_operation."""
    types_ = abi.Abi(ctypes.sizeof(ctypes.c_void_p))
    filled = []
    for d in dumps:
        for c in d["communicators"]:
            for q in c["queues"].values():
                for o in q["operations"]:
                    op = types_.PendingOperation()
                    for name, _ in op._fields_:
                        if name == "extra_text":
                            for k, line in enumerate(o[name]):
                                op.extra_text[k].value = line.encode()
                        elif name == "status":
                            op.status = abi.ST_PENDING
                        else:
                            setattr(op, name, o[name])
                    filled.append(op)
    return types_, filled


def read_unpacked(types_, filled):
    fields = types_.operation_fields
    for op in filled:
        values = fields(op)
        [abi.text(line) for line in values[12:]]


def read_by_field(types_, filled):
    for op in filled:
        [getattr(op, name) for name, _ in op._fields_[:12]]
        [bytes(line).split(b"\0", 1)[0].decode("utf-8", "replace") for line in op.extra_text]


def best(repeat, work, before=None):
    """The least time of `repeat` calls of `work`, each after a call of `before` if any."""
    times = []
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="64,256")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| ranks | operations | read: one unpack / by field | json: as_json / json.dumps "
          "| json of a refresh | text: as_text | JSON bytes |")
    print("|---|---|---|---|---|---|---|")
    for ranks in [int(r) for r in args.ranks.split(",")]:
        dumps = job(ranks, args.ops)
        types_, filled = structs(dumps)
        text = render.as_json(dumps)
        if text != json.dumps(dumps, indent=1) + "\n":
            raise SystemExit("FAIL: render.as_json differs from json.dumps at %d ranks" % ranks)
        kept = records(dumps)
        if render.as_json(kept) != text or render.as_json(kept) != text:
            raise SystemExit("FAIL: render.as_json of Records differs at %d ranks" % ranks)
        row = (best(args.repeat, lambda: read_unpacked(types_, filled)),
               best(args.repeat, lambda: read_by_field(types_, filled)),
               best(args.repeat, lambda: render.as_json(dumps)),
               best(args.repeat, lambda: json.dumps(dumps, indent=1)),
               best(args.repeat, lambda: render.as_json(kept),
                    before=lambda: render.as_json(kept)),
               best(args.repeat, lambda: render.as_text(dumps)))
        print("| %d | %d | %.3f s / %.3f s | %.3f s / %.3f s | %.3f s | %.3f s | %.1f MiB |"
              % ((ranks, len(filled)) + row + (len(text) / 2**20,)))


if __name__ == "__main__":
    main()
