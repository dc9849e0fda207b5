"""The debug-type object for a stripped libmpi. Open MPI's DLL needs 19 of libmpi's internal
types, which Debian's stripped libmpi lacks; frontends/ompi-types builds an object with them
(ompi_types.o). load() adds it to the current inferior with add-symbol-file; ensure(num) makes
its types visible to inferior `num` only when its libmpi lacks them, which `mqd dump` calls for
every inferior it reads when the DLL is Open MPI's (Session.is_open_mpi), never for another
MPI's.

The object is loaded once, into the first inferior that needs it; every other inferior's
look-ups borrow it from there (lookup.Lookup.borrow): it holds types alone, the same for every
rank. Loading it into every inferior instead costs a job quadratic time through gdbserver: each
add-symbol-file makes gdb re-set its breakpoints in every inferior, reading each one's memory
(about 4 exchanges per inferior on its remote link; 99 per rank at 16 ranks); the one
add-symbol-file reads that code from the files instead (execute.CodeFromFiles), and offers
gdbserver no symbol look-ups (execute.NoSymbolOffers).

Where the object is looked for, first found wins: the path `mqd types PATH` was last given,
then $MQD_OMPI_TYPES, then ompi-types/<machine>/ompi_types.o in the front end's directory (the
one holding mqd.py), its parent (the layout of an installation and of BUILD/share/mqd-proxy)
and its grandparent. The file found must be an object file gdb loads: anything else (a file
that is no ELF object, one gdb refuses) is an MqdError naming it, which `mqd dump --all`
reports as that inferior's failure and goes on.
"""
from __future__ import annotations

import os
import shlex
from typing import Any, Dict, List, Optional

import gdb

from . import lookup
from .errors import MqdError
from .execute import CodeFromFiles, NoSymbolOffers, quietly
from .inferiors import SelectedInferior

# The directory of mqd.py, which holds this package.
FRONTEND_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# gdb's architecture names -> the machine directories of ompi-types (uname -m).
_MACHINES = {"i386:x86-64": "x86_64", "aarch64": "aarch64", "powerpc:common64": "ppc64le",
             "s390:64-bit": "s390x", "i386": "i686"}

_types_path: Optional[str] = None  # the object load() last loaded, reused for every inferior
# path -> the gdb.Objfile load() made of it, which other inferiors borrow
_loaded: Dict[str, Optional[gdb.Objfile]] = {}


def libmpi_has_types() -> bool:
    """Whether the current inferior has a complete ompi_communicator_t."""
    return lookup.of(gdb.selected_inferior().num).type("ompi_communicator_t") is not None


def candidates() -> List[str]:
    """The places the object is looked for, in order (see the module's docstring)."""
    arch = gdb.selected_inferior().architecture().name()
    machine = _MACHINES.get(arch, arch)
    found = []
    if os.environ.get("MQD_OMPI_TYPES"):
        found.append(os.environ["MQD_OMPI_TYPES"])
    here = FRONTEND_DIR
    for base in (here, os.path.join(here, ".."), os.path.join(here, "..", "..")):
        found.append(os.path.join(base, "ompi-types", machine, "ompi_types.o"))
    return found


def load(path: Optional[str] = None) -> str:
    """Adds the type object (`path`, or the first found) to the current inferior's program
    space (each inferior has its own: types loaded for one rank are not visible in another).
    Returns the path loaded; MqdError if there is none."""
    global _types_path
    if path and not os.path.exists(path):
        raise MqdError("no debug-type object at %s" % path)
    tried = [path] if path else ([_types_path] if _types_path else []) + candidates()
    for candidate in tried:
        if candidate and os.path.exists(candidate):
            _add_symbol_file(candidate)
            _types_path = candidate
            _loaded[candidate] = _objfile_of(candidate)
            return candidate
    raise MqdError("no debug types for libmpi: build them"
                   " (frontends/ompi-types/build-ompi-types.sh)"
                   " and set MQD_OMPI_TYPES, or run `mqd types PATH`")


_ELF_MAGIC = b"\x7fELF"


def _add_symbol_file(path: str) -> None:
    """Loads the object file `path` into the current inferior's program space; MqdError when
    it is none, or gdb cannot load it."""
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_ELF_MAGIC))
    except OSError as e:
        raise MqdError("cannot read the debug types in %s: %s" % (path, e.strerror or e))
    if magic != _ELF_MAGIC:
        raise MqdError("%s is not an object file: the debug types for libmpi are the object "
                       "frontends/ompi-types/build-ompi-types.sh builds" % path)
    try:
        with CodeFromFiles(), NoSymbolOffers():
            quietly("add-symbol-file %s" % shlex.quote(path))
    except gdb.error as e:
        raise MqdError("gdb cannot load the debug types in %s: %s" % (path, e))


def _objfile_of(path: str) -> Optional[gdb.Objfile]:
    """The current inferior's objfile of `path` that add-symbol-file made last, if any."""
    real = os.path.realpath(path)
    found = [o for o in gdb.selected_inferior().progspace.objfiles()
             if o.filename and os.path.realpath(o.filename) == real]
    return found[-1] if found else None


def ensure(num: int) -> None:
    """Makes the type object's types visible to inferior `num` if its libmpi lacks them: the
    object another inferior loaded, else loaded into this one."""
    with SelectedInferior(num):
        if libmpi_has_types():
            return
        shared = _loaded.get(_types_path) if _types_path else None
        if shared is not None and shared.is_valid():
            lookup.of(num).borrow(shared)
            if libmpi_has_types():
                return
        load()
