"""python3 -m mqd_analysis graph SNAPSHOT.json [options]: deadlock analysis of a saved
whole-job snapshot, with no debugger. `mqd-proxy graph` runs this (cli/GraphCommand.cc), with
MQD_ANALYSIS_PROG=mqd-proxy so that its usage and its messages name the command the user
typed.

Exit status:
  0  the analysis was made and every output written, whatever the verdict
  2  bad input or usage: a file that is not a snapshot (truncated, foreign JSON, another
     version), two snapshots of different jobs, an unknown option; one sentence on stderr
  3  an output could not be produced: a file that cannot be written, Graphviz's dot missing
     or failing (SVG, PNG and HTML need it); one sentence on stderr
"""
import argparse
import os
import sys
from typing import List, NoReturn, Optional

from . import outputs
from .analysis import analyse
from .snapshot import SnapshotError, load

EXIT_OK, EXIT_INPUT, EXIT_OUTPUT = 0, 2, 3

DESCRIPTION = """Who waits on whom: a deadlock verdict and its explanation from a whole-job
snapshot of an MPI job's message queues and stacks (frontends/analysis/SNAPSHOT.md; today's
`mqd dump --all --json` output is accepted too). Prints the verdict as text (or JSON with
--json) and writes the requested pictures and report."""

EPILOG = """exit status: 0 analysis made (whatever the verdict), 2 bad input or usage,
3 an output could not be produced (unwritable file, Graphviz's dot missing)."""


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _prog() -> str:
    """The command's name in usage and messages: $MQD_ANALYSIS_PROG, else mqd_analysis."""
    return os.environ.get("MQD_ANALYSIS_PROG") or "mqd_analysis"


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=_prog(), description=DESCRIPTION, epilog=EPILOG)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    g = sub.add_parser("graph", help="analyse a snapshot", description=DESCRIPTION,
                       epilog=EPILOG)
    g.add_argument("snapshot", metavar="SNAPSHOT.json")
    g.add_argument("--json", action="store_true", help="print the analysis as JSON, not text")
    g.add_argument("--dot", metavar="FILE", help="write the picture as Graphviz DOT")
    g.add_argument("--svg", metavar="FILE", help="write the picture as SVG (needs dot)")
    g.add_argument("--png", metavar="FILE", help="write the picture as PNG (needs dot)")
    g.add_argument("--html", metavar="FILE",
                   help="write a self-contained HTML report (needs dot)")
    g.add_argument("--compare", metavar="LATER.json",
                   help="a later snapshot of the same job, taken after resuming it: report "
                        "which ranks are stuck and which moved; the verdict, picture and "
                        "report are then of LATER.json")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command != "graph":
            raise _UsageError("name a command: graph SNAPSHOT.json")
    except _UsageError as e:
        print("%s: %s (see --help)" % (_prog(), e), file=sys.stderr)
        return EXIT_INPUT
    try:
        first = load(args.snapshot)
        if args.compare:
            analysis = analyse(load(args.compare), earlier=first)
        else:
            analysis = analyse(first)
    except SnapshotError as e:
        print("%s: %s" % (_prog(), e), file=sys.stderr)
        return EXIT_INPUT
    try:
        outputs.write_files(analysis, dot=args.dot, svg=args.svg, png=args.png, html=args.html)
    except outputs.RenderError as e:
        print("%s: %s" % (_prog(), e), file=sys.stderr)
        return EXIT_OUTPUT
    text = outputs.verdict(analysis, as_json=args.json)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
