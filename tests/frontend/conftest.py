"""A stand-in for gdb's Python module, installed as `gdb` before the front end is imported.

For frontends/gdb/mqd_gdb/memory.py: one inferior behind a remote stub whose memory the test
owns and changes behind "gdb"'s back. The stub answers qCRC as gdbserver does (its CRC-32,
computed here bit by bit, independently of the module's), or not at all (qemu's stub).

For the commands (test_commands.py): inferiors without symbols, gdb's commands and its
command line (run() runs a line as gdb does and returns what gdb would print), its event
registries, its parameters, and the few gdb commands the front end runs. What real gdb 13 does
and this stand-in copies: gdb.execute of a command that raised gdb.GdbError raises gdb.error
with its message; an exception other than GdbError escaping a command is printed as "Python
Exception <class 'X'>: MESSAGE" and "Error occurred in Python: MESSAGE" (with `python
print-stack full`, the traceback in place of the first line); the parameter is `python
print-stack` (gdb.parameter("print-stack") raises); disconnecting a handler that is not
connected is an error (a SystemError in gdb 13); add-symbol-file of a file that is no object
file fails with `"PATH": not in executable format: file format not recognized`."""
import os
import re
import shlex
import sys
import traceback
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FRONTEND = os.path.normpath(os.path.join(HERE, "..", "..", "frontends", "gdb"))
sys.path.insert(0, FRONTEND)

# The script users source.
MQD_PY = os.path.join(FRONTEND, "mqd.py")


def gdbserver_crc(data):
    """gdbserver's qCRC: CRC-32, polynomial 0x04c11db7, most significant bit first, starting
    from all ones, no final inversion."""
    crc = 0xffffffff
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04c11db7) if crc & 0x80000000 else crc << 1
            crc &= 0xffffffff
    return crc


class error(RuntimeError):  # gdb.error: the name gdb gives it
    pass


class MemoryError(error):
    pass


class GdbError(Exception):
    pass


class Stub:
    """Target memory from `base` (unreadable below it and past its end), and what the stub was
    asked."""

    def __init__(self, memory, base, answers_crc=True):
        self.memory, self.base, self.answers_crc = memory, base, answers_crc
        self.reads, self.crcs = [], []

    def readable(self, address, size):
        return address >= self.base and address + size <= self.base + len(self.memory)

    def read(self, address, size):
        self.reads.append((address, size))
        if size <= 0 or not self.readable(address, size):
            raise MemoryError("Cannot access memory at address %#x" % address)
        return bytes(self.memory[address - self.base:address - self.base + size])

    def packet(self, command):
        found = re.fullmatch(r"maint packet qCRC:([0-9a-f]+),([0-9a-f]+)", command)
        assert found, command
        address, size = int(found.group(1), 16), int(found.group(2), 16)
        self.crcs.append((address, size))
        if not self.answers_crc:
            reply = ""
        elif not self.readable(address, size):
            reply = "E01"
        else:
            start = address - self.base
            reply = "C%x" % gdbserver_crc(self.memory[start:start + size])
        return 'sending: "qCRC:%x,%x"\nreceived: "%s"\n' % (address, size, reply)


class Progspace:
    """A program space gdb loaded no symbol file into."""
    filename = None

    def objfiles(self):
        return []


class Architecture:
    def name(self):
        return "i386:x86-64"


class Inferior:
    """An inferior with process `pid` (0: none); behind `stub` (a remote connection) or local
    (stub None: no memory to read)."""

    def __init__(self, stub=None, num=1, pid=4242):
        self.stub, self.num, self.pid = stub, num, pid
        self.connection = types.SimpleNamespace(num=num, type="remote" if stub else "native")
        self.progspace = Progspace()

    def read_memory(self, address, size):
        return memoryview(self.stub.read(address, size))

    def architecture(self):
        return Architecture()

    def threads(self):
        return []


class EventRegistry:
    """gdb.events.NAME: the handlers connected, in order (the same one twice if connected
    twice)."""

    def __init__(self, name):
        self.name = name
        self.handlers = []

    def connect(self, handler):
        self.handlers.append(handler)

    def disconnect(self, handler):
        if handler not in self.handlers:
            raise SystemError("disconnect of a handler that is not connected to %s" % self.name)
        self.handlers.remove(handler)


EVENTS = ("cont", "new_inferior", "memory_changed", "exited", "inferior_deleted", "new_objfile",
          "free_objfile", "clear_objfiles", "inferior_call", "register_changed")

# What gdb 13 starts with, of the parameters the front end reads or sets.
PARAMETERS = {"non-stop": False, "python print-stack": "message",
              "trust-readonly-sections": False, "remote symbol-lookup-packet": None,
              "suppress-cli-notifications": False, "debug remote": 0, "remotetimeout": 2}


