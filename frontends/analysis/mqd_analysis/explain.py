"""Explanations: the likely cause of each knot, why a cycle is not a deadlock, and what the
snapshot cannot show.

Each Finding has a stable `kind` (the keyword tests and tools match), the ranks it is about,
the knot it explains (an index, or None for the whole job) and a sentence for people.

Kinds, for a knot:
  send-cycle               ranks wait on each other in a cycle of pending (rendezvous) sends
  receive-cycle            ... in a cycle of receives
  wait-cycle               ... in a cycle mixing sends, receives and collectives
  tag-mismatch             a pending send and the receive waiting for it differ in tag only
  communicator-mismatch    the same pair sends and receives on two different communicators
  collective-not-reached   ranks in a collective (or MPI_Finalize) wait for members that
                           never reached it
  collective-mismatch      members of one communicator are in different collectives
  waits-for-finished       a rank waits for one that has finished or is in MPI_Finalize
  wildcard-blocked         a receive from MPI_ANY_SOURCE that no member is left to satisfy
  blocked-elsewhere        a rank waits for one that is blocked in something else
  blocked-behind           ranks outside the knot's cycle, blocked because they wait on it
For a job without a deadlock:
  cycle-broken             ranks wait on each other, but an OR wait (MPI_ANY_SOURCE,
                           MPI_Waitany, ...) lets a rank that can act release them
About the snapshot (knot None):
  pml-invisible            Open MPI's PML is not one the DLL can see (ucx): queues are empty
  queues-empty             every queue is empty while ranks are blocked in point-to-point
                           calls: the DLL does not see the job's requests
  unexpected-unknown       the DLL gives no information on unexpected messages
  unreadable               a rank the DLL could not read, with the error
  proxy-warning            what the proxy warned of at a rank's set-up (a byte order that
                           contradicts the target's memory: its queues are wrong or empty)
  partial                  a rank only partly read
  missing                  ranks of MPI_COMM_WORLD absent from the snapshot
  state-unknown            ranks without a stack (today's `mqd dump --json`)
  waits-unseen             ranks blocked on nothing the queues show (a probe, ...)
  shown-complete           Open MPI's DLL shows requests being waited on as complete; they
                           were taken as pending
  collective-communicator-inferred   the DLL hides collective traffic: a collective's
                           communicator was taken from the rank's communicators
  possible-deadlock        a deadlock only if ranks the snapshot cannot tell about cannot act
With two snapshots:
  knot-moved               a rank of a knot moved between them: the later one caught it in
                           passing
"""
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, DefaultDict, Dict, Iterator, List, Optional, Set, Tuple

from . import knots as knots_mod
from . import mpicalls, openmpi
from .knots import Evaluation, Knot
from .model import Model, Need, RankModel, Status, WaitKind, length_text
from .rankset import ranks_text
from .snapshot import Communicator, Operation


@dataclass
class Finding:
    kind: str
    text: str
    ranks: List[int]
    knot: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        return {"kind": self.kind, "ranks": self.ranks, "knot": self.knot, "text": self.text}


def _tag(op: Operation) -> str:
    return "any tag" if op.any_tag else "tag %d" % op.tag


def _sends_to(model: Model, s: int, r: int) -> Iterator[Tuple[Communicator, Operation]]:
    """(communicator, operation) for each pending send of rank s to rank r."""
    for c in model.ranks[s].communicators if s in model.ranks else []:
        for op in c.queues["sends"].operations:
            if model.is_pending(op) and op.peer_world == r and \
                    not openmpi.collective_of_tag(op.tag):
                yield c, op


def _unexpected_from(model: Model, r: int, s: int) -> Iterator[Tuple[Communicator, Operation]]:
    for c in model.ranks[r].communicators:
        for op in c.queues["unexpected"].operations:
            if op.peer_world == s:
                yield c, op


def _never_acts(model: Model, t: int) -> bool:
    return model.ranks[t].status in (Status.FINISHED, Status.FINALIZING)


def _status_words(model: Model, t: int) -> str:
    rm = model.ranks[t]
    if rm.status == Status.FINISHED:
        return "rank %d has finished" % t
    if rm.status == Status.FINALIZING:
        return "rank %d is in MPI_Finalize" % t
    return "rank %d is %s" % (t, rm.describe(model.world))


