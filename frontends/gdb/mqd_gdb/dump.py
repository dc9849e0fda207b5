"""One process's message queues as a dict: dump(session, num) refreshes the DLL's
communicator list for inferior `num` and reads every communicator, its group and its three
queues. `mqd dump --json` writes exactly json.dumps of these dicts (render.as_json), and
mqd-proxy replay rebuilds them from a recording (replay/DumpFormat.h), so keys, their order
and every value's form are a format (frontends/analysis/SNAPSHOT.md describes it):

  {"inferior", "pid", "rank", ["host"], "dll", "communicators": [
      {"unique_id", "name", "local_rank", "size",
       "group": [world rank of each local rank] | {"error", "rc"} | None,
       "queues": {"sends"|"receives"|"unexpected":
                  {"rc", ["error"], "operations": [
                      {"status", "desired_local_rank", "desired_global_rank", "tag_wild",
                       "desired_tag", "desired_length", "system_buffer", "buffer",
                       "actual_local_rank", "actual_global_rank", "actual_tag",
                       "actual_length", "extra_text": [5 lines]}]}}}],
   ["error": "mqs_get_communicator: TEXT", when the communicator list broke off],
   ["warnings": [TEXT, ...], what libmqdproxy.so warned of at the process's set-up]}

"group" is None when the group is unknown: the DLL does not provide mqs_get_comm_group (MPICH's
does not), whether it lacks the export (natively: not called) or libmqdproxy.so answers
MQD_PROXY_ERR_NO_ENTRY_POINT for it (the shim exports every entry point), so that a native and a
proxied dump are the same; or the communicator is empty. mqd-proxy replay follows the same rule.
A queue's "error" is there when it ended other than by mqs_end_of_list (then "rc" says how);
a queue the DLL would not set up has no operations. A process that could not be read at all
is failed(num, pid, message, warnings): {"inferior", "pid", "error", ["warnings"]}.
"host" is there only when `mqd attach --launcher` attached the process: the host its launcher's
MPIR process table names (mqd-proxy replay has no launcher, and writes none). "warnings" is
there only when the proxy warned (a byte order that contradicts the target's
memory: the queues read are then wrong or empty); mqd-proxy replay does not repeat it.
"""
import ctypes
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import abi, job
from .callbacks import global_rank
from .inferiors import find as find_inferior
from .render import Items, Record
from .session import Session

# The queues of a communicator: the DLL's operation class and the dump's key, in this order.
QUEUES = ((abi.PENDING_SENDS, "sends"),
          (abi.PENDING_RECEIVES, "receives"),
          (abi.UNEXPECTED_MESSAGES, "unexpected"))

# The key of a process's list of communicators among its lists (Process.lists).
COMMUNICATORS = (-1, -1, "communicators")

# An operation's status as the dump names it.
STATUS = {abi.ST_PENDING: "pending", abi.ST_MATCHED: "matched", abi.ST_COMPLETE: "complete"}


def dump(session: Session, num: int) -> Dict[str, Any]:
    """The queues of inferior `num` as a dict (see `mqd dump --json`); MqdError when the DLL
    cannot set the process up or refresh its communicator list. The DLL's reads may select
    other inferiors (callbacks.fetch_data): call it inside a SelectedInferior block, which
    gives the user's selection back (commands' dump loop)."""
    process = session.ensure_process(num)
    p = process.handle
    lib = session.lib
    rc = lib.mqs_update_communicator_list(p)
    if rc != abi.MQS_OK:
        raise session.fail("mqs_update_communicator_list", rc)
    inf = find_inferior(num)
    result: Dict[str, Any] = {"inferior": num, "pid": inf.pid, "rank": global_rank(process)}
    attached = job.label(num)
    if attached is not None and attached.host:
        result["host"] = attached.host
    result.update({"dll": session.version, "communicators": []})
    made: Dict[bytes, Record] = {}  # this dump's operations, for the next (_queue)
    # this dump's groups and queues, by communicator (its place, its id) and queue, for the next
    lists: Dict[Tuple[int, int, Any], Items] = {}
    rc = lib.mqs_setup_communicator_iterator(p)
    while rc == abi.MQS_OK:
        comm = session.abi.Communicator()
        rc = lib.mqs_get_communicator(p, ctypes.byref(comm))
        if rc != abi.MQS_OK:
            result["error"] = "mqs_get_communicator: %s" % session.error_text(rc)
            break
        entry: Dict[str, Any] = {"unique_id": comm.unique_id, "name": abi.text(comm.name),
                                 "local_rank": comm.local_rank, "size": comm.size,
                                 "group": None, "queues": {}}
        if comm.size > 0 and session.has("mqs_get_comm_group"):
            ranks = (ctypes.c_int * comm.size)()
            grc = lib.mqs_get_comm_group(p, ranks)
            if grc == abi.MQS_OK:
                where: Tuple[int, int, Any] = (len(result["communicators"]), comm.unique_id,
                                               "group")
                last = process.lists.get(where)
                group = list(ranks)
                entry["group"] = lists[where] = last if last == group else Items(group)
            elif grc != abi.MQD_PROXY_ERR_NO_ENTRY_POINT:  # that one: unknown, as natively
                entry["group"] = {"error": session.error_text(grc), "rc": grc}
        for op_class, key in QUEUES:
            where = (len(result["communicators"]), comm.unique_id, op_class)
            entry["queues"][key] = queue = _queue(session, p, op_class, process.operations, made)
            queue["operations"] = lists[where] = _same_list(queue["operations"],
                                                            process.lists.get(where))
        result["communicators"].append(entry)
        rc = lib.mqs_next_communicator(p)
    # The communicators' list too, when every communicator is as in the last dump (their
    # lists the same objects, compared at once).
    last = process.lists.get(COMMUNICATORS)
    if last is not None and last == result["communicators"]:
        result["communicators"] = last
    else:
        result["communicators"] = Items(result["communicators"])
    lists[COMMUNICATORS] = result["communicators"]
    process.operations = made
    process.lists = lists
    return _with_warnings(result, process.warnings)


