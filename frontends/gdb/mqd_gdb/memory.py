"""Target memory as the DLL's fetch_data reads it: whole pages, each read once per command,
and kept for later commands, which use them once the target proves them unchanged.

A DLL reads a few bytes at a time, mostly near each other (one field of a request, then the
next request of the same free list): Open MPI's makes about 68,000 reads to dump 3,000
operations. Through gdbserver every gdb read is at least one exchange on the debugger's link
(a packet carries up to about 8 KiB), so the front end reads a small read's whole 4 KiB page
instead, and answers the next reads of a page from what it read.

The rule (docs/round-trips.md, "The debugger's own link"): a page read serves later reads only
while nothing can have changed it for the debugger, that is
  - within one `mqd` command, while no inferior has resumed, gdb wrote no memory and no
    inferior exited or was removed (each drops every page of the command);
  - in a later command, only once the target proved it unchanged. The pages of a process
    behind a remote stub that answers qCRC are kept when a command ends. At the process's
    first read in a later command, its first kept page is read again, and each run of
    consecutive kept pages (at most _max_run) is checked with one qCRC exchange (the stub's
    CRC-32 of that memory now, against the CRC of the bytes kept) where that is likely
    quicker than reading the run again (_worth_checking). A run whose CRC differs, that the
    stub cannot read or that is not worth a check is dropped, and read again when asked for.
    A change made
    outside gdb (another process writing a stopped rank's shared memory, the rank itself
    after it resumed) is seen as a direct read would see it, unless the changed run's CRC-32
    happens to be the same: one chance in 2^32 for a changed run;
  - except, unchecked, a kept page of a stopped thread's stack top: the page holding the
    stack pointer of the thread gdb selected as `mqd attach` reached the process, and the next
    one (STACK_TOP), while no thread of any inferior has resumed, no inferior function was
    called and no register written since that attach, and gdb neither replays a recording
    nor has a tracepoint whose trace frames it could show (_trusted); where a read brought
    that page only in part (a span), what it brought from the stack pointer up
    (_kept_tops). Only the thread itself writes there, and it has not run since those bytes
    were read: gdb's own stack cache (`set stack-cache`) rests on the same fact. The rest of
    the process's kept pages are checked as above at its first read they cannot answer. (A
    node server's epoch check reads 64 bytes there at every refresh: docs/round-trips.md,
    "The debugger's own link".)
  - never in non-stop mode, where other threads run while the command does, never for a
    native (ptrace) inferior, whose reads cost no exchange, and never behind a stub that does
    not answer qCRC (qemu's).
A read is answered exactly as a direct read would be (but for those stack tops, as a read
would be before anything ran). A read within one page comes from one
read of that page; when that fails (the page is only partly readable), the bytes asked for are
read directly, as before, and nothing is kept. A page is the smallest unit a mapping has on
every architecture gdb debugs here, so no read of a kept page could have failed where the page
read succeeded.
"""
from __future__ import annotations

import os
import re
import time
import zlib
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Set, Tuple, Union

import gdb

from . import events, execute

PAGE = 4096

# The most bytes of pages kept from one command for later ones (what gdb's process holds
# between commands); past it, the pages of the inferiors read last are not kept.
MAX_KEPT_BYTES = 128 << 20

# What checking a run costs against reading it again, per stub (gdb.TargetConnection number):
# the quickest exchange seen, and the stub's time per byte checked (measured on runs of 4
# packets and more). gdbserver reads memory a byte at a time for qCRC, about 1.2 us per
# byte, so a check pays only on a slow link (at a 20 ms round trip, for about 3 packets and
# more) and never for one packet's worth (a read is one exchange too).
PACKET = 8 << 10  # about what gdbserver carries per read, until learned (_learn_packet)
CRC_PER_BYTE = 1.5e-6  # the stub's time per byte checked, until measured
# The most one qCRC checks: a change anywhere in a run drops it all, to be read again. Less
# behind a slow stub (_max_run): gdb waits `remotetimeout` seconds for a reply, and a reply
# that comes later is taken for the answer to gdb's next packet.
MAX_RUN = 256 << 10
_exchange: Dict[int, float] = {}  # connection number -> the quickest exchange seen
_packet_bytes: Dict[int, int] = {}  # connection number -> the most bytes one read carries
_crc_per_byte: Dict[int, float] = {}  # connection number -> the stub's time per byte

