"""mqd_gdb: the gdb front end's code. MPI message queues in gdb, through an MQD DLL (the MPI
library's own, or libmqdproxy.so, which forwards to mqd-proxy-server on the target's platform).

Users never import this package themselves: they `source` ../mqd.py, which puts this
package's directory on sys.path and registers the `mqd` commands (commands.register()).

Modules, one concept each, in the order a value travels:

  commands     the gdb commands `mqd attach|load|dump|snapshot|graph|types|status`, the
               one error boundary they run in, and the one loaded Session
  options      the commands' options, parsed by argparse, every mistake an MqdError
  job          the whole job `mqd attach` attaches: the launcher's MPIR process table, one
               inferior per rank in rank order, each labelled with its rank and host
  slurm        a job launched by Slurm's srun: its step, its nodes' addresses, and a
               gdbserver --attach per rank started on each node through Slurm
  hosts        whether a host name the launcher or Slurm gives names the machine gdb runs on
  session      a loaded MQD DLL: loading it, setting up each inferior's image and process,
               the DLL's error texts
  dump         one process's communicators, groups and queues, read through a Session, as a
               dict (the JSON of `mqd dump --json` is json.dumps of it)
  render       that dict as the text of `mqd dump`, and as its JSON (no gdb needed: the
               replay's format test uses it, tests/unit/data/make-replay-dump.py)
  snapshot     the whole-job snapshot of `mqd snapshot` and `mqd graph`: every process's
               dump, where it is stopped, its PML and host
  analysis     the deadlock analysis `mqd graph` runs (the package mqd_analysis, in
               ../analysis beside this front end), imported on first use
  callbacks    what gdb serves the DLL: symbols, types, fields and sizes, memory, basic type
               sizes, the MPI_COMM_WORLD rank
  handles      the images, processes and types the DLL knows by opaque handle
  inferiors    gdb's inferiors as the front end uses them: finding and selecting one
  memory       target memory as fetch_data reads it: whole pages, each read once per command,
               kept for later commands behind a stub that proves them unchanged (qCRC)
  debug_types  the debug-type object for Open MPI's stripped libmpi (frontends/ompi-types),
               loaded into each inferior that lacks the types when the DLL is Open MPI's
  abi          the MQD C ABI (schema/mqs_interface.h) as ctypes declarations, and the
               one code of libmqdproxy.so's the front end acts on
  errors       MqdError, a failure shown to the user in the DLL's or the proxy's own words
  execute      gdb commands run for their effect or their text, their output kept from the
               user (and from gdb's debug logs)
  events       gdb's event handlers of lookup and memory, connected once however often the
               front end is sourced

Importing the package itself imports nothing else; abi, errors, options, render and analysis
import no gdb. Every function is annotated, and mypy checks them (../../mypy.ini, with
../../stubs/gdb.pyi for gdb's module); the modules that import gdb leave their annotations
unevaluated (`from __future__ import annotations`): they name gdb's classes, which only a real
gdb has.
"""
