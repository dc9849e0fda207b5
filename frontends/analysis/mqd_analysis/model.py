"""The wait-for model of a job: each rank's status, and what each blocked rank waits for.

A rank's status comes from its stack (the innermost MPI call, see mpicalls) and its queues:

  computing       not in a blocking MPI call: it can still act (send, receive, reach a
                  collective)
  blocked         in a blocking call; its waits are known from the queues
  finalizing      in MPI_Finalize: it waits for every other rank to finalize too (Open MPI
                  4.1's fence) and will never send or receive again
  finished        the process has exited: it can never act
  blocked-unseen  in a blocking call, but the queues do not show what it waits for (a probe,
                  a request already completed, a PML the DLL cannot see)
  unreadable      the DLL could not read it (the error is kept)
  unknown         the snapshot has no stack for it (today's `mqd dump --json`)
  missing         in MPI_COMM_WORLD, but not in the snapshot

A blocked rank progresses when its waits are satisfied, combined by `combine`:
AND (MPI_Waitall, MPI_Sendrecv: every wait) or OR (MPI_Waitany, MPI_Waitsome, and a
single-request call whose request cannot be told among several pending ones: any wait).
Each Wait is satisfied when `need` of its targets can act: OR for point-to-point (a receive
from a specific source has one target; one from MPI_ANY_SOURCE every other member of the
communicator; a pending send its receiver), AND for a collective (every member that has not
reached it) and for MPI_Finalize (every rank that has not finalized).
"""
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import mpicalls, openmpi
from .rankset import ranks_text
from .snapshot import CommKey, Communicator, Operation, Rank, Snapshot
from .textenum import TextEnum


class Need(TextEnum):
    """How several things release a rank: all of them (AND) or any one (OR). Also the kind of
    a wait's edge in the picture and the JSON (RankModel.edge_kind)."""
    AND = "AND"
    OR = "OR"


class Status(TextEnum):
    """A rank's status (the module's docstring says what each means)."""
    COMPUTING = "computing"
    BLOCKED = "blocked"
    FINALIZING = "finalizing"
    FINISHED = "finished"
    BLOCKED_UNSEEN = "blocked-unseen"
    UNREADABLE = "unreadable"
    UNKNOWN = "unknown"
    MISSING = "missing"


# Statuses whose ranks can never act again, whatever happens: they release nobody.
NEVER_ACT = (Status.FINISHED, Status.FINALIZING)


class WaitKind(TextEnum):
    """What a Wait waits for: its send or receive to be matched, the rest of a collective's
    members, or every rank's MPI_Finalize."""
    SEND = "send"
    RECEIVE = "receive"
    COLLECTIVE = "collective"
    FINALIZE = "finalize"


