"""The renderers: text, JSON (its keys), DOT (valid for Graphviz), SVG, PNG and the HTML
report (self-contained, escaped)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import JobBuilder, run_cli

from mqd_analysis import render_dot, render_html, render_json, render_text


def deadlocked():
    job = JobBuilder(4).call(0, "MPI_Send").send(0, 1, tag=5)
    job.call(1, "MPI_Recv").recv(1, 0, tag=6)
    return job.call(2, "MPI_Recv").recv_any(2)


def test_text_says_the_verdict_the_knot_and_why():
    text = render_text.render(deadlocked().analyse())
    first = text.splitlines()[0]
    assert first == "DEADLOCK: ranks 0-1 (1 knot)"
    assert "Knot 1: ranks 0-1" in text and "[tag-mismatch]" in text
    assert "rank 3: computing" in text


def test_json_has_the_verdict_knots_states_edges_and_explanations():
    d = json.loads(render_json.render(deadlocked().analyse()))
    assert d["mqd_graph"] == 1
    assert d["deadlock"] is True and d["verdict"] == "deadlock"
    assert d["knots"] == [[0, 1]]
    states = {r["rank"]: r["status"] for r in d["ranks"]}
    assert states == {0: "blocked", 1: "blocked", 2: "blocked", 3: "computing"}
    assert d["ranks"][0]["call"] == "MPI_Send" and d["ranks"][0]["knot"] == 0
    edge = next(e for e in d["edges"] if e["from"] == 0)
    assert edge["to"] == 1 and edge["kind"] == "AND" and edge["blocking"] is True
    assert edge["operation"]["kind"] == "send" and edge["operation"]["tag"] == 5
    assert edge["operation"]["communicator"] == "MPI_COMM_WORLD"
    wild = [e for e in d["edges"] if e["from"] == 2]
    assert {e["to"] for e in wild} == {0, 1, 3} and {e["kind"] for e in wild} == {"OR"}
    assert not any(e["blocking"] for e in wild)
    kinds = {e["kind"] for e in d["explanations"]}
    assert "tag-mismatch" in kinds
    assert all({"kind", "ranks", "knot", "text"} <= set(e) for e in d["explanations"])
    assert d["classes"] and d["headline"].startswith("DEADLOCK")


def test_json_without_deadlock_has_empty_knots():
    d = json.loads(render_json.render(JobBuilder(2).analyse()))
    assert d["deadlock"] is False and d["knots"] == [] and d["verdict"] == "no deadlock"


def test_dot_is_valid_for_graphviz_and_highlights_the_knot(dot):
    source = render_dot.render(deadlocked().analyse())
    result = subprocess.run([dot, "-Tsvg"], input=source.encode(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.count(render_dot.KNOT_FILL.encode()) == 2   # ranks 0 and 1
    assert b"stroke-dasharray" in result.stdout                       # an OR edge, dashed


def test_dot_escapes_names_from_the_target(dot):
    evil = 'x" -> y [label="pwn"]; \\ \n<b>'
    job = JobBuilder(2).comm(3, evil, [0, 1]).call(0, "MPI_Recv").recv(0, 1, comm=evil)
    job.call(1, "MPI_Recv").recv(1, 0, comm=evil)
    source = render_dot.render(job.analyse())
    result = subprocess.run([dot, "-Tsvg"], input=source.encode(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert result.returncode == 0, result.stderr.decode()
    assert b'label="pwn"' not in result.stdout


def test_svg_png_dot_and_html_files_from_the_command_line(tmp_path, dot):
    snap = deadlocked().write(tmp_path / "s.json")
    status, out, err = run_cli("graph", snap, "--dot", tmp_path / "p.dot", "--svg",
                               tmp_path / "p.svg", "--png", tmp_path / "p.png", "--html",
                               tmp_path / "r.html")
    assert status == 0, err
    assert out.startswith("DEADLOCK")
    assert (tmp_path / "p.dot").read_text().startswith("digraph")
    assert b"<svg" in (tmp_path / "p.svg").read_bytes()
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_unwritable_output_exits_3(tmp_path):
    snap = deadlocked().write(tmp_path / "s.json")
    status, _, err = run_cli("graph", snap, "--dot", tmp_path / "no" / "such" / "dir.dot")
    assert status == 3 and "cannot write" in err and err.count("\n") == 1


def test_missing_graphviz_exits_3_with_a_sentence(tmp_path):
    snap = deadlocked().write(tmp_path / "s.json")
    env = dict(os.environ, PATH="/nonexistent", PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    from conftest import ANALYSIS
    env["PYTHONPATH"] = ANALYSIS
    r = subprocess.run([sys.executable, "-m", "mqd_analysis", "graph", snap, "--svg",
                        str(tmp_path / "p.svg")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    assert r.returncode == 3 and "Graphviz's dot command is not installed" in r.stderr


def _with_dot(tmp_path, content):
    """A directory holding a `dot` made of `content` (bytes), executable, for PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dot").write_bytes(content)
    (bin_dir / "dot").chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("content", [b"\x00 no program\n", b"#!/nonexistent/sh\n"])
def test_a_dot_that_cannot_run_exits_3_with_a_sentence(tmp_path, content):
    snap = deadlocked().write(tmp_path / "s.json")
    bin_dir = _with_dot(tmp_path, content)
    from conftest import ANALYSIS
    env = dict(os.environ, PATH=str(bin_dir), PYTHONPATH=ANALYSIS)
    r = subprocess.run([sys.executable, "-m", "mqd_analysis", "graph", snap, "--png",
                        str(tmp_path / "p.png")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env)
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("mqd_analysis: Graphviz's dot (%s) cannot be run: "
                               % (bin_dir / "dot")), r.stderr


def test_a_failing_dot_is_quoted_by_its_last_line(tmp_path, monkeypatch):
    bin_dir = _with_dot(tmp_path, b"#!/bin/sh\necho 'Warning: first' >&2\n"
                                  b"echo 'Error: the last line' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(render_dot.RenderError) as failed:
        render_dot.convert("digraph {}", "svg")
    assert str(failed.value) == "Graphviz's dot failed: Error: the last line"


def test_html_report_is_self_contained_and_escaped(dot):
    job = deadlocked().comm(3, "<script>alert(1)</script>", [0, 1])
    job.ranks[0]["state"]["frames"].insert(0, "<img src=x onerror=alert(1)>")
    a = job.analyse()
    page = render_html.render(a, render_dot.convert(render_dot.render(a), "svg"))
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "http://" not in page.replace("http://www.w3.org", "")     # nothing to fetch
    assert "<svg" in page and page.count(render_dot.KNOT_FILL) == 2
    assert "Queues of the ranks involved (ranks 0-1)" in page
    assert "no information from the DLL (unknown, not empty)" in page
    assert "DEADLOCK: ranks 0-1 (1 knot)" in page


def test_picture_uses_classes_above_the_rank_limit():
    job = JobBuilder(render_dot.MAX_RANK_NODES + 1)
    src = render_dot.render(job.analyse())
    assert "ranks 0-%d (%d)" % (render_dot.MAX_RANK_NODES, render_dot.MAX_RANK_NODES + 1) in src
    small = render_dot.render(JobBuilder(render_dot.MAX_RANK_NODES).analyse())
    assert "r15 [" in small
