"""A stand-in for gdb's Python module, enough for frontends/gdb/mqd_gdb/memory.py: one inferior
behind a remote stub whose memory the test owns and changes behind "gdb"'s back. The stub
answers qCRC as gdbserver does (its CRC-32, computed here bit by bit, independently of the
module's), or not at all (qemu's stub). Installed as `gdb` before the module is imported."""
import os
import re
import sys
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontends", "gdb"))


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


class MemoryError(Exception):
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


class Inferior:
    def __init__(self, stub, num=1, pid=4242):
        self.stub, self.num, self.pid = stub, num, pid
        self.connection = types.SimpleNamespace(num=num, type="remote")

    def read_memory(self, address, size):
        return memoryview(self.stub.read(address, size))


def _fake_gdb():
    gdb = types.ModuleType("gdb")
    gdb.MemoryError = MemoryError
    gdb.error = RuntimeError
    gdb.current = None  # the selected Inferior
    gdb.parameter = lambda name: False
    gdb.inferiors = lambda: [gdb.current] if gdb.current else []
    gdb.execute = lambda command, to_string=False: gdb.current.stub.packet(command)
    registry = types.SimpleNamespace(connect=lambda handler: None)
    gdb.events = types.SimpleNamespace(cont=registry, new_inferior=registry,
                                       memory_changed=registry, exited=registry,
                                       inferior_deleted=registry)
    return gdb


sys.modules.setdefault("gdb", _fake_gdb())


@pytest.fixture
def memory():
    """mqd_gdb.memory, afresh, with the fake gdb."""
    import importlib
    from mqd_gdb import memory as module
    return importlib.reload(module)
