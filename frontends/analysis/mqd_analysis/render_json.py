"""The analysis as JSON (format "mqd_graph": 1, described in ../SNAPSHOT.md): the verdict, the
knots, every rank's state and waits, the wait edges with their kind and operation, the
classes, the explanations and, with two snapshots, the progress."""
import json
from typing import Any, Dict, List, Set

from .analysis import Analysis
from .model import RankModel

FORMAT = 1


def _edges(a: Analysis) -> List[Dict[str, Any]]:
    out = []
    for rm in a.model.rank_list():
        for i, w in enumerate(rm.waits):
            blocking: Set[int] = set()
            if rm.rank in a.evaluation.deadlocked and not a.evaluation.satisfied.get((rm.rank, i)):
                blocking = {t for t in w.targets if not a.evaluation.releases(a.model, t)}
            for t in w.targets:
                out.append({"from": rm.rank, "to": t, "kind": rm.edge_kind(w, t),
                            "blocking": t in blocking, "assumed": w.assumed, "wait": i,
                            "operation": {"kind": w.kind, "call": w.call,
                                          "communicator": w.comm, "tag": w.tag,
                                          "collective": w.collective, "text": w.describe()}})
    return out


def _rank(a: Analysis, rm: RankModel, class_of: Dict[int, int]) -> Dict[str, Any]:
    e = rm.entry
    return {"rank": rm.rank, "status": rm.status, "call": rm.call,
            "host": e.host if e else None, "pid": e.pid if e else None,
            "inferior": e.inferior if e else None, "pml": e.pml if e else None,
            "frames": e.state.frames if e is not None and e.state is not None else None,
            "combine": rm.combine, "waits": [w.to_json() for w in rm.waits],
            "uncertain": rm.uncertain, "reason": rm.reason,
            "can_progress": a.evaluation.can.get(rm.rank),
            "knot": a.knot_of.get(rm.rank), "class": class_of[rm.rank],
            "description": rm.describe(a.model.world)}


def to_dict(analysis: Analysis) -> Dict[str, Any]:
    a = analysis
    class_of = {r: i for i, c in enumerate(a.classes) for r in c.ranks}
    d = {
        "mqd_graph": FORMAT,
        "verdict": a.verdict,
        "deadlock": a.deadlock,
        "knots": [k.ranks for k in a.knots] if a.deadlock else [],
        "possible_knots": [k.ranks for k in a.knots] if not a.deadlock else [],
        "knot_details": [{"ranks": k.ranks, "cores": k.cores, "dependents": k.dependents}
                         for k in a.knots],
        "headline": a.headline(),
        "world_size": a.model.world,
        "dll": a.snapshot.dll,
        "snapshot_upgraded_from": a.snapshot.upgraded_from,
        "ranks": [_rank(a, rm, class_of) for rm in a.model.rank_list()],
        "edges": _edges(a),
        "classes": [{"ranks": c.ranks, "ranges": c.ranges, "description": c.description,
                     "status": c.status, "call": c.call, "knot": c.knot,
                     "relative": c.relative} for c in a.classes],
        "explanations": [f.to_json() for f in a.findings],
    }
    if a.progress is not None:
        d["progress"] = a.progress.to_json()
    return d


def render(analysis: Analysis) -> str:
    return json.dumps(to_dict(analysis), indent=1) + "\n"
