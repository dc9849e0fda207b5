"""The options of the `mqd` commands, parsed by argparse. Parser is an ArgumentParser for one
command whose every complaint is an MqdError, one sentence ending with the command's usage,
instead of a message on stderr and an exit (which would end gdb):

  mqd: argument --output: expected one argument (usage: mqd dump [--json] [--all] [--output FILE])

Options are never abbreviated (--al is not --all), options and arguments may come in any
order, and there is no -h/--help: gdb's `help mqd COMMAND` shows the command's help. A value
that does not fit raises argparse.ArgumentTypeError in its `type` function, which argparse
reports as "argument NAME: " and its text.
"""
import argparse
from typing import List, NoReturn, Optional

from .errors import MqdError


class Parser(argparse.ArgumentParser):
    """The options of the command `prog` ("mqd dump"); `usage` replaces the usage argparse
    would write (`mqd attach` has two forms)."""

    def __init__(self, prog: str, usage: Optional[str] = None) -> None:
        super().__init__(prog=prog, usage=usage, add_help=False, allow_abbrev=False)

    def parse(self, argv: List[str]) -> argparse.Namespace:
        """The options and arguments in `argv` (gdb.string_to_argv's list)."""
        return self.parse_intermixed_args(argv)

    def usage_line(self) -> str:
        """"usage: ..." on one line (argparse wraps a long one at the terminal's width)."""
        return " ".join(self.format_usage().split())

    def error(self, message: str) -> NoReturn:
        raise MqdError("%s (%s)" % (message, self.usage_line()))

    def exit(self, status: int = 0, message: Optional[str] = None) -> NoReturn:
        raise MqdError((message or "").strip() or self.usage_line())
