# mqd.py: MPI message queues in gdb, through an MQD DLL (the MPI library's own, or
# libmqdproxy.so, which forwards to mqd-proxy-server on the target's platform).
#
# Load it with `source /path/to/mqd.py` (or from ~/.gdbinit), attach to MPI processes, then:
#
#   mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
#       Load an MQD DLL. Default: the target's MPIR_dll_name. DLL may be libmqdproxy.so; then
#       --server and --vendor-dll set MQD_PROXY_SERVER and MQD_PROXY_DLL for it.
#   mqd dump [--json] [--all] [--output FILE]
#       Communicators, groups and the three queues of the current inferior (--all: of every
#       inferior), as text or JSON, to gdb's output or FILE. Each inferior is its own
#       mqs_process.
#   mqd types [OBJECT]
#       Load debug types for a stripped libmpi (see frontends/ompi-types); without OBJECT, the
#       installed or $MQD_OMPI_TYPES object for this architecture. `mqd dump` does this by
#       itself when libmpi lacks the types.
#   mqd status
#       What is loaded, and what was set up.
#
# The DLL's callbacks are served by gdb: symbols through expression evaluation (Open MPI's
# libmpi has only .dynsym), types, fields and sizes through gdb's type API (skipping opaque
# 0-sized declarations), memory through the inferior, type sizes from the target's
# architecture. Errors are reported with the DLL's (or the proxy's) own error strings.

import ctypes
import json
import os
import shlex
import sys

import gdb

# Where this file lives. The debug-type objects are looked up relative to it:
# ../ompi-types/<machine>/ompi_types.o, as installed. (The code object knows its own file;
# __file__ may name an outer script when this one is sourced from another.)
_HERE = os.path.dirname(os.path.abspath(sys._getframe().f_code.co_filename))

# --------------------------------------------------------------------------------------------
# The MQD C ABI (contracts/mqs_interface.h), for a DLL of this gdb's architecture.

MQS_OK = 0
MQS_NO_INFORMATION = 1
MQS_END_OF_LIST = 2
MQS_INVALID_PROCESS = -1
LANG_C = ord("c")
OP_CLASSES = ((0, "sends", "Pending sends"),
              (1, "receives", "Pending receives"),
              (2, "unexpected", "Unexpected messages"))
STATUS = {0: "pending", 1: "matched", 2: "complete"}

# The front end's own error codes, answered by its errorstring callback.
ERR_NO_SYMBOL = 1001
ERR_MEMORY = 1002
ERR_NO_TYPE_INFO = 1003
FRONTEND_ERRORS = {
    ERR_NO_SYMBOL: b"gdb: no such symbol in the inferior",
    ERR_MEMORY: b"gdb: cannot read the inferior's memory there",
    ERR_NO_TYPE_INFO: b"gdb: type information unavailable",
}


