"""MPI calls as the analysis sees them: which block, and on what.

A rank's state is its innermost MPI call (the newest frame named MPI_* or PMPI_*), or none:
then it is computing and can still act. Only the calls below block; a rank stopped inside any
other MPI call (MPI_Test, MPI_Isend, MPI_Comm_rank, ...) returns from it, so it counts as
computing.
"""
from typing import Iterable, Mapping, Optional

# Point-to-point calls that block until one operation completes. Which pending request they
# hold cannot be told from the queues: the analysis takes any of the rank's pending operations
# of the right direction.
RECEIVES = frozenset({"MPI_Recv", "MPI_Mrecv"})
SENDS = frozenset({"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"})
WAIT_ONE = frozenset({"MPI_Wait"})
# A send and a receive, both needed.
SEND_RECEIVE = frozenset({"MPI_Sendrecv", "MPI_Sendrecv_replace"})
# Every request given (AND).
WAIT_ALL = frozenset({"MPI_Waitall"})
# Any of the requests given (OR).
WAIT_ANY = frozenset({"MPI_Waitany", "MPI_Waitsome"})
# Block until a matching message arrives, but post nothing the queues would show.
PROBES = frozenset({"MPI_Probe", "MPI_Mprobe"})

# Blocking collectives (and the calls that create communicators, which agree on an id
# collectively). Each completes only when every member of the communicator has called it.
COLLECTIVES = frozenset({
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
    "MPI_Scan", "MPI_Exscan", "MPI_Neighbor_allgather", "MPI_Neighbor_allgatherv",
    "MPI_Neighbor_alltoall", "MPI_Neighbor_alltoallv", "MPI_Neighbor_alltoallw",
    "MPI_Comm_dup", "MPI_Comm_dup_with_info", "MPI_Comm_split", "MPI_Comm_split_type",
    "MPI_Comm_create", "MPI_Comm_create_group", "MPI_Intercomm_create", "MPI_Intercomm_merge",
    "MPI_Cart_create", "MPI_Graph_create", "MPI_Dist_graph_create",
    "MPI_Dist_graph_create_adjacent", "MPI_Win_create", "MPI_Win_allocate", "MPI_Win_fence",
    "MPI_File_open", "MPI_File_close",
})

FINALIZE = "MPI_Finalize"

BLOCKING = RECEIVES | SENDS | WAIT_ONE | SEND_RECEIVE | WAIT_ALL | WAIT_ANY | PROBES | \
    COLLECTIVES | {FINALIZE}


def normalise(name: Optional[str]) -> Optional[str]:
    """The MPI name of a frame's function, or None if it is not an MPI call: PMPI_Recv and
    MPI_Recv give MPI_Recv; the Fortran bindings' mpi_recv_ and PMPI_RECV too."""
    if not name:
        return None
    base = name.split("@", 1)[0].rstrip("_")
    lower = base.lower()
    if lower.startswith("pmpi_"):
        rest = base[5:]
    elif lower.startswith("mpi_"):
        rest = base[4:]
    else:
        return None
    if not rest:
        return None
    if rest.isupper() or rest.islower():  # Fortran: MPI_RECV, mpi_recv
        rest = rest[0].upper() + rest[1:].lower()
    return "MPI_" + rest


def innermost_call(frames: Optional[Iterable[Optional[str]]],
                   entry_points: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The innermost MPI call of a backtrace given newest frame first, or None.
    entry_points: {function: MPI call} for library functions that stand for a call whose
    own frame is gone (a tail call; see openmpi.ENTRY_POINTS)."""
    for frame in frames or ():
        call = normalise(frame) or (entry_points.get(frame) if entry_points and frame else None)
        if call:
            return call
    return None


def is_blocking(call: Optional[str]) -> bool:
    return call in BLOCKING
