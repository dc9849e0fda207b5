"""The dumps of `mqd dump` as the user reads them: as_text(dumps) is the text, as_json(value)
the JSON (json.dumps of dump.py's dicts, indent 1). mqd-proxy replay writes the same bytes
from a recording (replay/DumpFormat.h; tests/unit/data/make-replay-dump.py makes the
expected files with this module), so any change here is a change of that format too.
Pure Python, no gdb: importable anywhere.
"""
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import abi

# The queues in the order shown, with their titles and the direction of their peers.
_QUEUES = (("sends", "Pending sends", "to"),
           ("receives", "Pending receives", "from"),
           ("unexpected", "Unexpected messages", "from"))


# Lengths are shown as the DLL gives them, "length N": the MQD interface says bytes, and Open
# MPI's DLL gives bytes, but MPICH's gives the count of elements (docs/mpich.md). A global rank
# of -1 is one the DLL does not know (MPICH's DLL never translates ranks): "world ?".
def _peer(local: int, world: int) -> str:
    if local == -1 or local == 4294967295:
        return "any source (%d)" % local
    return "rank %d (world %s)" % (local, "?" if world == -1 else world)


def render(dump: Dict[str, Any]) -> str:
    """The text of one process's dump (one with "communicators"), without a final newline."""
    lines = ["Inferior %d: process %d%s, MPI_COMM_WORLD rank %d"
             % (dump["inferior"], dump["pid"],
                " on %s" % dump["host"] if "host" in dump else "", dump["rank"]),
             "  DLL: %s" % dump["dll"]]
    for c in dump["communicators"]:
        lines.append("  Communicator \"%s\" (id %d): local rank %d of %d"
                     % (c["name"], c["unique_id"], c["local_rank"], c["size"]))
        group = c["group"]
        if isinstance(group, list):
            lines.append("    group (local -> world): " +
                         " ".join("%d->%d" % (i, g) for i, g in enumerate(group)))
        elif isinstance(group, dict):
            lines.append("    group: %s (%d)" % (group["error"], group["rc"]))
        for key, title, direction in _QUEUES:
            q = c["queues"][key]
            ops = q["operations"]
            if q["rc"] == abi.MQS_NO_INFORMATION and not ops:
                lines.append("    %s: no information from the DLL" % title)
                continue
            if q.get("error") and not ops:
                lines.append("    %s: %s (%d)" % (title, q["error"], q["rc"]))
                continue
            lines.append("    %s: %d" % (title, len(ops)))
            for i, op in enumerate(ops):
                tag = "any tag" if op["tag_wild"] else "tag %d" % op["desired_tag"]
                lines.append("      #%d [%s] %s %s, %s, length %d, buffer 0x%x%s"
                             % (i, op["status"], direction,
                                _peer(op["desired_local_rank"], op["desired_global_rank"]),
                                tag, op["desired_length"], op["buffer"],
                                ", system buffer" if op["system_buffer"] else ""))
                if key == "sends" or op["status"] != "pending":
                    lines.append("         actual: %s, tag %d, length %d"
                                 % (_peer(op["actual_local_rank"], op["actual_global_rank"]),
                                    op["actual_tag"], op["actual_length"]))
                for text in op["extra_text"]:
                    if text:
                        lines.append("         | " + text)
            if q.get("error"):
                lines.append("      (stopped: %s (%d))" % (q["error"], q["rc"]))
    if dump.get("error"):
        lines.append("  (stopped: %s)" % dump["error"])
    lines.extend(_warnings(dump))
    return "\n".join(lines)


def render_failed(dump: Dict[str, Any]) -> str:
    """The line of a process that could not be read (dump.failed), and the proxy's warnings."""
    return "\n".join(["Inferior %d: process %d: %s" % (dump["inferior"], dump["pid"],
                                                       dump["error"])] + _warnings(dump))


def _warnings(dump: Dict[str, Any]) -> List[str]:
    return ["  warning from mqd-proxy: %s" % w for w in dump.get("warnings", ())]


def as_text(dumps: List[Dict[str, Any]]) -> str:
    """The text of `mqd dump`: each process rendered, each followed by a newline."""
    return "".join((render(d) if "communicators" in d else render_failed(d)) + "\n"
                   for d in dumps)


class Record(dict):
    """A dict that is never changed once made, which keeps the JSON as_json made of it (at the
    depth it was at). dump.py makes each operation one, and gives a process's next dump the
    same Record while the operation is unchanged: a refresh of a hung job renders only what
    changed. json.dumps writes it as the dict it is."""
    __slots__ = ("rendered",)  # (depth, text), once as_json rendered it as a record


class Items(list):
    """A list never changed once made (a queue's Records, a communicator's group), which keeps
    its JSON like a Record: dump.py gives a process's next dump the same list while it holds
    the same items."""
    __slots__ = ("rendered",)  # (depth, text), once as_json rendered it


def as_json(value: Any) -> str:
    """The JSON of `mqd dump --json`: a list of dumps (--all) or one dump, with a newline:
    json.dumps(value, indent=1), byte for byte, made in a quarter of its time (its encoder is
    pure Python once indented: 0.9 s for a 256-rank job's dumps, bench/frontend.py), a
    Record's and an Items' text made once; json.dumps itself for a value of another
    shape."""
    try:
        return _indented(value) + "\n"
    except (TypeError, RecursionError):
        return json.dumps(value, indent=1) + "\n"