class Abi:
    """ctypes mirror of the structs and callback types, for a given mqs_taddr_t width."""

    def __init__(self, taddr_width):
        taddr = ctypes.c_uint64 if taddr_width == 8 else ctypes.c_uint32
        tword = ctypes.c_int64 if taddr_width == 8 else ctypes.c_int32
        self.taddr, self.tword = taddr, tword
        vp, ip = ctypes.c_void_p, ctypes.c_int

        class TypeSizes(ctypes.Structure):
            _fields_ = [(n, ip) for n in ("short_size", "int_size", "long_size",
                                           "long_long_size", "pointer_size", "bool_size",
                                           "size_t_size")]

        class Communicator(ctypes.Structure):
            _fields_ = [("unique_id", taddr), ("local_rank", tword), ("size", tword),
                        ("name", ctypes.c_char * 64)]

        class PendingOperation(ctypes.Structure):
            _fields_ = [("status", ip), ("desired_local_rank", tword),
                        ("desired_global_rank", tword), ("tag_wild", ip),
                        ("desired_tag", tword), ("desired_length", tword),
                        ("system_buffer", ip), ("buffer", taddr),
                        ("actual_local_rank", tword), ("actual_global_rank", tword),
                        ("actual_tag", tword), ("actual_length", tword),
                        ("extra_text", (ctypes.c_char * 64) * 5)]

        self.TypeSizes, self.Communicator, self.PendingOperation = (
            TypeSizes, Communicator, PendingOperation)
        F = ctypes.CFUNCTYPE
        self.malloc_ft = F(vp, ctypes.c_size_t)
        self.free_ft = F(None, vp)
        self.dprints_ft = F(None, ctypes.c_char_p)
        self.errorstring_ft = F(vp, ip)
        self.put_info_ft = F(None, vp, vp)
        self.get_info_ft = F(vp, vp)
        self.get_type_sizes_ft = F(None, vp, ctypes.POINTER(TypeSizes))
        self.find_function_ft = F(ip, vp, ctypes.c_char_p, ip, ctypes.POINTER(taddr))
        self.find_symbol_ft = F(ip, vp, ctypes.c_char_p, ctypes.POINTER(taddr))
        self.find_type_ft = F(vp, vp, ctypes.c_char_p, ip)
        self.field_offset_ft = F(ip, vp, ctypes.c_char_p)
        self.sizeof_ft = F(ip, vp)
        self.get_global_rank_ft = F(ip, vp)
        self.get_image_ft = F(vp, vp)
        self.fetch_data_ft = F(ip, vp, taddr, ip, vp)
        self.target_to_host_ft = F(None, vp, vp, vp, ip)
        self.get_process_job_ft = F(vp, vp)
        self.get_process_identity_ft = F(ip, vp)

        class BasicCallbacks(ctypes.Structure):
            _fields_ = [("malloc", self.malloc_ft), ("free", self.free_ft),
                        ("dprints", self.dprints_ft), ("errorstring", self.errorstring_ft),
                        ("put_image_info", self.put_info_ft),
                        ("get_image_info", self.get_info_ft),
                        ("put_process_info", self.put_info_ft),
                        ("get_process_info", self.get_info_ft),
                        ("put_job_info", self.put_info_ft),
                        ("get_job_info", self.get_info_ft)]

        class ImageCallbacks(ctypes.Structure):
            _fields_ = [("get_type_sizes", self.get_type_sizes_ft),
                        ("find_function", self.find_function_ft),
                        ("find_symbol", self.find_symbol_ft),
                        ("find_type", self.find_type_ft),
                        ("field_offset", self.field_offset_ft),
                        ("sizeof", self.sizeof_ft)]

        class ProcessCallbacks(ctypes.Structure):
            _fields_ = [("get_global_rank", self.get_global_rank_ft),
                        ("get_image", self.get_image_ft),
                        ("fetch_data", self.fetch_data_ft),
                        ("target_to_host", self.target_to_host_ft),
                        ("get_process_job", self.get_process_job_ft),
                        ("get_process_identity", self.get_process_identity_ft)]

        self.BasicCallbacks, self.ImageCallbacks, self.ProcessCallbacks = (
            BasicCallbacks, ImageCallbacks, ProcessCallbacks)


class MqdError(Exception):
    """A failure to show the user as it is: the DLL's or the proxy's own words."""


# --------------------------------------------------------------------------------------------
# Objects the DLL sees as opaque handles (small non-zero integers, never Python addresses).

class Image:
    def __init__(self, handle, inferior_num):
        self.handle = handle
        self.inferior_num = inferior_num
        self.info = None
        self.set_up = False
        self.has_queues = None  # (rc, message) once asked
        self.types = {}


class Process:
    def __init__(self, handle, inferior_num, image):
        self.handle = handle
        self.inferior_num = inferior_num
        self.image = image
        self.info = None
        self.set_up = None  # rc of mqs_setup_process once called
        self.has_queues = None
        self.big_endian = None
        self.rank = None


def _inferior(num):
    for inf in gdb.inferiors():
        if inf.num == num:
            return inf
    raise MqdError("inferior %d is gone" % num)


def _select(num):
    """Makes inferior `num` current, quietly (switching through one of its threads prints no
    frame, unlike the `inferior` command)."""
    inf = _inferior(num)
    threads = inf.threads()
    if threads:
        threads[0].switch()
    else:
        gdb.execute("inferior %d" % num, to_string=True)


class SelectedInferior:
    """Selects an inferior for the duration of a `with` block (symbol look-ups follow it)."""

    def __init__(self, num):
        self.num = num
        self.previous = None
        self.thread = None

    def __enter__(self):
        self.previous = gdb.selected_inferior().num
        self.thread = gdb.selected_thread()
        if self.previous != self.num:
            _select(self.num)

    def __exit__(self, *exc):
        if self.previous is not None and self.previous != self.num:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
            else:
                _select(self.previous)
        return False


