"""Symbols and types of one inferior, looked up in gdb's symbol tables alone, never in the
target.

Why not gdb's own global look-ups: in gdb 13, every global search (gdb.lookup_type of a
non-primitive name, gdb.lookup_global_symbol, parse_and_eval of a global, the address of an
`extern` declaration) runs the SVR4 linker-namespace search, which re-reads the executable's
program headers, its dynamic section and r_debug from the target each time (elf_locate_base:
17 remote packets per look-up through gdbserver, 0.35 s at a 20 ms round trip; docs/round-trips.md,
"The debugger's own link"). The per-objfile look-ups used here read only what gdb has loaded.

The rules, which the DLL's find_type, find_symbol and find_function answers follow:

  type      TYPE_NAMES   a C base type ("int", "unsigned long", ...): gdb's own, which needs
                         no search. Otherwise "struct X", "union X" or "enum X" is the tag X,
                         and any other name a typedef. Candidates are each objfile's global,
                         then static definitions, in gdb's objfile order; the first with a
                         definition (sizeof > 0) wins, so an opaque declaration (the MPI
                         headers' handles) is skipped for a definition in another objfile.
  address   full symbols with a storage address (static storage or a function), global
            then static, in objfile order; else gdb's minimal symbols (ELF symbol tables):
            the first external one in objfile order (the executable's copy of a
            copy-relocated variable comes first, as in gdb's own search), else the first
            file-local one. Trampolines (PLT entries) are never an answer.

A file's minimal symbols are read once per gdb session (`maint print msymbols`, per objfile,
only as far as the search needs), in the first inferior that needs them, and shared by every
inferior that loaded the same file (same name and build id; the vDSO, which gdb names after the
address it was mapped at, by its build id alone): there they are moved by how far that
inferior loaded the file from where the first one did, measured at the file's anchor, the
start of its .text (`maint info sections -all-objects .text`: gdb's own section table, which
costs no exchange with a remote target, unlike `info sharedlibrary`; read again once the
inferior's files change). Running that command with a rank's thread selected makes gdb fetch
the thread's registers (gdb checks the frame's language after every command): `mqd attach`
reads each rank's anchors right after its attach (read_anchors), while gdb holds them anyway.
Another inferior looks
for the anchor only of a file whose table has the name. A file without a .text has its table
read in each inferior that searches it. The whole search then costs a dictionary look-up per
objfile. Which full symbols a file lacks is kept the same way (_ABSENT). A type depends on nothing but the files searched, in their order: an inferior that
loaded the same files (names and build ids) as one that already found it gets the same answer
without a search (_TYPES).
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import gdb

from . import events
from .execute import output
from .inferiors import SelectedInferior, find as find_inferior

# C's primitive types in gdb (c-lang.c), which it answers without a symbol search. Others,
# such as _Bool, are DWARF base types: found in the objfiles like any typedef.
TYPE_NAMES = frozenset([
    "char", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int",
    "long", "unsigned long", "long long", "unsigned long long", "float", "double",
    "long double", "void"])

_TAG_DOMAIN = ("struct ", "union ", "enum ")
_MSYMBOL = re.compile(r"^\[\s*\d+\] (\S) (0x[0-9a-fA-F]+) (\S+)")
_EXTERNAL = frozenset("TDBAi")  # mst_text, _data, _bss, _abs, gnu ifuncs
_FILE_LOCAL = frozenset("tdb")
_ADDRESSED = (gdb.SYMBOL_LOC_STATIC, gdb.SYMBOL_LOC_BLOCK)
_SECTION = re.compile(r"^\s*\[\s*\d+\]\s+(0x[0-9a-fA-F]+)->")
_OWNER = re.compile(r"^(?:Exec|Object) file: `(.*)', file type ")
_VDSO = "system-supplied DSO at "  # how gdb names the vDSO, before its address

# What names a file across inferiors (_file): (its name, its build id).
FileKey = Tuple[str, Optional[str]]

# A file's minimal symbols: {name: (kind, address)}, kind as `maint print msymbols` gives it.
MinimalSymbols = Dict[str, Tuple[str, int]]

# _file(objfile) -> (the file's anchor in the first inferior that read it, its minimal symbols
# there): each file's minimal symbols, read once.
_FILES: Dict[FileKey, Tuple[int, MinimalSymbols]] = {}

# _file(objfile) + (method, name, domain): full symbols a file does not have, found out in
# one inferior and true in every inferior that loaded the same file. A job's ranks load the same
# hundred or more files (Open MPI's components): without this, each rank's search for a name
# that only a minimal symbol has asks every one of them again.
_ABSENT: Set[Tuple[Any, ...]] = set()

# (the files an inferior searches, in order; type name) -> the type it found (None: none): a
# job's ranks load the same files, and each asks the same types. A file is named as _file()
# names it, or, without a build id, by its gdb.Objfile (shared by the inferiors that borrow it,
# such as the debug-type object).
_TYPES: Dict[Tuple[Tuple[Any, ...], str], Optional[gdb.Type]] = {}

# Bumped whenever gdb loads or frees a file: what any inferior searches may have changed.
_generation = [0]

# Where each program space's files are (Lookup's anchors): a count bumped by a change in a
# program space not named, and {gdb.Progspace: a count bumped by each change of its files}.
_unnamed_space_changes = [0]
_space_changes: Dict[gdb.Progspace, int] = {}


def _space_of(event: Any) -> Optional[gdb.Progspace]:
    """The program space whose files `event` changed; None if it does not say."""
    for attribute in ("new_objfile", "objfile"):
        objfile = getattr(event, attribute, None)
        if objfile is not None:
            return objfile.progspace if objfile.is_valid() else None
    return getattr(event, "progspace", None)


def _files_changed(event: Any = None) -> None:
    _generation[0] += 1
    space = _space_of(event) if event is not None else None
    if space is None:
        _unnamed_space_changes[0] += 1
    else:
        _space_changes[space] = _space_changes.get(space, 0) + 1


def _file_freed(event: Any = None) -> None:
    _files_changed(event)
    _TYPES.clear()  # its gdb.Objfile may be in a key


# Connected once: an earlier copy's handlers are disconnected (events).
events.connect(__name__, [(gdb.events.new_objfile, _files_changed),
                          (gdb.events.free_objfile, _file_freed),
                          (gdb.events.clear_objfiles, _file_freed)])


class Lookup:
    """The look-ups of one program space (one inferior): see the module's rules."""

    def __init__(self, inferior_num: int) -> None:
        self.inferior_num = inferior_num
        # (kind, name) -> answer, kind "type" or "address": what was looked up
        self.asked: Dict[Tuple[str, str], Any] = {}
        # gdb.Objfile -> (its minimal symbols, shift to add)
        self._msymbols: Dict[gdb.Objfile, Tuple[MinimalSymbols, int]] = {}
        # file name -> the start of its .text here (its anchor)
        self._texts: Optional[Dict[str, int]] = None
        self._texts_read: Optional[Tuple[int, int]] = None  # _files_now() when _texts was read
        # objfiles of other program spaces, searched after this one's
        self._borrowed: List[gdb.Objfile] = []
        # (_generation, what _TYPES knows the objfiles by)
        self._searched: Tuple[Optional[int], Tuple[Any, ...]] = (None, ())

    def borrow(self, objfile: gdb.Objfile) -> None:
        """Searches `objfile`, which another inferior loaded, after this inferior's own, as if
        this inferior had loaded it last: for a file of types alone (no symbol with an
        address, no minimal symbol), which is the same for every inferior that needs it
        (debug_types)."""
        if objfile not in self._borrowed:
            self._borrowed.append(objfile)
            self._searched = (None, ())

    def objfiles(self) -> List[gdb.Objfile]:
        """The inferior's objfiles now (symbol files come and go), in gdb's order, the
        executable first, then those it borrowed."""
        objfiles = list(find_inferior(self.inferior_num).progspace.objfiles())
        for gone in [o for o in self._msymbols if not o.is_valid()]:
            del self._msymbols[gone]
        self._borrowed = [o for o in self._borrowed if o.is_valid()]
        return objfiles + [o for o in self._borrowed if o not in objfiles]

    def type(self, name: str) -> Optional[gdb.Type]:
        """The named type, typedefs stripped, with a definition; None if there is none."""
        key = (self._files(), name)
        if key in _TYPES:
            found = _TYPES[key]
        else:
            found = _TYPES[key] = self._type(name)
        self.asked[("type", name)] = found
        return found

    def _files(self) -> Tuple[Any, ...]:
        """The files this inferior searches, in order, as _TYPES knows them."""
        generation, files = self._searched
        if generation != _generation[0]:
            files = tuple(o if o.build_id is None else _file(o) for o in self.objfiles())
            self._searched = (_generation[0], files)
        return files

    def address(self, name: str) -> Optional[int]:
        """The address of symbol `name` by the module's rule; None if there is none."""
        found = self._address(name)
        self.asked[("address", name)] = found
        return found

    def _type(self, name: str) -> Optional[gdb.Type]:
        if name in TYPE_NAMES:
            return gdb.lookup_type(name).strip_typedefs()
        domain = gdb.SYMBOL_VAR_DOMAIN
        for prefix in _TAG_DOMAIN:
            if name.startswith(prefix):
                name, domain = name[len(prefix):].strip(), gdb.SYMBOL_STRUCT_DOMAIN
        for sym in self._symbols(name, domain):
            if sym.addr_class == gdb.SYMBOL_LOC_TYPEDEF and sym.type is not None:
                t = sym.type.strip_typedefs()
                if t.sizeof > 0:
                    return t
        return None

    def _address(self, name: str) -> Optional[int]:
        for sym in self._symbols(name, gdb.SYMBOL_VAR_DOMAIN):
            if sym.addr_class in _ADDRESSED:
                return int(sym.value().address)
        file_local = None
        for objfile in self.objfiles():
            if objfile in self._borrowed or objfile.owner is not None:
                continue  # no minimal symbols (borrow; a separate debug file)
            found = self._minimal_symbol(objfile, name)
            if found is None:
                continue
            kind, address = found
            if kind in _EXTERNAL:
                return address
            if kind in _FILE_LOCAL and file_local is None:
                file_local = address
        return file_local

    def _symbols(self, name: str, domain: int) -> Iterator[gdb.Symbol]:
        """Full symbols named `name`: every objfile's global one, then every static one."""
        objfiles = self.objfiles()
        for method in ("lookup_global_symbol", "lookup_static_symbol"):
            for objfile in objfiles:
                build_id = objfile.build_id
                absent = _file(objfile) + (method, name, domain)
                if build_id is not None and absent in _ABSENT:
                    continue
                try:
                    sym = getattr(objfile, method)(name, domain)
                except gdb.error:
                    sym = None
                if sym is not None:
                    yield sym
                elif build_id is not None:  # a file without one may change under its name
                    _ABSENT.add(absent)

    def _minimal_symbol(self, objfile: gdb.Objfile, name: str) -> Optional[Tuple[str, int]]:
        """(kind, address in this inferior) of `objfile`'s first minimal symbol `name`; None if
        it has none."""
        here = self._msymbols.get(objfile)
        if here is None:
            key = _file(objfile)
            kept = _FILES.get(key)
            if kept is None:  # the first inferior to search this file
                here = (self._read_minimal(objfile.filename), 0)
                anchor = self._anchor(objfile)
                if anchor is not None:
                    _FILES[key] = (anchor, here[0])
            else:
                if name not in kept[1]:
                    return None  # not in the file: where this inferior loaded it is no matter
                anchor = self._anchor(objfile)
                if anchor is not None:
                    here = (kept[1], anchor - kept[0])
                else:
                    here = (self._read_minimal(objfile.filename), 0)
            self._msymbols[objfile] = here
        found = here[0].get(name)
        return None if found is None else (found[0], found[1] + here[1])

    def _read_minimal(self, name: str) -> MinimalSymbols:
        table: MinimalSymbols = {}
        with SelectedInferior(self.inferior_num):
            text = output("maint print msymbols -objfile %s" % _quoted(name))
        section = None
        for line in text.splitlines():
            if line.startswith("Object file "):
                section = line[len("Object file "):].rstrip(":")
                continue
            m = _MSYMBOL.match(line)
            if m and section == name and m.group(1) != "S":
                table.setdefault(m.group(3), (m.group(1), int(m.group(2), 16)))
        return table

    def _anchor(self, objfile: gdb.Objfile) -> Optional[int]:
        """Where this inferior loaded `objfile`'s file: the start of its .text (see the
        module's docstring); None if it has none."""
        texts = self._texts
        if texts is None or self._texts_read != self._files_now():
            texts = self.read_anchors()
        return texts.get(objfile.filename)

    def _files_now(self) -> Tuple[int, int]:
        """What the anchors read now depend on: the changes of this inferior's files so far."""
        space = find_inferior(self.inferior_num).progspace
        return (_unnamed_space_changes[0], _space_changes.get(space, 0))

    def read_anchors(self) -> Dict[str, int]:
        """Reads where this inferior loaded each of its files (the anchors) now; kept until
        its files change. Returns them: file name -> the start of its .text."""
        texts: Dict[str, int] = {}
        with SelectedInferior(self.inferior_num):
            text = output("maint info sections -all-objects .text")
            self._texts_read = self._files_now()
            self._texts = texts
            owner = None
            for line in text.splitlines():
                m = _OWNER.match(line)
                if m:
                    owner = m.group(1)
                    continue
                m = _SECTION.match(line)
                if m and owner is not None:
                    texts.setdefault(owner, int(m.group(1), 16))
                    owner = None
        return texts


def _file(objfile: gdb.Objfile) -> FileKey:
    """What names a file across inferiors: its name and build id; for the vDSO, whose name
    holds the address it was mapped at, its build id alone (without one, its name)."""
    if objfile.build_id is not None and objfile.filename.startswith(_VDSO):
        return ("system-supplied DSO", objfile.build_id)
    return (objfile.filename, objfile.build_id)


def _quoted(path: str) -> str:
    """A path as one argument of a gdb command (gdb_argv's quoting)."""
    return "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"


_lookups: Dict[int, Tuple[gdb.Progspace, Lookup]] = {}  # inferior number -> its Lookup


def of(inferior_num: int) -> Lookup:
    """The Lookup of inferior `inferior_num`, kept while its program space is the same."""
    progspace = find_inferior(inferior_num).progspace
    kept = _lookups.get(inferior_num)
    if kept is None or kept[0] is not progspace:
        kept = _lookups[inferior_num] = (progspace, Lookup(inferior_num))
    return kept[1]
