"""frontends/gdb/mqd_gdb/render.py's as_json is json.dumps(value, indent=1) byte for byte (the
format mqd-proxy replay writes too), made by an encoder of its own: on a real dump, on
random values of every kind a dump holds, and on values it leaves to json.dumps."""
import json
import os
import random

from mqd_gdb import render

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
