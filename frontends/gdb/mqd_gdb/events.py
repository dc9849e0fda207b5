"""The gdb events the front end follows. connect(owner, handlers) connects the event handlers of
`owner` (a module, by its name) to gdb's event registries (gdb.events.*), and disconnects first
whatever an earlier copy of the same owner connected: a module connects its handlers when it is
imported, sourcing ../mqd.py again imports every module of this package afresh (and a test may
reload one), and gdb then calls one set of handlers, the newest copy's, not one set more per
load.

What is connected is kept outside the package, in sys.modules under KEPT: the one place a new
copy of the package finds what an old one left (../mqd.py removes mqd_gdb and its modules from
sys.modules, and nothing else). A handler is disconnected only where it was connected, and
once: gdb 13 fails when asked to disconnect a handler that a registry does not hold (a
SystemError). A copy of the front end older than this module connected its handlers without
keeping them: those stay until gdb ends.
"""
import sys
import types
from typing import Any, Callable, Dict, List, Sequence, Tuple

# The name in sys.modules of the module that holds what is connected ({owner: [(registry,
# handler)]} as its `handlers`).
KEPT = "_mqd_gdb_event_handlers"

# A gdb event registry (gdb.events.NAME) and a handler connected to it.
Connection = Tuple[Any, Callable[..., Any]]


def _connected() -> Dict[str, List[Connection]]:
    """owner -> [(registry, handler)] it connected, kept across copies of the package."""
    kept = sys.modules.get(KEPT)
    if kept is None:
        kept = types.ModuleType(KEPT, "The gdb event handlers the mqd front end connected "
                                      "(mqd_gdb.events).")
        sys.modules[KEPT] = kept
    handlers: Dict[str, List[Connection]] = vars(kept).setdefault("handlers", {})
    return handlers


def connect(owner: str, handlers: Sequence[Connection]) -> None:
    """Connects each (registry, handler) of `handlers` for `owner` (a module's __name__),
    after disconnecting every handler that `owner` connected before."""
    disconnect(owner)
    done: List[Connection] = []
    try:
        for registry, handler in handlers:
            registry.connect(handler)
            done.append((registry, handler))
    finally:
        _connected()[owner] = done


def disconnect(owner: str) -> None:
    """Disconnects every handler that `owner` connected (none: nothing to do)."""
    for registry, handler in _connected().pop(owner, []):
        registry.disconnect(handler)
