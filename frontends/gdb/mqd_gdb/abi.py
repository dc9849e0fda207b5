"""The MQD C ABI (schema/mqs_interface.h) as ctypes declarations, for a DLL of this gdb's
architecture: result codes and enumerations, the structs the DLL fills, the callback tables
it is given, and the signatures of its entry points. Facts of the header only; what the front
end does with them is elsewhere. No gdb here.

The one code of schema/mqd_proxy.h the front end acts on is here too:
MQD_PROXY_ERR_NO_ENTRY_POINT, libmqdproxy.so's answer for an optional entry point the vendor DLL
does not export (the shim exports them all).

Abi(taddr_width) builds the structs and function types for a DLL whose mqs_taddr_t is
taddr_width bytes wide (mqs_dll_taddr_width()); mqs_tword_t is the signed type of that width.
"""
import ctypes
import struct
from typing import Any, Callable, Dict, List, Optional, Tuple

# Result codes.
MQS_OK = 0
MQS_NO_INFORMATION = 1
MQS_END_OF_LIST = 2
MQS_INVALID_PROCESS = -1  # get_global_rank's and get_process_identity's "unknown"

# schema/mqd_proxy.h: MQD_PROXY_ERR_FIRST + 6, the vendor DLL lacks this entry point.
MQD_PROXY_ERR_NO_ENTRY_POINT = 0x4d510000 + 6

# Members of mqs_target_type_sizes in MPICH's header (short, int, long, long long, pointer)
# and in Open MPI's (also _Bool and size_t): MQS_TARGET_TYPE_SIZES_*_INTS.
TYPE_SIZES_MPICH_INTS = 5
TYPE_SIZES_OPENMPI_INTS = 7

LANG_C = ord("c")  # mqs_lang_c

# mqs_op_class: the three queues of a communicator.
PENDING_SENDS = 0
PENDING_RECEIVES = 1
UNEXPECTED_MESSAGES = 2

# enum mqs_status of a pending operation.
ST_PENDING = 0
ST_MATCHED = 1
ST_COMPLETE = 2


class Abi:
    """ctypes mirror of the structs and callback types, for a given mqs_taddr_t width."""

    def __init__(self, taddr_width: int) -> None:
        taddr = ctypes.c_uint64 if taddr_width == 8 else ctypes.c_uint32
        tword = ctypes.c_int64 if taddr_width == 8 else ctypes.c_int32
        self.taddr, self.tword = taddr, tword
        vp, ip = ctypes.c_void_p, ctypes.c_int

        # Open MPI's header has 7 sizes, MPICH's 5: the 7-int struct fits both (the front end
        # writes only as many as the DLL's header has: Callbacks' type_sizes).
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
        # A PendingOperation's fields in their order, each line of extra_text as its bytes:
        # one call instead of one a field (a dump reads 51,200 operations at 256 ranks).
        self.operation_fields = _unpacker(PendingOperation)
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

        # The three callback tables, fields in the header's order.
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


def entry_points() -> Dict[str, Tuple[Any, List[Any]]]:
    """The DLL's entry points the front end calls: name -> (restype, argtypes). Handles and
    structs travel as void pointers. A DLL may lack the optional ones (OPTIONAL_ENTRY_POINTS);
    a library without any other one is no MQD DLL (required_entry_points)."""
    vp, ip = ctypes.c_void_p, ctypes.c_int
    return {
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


# The entry points of entry_points() a DLL may lack: the front end has an answer without them
# (the pointer width of this gdb's architecture; every group unknown).
OPTIONAL_ENTRY_POINTS = frozenset({"mqs_dll_taddr_width", "mqs_get_comm_group"})


def required_entry_points() -> List[str]:
    """The entry points of entry_points() every MQD DLL exports, in the header's order."""
    return [name for name in entry_points() if name not in OPTIONAL_ENTRY_POINTS]


def c_string(address: Optional[int]) -> Optional[str]:
    """The NUL-terminated string at `address` (a DLL-owned char *) as text, None for NULL.
    Invalid UTF-8 is replaced, never an error."""
    if not address:
        return None
    return ctypes.string_at(address).decode("utf-8", "replace")


def text(chars: Any) -> str:
    """A fixed-size char array of a struct (a name, a line of extra_text), or its bytes, as
    text: up to its first NUL, invalid UTF-8 replaced."""
    raw = bytes(chars)
    if not raw or not raw[0]:  # most lines of extra_text
        return ""
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


# struct's codes of the integer types of the structs above (ctypes.c_int is c_int32).
_CODES = {ctypes.c_int32: "i", ctypes.c_uint32: "I", ctypes.c_int64: "q", ctypes.c_uint64: "Q"}


def _unpacker(structure: Any) -> Callable[[Any], Tuple[Any, ...]]:
    """unpack_from for a ctypes Structure of integers and (arrays of) char arrays, laid out by
    ctypes' own offsets: a tuple of its fields, an array of char arrays as one bytes each."""
    layout, at = "=", 0
    for name, kind in structure._fields_:
        field = getattr(structure, name)
        layout += "%dx" % (field.offset - at) if field.offset > at else ""
        if kind in _CODES:
            layout += _CODES[kind]
        elif issubclass(kind._type_, ctypes.Array):  # e.g. (c_char * 64) * 5
            layout += ("%ds" % ctypes.sizeof(kind._type_)) * kind._length_
        else:  # c_char * N
            layout += "%ds" % ctypes.sizeof(kind)
        at = field.offset + field.size
    layout += "%dx" % (ctypes.sizeof(structure) - at) if ctypes.sizeof(structure) > at else ""
    unpacker = struct.Struct(layout)
    assert unpacker.size == ctypes.sizeof(structure), (layout, ctypes.sizeof(structure))
    return unpacker.unpack_from
