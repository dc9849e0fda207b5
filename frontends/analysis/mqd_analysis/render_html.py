"""The analysis as one self-contained HTML file: the verdict, the picture (inline SVG), the
explanations, the ranks in classes, the progress, and the queues of the ranks involved.

Nothing is loaded from elsewhere (no script, no font, no image file) and a Content Security
Policy says so, so a cloud-hosted front end can serve the file as it is. Every string from the
snapshot (communicator names, frames, errors: they come from the target's memory) is escaped.
"""
import html
from typing import List, Tuple

from .analysis import Analysis, Verdict
from .model import length_text
from .progress import Motion
from .rankset import ranks_text
from .render_text import NOTE_KINDS

MAX_QUEUE_RANKS = 16     # ranks whose queues are listed in full
MAX_OPERATIONS = 50      # operations listed per queue
# The picture's frame: a colour used nowhere else, so that a screenshot shows where the picture
# is (tests look for the knot's colour, render_dot.KNOT_FILL, inside it). The knot's colour is
# used only in the picture.
PICTURE_BORDER = "#00a0e0"

_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #1a1a1a; }
header { padding: 14px 24px; color: #ffffff; }
header.deadlock { background: #7a0010; }
header.unknown { background: #8a5a00; }
header.none { background: #1d6b2f; }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0 0 0; font-size: 13px; }
main { padding: 8px 24px 24px 24px; }
h2 { font-size: 17px; margin: 18px 0 6px 0; border-bottom: 1px solid #cccccc; }
h3 { font-size: 14px; margin: 12px 0 4px 0; }
.picture svg { max-width: 100%; height: auto; }
.picture { border: 3px solid PICTURE_BORDER; padding: 6px; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0 8px 0; }
td, th { border: 1px solid #cccccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.kind { font-family: monospace; color: #555555; }
.knotmark { background: #7a0010; color: #ffffff; padding: 0 4px; }
code, .frames { font-family: monospace; font-size: 12px; }
footer { font-size: 11px; color: #666666; padding: 8px 24px; }
""".replace("PICTURE_BORDER", PICTURE_BORDER)


def _e(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _inline_svg(svg_bytes: bytes) -> str:
    """dot's SVG without its XML prolog and DOCTYPE, ready to inline."""
    text = svg_bytes.decode("utf-8", "replace")
    start = text.find("<svg")
    return text[start:] if start >= 0 else ""


def _involved(a: Analysis) -> List[int]:
    ranks = sorted(a.knot_of) or [rm.rank for rm in a.model.rank_list() if rm.blocked]
    return ranks


def _queues(a: Analysis, r: int) -> str:
    rm = a.model.ranks[r]
    e = rm.entry
    out = ["<h3>Rank %d%s</h3>" % (r, (" <span class=\"knotmark\">knot %d</span>"
                                      % (a.knot_of[r] + 1)) if r in a.knot_of else "")]
    facts = []
    if e is not None:
        if e.host:
            facts.append("host %s" % _e(e.host))
        if e.pid is not None:
            facts.append("pid %d" % e.pid)
        if e.pml:
            facts.append("PML %s" % _e(e.pml))
    facts.append(_e(rm.describe(a.model.world)))
    out.append("<p>%s</p>" % "; ".join(facts))
    if e is not None and e.state is not None and e.state.frames:
        out.append("<p class=\"frames\">stack: %s</p>" % _e(" ← ".join(e.state.frames[:8])))
    if e is None or e.communicators is None:  # not readable
        return "\n".join(out)
    rows: List[Tuple[str, str, str]] = []
    for c in e.communicators:
        if c.is_null:
            continue
        for q in ("sends", "receives", "unexpected"):
            queue = c.queues[q]
            if queue.no_information:
                rows.append((c.name, q, "no information from the DLL (unknown, not empty)"))
                continue
            if queue.failed:
                rows.append((c.name, q, "error: %s (%d)" % (queue.error, queue.rc)))
            for op in queue.operations[:MAX_OPERATIONS]:
                peer = "MPI_ANY_SOURCE" if op.any_source else "rank %d (local %d)" % (
                    op.peer_world, op.peer_local)
                tag = "any tag" if op.any_tag else "tag %d" % op.tag
                rows.append((c.name, q, "%s %s %s, %s, %s" % (
                    op.status, "to" if q == "sends" else "from", peer, tag,
                    length_text(op.length, a.model.lengths_in_bytes))))
            if len(queue.operations) > MAX_OPERATIONS:
                rows.append((c.name, q, "... %d more" % (len(queue.operations) - MAX_OPERATIONS)))
    if rows:
        out.append("<table><tr><th>communicator</th><th>queue</th><th>operation</th></tr>")
        for comm, q, text in rows:
            out.append("<tr><td>%s</td><td>%s</td><td>%s</td></tr>" % (_e(comm), _e(q),
                                                                       _e(text)))
        out.append("</table>")
    else:
        out.append("<p>No pending operation in any queue.</p>")
    return "\n".join(out)


def render(analysis: Analysis, svg_bytes: bytes) -> str:
    """The report; `svg_bytes` is the picture as render_dot.convert(..., "svg") made it."""
    a = analysis
    css = {Verdict.DEADLOCK: "deadlock", Verdict.UNKNOWN: "unknown"}.get(a.verdict, "none")
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:\">",
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
             "<title>%s</title>" % _e(a.headline()),
             "<style>%s</style></head><body>" % _STYLE,
             "<header class=\"%s\"><h1>%s</h1><p>%d ranks%s</p></header>" % (
                 css, _e(a.headline()), len(a.model.ranks),
                 "; DLL: %s" % _e(a.snapshot.dll) if a.snapshot.dll else ""),
             "<main>",
             "<section class=\"picture\">%s</section>" % _inline_svg(svg_bytes)]
    parts.append("<h2>Why</h2><ul>")
    for f in a.findings:
        if f.kind in NOTE_KINDS:
            continue
        where = "knot %d: " % (f.knot + 1) if f.knot is not None else ""
        parts.append("<li><span class=\"kind\">[%s]</span> %s%s</li>" % (
            _e(f.kind), _e(where), _e(f.text)))
    if not any(f.kind not in NOTE_KINDS for f in a.findings):
        parts.append("<li>Nothing to explain: no rank waits on another that cannot act.</li>")
    parts.append("</ul>")
    parts.append("<h2>Ranks, grouped by state</h2><table><tr><th>ranks</th><th>state</th>"
                 "<th>knot</th></tr>")
    for c in a.classes:
        parts.append("<tr><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            _e(c.ranges), _e(c.description), c.knot + 1 if c.knot is not None else ""))
    parts.append("</table>")
    if a.progress is not None:
        parts.append("<h2>Progress between the two snapshots</h2><ul>")
        for motion in Motion:
            ranks = a.progress.of(motion)
            if ranks:
                parts.append("<li>%s: %s</li>" % (_e(motion), _e(ranks_text(ranks))))
        parts.append("</ul>")
    notes = [f for f in a.findings if f.kind in NOTE_KINDS]
    if notes:
        parts.append("<h2>What the snapshot cannot show</h2><ul>")
        for f in notes:
            parts.append("<li><span class=\"kind\">[%s]</span> %s</li>" % (_e(f.kind),
                                                                           _e(f.text)))
        parts.append("</ul>")
    involved = _involved(a)
    parts.append("<h2>Queues of the ranks involved (%s)</h2>" % _e(ranks_text(involved)))
    for r in involved[:MAX_QUEUE_RANKS]:
        parts.append(_queues(a, r))
    if len(involved) > MAX_QUEUE_RANKS:
        parts.append("<p>... and %d more ranks (see the JSON output).</p>"
                     % (len(involved) - MAX_QUEUE_RANKS))
    parts.append("</main><footer>Made by mqd_analysis from %s.</footer></body></html>"
                 % _e(a.snapshot.source or "a snapshot"))
    return "\n".join(parts) + "\n"
