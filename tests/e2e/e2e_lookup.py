#!/usr/bin/env python3
"""The front end's look-ups cost the debugger's remote link nothing, and answer what gdb's own
global look-ups answer.

A live Open MPI job (tests/e2e/pending.c); gdb reaches rank 0 through a real
`gdbserver --attach` on loopback, the debugger's own remote link, with the target's files
local (`set sysroot /`, `file PROGRAM`), loads Open MPI's DLL natively and dumps the queues:
the DLL's image set-up asks its types and symbols through the front end
(frontends/gdb/mqd_gdb/lookup.py). Then, with gdb's remote protocol traced, for every name the
DLL asked:

  - the front end's look-up again must send no packet to gdbserver;
  - gdb's own global look-up (gdb.lookup_type; the address `&NAME`) must give the same
    answer: the same address, or the same type (name, size, every field's offset). Where
    gdb's finds only an opaque declaration, the front end's must be the definition of that
    name (lookup.py's rule); where gdb's finds nothing, so must the front end's.

The dump must show what the rank posted. The packets gdb's own look-ups cost are printed:
that is the cost the front end avoids.

usage: e2e_lookup.py --build DIR --ompi-dll PATH --frontend PATH [--ops 10]
                     [--gdbserver PATH]
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from failure import Failure, verdict  # noqa: E402
from gdbserver import run_gdb  # noqa: E402
from mpi_job import check_against_manifests  # noqa: E402
from remote_rank import packets_by_phase, run  # noqa: E402

# Runs inside gdb, attached to rank 0 through gdbserver, with the front end loaded.
GDB_SCRIPT = r"""
import gdb, json, os, sys
cfg = json.loads(os.environ["MQD_LOOKUP_TEST"])
from mqd_gdb import lookup

def mark(what):
    sys.stderr.write("@@PHASE %s\n" % what)
    sys.stderr.flush()

def describe(t):
    if t is None:
        return None
    t = t.strip_typedefs()
    fields = [[f.name, f.bitpos] for f in t.fields() if hasattr(f, "bitpos")] \
        if t.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION) else []
    return {"name": str(t), "sizeof": t.sizeof, "fields": fields}

def gdb_type(name):
    try:
        return describe(gdb.lookup_type(name))
    except gdb.error:
        return None

def gdb_address(name):
    try:
        return int(gdb.parse_and_eval("(unsigned long long)&%s" % name))
    except gdb.error:
        return None

gdb.execute("mqd load " + cfg["dll"], to_string=True)
gdb.execute("mqd dump --json --output " + cfg["dump"])
found = lookup.of(gdb.selected_inferior().num)
asked = sorted(found.asked)
gdb.execute("set debug remote 1")
ours = {}
mark("ours")
for kind, name in asked:
    ours[kind + " " + name] = describe(found.type(name)) if kind == "type" \
        else found.address(name)
mark("gdb")
theirs = {}
for kind, name in asked:
    theirs[kind + " " + name] = gdb_type(name) if kind == "type" else gdb_address(name)
mark("end")
gdb.execute("set debug remote 0")
with open(cfg["out"], "w") as f:
    json.dump({"ours": ours, "theirs": theirs}, f)
"""


def compare(ours, theirs):
    """The names whose answers differ, by the rule in the module's docstring."""
    problems = []
    for key in sorted(theirs):
        mine, gdbs = ours.get(key), theirs[key]
        if key.startswith("type ") and gdbs is not None and gdbs["sizeof"] == 0:
            if mine is None or mine["name"] != gdbs["name"] or mine["sizeof"] == 0:
                problems.append("%s: gdb finds an opaque %s, the front end %s"
                                % (key, gdbs["name"], mine))
        elif mine != gdbs:
            problems.append("%s: the front end answers %s, gdb %s" % (key, mine, gdbs))
    return problems


def check(args, program, server, job, work):
    out, dump = os.path.join(work, "lookups.json"), os.path.join(work, "dump.json")
    env = dict(os.environ, MQD_LOOKUP_TEST=json.dumps(
        {"dll": args.ompi_dll, "out": out, "dump": dump}))
    log = run_gdb(server, program, "lookup.gdb.py", GDB_SCRIPT, [args.frontend], env, work)
    if not os.path.exists(out):
        raise Failure("gdb wrote no answers:\n%s" % log[-3000:])
    answers = json.load(open(out))
    packets = {phase: len(sent) for phase, sent in packets_by_phase(log).items()}
    problems = check_against_manifests([json.load(open(dump))], job.manifests[:1])
    if len(answers["theirs"]) < 10:
        problems.append("the DLL asked only %d names: %s" % (len(answers["theirs"]),
                                                             sorted(answers["theirs"])))
    if packets.get("ours", -1) != 0:
        problems.append("the front end's look-ups sent %s packets to gdbserver"
                        % packets.get("ours"))
    problems += compare(answers["ours"], answers["theirs"])
    print("%d names the DLL asked; remote packets: the front end's look-ups %s, gdb's own %s"
          % (len(answers["theirs"]), packets.get("ours"), packets.get("gdb")))
    return verdict(problems, work, "the front end's look-ups send nothing to gdbserver "
                   "and answer what gdb's own do") == 0


if __name__ == "__main__":
    sys.exit(run("mqd-e2e-lookup-", check))