# MQD_GDB_CRC_COST: the stub's time per byte checked, in seconds per MiB, fixed instead of
# measured ("measured", the default): for a stub whose timings mislead, and for tests, whose
# verdicts must not depend on the machine's speed.
CRC_COST_VARIABLE = "MQD_GDB_CRC_COST"


def _pinned_crc_per_byte() -> Optional[float]:
    """The pinned time per byte checked, or None (measured); a value that is no number from 0
    to 1e6 is reported once by gdb and left unused."""
    value = os.environ.get(CRC_COST_VARIABLE, "measured")
    if value in ("", "measured"):
        return None
    try:
        per_mib = float(value)
    except ValueError:
        per_mib = -1.0
    if not 0 <= per_mib <= 1e6:
        if value not in _refused_pins:
            _refused_pins.add(value)
            gdb.write("mqd: %s=%s is not measured or a number of seconds per MiB from 0 to "
                      "1e6; measuring instead\n" % (CRC_COST_VARIABLE, value), gdb.STDERR)
        return None
    return per_mib / (1 << 20)


_refused_pins: Set[str] = set()

# {page address: its bytes}
Pages = Dict[int, bytes]

# inferior number -> its Pages; None when nothing may be kept (outside a command)
_pages: Optional[Dict[int, Pages]] = None

# inferior number -> [(address, bytes)]: what this command read of it in one go that does not
# start or end on a page boundary (a longer read whose whole pages would have cost more
# packets: _from_page_start), serving later reads inside it for the rest of the command as
# its pages do. Emptied with them.
_spans: Dict[int, List[Tuple[int, bytes]]] = {}

# Inferior numbers whose pages this command keeps for later ones (behind a stub that answers
# qCRC): their longer reads bring whole pages, which a check needs.
_keeping: Set[int] = set()

# (inferior number, pid) -> {page address: its bytes}: what earlier commands read of a process
# behind a stub that answers qCRC, left for later commands.
_kept: Dict[Tuple[int, int], Pages] = {}

# (inferior number, pid) -> the stack pointer of the thread gdb selected as `mqd attach`
# reached the process (note_stack_top); all dropped once any thread resumes (_resumed).
_stack_tops: Dict[Tuple[int, int], int] = {}
# The bytes from a stack pointer up whose pages are trusted unchecked (_trusted): its page and,
# where they end past it, the next.
STACK_TOP = 256

# (inferior number, pid) -> (address, bytes): what a command read of the process from its noted
# stack top up (at most STACK_TOP bytes) within a read that did not bring that page whole (a
# span: _keep_read), kept for later commands only as a trusted stack page is (_trusted).
_kept_tops: Dict[Tuple[int, int], Tuple[int, bytes]] = {}

# inferior number -> (pid, its kept pages not yet checked): a process whose first read in this
# command its trusted pages answered (_trusted); checked at its first read they cannot answer.
_unverified: Dict[int, Tuple[int, Pages]] = {}

# gdb.TargetConnection number -> whether its stub answers qCRC (asked once, _keeps).
_stub_checks: Dict[int, bool] = {}

# What the last command that found kept pages did with them (mqd status): the pages read
# before the checks (each process's first read: _verify), the runs checked with qCRC, the
# pages they proved unchanged, the runs found changed (or unreadable), the pages
# dropped unchecked (runs not worth a check), and the stack pages trusted (_trusted).
last_checks = {"read": 0, "runs": 0, "proved": 0, "changed": 0, "dropped": 0, "trusted": 0}
_checks: Optional[Dict[str, int]] = None  # the running command's, once it found kept pages


def kept_pages() -> Tuple[int, int]:
    """(pages, processes) kept for later commands."""
    return sum(len(pages) for pages in _kept.values()), len(_kept)


