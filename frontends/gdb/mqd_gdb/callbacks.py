"""What gdb serves the DLL: the basic, image and process callback tables
(schema/mqs_interface.h), answered from the inferiors.

  symbols        expression evaluation, `&name` in the image's inferior (Open MPI's libmpi
                 has only .dynsym, which gdb's symbol look-up does not search)
  types, fields  gdb's type API; an opaque 0-sized declaration (the MPI headers' handles) is
  and sizes      skipped for a definition from another objfile; fields inside anonymous
                 members are found
  memory         the inferior's memory; target_to_host swaps bytes when the target's byte
                 order is not this machine's
  type sizes     the target architecture's short, int, long, long long, pointer, and for Open
                 MPI's DLL only (its header's 7 members; MPICH's has 5) _Bool and size_t
  global rank    global_rank(): from the launcher's environment of a local process, else from
                 Open MPI's MPI_COMM_WORLD or MPICH's MPIR_Process in the target, else
                 MQS_INVALID_PROCESS
  malloc/free    libc's calloc and free; info put by the DLL is kept on its Image or Process
  errorstring    the front end's own codes (ERR_*)
  dprints        kept in the session's messages (`mqd status` shows the last ones)

A callback never raises into ctypes: a failure (a gdb error, an unknown handle) is recorded
in the messages ("callback NAME failed: ...") and the DLL gets that callback's failure answer.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

import gdb

from . import abi, job, lookup, memory
from .handles import Handles, Image, Process
from .inferiors import SelectedInferior, find as find_inferior, is_local, select

R = TypeVar("R")  # what a guarded callback answers

# How a dprints text is kept in the messages, and the prefix of the one kind of dprints that
# libmqdproxy.so adds of its own (docs/transparency.md, "What the shim adds"): a warning about
# the process being set up, such as a byte order that contradicts the target's memory.
DLL_MESSAGE = "dll: "
PROXY_WARNING = "mqd-proxy: "


def proxy_warnings(messages: List[str]) -> List[str]:
    """The proxy's warnings among `messages` (kept dprints), without their prefixes."""
    prefix = DLL_MESSAGE + PROXY_WARNING
    return [m[len(prefix):] for m in messages if m.startswith(prefix)]


# The front end's own error codes, answered by its errorstring callback.
ERR_NO_SYMBOL = 1001
ERR_MEMORY = 1002
ERR_NO_TYPE_INFO = 1003
FRONTEND_ERRORS = {
    ERR_NO_SYMBOL: b"gdb: no such symbol in the inferior",
    ERR_MEMORY: b"gdb: cannot read the inferior's memory there",
    ERR_NO_TYPE_INFO: b"gdb: type information unavailable",
}


