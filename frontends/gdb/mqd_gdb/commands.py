"""The gdb commands, and the one Session they share (None until `mqd load`):

  mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
      Load an MQD DLL. Default: the target's MPIR_dll_name. DLL may be libmqdproxy.so; then
      --server and --vendor-dll set MQD_PROXY_SERVER and MQD_PROXY_DLL for it.
  mqd dump [--json] [--all] [--output FILE]
      Communicators, groups and the three queues of the current inferior (--all: of every
      inferior with a process), as text or JSON, to gdb's output or FILE. Loads the DLL first
      (as `mqd load`) if none is, and the debug types into each inferior that lacks them.
  mqd types [OBJECT]
      Load debug types for a stripped libmpi (debug_types).
  mqd status
      What is loaded, and what was set up; the last 20 messages of the callbacks and the DLL.

Every failure is one line, "mqd: ...", raised as gdb.GdbError (a command in a script stops
it); never a Python traceback. `mqd dump --all` writes what it could read, and the failures of
the other inferiors in their place, and does not fail. register() makes the commands known to
gdb; ../mqd.py calls it each time it is sourced.
"""
import os

import gdb

from . import debug_types, render
from .dump import dump, failed
from .errors import MqdError
from .inferiors import SelectedInferior, find as find_inferior
from .session import Session

_session = None


def _dll_name_of_target():
    try:
        return gdb.parse_and_eval("(char *)&MPIR_dll_name").string()
    except gdb.error:
        raise MqdError("the target has no MPIR_dll_name; name the DLL: mqd load PATH")


class MqdPrefix(gdb.Command):
    """Message queues of MPI processes through an MQD DLL.
Subcommands: mqd load, mqd dump, mqd types, mqd status."""

    def __init__(self):
        super().__init__("mqd", gdb.COMMAND_DATA, prefix=True)


def _command(fn):
    """Runs a command body, turning every failure into a one-line gdb error."""
    def invoke(self, arg, from_tty):
        try:
            fn(self, gdb.string_to_argv(arg), from_tty)
        except MqdError as e:
            raise gdb.GdbError("mqd: %s" % e)
        except gdb.GdbError:
            raise
        except Exception as e:  # never a traceback at the user
            raise gdb.GdbError("mqd: internal error: %s: %s" % (type(e).__name__, e))
    return invoke


class MqdLoad(gdb.Command):
    """Load an MQD DLL: mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
DLL defaults to the target's MPIR_dll_name. It may be libmqdproxy.so: --server and
--vendor-dll then set MQD_PROXY_SERVER and MQD_PROXY_DLL before it is loaded."""

    def __init__(self):
        super().__init__("mqd load", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    @_command
    def invoke(self, argv, from_tty):
        global _session
        path = None
        while argv:
            a = argv.pop(0)
            if a == "--server" and argv:
                os.environ["MQD_PROXY_SERVER"] = argv.pop(0)
            elif a == "--vendor-dll" and argv:
                os.environ["MQD_PROXY_DLL"] = argv.pop(0)
            elif a.startswith("-"):
                raise MqdError("unknown option %s" % a)
            else:
                path = a
        if path is None:
            path = _dll_name_of_target()
        _session = Session(path)
        gdb.write("mqd: loaded %s: %s (compatibility %d)\n"
                  % (path, _session.version, _session.compatibility))


class MqdDump(gdb.Command):
    """Show message queues: mqd dump [--json] [--all] [--output FILE]
Communicators, groups and the three queues of the current inferior (--all: every inferior
with a process), as text or JSON, written to gdb's output or to FILE."""

    def __init__(self):
        super().__init__("mqd dump", gdb.COMMAND_DATA)

    @_command
    def invoke(self, argv, from_tty):
        as_json = everything = False
        output = None
        while argv:
            a = argv.pop(0)
            if a == "--json":
                as_json = True
            elif a == "--all":
                everything = True
            elif a == "--output" and argv:
                output = argv.pop(0)
            else:
                raise MqdError("unknown argument %s" % a)
        if _session is None:
            gdb.execute("mqd load", to_string=False)
        nums = [i.num for i in gdb.inferiors() if i.pid != 0] if everything else \
            [gdb.selected_inferior().num]
        dumps = []
        for num in nums:
            with SelectedInferior(num):
                try:
                    debug_types.ensure(num)
                    dumps.append(dump(_session, num))
                except MqdError as e:
                    dumps.append(failed(num, find_inferior(num).pid, str(e)))
        if as_json:
            text = render.as_json(dumps if everything else dumps[0])
        else:
            text = render.as_text(dumps)
        if output:
            try:
                with open(output, "w") as f:
                    f.write(text)
            except OSError as e:
                raise MqdError("cannot write %s: %s" % (output, e))
        else:
            gdb.write(text)
        failures = [d for d in dumps if "communicators" not in d]
        if failures and not everything:
            raise MqdError(failures[0]["error"])


class MqdTypes(gdb.Command):
    """Load debug types for a stripped libmpi: mqd types [OBJECT]"""

    def __init__(self):
        super().__init__("mqd types", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    @_command
    def invoke(self, argv, from_tty):
        path = debug_types.load(argv[0] if argv else None)
        gdb.write("mqd: loaded debug types from %s\n" % path)


class MqdStatus(gdb.Command):
    """What mqd has loaded and set up: mqd status"""

    def __init__(self):
        super().__init__("mqd status", gdb.COMMAND_DATA)

    @_command
    def invoke(self, argv, from_tty):
        if _session is None:
            gdb.write("mqd: no DLL loaded\n")
            return
        gdb.write("mqd: %s: %s (compatibility %d)\n"
                  % (_session.path, _session.version, _session.compatibility))
        for num, p in sorted(_session.processes.items()):
            gdb.write("  inferior %d: set-up rc %s, has-queues %s\n"
                      % (num, p.set_up, p.has_queues and p.has_queues[0]))
        for line in _session.messages[-20:]:
            gdb.write("  " + line + "\n")


def register():
    """Makes the `mqd` commands known to gdb (again: a command registered twice replaces the
    first)."""
    MqdPrefix()
    MqdLoad()
    MqdDump()
    MqdTypes()
    MqdStatus()
