"""mqd_analysis: who waits on whom in an MPI job, from a whole-job snapshot of its message
queues and stacks. Pure Python (no gdb): the gdb front end's `mqd graph` and the
`mqd-proxy graph` command both use it.

    from mqd_analysis import load_snapshot, analyse, render_text
    a = analyse(load_snapshot("job.json"))
    print(render_text.render(a))

Modules, one concept each: snapshot (the input format, ../SNAPSHOT.md), mpicalls and openmpi
(facts about MPI and Open MPI), model (rank states and waits), knots (the deadlock), explain
(its causes), classes (grouping ranks), progress (two snapshots), analysis (all of it),
render_text, render_json, render_dot, render_html, outputs (the files and the printed verdict
a run produces, from the command line or gdb) and __main__ (the command line).
"""
from .analysis import DEADLOCK, NO_DEADLOCK, UNKNOWN, Analysis, analyse
from .snapshot import SnapshotError
from .snapshot import load as load_snapshot
from .snapshot import parse as parse_snapshot

__all__ = ["Analysis", "analyse", "SnapshotError", "load_snapshot", "parse_snapshot",
           "DEADLOCK", "NO_DEADLOCK", "UNKNOWN"]