@dataclass
class Wait:
    """One thing a blocked rank waits for, and the ranks that can give it."""
    kind: WaitKind
    need: Need                  # AND: every target must act; OR: any one is enough
    targets: Tuple[int, ...]    # MPI_COMM_WORLD ranks
    call: Optional[str]         # the MPI call the rank is in (None: no stack)
    comm: Optional[str] = None  # communicator's name
    comm_key: Optional[CommKey] = None
    tag: Optional[int] = None
    any_tag: bool = False
    any_source: bool = False
    length: Optional[int] = None
    length_in_bytes: bool = True  # what the DLL's lengths are (openmpi.lengths_in_bytes)
    peer: Optional[int] = None  # world rank named by the operation (send, receive)
    collective: Optional[str] = None   # for COLLECTIVE: which one
    comm_inferred: bool = False        # the collective's communicator is not shown by the DLL
    in_progress: bool = False          # matched or complete: satisfied whatever others do
    candidates: int = 1                # pending operations this wait stands for
    assumed: bool = False              # built on a guess (the rank's state is unknown)
    operations: List[Operation] = field(default_factory=list)   # the operations behind it

    def describe(self, rank: Optional[int] = None, world: Optional[int] = None,
                 lengths: bool = True) -> str:
        """What the wait is, in words; with `rank` and `world`, peers are written relative
        to the rank ("rank+1"), for grouping; lengths=False leaves message lengths out."""
        def who(t: Optional[int]) -> str:
            if rank is not None and world and t is not None:
                d = (t - rank) % world
                return "rank%+d" % (d if d <= world // 2 else d - world)
            return "rank %s" % t
        where = " on %s" % self.comm if self.comm else ""
        if self.kind in (WaitKind.SEND, WaitKind.RECEIVE):
            if self.candidates > 1:
                text = "one of %d pending %ss%s" % (self.candidates, self.kind, where)
            elif self.kind == WaitKind.SEND:
                text = "send to %s%s" % (who(self.peer), where)
            elif self.any_source:
                text = "receive from MPI_ANY_SOURCE%s" % where
            else:
                text = "receive from %s%s" % (who(self.peer), where)
            details = []
            if self.candidates == 1:
                coll = openmpi.collective_of_tag(self.tag)
                details.append("any tag" if self.any_tag else
                               "%s, tag %s" % (coll, self.tag) if coll else "tag %s" % self.tag)
                if self.length is not None and lengths:
                    details.append(length_text(self.length, self.length_in_bytes))
            if self.in_progress:
                details.append("matched, completing")
            return text + (" (%s)" % ", ".join(details) if details else "")
        if self.kind == WaitKind.COLLECTIVE:
            return "%s%s" % (self.collective, where)
        return "MPI_Finalize, which waits for every rank"

    def to_json(self) -> Dict[str, Any]:
        return {"kind": self.kind, "need": self.need, "targets": list(self.targets),
                "call": self.call, "communicator": self.comm, "tag": self.tag,
                "any_tag": self.any_tag, "any_source": self.any_source, "length": self.length,
                "peer": self.peer, "collective": self.collective,
                "communicator_inferred": self.comm_inferred, "in_progress": self.in_progress,
                "candidates": self.candidates, "assumed": self.assumed,
                "text": self.describe()}


@dataclass
class RankModel:
    rank: int
    status: Status
    call: Optional[str] = None          # innermost MPI call (normalised)
    combine: Need = Need.AND            # how `waits` combine
    waits: List[Wait] = field(default_factory=list)
    uncertain: bool = False             # its waits may be incomplete (partly read)
    reason: Optional[str] = None        # why blocked-unseen, unreadable, unknown, uncertain
    # (name, communicator's key or None) of each collective it is in
    collectives: List[Tuple[str, Optional[CommKey]]] = field(default_factory=list)
    entry: Optional[Rank] = None        # None when missing

    @property
    def blocked(self) -> bool:
        return self.status in (Status.BLOCKED, Status.FINALIZING)

    @property
    def communicators(self) -> List[Communicator]:
        """The rank's communicators as read ([]: none could be, or it is not in the
        snapshot)."""
        if self.entry is None or self.entry.communicators is None:
            return []
        return self.entry.communicators

    @property
    def pml(self) -> Optional[str]:
        """Open MPI's PML the rank uses, as the snapshot records it or its frames name it;
        None if unknown."""
        return _pml(self.entry) if self.entry is not None else None

    def targets(self) -> List[int]:
        seen: List[int] = []
        for w in self.waits:
            for t in w.targets:
                if t not in seen:
                    seen.append(t)
        return seen

    def edge_kind(self, wait: Wait, target: int) -> Need:
        """AND when the rank cannot progress without `target`, OR when another can do."""
        alone = self.combine == Need.AND or len(self.waits) == 1
        return Need.AND if alone and (wait.need == Need.AND or len(wait.targets) == 1) else Need.OR

    def describe(self, world: Optional[int] = None, relative: bool = False,
                 lengths: bool = True) -> str:
        """The rank's state in words: "in MPI_Send: send to rank 1 on MPI_COMM_WORLD (...)".
        With relative=True, peers are relative to the rank ("rank+1"), and with
        lengths=False message lengths are left out (both for grouping ranks)."""
        if self.status == Status.COMPUTING:
            return "computing" + (" (in %s, which does not block)" % self.call
                                  if self.call else "")
        if self.status == Status.FINISHED:
            return "finished"
        if self.status == Status.MISSING:
            return "not in the snapshot"
        if self.status == Status.UNREADABLE:
            return "could not be read: %s" % self.reason
        if self.status == Status.BLOCKED_UNSEEN:
            return "in %s, waiting for nothing the queues show (%s)" % (self.call, self.reason)
        if self.status == Status.FINALIZING:
            targets = self.waits[0].targets if self.waits else ()
            return "in MPI_Finalize, waiting for %s" % (ranks_text(targets) if targets else
                                                        "nobody")
        if self.status == Status.UNKNOWN and not self.waits:
            return "state unknown, no pending operation"
        if self.status == Status.BLOCKED and all(w.kind == WaitKind.COLLECTIVE for w in self.waits):
            w = self.waits[0]
            where = "in %s" % self.call if w.collective == self.call else \
                "in %s: %s" % (self.call, w.collective)
            on = " or ".join(x.comm for x in self.waits if x.comm)
            return "%s%s, %s" % (where, " on " + on if on else "",
                                 "waiting for " + ranks_text(self.targets()) if self.targets()
                                 else "reached by every member")
        parts: List[str] = []
        for w in self.waits:
            text = w.describe(self.rank if relative else None, world, lengths)
            if w.any_source and not w.in_progress:
                text += ": any other member can send it"
            parts.append(text)
        joiner = " and " if self.combine == Need.AND else " or "
        prefix = "state unknown; pending: " if self.status == Status.UNKNOWN else \
            "in %s: " % self.call
        return prefix + joiner.join(parts)


@dataclass
class Model:
    world: int                          # MPI_COMM_WORLD's size
    ranks: Dict[int, RankModel]         # world rank -> RankModel
    snapshot: Snapshot
    collectives_hidden: bool = False    # some collective's communicator was inferred
    open_mpi: bool = True               # the DLL is Open MPI's: its quirks apply
    lengths_in_bytes: bool = True       # the DLL's message lengths are bytes
    # rank -> operations shown complete that are in fact waited on (openmpi.py)
    shown_complete: Dict[int, int] = field(default_factory=dict)

    def is_pending(self, op: Operation) -> bool:
        """Whether an operation still waits for its peer, Open MPI's quirk undone."""
        return op.pending or (self.open_mpi and openmpi.shown_complete_but_waited_on(op))

    def rank_list(self) -> List[RankModel]:
        return [self.ranks[r] for r in sorted(self.ranks)]


# --------------------------------------------------------------------------------------------
# Building the model from a snapshot

def length_text(length: int, in_bytes: bool) -> str:
    """A message length in words: "N bytes" where the DLL's lengths are bytes, else
    "length N", as the dump itself says (openmpi.lengths_in_bytes)."""
    return "%d bytes" % length if in_bytes else "length %d" % length


def world_size(snapshot: Snapshot) -> int:
    """MPI_COMM_WORLD's size, from any rank that shows it, else the highest rank + 1."""
    for r in snapshot.ranks:
        for c in r.communicators or ():
            if c.name == "MPI_COMM_WORLD" and c.size > 0:
                return c.size
    known = [r.rank for r in snapshot.ranks if r.rank is not None]
    return max(known) + 1 if known else 0


def build(snapshot: Snapshot) -> Model:
    world = world_size(snapshot)
    entries = snapshot.by_rank()
    numbers = sorted(set(range(world)) | set(entries))
    world = max(world, numbers[-1] + 1) if numbers else world
    model = Model(world=world, ranks={}, snapshot=snapshot,
                  open_mpi=openmpi.is_open_mpi_dll(snapshot.dll),
                  lengths_in_bytes=openmpi.lengths_in_bytes(snapshot.dll))
    for n in numbers:
        model.ranks[n] = _classify(n, entries.get(n))
    for rm in model.ranks.values():
        _collect_collectives(rm)
    for rm in model.ranks.values():
        _derive_waits(rm, model)
    for rm in list(model.ranks.values()):
        for t in rm.targets():
            if t not in model.ranks:   # a peer beyond MPI_COMM_WORLD as the snapshot shows it
                model.ranks[t] = RankModel(t, Status.MISSING, reason="no entry in the snapshot")
    return model


def _pml(entry: Rank) -> Optional[str]:
    if entry.pml:
        return entry.pml
    return openmpi.pml_from_frames(entry.state.frames if entry.state else ())


def _classify(n: int, entry: Optional[Rank]) -> RankModel:
    """Status from what the snapshot says of the rank; waits come later."""
    if entry is None:
        return RankModel(n, Status.MISSING, reason="no entry in the snapshot")
    if entry.finished:
        return RankModel(n, Status.FINISHED, entry=entry)
    if not entry.readable:
        return RankModel(n, Status.UNREADABLE, reason=entry.error or "no queues", entry=entry)
    rm = RankModel(n, Status.UNKNOWN, entry=entry, uncertain=entry.partial,
                   reason=("only partly read: %s" % entry.error) if entry.partial else None)
    if entry.state is None:
        rm.reason = "the snapshot has no stack for it"
        return rm
    rm.call = entry.state.mpi_call
    if rm.call is None or not mpicalls.is_blocking(rm.call):
        rm.status = Status.COMPUTING
    elif rm.call == mpicalls.FINALIZE:
        rm.status = Status.FINALIZING
    elif openmpi.queues_visible(_pml(entry)) is False:
        rm.status = Status.BLOCKED_UNSEEN
        rm.reason = "Open MPI's %s PML: the DLL cannot see its requests" % _pml(entry)
    elif entry.warnings:  # the proxy saw its queues read wrong (a contradicted byte order)
        rm.status = Status.BLOCKED_UNSEEN
        rm.reason = "its queues cannot be trusted: %s" % entry.warnings[0]
    else:
        rm.status = Status.BLOCKED
    return rm


def _pending(entry: Rank) -> Iterator[Tuple[Communicator, Operation]]:
    """(communicator, operation) for every sent or received operation of a readable rank."""
    for c in entry.communicators or ():
        if c.is_null:
            continue
        for q in ("sends", "receives"):
            for op in c.queues[q].operations:
                yield c, op


def _collect_collectives(rm: RankModel) -> None:
    """The collectives the rank is in: from collective-tag operations (communicator known)
    and from a collective call on its stack (communicator known only if the snapshot says)."""
    e = rm.entry
    if e is None or e.communicators is None:  # not readable
        return
    found: List[Tuple[str, Optional[CommKey]]] = []
    for c, op in _pending(e):
        name = openmpi.collective_of_tag(op.tag)
        if name and not op.any_tag and (name, c.key) not in found:
            found.append((name, c.key))
    if rm.call is not None and rm.call in mpicalls.COLLECTIVES:
        key: Optional[CommKey] = None
        if e.state is not None and e.state.communicator is not None:
            keys = [c.key for c in e.communicators if c.unique_id == e.state.communicator]
            key = keys[0] if len(keys) == 1 else None
        elif len({k for _, k in found}) == 1:
            key = found[0][1]    # the collective's own traffic shows its communicator
        found = [(rm.call, key)] + [f for f in found if f[1] != key]
    rm.collectives = found


def _reached(other: RankModel, name: str, key: Optional[CommKey]) -> bool:
    for n, k in other.collectives:
        if n == name and (k is None or key is None or k == key):
            return True
    return False


def _op_wait(rank: int, comm: Communicator, op: Operation, call: str, pending: bool,
             in_bytes: bool, assumed: bool = False) -> Optional[Wait]:
    """The wait behind one point-to-point operation (`pending`: it still waits for its peer;
    `in_bytes`: the DLL's lengths are bytes), or None if it waits for nobody (a peer outside
    MPI_COMM_WORLD, MPI_PROC_NULL)."""
    kind = WaitKind.SEND if op.queue == "sends" else WaitKind.RECEIVE
    w = Wait(kind=kind, need=Need.OR, targets=(), call=call, comm=comm.name, comm_key=comm.key,
             tag=op.tag, any_tag=op.any_tag, any_source=op.any_source and kind == WaitKind.RECEIVE,
             length=op.length, length_in_bytes=in_bytes, assumed=assumed, operations=[op])
    if not pending:
        w.in_progress, w.need = True, Need.AND   # matched or complete: nothing to wait for
        w.peer = None if w.any_source else op.peer_world
        return w
    if w.any_source:
        if comm.group is None:
            return None
        w.targets = tuple(m for m in comm.group if m != rank)
    else:
        if op.peer_world < 0 or op.peer_world in openmpi.ANY_SOURCE_VALUES:
            return None
        w.peer = op.peer_world
        w.targets = (op.peer_world,)
    return w


def _merge(waits: List[Wait], call: str) -> Wait:
    """Several candidate waits of one direction as one OR wait (any of them)."""
    if len(waits) == 1:
        return waits[0]
    targets: List[int] = []
    for w in waits:
        for t in w.targets:
            if t not in targets:
                targets.append(t)
    first = waits[0]
    return Wait(kind=first.kind, need=Need.OR, targets=tuple(targets), call=call,
                comm=first.comm if all(w.comm == first.comm for w in waits) else None,
                in_progress=any(w.in_progress for w in waits), candidates=len(waits),
                assumed=first.assumed, operations=[o for w in waits for o in w.operations])


def _collective_waits(rm: RankModel, model: Model, name: str,
                      key: Optional[CommKey]) -> List[Wait]:
    """Waits of a rank in collective `name` on the communicator `key` (None: not shown, then
    one alternative per communicator of the rank that could hold it)."""
    comms = [c for c in rm.communicators if not c.is_null]
    if key is not None:
        candidates = [c for c in comms if c.key == key]
    else:
        candidates = []
        for c in comms:
            if c.size > 1 and c.group is not None and c.key not in [x.key for x in candidates]:
                candidates.append(c)
    alternatives: List[Wait] = []
    for c in candidates:
        if c.group is None:
            continue
        missing = tuple(m for m in c.group if m != rm.rank and
                        not (m in model.ranks and _reached(model.ranks[m], name, c.key)))
        alternatives.append(Wait(kind=WaitKind.COLLECTIVE, need=Need.AND, targets=missing,
                                 call=rm.call, comm=c.name, comm_key=c.key, collective=name,
                                 comm_inferred=key is None))
    # Alternatives waiting for the same ranks are one wait (e.g. MPI_COMM_WORLD and a dup of
    # it): keep the first, preferring MPI_COMM_WORLD's name.
    alternatives.sort(key=lambda w: w.comm != "MPI_COMM_WORLD")
    distinct: List[Wait] = []
    for w in alternatives:
        if all(set(w.targets) != set(d.targets) for d in distinct):
            distinct.append(w)
    if key is None and distinct:
        model.collectives_hidden = True
        for w in distinct:
            w.comm_inferred = True
    return distinct


def _derive_waits(rm: RankModel, model: Model) -> None:
    if rm.status == Status.FINALIZING:
        others = tuple(n for n, o in sorted(model.ranks.items())
                       if n != rm.rank and o.status not in NEVER_ACT)
        rm.waits = [Wait(kind=WaitKind.FINALIZE, need=Need.AND, targets=others,
                         call=mpicalls.FINALIZE)]
        return
    if rm.status not in (Status.BLOCKED, Status.UNKNOWN):
        return
    assumed = rm.status == Status.UNKNOWN
    e = rm.entry
    assert e is not None, rm  # blocked or unknown: in the snapshot
    p2p: Dict[str, List[Wait]] = {"sends": [], "receives": []}
    for c, op in _pending(e):
        if openmpi.collective_of_tag(op.tag) and not op.any_tag:
            continue   # the collective's own traffic: the collective waits below cover it
        pending = model.is_pending(op)
        if pending and not op.pending:
            model.shown_complete[rm.rank] = model.shown_complete.get(rm.rank, 0) + 1
        w = _op_wait(rm.rank, c, op, rm.call or "?", pending, model.lengths_in_bytes, assumed)
        if w is not None:
            p2p[op.queue].append(w)
    collective: List[Union[Wait, List[Wait]]] = []   # a list: any one of its waits
    for name, key in rm.collectives:
        alternatives = _collective_waits(rm, model, name, key)
        if len(alternatives) == 1:
            collective.append(alternatives[0])
        elif alternatives:
            collective.append(alternatives)   # OR over alternatives, see below
    call = rm.call
    if assumed:
        # No stack: the guess most favourable to progress. The rank waits for any one of its
        # pending operations, or computes when it has none.
        flat = p2p["sends"] + p2p["receives"] + [w for c in collective
                                                 for w in (c if isinstance(c, list) else [c])]
        rm.combine, rm.waits = Need.OR, flat
        return
    if call in mpicalls.COLLECTIVES:
        mine = [c for c in collective if (c[0] if isinstance(c, list) else c).collective == call]
        first = mine[0] if mine else None
        if isinstance(first, list):
            rm.combine, rm.waits = Need.OR, first
        else:
            rm.combine, rm.waits = Need.AND, [first] if first is not None else []
        if not rm.waits:
            rm.status = Status.BLOCKED_UNSEEN
            rm.reason = "no communicator of it can hold the collective"
        return
    nonblocking_collectives = [w for c in collective for w in (c if isinstance(c, list) else [c])]
    if call in mpicalls.PROBES:
        rm.status, rm.reason = Status.BLOCKED_UNSEEN, "a probe posts nothing the queues show"
        return
    if call in mpicalls.RECEIVES:
        rm.combine, rm.waits = Need.OR, p2p["receives"]
    elif call in mpicalls.SENDS:
        rm.combine, rm.waits = Need.OR, p2p["sends"]
    elif call in mpicalls.WAIT_ONE:
        rm.combine, rm.waits = Need.OR, p2p["sends"] + p2p["receives"] + nonblocking_collectives
    elif call in mpicalls.WAIT_ANY:
        rm.combine, rm.waits = Need.OR, p2p["sends"] + p2p["receives"] + nonblocking_collectives
    elif call in mpicalls.WAIT_ALL:
        rm.combine, rm.waits = Need.AND, p2p["sends"] + p2p["receives"] + nonblocking_collectives
    elif call in mpicalls.SEND_RECEIVE:
        parts = [_merge(p2p[q], call) for q in ("receives", "sends") if p2p[q]]
        rm.combine, rm.waits = Need.AND, parts
    if not rm.waits:
        rm.status = Status.BLOCKED_UNSEEN
        rm.reason = "its queues show no pending operation"
    if e.partial:
        rm.uncertain = True