def _mismatches(model: Model, knot_ranks: List[int],
                index: int) -> Tuple[List[Finding], Set[Tuple[int, int]]]:
    """tag-mismatch and communicator-mismatch findings, and the (receiver, sender) pairs they
    explain: a pending receive of a rank of the knot, and a pending send to it (or a message
    unexpected at it) from a rank it could receive from, that differ in tag or communicator."""
    findings: List[Finding] = []
    pairs: Set[Tuple[int, int]] = set()
    inside = set(knot_ranks)
    for r in knot_ranks:
        rm = model.ranks[r]
        if not any(w.kind == WaitKind.RECEIVE for w in rm.waits):
            continue
        for c in rm.communicators:
            for op in c.queues["receives"].operations:
                if not model.is_pending(op) or openmpi.collective_of_tag(op.tag):
                    continue
                if op.any_source:
                    sources = [m for m in (c.group or ()) if m != r]
                else:
                    sources = [op.peer_world]
                for s in sources:
                    if s not in model.ranks or not (s in inside or _never_acts(model, s)):
                        continue
                    found = list(_sends_to(model, s, r)) + list(_unexpected_from(model, r, s))
                    for sc, sop in found:
                        what = "send" if sop.queue == "sends" else \
                            "message (unexpected at rank %d)" % r
                        if sc.key != c.key:
                            findings.append(Finding(
                                "communicator-mismatch",
                                "rank %d's %s to rank %d is on %s (%s), but rank %d waits for "
                                "rank %d on %s (%s): the same pair talks on two different "
                                "communicators, so the two never match."
                                % (s, what, r, sc.name, _tag(sop), r, s, c.name, _tag(op)),
                                sorted({r, s}), index))
                            pairs.add((r, s))
                        elif not op.any_tag and sop.tag != op.tag:
                            findings.append(Finding(
                                "tag-mismatch",
                                "rank %d's %s to rank %d on %s (tag %d, %s) is pending, "
                                "but rank %d waits for tag %d from rank %d there: the tags do "
                                "not match." % (s, what, r, sc.name, sop.tag,
                                                length_text(sop.length, model.lengths_in_bytes),
                                                r, op.tag, s),
                                sorted({r, s}), index))
                            pairs.add((r, s))
    return _unique(findings), pairs


def _unique(findings: List[Finding]) -> List[Finding]:
    seen, out = set(), []
    for f in findings:
        if (f.kind, f.text) not in seen:
            seen.add((f.kind, f.text))
            out.append(f)
    return out


def _collectives(model: Model, knot_ranks: List[int], index: int) -> List[Finding]:
    """collective-not-reached and collective-mismatch findings."""
    # (collective or "MPI_Finalize", communicator, inferred) -> ranks in it, ranks it waits for
    groups: DefaultDict[Tuple[Optional[str], Optional[str], bool], Set[int]] = defaultdict(set)
    missing: DefaultDict[Tuple[Optional[str], Optional[str], bool], Set[int]] = \
        defaultdict(set)
    for r in knot_ranks:
        for w in model.ranks[r].waits:
            if w.kind == WaitKind.COLLECTIVE:
                key = (w.collective, w.comm, w.comm_inferred)
            elif w.kind == WaitKind.FINALIZE:
                key = ("MPI_Finalize", None, False)
            else:
                continue
            groups[key].add(r)
            missing[key].update(w.targets)
    findings = []
    for key in sorted(groups, key=lambda k: min(groups[k])):
        name, comm, inferred = key
        absent = sorted(missing[key] - groups[key])
        if not absent:
            continue
        by_state = defaultdict(list)
        for m in absent:
            by_state[model.ranks[m].describe(model.world)].append(m)
        doing = "; ".join("%s %s %s" % (ranks_text(ms), "is" if len(ms) == 1 else "are", d)
                          for d, ms in sorted(by_state.items(), key=lambda kv: kv[1][0]))
        where = ""
        if name == "MPI_Finalize":
            where = ", which waits for every rank"
        elif comm:
            where = " on %s" % comm
            if inferred:
                where += " (or another communicator of the same ranks: the DLL hides " \
                         "collective traffic)"
        inside = groups[key]
        findings.append(Finding(
            "collective-not-reached",
            "%s %s in %s%s; %s never reached it: %s." % (
                ranks_text(inside), "is" if len(inside) == 1 else "are", name, where,
                ranks_text(absent), doing),
            sorted(inside | set(absent)), index))
        other = [m for m in absent for n, _ in model.ranks[m].collectives if n != name]
        if other and name != "MPI_Finalize":
            calls = sorted({n for m in other for n, _ in model.ranks[m].collectives})
            findings.append(Finding(
                "collective-mismatch",
                "%s %s in %s while %s %s in %s: different collectives on the same ranks never "
                "match." % (ranks_text(inside), "is" if len(inside) == 1 else "are", name,
                            ranks_text(other), "is" if len(set(other)) == 1 else "are",
                            " and ".join(calls)),
                sorted(inside | set(other)), index))
    return findings