def _fake_gdb():
    gdb = types.ModuleType("gdb")
    gdb.error, gdb.MemoryError, gdb.GdbError = error, MemoryError, GdbError
    gdb.STDOUT, gdb.STDERR, gdb.STDLOG = 0, 1, 2
    gdb.COMMAND_DATA, gdb.COMMAND_RUNNING, gdb.COMPLETE_FILENAME = 3, 4, 1
    gdb.SYMBOL_VAR_DOMAIN, gdb.SYMBOL_STRUCT_DOMAIN = 1, 2
    gdb.SYMBOL_LOC_TYPEDEF, gdb.SYMBOL_LOC_STATIC, gdb.SYMBOL_LOC_BLOCK = 8, 4, 10
    gdb.BP_BREAKPOINT, gdb.BP_TRACEPOINT, gdb.BP_FAST_TRACEPOINT = 1, 7, 8
    gdb.breakpoints = lambda: ()
    gdb.current = None  # the selected Inferior
    gdb.inferior_list = []  # every Inferior; [gdb.current] when empty
    gdb.parameters = dict(PARAMETERS)
    gdb.written = []  # (stream, text) of every gdb.write and every error gdb printed
    gdb.commands = {}  # name -> the gdb.Command registered under it
    gdb.symbol_files = []  # the files add-symbol-file loaded
    gdb.events = types.SimpleNamespace(**{name: EventRegistry(name) for name in EVENTS})

    def parameter(name):
        if name not in gdb.parameters:
            raise RuntimeError("Could not find parameter `%s'." % name)
        return gdb.parameters[name]

    def inferiors():
        return list(gdb.inferior_list) or ([gdb.current] if gdb.current else [])

    def write(text, stream=0):
        gdb.written.append((stream, text))

    class Command:
        def __init__(self, name, command_class, completer_class=-1, prefix=False):
            gdb.commands[name] = self

    def execute(command, from_tty=False, to_string=False):
        words = command.split()
        if command.startswith("maint packet "):
            return gdb.current.stub.packet(command)
        if command.startswith("mqd"):
            try:
                _invoke(command)
            except GdbError as e:  # as gdb does: the command failed
                raise error(str(e))
            return ""
        if words[0] == "set":
            value = {"on": True, "off": False, "auto": None}.get(words[-1], words[-1])
            gdb.parameters[" ".join(words[1:-1])] = int(value) if str(value).isdigit() else value
            return ""
        if words[0] == "inferior":
            gdb.current = next(i for i in inferiors() if i.num == int(words[1]))
            return ""
        if words[0] == "add-symbol-file":
            path = shlex.split(command)[1]
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    raise error('"%s": not in executable format: file format not recognized'
                                % os.path.abspath(path))
            gdb.symbol_files.append(path)
            return ""
        if command.startswith(("maint print msymbols ", "maint info sections ")):
            return ""
        raise error("the stand-in for gdb cannot run %r" % command)

    def _invoke(line):
        """Calls the registered command `line` names (the longest name that starts it)."""
        name = max((n for n in gdb.commands if line == n or line.startswith(n + " ")), key=len)
        gdb.commands[name].invoke(line[len(name):].strip(), True)

    def run(line):
        """Runs `line` as gdb's command line does: everything gdb prints for it, its output and
        its error, stdout and stderr in order."""
        start = len(gdb.written)
        try:
            _invoke(line)
        except GdbError as e:
            write(str(e) + "\n", gdb.STDERR)
        except Exception as e:  # noqa: BLE001 (gdb shows any exception)
            if gdb.parameters["python print-stack"] == "full":
                write(traceback.format_exc(), gdb.STDERR)
            elif gdb.parameters["python print-stack"] == "message":
                write("Python Exception %s: %s\n" % (type(e), e), gdb.STDERR)
            write("Error occurred in Python: %s\n" % e, gdb.STDERR)
        return "".join(text for _, text in gdb.written[start:])

    gdb.parameter, gdb.inferiors, gdb.write = parameter, inferiors, write
    gdb.selected_inferior = lambda: gdb.current
    gdb.selected_thread = lambda: None
    gdb.execute, gdb.run, gdb.Command = execute, run, Command
    gdb.string_to_argv = shlex.split

    def selected_frame():
        raise error("No frame selected.")

    gdb.selected_frame = selected_frame
    return gdb


sys.modules.setdefault("gdb", _fake_gdb())


@pytest.fixture
def memory():
    """mqd_gdb.memory, afresh, with the fake gdb."""
    import importlib
    from mqd_gdb import memory as module
    return importlib.reload(module)
