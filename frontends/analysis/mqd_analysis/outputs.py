"""What a run of the analysis produces, the same from the command line (`python3 -m
mqd_analysis graph`, `mqd-proxy graph`) and from gdb (`mqd graph`): the files asked for (the
picture as DOT, SVG or PNG, the HTML report) and the printed verdict (text or JSON).

    outputs.write_files(analysis, dot="job.dot", svg="job.svg")   # RenderError on failure
    print(outputs.verdict(analysis, as_json=False), end="")

SVG, PNG and HTML run Graphviz's `dot` (render_dot.convert); a file that cannot be written
or a `dot` that is missing or fails raises render_dot.RenderError with one sentence.
"""
from typing import Optional, Union

from . import render_dot, render_html, render_json, render_text
from .analysis import Analysis
from .render_dot import RenderError

__all__ = ["RenderError", "verdict", "write_files"]


def _write(path: str, data: Union[str, bytes]) -> None:
    mode = "wb" if isinstance(data, bytes) else "w"
    try:
        with open(path, mode) as f:
            f.write(data)
    except OSError as e:
        raise RenderError("cannot write %s: %s" % (path, e.strerror or e))


def write_files(analysis: Analysis, dot: Optional[str] = None, svg: Optional[str] = None,
                png: Optional[str] = None, html: Optional[str] = None) -> None:
    """Writes each file named (None: not asked for)."""
    source = render_dot.render(analysis)
    if dot:
        _write(dot, source)
    picture = render_dot.convert(source, "svg") if svg or html else b""
    if svg:
        _write(svg, picture)
    if png:
        _write(png, render_dot.convert(source, "png"))
    if html:
        _write(html, render_html.render(analysis, picture))


def verdict(analysis: Analysis, as_json: bool = False) -> str:
    """The text the run prints: the verdict and its explanation, or the analysis as JSON."""
    return render_json.render(analysis) if as_json else render_text.render(analysis)
