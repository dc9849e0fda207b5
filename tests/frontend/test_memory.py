"""frontends/gdb/mqd_gdb/memory.py against a stub whose memory changes behind gdb's back: every
read answers what a direct read of the target would answer at that moment, pages serve a
later command only once the stub's qCRC proved them unchanged, and nothing is kept behind a
stub that does not answer qCRC. (e2e-memory-gdbserver checks the same through a real
gdbserver; this one tries thousands of reads, changes and decisions.)"""
import random
import types

import pytest

from conftest import Inferior, MemoryError, Stub, gdbserver_crc

import gdb

BASE = 0x10000
SIZE = 64 * 4096


@pytest.fixture
def target():
    rng = random.Random(7)
    stub = Stub(bytearray(rng.randrange(256) for _ in range(SIZE)), BASE)
    gdb.current = Inferior(stub)
    yield stub
    gdb.current = None


def command(memory, reads):
    """Runs `reads` [(address, size)] as one command; returns what each answered (bytes, or
    MemoryError)."""
    answers = []
    with memory.Command():
        for address, size in reads:
            try:
                answers.append(memory.read(gdb.current, address, size))
            except MemoryError as e:
                answers.append(e)
    return answers


def direct(stub, address, size):
    if size <= 0 or not stub.readable(address, size):
        return MemoryError
    return bytes(stub.memory[address - BASE:address - BASE + size])


def test_gdbserver_crc():
    # What gdbserver 13 answered to qCRC for 10,000 bytes i * 7 (mod 256), and the module's.
    data = bytes(i * 7 % 256 for i in range(10000))
    assert gdbserver_crc(data) == 0xba66ba71
    from mqd_gdb import memory
    assert memory.stub_crc(data) == 0xba66ba71


@pytest.mark.parametrize("seed", range(6))
def test_every_read_is_a_direct_read(memory, target, seed):
    rng = random.Random(seed)
    checks = rng.choice([lambda link, size: True, lambda link, size: rng.random() < 0.5])
    memory._worth_checking = checks
    totals = dict.fromkeys(memory.last_checks, 0)
    for _ in range(12):
        reads = []
        for _ in range(120):
            address = BASE - 8192 + rng.randrange(SIZE + 16384)
            size = rng.choice([rng.randrange(-1, 64), rng.randrange(1, 70000)])
            reads.append((address, size))
        got = command(memory, reads)
        for (address, size), answer in zip(reads, got):
            expected = direct(target, address, size)
            if expected is MemoryError:
                assert isinstance(answer, MemoryError), (address, size)
            else:
                assert answer == expected, (address, size)
        for key in totals:
            totals[key] += memory.last_checks[key]
        # Behind gdb's back: a few bytes anywhere, or nothing.
        for _ in range(rng.choice([0, 1, 4])):
            target.memory[rng.randrange(SIZE)] ^= 1 + rng.randrange(255)
    assert totals["runs"] > 0 and totals["proved"] > 0


def test_nothing_changed_reads_only_the_page_its_first_read_needs(memory, target):
    memory._worth_checking = lambda link, size: True
    reads = [(BASE + 4096 * i + 100, 8) for i in range(40)] + [(BASE + 50 * 4096, 20000)]
    first = command(memory, reads)
    target.reads.clear()
    assert command(memory, reads) == first
    assert target.reads == [(BASE, 4096)]  # the read that points the stub at the process
    assert memory.last_checks["proved"] > 40 and memory.last_checks["changed"] == 0


def test_a_first_read_of_a_page_not_kept_points_the_stub(memory, target):
    # The later command's first read needs a page no earlier command read: that read, needed
    # anyway, is the plain read before the checks, and no kept page is read again.
    memory._worth_checking = lambda link, size: True
    reads = [(BASE + 4096 * i + 100, 8) for i in range(1, 11)]
    command(memory, reads)
    target.reads.clear()
    later = [(BASE + 30 * 4096 + 7, 16)] + reads
    got = command(memory, later)
    assert got == [direct(target, a, n) for a, n in later]
    assert target.reads == [(BASE + 30 * 4096, 4096)]
    assert memory.last_checks["read"] == 1 and memory.last_checks["proved"] == 10