def _finished_targets(model: Model, knot_ranks: List[int], index: int) -> List[Finding]:
    findings: List[Finding] = []
    for r in knot_ranks:
        for w in model.ranks[r].waits:
            if w.kind not in (WaitKind.SEND, WaitKind.RECEIVE) or w.in_progress or w.any_source:
                continue
            for t in w.targets:
                if _never_acts(model, t):
                    findings.append(Finding(
                        "waits-for-finished",
                        "rank %d waits for rank %d (%s), but %s: it will never %s again."
                        % (r, t, w.describe(), _status_words(model, t),
                           "send" if w.kind == WaitKind.RECEIVE else "receive"),
                        [r, t], index))
    return findings


def _wildcards(model: Model, knot_ranks: List[int], index: int) -> List[Finding]:
    by_comm: DefaultDict[Optional[str], List[int]] = defaultdict(list)
    for r in knot_ranks:
        for w in model.ranks[r].waits:
            if w.any_source and not w.in_progress and w.candidates == 1:
                by_comm[w.comm].append(r)
    findings = []
    for comm, ranks in sorted(by_comm.items(), key=lambda kv: kv[1][0]):
        findings.append(Finding(
            "wildcard-blocked",
            "%s %s from MPI_ANY_SOURCE on %s, which any other member could satisfy, but every "
            "member that could send is blocked or finished: a wildcard does not help when "
            "nobody is left to send." % (ranks_text(ranks), "receives" if len(ranks) == 1
                                         else "receive", comm),
            sorted(set(ranks)), index))
    return findings


def _cycles(model: Model, ev: Evaluation, knot: Knot, index: int) -> List[Finding]:
    findings: List[Finding] = []
    for core in knot.cores:
        cycle = knots_mod.cycle_in(core, model, ev)
        if not cycle:
            continue
        kinds = {w.kind for _, _, w in cycle}
        shown = cycle if len(cycle) <= 8 else cycle[:8]
        path = " → ".join(str(n) for n, _, _ in shown) + \
            (" → ... (%d ranks)" % len(cycle) if len(cycle) > 8 else " → %d" % cycle[0][0])
        if len(cycle) < len(core):   # the core is more than this one cycle
            path = "among %s, e.g. %s" % (ranks_text(core), path)
        members = "%s wait%s on one another" % (ranks_text(core), "" if len(core) > 1 else "s")
        if kinds == {WaitKind.SEND}:
            big = [w.length for _, _, w in cycle if w.length is not None]
            size = (" (%d bytes: past the eager limit, %d bytes over shared memory, a send "
                    "completes only when it is received)" % (max(big), openmpi.VADER_EAGER_LIMIT)
                    if big and model.open_mpi and max(big) > openmpi.VADER_EAGER_LIMIT
                    else "")
            findings.append(Finding(
                "send-cycle",
                "cycle of blocking sends: %s. Each rank's send%s waits for a receiver that is "
                "itself blocked in a send. Post the receives first (MPI_Irecv) or use "
                "MPI_Sendrecv." % (path, size), list(core), index))
        elif kinds == {WaitKind.RECEIVE}:
            findings.append(Finding(
                "receive-cycle",
                "cycle of receives: %s. Each rank waits to receive from the next, which is "
                "itself waiting to receive before it sends." % path, list(core), index))
        else:
            steps = " → ".join("rank %d [%s]" % (n, w.describe()) for n, _, w in shown)
            steps += " → ..." if len(cycle) > len(shown) else " → rank %d" % cycle[0][0]
            findings.append(Finding(
                "wait-cycle", "%s: %s." % (members, steps), list(core), index))
    return findings


