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
inferior that loaded the same file (same name and build id): there they are moved by how far
that inferior loaded the file from where the first one did, which `maint info sections` shows
for every objfile at once. The whole search then costs a dictionary look-up per objfile. Which
full symbols a file lacks is kept the same way (_ABSENT).
"""
import re

import gdb

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
_SECTIONS_OF = re.compile(r"^(?:Exec|Object) file: `(.*)', file type")
_SECTION = re.compile(r"^\s*\[\s*\d+\]\s+(0x[0-9a-fA-F]+)->")

# (file name, build id) -> (where the first inferior loaded the file: its first section's
# address, {name: (kind, address)} there): each file's minimal symbols, read once.
_FILES = {}

# (file name, build id, method, name, domain): full symbols a file does not have, found out in
# one inferior and true in every inferior that loaded the same file. A job's ranks load the same
# hundred or more files (Open MPI's components): without this, each rank's search for a name
# that only a minimal symbol has asks every one of them again.
_ABSENT = set()


class Lookup:
    """The look-ups of one program space (one inferior): see the module's rules."""

    def __init__(self, inferior_num):
        self.inferior_num = inferior_num
        self.asked = {}  # (kind, name) -> answer, kind "type" or "address": what was looked up
        self._msymbols = {}  # gdb.Objfile -> ({name: (kind, address)}, shift to add)
        self._anchors = {}   # file name -> its first section's address in this inferior
        self._borrowed = []  # objfiles of other program spaces, searched after this one's

    def borrow(self, objfile):
        """Searches `objfile`, which another inferior loaded, after this inferior's own, as if
        this inferior had loaded it last: for a file of types alone (no symbol with an
        address, no minimal symbol), which is the same for every inferior that needs it
        (debug_types)."""
        if objfile not in self._borrowed:
            self._borrowed.append(objfile)

    def objfiles(self):
        """The inferior's objfiles now (symbol files come and go), in gdb's order, the
        executable first, then those it borrowed."""
        objfiles = list(find_inferior(self.inferior_num).progspace.objfiles())
        for gone in [o for o in self._msymbols if not o.is_valid()]:
            del self._msymbols[gone]
        self._borrowed = [o for o in self._borrowed if o.is_valid()]
        return objfiles + [o for o in self._borrowed if o not in objfiles]

    def type(self, name):
        """The named type, typedefs stripped, with a definition; None if there is none."""
        found = self._type(name)
        self.asked[("type", name)] = found
        return found

    def address(self, name):
        """The address of symbol `name` by the module's rule; None if there is none."""
        found = self._address(name)
        self.asked[("address", name)] = found
        return found

    def _type(self, name):
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

    def _address(self, name):
        for sym in self._symbols(name, gdb.SYMBOL_VAR_DOMAIN):
            if sym.addr_class in _ADDRESSED:
                return int(sym.value().address)
        file_local = None
        for objfile in self.objfiles():
            if objfile in self._borrowed:
                continue  # no minimal symbols (borrow)
            table, shift = self._minimal(objfile)
            found = table.get(name)
            if found is None:
                continue
            kind, address = found
            if kind in _EXTERNAL:
                return address + shift
            if kind in _FILE_LOCAL and file_local is None:
                file_local = address + shift
        return file_local

    def _symbols(self, name, domain):
        """Full symbols named `name`: every objfile's global one, then every static one."""
        objfiles = self.objfiles()
        for method in ("lookup_global_symbol", "lookup_static_symbol"):
            for objfile in objfiles:
                build_id = objfile.build_id
                absent = (objfile.filename, build_id, method, name, domain)
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

    def _minimal(self, objfile):
        """({name: (kind, address)}, shift): `objfile`'s minimal symbols, the first of each
        name, at address + shift in this inferior."""
        if objfile not in self._msymbols:
            if objfile.owner is not None:  # a separate debug file has none of its own
                self._msymbols[objfile] = ({}, 0)
                return self._msymbols[objfile]
            name = objfile.filename
            key = (name, objfile.build_id)
            anchor = self._anchor(name)
            kept = _FILES.get(key) if anchor is not None else None
            if kept is None:
                kept = (anchor, self._read_minimal(name))
                if anchor is not None:
                    _FILES[key] = kept
            self._msymbols[objfile] = (kept[1], anchor - kept[0] if anchor is not None else 0)
        return self._msymbols[objfile]

    def _read_minimal(self, name):
        table = {}
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

    def _anchor(self, name):
        """Where this inferior loaded file `name`: its first section's address (None if gdb
        lists no section for it)."""
        if name not in self._anchors:
            with SelectedInferior(self.inferior_num):
                text = output("maint info sections -all-objects")
            current = None
            for line in text.splitlines():
                header = _SECTIONS_OF.match(line)
                if header:
                    current = header.group(1)
                    continue
                section = _SECTION.match(line)
                if section and current is not None and current not in self._anchors:
                    self._anchors[current] = int(section.group(1), 16)
            self._anchors.setdefault(name, None)
        return self._anchors[name]


def _quoted(path):
    """A path as one argument of a gdb command (gdb_argv's quoting)."""
    return "'" + path.replace("\\", "\\\\").replace("'", "\\'") + "'"


_lookups = {}  # inferior number -> Lookup


def of(inferior_num):
    """The Lookup of inferior `inferior_num`, kept while its program space is the same."""
    progspace = find_inferior(inferior_num).progspace
    kept = _lookups.get(inferior_num)
    if kept is None or kept[0] is not progspace:
        kept = _lookups[inferior_num] = (progspace, Lookup(inferior_num))
    return kept[1]