def failed(num: int, pid: int, message: str,
           warnings: Iterable[str] = ()) -> Dict[str, Any]:
    """The dump of a process that could not be read."""
    return _with_warnings({"inferior": num, "pid": pid, "error": message}, warnings)


def _with_warnings(result: Dict[str, Any], warnings: Iterable[str]) -> Dict[str, Any]:
    if warnings:
        result["warnings"] = list(warnings)
    return result


def _queue(session: Session, p: int, op_class: int, last: Dict[bytes, Record],
           made: Dict[bytes, Record]) -> Dict[str, Any]:
    """A queue of the dump: each operation the Record of the same mqs_pending_operation (its
    bytes) in `made` (this dump) or `last` (the process's last dump) if any, else a new one;
    each put in `made`."""
    lib = session.lib
    rc = lib.mqs_setup_operation_iterator(p, op_class)
    if rc != abi.MQS_OK:
        return {"rc": rc, "error": session.error_text(rc), "operations": []}
    operations: List[Record] = []
    # One mqs_pending_operation, zeroed before each call as a new one would be.
    op = session.abi.PendingOperation()
    ref, view = ctypes.byref(op), memoryview(op).cast("B")
    zero = bytes(len(view))
    next_operation = lib.mqs_next_operation
    while True:
        view[:] = zero
        rc = next_operation(p, ref)
        if rc != abi.MQS_OK:
            break
        raw = view.tobytes()
        entry = made.get(raw) or last.get(raw) or _operation(session, op)
        made[raw] = entry
        operations.append(entry)
    end: Dict[str, Any] = {"rc": rc, "operations": operations}
    if rc != abi.MQS_END_OF_LIST:
        end["error"] = session.error_text(rc)
    return end


def _same_list(operations: List[Record], last: Optional[Items]) -> Items:
    """`last` (the same queue's list in the process's last dump) when it holds the same Records
    in the same order (so that render.as_json keeps its text too), else a new one."""
    if last is not None and len(last) == len(operations) and all(
            a is b for a, b in zip(last, operations)):
        return last
    return Items(operations)


def _operation(session: Session, op: Any) -> Record:
    """An operation of the dump, from the mqs_pending_operation `op` the DLL filled."""
    (status, desired_local_rank, desired_global_rank, tag_wild, desired_tag, desired_length,
     system_buffer, buffer, actual_local_rank, actual_global_rank, actual_tag, actual_length,
     *extra_text) = session.abi.operation_fields(op)
    return Record({
        "status": STATUS.get(status, status),
        "desired_local_rank": desired_local_rank,
        "desired_global_rank": desired_global_rank,
        "tag_wild": bool(tag_wild), "desired_tag": desired_tag,
        "desired_length": desired_length, "system_buffer": bool(system_buffer),
        "buffer": buffer, "actual_local_rank": actual_local_rank,
        "actual_global_rank": actual_global_rank, "actual_tag": actual_tag,
        "actual_length": actual_length,
        "extra_text": [abi.text(line) for line in extra_text],
    })