@pytest.mark.parametrize("offset, size, read", [
    # (where in its first page a read starts, its size, what the stub is asked: from that
    # page's start) with 9,215 bytes a packet, as through gdbserver
    (0x368, 0x1881, 8192),  # whole pages fit one packet: two pages, both kept
    (2000, 6500, 8500),  # three pages would take two: to the bytes' end, the first page kept
    (3056, 6281, None),  # even that takes two: the bytes asked alone
    (100, 20000, 20480),  # several packets anyway: whole pages, which later commands check
])
def test_a_read_of_one_packet_takes_one_packet(memory, target, offset, size, read):
    memory._packet_bytes[gdb.current.connection.num] = 9215
    at = BASE + 4096 + offset
    inside = [(at, 64), (at + size - 16, 16)]  # the stack's top and AT_RANDOM, read again
    got = command(memory, [(at, size)] + inside)
    assert got == [direct(target, a, n) for a, n in [(at, size)] + inside]
    start = BASE + 4096
    asked = [(start, read)] if read is not None else [(at, size)]
    assert target.reads == asked  # one read, nothing read again


def test_a_change_behind_gdbs_back_shows(memory, target):
    memory._worth_checking = lambda link, size: True
    reads = [(BASE + 4096 * i, 4096) for i in range(1, 20)]
    command(memory, reads)
    target.memory[7 * 4096 + 5] ^= 0xff
    second = command(memory, reads)
    assert second[6] == bytes(target.memory[7 * 4096:8 * 4096])
    assert memory.last_checks["changed"] == 1


def test_a_stub_without_qcrc_keeps_nothing(memory, target):
    target.answers_crc = False
    reads = [(BASE + 4096 * i + 100, 8) for i in range(10)]
    command(memory, reads)
    assert memory.kept_pages() == (0, 0)
    target.reads.clear()
    command(memory, reads)
    assert len(target.reads) == 10
    assert target.crcs == [(0, 0)]  # asked once, with an empty range


def test_a_page_gdb_writes_is_dropped(memory, target):
    memory._worth_checking = lambda link, size: True
    reads = [(BASE + 4096 * i, 16) for i in range(8)]
    command(memory, reads)
    kept = memory.kept_pages()[0]
    memory._memory_changed(type("Event", (), {"address": BASE + 3 * 4096 + 10, "length": 4}))
    assert memory.kept_pages()[0] == kept - 1


def test_not_worth_checking_reads_again(memory, target):
    memory._worth_checking = lambda link, size: False
    reads = [(BASE + 4096 * i, 16) for i in range(8)]
    command(memory, reads)
    target.reads.clear()
    command(memory, reads)
    assert len(target.reads) == 8 and target.crcs == [(0, 0)]


def test_no_check_outlasts_gdbs_remote_timeout(memory, target):
    # 40 kept pages in one stretch: a stub of unknown speed checks 4 packets first (enough to
    # time it); one measured at 50 us a byte (an emulated node's gdbserver) gets runs it checks
    # in at most half of remotetimeout (2 s): 20,000 bytes, 4 pages; one pinned at 0.1 s per
    # MiB gets MAX_RUN.
    memory._worth_checking = lambda link, size: True
    reads = [(BASE + 4096 * i, 16) for i in range(1, 41)]
    command(memory, reads)
    target.crcs.clear()
    command(memory, reads)
    assert [size for _, size in target.crcs][:1] == [4 * memory.PACKET]
    link = gdb.current.connection.num
    memory._crc_per_byte[link] = 50e-6
    target.crcs.clear()
    command(memory, reads)
    sizes = [size for _, size in target.crcs]
    assert max(sizes) == 4 * 4096 and sum(sizes) == 39 * 4096  # the first page is read again
    memory._crc_per_byte.pop(link)
    memory._pinned_crc_per_byte = lambda: 0.1 / (1 << 20)
    target.crcs.clear()
    command(memory, reads)
    assert [size for _, size in target.crcs] == [39 * 4096]


def test_reads_and_refusals_are_counted(memory, target):
    # What mqd status and the bench report: every read asked, and those the target refused.
    before = dict(memory.reads)
    answers = command(memory, [(BASE, 8), (BASE + SIZE - 4, 8), (BASE + 4096, 100)])
    assert isinstance(answers[1], MemoryError)
    assert memory.reads["asked"] - before["asked"] == 3
    assert memory.reads["refused"] - before["refused"] == 1


def test_a_native_process_long_read_is_one_direct_read(memory, target):
    # A process gdb reads itself (no stub): a read across pages is that very read, and keeps
    # no page (copying them cost ten times the read); a read within a page still brings the
    # page for the next ones.
    gdb.current.connection.type = "native"
    long = (BASE + 3 * 4096 + 100, 3 * 4096)
    got = command(memory, [long, long, (BASE + 100, 8), (BASE + 200, 8), (BASE - 4096, 8192)])
    assert got[0] == got[1] == direct(target, *long)
    assert got[2:4] == [direct(target, BASE + 100, 8), direct(target, BASE + 200, 8)]
    assert isinstance(got[4], MemoryError)
    assert target.reads == [long, long, (BASE, 4096), (BASE - 4096, 8192)]
    assert memory.kept_pages() == (0, 0)


