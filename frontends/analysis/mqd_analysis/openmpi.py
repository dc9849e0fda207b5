"""Open MPI specifics: what its MQD DLL shows, and how to read it.

Every fact here was read in Open MPI 4.1.4's source (Debian's `openmpi` source package) or
measured with Debian 12's Open MPI and its DLL, `libompi_dbg_msgq.so`. Other modules ask this
one; none of them repeats a number from it.
"""
from typing import TYPE_CHECKING, Dict, Iterable, Optional

if TYPE_CHECKING:  # snapshot imports this module
    from .snapshot import Operation

# MPI_ANY_SOURCE as a pending receive's desired_local_rank. The DLL reads the 32-bit rank into
# a 64-bit field without sign extension, so Open MPI 4.1 shows -1 as 4294967295; a DLL that
# extends the sign gives -1.
ANY_SOURCE_VALUES = (-1, 4294967295)

# MPI_ANY_TAG (mpi.h). The DLL also sets tag_wild for it.
ANY_TAG = -1

# ompi/mca/coll/base/coll_tags.h: collectives implemented over point-to-point use these tags
# (on the collective's own communicator); ompi/communicator/communicator.h: the ones of the
# communicator-id agreement run by MPI_Comm_dup, MPI_Comm_split and friends; the topology and
# MPI-IO (ompio) components have their own. Open MPI 4.1's DLL hides every negative tag (its
# `show_internal_requests` is 0 and cannot be changed through the MQD interface), so these
# only appear with a DLL that shows internal requests.
COLLECTIVE_TAGS: Dict[int, str] = {
    -10: "MPI_Allgather",
    -11: "MPI_Allgatherv",
    -12: "MPI_Allreduce",
    -13: "MPI_Alltoall",
    -14: "MPI_Alltoallv",
    -15: "MPI_Alltoallw",
    -16: "MPI_Barrier",
    -17: "MPI_Bcast",
    -18: "MPI_Exscan",
    -19: "MPI_Gather",
    -20: "MPI_Gatherv",
    -21: "MPI_Reduce",
    -22: "MPI_Reduce_scatter",
    -23: "MPI_Reduce_scatter_block",
    -24: "MPI_Scan",
    -25: "MPI_Scatter",
    -26: "MPI_Scatterv",
    -50: "MPI_Dist_graph_create (edges in)",
    -51: "MPI_Dist_graph_create (edges out)",
    -100: "MPI-IO gather (ompio)",
    -101: "MPI-IO gatherv (ompio)",
    -102: "MPI-IO bcast (ompio)",
    -103: "MPI-IO scatterv (ompio)",
    -31078: "communicator creation (allgather)",
    -31079: "communicator creation (barrier)",
    -31080: "communicator creation (allreduce)",
}

