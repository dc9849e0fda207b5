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
#   mqd snapshot OUT.json
#       A whole-job snapshot: every inferior's queues, where each is stopped (frames, innermost
#       MPI call), Open MPI's PML and the host (frontends/analysis/SNAPSHOT.md).
#   mqd graph [--json] [--dot FILE] [--svg FILE] [--png FILE] [--html FILE] [--snapshot FILE]
#       Who waits on whom: the deadlock analysis of a snapshot taken now, run here (the package
#       mqd_analysis in ../analysis): the verdict as text or JSON, the picture and report files
#       named, and the snapshot itself with --snapshot (docs/deadlock.md, "Running it").
#   mqd types [OBJECT]
#       Load debug types for a stripped libmpi (see frontends/ompi-types); without OBJECT, the
#       installed or $MQD_OMPI_TYPES object for this architecture. `mqd dump` does this by
#       itself when the DLL is Open MPI's and libmpi lacks the types.
#   mqd status
#       What is loaded, and what was set up.
#
# This file only loads the front end: its code is the package mqd_gdb next to it
# (mqd_gdb/__init__.py lists its modules). Sourcing it puts this directory first on gdb's
# sys.path, imports the package afresh (sourcing again starts over, as it always did: no DLL
# loaded; the earlier copy's gdb event handlers are disconnected, mqd_gdb/events.py) and
# registers the commands. Python writes no bytecode next to it: an installed
# copy is package data, which a package manager must be able to remove whole.

import os
import sys


def _load_front_end() -> None:
    # This file's directory. The code object knows its own file; __file__ may name an outer
    # script when this one is sourced from another.
    here = os.path.dirname(os.path.abspath(sys._getframe().f_code.co_filename))
    if here in sys.path:
        sys.path.remove(here)
    sys.path.insert(0, here)
    for name in [n for n in sys.modules if n == "mqd_gdb" or n.startswith("mqd_gdb.")]:
        del sys.modules[name]
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        from mqd_gdb import commands
    finally:
        sys.dont_write_bytecode = writes_bytecode
    commands.register()


_load_front_end()
del _load_front_end