class Callbacks:
    """The three callback tables for one session (basic, image_callbacks, process_callbacks,
    ctypes structs to hand the DLL), serving the objects of `handles` and appending failures
    and the DLL's dprints to `messages`. get_type_sizes writes the first `type_sizes` members
    of mqs_target_type_sizes (abi.TYPE_SIZES_*_INTS: as many as the DLL's header has, which
    the Session decides; all 7 until it has). Keep it alive as long as the DLL may call back:
    the tables and the function objects in them are owned here."""

    def __init__(self, a: abi.Abi, handles: Handles, messages: List[str],
                 type_sizes: int = abi.TYPE_SIZES_OPENMPI_INTS) -> None:
        self.handles = handles
        self.messages = messages
        self.type_sizes = type_sizes
        self.strings: Dict[bytes, Any] = {}  # errorstring's texts, kept for the DLL
        self.libc = ctypes.CDLL(None)
        self.libc.calloc.restype = ctypes.c_void_p
        self.libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.libc.free.argtypes = [ctypes.c_void_p]
        c = self._functions = {
            "malloc": a.malloc_ft(self._cb_malloc),
            "free": a.free_ft(self._cb_free),
            "dprints": a.dprints_ft(self._cb_dprints),
            "errorstring": a.errorstring_ft(self._cb_errorstring),
            "put_image_info": a.put_info_ft(self._cb_put_image_info),
            "get_image_info": a.get_info_ft(self._cb_get_image_info),
            "put_process_info": a.put_info_ft(self._cb_put_process_info),
            "get_process_info": a.get_info_ft(self._cb_get_process_info),
            "put_job_info": a.put_info_ft(lambda job, info: None),
            "get_job_info": a.get_info_ft(lambda job: None),
            "get_type_sizes": a.get_type_sizes_ft(self._cb_get_type_sizes),
            "find_function": a.find_function_ft(self._cb_find_function),
            "find_symbol": a.find_symbol_ft(self._cb_find_symbol),
            "find_type": a.find_type_ft(self._cb_find_type),
            "field_offset": a.field_offset_ft(self._cb_field_offset),
            "sizeof": a.sizeof_ft(self._cb_sizeof),
            "get_global_rank": a.get_global_rank_ft(self._cb_get_global_rank),
            "get_image": a.get_image_ft(self._cb_get_image),
            "fetch_data": a.fetch_data_ft(self._cb_fetch_data),
            "target_to_host": a.target_to_host_ft(self._cb_target_to_host),
            "get_process_job": a.get_process_job_ft(lambda p: None),
            "get_process_identity": a.get_process_identity_ft(
                lambda p: abi.MQS_INVALID_PROCESS),
        }
        self.basic = a.BasicCallbacks(*(c[n] for n, _ in a.BasicCallbacks._fields_))
        self.image_callbacks = a.ImageCallbacks(*(c[n] for n, _ in a.ImageCallbacks._fields_))
        self.process_callbacks = a.ProcessCallbacks(
            *(c[n] for n, _ in a.ProcessCallbacks._fields_))

    def _guard(self, failure: R, fn: Callable[..., R], *args: Any) -> R:
        try:
            return fn(*args)
        except Exception as e:  # gdb errors, unknown handles: the DLL gets `failure`
            self.messages.append("callback %s failed: %s" % (fn.__name__, e))
            return failure

    # ---- basic: memory, messages, info kept for the DLL ----

    def _cb_malloc(self, size: int) -> Optional[int]:
        return self._guard(None, lambda: self.libc.calloc(1, size or 1))

    def _cb_free(self, address: Optional[int]) -> None:
        if address:
            self.libc.free(address)

    def _cb_dprints(self, text: Optional[bytes]) -> None:
        self.messages.append(DLL_MESSAGE + (text or b"").decode("utf-8", "replace"))

    def _cb_errorstring(self, code: int) -> int:
        text = FRONTEND_ERRORS.get(code, b"gdb: error %d" % code)
        buf = self.strings.setdefault(text, ctypes.create_string_buffer(text))
        return ctypes.addressof(buf)

    def _cb_put_image_info(self, image: Optional[int], info: Optional[int]) -> None:
        self._guard(None, lambda: setattr(self.handles.get(image, Image), "info", info))

    def _cb_get_image_info(self, image: Optional[int]) -> Optional[int]:
        return self._guard(None, lambda: self.handles.get(image, Image).info)

    def _cb_put_process_info(self, process: Optional[int], info: Optional[int]) -> None:
        self._guard(None, lambda: setattr(self.handles.get(process, Process), "info", info))

    def _cb_get_process_info(self, process: Optional[int]) -> Optional[int]:
        return self._guard(None, lambda: self.handles.get(process, Process).info)

    # ---- image: type sizes, symbols, types ----

    def _cb_get_type_sizes(self, process: Optional[int], sizes: Any) -> None:
        def fill() -> None:
            types = lookup.of(self.handles.get(process, Process).inferior_num)
            s = sizes.contents
            s.short_size = gdb.lookup_type("short").sizeof
            s.int_size = gdb.lookup_type("int").sizeof
            s.long_size = gdb.lookup_type("long").sizeof
            s.long_long_size = gdb.lookup_type("long long").sizeof
            s.pointer_size = gdb.lookup_type("void").pointer().sizeof
            if self.type_sizes >= abi.TYPE_SIZES_OPENMPI_INTS:
                # Past the end of MPICH's 5-member struct: only for Open MPI's DLL.
                s.bool_size = _type_size(types, "_Bool", 1)
                s.size_t_size = _type_size(types, "size_t", s.pointer_size)
        self._guard(None, fill)

    def _lookup(self, image: Optional[int], name: bytes, addr: Any) -> int:
        def find_address() -> int:
            img = self.handles.get(image, Image)
            address = lookup.of(img.inferior_num).address(name.decode())
            if address is None:
                return ERR_NO_SYMBOL
            if addr:
                addr[0] = address
            return abi.MQS_OK
        return self._guard(ERR_NO_SYMBOL, find_address)

    def _cb_find_function(self, image: Optional[int], name: bytes, lang: int, addr: Any) -> int:
        return self._lookup(image, name, addr)

    def _cb_find_symbol(self, image: Optional[int], name: bytes, addr: Any) -> int:
        return self._lookup(image, name, addr)

    def _cb_find_type(self, image: Optional[int], name: bytes, lang: int) -> Optional[int]:
        def find() -> Optional[int]:
            img = self.handles.get(image, Image)
            key = name.decode()
            if key not in img.types:
                t = lookup.of(img.inferior_num).type(key)
                handle = None
                if t is not None:
                    handle = self.handles.new_type(key, t)
                img.types[key] = handle
            return img.types[key]
        return self._guard(None, find)

    def _cb_field_offset(self, handle: Optional[int], field: bytes) -> int:
        def offset() -> int:
            t = self.handles.types.get(handle) if handle is not None else None
            if t is None:
                return -1
            return _field_offset(t, field.decode())
        return self._guard(-1, offset)

    def _cb_sizeof(self, handle: Optional[int]) -> int:
        types = self.handles.types
        return self._guard(0, lambda: types[handle].sizeof if handle in types else 0)

    # ---- process: rank, image, memory, byte order ----

    def _cb_get_global_rank(self, process: Optional[int]) -> int:
        return self._guard(abi.MQS_INVALID_PROCESS, lambda: global_rank(
            self.handles.get(process, Process)))

    def _cb_get_image(self, process: Optional[int]) -> Optional[int]:
        return self._guard(None, lambda: self.handles.get(process, Process).image.handle)

    def _cb_fetch_data(self, process: Optional[int], address: int, size: int,
                       buf: int) -> int:
        def fetch() -> int:
            p = self.handles.get(process, Process)
            # The DLL may ask about any process it was given, not only the one of the call in
            # progress (libmqdproxy.so reads the others' memory ahead). gdb 13 reads the
            # selected inferior's memory whichever Inferior is asked, so the process's own is
            # selected for the read, and stays selected: the next read is most often of the
            # same process, and each switch costs exchanges on a remote link (giving the
            # selection back after every read tripled a read's cost through gdbserver). The
            # user's selection comes back when the process's dump ends (the SelectedInferior
            # around dump.dump).
            try:
                if gdb.selected_inferior().num != p.inferior_num:
                    select(p.inferior_num)
                data = memory.read(find_inferior(p.inferior_num), address, size)
            except gdb.MemoryError:
                return ERR_MEMORY
            ctypes.memmove(buf, data, size)
            return abi.MQS_OK
        return self._guard(ERR_MEMORY, fetch)

    def _cb_target_to_host(self, process: Optional[int], src: int, dst: int,
                           size: int) -> None:
        def convert() -> None:
            p = self.handles.get(process, Process)
            data = ctypes.string_at(src, size)
            if p.big_endian != (sys.byteorder == "big"):
                data = data[::-1]
            ctypes.memmove(dst, data, size)
        self._guard(None, convert)


