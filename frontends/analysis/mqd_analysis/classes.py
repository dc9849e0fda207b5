"""Equivalence classes of ranks, STAT-style: ranks in the same state are one line, one JSON
entry and one node of the picture ("ranks 1-63: in MPI_Barrier on MPI_COMM_WORLD, waiting
for rank 0").

Two ranks are in the same class when they have the same status, MPI call and waits (the same
kind of operation on the same communicator with the same tag, waiting for the same ranks),
and belong to the same knot. Message lengths do not split a class. Ranks that stay alone are
then grouped by waits relative to themselves: a ring where rank r sends to r+1 is one class,
"send to rank+1".
"""
from collections import defaultdict
from dataclasses import dataclass
from typing import DefaultDict, Dict, Hashable, List, Optional, Tuple, Union

from .model import Model, RankModel, Status, Wait, WaitKind
from .rankset import ranges, ranks_text


@dataclass
class RankClass:
    ranks: List[int]
    description: str          # the state of every rank in it, in words
    status: Status
    call: Optional[str]
    knot: Optional[int]       # index of the knot its ranks are in, if any
    relative: bool            # the description's peers are relative ("rank+1")

    @property
    def label(self) -> str:
        return ranks_text(self.ranks)

    @property
    def ranges(self) -> str:
        return ranges(self.ranks)


def _wait_key(w: Wait, rank: int, world: int, relative: bool) -> Tuple[Hashable, ...]:
    targets: Union[str, Tuple[int, ...]]
    if w.any_source:
        targets = "any other member"
    elif relative and w.kind in (WaitKind.SEND, WaitKind.RECEIVE):
        targets = tuple(sorted((t - rank) % world for t in w.targets))
    else:
        targets = tuple(w.targets)
    return (w.kind, w.need, w.comm_key, None if w.any_tag else w.tag, w.any_tag,
            w.in_progress, w.collective, w.candidates, w.assumed, targets)


def _key(rm: RankModel, world: int, knot: Optional[int],
         relative: bool) -> Tuple[Hashable, ...]:
    if rm.status in (Status.COMPUTING, Status.FINISHED, Status.MISSING):
        return (rm.status, knot)
    if rm.status == Status.UNREADABLE:
        return (rm.status, rm.reason, knot)
    return (rm.status, rm.call, rm.combine, rm.uncertain, rm.reason, knot,
            tuple(_wait_key(w, rm.rank, world, relative) for w in rm.waits))


def group(model: Model, knot_of: Dict[int, int]) -> List[RankClass]:
    """Classes of every rank of the model, ordered by lowest rank. knot_of: rank -> knot
    index (ranks in no knot absent)."""
    absolute: DefaultDict[Tuple[Hashable, ...], List[RankModel]] = defaultdict(list)
    for rm in model.rank_list():
        absolute[_key(rm, model.world, knot_of.get(rm.rank), False)].append(rm)
    classes: List[Tuple[List[RankModel], bool]] = []
    alone: List[RankModel] = []
    for members in absolute.values():
        if len(members) > 1:
            classes.append((members, False))
        else:
            alone.append(members[0])
    relative: DefaultDict[Tuple[Hashable, ...], List[RankModel]] = defaultdict(list)
    for rm in alone:
        relative[_key(rm, model.world, knot_of.get(rm.rank), True)].append(rm)
    for members in relative.values():
        classes.append((members, len(members) > 1))
    out: List[RankClass] = []
    for members, is_relative in classes:
        first = members[0]
        out.append(RankClass(ranks=[m.rank for m in members],
                             description=first.describe(model.world, relative=is_relative,
                                                        lengths=len(members) == 1),
                             status=first.status, call=first.call,
                             knot=knot_of.get(first.rank), relative=is_relative))
    out.sort(key=lambda c: c.ranks[0])
    return out