_INT_MAX = 2**31 - 1
# Ranges of coll_tags.h: each nonblocking collective (libnbc) takes tags going down from -27
# to -(INT_MAX/2)+1; the neighbourhood collectives the 1024 below; then UCC's and hcoll's.
_NONBLOCKING = (-(_INT_MAX // 2) + 1, -27)
_NEIGHBOR = (-(_INT_MAX // 2) - 1024, -(_INT_MAX // 2))
_HCOLL = (-_INT_MAX, -(_INT_MAX // 2) - 1025)


def collective_of_tag(tag: Optional[int]) -> Optional[str]:
    """The collective (or internal operation) behind a negative tag, or None for a user tag
    (user tags are >= 0; -1 is MPI_ANY_TAG)."""
    if tag is None or tag >= -1:
        return None
    if tag in COLLECTIVE_TAGS:
        return COLLECTIVE_TAGS[tag]
    if _NONBLOCKING[0] <= tag <= _NONBLOCKING[1]:
        return "a nonblocking collective"
    if _NEIGHBOR[0] <= tag <= _NEIGHBOR[1]:
        return "a neighbourhood collective"
    if _HCOLL[0] <= tag <= _HCOLL[1]:
        return "an hcoll/UCC collective"
    return "an internal operation (tag %d)" % tag


# MPI_COMM_NULL is listed as a communicator of size 0 (its local rank shows as 4294967294).
def is_null_communicator(name: str, size: int) -> bool:
    return size == 0 or name == "MPI_COMM_NULL"


# The DLL walks only the request free lists of the PMLs that fill them: ob1 and cm. With
# another PML (ucx, the default on InfiniBand) it answers every queue empty: an empty queue
# then says nothing. Open MPI issue #6464.
PMLS_WITH_VISIBLE_QUEUES = ("ob1", "cm")
PML_FRAME_PREFIX = "mca_pml_"  # frames of the selected PML: mca_pml_ucx_recv, mca_pml_ob1_send


def pml_from_frames(frames: Optional[Iterable[Optional[str]]]) -> Optional[str]:
    """The PML named by a frame of the rank's backtrace (mca_pml_<name>_...), or None."""
    for frame in frames or ():
        if frame and frame.startswith(PML_FRAME_PREFIX):
            rest = frame[len(PML_FRAME_PREFIX):]
            if "_" in rest:
                name = rest.split("_", 1)[0]
                if name != "base":
                    return name
    return None


def queues_visible(pml: Optional[str]) -> Optional[bool]:
    """False when the DLL cannot see the rank's requests at all (None: unknown PML)."""
    if pml is None:
        return None
    return pml in PMLS_WITH_VISIBLE_QUEUES


# Open MPI 4.1's MPI_Finalize ends with a PMIx fence over the whole job: a rank in it waits
# until every other rank calls MPI_Finalize too, and it will never send or receive again.
FINALIZE_WAITS_FOR_ALL = True

# Datatype names are cut to four characters ("MPI_") in the third extra_text line.
CUT_DATATYPE_NAME = "MPI_"

# How the DLL answers the unexpected-message queue: mqs_no_information (Open MPI 4.1 does not
# implement it). Unknown, never "empty".
UNEXPECTED_NOT_IMPLEMENTED = "Open MPI 4.1's DLL does not implement the unexpected-message queue"

# The eager limit of ob1 over shared memory (vader): a send of more bytes is a rendezvous and
# stays pending until a matching receive is posted. Smaller sends complete at once (their
# message waits unseen in the receiver's unexpected queue). btl_vader_eager_limit's default.
VADER_EAGER_LIMIT = 4096

# The DLL reads a request's req_complete as a bool (its first byte). Since Open MPI 2, that
# field holds REQUEST_PENDING (0), REQUEST_COMPLETED (1), or, while a thread waits on the
# request (MPI_Waitall, MPI_Waitany, MPI_Waitsome; MPI_Wait in a threaded program), the
# address of the waiter's sync object: such a request shows "complete" though nothing
# completed. A receive that really completed shows "matched" instead (its status has the
# tag); a send the PML completed says "Data transfer completed" in its extra text. So a
# "complete" receive, or a "complete" send without that text, is a request being waited on.
DATA_TRANSFER_COMPLETED = "Data transfer completed"


def is_open_mpi_dll(dll: Optional[str]) -> bool:
    """True for Open MPI's DLL (by its version string); unknown (None) counts as Open MPI."""
    return dll is None or "Open MPI" in dll


def lengths_in_bytes(dll: Optional[str]) -> bool:
    """Whether the DLL's message lengths are bytes. Open MPI's are, as MQD says; MPICH's are
    counts of elements (docs/mpich.md), and of any other DLL nothing is known, so only Open
    MPI's lengths are ever called bytes."""
    return is_open_mpi_dll(dll)


def shown_complete_but_waited_on(op: "Operation") -> bool:
    if not op.complete:
        return False
    if op.queue == "receives":
        return True
    return DATA_TRANSFER_COMPLETED not in (op.raw.get("extra_text") or ())


# Functions that stand for an MPI call in a backtrace when the call's own frame is gone:
# PMPI_Finalize ends with a tail call (a jump) to ompi_mpi_finalize, so a rank in
# MPI_Finalize shows ompi_mpi_finalize called from main.
ENTRY_POINTS = {
    "ompi_mpi_finalize": "MPI_Finalize",
    "ompi_mpi_init": "MPI_Init",
}