def global_rank(process: Process) -> int:
    """MPI_COMM_WORLD rank: what the launcher's process table said (`mqd attach --launcher`),
    else from the launcher's environment of a local process, else from the target's own
    record of it, Open MPI's MPI_COMM_WORLD or MPICH's MPIR_Process (each needs that library's
    debug types), else unknown (MQS_INVALID_PROCESS). Found once per Process, then kept on
    it."""
    if process.rank is None:
        process.rank = abi.MQS_INVALID_PROCESS
        inf = find_inferior(process.inferior_num)
        attached = job.label(process.inferior_num)
        if attached is not None:
            process.rank = attached.rank
        elif is_local(inf):
            try:
                with open("/proc/%d/environ" % inf.pid, "rb") as f:
                    env = {name: value for name, _, value in
                           (v.partition(b"=") for v in f.read().split(b"\0") if b"=" in v)}
                for key in (b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK", b"PMI_RANK"):
                    if key in env:
                        process.rank = int(env[key])
                        break
            except (OSError, ValueError):
                pass
        for symbol, type_name, field in _RANK_IN_TARGET:
            if process.rank != abi.MQS_INVALID_PROCESS:
                break
            try:
                process.rank = _field_in_target(process.inferior_num, symbol, type_name, field)
            except gdb.error:  # unreadable memory: try the next
                pass
    return process.rank if process.rank is not None else abi.MQS_INVALID_PROCESS


# Where an MPI library keeps the process's MPI_COMM_WORLD rank, tried in this order when the
# launcher's environment does not say: (variable, its type, the field), Open MPI's
# MPI_COMM_WORLD, MPICH's MPIR_Process (each with that library's debug types). A library that
# has neither leaves the rank unknown.
_RANK_IN_TARGET = (("ompi_mpi_comm_world", "ompi_communicator_t", "c_my_rank"),
                   ("MPIR_Process", "MPIR_Process_t", "rank"))


def _field_in_target(inferior_num: int, symbol: str, type_name: str, field: str) -> int:
    """The integer `field` of the `type_name` at `symbol` in the target, read alone;
    MQS_INVALID_PROCESS when the symbol, the type or the field is unknown."""
    types = lookup.of(inferior_num)
    address, t = types.address(symbol), types.type(type_name)
    found = _find_field(t, field) if t is not None else None
    if address is None or found is None:
        return abi.MQS_INVALID_PROCESS
    offset, member = found
    with SelectedInferior(inferior_num):
        data = memory.read(find_inferior(inferior_num), address + offset, member.type.sizeof)
        return int(gdb.Value(data, member.type))


def _type_size(types: lookup.Lookup, name: str, default: int) -> int:
    t = types.type(name)
    return t.sizeof if t is not None else default


def _field_offset(t: gdb.Type, name: str) -> int:
    """Byte offset of field `name`, looking into anonymous struct/union members; -1 if none."""
    found = _find_field(t, name)
    return found[0] if found else -1


def _find_field(t: gdb.Type, name: str) -> Optional[Tuple[int, gdb.Field]]:
    """(byte offset, gdb.Field) of field `name`, looking into anonymous struct/union members;
    None if there is none."""
    for field in t.strip_typedefs().fields():
        if not hasattr(field, "bitpos"):
            continue
        if field.name == name:
            return field.bitpos // 8, field
        if not field.name:
            inner = _find_field(field.type, name)
            if inner is not None:
                return field.bitpos // 8 + inner[0], inner[1]
    return None
