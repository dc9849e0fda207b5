"""A loaded MQD DLL: Session(path) loads it (ctypes, RTLD_LOCAL), checks that it exports every
entry point an MQD DLL must (abi.required_entry_points; a library that does not is an
MqdError naming what it lacks), reads its version and compatibility, tells whether it is Open
MPI's (is_open_mpi), gives it the basic callbacks, and sets up, once per inferior and on first
need, that inferior's image and process (ensure_process). Every DLL failure becomes an
MqdError in the DLL's own words: "CALL failed: TEXT (RC)" with TEXT from mqs_dll_error_string,
or the has_queues message the DLL gave. Entry points are called only from gdb's thread.
"""
import ctypes
import os
from typing import Dict, List, Optional, Tuple


from . import abi, job
from .callbacks import Callbacks, global_rank, proxy_warnings
from .errors import MqdError
from .handles import Handles, Process
from .inferiors import SelectedInferior, big_endian, find as find_inferior, image_name


# How the front end tells Open MPI's DLL from the others: its version string starts so
# ("Open MPI message queue support for parallel debuggers ..."). Through libmqdproxy.so the
# shim reports the vendor DLL's own version string, so a native and a proxied load decide
# alike. Every other DLL (MPICH's, whose header is the historical one) is served as the MQD
# interface was first written. What it decides: the type sizes get_type_sizes writes (Open
# MPI's header has 7, MPICH's 5: callbacks) and whether `mqd dump` loads Open MPI's debug
# types into a libmpi that lacks them (commands, debug_types). Why:
# docs/mpich.md, "What the gdb front end must change"
OPEN_MPI_DLL = "Open MPI message queue support"


def is_open_mpi_dll(version: Optional[str]) -> bool:
    """Whether a DLL whose mqs_version_string is `version` (None for NULL) is Open MPI's."""
    return version is not None and version.startswith(OPEN_MPI_DLL)


def _names_no_dll(version: Optional[str]) -> bool:
    """Whether `version` is libmqdproxy.so's own, given while it has no session with a server
    ("mqd-proxy VERSION (no vendor DLL: WHY)", docs/debuggers.md): no vendor DLL to judge."""
    return version is not None and version.startswith("mqd-proxy ") and \
        " (no vendor DLL: " in version