# The reads asked of this module since the front end was loaded, and how many of them the
# target refused (mqd status, bench/whole_job.py): gdb answers a refused read with an error,
# which costs it and Python more than a read.
reads = {"asked": 0, "refused": 0}


def read(inferior: gdb.Inferior, address: int, size: int) -> bytes:
    """`size` bytes at `address` of `inferior` (a gdb.Inferior, selected by the caller, since
    gdb 13 reads the selected one); raises gdb.MemoryError as Inferior.read_memory does.

    A read within one page brings the whole page: the same single exchange through gdbserver,
    and the DLL's next reads are most often in it. A longer read (the shim's blocks and
    windows) of a process gdb reads itself is a direct read. Behind a stub, it takes the pages
    it spans that are known and reads the rest, one read per stretch of unknown pages: where
    pages are kept for later commands (so that the stretch's first and last page can be
    checked then too), from its first page's start to its last page's end, short of that
    where a packet would not carry it but the bytes asked (_from_page_start); otherwise the
    bytes asked for. It keeps the pages read whole, and what ends or starts inside a page for
    reads inside it (_keep_read)."""
    reads["asked"] += 1
    try:
        return _read(inferior, address, size)
    except gdb.MemoryError:
        reads["refused"] += 1
        raise


# gdb 14 and later read an Inferior.read_memory as of the inferior's process, no thread of
# it: a remote connection whose current thread is one of the process's threads (where gdb's
# attach and its own reads leave it) is pointed at the process first, one `Hg` exchange, and
# back at the thread by gdb's next read of its own. A value's memory is read as of the
# selected thread, as gdb reads it: no `Hg` where the connection is on that thread already.
# gdb 13 reads an Inferior.read_memory as of the selected thread itself, and has no
# Value.bytes, which marks the later gdbs here.
_BY_VALUE = getattr(getattr(gdb, "Value", None), "bytes", None) is not None
_VALUE_CHUNK = 64 << 10  # gdb's default max-value-size: the most one value reads
# (architecture name, length) -> a pointer to an array of that many unsigned bytes: gdb keeps
# every type made until it exits, so each is made once (at most _VALUE_CHUNK of them).
_array_pointers: Dict[Tuple[str, int], Any] = {}


def _direct(inferior: gdb.Inferior, address: int, size: int) -> bytes:
    """`size` bytes at `address` of `inferior`, read as gdb reads them for its own use: through
    the selected thread, when it is `inferior`'s (gdb's later than 13, _BY_VALUE), else with
    Inferior.read_memory. Raises gdb.MemoryError as Inferior.read_memory does, for any byte
    that cannot be read."""
    thread = gdb.selected_thread() if _BY_VALUE and size > 0 else None
    if thread is None or thread.inferior.num != inferior.num:
        return bytes(inferior.read_memory(address, size))
    chunk = min(_VALUE_CHUNK, gdb.parameter("max-value-size") or _VALUE_CHUNK)
    if chunk < PAGE:  # the user's max-value-size: a value a page would not be allowed
        return bytes(inferior.read_memory(address, size))
    arch = inferior.architecture()
    data = bytearray()
    for at in range(address, address + size, chunk):
        length = min(chunk, address + size - at)
        pointer = _array_pointers.get((arch.name(), length))
        if pointer is None:
            pointer = arch.integer_type(8, False).array(length - 1).pointer()
            _array_pointers[(arch.name(), length)] = pointer
        data += gdb.Value(at).cast(pointer).dereference().bytes
    return bytes(data)


