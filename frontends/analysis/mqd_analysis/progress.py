"""Progress between two snapshots of the same job, taken with the job resumed in between:
"resume, interrupt, look again", done once and compared rank by rank.

A rank is
  stuck     when its MPI call, the stack from that call outwards, and its queues (every
            operation: communicator, direction, status, peer, tag, length, buffer) are the
            same in both, and it is not computing in the later one;
  moved     when any of these changed: it is slow, not dead;
  running   when it is computing in the later snapshot (it was not waiting then);
  finished  when it has finished in the later one;
  unknown   when either snapshot could not read it.
A rank that repeats the very same operation on the same buffer in a loop looks stuck: the
comparison sees states, not counts.
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import mpicalls
from .snapshot import Rank, Snapshot, SnapshotError, State
from .textenum import TextEnum


class Motion(TextEnum):
    """How a rank moved from one snapshot to the next (the module's docstring says what each
    means), in the order reports list them."""
    STUCK = "stuck"
    MOVED = "moved"
    RUNNING = "running"
    FINISHED = "finished"
    UNKNOWN = "unknown"


@dataclass
class Progress:
    ranks: Dict[int, Motion] = field(default_factory=dict)
    changes: Dict[int, str] = field(default_factory=dict)   # rank -> what changed, for MOVED

    def of(self, motion: Motion) -> List[int]:
        """The ranks that moved so, in order."""
        return sorted(r for r, v in self.ranks.items() if v == motion)

    def to_json(self) -> Dict[str, object]:
        return {motion: self.of(motion) for motion in Motion} | \
            {"changes": {str(r): text for r, text in sorted(self.changes.items())}}


def _stack_from_call(state: Optional[State]) -> Optional[Tuple[str, ...]]:
    """The frames from the innermost MPI call outwards (what is inside the MPI library varies
    from one interruption to the next)."""
    if state is None:
        return None
    for i, f in enumerate(state.frames):
        if mpicalls.normalise(f):
            return tuple(state.frames[i:])
    return tuple(state.frames[-8:])


def _operations(entry: Rank) -> List[tuple]:
    ops = []
    for c in entry.communicators or ():
        for q in ("sends", "receives", "unexpected"):
            for op in c.queues[q].operations:
                ops.append((c.unique_id, c.name, q, str(op.status), op.peer_local, op.tag,
                            op.any_tag, op.length, op.raw.get("buffer")))
    return sorted(ops, key=repr)


def compare(earlier: Snapshot, later: Snapshot) -> Progress:
    """Progress of every rank from `earlier` to `later`; SnapshotError if they are not of the
    same job (no rank with the same pid in both)."""
    before, after = earlier.by_rank(), later.by_rank()
    common = [r for r in after if r in before]
    if common and not any(before[r].pid == after[r].pid for r in common
                          if before[r].pid is not None):
        raise SnapshotError("the two snapshots are not of the same job: no rank has the same "
                            "process id in both")
    progress = Progress()
    for r in sorted(set(before) | set(after)):
        a, b = before.get(r), after.get(r)
        if a is None or b is None or not a.readable and not a.finished or \
                not b.readable and not b.finished:
            progress.ranks[r] = Motion.UNKNOWN
            continue
        if b.finished:
            progress.ranks[r] = Motion.FINISHED
            continue
        if a.pid is not None and b.pid is not None and a.pid != b.pid:
            progress.ranks[r] = Motion.UNKNOWN
            progress.changes[r] = "a different process (pid %d, then %d)" % (a.pid, b.pid)
            continue
        call_a = a.state.mpi_call if a.state else None
        call_b = b.state.mpi_call if b.state else None
        if b.state is not None and (call_b is None or not mpicalls.is_blocking(call_b)):
            progress.ranks[r] = Motion.RUNNING
            continue
        changed = []
        if (a.state is None) != (b.state is None) or call_a != call_b:
            changed.append("%s, then %s" % (call_a or "computing", call_b or "computing"))
        elif _stack_from_call(a.state) != _stack_from_call(b.state):
            changed.append("called from elsewhere in %s" % call_b)
        ops_a, ops_b = _operations(a), _operations(b)
        if ops_a != ops_b:
            gone = len([o for o in ops_a if o not in ops_b])
            new = len([o for o in ops_b if o not in ops_a])
            changed.append("queues changed (%d operations gone, %d new)" % (gone, new))
        if changed:
            progress.ranks[r] = Motion.MOVED
            progress.changes[r] = "; ".join(changed)
        else:
            progress.ranks[r] = Motion.STUCK
    return progress
