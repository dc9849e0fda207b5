"""Deadlock: blocked ranks that nothing outside their set can release.

"Can progress" is a least fixpoint over the model (model.py): a computing rank can; a finished
rank cannot, and neither releases anyone; a blocked rank can once its waits are satisfied (all
of them for AND, one for OR), a wait being satisfied when all (AND) or any (OR) of its
targets can progress and can still act (a rank in MPI_Finalize never sends again, even when
it may itself finish). Blocked ranks start as "cannot"; the fixpoint grows the "can" set until
nothing changes. The ranks left blocked are deadlocked: nothing can ever release them. A cycle
of waits is therefore not enough: an OR wait with one target that can progress breaks it.

What the snapshot cannot tell (a rank unreadable, without a stack, or blocked on nothing the
queues show) is evaluated twice: optimistically (it can act) and pessimistically (it cannot).
The optimistic deadlock is certain; ranks deadlocked only in the pessimistic pass are
possibly deadlocked.

The deadlocked ranks are then split into knots: the weakly connected parts of the graph of
blocking waits (a rank to each target that cannot release it). Each knot has cores (its sink
strongly connected components: a cycle, or a rank waiting for a finished one) and dependents
(ranks blocked only because they wait for a core).
"""
from collections import defaultdict
from dataclasses import dataclass, field
from typing import DefaultDict, Dict, Iterator, List, Set, Tuple

from .model import NEVER_ACT, Model, Need, RankModel, Status, Wait

# A wait that keeps a rank blocked: (the rank, the target it waits for, the wait).
Edge = Tuple[int, int, Wait]


@dataclass
class Evaluation:
    pessimistic: bool
    can: Dict[int, bool]      # rank -> it can progress
    satisfied: Dict[Tuple[int, int], bool]   # (rank, index of wait) -> satisfied
    deadlocked: Set[int]      # blocked ranks that cannot progress

    def releases(self, model: Model, n: int) -> bool:
        return self.can.get(n, False) and model.ranks[n].status not in NEVER_ACT


@dataclass
class Knot:
    ranks: List[int]
    cores: List[List[int]]        # sink strongly connected components
    dependents: List[int]         # ranks of the knot outside every core
    edges: List[Edge] = field(default_factory=list)   # the blocking waits inside it


def _evaluated(model: Model, rm: RankModel, pessimistic: bool) -> bool:
    """Whether the rank's progress is decided by its waits in this pass (else it is given)."""
    if rm.status in (Status.BLOCKED, Status.FINALIZING):
        return pessimistic or not rm.uncertain
    return rm.status == Status.UNKNOWN and pessimistic and bool(rm.waits)


def _given(rm: RankModel, pessimistic: bool) -> bool:
    """The fixed answer for a rank not decided by its waits."""
    if rm.status == Status.COMPUTING:
        return True
    if rm.status == Status.FINISHED:
        return False
    if rm.status == Status.UNKNOWN and not rm.waits:
        return True     # no stack, nothing pending: assumed computing in both passes
    return not pessimistic   # uncertain: can act optimistically, cannot pessimistically


def evaluate(model: Model, pessimistic: bool = False) -> Evaluation:
    can: Dict[int, bool] = {}
    satisfied: Dict[Tuple[int, int], bool] = {}
    counts: Dict[Tuple[int, int], int] = {}
    done: DefaultDict[int, int] = defaultdict(int)
    waiting_on: DefaultDict[int, List[Tuple[int, int]]] = defaultdict(list)  # target -> waits
    evaluated: Set[int] = set()
    for n, rm in model.ranks.items():
        if not _evaluated(model, rm, pessimistic):
            can[n] = _given(rm, pessimistic)
            continue
        evaluated.add(n)
        can[n] = False
        for i, w in enumerate(rm.waits):
            counts[(n, i)] = 0
            satisfied[(n, i)] = w.need == Need.AND and not w.targets   # nobody needed
            done[n] += satisfied[(n, i)]
            for t in w.targets:
                waiting_on[t].append((n, i))

    def progresses(n: int) -> bool:
        rm = model.ranks[n]
        if rm.combine == Need.AND:
            return bool(rm.waits) and done[n] == len(rm.waits)
        return done[n] >= 1

    work = [n for n in model.ranks if can[n] and model.ranks[n].status not in NEVER_ACT]
    for n in evaluated:
        if progresses(n):
            can[n] = True
            if model.ranks[n].status not in NEVER_ACT:
                work.append(n)
    while work:
        t = work.pop()
        for n, i in waiting_on[t]:
            if can[n] or satisfied[(n, i)]:
                continue
            w = model.ranks[n].waits[i]
            counts[(n, i)] += 1
            if w.need == Need.OR or counts[(n, i)] == len(w.targets):
                satisfied[(n, i)] = True
                done[n] += 1
                if progresses(n):
                    can[n] = True
                    if model.ranks[n].status not in NEVER_ACT:
                        work.append(n)
    deadlocked = {n for n in evaluated if not can[n]}
    if pessimistic:
        deadlocked |= {n for n, rm in model.ranks.items()
                       if rm.status == Status.BLOCKED_UNSEEN and not can[n]}
    return Evaluation(pessimistic, can, satisfied, deadlocked)