def note_stack_top(memory, monkeypatch, top):
    """`mqd attach` noting the selected thread's stack pointer `top` (memory.note_stack_top)."""
    inferior = gdb.current
    thread = type("Thread", (), {"inferior": inferior})()
    frame = type("Frame", (), {"read_register": lambda self, name: top})()
    monkeypatch.setattr(gdb, "selected_thread", lambda: thread)
    monkeypatch.setattr(gdb, "selected_frame", lambda: frame)
    memory.note_stack_top(inferior)
    monkeypatch.undo()


def fire(event, *args):
    for handler in list(gdb.events.__dict__[event].handlers):
        handler(*args)


def test_a_stack_top_stopped_since_the_attach_is_trusted(memory, target, monkeypatch):
    # A node server's epoch check: 64 bytes at the stack pointer, read at every command. Its
    # page (and the next, up to STACK_TOP above it: never read here) are served unchecked
    # while nothing ran; the process's other kept pages are checked at its first read they
    # cannot answer.
    memory._worth_checking = lambda link, size: True
    top = BASE + 9 * 4096 - 100
    note_stack_top(memory, monkeypatch, top)
    check = (top, 64)
    others = [(BASE + 4096 * i + 8, 8) for i in (1, 2, 3)]
    command(memory, [check] + others)
    target.reads.clear()
    target.crcs.clear()
    assert command(memory, [check]) == [direct(target, *check)]
    assert target.reads == [] and target.crcs == []
    assert memory.last_checks["trusted"] == 1
    # Behind gdb's back, a page that is no stack top: seen, the checks made at the first read
    # the trusted pages cannot answer.
    target.memory[2 * 4096 + 8] ^= 0xff
    got = command(memory, [check] + others)
    assert got == [direct(target, a, n) for a, n in [check] + others]
    assert memory.last_checks["trusted"] == 1 and memory.last_checks["changed"] >= 1
    assert target.reads[0] == (BASE + 4096, 4096)  # the plain read before the checks


@pytest.mark.parametrize("event", ["cont", "inferior_call", "register_changed"])
def test_a_stack_top_is_checked_once_anything_ran(memory, target, monkeypatch, event):
    memory._worth_checking = lambda link, size: True
    top = BASE + 9 * 4096 - 100
    note_stack_top(memory, monkeypatch, top)
    command(memory, [(top, 64)])
    fire(event, None)
    target.memory[top - BASE] ^= 0xff  # the thread ran and wrote its stack
    target.reads.clear()
    assert command(memory, [(top, 64)]) == [direct(target, top, 64)]
    assert memory.last_checks["trusted"] == 0 and target.reads == [(top - top % 4096, 4096)]


@pytest.mark.parametrize("shows", ["a replay", "a trace frame"])
def test_a_stack_top_is_checked_where_gdb_may_show_another_state(memory, target, monkeypatch,
                                                                 shows):
    memory._worth_checking = lambda link, size: True
    top = BASE + 9 * 4096 - 100
    note_stack_top(memory, monkeypatch, top)
    command(memory, [(top, 64)])
    if shows == "a replay":
        monkeypatch.setattr(gdb, "current_recording", lambda: object(), raising=False)
    else:  # a tracepoint defined: gdb may show one of its trace frames (tfind)
        breakpoints = (types.SimpleNamespace(type=gdb.BP_BREAKPOINT),
                       types.SimpleNamespace(type=gdb.BP_TRACEPOINT))
        monkeypatch.setattr(gdb, "breakpoints", lambda: breakpoints)
    target.memory[top - BASE] ^= 0xff  # another point of the run
    assert command(memory, [(top, 64)]) == [direct(target, top, 64)]
    assert memory.last_checks["trusted"] == 0


def test_a_stack_top_read_in_part_is_trusted_too(memory, target, monkeypatch):
    # The set-up's read from the stack top to the AT_RANDOM bytes, whose whole pages would take
    # two packets: the bytes asked alone, the top's page not kept whole. What it read from the
    # top up serves the next command's check all the same.
    memory._packet_bytes[gdb.current.connection.num] = 9215
    top = BASE + 4096 + 3056
    note_stack_top(memory, monkeypatch, top)
    command(memory, [(top, 6281)])
    assert target.reads == [(top, 6281)]
    target.reads.clear()
    assert command(memory, [(top, 64)]) == [direct(target, top, 64)]
    assert target.reads == [] and memory.last_checks["trusted"] == 1
    fire("cont", None)
    assert command(memory, [(top, 64)]) == [direct(target, top, 64)]
    assert target.reads == [(top - top % 4096, 4096)]