def _read(inferior: gdb.Inferior, address: int, size: int) -> bytes:
    if _pages is None or size <= 0:
        return _direct(inferior, address, size)
    if size > PAGE - address % PAGE and not _costs_exchanges(inferior):
        # Across a page boundary, of a process read without an exchange: read directly,
        # nothing kept. Such reads are the shim's blocks (a job never seen's guesses: about
        # 90 MB of 64 ranks in a first dump); copying their pages into the command's, each a
        # fresh page of gdb's heap, took ten times the read itself, and reading them again
        # costs no exchange.
        return _direct(inferior, address, size)
    pages = _pages.get(inferior.num)
    if pages is None:  # its first read in this command
        pages = _pages[inferior.num] = {}
        if _keeps(inferior):  # asked here, while the caller has it selected
            _keeping.add(inferior.num)
            kept = _kept.pop((inferior.num, inferior.pid), None)
            kept = kept or {}
            trusted = _trusted(inferior, kept)
            if trusted:
                pages.update(trusted)
                _counting()["trusted"] += len(trusted)
            top = _kept_tops.pop((inferior.num, inferior.pid), None)
            if top is not None and _trusted(inferior, {top[0] - top[0] % PAGE: b""}):
                _spans.setdefault(inferior.num, []).append(top)
                _counting()["trusted"] += 1
            if kept:
                _unverified[inferior.num] = (inferior.pid, kept)
    unverified = _unverified.get(inferior.num)
    if unverified is not None and not _answers(inferior.num, pages, address, size):
        del _unverified[inferior.num]
        _verify(inferior, unverified[1], pages, address - address % PAGE)
    first = address - address % PAGE
    end = address + size
    if end <= first + PAGE:  # within one page: the DLL's reads, on every fetch_data
        page = pages.get(first)
        if page is None:
            for start, span in _spans.get(inferior.num, ()):
                if start <= address and end <= start + len(span):
                    return span[address - start:end - start]
            try:
                page = pages[first] = _direct(inferior, first, PAGE)
            except gdb.MemoryError:  # the page cannot be read whole: as before, nothing kept
                return _direct(inferior, address, size)
        return page[address - first:end - first]
    data = bytearray()
    at = address
    while at < end:
        page_at = at - at % PAGE
        page = pages.get(page_at)
        if page is not None:
            upto = min(end, page_at + PAGE)
            data += page[at - page_at:upto - page_at]
        else:
            known = page_at + PAGE
            while known < end and known not in pages:
                known += PAGE
            upto = min(end, known)
            whole = _from_page_start(inferior, at, upto, min(known, upto + (-upto) % PAGE))
            if whole is not None:
                _keep_read(inferior.num, pages, page_at, whole)
                data += whole[at - page_at:upto - page_at]
            else:  # the bytes asked for, as a direct read
                read = _direct(inferior, at, upto - at)
                _keep_read(inferior.num, pages, at, read)
                data += read
        at = upto
    return bytes(data)


def _keep_read(num: int, pages: Pages, start: int, data: bytes) -> None:
    """Keeps of `data`, read at `start` from inferior `num`, the pages it holds whole in this
    command's `pages`, and, where it starts or ends inside a page, itself for reads inside it
    (_spans)."""
    end = start + len(data)
    for p in range(start + (-start) % PAGE, end - PAGE + 1, PAGE):
        pages[p] = data[p - start:p - start + PAGE]
    if start % PAGE or end % PAGE:
        _spans.setdefault(num, []).append((start, data))


def _keep_stack_tops() -> None:
    """At a command's end: keeps, of each process with a noted stack top whose page the command
    read only in part, what it read from that top up (_kept_tops)."""
    for inferior in gdb.inferiors():
        top = _stack_tops.get((inferior.num, inferior.pid))
        if top is None or inferior.num not in _keeping:
            continue
        for start, span in _spans.get(inferior.num, ()):
            if start <= top < start + len(span):
                _kept_tops[(inferior.num, inferior.pid)] = \
                    (top, span[top - start:top - start + STACK_TOP])
                break


def _answers(num: int, pages: Pages, address: int, size: int) -> bool:
    """Whether inferior `num`'s `pages` hold every page of [`address`, `address` + `size`), or
    one of its spans all of it."""
    return all(p in pages for p in range(address - address % PAGE, address + size, PAGE)) or \
        any(start <= address and address + size <= start + len(span)
            for start, span in _spans.get(num, ()))