# --------------------------------------------------------------------------------------------
# A loaded MQD DLL and the callbacks gdb serves for it.

class Session:
    def __init__(self, path):
        self.path = path
        try:
            self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise MqdError("cannot load %s: %s" % (path, e))
        self._declare()
        width = self.lib.mqs_dll_taddr_width() if self._has("mqs_dll_taddr_width") else \
            ctypes.sizeof(ctypes.c_long)
        self.abi = Abi(width)
        self.version = self._bytes(self.lib.mqs_version_string())
        self.compatibility = self.lib.mqs_version_compatibility()
        self.objects = {}
        self.images = {}      # inferior num -> Image
        self.processes = {}   # inferior num -> Process
        self.types = {}       # handle -> gdb.Type
        self.next_handle = 0x1000
        self.allocations = {}
        self.strings = {}
        self.messages = []
        self.libc = ctypes.CDLL(None)
        self.libc.calloc.restype = ctypes.c_void_p
        self.libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self._make_tables()
        self.lib.mqs_setup_basic_callbacks(ctypes.byref(self.basic))

    # ---- the DLL's entry points ----

    def _has(self, name):
        try:
            getattr(self.lib, name)
            return True
        except AttributeError:
            return False

    def _declare(self):
        vp, ip = ctypes.c_void_p, ctypes.c_int
        sig = {
            "mqs_setup_basic_callbacks": (None, [vp]),
            "mqs_version_string": (vp, []),
            "mqs_version_compatibility": (ip, []),
            "mqs_dll_taddr_width": (ip, []),
            "mqs_dll_error_string": (vp, [ip]),
            "mqs_setup_image": (ip, [vp, vp]),
            "mqs_image_has_queues": (ip, [vp, ctypes.POINTER(vp)]),
            "mqs_setup_process": (ip, [vp, vp]),
            "mqs_process_has_queues": (ip, [vp, ctypes.POINTER(vp)]),
            "mqs_update_communicator_list": (ip, [vp]),
            "mqs_setup_communicator_iterator": (ip, [vp]),
            "mqs_get_communicator": (ip, [vp, vp]),
            "mqs_get_comm_group": (ip, [vp, ctypes.POINTER(ip)]),
            "mqs_next_communicator": (ip, [vp]),
            "mqs_setup_operation_iterator": (ip, [vp, ip]),
            "mqs_next_operation": (ip, [vp, vp]),
        }
        for name, (restype, argtypes) in sig.items():
            if self._has(name):
                fn = getattr(self.lib, name)
                fn.restype, fn.argtypes = restype, argtypes

    @staticmethod
    def _bytes(address):
        if not address:
            return None
        return ctypes.string_at(address).decode("utf-8", "replace")

    def error_text(self, rc):
        text = self._bytes(self.lib.mqs_dll_error_string(rc))
        return text if text is not None else "error %d" % rc

    def _fail(self, call, rc):
        return MqdError("%s failed: %s (%d)" % (call, self.error_text(rc), rc))

    # ---- handles ----

    def _new_handle(self, obj):
        handle = self.next_handle
        self.next_handle += 0x10
        self.objects[handle] = obj
        return handle

    def image_for(self, num):
        if num not in self.images:
            image = Image(0, num)
            image.handle = self._new_handle(image)
            self.images[num] = image
        return self.images[num]

    def process_for(self, num):
        if num not in self.processes:
            process = Process(0, num, self.image_for(num))
            process.handle = self._new_handle(process)
            self.processes[num] = process
        return self.processes[num]

    def _object(self, handle, kind):
        obj = self.objects.get(handle)
        if not isinstance(obj, kind):
            raise MqdError("DLL passed an unknown %s handle" % kind.__name__.lower())
        return obj

    # ---- callbacks (never raise into ctypes) ----

    def _make_tables(self):
        a = self.abi
        c = self._callbacks = {
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
            "get_process_identity": a.get_process_identity_ft(lambda p: MQS_INVALID_PROCESS),
        }
        self.basic = a.BasicCallbacks(*(c[n] for n, _ in a.BasicCallbacks._fields_))
        self.image_callbacks = a.ImageCallbacks(*(c[n] for n, _ in a.ImageCallbacks._fields_))
        self.process_callbacks = a.ProcessCallbacks(
            *(c[n] for n, _ in a.ProcessCallbacks._fields_))

    def _guard(self, failure, fn, *args):
        try:
            return fn(*args)
        except Exception as e:  # gdb errors, unknown handles: the DLL gets `failure`
            self.messages.append("callback %s failed: %s" % (fn.__name__, e))
            return failure

    def _cb_malloc(self, size):
        return self._guard(None, lambda: self.libc.calloc(1, size or 1))

    def _cb_free(self, address):
        if address:
            self.libc.free(address)

    def _cb_dprints(self, text):
        self.messages.append("dll: " + (text or b"").decode("utf-8", "replace"))

    def _cb_errorstring(self, code):
        text = FRONTEND_ERRORS.get(code, b"gdb: error %d" % code)
        buf = self.strings.setdefault(text, ctypes.create_string_buffer(text))
        return ctypes.addressof(buf)

    def _cb_put_image_info(self, image, info):
        self._guard(None, lambda: setattr(self._object(image, Image), "info", info))

    def _cb_get_image_info(self, image):
        return self._guard(None, lambda: self._object(image, Image).info)

    def _cb_put_process_info(self, process, info):
        self._guard(None, lambda: setattr(self._object(process, Process), "info", info))

    def _cb_get_process_info(self, process):
        return self._guard(None, lambda: self._object(process, Process).info)

    def _cb_get_type_sizes(self, process, sizes):
        def fill():
            self._object(process, Process)
            s = sizes.contents
            s.short_size = gdb.lookup_type("short").sizeof
            s.int_size = gdb.lookup_type("int").sizeof
            s.long_size = gdb.lookup_type("long").sizeof
            s.long_long_size = gdb.lookup_type("long long").sizeof
            s.pointer_size = gdb.lookup_type("void").pointer().sizeof
            s.bool_size = _type_size("_Bool", 1)
            s.size_t_size = _type_size("size_t", s.pointer_size)
        self._guard(None, fill)

    def _address_of(self, name):
        value = gdb.parse_and_eval("(unsigned long long)&%s" % name)
        return int(value)

    def _lookup(self, image, name, addr):
        def lookup():
            img = self._object(image, Image)
            with SelectedInferior(img.inferior_num):
                try:
                    address = self._address_of(name.decode())
                except gdb.error:
                    return ERR_NO_SYMBOL
            if addr:
                addr[0] = address
            return MQS_OK
        return self._guard(ERR_NO_SYMBOL, lookup)

    def _cb_find_function(self, image, name, lang, addr):
        return self._lookup(image, name, addr)

    def _cb_find_symbol(self, image, name, addr):
        return self._lookup(image, name, addr)

    def _cb_find_type(self, image, name, lang):
        def find():
            img = self._object(image, Image)
            key = name.decode()
            if key not in img.types:
                with SelectedInferior(img.inferior_num):
                    t = _complete_type(key)
                handle = None
                if t is not None:
                    handle = self._new_handle(("type", key))
                    self.types[handle] = t
                img.types[key] = handle
            return img.types[key]
        return self._guard(None, find)

    def _cb_field_offset(self, handle, field):
        def offset():
            t = self.types.get(handle)
            if t is None:
                return -1
            return _field_offset(t, field.decode())
        return self._guard(-1, offset)

    def _cb_sizeof(self, handle):
        return self._guard(0, lambda: self.types[handle].sizeof if handle in self.types else 0)

    def _cb_get_global_rank(self, process):
        return self._guard(MQS_INVALID_PROCESS, lambda: _global_rank(
            self._object(process, Process)))

    def _cb_get_image(self, process):
        return self._guard(None, lambda: self._object(process, Process).image.handle)

    def _cb_fetch_data(self, process, address, size, buf):
        def fetch():
            p = self._object(process, Process)
            try:
                data = _inferior(p.inferior_num).read_memory(address, size)
            except gdb.MemoryError:
                return ERR_MEMORY
            ctypes.memmove(buf, bytes(data), size)
            return MQS_OK
        return self._guard(ERR_MEMORY, fetch)

    def _cb_target_to_host(self, process, src, dst, size):
        def convert():
            p = self._object(process, Process)
            data = ctypes.string_at(src, size)
            if p.big_endian != (sys.byteorder == "big"):
                data = data[::-1]
            ctypes.memmove(dst, data, size)
        self._guard(None, convert)

    # ---- set-up, cached per inferior ----

    def ensure_process(self, num):
        """Sets up the image and process of inferior `num`; raises MqdError when the DLL
        says no (with its message)."""
        process = self.process_for(num)
        image = process.image
        inf = _inferior(num)
        if inf.pid == 0:
            raise MqdError("inferior %d has no process" % num)
        if process.big_endian is None:
            with SelectedInferior(num):
                process.big_endian = "big endian" in gdb.execute("show endian", to_string=True)
        if not image.set_up:
            rc = self.lib.mqs_setup_image(image.handle, ctypes.byref(self.image_callbacks))
            if rc != MQS_OK:
                raise self._fail("mqs_setup_image", rc)
            image.set_up = True
        if image.has_queues is None:
            message = ctypes.c_void_p(None)
            rc = self.lib.mqs_image_has_queues(image.handle, ctypes.byref(message))
            image.has_queues = (rc, self._bytes(message.value))
        rc, message = image.has_queues
        if rc != MQS_OK:
            raise MqdError(_explain("image", rc, message, self, _image_name(num)))
        if process.set_up is None:
            if os.environ.get("MQD_PROXY_RECORD"):
                # The shim's recording keeps what only gdb knows of this process, so that
                # `mqd-proxy replay --json` prints the same dump as `mqd dump --json`.
                os.environ["MQD_PROXY_RECORD_LABEL"] = "inferior=%d pid=%d rank=%d" % (
                    num, inf.pid, _global_rank(process))
            process.set_up = self.lib.mqs_setup_process(process.handle,
                                                        ctypes.byref(self.process_callbacks))
        if process.set_up != MQS_OK:
            raise self._fail("mqs_setup_process", process.set_up)
        if process.has_queues is None:
            message = ctypes.c_void_p(None)
            rc = self.lib.mqs_process_has_queues(process.handle, ctypes.byref(message))
            process.has_queues = (rc, self._bytes(message.value))
        rc, message = process.has_queues
        if rc != MQS_OK:
            raise MqdError(_explain("process", rc, message, self, "process %d" % inf.pid))
        return process

    # ---- the dump ----

    def dump(self, num):
        """The queues of inferior `num` as a dict (see `mqd dump --json`)."""
        process = self.ensure_process(num)
        p = process.handle
        a = self.abi
        rc = self.lib.mqs_update_communicator_list(p)
        if rc != MQS_OK:
            raise self._fail("mqs_update_communicator_list", rc)
        inf = _inferior(num)
        result = {"inferior": num, "pid": inf.pid, "rank": _global_rank(process),
                  "dll": self.version, "communicators": []}
        rc = self.lib.mqs_setup_communicator_iterator(p)
        while rc == MQS_OK:
            comm = a.Communicator()
            rc = self.lib.mqs_get_communicator(p, ctypes.byref(comm))
            if rc != MQS_OK:
                result["error"] = "mqs_get_communicator: %s" % self.error_text(rc)
                break
            entry = {"unique_id": comm.unique_id, "name": _text(comm.name),
                     "local_rank": comm.local_rank, "size": comm.size, "group": None,
                     "queues": {}}
            if comm.size > 0 and self._has("mqs_get_comm_group"):
                ranks = (ctypes.c_int * comm.size)()
                grc = self.lib.mqs_get_comm_group(p, ranks)
                entry["group"] = list(ranks) if grc == MQS_OK else \
                    {"error": self.error_text(grc), "rc": grc}
            for op_class, key, _ in OP_CLASSES:
                entry["queues"][key] = self._queue(p, op_class)
            result["communicators"].append(entry)
            rc = self.lib.mqs_next_communicator(p)
        return result

    def _queue(self, p, op_class):
        rc = self.lib.mqs_setup_operation_iterator(p, op_class)
        if rc != MQS_OK:
            return {"rc": rc, "error": self.error_text(rc), "operations": []}
        operations = []
        while True:
            op = self.abi.PendingOperation()
            rc = self.lib.mqs_next_operation(p, ctypes.byref(op))
            if rc != MQS_OK:
                break
            operations.append({
                "status": STATUS.get(op.status, op.status),
                "desired_local_rank": op.desired_local_rank,
                "desired_global_rank": op.desired_global_rank,
                "tag_wild": bool(op.tag_wild), "desired_tag": op.desired_tag,
                "desired_length": op.desired_length, "system_buffer": bool(op.system_buffer),
                "buffer": op.buffer, "actual_local_rank": op.actual_local_rank,
                "actual_global_rank": op.actual_global_rank, "actual_tag": op.actual_tag,
                "actual_length": op.actual_length,
                "extra_text": [_text(line) for line in op.extra_text],
            })
        end = {"rc": rc, "operations": operations}
        if rc != MQS_END_OF_LIST:
            end["error"] = self.error_text(rc)
        return end


