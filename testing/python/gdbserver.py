"""GdbServer: a real gdbserver on a loopback port, the debugger's remote link in tests and
benchmarks. With `attach_pid`, `gdbserver --once --attach PID` (one debugger, one process);
without, `gdbserver --multi` (the debugger attaches processes there itself). Ready once it
says it listens; stop() kills it. Its output goes to WORKDIR/NAME.log.

    from gdbserver import GdbServer
    g = GdbServer("gdbserver", work, attach_pid=pid)
    ... gdb: target remote 127.0.0.1:<g.port> ...
    g.stop()
"""
import os
import subprocess

from failure import Failure, wait_for
from ports import free_port


class GdbServer:
    def __init__(self, binary, workdir, attach_pid=None, name="gdbserver"):
        self.port = free_port()
        self.log = os.path.join(workdir, name + ".log")
        address = "127.0.0.1:%d" % self.port
        argv = [binary, "--multi", address] if attach_pid is None else \
            [binary, "--once", address, "--attach", str(attach_pid)]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: "Listening on port" in open(self.log).read()
                 or self.proc.poll() is not None, 20, "gdbserver")
        if self.proc.poll() is not None:
            raise Failure("gdbserver did not start:\n" + open(self.log).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