def note_stack_top(inferior: gdb.Inferior) -> None:
    """Notes the stack pointer of the thread gdb selected in `inferior`, which the front end has
    just attached (`mqd attach`): gdb holds its registers and innermost frame then, so reading
    it costs no exchange (a frame computed later costs two: the registers, the stack)."""
    thread = gdb.selected_thread()
    if thread is None or thread.inferior.num != inferior.num or inferior.pid == 0:
        return
    try:
        top = int(gdb.selected_frame().read_register("sp"))
    except (gdb.error, ValueError):
        return
    _stack_tops[(inferior.num, inferior.pid)] = top


def _trusted(inferior: gdb.Inferior, kept: Pages) -> Pages:
    """The pages of `kept` (taken out of it) that hold `inferior`'s stack top as noted at its
    attach (note_stack_top), when nothing can have changed them since: no thread resumed
    (_resumed drops every note), and gdb shows the live state (_shows_live_state). Empty
    otherwise."""
    top = _stack_tops.get((inferior.num, inferior.pid))
    if top is None or not _shows_live_state():
        return {}
    last = top + STACK_TOP - 1
    return {p: kept.pop(p) for p in range(top - top % PAGE, last - last % PAGE + 1, PAGE)
            if p in kept}


# The kinds of tracepoint: gdb can show a trace frame (`tfind`) only where one is defined.
_TRACEPOINTS = tuple(getattr(gdb, name) for name in
                     ("BP_TRACEPOINT", "BP_FAST_TRACEPOINT", "BP_STATIC_TRACEPOINT")
                     if hasattr(gdb, name))


def _shows_live_state() -> bool:
    """Whether gdb shows the targets as they are: no recording (whose replay moves the state
    shown without resuming anything) and no tracepoint defined (whose trace frames gdb may
    show instead). Asked of gdb's own state alone: `$trace_frame` would cost an exchange
    (gdb computes the selected frame for its architecture)."""
    recording = getattr(gdb, "current_recording", None)
    if recording is not None and recording() is not None:
        return False
    return not any(b.type in _TRACEPOINTS for b in (gdb.breakpoints() or ()))


def _counting() -> Dict[str, int]:
    """The running command's counts of what it did with kept pages (last_checks)."""
    global _checks
    if _checks is None:
        _checks = dict.fromkeys(last_checks, 0)
    return _checks


def _from_page_start(inferior: gdb.Inferior, at: int, upto: int, pages_end: int
                     ) -> Optional[bytes]:
    """For a read of [`at`, `upto`) of unknown pages of `inferior`, where its pages are kept
    for later commands (_keeping), since each kept page must be whole for its check: the bytes
    from the start of `at`'s page, read in one go, up to `pages_end` (the end of the last
    page); but where the bytes asked fit in one packet and those pages do not, up to `upto`
    where that fits in one packet, else None (the bytes asked are read). None too where pages
    are not kept, or when the read fails. (The shim reads a rank's `AT_RANDOM` bytes and its
    stack's top as one window, about 6 KiB apart: their three whole pages took two packets
    where the bytes took one. Longer reads, an epoch's windows read again, stay whole pages,
    which a later command can check: one packet more among several.)"""
    if inferior.num not in _keeping:
        return None
    start = at - at % PAGE
    most = _packet_bytes.get(inferior.connection.num, PACKET)
    stop = pages_end
    if upto - at <= most < pages_end - start:
        if upto - start > most:
            return None
        stop = upto
    try:
        return _direct(inferior, start, stop - start)
    except gdb.MemoryError:
        return None


