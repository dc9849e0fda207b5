"""The `mqd` commands on the stand-in for gdb (conftest.py), as a user runs them: the front end
sourced as a user sources it, each command line run as gdb runs it, and what gdb would print
compared whole.

The rule (frontends/gdb/mqd_gdb/commands.py): a user's mistake prints one line, "mqd: ..."
(never "internal error"); a bug of the front end prints "mqd: internal error: ...", with the
traceback when `set python print-stack full` is on. Sourcing the front end again leaves one
set of gdb event handlers connected, not one more per source. Options are parsed by argparse:
a missing value says so."""
import ctypes.util
import importlib
import json
import os
import runpy
import stat
import sys

import pytest

from conftest import MQD_PY, PARAMETERS, Inferior

import gdb

NO_DLL_NAME = "mqd: the target has no MPIR_dll_name; name the DLL: mqd load PATH\n"
REFUSAL = "the DLL says this process has no message queues: not an MPI process (1)"


def source():
    """`source mqd.py`, as a user types it; the package mqd_gdb as that left it."""
    runpy.run_path(MQD_PY)
    return sys.modules["mqd_gdb"]


class RefusingSession:
    """Stands in for a loaded DLL (commands._session) that refuses every process, in the words
    Session.ensure_process would raise; Open MPI's when `open_mpi` (then `mqd dump` loads
    Open MPI's debug types into each inferior first)."""

    path = "libfake_msgq.so"
    version = "a stand-in DLL"
    compatibility = 2

    def __init__(self, open_mpi=False):
        self.open_mpi = open_mpi
        self.processes = {}
        self.messages = []

    def is_open_mpi(self):
        return self.open_mpi

    def ensure_image(self, num):
        from mqd_gdb.errors import MqdError
        raise MqdError(REFUSAL)

    ensure_process = ensure_image


@pytest.fixture
def commands(monkeypatch):
    """The front end sourced afresh into a gdb with two attached processes without symbols
    (inferiors 1 and 2, the first selected); its module mqd_gdb.commands."""
    monkeypatch.delenv("MQD_OMPI_TYPES", raising=False)
    for name in ("MQD_PROXY_SERVER", "MQD_PROXY_DLL"):
        monkeypatch.delenv(name, raising=False)
    gdb.inferior_list = [Inferior(num=1, pid=4242), Inferior(num=2, pid=4243)]
    gdb.current = gdb.inferior_list[0]
    gdb.parameters = dict(PARAMETERS)
    source()
    yield sys.modules["mqd_gdb.commands"]
    gdb.inferior_list, gdb.current = [], None


def one_line(out):
    """The one line a failed command printed, checked to be "mqd: ..." and no bug's."""
    assert out.count("\n") == 1 and out.endswith("\n"), out
    assert out.startswith("mqd: ") and "internal error" not in out, out
    return out[:-1]


# ---- a user's mistake: one sentence ----

@pytest.mark.parametrize("line", ["mqd dump", "mqd dump --all", "mqd snapshot {tmp}/job.json",
                                  "mqd graph", "mqd graph --json --snapshot {tmp}/job.json"])
def test_no_mpir_dll_name_is_one_sentence_from_every_command_that_loads(commands, tmp_path,
                                                                          line):
    assert gdb.run(line.format(tmp=tmp_path)) == NO_DLL_NAME
    assert not os.path.exists(tmp_path / "job.json")


def test_a_library_that_is_no_mqd_dll(commands):
    libc = ctypes.util.find_library("c")
    line = one_line(gdb.run("mqd load %s" % libc))
    assert line.startswith("mqd: %s is not an MQD DLL: it exports none of the MQD interface's "
                           "entry points (mqs_setup_basic_callbacks, " % libc), line
    assert "mqs_dll_taddr_width" not in line and "mqs_get_comm_group" not in line  # optional
    assert commands._session is None