# --------------------------------------------------------------------------------------------
# gdb helpers

def _text(chars):
    raw = bytes(chars).split(b"\0", 1)[0]
    return raw.decode("utf-8", "replace")


def _type_size(name, default):
    try:
        return gdb.lookup_type(name).sizeof
    except gdb.error:
        return default


def _complete_type(name):
    """The named type with a definition: a declaration without one (sizeof 0, as the MPI
    headers' opaque handles are) is skipped in favour of one from another objfile."""
    candidates = []
    try:
        candidates.append(gdb.lookup_type(name))
    except gdb.error:
        pass
    if not candidates or candidates[0].strip_typedefs().sizeof == 0:
        for objfile in gdb.objfiles():
            for domain in (gdb.SYMBOL_VAR_DOMAIN, gdb.SYMBOL_STRUCT_DOMAIN):
                try:
                    sym = objfile.lookup_static_symbol(name, domain) or \
                        objfile.lookup_global_symbol(name, domain)
                except (gdb.error, AttributeError):
                    sym = None
                if sym is not None and sym.type is not None:
                    candidates.append(sym.type)
    for t in candidates:
        if t.strip_typedefs().sizeof > 0:
            return t.strip_typedefs()
    return None


def _field_offset(t, name):
    """Byte offset of field `name`, looking into anonymous struct/union members."""
    for field in t.strip_typedefs().fields():
        if not hasattr(field, "bitpos"):
            continue
        if field.name == name:
            return field.bitpos // 8
        if not field.name:
            inner = _field_offset(field.type, name)
            if inner >= 0:
                return field.bitpos // 8 + inner
    return -1


