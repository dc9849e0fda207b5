# snapshot_gdb.py: a whole-job snapshot (frontends/analysis/SNAPSHOT.md, version 1) from gdb,
# for the hang suite. Source it after frontends/gdb/mqd.py, with every rank attached (one inferior
# each) and an MQD DLL loaded (`mqd load ...`), then:
#
#   deadlock-snapshot OUT.json [--analysis ANALYSIS.json]
#
# It takes every rank's queues from `mqd dump --all --json`, adds where each rank is stopped
# (the frames of its main thread, newest first, and the innermost MPI call, as the analysis
# defines it: mqd_analysis.snapshot.mpi_call_of) and the PML Open
# MPI selected, and writes the snapshot. With --analysis it also runs the analysis here, in
# gdb's own Python, and writes its JSON.
#
# A stand-in until the redesigned front end has its own `mqd dump --all --json` with stacks
# and `mqd graph`: keep it small.
import json
import os
import socket
import sys
import tempfile

import gdb

_ANALYSIS = os.path.join(os.path.dirname(os.path.abspath(sys._getframe().f_code.co_filename)),
                         "..", "..", "frontends", "analysis")
if _ANALYSIS not in sys.path:
    sys.path.insert(0, _ANALYSIS)
from mqd_analysis import analyse, parse_snapshot, render_json  # noqa: E402
from mqd_analysis.snapshot import mpi_call_of  # noqa: E402

MAX_FRAMES = 64


def _main_thread(inf):
    for t in inf.threads():
        if t.ptid[1] == inf.pid:
            return t
    threads = inf.threads()
    return min(threads, key=lambda t: t.num) if threads else None


def _frames():
    names = []
    try:
        frame = gdb.newest_frame()
        while frame is not None and len(names) < MAX_FRAMES:
            names.append(frame.name() or "??")
            frame = frame.older()
    except gdb.error:
        pass  # an unwinding failure ends the backtrace where it happened
    return names


def _pml():
    """Open MPI's selected PML, from the component its mca_pml module's first function
    belongs to (mca_pml_ob1_add_procs, mca_pml_ucx_add_procs); None if not Open MPI."""
    try:
        text = gdb.execute("info symbol *(void **)&mca_pml", to_string=True)
    except gdb.error:
        return None
    word = text.split()[0] if text.split() else ""
    if word.startswith("mca_pml_") and word.count("_") >= 3:
        return word.split("_")[2]
    return None


def _state(inf):
    thread = _main_thread(inf)
    if thread is None:
        return None, None
    thread.switch()
    frames = _frames()
    return {"mpi_call": mpi_call_of(frames), "frames": frames}, _pml()


class DeadlockSnapshot(gdb.Command):
    """Write a whole-job snapshot: deadlock-snapshot OUT.json [--analysis ANALYSIS.json]"""

    def __init__(self):
        super().__init__("deadlock-snapshot", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--analysis"):
            raise gdb.GdbError("usage: deadlock-snapshot OUT.json [--analysis ANALYSIS.json]")
        fd, dump_path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            gdb.execute("mqd dump --all --json --output %s" % dump_path)
            with open(dump_path) as f:
                dumps = json.load(f)
        finally:
            os.unlink(dump_path)
        by_inferior = {d["inferior"]: d for d in dumps}
        previous = gdb.selected_thread()
        ranks = []
        for inf in gdb.inferiors():
            if inf.pid == 0 or inf.num not in by_inferior:
                continue
            d = dict(by_inferior[inf.num])
            state, pml = _state(inf)
            d.pop("dll", None)
            d["host"] = socket.gethostname()
            d["state"] = state
            if pml:
                d["pml"] = pml
            ranks.append(d)
        if previous is not None and previous.is_valid():
            previous.switch()
        dll = next((d["dll"] for d in dumps if "dll" in d), None)
        snapshot = {"mqd_snapshot": 1, "dll": dll, "ranks": ranks}
        with open(argv[0], "w") as f:
            json.dump(snapshot, f, indent=1)
            f.write("\n")
        if len(argv) == 3:
            analysis = analyse(parse_snapshot(snapshot, argv[0]))
            with open(argv[2], "w") as f:
                f.write(render_json.render(analysis))
        gdb.write("deadlock-snapshot: %d ranks written to %s\n" % (len(ranks), argv[0]))


DeadlockSnapshot()