def test_a_dll_without_one_entry_point_is_named(commands, monkeypatch):
    class Partial:
        """A library exporting every mqs_* entry point but mqs_next_operation."""

        def __init__(self, path, mode=0):
            pass

        def __getattr__(self, name):
            if not name.startswith("mqs_") or name == "mqs_next_operation":
                raise AttributeError(name)
            return lambda *args: 0

    monkeypatch.setattr(ctypes, "CDLL", Partial)
    assert gdb.run("mqd load libpartial.so") == \
        "mqd: libpartial.so is not a complete MQD DLL: it lacks mqs_next_operation\n"


def test_types_from_a_file_that_is_no_object_file(commands, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not an object file\n")
    line = one_line(gdb.run("mqd types %s" % notes))
    assert str(notes) in line and "not an object file" in line, line
    assert gdb.symbol_files == []


def test_types_from_a_missing_file(commands, tmp_path):
    line = one_line(gdb.run("mqd types %s" % (tmp_path / "none.o")))
    assert str(tmp_path / "none.o") in line, line


def test_dump_all_keeps_going_past_debug_types_that_are_no_object(commands, tmp_path,
                                                                   monkeypatch):
    notes = tmp_path / "types.o"
    notes.write_text("not an object file either\n")
    monkeypatch.setenv("MQD_OMPI_TYPES", str(notes))
    commands._session = RefusingSession(open_mpi=True)
    out = gdb.run("mqd dump --all")
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["Inferior 1", "Inferior 2"], out
    assert all(str(notes) in line and "not an object file" in line for line in lines), out
    # One inferior: its failure is the command's, after its line.
    out = gdb.run("mqd dump")
    assert out.splitlines()[0] == lines[0] and one_line(out.split("\n", 1)[1])


def test_dump_all_writes_what_it_could_read(commands, tmp_path):
    commands._session = RefusingSession()
    output = tmp_path / "q.json"
    assert gdb.run("mqd dump --all --json --output %s" % output) == ""
    assert json.loads(output.read_text()) == [
        {"inferior": 1, "pid": 4242, "error": REFUSAL},
        {"inferior": 2, "pid": 4243, "error": REFUSAL}]


def test_graph_with_a_dot_that_cannot_run(commands, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dot = bin_dir / "dot"
    dot.write_bytes(b"\x00 no program\n")
    dot.chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", str(bin_dir))
    commands._session = RefusingSession()
    line = one_line(gdb.run("mqd graph --svg %s" % (tmp_path / "job.svg")))
    assert line.startswith("mqd: Graphviz's dot (%s) cannot be run: " % dot), line
    assert not os.path.exists(tmp_path / "job.svg")


# ---- a bug: internal error, with the traceback under print-stack full ----

def _a_bug(monkeypatch, commands):
    def broken(dumps):
        raise KeyError("communicators")
    monkeypatch.setattr(commands.render, "as_text", broken)
    commands._session = RefusingSession()


def test_a_bug_is_an_internal_error(commands, monkeypatch):
    _a_bug(monkeypatch, commands)
    assert gdb.run("mqd dump --all") == "mqd: internal error: KeyError: 'communicators'\n"


def test_a_bug_shows_its_traceback_under_print_stack_full(commands, monkeypatch):
    _a_bug(monkeypatch, commands)
    gdb.execute("set python print-stack full")
    out = gdb.run("mqd dump --all")
    assert out.startswith("Traceback (most recent call last):\n"), out
    assert "mqd_gdb/commands.py" in out and "in broken\n" in out, out
    assert out.endswith("\nKeyError: 'communicators'\n"
                        "mqd: internal error: KeyError: 'communicators'\n"), out


# ---- gdb's event handlers: one set, however often the front end is sourced ----

def _connected():
    return {name: list(registry.handlers) for name, registry in vars(gdb.events).items()}


def test_sourcing_again_leaves_one_set_of_handlers(commands):
    first = _connected()
    assert all(first.values()), first  # the front end follows each of these events
    source()
    again = _connected()
    assert {n: len(h) for n, h in again.items()} == {n: len(h) for n, h in first.items()}
    # ... and they are the new copy's: the earlier copy's were disconnected.
    memory, lookup = sys.modules["mqd_gdb.memory"], sys.modules["mqd_gdb.lookup"]
    assert gdb.events.memory_changed.handlers == [memory._memory_changed]
    assert gdb.events.new_objfile.handlers == [lookup._files_changed]
    assert not any(h in first["cont"] for h in again["cont"])


def test_reloading_a_module_leaves_one_set_of_handlers(commands):
    first = _connected()
    importlib.reload(sys.modules["mqd_gdb.memory"])
    importlib.reload(sys.modules["mqd_gdb.lookup"])
    assert {n: len(h) for n, h in _connected().items()} == \
        {n: len(h) for n, h in first.items()}


# ---- options ----

@pytest.mark.parametrize("line, option", [
    ("mqd dump --output", "--output"), ("mqd dump --json --output", "--output"),
    ("mqd graph --svg", "--svg"), ("mqd graph --snapshot", "--snapshot"),
    ("mqd load --server", "--server"), ("mqd load --vendor-dll", "--vendor-dll"),
    ("mqd attach --launcher", "--launcher"), ("mqd attach 5 --gdbserver", "--gdbserver")])
def test_a_missing_value_says_so(commands, line, option):
    out = one_line(gdb.run(line))
    assert "argument %s: expected one argument" % option in out, out
    assert "unknown" not in out and "unrecognized" not in out, out


@pytest.mark.parametrize("line, words", [
    ("mqd dump --bogus", "unrecognized arguments: --bogus (usage: mqd dump [--json] [--all] "
                         "[--output FILE])"),
    ("mqd graph --jsn", "unrecognized arguments: --jsn (usage: mqd graph [--json] [--dot FILE] "
                        "[--svg FILE] [--png FILE] [--html FILE] [--snapshot FILE])"),
    ("mqd status now", "unrecognized arguments: now (usage: mqd status)"),
    ("mqd snapshot", "the following arguments are required: OUT.json (usage: mqd snapshot "
                     "OUT.json)"),
    ("mqd attach", "usage: mqd attach --launcher PID [--gdbserver HOST=ADDRESS ...] "
                   "[--without-thread-db] | mqd attach PID..."),
    ("mqd attach --launcher 7 8", "usage: mqd attach --launcher PID"),
    ("mqd attach --launcher abc", "argument --launcher: not a process id: abc"),
    ("mqd attach 12 0", "argument PID: not a process id: 0"),
    ("mqd attach 12 --gdbserver node7", "argument --gdbserver: not HOST=ADDRESS: node7"),
    ("mqd dump --al", "unrecognized arguments: --al")])
def test_usage_errors_are_one_sentence(commands, line, words):
    assert words in one_line(gdb.run(line))


def test_load_options_set_the_shims_settings(commands, tmp_path):
    missing = tmp_path / "libmqdproxy.so"
    line = one_line(gdb.run("mqd load --vendor-dll libv.so %s --server tcp:node7:7777"
                            % missing))
    assert line.startswith("mqd: cannot load %s: " % missing), line
    assert os.environ["MQD_PROXY_SERVER"] == "tcp:node7:7777"
    assert os.environ["MQD_PROXY_DLL"] == "libv.so"


def test_the_last_of_a_repeated_option_counts(commands, tmp_path):
    commands._session = RefusingSession()
    first, last = tmp_path / "first.json", tmp_path / "last.json"
    assert gdb.run("mqd dump --all --output %s --json --output %s" % (first, last)) == ""
    assert not first.exists() and json.loads(last.read_text())[0]["error"] == REFUSAL


def test_help_names_every_option(commands):
    """gdb's `help mqd X` (the class's docstring) gives the usage argparse checks against, and
    names every option it takes."""
    checked = 0
    for name, command in gdb.commands.items():
        parser = getattr(command, "parser", None)
        if name == "mqd":
            continue
        assert parser is not None, name
        usage = parser.usage_line()[len("usage: "):].split(" | ")[0]
        doc = " ".join(type(command).__doc__.split())
        assert usage in doc or usage in " ".join(commands.__doc__.split()), name
        for action in parser._actions:
            for option in action.option_strings:
                assert option in doc, (name, option)
        checked += 1
    assert checked == 7
