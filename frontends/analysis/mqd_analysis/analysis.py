"""The analysis of one snapshot (and, optionally, its progress since an earlier one): the
verdict, the knots, the explanations and the classes, ready for any renderer.

Verdicts:
  deadlock      some blocked ranks can never be released, whatever the ranks the snapshot
                cannot tell about do (knots: the certain ones)
  unknown       no certain deadlock, but one if the ranks the snapshot cannot tell about
                (unreadable, without a stack, blocked on nothing visible) cannot act
                (knots: the possible ones)
  no deadlock   every blocked rank can still be released
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import classes as classes_mod
from . import explain, knots as knots_mod, model as model_mod
from . import progress as progress_mod
from .model import Status
from .progress import Motion
from .snapshot import Snapshot
from .rankset import ranks_text
from .textenum import TextEnum


class Verdict(TextEnum):
    """The verdict on a snapshot (the module's docstring says what each means)."""
    DEADLOCK = "deadlock"
    UNKNOWN = "unknown"
    NO_DEADLOCK = "no deadlock"


@dataclass
class Analysis:
    snapshot: Snapshot
    model: model_mod.Model
    evaluation: knots_mod.Evaluation       # the pass the knots come from
    verdict: Verdict
    knots: List[knots_mod.Knot]            # certain for DEADLOCK, possible for UNKNOWN
    findings: List[explain.Finding]
    classes: List[classes_mod.RankClass]
    progress: Optional[progress_mod.Progress] = None
    knot_of: Dict[int, int] = field(default_factory=dict)    # rank -> knot index

    @property
    def deadlock(self) -> bool:
        return self.verdict == Verdict.DEADLOCK

    def headline(self) -> str:
        """The verdict in one line."""
        if self.verdict == Verdict.DEADLOCK:
            parts = "; ".join(ranks_text(k.ranks) for k in self.knots)
            return "DEADLOCK: %s (%d knot%s)" % (parts, len(self.knots),
                                                "" if len(self.knots) == 1 else "s")
        if self.verdict == Verdict.UNKNOWN:
            parts = "; ".join(ranks_text(k.ranks) for k in self.knots)
            return "POSSIBLE DEADLOCK: %s, if the ranks the snapshot cannot tell about " \
                   "cannot act" % parts
        blocked = [rm.rank for rm in self.model.rank_list() if rm.blocked]
        unsure = [rm.rank for rm in self.model.rank_list() if rm.status in (
            Status.UNKNOWN, Status.UNREADABLE, Status.MISSING, Status.BLOCKED_UNSEEN)]
        if unsure:
            return "NO DEADLOCK FOUND: the snapshot cannot tell what %s %s doing" % (
                ranks_text(unsure), "is" if len(unsure) == 1 else "are")
        if not blocked:
            return "NO DEADLOCK: no rank is blocked in MPI"
        return "NO DEADLOCK: every blocked rank can still be released (%s)" % \
            ranks_text(blocked)


def analyse(snapshot: Snapshot, earlier: Optional[Snapshot] = None) -> Analysis:
    """Analyses `snapshot`; with `earlier` (an earlier snapshot of the same job), also the
    progress from it. Raises snapshot.SnapshotError if the two are not of the same job."""
    model = model_mod.build(snapshot)
    ev = knots_mod.evaluate(model, pessimistic=False)
    found = knots_mod.knots(model, ev)
    verdict = Verdict.DEADLOCK if found else Verdict.NO_DEADLOCK
    if not found:
        pessimistic = knots_mod.evaluate(model, pessimistic=True)
        possible = knots_mod.knots(model, pessimistic)
        if possible:
            verdict, found, ev = Verdict.UNKNOWN, possible, pessimistic
    knot_of = {n: i for i, k in enumerate(found) for n in k.ranks}
    findings: List[explain.Finding] = []
    for i, k in enumerate(found):
        findings += explain.for_knot(model, ev, k, i)
    if verdict == Verdict.UNKNOWN:
        findings.append(explain.Finding(
            "possible-deadlock",
            "no deadlock is certain, but %s would be deadlocked if the ranks the snapshot "
            "cannot tell about (see below) cannot act." % "; ".join(
                ranks_text(k.ranks) for k in found), sorted(knot_of)))
    if verdict == Verdict.NO_DEADLOCK:
        findings += explain.broken_cycles(model, ev)
    findings += explain.about_snapshot(model)
    progress = None
    if earlier is not None:
        progress = progress_mod.compare(earlier, snapshot)
        moved = [r for r in progress.of(Motion.MOVED) if r in knot_of]
        if moved:
            findings.append(explain.Finding(
                "knot-moved",
                "%s %s in a knot, yet moved between the two snapshots: the later one may have "
                "caught %s in passing; take another." % (
                    ranks_text(moved), "is" if len(moved) == 1 else "are",
                    "it" if len(moved) == 1 else "them"), moved))
    return Analysis(snapshot=snapshot, model=model, evaluation=ev, verdict=verdict,
                    knots=found, findings=findings,
                    classes=classes_mod.group(model, knot_of), progress=progress,
                    knot_of=knot_of)
