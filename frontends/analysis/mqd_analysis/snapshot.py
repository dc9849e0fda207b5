"""A whole-job snapshot: every rank's queues and where each rank is stopped.

The format is defined in ../SNAPSHOT.md (version 1). `parse` also takes today's
`mqd dump --all --json` output (a list of per-rank dumps without stacks) and `mqd dump --json`
(one rank), and upgrades them: their ranks' states are then unknown.

Everything read from a file is checked here, once: the other modules trust a Snapshot. A bad
file raises SnapshotError with one sentence saying what is wrong and where.
"""
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, NoReturn, Optional, Tuple, Type, Union

from . import mpicalls, openmpi
from .textenum import TextEnum

VERSION = 1

# MQD return codes a queue's "rc" carries (mqs_interface.h).
MQS_OK = 0
MQS_NO_INFORMATION = 1
MQS_END_OF_LIST = 2

QUEUES = ("sends", "receives", "unexpected")

# A communicator's identity across ranks (Communicator.key): its unique id, and its members
# (their world ranks) or, when unknown, its size.
CommKey = Tuple[int, Union[Tuple[int, ...], int]]


class SnapshotError(Exception):
    """The input is not a snapshot this tool can read; str() is one sentence for the user."""


class OperationStatus(TextEnum):
    """A pending operation's status as the front end writes it (mqs_status: mqs_st_pending,
    mqs_st_matched, mqs_st_complete); a status the front end does not name is the DLL's
    number, kept as it is."""
    PENDING = "pending"
    MATCHED = "matched"
    COMPLETE = "complete"


@dataclass
class Operation:
    """One entry of a queue, as the DLL gave it (mqs_pending_operation)."""
    queue: str                # "sends", "receives" or "unexpected"
    status: Union[OperationStatus, str, int]   # or the DLL's number, or a word unknown
    peer_local: int           # desired_local_rank
    peer_world: int           # desired_global_rank (meaningless for a wildcard source)
    any_source: bool
    tag: int
    any_tag: bool
    length: int
    raw: Dict[str, Any]       # the entry as read, for showing it

    @property
    def pending(self) -> bool:
        return self.status == OperationStatus.PENDING

    @property
    def complete(self) -> bool:
        return self.status == OperationStatus.COMPLETE


@dataclass
class Queue:
    rc: int
    error: Optional[str]
    operations: List[Operation]

    @property
    def no_information(self) -> bool:
        """The DLL gave nothing for this queue: unknown, not empty."""
        return self.rc == MQS_NO_INFORMATION and not self.operations

    @property
    def failed(self) -> bool:
        return self.rc not in (MQS_OK, MQS_END_OF_LIST, MQS_NO_INFORMATION)


@dataclass
class Communicator:
    unique_id: int
    name: str
    local_rank: int
    size: int
    group: Optional[List[int]]   # world rank of each local rank, None if unknown
    group_error: Optional[str]
    queues: Dict[str, Queue]     # QUEUES -> Queue
    raw: Dict[str, Any]

    @property
    def is_null(self) -> bool:
        return openmpi.is_null_communicator(self.name, self.size)

    @property
    def key(self) -> CommKey:
        """Identity across ranks: the DLL's unique id (Open MPI's context id, agreed by all
        members) and the members, since split communicators of a parent share an id."""
        return (self.unique_id, tuple(self.group) if self.group is not None else self.size)


@dataclass
class State:
    """Where a rank is stopped: its innermost MPI call (None: computing) and its backtrace,
    newest frame first."""
    mpi_call: Optional[str]
    frames: List[str]
    communicator: Optional[int] = None   # unique_id of a collective's communicator, if known


@dataclass
class Rank:
    rank: Optional[int]                  # MPI_COMM_WORLD rank; None only for an unreadable one
    host: Optional[str]
    pid: Optional[int]
    inferior: Optional[int]
    state: Optional[State]               # None: unknown (not recorded)
    finished: bool
    error: Optional[str]                 # the rank, or part of it, could not be read
    pml: Optional[str]                   # Open MPI's selected PML, when recorded
    warnings: List[str]                  # what the proxy warned of at the rank's set-up
    communicators: Optional[List[Communicator]]   # None when nothing could be read

    @property
    def readable(self) -> bool:
        return self.communicators is not None

    @property
    def partial(self) -> bool:
        return self.communicators is not None and self.error is not None

    @property
    def label(self) -> str:
        if self.rank is not None:
            return "rank %d" % self.rank
        return "inferior %s (pid %s)" % (self.inferior, self.pid)


@dataclass
class Snapshot:
    version: int
    dll: Optional[str]
    ranks: List[Rank]
    upgraded_from: Optional[str] = None   # "mqd dump --all --json", when upgraded
    source: Optional[str] = None          # file name, for messages
    extra: Dict[str, Any] = field(default_factory=dict)

    def by_rank(self) -> Dict[int, Rank]:
        return {r.rank: r for r in self.ranks if r.rank is not None}


