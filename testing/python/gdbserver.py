"""GdbServer: a real gdbserver on a loopback port, the debugger's remote link in tests and
benchmarks. With `attach_pid`, `gdbserver --once --attach PID` (one debugger, one process);
without, `gdbserver --multi` (the debugger attaches processes there itself). Ready once it
says it listens; stop() kills it. Its output goes to WORKDIR/NAME.log.

    from gdbserver import GdbServer
    g = GdbServer("gdbserver", work, attach_pid=pid)
    ... gdb: target remote 127.0.0.1:<g.port> ...
    g.stop()

run_gdb() runs a gdb script in a gdb reaching the process through it.
"""
import os
import subprocess

from daemon import start_daemon, stop_daemon
from failure import Failure
from ports import free_port


class GdbServer:
    def __init__(self, binary, workdir, attach_pid=None, name="gdbserver"):
        self.port = free_port()
        self.log = os.path.join(workdir, name + ".log")
        address = "127.0.0.1:%d" % self.port
        argv = [binary, "--multi", address] if attach_pid is None else \
            [binary, "--once", address, "--attach", str(attach_pid)]
        with open(self.log, "w") as log:
            self.proc = start_daemon(argv, lambda: "Listening on port" in open(self.log).read(),
                                     "gdbserver", log=self.log, stdout=log,
                                     stderr=subprocess.STDOUT)

    def stop(self):
        stop_daemon(self.proc)


def run_gdb(server, program, script, text, sources, env, work, timeout=600):
    """Runs the gdb script `text` (written to WORKDIR/`script`) in a batch gdb that reaches
    `server`'s process with the target's files local (`set sysroot /`, `file PROGRAM`), after
    sourcing each of `sources` (the front end first), with `env`. Returns gdb's stderr (where
    `set debug remote 1` writes, binary packets included: bytes that are no UTF-8 read as
    U+FFFD); its whole output goes to WORKDIR/gdb.log. Failure if gdb
    failed or printed a Python traceback."""
    path = os.path.join(work, script)
    with open(path, "w") as f:
        f.write(text)
    argv = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-ex", "set sysroot /", "-ex", "file " + program,
            "-ex", "target remote 127.0.0.1:%d" % server.port]
    for source in sources:
        argv += ["-ex", "source " + source]
    gdb = subprocess.run(argv + ["-x", path], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)
    with open(os.path.join(work, "gdb.log"), "w") as f:
        f.write(gdb.stdout + gdb.stderr)
    if gdb.returncode != 0 or "Traceback" in gdb.stderr:
        raise Failure("gdb failed (%d):\n%s" % (gdb.returncode, gdb.stderr[-3000:]))
    return gdb.stderr