def _learn_packet(inferior: gdb.Inferior) -> None:
    """Learns the most bytes one read of `inferior`'s memory carries over its stub connection
    (call it with `inferior` selected): half the packet size gdb shows for the connection, as
    a reply spells each byte in two hex digits (gdbserver: 18,431, so 9,215 bytes); until
    learned, and where gdb does not say, PACKET. Asked of gdb alone, no exchange, but it is a
    command, after which gdb fetches the selected thread's registers: learn_stub asks it."""
    link = inferior.connection.num
    if link not in _packet_bytes:
        shown = execute.output("show remote memory-read-packet-size")
        found = re.search(r"limited to (\d+) bytes", shown)
        _packet_bytes[link] = max(PAGE, int(found.group(1)) // 2) if found else PACKET


def _verify(inferior: gdb.Inferior, kept: Pages, pages: Pages, wanted: int) -> None:
    """Puts into this command's `pages` what earlier commands `kept` of `inferior`'s process
    and the stub proves unchanged: one qCRC exchange per run of consecutive kept pages worth
    checking (_worth_checking); drops the rest, which is read again if asked for.

    qCRC reads the process the stub's current thread belongs to, which gdb sets (Hg) before it
    reads memory of another process than the one it last read: a plain read, which gdb never
    answers from a cache of its own, comes first, so that a stub serving several processes
    (gdbserver --multi) checks this one: of `wanted`, the page the command's first read of the
    process needs, kept or not (read anyway, whatever the checks find), else, where that page
    cannot be read whole, of the first kept page. That read is timed: an exchange's cost."""
    checks = _counting()
    link = inferior.connection.num
    for first in dict.fromkeys((wanted, min(kept))):
        started = time.monotonic()
        try:
            pages[first] = _direct(inferior, first, PAGE)
            break
        except gdb.MemoryError:
            continue
    else:
        return
    took = time.monotonic() - started
    _exchange[link] = min(_exchange.get(link, took), took)
    checks["read"] += 1
    kept.pop(first, None)
    for run in _runs(kept, lambda: _max_run(link)):
        size = len(run) * PAGE
        if not _worth_checking(link, size):
            checks["dropped"] += len(run)
            continue
        data = b"".join(kept[p] for p in run)
        started = time.monotonic()
        crc = _stub_crc_of(run[0], size)
        took = time.monotonic() - started
        checks["runs"] += 1
        if crc is None:  # no answer after all: nothing more is kept behind this stub
            _stub_checks[link] = False
            _keeping.discard(inferior.num)
            return
        if size >= 4 * PACKET:  # long enough for the stub's share to show over the link's
            per_byte = max(took - _exchange[link], 0.0) / size
            _crc_per_byte[link] = min(_crc_per_byte.get(link, per_byte), per_byte)
        if crc is not False and crc == stub_crc(data):
            checks["proved"] += len(run)
            for p in run:
                pages[p] = kept[p]
        else:
            checks["changed"] += 1


def _runs(pages: Pages, longest: Callable[[], int]) -> Iterator[List[int]]:
    """The page addresses of `pages`, sorted, as runs of consecutive pages, each of at most
    `longest()` bytes (asked as each run starts: what the checks so far measured)."""
    run: List[int] = []
    limit = 0
    for page in sorted(pages):
        if run and run[-1] + PAGE == page and len(run) * PAGE < limit:
            run.append(page)
            continue
        if run:
            yield run
        run, limit = [page], longest()
    if run:
        yield run


def _max_run(link: int) -> int:
    """The most bytes one qCRC over stub connection `link` may check: MAX_RUN, and no more than
    the stub checks, at its speed (pinned or measured), in half of gdb's remote timeout; until
    measured, 4 packets, enough to measure it. gdbserver checks a byte at a time: about 1.2 us
    a byte on x86_64 hardware, 42 us on the emulated aarch64 node (tests/arm-node/), where a
    whole MAX_RUN took 11 s and its late reply answered the next read in gdb's stead."""
    per_byte = _pinned_crc_per_byte()
    if per_byte is None:
        per_byte = _crc_per_byte.get(link)
    if per_byte is None:
        return 4 * PACKET
    if per_byte <= 0:
        return MAX_RUN
    timeout = gdb.parameter("remotetimeout") or 2
    return max(PAGE, min(MAX_RUN, int(timeout / 2 / per_byte) // PAGE * PAGE))


def _worth_checking(link: int, size: int) -> bool:
    """Whether checking `size` bytes with qCRC over stub connection `link` is likely quicker
    than reading them again."""
    exchange = _exchange.get(link)
    if exchange is None:
        return False
    again = -(-size // _packet_bytes.get(link, PACKET)) * exchange
    per_byte = _pinned_crc_per_byte()
    if per_byte is None:
        per_byte = _crc_per_byte.get(link, CRC_PER_BYTE)
    return exchange + size * per_byte < again


def string(inferior: gdb.Inferior, address: int, limit: int = 4096) -> bytes:
    """The NUL-terminated string at `address` (without the NUL), read a page at a time as
    read() reads; at most `limit` bytes. Raises gdb.MemoryError as read() does."""
    found = b""
    while len(found) < limit:
        chunk = read(inferior, address, PAGE - address % PAGE)
        end = chunk.find(b"\0")
        if end >= 0:
            return found + chunk[:end]
        found += chunk
        address += len(chunk)
    return found[:limit]


def _costs_exchanges(inferior: gdb.Inferior) -> bool:
    """Whether a read of `inferior` is an exchange on a link: it is behind a remote stub
    (gdbserver, qemu's), not a process gdb reads itself (native) or a core file."""
    connection = inferior.connection
    return connection is not None and connection.type in ("remote", "extended-remote")


def _keeps(inferior: gdb.Inferior, ask: bool = True) -> bool:
    """Whether pages of `inferior` may be kept for a later command: it is behind a remote stub
    that answers qCRC. `ask`: ask the stub when not known yet, with an empty range (one
    exchange, on the selected inferior's connection: call it with `inferior` selected);
    otherwise not known is no."""
    if not _costs_exchanges(inferior):
        return False
    connection = inferior.connection
    if connection.num not in _stub_checks:
        if not ask:
            return False
        _stub_checks[connection.num] = _stub_crc_of(0, 0) is not None
    return _stub_checks[connection.num]


def learn_stub(inferior: gdb.Inferior) -> None:
    """Asks the stub of `inferior`'s connection whether it answers qCRC, unless known (one
    exchange; call it with `inferior` selected). For `mqd attach`, right after it reached a
    rank through a new connection: asking runs a command, and a command run while a rank is
    selected makes gdb fetch the rank's registers, which gdb holds right after an attach
    anyway (job.attach); asked in the first dump instead, it cost each rank reached through
    a connection of its own that fetch too. Learns what one read carries first
    (_learn_packet): asked after the stub's answer, which has gdb fetch the registers again,
    it cost a stack read more."""
    if _costs_exchanges(inferior):
        _learn_packet(inferior)
        _keeps(inferior)


# CRC-32 as gdb's stubs compute it for qCRC: polynomial 0x04c11db7, most significant bit first,
# all ones to start, no final inversion. zlib's CRC-32 is the same polynomial least
# significant bit first, with a final inversion: computed over bit-reversed bytes and undone.
_REVERSED = bytes(int("{:08b}".format(i)[::-1], 2) for i in range(256))


def stub_crc(data: bytes) -> int:
    """The CRC-32 a gdb stub answers to qCRC for memory holding `data`."""
    crc = zlib.crc32(data.translate(_REVERSED)) ^ 0xffffffff
    return int("{:032b}".format(crc)[::-1], 2)


_RECEIVED = re.compile(r'received: "(.*)"')


def _stub_crc_of(address: int, length: int) -> Union[int, bool, None]:
    """The stub's CRC of `length` bytes at `address` of the process it reads now; False when it
    cannot read them, None when it does not answer qCRC."""
    try:
        said = execute.output("maint packet qCRC:%x,%x" % (address, length))
    except gdb.error:
        return None
    found = _RECEIVED.search(said)
    reply = found.group(1) if found else ""
    if reply.startswith("C"):
        try:
            return int(reply[1:], 16)
        except ValueError:
            return None
    return False if reply.startswith("E") else None


def _keep_for_later(command_pages: Dict[int, Pages]) -> None:
    """At a command's end: keeps its pages (`command_pages`) of processes behind a stub that
    answers qCRC for later commands, with what earlier commands kept of processes this one did
    not read, at most MAX_KEPT_BYTES in all (the earlier ones first)."""
    now = {(inferior.num, inferior.pid) for inferior in gdb.inferiors()}
    for key in [k for k in _kept if k not in now]:  # detached, or another process now
        del _kept[key]
    ended: Dict[Tuple[int, int], Pages] = {}
    for inferior in gdb.inferiors():
        known = command_pages.get(inferior.num)
        if known and inferior.pid != 0 and inferior.num in _keeping and \
                _keeps(inferior, ask=False):
            _kept.pop((inferior.num, inferior.pid), None)
            ended[(inferior.num, inferior.pid)] = known
    held = sum(len(pages) for pages in _kept.values()) * PAGE
    for key, pages in ended.items():
        if held + len(pages) * PAGE > MAX_KEPT_BYTES:
            break
        _kept[key] = pages
        held += len(pages) * PAGE


def forget(*_: Any) -> None:
    """Drops every page of the command (an event handler as well: any event argument is
    ignored). Pages kept for later commands stay: they are proved unchanged before use."""
    if _pages is not None:
        _pages.clear()
    _spans.clear()
    for num, (pid, left) in _unverified.items():  # kept still, checked when next used
        _kept[(num, pid)] = left
    _unverified.clear()


def _resumed(*_: Any) -> None:
    """A thread resumed, an inferior function was called or a register written: the command's
    pages go (forget), and no stack top noted at an attach is trusted any more."""
    forget()
    _stack_tops.clear()
    _kept_tops.clear()


def _memory_changed(event: Any) -> None:
    """gdb wrote target memory: no page of the command serves any more, nor a kept page the
    write touched."""
    forget()
    first = event.address - event.address % PAGE
    for pages in _kept.values():
        for p in range(first, event.address + event.length, PAGE):
            pages.pop(p, None)
    for key, (at, data) in list(_kept_tops.items()):
        if at < event.address + event.length and event.address < at + len(data):
            del _kept_tops[key]


def _process_gone(event: Any) -> None:
    """An inferior exited or was removed: what was kept of it goes too."""
    forget()
    num = event.inferior.num
    for key in [k for k in _kept if k[0] == num]:
        del _kept[key]
    for key in [k for k in _stack_tops if k[0] == num]:
        del _stack_tops[key]
    for key in [k for k in _kept_tops if k[0] == num]:
        del _kept_tops[key]


_depth = 0  # Command blocks entered and not left: the outermost one owns the pages


class Command:
    """Pages are kept for the duration of a `with` block, one front-end command (the outermost,
    when one runs another), and then for later commands where they can be proved unchanged."""

    def __enter__(self) -> None:
        global _pages, _depth
        _depth += 1
        if _depth == 1:
            _pages = None if gdb.parameter("non-stop") else {}

    def __exit__(self, *exc: Any) -> Literal[False]:
        global _pages, _depth, _checks
        _depth -= 1
        if _depth == 0:
            if _pages is not None:
                for num, (_, left) in _unverified.items():  # not checked: kept as they were
                    command = _pages.setdefault(num, {})
                    for page, data in left.items():
                        command.setdefault(page, data)
                _keep_for_later(_pages)
                _keep_stack_tops()
            _unverified.clear()
            _pages = None
            _spans.clear()
            _keeping.clear()
            if _checks is not None:
                last_checks.update(_checks)
                _checks = None
        return False


# Whenever the debugger's view of a target's memory may change, the command's pages are
# dropped, and at a resume the stack tops noted; kept pages are dropped only where gdb wrote
# or with their process. (Connected once:
# an earlier copy's handlers are disconnected, events.)
events.connect(__name__, [(gdb.events.cont, _resumed), (gdb.events.new_inferior, forget),
                          (gdb.events.inferior_call, _resumed),
                          (gdb.events.register_changed, _resumed),
                          (gdb.events.memory_changed, _memory_changed),
                          (gdb.events.exited, _process_gone),
                          (gdb.events.inferior_deleted, _process_gone)])
