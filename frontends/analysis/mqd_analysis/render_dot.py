"""The analysis as a picture: Graphviz DOT, and SVG or PNG through Graphviz's `dot` command.

Nodes are ranks, or classes of ranks (classes.py) when the job has more than MAX_RANK_NODES
ranks. Edges are waits: solid for AND (the rank needs that one), dashed for OR (any one of
several will do), blue and orange; the waits that keep a knot blocked are dark red and
thick. The knot's nodes are filled with KNOT_FILL, which nothing else in the picture or the
HTML report uses (tests look for it in a screenshot).
"""
import shutil
import subprocess
from collections import defaultdict
from typing import DefaultDict, Dict, Tuple

from .analysis import Analysis
from .model import Need, Status, Wait, WaitKind
from .rankset import ranks_text

MAX_RANK_NODES = 16

KNOT_FILL = "#ff3df5"        # magenta: the knot (certain or possible)
KNOT_BORDER = "#7a0070"
BLOCKING_EDGE = "#8b0000"
AND_EDGE = "#1f4e9c"
OR_EDGE = "#e08a00"
FILL = {Status.COMPUTING: "#c9f2c9", Status.BLOCKED: "#fff1a8", Status.FINALIZING: "#e6e6e6",
        Status.FINISHED: "#d0d0d0", Status.BLOCKED_UNSEEN: "#dcdcff"}
OTHER_FILL = "#f0f0f0"       # unknown, unreadable, missing


class RenderError(Exception):
    """An output could not be produced (Graphviz missing, not runnable or failing); one
    sentence."""


def _q(text: object) -> str:
    """A DOT double-quoted string."""
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _short(w: Wait) -> str:
    """A short edge label: the operation behind the wait."""
    if w.kind == WaitKind.COLLECTIVE:
        return w.collective or "a collective"
    if w.kind == WaitKind.FINALIZE:
        return "MPI_Finalize"
    if w.candidates > 1:
        return "any of %d %ss" % (w.candidates, w.kind)
    tag = "any tag" if w.any_tag else "tag %d" % w.tag if w.tag is not None else ""
    src = "any source, " if w.any_source else ""
    return "%s %s%s" % ("send" if w.kind == WaitKind.SEND else "recv", src, tag)


def _node_style(status: Status, in_knot: bool) -> str:
    if in_knot:
        return 'style="filled,bold" fillcolor=%s color=%s penwidth=2.5' % (_q(KNOT_FILL),
                                                                          _q(KNOT_BORDER))
    return "style=filled fillcolor=%s" % _q(FILL.get(status, OTHER_FILL))


def render(analysis: Analysis, max_rank_nodes: int = MAX_RANK_NODES) -> str:
    """DOT source of the picture."""
    a = analysis
    use_classes = len(a.model.ranks) > max_rank_nodes
    node_of: Dict[int, str] = {}
    legend = "solid: AND wait (that rank is needed)   dashed: OR wait (any one will do)"
    if a.knots:
        legend += "   magenta: %sknot (%s)" % ("" if a.deadlock else "possible ",
                                              "; ".join(ranks_text(k.ranks) for k in a.knots))
    lines = ["digraph mqd_waits {",
             '  graph [rankdir=LR fontname="Helvetica" fontsize=12 labelloc=t label=%s];'
             % _q(a.headline() + "\n" + legend),
             '  node [shape=box style=filled fontname="Helvetica" fontsize=11];',
             '  edge [fontname="Helvetica" fontsize=9];']
    if use_classes:
        for i, c in enumerate(a.classes):
            name = "c%d" % i
            for r in c.ranks:
                node_of[r] = name
            label = "%s (%d)\n%s" % (c.label, len(c.ranks), c.call or c.status)
            lines.append("  %s [label=%s tooltip=%s %s];" % (
                name, _q(label), _q(c.description), _node_style(c.status, c.knot is not None)))
    else:
        for rm in a.model.rank_list():
            name = "r%d" % rm.rank
            node_of[rm.rank] = name
            label = "rank %d\n%s" % (rm.rank, rm.call or rm.status)
            if rm.entry is not None and rm.entry.host:
                label += "\n%s" % rm.entry.host
            lines.append("  %s [label=%s tooltip=%s %s];" % (
                name, _q(label), _q(rm.describe(a.model.world)),
                _node_style(rm.status, rm.rank in a.knot_of)))
    # Edges, merged per (from node, to node, kind, label): one line each, with a count.
    # (from node, to node, kind, label, blocking) -> how many waits
    merged: DefaultDict[Tuple[str, str, Need, str, bool], int] = defaultdict(int)
    ev = a.evaluation
    for rm in a.model.rank_list():
        for i, w in enumerate(rm.waits):
            blocked = rm.rank in ev.deadlocked and not ev.satisfied.get((rm.rank, i))
            for t in w.targets:
                blocking = blocked and not ev.releases(a.model, t)
                key = (node_of[rm.rank], node_of[t], rm.edge_kind(w, t), _short(w), blocking)
                merged[key] += 1
    for (src, dst, kind, label, blocking), count in sorted(merged.items()):
        attrs = ["label=%s" % _q(label + (" ×%d" % count if count > 1 else ""))]
        attrs.append("style=solid" if kind == Need.AND else "style=dashed")
        if blocking:
            attrs.append("color=%s fontcolor=%s penwidth=2.5" % (_q(BLOCKING_EDGE),
                                                                _q(BLOCKING_EDGE)))
        else:
            attrs.append("color=%s" % _q(AND_EDGE if kind == Need.AND else OR_EDGE))
        lines.append("  %s -> %s [%s];" % (src, dst, " ".join(attrs)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_program() -> str:
    path = shutil.which("dot")
    if path is None:
        raise RenderError("Graphviz's dot command is not installed (Debian: apt-get install "
                          "graphviz); it is needed for SVG, PNG and HTML output")
    return path


def convert(dot_source: str, fmt: str) -> bytes:
    """The picture in `fmt` ("svg" or "png"), as bytes, laid out by Graphviz's dot.
    RenderError when dot is missing, cannot be run (not a program, no permission, a missing
    interpreter), takes too long or fails."""
    program = dot_program()
    try:
        result = subprocess.run([program, "-T" + fmt], input=dot_source.encode("utf-8"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    except subprocess.TimeoutExpired:
        raise RenderError("Graphviz's dot took more than 300 s to lay the picture out")
    except OSError as e:
        raise RenderError("Graphviz's dot (%s) cannot be run: %s" % (program, e.strerror or e))
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip().splitlines()
        if said:
            why = said[-1]
        elif result.returncode < 0:
            why = "killed by signal %d" % -result.returncode
        else:
            why = "exit status %d, and no message" % result.returncode
        raise RenderError("Graphviz's dot failed: %s" % why)
    return result.stdout
