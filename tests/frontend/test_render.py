"""frontends/gdb/mqd_gdb/render.py's as_json is json.dumps(value, indent=1) byte for byte (the
format mqd-proxy replay writes too), made by an encoder of its own: on a real dump, on
random values of every kind a dump holds, on records rendered by the template of their shape,
on Records, which keep their text from one call to the next, and on values it leaves to
json.dumps. And abi's reading of an operation in one call gives
what ctypes reads field by field."""
import ctypes
import json
import os
import random

from mqd_gdb import abi, render

HERE = os.path.dirname(os.path.abspath(__file__))


def expected(value):
    return json.dumps(value, indent=1) + "\n"


def test_a_real_dump():
    with open(os.path.join(HERE, "..", "unit", "data", "replay-dump.json")) as f:
        dumps = json.load(f)
    assert render.as_json(dumps) == expected(dumps)


def random_text(rng):
    return "".join(rng.choice("ab \"\\\n\t\u00e9\u2028\U0001f600%{}[],:")
                   for _ in range(rng.randrange(6)))


def random_value(rng, depth):
    """A str, int, None, bool, or (below depth 6) a dict with str keys, list or tuple of
    such values."""
    kind = rng.randrange(8 if depth < 6 else 5)
    if kind == 0:
        return random_text(rng)
    if kind == 1:
        return rng.choice([0, -1, 1, 2**31, -2**63, 2**70, 4294967294])
    if kind == 2:
        return None
    if kind in (3, 4):
        return kind == 3
    if kind == 5:
        return {random_text(rng): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    items = [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return items if kind == 6 else tuple(items)


def test_random_values():
    rng = random.Random(11)
    for _ in range(3000):
        value = random_value(rng, 0)
        assert render.as_json(value) == expected(value), value


def test_other_values_are_json_dumps_own():
    for value in ([1.5, float("inf")], {1: "a"}, {"a": {2: [None]}}, [True, 0.1]):
        assert render.as_json(value) == expected(value)


def test_records_of_one_shape_and_their_neighbours():
    """Many dicts of one shape (one template), among dicts whose keys, order or value types
    differ by one, a list holding another item than a str, keys that a "%" template would
    misread, and the same shape at other depths."""
    rng = random.Random(5)

    def record(i):
        return {"status": rng.choice(["pending", "matched", "%s", "%%d"]), "n": i,
                "flag": i % 2 == 0, "none": None, "big": 2**64 - i,
                "lines": [random_text(rng) for _ in range(rng.randrange(6))]}

    values = []
    for i in range(400):
        r = record(i)
        change = rng.randrange(8)
        if change == 0:
            r["n"] = bool(i % 3)  # an int's place holds a bool
        elif change == 1:
            r["lines"] = r["lines"] + [7]  # a list with an int among the strs
        elif change == 2:
            r = dict(reversed(list(r.items())))  # the keys in another order
        elif change == 3:
            r["%(n)s"] = "%"  # keys a template would read as conversions
            r["%%"] = "%%"
        elif change == 4:
            r["lines"] = []
        values.append(r)
    value = {"a": values, "b": [[values[:50]]], "c": values[-1]}
    # The encoder's own text, not json.dumps's (as_json's fallback on a TypeError).
    assert render._indented(value) + "\n" == expected(value)
    for lists in ([1, 2, 3], ["x", "%s"], [1, "x"], [True, 1], (4, 5), [[1], [2]]):
        value = {"k": lists, "l": [lists]}
        assert render._indented(value) + "\n" == expected(value)


def test_a_record_keeps_its_text():
    """A Record keeps the text as_json made of it: reused where the Record is at the same
    depth, made again at another (one dump, or --all's list of them); a Record of another
    shape (a dict in it), an empty one, and new Records among kept ones, as json.dumps writes
    them."""
    rng = random.Random(7)

    def operation(i):
        return render.Record({"status": rng.choice(["pending", "%s"]), "tag": i,
                              "wild": i % 2 == 0, "buffer": 2**64 - i,
                              "extra_text": [random_text(rng) for _ in range(5)]})

    def job(operations):
        return [{"rank": r, "queues": {"sends": {"rc": 0, "operations": operations[r::3]}}}
                for r in range(3)]

    operations = [operation(i) for i in range(60)]
    operations[4] = render.Record({"odd": {"nested": [1, "a"]}})  # not a record's shape
    operations[5] = render.Record()
    first = job(operations)
    assert render.as_json(first) == expected(first)
    kept = [o for o in operations if hasattr(o, "rendered")]
    assert len(kept) == 58  # every Record but the odd one and the empty one
    assert {o.rendered[0] for o in kept} == {5}  # in the list, in a dump, in its queues
    refreshed = [operation(100 + i) if i % 7 == 0 else o for i, o in enumerate(operations)]
    again = job(refreshed)
    assert render.as_json(again) == expected(again)
    assert render.as_json(again[1]) == expected(again[1])  # one dump: another depth
    assert render.as_json(again) == expected(again)
    # A kept text is what is written: one planted shows (the Record must not change).
    planted = refreshed[1]
    planted.rendered = (planted.rendered[0], "PLANTED")
    assert "PLANTED" in render.as_json(again)


def test_a_list_of_operations_keeps_its_text():
    """An Items list keeps the text as_json made of it, like a Record: the same at the
    same depth, made again at another; json.dumps's bytes either way."""
    ops = render.Items([render.Record({"tag": i, "extra_text": ["a", ""]}) for i in range(3)])
    job = [{"rank": r, "queues": {"sends": {"rc": 0, "operations": ops}}} for r in range(2)]
    job.append({"rank": 2, "queues": {"sends": {"rc": 0, "operations": render.Items()}}})
    assert render.as_json(job) == expected(job)
    assert ops.rendered[0] == 4
    assert render.as_json(job[0]) == expected(job[0])  # another depth
    assert ops.rendered[0] == 3
    ops.rendered = (ops.rendered[0], "PLANTED")  # what is kept is what is written
    assert "PLANTED" in render.as_json(job[0])


def test_an_operation_read_in_one_call_is_ctypes_own():
    rng = random.Random(3)
    for width in (4, 8):
        types = abi.Abi(width)
        for _ in range(200):
            op = types.PendingOperation()
            names = [name for name, _ in op._fields_ if name != "extra_text"]
            for name in names:
                kind = dict(op._fields_)[name]
                bits = 8 * ctypes.sizeof(kind)
                signed = kind(-1).value < 0
                low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
                setattr(op, name, rng.choice([low, high, 0, 1, rng.randint(low, high)]))
            for line in range(5):
                raw = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
                ctypes.memmove(ctypes.addressof(op.extra_text[line]), raw, len(raw))
            fields = types.operation_fields(op)
            assert list(fields[:len(names)]) == [getattr(op, name) for name in names]
            assert ([abi.text(line) for line in fields[len(names):]] ==
                    [bytes(line).split(b"\0", 1)[0].decode("utf-8", "replace")
                     for line in op.extra_text])