def _is_local(inf):
    """True when gdb runs the inferior on this machine (not through gdbserver or qemu's stub,
    where its pid means nothing here)."""
    connection = getattr(inf, "connection", None)
    return connection is None or connection.type == "native"


def _global_rank(process):
    """MPI_COMM_WORLD rank: from the launcher's environment of a local process, else from Open
    MPI's own MPI_COMM_WORLD in the target (needs its types), else unknown."""
    if process.rank is None:
        process.rank = MQS_INVALID_PROCESS
        inf = _inferior(process.inferior_num)
        if _is_local(inf):
            try:
                with open("/proc/%d/environ" % inf.pid, "rb") as f:
                    env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
                for key in (b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK", b"PMI_RANK"):
                    if key in env:
                        process.rank = int(env[key])
                        break
            except (OSError, ValueError):
                pass
        if process.rank == MQS_INVALID_PROCESS:
            try:
                with SelectedInferior(process.inferior_num):
                    process.rank = int(gdb.parse_and_eval(
                        "((ompi_communicator_t *)&ompi_mpi_comm_world)->c_my_rank"))
            except gdb.error:
                pass
    return process.rank


def _image_name(num):
    inf = _inferior(num)
    return inf.progspace.filename or "inferior %d" % num


def _explain(what, rc, message, session, name):
    parts = ["the DLL says this %s has no message queues: %s (%d)"
             % (what, session.error_text(rc), rc)]
    if message:
        parts.append(_format_message(message, name))
    return "; ".join(parts)


def _format_message(message, name):
    # has_queues messages are printf formats with at most one %s.
    try:
        return message.replace("%%", "\0").replace("%s", name, 1).replace("\0", "%")
    except Exception:
        return message


def _dll_name_of_target():
    try:
        return gdb.parse_and_eval("(char *)&MPIR_dll_name").string()
    except gdb.error:
        raise MqdError("the target has no MPIR_dll_name; name the DLL: mqd load PATH")


# --------------------------------------------------------------------------------------------
# Debug types for a stripped libmpi

def _libmpi_has_types():
    return _complete_type("ompi_communicator_t") is not None


def _types_object_candidates():
    arch = gdb.selected_inferior().architecture().name()
    names = {"i386:x86-64": "x86_64", "aarch64": "aarch64", "powerpc:common64": "ppc64le",
             "s390:64-bit": "s390x", "i386": "i686"}
    machine = names.get(arch, arch)
    found = []
    if os.environ.get("MQD_OMPI_TYPES"):
        found.append(os.environ["MQD_OMPI_TYPES"])
    for base in (_HERE, os.path.join(_HERE, ".."), os.path.join(_HERE, "..", "..")):
        found.append(os.path.join(base, "ompi-types", machine, "ompi_types.o"))
    return found


_types_path = None  # the object `mqd types` was given, reused for every inferior


def load_types(path=None):
    """Adds the type object to the current inferior's program space (each inferior has its
    own: types loaded for one rank are not visible in another)."""
    global _types_path
    candidates = [path] if path else ([_types_path] if _types_path else []) + \
        _types_object_candidates()
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            gdb.execute("add-symbol-file %s" % shlex.quote(candidate), to_string=True)
            _types_path = candidate
            return candidate
    raise MqdError("no debug types for libmpi: build them (frontends/ompi-types/build-ompi-types.sh)"
                   " and set MQD_OMPI_TYPES, or run `mqd types PATH`")


def ensure_types(num):
    """Loads the type object into inferior `num` if its libmpi lacks the types."""
    with SelectedInferior(num):
        if not _libmpi_has_types():
            load_types()


# --------------------------------------------------------------------------------------------
# Text rendering

def _peer(local, world):
    if local == -1 or local == 4294967295:
        return "any source (%d)" % local
    return "rank %d (world %d)" % (local, world)


def render(dump):
    lines = ["Inferior %d: process %d, MPI_COMM_WORLD rank %d"
             % (dump["inferior"], dump["pid"], dump["rank"]),
             "  DLL: %s" % dump["dll"]]
    for c in dump["communicators"]:
        lines.append("  Communicator \"%s\" (id %d): local rank %d of %d"
                     % (c["name"], c["unique_id"], c["local_rank"], c["size"]))
        group = c["group"]
        if isinstance(group, list):
            lines.append("    group (local -> world): " +
                         " ".join("%d->%d" % (i, g) for i, g in enumerate(group)))
        elif isinstance(group, dict):
            lines.append("    group: %s (%d)" % (group["error"], group["rc"]))
        for op_class, key, title in OP_CLASSES:
            q = c["queues"][key]
            ops = q["operations"]
            if q["rc"] == MQS_NO_INFORMATION and not ops:
                lines.append("    %s: no information from the DLL" % title)
                continue
            if q.get("error") and not ops:
                lines.append("    %s: %s (%d)" % (title, q["error"], q["rc"]))
                continue
            lines.append("    %s: %d" % (title, len(ops)))
            for i, op in enumerate(ops):
                direction = "to" if op_class == 0 else "from"
                tag = "any tag" if op["tag_wild"] else "tag %d" % op["desired_tag"]
                lines.append("      #%d [%s] %s %s, %s, %d bytes, buffer 0x%x%s"
                             % (i, op["status"], direction,
                                _peer(op["desired_local_rank"], op["desired_global_rank"]),
                                tag, op["desired_length"], op["buffer"],
                                ", system buffer" if op["system_buffer"] else ""))
                if op_class == 0 or op["status"] != "pending":
                    lines.append("         actual: %s, tag %d, %d bytes"
                                 % (_peer(op["actual_local_rank"], op["actual_global_rank"]),
                                    op["actual_tag"], op["actual_length"]))
                for text in op["extra_text"]:
                    if text:
                        lines.append("         | " + text)
            if q.get("error"):
                lines.append("      (stopped: %s (%d))" % (q["error"], q["rc"]))
    if dump.get("error"):
        lines.append("  (stopped: %s)" % dump["error"])
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Commands

_session = None


class MqdPrefix(gdb.Command):
    """Message queues of MPI processes through an MQD DLL.
Subcommands: mqd load, mqd dump, mqd types, mqd status."""

    def __init__(self):
        super().__init__("mqd", gdb.COMMAND_DATA, prefix=True)


def _command(fn):
    """Runs a command body, turning every failure into a one-line gdb error."""
    def invoke(self, arg, from_tty):
        try:
            fn(self, gdb.string_to_argv(arg), from_tty)
        except MqdError as e:
            raise gdb.GdbError("mqd: %s" % e)
        except gdb.GdbError:
            raise
        except Exception as e:  # never a traceback at the user
            raise gdb.GdbError("mqd: internal error: %s: %s" % (type(e).__name__, e))
    return invoke


class MqdLoad(gdb.Command):
    """Load an MQD DLL: mqd load [--server ENDPOINT] [--vendor-dll NAME] [DLL]
DLL defaults to the target's MPIR_dll_name. It may be libmqdproxy.so: --server and
--vendor-dll then set MQD_PROXY_SERVER and MQD_PROXY_DLL before it is loaded."""

    def __init__(self):
        super().__init__("mqd load", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    @_command
    def invoke(self, argv, from_tty):
        global _session
        path = None
        while argv:
            a = argv.pop(0)
            if a == "--server" and argv:
                os.environ["MQD_PROXY_SERVER"] = argv.pop(0)
            elif a == "--vendor-dll" and argv:
                os.environ["MQD_PROXY_DLL"] = argv.pop(0)
            elif a.startswith("-"):
                raise MqdError("unknown option %s" % a)
            else:
                path = a
        if path is None:
            path = _dll_name_of_target()
        _session = Session(path)
        gdb.write("mqd: loaded %s: %s (compatibility %d)\n"
                  % (path, _session.version, _session.compatibility))


class MqdDump(gdb.Command):
    """Show message queues: mqd dump [--json] [--all] [--output FILE]
Communicators, groups and the three queues of the current inferior (--all: every inferior
with a process), as text or JSON, written to gdb's output or to FILE."""

    def __init__(self):
        super().__init__("mqd dump", gdb.COMMAND_DATA)

    @_command
    def invoke(self, argv, from_tty):
        as_json = everything = False
        output = None
        while argv:
            a = argv.pop(0)
            if a == "--json":
                as_json = True
            elif a == "--all":
                everything = True
            elif a == "--output" and argv:
                output = argv.pop(0)
            else:
                raise MqdError("unknown argument %s" % a)
        if _session is None:
            gdb.execute("mqd load", to_string=False)
        nums = [i.num for i in gdb.inferiors() if i.pid != 0] if everything else \
            [gdb.selected_inferior().num]
        dumps = []
        for num in nums:
            with SelectedInferior(num):
                try:
                    ensure_types(num)
                    dumps.append(_session.dump(num))
                except MqdError as e:
                    dumps.append({"inferior": num, "pid": _inferior(num).pid,
                                  "error": str(e)})
        if as_json:
            text = json.dumps(dumps if everything else dumps[0], indent=1) + "\n"
        else:
            text = "".join(
                (render(d) if "communicators" in d else
                 "Inferior %d: process %d: %s" % (d["inferior"], d["pid"], d["error"])) + "\n"
                for d in dumps)
        if output:
            try:
                with open(output, "w") as f:
                    f.write(text)
            except OSError as e:
                raise MqdError("cannot write %s: %s" % (output, e))
        else:
            gdb.write(text)
        failed = [d for d in dumps if "communicators" not in d]
        if failed and not everything:
            raise MqdError(failed[0]["error"])


class MqdTypes(gdb.Command):
    """Load debug types for a stripped libmpi: mqd types [OBJECT]"""

    def __init__(self):
        super().__init__("mqd types", gdb.COMMAND_DATA, gdb.COMPLETE_FILENAME)

    @_command
    def invoke(self, argv, from_tty):
        path = load_types(argv[0] if argv else None)
        gdb.write("mqd: loaded debug types from %s\n" % path)


class MqdStatus(gdb.Command):
    """What mqd has loaded and set up: mqd status"""

    def __init__(self):
        super().__init__("mqd status", gdb.COMMAND_DATA)

    @_command
    def invoke(self, argv, from_tty):
        if _session is None:
            gdb.write("mqd: no DLL loaded\n")
            return
        gdb.write("mqd: %s: %s (compatibility %d)\n"
                  % (_session.path, _session.version, _session.compatibility))
        for num, p in sorted(_session.processes.items()):
            gdb.write("  inferior %d: set-up rc %s, has-queues %s\n"
                      % (num, p.set_up, p.has_queues and p.has_queues[0]))
        for line in _session.messages[-20:]:
            gdb.write("  " + line + "\n")


MqdPrefix()
MqdLoad()
MqdDump()
MqdTypes()
MqdStatus()