def blocking_edges(model: Model, ev: Evaluation, n: int) -> Iterator[Edge]:
    """(rank, target, wait) for each target that keeps rank n blocked."""
    rm = model.ranks[n]
    for i, w in enumerate(rm.waits):
        if ev.satisfied.get((n, i)):
            continue
        for t in w.targets:
            if not ev.releases(model, t):
                yield n, t, w


def knots(model: Model, ev: Evaluation) -> List[Knot]:
    """The deadlocked ranks of an evaluation, split into knots (sorted by lowest rank)."""
    dead = ev.deadlocked
    edges = {n: [e for e in blocking_edges(model, ev, n)] for n in dead}
    inner = {n: sorted({t for _, t, _ in edges[n] if t in dead}) for n in dead}
    # Weakly connected parts.
    neighbours: DefaultDict[int, Set[int]] = defaultdict(set)
    for n in dead:
        for t in inner[n]:
            neighbours[n].add(t)
            neighbours[t].add(n)
    parts, seen = [], set()
    for n in sorted(dead):
        if n in seen:
            continue
        stack, part = [n], []
        seen.add(n)
        while stack:
            m = stack.pop()
            part.append(m)
            for x in neighbours[m]:
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
        parts.append(sorted(part))
    # Ranks blocked on nothing the queues show (possibly deadlocked, pessimistic pass) have no
    # edges: they are one part together, not one knot each.
    unseen = [p for p in parts if len(p) == 1 and not edges[p[0]] and
              model.ranks[p[0]].status == Status.BLOCKED_UNSEEN]
    if len(unseen) > 1:
        parts = [p for p in parts if p not in unseen] + [sorted(p[0] for p in unseen)]
        parts.sort()
    components = strongly_connected(sorted(dead), inner)
    where = {n: i for i, comp in enumerate(components) for n in comp}
    result: List[Knot] = []
    for part in parts:
        cores: List[List[int]] = []
        for comp in components:
            if comp[0] not in part:
                continue
            if all(where[t] == where[comp[0]] for n in comp for t in inner[n]):
                cores.append(sorted(comp))
        cores.sort()
        in_core = {n for c in cores for n in c}
        result.append(Knot(ranks=part, cores=cores,
                           dependents=[n for n in part if n not in in_core],
                           edges=[e for n in part for e in edges[n]]))
    return result


def strongly_connected(nodes: List[int], succ: Dict[int, List[int]]) -> List[List[int]]:
    """Tarjan's algorithm, iterative (a 1024-rank ring would overflow Python's stack)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            recurse = False
            for j in range(i, len(succ[v])):
                w = succ[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp: List[int] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def cycle_in(core: List[int], model: Model, ev: Evaluation) -> List[Edge]:
    """A cycle of blocking waits through a core of more than one rank (or a rank waiting for
    itself), as [(rank, target, wait)], starting at the core's lowest rank; [] if none."""
    members = set(core)
    start = core[0]
    # Breadth-first from start back to start, inside the core.
    previous: Dict[int, Tuple[int, Wait]] = {}
    frontier = [start]
    seen: Set[int] = set()
    while frontier:
        nxt: List[int] = []
        for n in frontier:
            for _, t, w in blocking_edges(model, ev, n):
                if t not in members:
                    continue
                if t == start:
                    path = [(n, t, w)]
                    while n != start:
                        p, pw = previous[n]
                        path.append((p, n, pw))
                        n = p
                    return list(reversed(path))
                if t not in seen:
                    seen.add(t)
                    previous[t] = (n, w)
                    nxt.append(t)
        frontier = nxt
    return []

