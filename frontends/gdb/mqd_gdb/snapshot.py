"""A whole-job snapshot (frontends/analysis/SNAPSHOT.md, version 1), what `mqd snapshot` writes
and `mqd graph` analyses: take(dumps) adds to the dumps of `mqd dump --all` (dump.py's dicts,
one per inferior with a process) where each rank is stopped (the frames of its main thread,
newest first, and its innermost MPI call as the analysis defines it:
mqd_analysis.snapshot.mpi_call_of), the PML Open MPI selected, and the host.

The snapshot is returned as it reads back from its file (JSON values only), so the analysis of
the snapshot in memory and of the saved file are the same. as_json() is the file's text.
"""
from __future__ import annotations

import json
import socket
from typing import Any, Callable, Dict, List, Optional, Tuple

import gdb

from . import analysis, job
from .execute import output
from .inferiors import SelectedInferior

VERSION = 1
MAX_FRAMES = 64  # frames kept per rank: a deeper stack is cut (its MPI call is near the top)


def _main_thread(inf: gdb.Inferior) -> Optional[gdb.InferiorThread]:
    """The thread whose id is the process's (the one that called main), else the first."""
    for t in inf.threads():
        if t.ptid[1] == inf.pid:
            return t
    threads = inf.threads()
    return min(threads, key=lambda t: t.num) if threads else None


def _frames() -> List[str]:
    """The selected thread's frame names, newest first ("??" for one gdb cannot name)."""
    names: List[str] = []
    try:
        frame = gdb.newest_frame()
        while frame is not None and len(names) < MAX_FRAMES:
            names.append(frame.name() or "??")
            frame = frame.older()
    except gdb.error:
        pass  # an unwinding failure ends the backtrace where it happened
    return names


def _pml() -> Optional[str]:
    """Open MPI's selected PML, from the component its mca_pml module's first function
    belongs to (mca_pml_ob1_add_procs, mca_pml_ucx_add_procs); None if not Open MPI."""
    try:
        text = output("info symbol *(void **)&mca_pml")
    except gdb.error:
        return None
    word = text.split()[0] if text.split() else ""
    if word.startswith("mca_pml_") and word.count("_") >= 3:
        return word.split("_")[2]
    return None


def _state(inf: gdb.Inferior, mpi_call_of: Callable[[List[str]], Optional[str]]
           ) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(state, pml) of the inferior: where its main thread is stopped, and its PML."""
    thread = _main_thread(inf)
    if thread is None:
        return None, None
    thread.switch()
    frames = _frames()
    return {"mpi_call": mpi_call_of(frames), "frames": frames}, _pml()


def take(dumps: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The whole-job snapshot of the processes `dumps` describes (each dump's "inferior" names
    its inferior; one that could not be read keeps its "error")."""
    mpi_call_of = analysis.load().snapshot.mpi_call_of
    by_inferior = {d["inferior"]: d for d in dumps}
    host = socket.gethostname()
    ranks: List[Dict[str, Any]] = []
    with SelectedInferior(gdb.selected_inferior().num):  # gives the user's thread and frame back
        for inf in gdb.inferiors():
            if inf.pid == 0 or inf.num not in by_inferior:
                continue
            d = dict(by_inferior[inf.num])
            state, pml = _state(inf, mpi_call_of)
            d.pop("dll", None)
            d.pop("host", None)  # in the snapshot's order, below
            attached = job.label(inf.num)
            d["host"] = attached.host if attached is not None and attached.host else host
            d["state"] = state
            if pml:
                d["pml"] = pml
            ranks.append(d)
    dll = next((d["dll"] for d in dumps if "dll" in d), None)
    snapshot: Dict[str, Any] = json.loads(as_json({"mqd_snapshot": VERSION, "dll": dll,
                                                   "ranks": ranks}))
    return snapshot


def as_json(snapshot: Dict[str, Any]) -> str:
    """The text of a snapshot file."""
    return json.dumps(snapshot, indent=1) + "\n"
