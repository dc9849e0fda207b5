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
a run produces, from the command line or gdb) and __main__ (the command line). The words they
share (a rank's status, a wait's kind, a verdict) are enumerations (textenum.TextEnum: model's
Status, Need and WaitKind, analysis's Verdict, progress's Motion, snapshot's
OperationStatus), each member its word in every output.
"""
from .analysis import Analysis, Verdict, analyse
from .snapshot import SnapshotError
from .snapshot import load as load_snapshot
from .snapshot import parse as parse_snapshot

# The verdicts (Analysis.verdict) by the names they had before Verdict.
DEADLOCK, UNKNOWN, NO_DEADLOCK = Verdict.DEADLOCK, Verdict.UNKNOWN, Verdict.NO_DEADLOCK

__all__ = ["Analysis", "analyse", "SnapshotError", "load_snapshot", "parse_snapshot",
           "Verdict", "DEADLOCK", "NO_DEADLOCK", "UNKNOWN"]
