"""Hand-built whole-job snapshots (frontends/analysis/SNAPSHOT.md, version 1) for the tests:
JobBuilder makes them the way Open MPI 4.1's DLL and the gdb front end write them, with only
what a test cares about spelled out."""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.join(HERE, "..", "..", "frontends", "analysis")
sys.path.insert(0, ANALYSIS)

from mqd_analysis import analyse, parse_snapshot  # noqa: E402

OMPI_DLL = ("Open MPI message queue support for parallel debuggers 4.1.4 v4.1.4, package: "
            "Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022")
ANY_SOURCE = 4294967295  # as Open MPI 4.1's DLL shows MPI_ANY_SOURCE
LARGE = 1 << 20


def _queue(ops=None, rc=2):
    return {"rc": rc, "operations": list(ops or [])}


class JobBuilder:
    """A job of `size` ranks, every rank computing until told otherwise, each with
    MPI_COMM_WORLD (id 0), MPI_COMM_SELF (id 1) and MPI_COMM_NULL (id 2) as the DLL lists
    them; the unexpected queue answers "no information", as Open MPI 4.1's does."""

    def __init__(self, size, dll=OMPI_DLL):
        self.size, self.dll = size, dll
        self.ranks = {}
        for r in range(size):
            self.ranks[r] = {"rank": r, "host": "node%d" % (r // 16), "pid": 1000 + r,
                             "inferior": r + 1,
                             "state": {"mpi_call": None, "frames": ["main"]},
                             "communicators": []}
            self._add_comm(r, 0, "MPI_COMM_WORLD", list(range(size)))
            self._add_comm(r, 1, "MPI_COMM_SELF", [r])
            self.ranks[r]["communicators"].append(
                {"unique_id": 2, "name": "MPI_COMM_NULL", "local_rank": 4294967294, "size": 0,
                 "group": None, "queues": {"sends": _queue(), "receives": _queue(),
                                           "unexpected": _queue(rc=1)}})
        self.buffer = 0x7f0000001000

    def _add_comm(self, r, uid, name, group):
        self.ranks[r]["communicators"].append(
            {"unique_id": uid, "name": name, "local_rank": group.index(r), "size": len(group),
             "group": group, "queues": {"sends": _queue(), "receives": _queue(),
                                        "unexpected": _queue(rc=1)}})

    def comm(self, uid, name, group):
        """A communicator of the ranks in `group` (world ranks, in local-rank order)."""
        for r in group:
            self._add_comm(r, uid, name, group)
        return self

    def _comm_of(self, r, name):
        for c in self.ranks[r]["communicators"]:
            if c["name"] == name:
                return c
        raise KeyError("rank %d has no communicator %s" % (r, name))

    def call(self, r, mpi_call, frames=None):
        """Rank r is stopped in `mpi_call` (None: computing)."""
        self.ranks[r]["state"] = {"mpi_call": mpi_call,
                                  "frames": frames or ["opal_progress", "P" + mpi_call, "main"]
                                  if mpi_call else ["main"]}
        return self

    def op(self, r, queue, peer, tag, comm="MPI_COMM_WORLD", length=LARGE, status="pending",
           any_source=False, any_tag=False, extra=None):
        c = self._comm_of(r, comm)
        local = ANY_SOURCE if any_source else c["group"].index(peer)
        self.buffer += 0x1000
        c["queues"][queue]["operations"].append({
            "status": status, "desired_local_rank": local,
            "desired_global_rank": -1 if any_source else peer, "tag_wild": any_tag,
            "desired_tag": -1 if any_tag else tag, "desired_length": length,
            "system_buffer": False, "buffer": self.buffer, "actual_local_rank": local,
            "actual_global_rank": peer if peer is not None else -1,
            "actual_tag": 4294967295, "actual_length": 0,
            "extra_text": extra or ["Receive: 0x1" if queue == "receives" else "Send: 0x1",
                                    "Data: %d instances of MPI datatype" % length, "MPI_", "",
                                    ""]})
        return self

    def send(self, r, to, tag=1, **kw):
        return self.op(r, "sends", to, tag, **kw)

    def recv(self, r, frm, tag=1, **kw):
        return self.op(r, "receives", frm, tag, **kw)

    def recv_any(self, r, tag=1, **kw):
        return self.op(r, "receives", None, tag, any_source=True, **kw)

    def set(self, r, **fields):
        self.ranks[r].update(fields)
        return self

    def snapshot(self):
        return {"mqd_snapshot": 1, "dll": self.dll,
                "ranks": [self.ranks[r] for r in sorted(self.ranks)]}

    def analyse(self, earlier=None):
        return analyse(parse_snapshot(self.snapshot(), "test"),
                       earlier=parse_snapshot(earlier.snapshot(), "earlier") if earlier else None)

    def write(self, path):
        with open(path, "w") as f:
            json.dump(self.snapshot(), f)
        return str(path)


def kinds(analysis):
    return {f.kind for f in analysis.findings}


def findings(analysis, kind):
    return [f for f in analysis.findings if f.kind == kind]


def knots(analysis):
    return [k.ranks for k in analysis.knots]


def run_cli(*args, cwd=None):
    """python3 -m mqd_analysis ARGS: (exit status, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=ANALYSIS, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-m", "mqd_analysis"] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=cwd, timeout=300)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def dot():
    """Graphviz's dot: a test that needs it fails, with a sentence, when it is missing."""
    path = shutil.which("dot")
    if path is None:
        pytest.fail("Graphviz's dot is not installed (Debian: graphviz; tools/install-deps.sh "
                    "--test installs it)")
    return path
