"""The analysis as text for a terminal: the verdict, the explanation of each knot, the ranks
grouped into classes, the progress between two snapshots, and notes on what the snapshot
cannot show."""
from .analysis import Analysis
from .progress import Motion
from .rankset import ranks_text

NOTE_KINDS = ("pml-invisible", "queues-empty", "unexpected-unknown", "unreadable", "partial",
              "missing", "state-unknown", "waits-unseen", "collective-communicator-inferred",
              "shown-complete")


def render(analysis: Analysis) -> str:
    a = analysis
    lines = [a.headline()]
    for i, k in enumerate(a.knots):
        lines.append("")
        title = "Knot %d" % (i + 1) if a.deadlock else "Possible knot %d" % (i + 1)
        lines.append("%s: %s" % (title, ranks_text(k.ranks)))
        for f in a.findings:
            if f.knot == i:
                lines.append("  - [%s] %s" % (f.kind, f.text))
    general = [f for f in a.findings if f.knot is None and f.kind not in NOTE_KINDS]
    if general:
        lines.append("")
        for f in general:
            lines.append("- [%s] %s" % (f.kind, f.text))
    lines.append("")
    lines.append("Ranks (%d, in %d class%s):" % (len(a.model.ranks), len(a.classes),
                                                "" if len(a.classes) == 1 else "es"))
    for c in a.classes:
        mark = "  [knot %d]" % (c.knot + 1) if c.knot is not None else ""
        lines.append("  %s: %s%s" % (c.label, c.description, mark))
    if a.progress is not None:
        lines.append("")
        lines.append("Progress since the earlier snapshot:")
        for motion, words in ((Motion.STUCK, "stuck (nothing changed)"),
                              (Motion.MOVED, "moved (slow, not dead)"),
                              (Motion.RUNNING, "running (computing)"),
                              (Motion.FINISHED, "finished"),
                              (Motion.UNKNOWN, "unknown")):
            ranks = a.progress.of(motion)
            if ranks:
                lines.append("  %s: %s" % (words, ranks_text(ranks)))
        for r, text in sorted(a.progress.changes.items()):
            lines.append("    rank %d: %s" % (r, text))
    notes = [f for f in a.findings if f.kind in NOTE_KINDS]
    if notes:
        lines.append("")
        lines.append("Notes:")
        for f in notes:
            lines.append("  - [%s] %s" % (f.kind, f.text))
    return "\n".join(lines) + "\n"
