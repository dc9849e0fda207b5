"""Sets of MPI_COMM_WORLD ranks in words, compressed into ranges: "ranks 0-3, 8"."""
from typing import Iterable


def ranges(ranks: Iterable[int]) -> str:
    """"0-3, 8" for [0, 1, 2, 3, 8] (any order, duplicates ignored)."""
    out = []
    items = sorted(set(ranks))
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else "%d-%d" % (items[i], items[j]))
        i = j + 1
    return ", ".join(out)


def ranks_text(ranks: Iterable[int]) -> str:
    """"rank 3", "ranks 0-3, 8", or "no rank"."""
    items = sorted(set(ranks))
    if not items:
        return "no rank"
    return ("rank " if len(items) == 1 else "ranks ") + ranges(items)
