"""Server: a real mqd-proxy-server for a test, started on an address and with vendor DLLs,
ready once it has written its --ready-file (whose text, the endpoint to connect to, is
`endpoint`), logging to WORKDIR/NAME.log. stop() sends SIGTERM and waits; by default a server
that then exits with anything but 0 is a Failure.

    from servers import Server
    s = Server(server_bin, "unix:" + os.path.join(work, "s.sock"), dll, work, "unix")
    ... s.endpoint ...
    s.stop()

Learned state goes to WORKDIR/state unless `state_dir` says otherwise ("none": no learned
state): one directory for every server of a run, so the first session is cold and later ones
start from what it learned.

Relay: an mqd-relay in front of a server's endpoint on TCP loopback, adding a round-trip time
(a server on another machine); `endpoint` is its own, stop() kills it.
"""
import os
import signal

from daemon import start_daemon, stop_daemon
from failure import LOADED_MACHINE_SLACK, Failure


class Server:
    def __init__(self, binary, listen, dlls, workdir, name, state_dir=None, extra=()):
        """`dlls`: one vendor DLL, or a list of them (the first is the default)."""
        ready = os.path.join(workdir, name + ".ready")
        self.name = name
        self.log = os.path.join(workdir, name + ".log")
        args = [binary, "--listen", listen]
        for dll in [dlls] if isinstance(dlls, str) else dlls:
            args += ["--dll", dll]
        args += ["--ready-file", ready,
                 "--state-dir", state_dir or os.path.join(workdir, "state"),
                 "--log-file", self.log]
        self.proc = start_daemon(args + list(extra), lambda: os.path.exists(ready), name,
                                 log=self.log)
        self.endpoint = open(ready).read().strip()

    def stop(self, check_exit=True):
        """SIGTERM, then waits (LOADED_MACHINE_SLACK at most: the slack of a loaded machine for
        an exit that must come). With check_exit, an exit status other than 0 is a Failure.
        Returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=LOADED_MACHINE_SLACK)
        if check_exit and self.proc.returncode != 0:
            raise Failure("server exited with %d" % self.proc.returncode)
        return self.proc.returncode


class Relay:
    def __init__(self, binary, connect, rtt_ms, workdir, name):
        ready = os.path.join(workdir, name + ".ready")
        self.proc = start_daemon([binary, "--listen", "tcp:127.0.0.1:0", "--connect",
                                  connect, "--delay-ms", str(rtt_ms / 2.0),
                                  "--ready-file", ready], lambda: os.path.exists(ready), name)
        self.endpoint = open(ready).read().strip()
        self.port = int(self.endpoint.rsplit(":", 1)[1])  # on 127.0.0.1

    def stop(self):
        stop_daemon(self.proc)