# json.dumps's own encoder of a str (its C accelerator where there is one), which typeshed does
# not declare: looked up by name.
_string: Callable[[str], str] = getattr(json.encoder, "encode_basestring_ascii")


def _indented(value: Any) -> str:
    """json.dumps(value, indent=1) of str, int, bool, None, and dicts with str keys and lists
    of them; TypeError for anything else (a float: its text has special cases). A Record's text
    is the one it keeps when made at the same depth, else made (as a record's, _Records) and
    kept."""
    out: List[str] = []
    put = out.append
    records = _Records()

    def encode(v: Any, depth: int) -> None:
        kind = type(v)
        if kind is str:
            put(_string(v))
        elif kind is int:
            put(int.__repr__(v))
        elif v is None:
            put("null")
        elif v is True:
            put("true")
        elif v is False:
            put("false")
        elif kind is Record or kind is Items:
            try:
                at, text = v.rendered
            except AttributeError:
                at = -1
            if at != depth:
                if kind is Record:
                    made = records.text(v, depth) if v else None
                    if made is None:  # not a record's shape
                        encode(dict(v), depth)
                        return
                else:
                    mark = len(out)
                    encode(list(v), depth)
                    made = "".join(out[mark:])
                    del out[mark:]
                text = made
                v.rendered = (depth, text)
            put(text)
        elif kind is dict or kind is list or kind is tuple:
            if not v:
                put("{}" if kind is dict else "[]")
                return
            pad = "\n" + " " * (depth + 1)
            if kind is dict:
                text = records.text(v, depth)
                if text is not None:
                    put(text)
                    return
            else:
                items = set(map(type, v))  # a list of ints (a group) or of strs: one join
                if len(items) == 1 and (int in items or str in items):
                    put(_joined(v, int.__repr__ if int in items else _string, depth))
                    return
            separator = ("{" if kind is dict else "[") + pad
            for item in (v.items() if kind is dict else v):
                put(separator)
                if kind is dict:
                    if type(item[0]) is not str:
                        raise TypeError("a key that is not a string")
                    put(_string(item[0]))
                    put(": ")
                    item = item[1]
                encode(item, depth + 1)
                separator = "," + pad
            put("\n" + " " * depth + ("}" if kind is dict else "]"))
        else:
            raise TypeError("a value json.dumps shows otherwise")

    encode(value, 0)
    return "".join(out)


class _NotARecord(Exception):
    """A dict of a record's shape with a list that holds another item than a str."""


def _joined(items: Any, encode: Callable[[Any], str], depth: int) -> str:
    """A non-empty list at `depth`, each item's text encode(item), as json.dumps(indent=1)
    lays it out."""
    pad = "\n" + " " * (depth + 1)
    return "[" + pad + ("," + pad).join(map(encode, items)) + "\n" + " " * depth + "]"


def _strings(items: List[Any], depth: int) -> str:
    """A list of str of a record at `depth`, indented; _NotARecord for another item."""
    if not items:
        return "[]"
    if type(items[0]) is not str:  # operations, communicators: the common case, told at once
        raise _NotARecord()
    try:
        return _joined(items, _string, depth + 1)
    except TypeError:
        raise _NotARecord() from None


# How a record's value of each kind but int becomes the text of its "%s", given the record's
# depth (an int's "%s" is its repr, as json.dumps writes it).
_CONVERSIONS: Dict[type, Callable[[Any, int], str]] = {
    str: lambda v, depth: _string(v),
    bool: lambda v, depth: "true" if v else "false",
    type(None): lambda v, depth: "null",
    list: _strings,
}


class _Records:
    """Records: non-empty dicts of str keys whose values are str, int, bool, None or lists of
    str, the bulk of a dump (its operations: 51,200 at 256 ranks). The records of one shape
    (depth, keys in order, the type of each value) are rendered by one "%" template, made at
    the shape's first sight; text() is None for a dict of any other shape, or with a list that
    holds another item, which the caller renders item by item."""

    def __init__(self) -> None:
        # shape -> (template, [(position, conversion)]), or None: not a record
        self._shapes: Dict[Any, Any] = {}

    def text(self, record: Dict[Any, Any], depth: int) -> Optional[str]:
        values = list(record.values())
        shape = (depth, tuple(record), tuple(map(type, values)))
        made = self._shapes.get(shape)
        if made is None:
            if shape in self._shapes:
                return None
            made = self._shapes[shape] = self._make(*shape)
            if made is None:
                return None
        template, conversions = made
        try:
            for position, convert in conversions:
                values[position] = convert(values[position], depth)
        except _NotARecord:
            return None
        return template % tuple(values)

    @staticmethod
    def _make(depth: int, keys: Tuple[Any, ...], kinds: Tuple[type, ...]) -> Any:
        if (any(type(k) is not str for k in keys) or
                any(k is not int and k not in _CONVERSIONS for k in kinds)):
            return None
        pad = "\n" + " " * (depth + 1)
        items = ["," + pad + _string(k).replace("%", "%%") + ": %s" for k in keys]
        template = "{" + items[0][1:] + "".join(items[1:]) + "\n" + " " * depth + "}"
        return template, [(i, _CONVERSIONS[k]) for i, k in enumerate(kinds) if k is not int]