class Session:
    """One loaded DLL and what it was told: its callback tables, the handles of the images
    and processes set up so far (one each per inferior), and the messages of its callbacks.
    The DLL stays loaded for the life of gdb (ctypes never unloads)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise MqdError("cannot load %s: %s" % (path, e))
        self._check_exports()
        self._declare()
        width = self.lib.mqs_dll_taddr_width() if self.has("mqs_dll_taddr_width") else \
            ctypes.sizeof(ctypes.c_long)
        self.abi = abi.Abi(width)
        self.version = abi.c_string(self.lib.mqs_version_string())
        self.compatibility = self.lib.mqs_version_compatibility()
        self.handles = Handles()
        self.messages: List[str] = []
        self.callbacks = Callbacks(self.abi, self.handles, self.messages)
        # undecided (None) until a version string names the vendor DLL
        self.open_mpi: Optional[bool] = None
        self._decide(self.version)
        self.lib.mqs_setup_basic_callbacks(ctypes.byref(self.callbacks.basic))

    def is_open_mpi(self) -> bool:
        """Whether the DLL is Open MPI's (is_open_mpi_dll), from the version string `mqd load`
        read, or, when that was libmqdproxy.so's own for want of a server, from the first later
        answer that names the vendor DLL (asked again at each call until one does; `version`
        stays what `mqd load` printed). Call it outside the DLL's callbacks (it may call
        mqs_version_string)."""
        if self.open_mpi is None:
            self._decide(abi.c_string(self.lib.mqs_version_string()))
        return bool(self.open_mpi)

    def _decide(self, version: Optional[str]) -> None:
        # Once decided, the callbacks write that DLL's number of type sizes.
        if not _names_no_dll(version):
            self.open_mpi = is_open_mpi_dll(version)
            self.callbacks.type_sizes = abi.TYPE_SIZES_OPENMPI_INTS if self.open_mpi \
                else abi.TYPE_SIZES_MPICH_INTS

    @property
    def processes(self) -> Dict[int, Process]:
        """inferior num -> handles.Process, for every inferior set up (or tried)."""
        return self.handles.processes

    # ---- the DLL's entry points ----

    def has(self, name: str) -> bool:
        """Whether the DLL exports entry point `name` (some are optional)."""
        try:
            getattr(self.lib, name)
            return True
        except AttributeError:
            return False

    def _check_exports(self) -> None:
        """MqdError unless the DLL exports every entry point an MQD DLL must."""
        required = abi.required_entry_points()
        missing = [name for name in required if not self.has(name)]
        if len(missing) == len(required):
            raise MqdError("%s is not an MQD DLL: it exports none of the MQD interface's entry "
                           "points (%s)" % (self.path, ", ".join(required)))
        if missing:
            raise MqdError("%s is not a complete MQD DLL: it lacks %s"
                           % (self.path, ", ".join(missing)))

    def _declare(self) -> None:
        for name, (restype, argtypes) in abi.entry_points().items():
            if self.has(name):
                fn = getattr(self.lib, name)
                fn.restype, fn.argtypes = restype, argtypes

    def error_text(self, rc: int) -> str:
        """The DLL's text for result code `rc` ("error RC" if it has none)."""
        text = abi.c_string(self.lib.mqs_dll_error_string(rc))
        return text if text is not None else "error %d" % rc

    def fail(self, call: str, rc: int) -> MqdError:
        """The MqdError for entry point `call` returning `rc`."""
        return MqdError("%s failed: %s (%d)" % (call, self.error_text(rc), rc))

    # ---- set-up, cached per inferior ----

    def ensure_image(self, num: int) -> Process:
        """Sets up the image of inferior `num` (and asks whether it has queues); raises
        MqdError when the DLL says no (with its message). The answers are kept: a refused
        set-up is not retried. Returns the inferior's process handle."""
        process = self.handles.process_for(num)
        image = process.image
        inf = find_inferior(num)
        if inf.pid == 0:
            raise MqdError("inferior %d has no process" % num)
        if process.big_endian is None:
            with SelectedInferior(num):
                process.big_endian = big_endian()
        if not image.set_up:
            rc = self.lib.mqs_setup_image(image.handle,
                                          ctypes.byref(self.callbacks.image_callbacks))
            if rc != abi.MQS_OK:
                raise self.fail("mqs_setup_image", rc)
            image.set_up = True
        if image.has_queues is None:
            answer = ctypes.c_void_p(None)
            rc = self.lib.mqs_image_has_queues(image.handle, ctypes.byref(answer))
            image.has_queues = (rc, abi.c_string(answer.value))
        rc, message = image.has_queues
        if rc != abi.MQS_OK:
            raise MqdError(self._explain("image", rc, message, image_name(num)))
        return process

    def ensure_process(self, num: int) -> Process:
        """Sets up the image and process of inferior `num`; raises MqdError when the DLL
        says no (with its message). The answers are kept: a refused set-up is not retried."""
        process = self.ensure_image(num)
        inf = find_inferior(num)
        if process.set_up is None:
            if os.environ.get("MQD_PROXY_RECORD"):
                # The shim's recording keeps what only gdb knows of this process, so that
                # `mqd-proxy replay --json` prints the same dump as `mqd dump --json`.
                label = "inferior=%d pid=%d rank=%d" % (num, inf.pid, global_rank(process))
                attached = job.label(num)
                if attached is not None and attached.host and " " not in attached.host \
                        and "=" not in attached.host:
                    label += " host=%s" % attached.host
                os.environ["MQD_PROXY_RECORD_LABEL"] = label
            start = len(self.messages)
            process.set_up = self.lib.mqs_setup_process(
                process.handle, ctypes.byref(self.callbacks.process_callbacks))
            process.warnings = proxy_warnings(self.messages[start:])
        if process.set_up != abi.MQS_OK:
            raise self.fail("mqs_setup_process", process.set_up)
        if process.has_queues is None:
            answer = ctypes.c_void_p(None)
            rc = self.lib.mqs_process_has_queues(process.handle, ctypes.byref(answer))
            process.has_queues = (rc, abi.c_string(answer.value))
        rc, message = process.has_queues
        if rc != abi.MQS_OK:
            raise MqdError(self._explain("process", rc, message, "process %d" % inf.pid))
        return process

    def _explain(self, what: str, rc: int, message: Optional[str], name: str) -> str:
        parts = ["the DLL says this %s has no message queues: %s (%d)"
                 % (what, self.error_text(rc), rc)]
        if message:
            parts.append(_format_message(message, name))
        return "; ".join(parts)


def _format_message(message: str, name: str) -> str:
    # has_queues messages are printf formats with at most one %s.
    try:
        return message.replace("%%", "\0").replace("%s", name, 1).replace("\0", "%")
    except Exception:
        return message