def mpi_call_of(frames: List[Optional[str]]) -> Optional[str]:
    """The MPI call a rank is in, from its frames (newest first); None: computing. A snapshot
    without "mpi_call" gets it from here, and so should whatever writes one."""
    return mpicalls.innermost_call(frames, openmpi.ENTRY_POINTS)


# --------------------------------------------------------------------------------------------
# Loading

def load(path: str) -> Snapshot:
    """Reads and checks a snapshot file; raises SnapshotError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SnapshotError("cannot read %s: %s" % (path, e.strerror or e))
    return loads(data, path)


def loads(data: Union[str, bytes], source: str = "the snapshot") -> Snapshot:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SnapshotError("%s is not a JSON snapshot: it is not UTF-8 text" % source)
    if not data.strip():
        raise SnapshotError("%s is empty" % source)
    try:
        obj = json.loads(data)
    except json.JSONDecodeError as e:
        # A file cut short: the parser wants more at its end, or is inside a string there
        # (reported at the string's start: a JSON string cannot hold a raw line break, so an
        # unterminated one runs to the end).
        end = len(data.rstrip())
        if e.pos >= end or e.msg.startswith("Unterminated string"):
            line = data.count("\n", 0, end) + 1
            column = end - (data.rfind("\n", 0, end) + 1) + 1
            raise SnapshotError("%s is truncated: its JSON ends at line %d, column %d, before "
                                "it is complete" % (source, line, column))
        what = e.msg[:-len(" at")] if e.msg.endswith(" at") else e.msg  # "...character at"
        raise SnapshotError("%s is not valid JSON: %s at line %d, column %d"
                            % (source, what, e.lineno, e.colno))
    return parse(obj, source)


def parse(obj: Any, source: str = "the snapshot") -> Snapshot:
    """Checks a decoded snapshot (version 1, or an `mqd dump --json` output to upgrade)."""
    if isinstance(obj, dict) and "mqd_snapshot" in obj:
        version = obj["mqd_snapshot"]
        if version != VERSION or isinstance(version, bool):
            raise SnapshotError("%s is an mqd snapshot of version %s; this tool reads version "
                                "%d" % (source, json.dumps(version), VERSION))
        return _parse_v1(obj, source)
    if isinstance(obj, list) and obj and all(_looks_like_dump(d) for d in obj):
        return _upgrade(obj, source)
    if isinstance(obj, dict) and _looks_like_dump(obj):
        return _upgrade([obj], source)
    raise SnapshotError("%s is JSON but not an mqd snapshot: expected an object with "
                        "\"mqd_snapshot\": %d, or the list `mqd dump --all --json` writes"
                        % (source, VERSION))


def _looks_like_dump(d: Any) -> bool:
    return isinstance(d, dict) and "pid" in d and ("communicators" in d or "error" in d)


class _Path:
    """Where in the document a value is, for error messages: ranks[2].communicators[0]..."""

    def __init__(self, source: str, parts: Tuple[Union[str, int], ...] = ()) -> None:
        self.source, self.parts = source, parts

    def __truediv__(self, part: Union[str, int]) -> "_Path":
        return _Path(self.source, self.parts + (part,))

    def fail(self, what: str) -> NoReturn:
        where = ""
        for p in self.parts:
            where += "[%d]" % p if isinstance(p, int) else ("." if where else "") + p
        raise SnapshotError("%s: %s %s" % (self.source, where or "the document", what))


def _is(value: Any, kinds: Union[Type, Tuple[Type, ...]]) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool):  # JSON true is not a number here
        return bool in kinds
    return isinstance(value, kinds)


def _get(d: Any, key: str, path: _Path, kinds: Union[Type, Tuple[Type, ...]],
         required: bool = True, default: Any = None) -> Any:
    """d[key], checked to be of `kinds`; a missing (or, when optional, null) value gives
    `default`, or fails when required. Typed Any: the caller knows what `kinds` it asked
    for."""
    if not isinstance(d, dict):
        path.fail("is not an object")
    if key not in d or (d[key] is None and not required):
        if required:
            path.fail("has no \"%s\"" % key)
        return default
    if not _is(d[key], kinds):
        (path / key).fail("has the wrong type (%s)" % type(d[key]).__name__)
    return d[key]


def _parse_v1(obj: Dict[str, Any], source: str) -> Snapshot:
    path = _Path(source)
    dll = _get(obj, "dll", path, str, required=False)
    ranks_in = _get(obj, "ranks", path, list)
    ranks = [_rank(r, path / "ranks" / i, dll, legacy=False) for i, r in enumerate(ranks_in)]
    return _finish(Snapshot(VERSION, dll, ranks, source=source), path)


def _upgrade(dumps: List[Dict[str, Any]], source: str) -> Snapshot:
    path = _Path(source)
    dlls = {d.get("dll") for d in dumps if isinstance(d.get("dll"), str)}
    ranks = [_rank(d, path / i, None, legacy=True) for i, d in enumerate(dumps)]
    return _finish(Snapshot(VERSION, dlls.pop() if len(dlls) == 1 else None, ranks,
                            upgraded_from="mqd dump --json", source=source), path)


def _finish(snapshot: Snapshot, path: _Path) -> Snapshot:
    seen: Dict[int, Rank] = {}
    for i, r in enumerate(snapshot.ranks):
        if r.rank is None:
            continue
        if r.rank in seen:
            (path / "ranks" / i).fail("repeats MPI_COMM_WORLD rank %d" % r.rank)
        seen[r.rank] = r
    if not snapshot.ranks:
        path.fail("has no ranks")
    snapshot.ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0,
                                       r.inferior or 0))
    return snapshot


def _rank(d: Any, path: _Path, dll: Optional[str], legacy: bool) -> Rank:
    if not isinstance(d, dict):
        path.fail("is not an object")
    rank = _get(d, "rank", path, int, required=legacy is False and "error" not in d)
    if rank is not None and rank < 0:
        rank = None  # mqd.py writes -1 (MQS_INVALID_PROCESS) when it could not tell
    error = _get(d, "error", path, str, required=False)
    comms_in = _get(d, "communicators", path, list, required=False)
    if comms_in is None and error is None and not d.get("finished"):
        path.fail("has neither \"communicators\" nor \"error\"")
    if rank is None and comms_in is not None and not legacy:
        path.fail("has communicators but no MPI_COMM_WORLD \"rank\"")
    state = None
    if not legacy:
        s = _get(d, "state", path, dict, required=False)
        if s is not None:
            frames = _get(s, "frames", path / "state", list, required=False, default=[])
            for i, f in enumerate(frames):
                if not isinstance(f, (str, type(None))):
                    (path / "state" / "frames" / i).fail("is not a function name")
            call = _get(s, "mpi_call", path / "state", str, required=False)
            if call is not None:
                call = mpicalls.normalise(call) or call
            elif "mpi_call" not in s:
                call = mpi_call_of(frames)
            state = State(call, [f or "??" for f in frames],
                          _get(s, "communicator", path / "state", int, required=False))
    communicators = None
    if comms_in is not None:
        communicators = [_communicator(c, path / "communicators" / i)
                         for i, c in enumerate(comms_in)]
    return Rank(rank=rank, host=_get(d, "host", path, str, required=False),
                pid=_get(d, "pid", path, int, required=False),
                inferior=_get(d, "inferior", path, int, required=False), state=state,
                finished=bool(_get(d, "finished", path, bool, required=False, default=False)),
                error=error, pml=_get(d, "pml", path, str, required=False),
                warnings=_warnings(d, path), communicators=communicators)


def _warnings(d: Dict[str, Any], path: _Path) -> List[str]:
    warnings = _get(d, "warnings", path, list, required=False, default=[])
    for i, w in enumerate(warnings):
        if not isinstance(w, str):
            (path / "warnings" / i).fail("is not a string")
    return warnings


def _communicator(c: Any, path: _Path) -> Communicator:
    group = c.get("group") if isinstance(c, dict) else None
    group_error = None
    if isinstance(group, dict):
        group_error = "%s (%s)" % (group.get("error"), group.get("rc"))
        group = None
    elif group is not None:
        if not isinstance(group, list) or not all(isinstance(g, int) and not isinstance(g, bool)
                                                  for g in group):
            (path / "group").fail("is not a list of ranks")
    queues_in = _get(c, "queues", path, dict)
    queues: Dict[str, Queue] = {}
    for q in QUEUES:
        qd = _get(queues_in, q, path / "queues", dict)
        qpath = path / "queues" / q
        ops = _get(qd, "operations", qpath, list)
        queues[q] = Queue(_get(qd, "rc", qpath, int), _get(qd, "error", qpath, str,
                                                          required=False),
                          [_operation(o, q, qpath / "operations" / i) for i, o in enumerate(ops)])
    return Communicator(unique_id=_get(c, "unique_id", path, int), name=_get(c, "name", path, str),
                        local_rank=_get(c, "local_rank", path, int), size=_get(c, "size", path, int),
                        group=group, group_error=group_error, queues=queues, raw=c)


def _operation(o: Any, queue: str, path: _Path) -> Operation:
    status = _get(o, "status", path, (str, int))
    if status in set(OperationStatus):
        status = OperationStatus(status)
    local = _get(o, "desired_local_rank", path, int)
    return Operation(queue=queue, status=status, peer_local=local,
                     peer_world=_get(o, "desired_global_rank", path, int),
                     any_source=local in openmpi.ANY_SOURCE_VALUES,
                     tag=_get(o, "desired_tag", path, int),
                     any_tag=_get(o, "tag_wild", path, bool),
                     length=_get(o, "desired_length", path, int), raw=o)