def _elsewhere(model: Model, ev: Evaluation, knot: Knot, index: int,
               explained_pairs: Set[Tuple[int, int]]) -> List[Finding]:
    findings: List[Finding] = []
    in_core = {n for c in knot.cores for n in c}
    for n, t, w in knot.edges:
        if w.kind not in (WaitKind.SEND, WaitKind.RECEIVE) or t not in knot.ranks or \
                (n, t) in explained_pairs:
            continue
        trm = model.ranks[t]
        elsewhere = trm.call in mpicalls.COLLECTIVES or n not in in_core
        if not elsewhere:
            continue
        if w.kind == WaitKind.RECEIVE and any(True for _ in _sends_to(model, t, n)):
            continue
        findings.append(Finding(
            "blocked-elsewhere",
            "rank %d waits for rank %d (%s), but rank %d is blocked elsewhere: %s."
            % (n, t, w.describe(), t, trm.describe(model.world)), [n, t], index))
    return _unique(findings)


def for_knot(model: Model, ev: Evaluation, knot: Knot, index: int) -> List[Finding]:
    """Findings explaining one knot, most specific first."""
    mismatches, pairs = _mismatches(model, knot.ranks, index)
    findings = list(mismatches)
    findings += _collectives(model, knot.ranks, index)
    findings += _finished_targets(model, knot.ranks, index)
    findings += _wildcards(model, knot.ranks, index)
    findings += _cycles(model, ev, knot, index)
    findings += _elsewhere(model, ev, knot, index, pairs)
    if knot.dependents:
        core = sorted({n for c in knot.cores for n in c})
        findings.append(Finding(
            "blocked-behind",
            "%s %s not part of the knot's core (%s) but wait%s for it, directly or through "
            "others." % (ranks_text(knot.dependents),
                         "is" if len(knot.dependents) == 1 else "are",
                         ranks_text(core), "s" if len(knot.dependents) == 1 else ""),
            list(knot.dependents), index))
    return findings


def broken_cycles(model: Model, ev: Evaluation) -> List[Finding]:
    """cycle-broken findings: ranks that wait on one another, none of them deadlocked,
    because an OR wait has a way out through a rank that can act."""
    blocked = [n for n, rm in model.ranks.items() if rm.blocked and n not in ev.deadlocked]
    succ = {n: sorted({t for t in model.ranks[n].targets() if t in blocked}) for n in blocked}
    findings = []
    for comp in knots_mod.strongly_connected(sorted(blocked), succ):
        if len(comp) == 1 and comp[0] not in succ[comp[0]]:
            continue
        members = set(comp)
        ways = []
        for n in comp:
            rm = model.ranks[n]
            for w in rm.waits:
                outs = [t for t in w.targets if t not in members and ev.releases(model, t)]
                if outs and rm.edge_kind(w, outs[0]) == Need.OR:
                    ways.append("rank %d's %s (%s) can also be completed by %s"
                                % (n, rm.call, w.describe(), _by(model, outs)))
        if not ways:
            continue
        findings.append(Finding(
            "cycle-broken",
            "%s wait on one another, but %s: not a deadlock." % (ranks_text(comp),
                                                                 "; ".join(ways[:3])),
            sorted(comp)))
    return findings


def _by(model: Model, ranks: List[int]) -> str:
    parts: DefaultDict[str, List[int]] = defaultdict(list)
    for t in ranks:
        rm = model.ranks[t]
        parts["computing" if rm.status == Status.COMPUTING else "able to progress"].append(t)
    return ", ".join("%s, %s" % (ranks_text(v), "which is " + k if len(v) == 1 else "which are "
                                 + k) for k, v in parts.items())


def _label(rm: RankModel) -> str:
    """The rank as the snapshot names it (snapshot.Rank.label), for a rank in the snapshot."""
    return rm.entry.label if rm.entry is not None else "rank %d" % rm.rank


