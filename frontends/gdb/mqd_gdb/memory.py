"""Target memory as the DLL's fetch_data reads it: whole pages, each read once per command.

A DLL reads a few bytes at a time, mostly near each other (one field of a request, then the
next request of the same free list): Open MPI's makes about 68,000 reads to dump 3,000
operations. Through gdbserver every gdb read is at least one exchange on the debugger's link
(a packet carries up to about 8 KiB), so the front end reads whole 4 KiB pages instead and
answers the next reads of a page from what it read.

The rule (docs/round-trips.md, "The debugger's own link"): a page read is kept only
while nothing can have changed it for the debugger, that is
  - within one `mqd` command (what a job's running processes write to a stopped rank's shared
    memory shows at the next command, as it shows at the next read of a native load run a
    moment later);
  - while no inferior has resumed, gdb wrote no memory and no inferior exited or was removed
    (each drops every page);
  - never in non-stop mode, where other threads run while the command does.
A read is answered exactly as a direct read would be: the pages it touches come from one read
of the pages around it; when that read fails (a page unmapped past the end of the bytes asked
for), the bytes asked for are read directly, as before, and nothing is kept. A page is the
smallest unit a mapping has on every architecture gdb debugs here, so no read of a kept page
could have failed where the page read succeeded.
"""
import gdb

PAGE = 4096

# inferior number -> {page address: its bytes}; None when nothing may be kept (outside a command)
_pages = None


def read(inferior, address, size):
    """`size` bytes at `address` of `inferior` (a gdb.Inferior, selected by the caller, since
    gdb 13 reads the selected one); raises gdb.MemoryError as Inferior.read_memory does."""
    if _pages is None or size <= 0:
        return bytes(inferior.read_memory(address, size))
    pages = _pages.setdefault(inferior.num, {})
    first = address - address % PAGE
    last = (address + size - 1) - (address + size - 1) % PAGE
    if last < first:  # the read wraps past the top of the address space
        return bytes(inferior.read_memory(address, size))
    if any(p not in pages for p in range(first, last + PAGE, PAGE)):
        try:
            span = bytes(inferior.read_memory(first, last + PAGE - first))
        except gdb.MemoryError:
            return bytes(inferior.read_memory(address, size))
        for p in range(first, last + PAGE, PAGE):
            pages[p] = span[p - first:p - first + PAGE]
    if first == last:
        return pages[first][address - first:address - first + size]
    joined = b"".join(pages[p] for p in range(first, last + PAGE, PAGE))
    return joined[address - first:address - first + size]


def forget(*_):
    """Drops every page kept (an event handler as well: any event argument is ignored)."""
    if _pages is not None:
        _pages.clear()


class Command:
    """Pages are kept for the duration of a `with` block, one front-end command."""

    def __enter__(self):
        global _pages
        _pages = None if gdb.parameter("non-stop") else {}

    def __exit__(self, *exc):
        global _pages
        _pages = None
        return False


_registered = False


def register():
    """Drops the pages whenever the debugger's view of a target's memory may change (once per
    gdb, however often the front end is sourced)."""
    global _registered
    if _registered:
        return
    _registered = True
    for event in (gdb.events.cont, gdb.events.memory_changed, gdb.events.exited,
                  gdb.events.inferior_deleted, gdb.events.new_inferior):
        event.connect(forget)
