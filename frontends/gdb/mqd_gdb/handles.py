"""The objects the DLL knows by opaque handle: one Image and one Process per inferior, and the
gdb types find_type answered. A handle is a small non-zero integer (0x1000, 0x1010, ...),
never a Python address; the DLL hands it back to the callbacks, which look it up here. An
unknown handle is an MqdError, which a callback turns into its failure answer.

Handles are given out in the order objects are first needed and never reused within a
session, so the same conversation gives the DLL the same handles.
"""
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar

from .errors import MqdError

T = TypeVar("T")


class Image:
    """An inferior's image (its program) as the DLL sees it: the info the DLL put, whether it
    was set up, the DLL's has_queues answer, and the type handles found for it by name."""

    def __init__(self, handle: int, inferior_num: int) -> None:
        self.handle = handle
        self.inferior_num = inferior_num
        self.info: Optional[int] = None  # the DLL's mqs_image_info *
        self.set_up = False
        self.has_queues: Optional[Tuple[int, Optional[str]]] = None  # (rc, message) once asked
        self.types: Dict[str, Optional[int]] = {}  # type name -> its handle (None: no type)


class Process:
    """An inferior's process as the DLL sees it: the info the DLL put, the rc of its set-up,
    the DLL's has_queues answer, its byte order and its MPI_COMM_WORLD rank, once known, and
    what the proxy warned of when it was set up."""

    def __init__(self, handle: int, inferior_num: int, image: Image) -> None:
        self.handle = handle
        self.inferior_num = inferior_num
        self.image = image
        self.info: Optional[int] = None  # the DLL's mqs_process_info *
        self.set_up: Optional[int] = None  # rc of mqs_setup_process once called
        self.has_queues: Optional[Tuple[int, Optional[str]]] = None  # (rc, message) once asked
        self.big_endian: Optional[bool] = None
        self.rank: Optional[int] = None
        # the proxy's warnings at its set-up (callbacks.proxy_warnings)
        self.warnings: List[str] = []
        # the operations of its last dump, by their mqs_pending_operation's bytes (dump.py)
        self.operations: Dict[bytes, Any] = {}
        # the groups and operation lists of its last dump, by communicator and queue (dump.py)
        self.lists: Dict[Any, Any] = {}


class Handles:
    """The table of one session: handle -> object, and each inferior's Image and Process."""

    def __init__(self) -> None:
        self.objects: Dict[int, object] = {}
        self.images: Dict[int, Image] = {}        # inferior num -> Image
        self.processes: Dict[int, Process] = {}   # inferior num -> Process
        self.types: Dict[int, Any] = {}           # handle -> gdb.Type
        self.next_handle = 0x1000

    def new(self, obj: object) -> int:
        """A fresh handle for `obj`."""
        handle = self.next_handle
        self.next_handle += 0x10
        self.objects[handle] = obj
        return handle

    def image_for(self, num: int) -> Image:
        if num not in self.images:
            image = Image(0, num)
            image.handle = self.new(image)
            self.images[num] = image
        return self.images[num]

    def process_for(self, num: int) -> Process:
        if num not in self.processes:
            process = Process(0, num, self.image_for(num))
            process.handle = self.new(process)
            self.processes[num] = process
        return self.processes[num]

    def get(self, handle: Optional[int], kind: Type[T]) -> T:
        """The object of `handle`, which must be a `kind` (Image or Process)."""
        obj = self.objects.get(handle) if handle is not None else None
        if not isinstance(obj, kind):
            raise MqdError("DLL passed an unknown %s handle" % kind.__name__.lower())
        return obj

    def new_type(self, key: str, gdb_type: Any) -> int:
        """A handle for the type found under the name `key`."""
        handle = self.new(("type", key))
        self.types[handle] = gdb_type
        return handle