def about_snapshot(model: Model) -> List[Finding]:
    """Findings on what the snapshot shows and cannot show."""
    findings: List[Finding] = []
    ranks = model.rank_list()
    readable = [rm for rm in ranks if rm.entry is not None and rm.entry.readable]
    invisible: DefaultDict[Optional[str], List[int]] = defaultdict(list)
    for rm in readable:
        pml = rm.pml
        if openmpi.queues_visible(pml) is False:
            invisible[pml].append(rm.rank)
    for pml, rs in sorted(invisible.items()):
        findings.append(Finding(
            "pml-invisible",
            "%s use%s Open MPI's %s PML: the DLL reads only the request lists of ob1 and cm, "
            "so their queues show empty whatever is pending (run with --mca pml ob1 to see "
            "them)." % (ranks_text(rs), "s" if len(rs) == 1 else "", pml), rs))
    any_op = any(c.queues[q].operations for rm in readable for c in rm.communicators
                 for q in ("sends", "receives"))
    p2p = [rm.rank for rm in ranks if rm.status in (Status.BLOCKED, Status.BLOCKED_UNSEEN) and
           rm.call and rm.call not in mpicalls.COLLECTIVES]
    if readable and not any_op and p2p and not invisible:
        findings.append(Finding(
            "queues-empty",
            "every queue of every rank is empty, yet %s %s blocked in point-to-point calls: "
            "the DLL does not see this job's requests. With Open MPI this is the ucx PML (the "
            "default on InfiniBand): run with --mca pml ob1." % (
                ranks_text(p2p), "is" if len(p2p) == 1 else "are"), p2p))
    no_info = [rm.rank for rm in readable
               if any(c.queues["unexpected"].no_information for c in rm.communicators
                      if not c.is_null)]
    if no_info:
        findings.append(Finding(
            "unexpected-unknown",
            "the DLL gives no information on unexpected messages for %s (%s): messages sent "
            "but not yet received (eager sends of up to %d bytes complete at once) are "
            "unknown, not absent. A verdict from one snapshot assumes no message is in "
            "flight; a second snapshot after resuming the job (--compare) confirms it."
            % (ranks_text(no_info), openmpi.UNEXPECTED_NOT_IMPLEMENTED,
               openmpi.VADER_EAGER_LIMIT), no_info))
    for rm in ranks:
        if rm.status == Status.UNREADABLE:
            findings.append(Finding("unreadable", "%s could not be read: %s." % (
                rm.entry.label if rm.entry else "rank %d" % rm.rank, rm.reason), [rm.rank]))
        elif rm.entry is not None and rm.entry.partial:
            findings.append(Finding("partial", "rank %d was only partly read: %s." % (
                rm.rank, rm.entry.error), [rm.rank]))
        for w in (rm.entry.warnings if rm.entry is not None else []):
            findings.append(Finding("proxy-warning", "%s: %s" % (_label(rm), w), [rm.rank]))
    unlabelled = [r for r in model.snapshot.ranks if r.rank is None]
    for r in unlabelled:
        findings.append(Finding("unreadable", "%s could not be read: %s." % (
            r.label, r.error or "no MPI_COMM_WORLD rank"), []))
    missing = [rm.rank for rm in ranks if rm.status == Status.MISSING]
    if missing:
        findings.append(Finding(
            "missing", "%s of MPI_COMM_WORLD (size %d) %s not in the snapshot." % (
                ranks_text(missing), model.world, "is" if len(missing) == 1 else "are"),
            missing))
    unknown = [rm.rank for rm in ranks if rm.status == Status.UNKNOWN]
    if unknown:
        findings.append(Finding(
            "state-unknown",
            "the snapshot has no stack for %s (it was written by `mqd dump --json`): whether "
            "they are blocked is unknown. The analysis assumes each waits for any one of its "
            "pending operations, or computes when it has none." % ranks_text(unknown),
            unknown))
    unseen = defaultdict(list)
    for rm in ranks:
        if rm.status == Status.BLOCKED_UNSEEN:
            unseen[(rm.call, rm.reason)].append(rm.rank)
    for (call, reason), rs in sorted(unseen.items(), key=lambda kv: kv[1][0]):
        findings.append(Finding(
            "waits-unseen", "%s %s in %s, but %s: what %s for is unknown."
            % (ranks_text(rs), "is" if len(rs) == 1 else "are", call, reason,
               "it waits" if len(rs) == 1 else "they wait"), rs))
    if model.shown_complete:
        rs = sorted(model.shown_complete)
        findings.append(Finding(
            "shown-complete",
            "Open MPI's DLL shows a request that a thread waits on (MPI_Waitall, MPI_Waitany, "
            "MPI_Waitsome) as complete: it reads the waiter's sync object as a flag. %s's %d "
            "operation%s shown complete without having completed %s taken as pending."
            % (ranks_text(rs), sum(model.shown_complete.values()),
               "" if sum(model.shown_complete.values()) == 1 else "s",
               "is" if sum(model.shown_complete.values()) == 1 else "are"), rs))
    if model.collectives_hidden:
        inferred = sorted({rm.rank for rm in ranks for w in rm.waits if w.comm_inferred})
        findings.append(Finding(
            "collective-communicator-inferred",
            "the DLL hides collective traffic (Open MPI's negative tags), so the communicator "
            "of %s's collective is taken from %s communicators that could hold it; "
            "members of several such communicators may be shown on any of them."
            % (ranks_text(inferred), "its" if len(inferred) == 1 else "their"), inferred))
    return findings
