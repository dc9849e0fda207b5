"""Target memory as the DLL's fetch_data reads it: whole pages, each read once per command.

A DLL reads a few bytes at a time, mostly near each other (one field of a request, then the
next request of the same free list): Open MPI's makes about 68,000 reads to dump 3,000
operations. Through gdbserver every gdb read is at least one exchange on the debugger's link
(a packet carries up to about 8 KiB), so the front end reads a small read's whole 4 KiB page
instead, and answers the next reads of a page from what it read.

The rule (docs/round-trips.md, "The debugger's own link"): a page read is kept only
while nothing can have changed it for the debugger, that is
  - within one `mqd` command (what a job's running processes write to a stopped rank's shared
    memory shows at the next command, as it shows at the next read of a native load run a
    moment later);
  - while no inferior has resumed, gdb wrote no memory and no inferior exited or was removed
    (each drops every page);
  - never in non-stop mode, where other threads run while the command does.
A read is answered exactly as a direct read would be. A read within one page comes from one
read of that page; when that fails (the page is only partly readable), the bytes asked for are
read directly, as before, and nothing is kept. A longer read is read as asked, and keeps the
pages it covers whole. A page is the smallest unit a mapping has on every architecture gdb
debugs here, so no read of a kept page could have failed where the page read succeeded.
"""
import gdb

PAGE = 4096

# inferior number -> {page address: its bytes}; None when nothing may be kept (outside a command)
_pages = None


def read(inferior, address, size):
    """`size` bytes at `address` of `inferior` (a gdb.Inferior, selected by the caller, since
    gdb 13 reads the selected one); raises gdb.MemoryError as Inferior.read_memory does.

    A read within one page brings the whole page: the same single exchange through gdbserver,
    and the DLL's next reads are most often in it. A longer read (the shim's blocks and
    windows) is read as asked, as many packets as before, and the pages it covers whole are
    kept."""
    if _pages is None or size <= 0:
        return bytes(inferior.read_memory(address, size))
    pages = _pages.setdefault(inferior.num, {})
    first = address - address % PAGE
    end = address + size
    if end <= first + PAGE:  # within one page: the DLL's reads, on every fetch_data
        page = pages.get(first)
        if page is None:
            try:
                page = bytes(inferior.read_memory(first, PAGE))
            except gdb.MemoryError:  # the page cannot be read whole: as before, nothing kept
                return bytes(inferior.read_memory(address, size))
            pages[first] = page
        return page[address - first:end - first]
    if all(p in pages for p in range(first, end, PAGE)):
        joined = b"".join(pages[p] for p in range(first, end, PAGE))
        return joined[address - first:end - first]
    data = bytes(inferior.read_memory(address, size))
    for p in range(first if first == address else first + PAGE, end - PAGE + 1, PAGE):
        pages[p] = data[p - address:p - address + PAGE]
    return data


def string(inferior, address, limit=4096):
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


def forget(*_):
    """Drops every page kept (an event handler as well: any event argument is ignored)."""
    if _pages is not None:
        _pages.clear()


_depth = 0  # commands running, counting one that another runs (mqd dump runs mqd load)


class Command:
    """Pages are kept for the duration of a `with` block, one front-end command (the outermost,
    when one runs another)."""

    def __enter__(self):
        global _pages, _depth
        _depth += 1
        if _depth == 1:
            _pages = None if gdb.parameter("non-stop") else {}

    def __exit__(self, *exc):
        global _pages, _depth
        _depth -= 1
        if _depth == 0:
            _pages = None
        return False


# Whenever the debugger's view of a target's memory may change, every page is dropped.
for _event in (gdb.events.cont, gdb.events.memory_changed, gdb.events.exited,
               gdb.events.inferior_deleted, gdb.events.new_inferior):
    _event.connect(forget)
