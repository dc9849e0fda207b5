"""mqd-proxy-server --listen systemd: socket activation, under systemd's own tool for it
(systemd-socket-activate passes sockets exactly as systemd does: descriptor 3, LISTEN_PID,
LISTEN_FDS), with the settings of the socket unit the package installs
(packaging/systemd/mqd-proxy-server.socket: its ListenStream= address, on a free port, and its
Accept=).

Checks: started at the first connection, the server serves every later one (ping, info, whole
shim sessions checked against a native load of the test DLL) on TCP, on a unix socket (whose
file it leaves to systemd) and with TLS; it ends on SIGTERM. A socket it cannot serve (none,
someone else's, two, a datagram socket, a connected one from Accept=yes, non-loopback TCP
without a token, TLS on a unix socket) ends it with a message saying what to change.

usage: socket-activation.py --build BUILD --source SOURCE
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from checklist import Build, check, finish, free_port, last_json, run  # noqa: E402

ACTIVATE = shutil.which("systemd-socket-activate") or "/usr/bin/systemd-socket-activate"


def unit_settings(path):
    """The [Socket] settings of a unit file, as a dict of lists."""
    settings, section = {}, None
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Socket]" and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


class Activated:
    """systemd-socket-activate listening on `listens` (each a -l argument), running the server
    with `server_args` at the first connection. Its stderr (and the server's, which it execs)
    goes to a file."""

    def __init__(self, work, name, listens, server_args, extra=()):
        self.err_path = os.path.join(work, name + ".stderr")
        argv = [ACTIVATE] + list(extra)
        for listen in listens:
            argv += ["-l", listen]
        e = {k: v for k, v in os.environ.items() if not k.startswith("MQD_PROXY_")}
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(argv + ["--"] + server_args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err, env=e)
        deadline = time.time() + 10
        while time.time() < deadline and "Listening on" not in self.stderr():
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)

    def stderr(self):
        try:
            return open(self.err_path).read()
        except OSError:
            return ""

    def wait(self, timeout=15):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.wait()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
        return rc


def poke(address):
    """Connects once (the connection that makes systemd start the service) and hangs up."""
    try:
        if isinstance(address, str):
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(address)
        else:
            socket.create_connection(address, timeout=5).close()
    except OSError:
        pass


def make_tls(work):
    """A self-signed certificate for localhost and 127.0.0.1, and its key."""
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.chmod(key, 0o600)
    return cert, key


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    b = Build(args.build)
    server, cli, l3, dump_client = b.server, b.cli, b.l3, b.dump_client
    if not os.access(ACTIVATE, os.X_OK):
        print("FAIL  %s is missing: install systemd (tools/install-deps.sh --test does)"
              % ACTIVATE)
        return 1
    work = tempfile.mkdtemp(prefix="mqd-activation-")

    # The shipped socket unit's settings: its address (the port made free) and Accept=.
    unit = unit_settings(os.path.join(args.source, "packaging", "systemd",
                                      "mqd-proxy-server.socket"))
    listen_streams = unit.get("ListenStream", [])
    accept = unit.get("Accept", ["no"])[-1]
    m = re.fullmatch(r"(127\.\d+\.\d+\.\d+):\d+", listen_streams[0]) if listen_streams else None
    check(len(listen_streams) == 1 and m is not None and accept == "no",
          "the socket unit: one loopback ListenStream=, Accept=no", repr(unit))
    host = m.group(1) if m else "127.0.0.1"
    extra = ["--accept"] if accept == "yes" else []
    base = ["--dll", l3, "--state-dir", "none", "--log-level", "info"]

    def session(env):
        r = run([dump_client, "--dumps", "2", "--ops", "10"], dict(env, MQD_PROXY_DLL=l3),
                timeout=60)
        result = last_json(r)
        return r, result

    # TCP, as the unit has it.
    port = free_port()
    ready = os.path.join(work, "tcp.ready")
    a = Activated(work, "tcp", ["%s:%d" % (host, port)],
                  [server, "--listen", "systemd", "--ready-file", ready] + base, extra)
    try:
        env = {"MQD_PROXY_SERVER": "tcp:%s:%d" % (host, port)}
        check("Listening on" in a.stderr() and not os.path.exists(ready),
              "systemd's tool listens; the server is not started before a connection",
              a.stderr())
        r = run([cli, "ping", "--count", "3"], env)
        check(r.returncode == 0 and "round trips: min" in r.stdout,
              "the first connection starts the server, and is served (ping, %.2f s)" % r.seconds,
              r.all + a.stderr())
        r = run([cli, "info", "--json"], env)
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        check(r.returncode == 0 and doc.get("dlls") and
              doc["dlls"][0].get("version_string") == "mqd-proxy test DLL 1.0 (level 3)",
              "info from the activated server", r.all)
        r, result = session(env)
        check(r.returncode == 0 and result.get("ok") == 2 and result.get("wrong") == 0,
              "a shim session: 2 dumps identical to the native DLL's", r.all)
        text = open(ready).read().strip() if os.path.exists(ready) else ""
        check(text == "tcp:%s:%d" % (host, port) and
              "(socket from systemd)" in a.stderr(),
              "--ready-file and the log name systemd's socket (%s)" % text, a.stderr())
    finally:
        rc = a.stop()
    check(rc == 0 and "stopped after" in a.stderr(), "SIGTERM ends it (exit %s)" % rc,
          a.stderr())

    # A unix socket: systemd's file, left where it is.
    path = os.path.join(work, "activated.sock")
    a = Activated(work, "unix", [path], [server, "--listen", "systemd"] + base, extra)
    try:
        env = {"MQD_PROXY_SERVER": "unix:" + path}
        r = run([cli, "ping", "--count", "2"], env)
        r2, result = session(env)
        check(r.returncode == 0 and r2.returncode == 0 and result.get("ok") == 2,
              "a unix socket from systemd: ping and a shim session", r.all + r2.all + a.stderr())
    finally:
        rc = a.stop()
    check(rc == 0 and os.path.exists(path),
          "SIGTERM ends it, and the socket file stays systemd's (exit %s)" % rc, a.stderr())

    # TLS on systemd's TCP socket.
    cert, key = make_tls(work)
    port = free_port()
    a = Activated(work, "tls", ["%s:%d" % (host, port)],
                  [server, "--listen", "tls:systemd", "--tls-cert", cert, "--tls-key", key] +
                  base, extra)
    try:
        env = {"MQD_PROXY_SERVER": "tls:localhost:%d" % port, "MQD_PROXY_TLS_CA": cert}
        r = run([cli, "ping", "--count", "2"], env)
        r2, result = session(env)
        check(r.returncode == 0 and r2.returncode == 0 and result.get("ok") == 2,
              "--listen tls:systemd: ping and a shim session over TLS", r.all + r2.all + a.stderr())
    finally:
        a.stop()

    # Sockets it cannot serve: each ends the server at once, saying what to change.
    def refused(name, listens, server_args, expect, extra_args=(), env=None, what=""):
        a = Activated(work, name, listens, server_args, extra_args)
        started = time.time()
        target = listens[0]
        if "--datagram" in extra_args:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                h, p = target.rsplit(":", 1)
                s.sendto(b"x", (h, int(p)))
        else:
            poke(target if target.startswith("/") else
                 (target.rsplit(":", 1)[0], int(target.rsplit(":", 1)[1])))
        if "--accept" in extra_args:
            # The tool keeps listening, spawning a server per connection: this one's end is
            # in its log.
            deadline = time.time() + 15
            while time.time() < deadline and "died with code" not in a.stderr():
                time.sleep(0.05)
            seconds = time.time() - started
            a.stop()
            died = re.search(r"died with code (\d+)", a.stderr())
            rc = int(died.group(1)) if died else None
        else:
            rc = a.wait()
            seconds = time.time() - started
            if rc is None:
                a.stop()
        check(rc == 1 and expect in a.stderr() and seconds < 10,
              "%s: exit 1, \"%s\" (%.1f s)" % (what, expect, seconds), a.stderr())

    def tcp():
        return "127.0.0.1:%d" % free_port()

    refused("two", [tcp(), tcp()], [server, "--listen", "systemd"] + base,
            "passed 2 socket(s)", what="two sockets")
    refused("accept", [tcp()], [server, "--listen", "systemd"] + base,
            "needs Accept=no", ["--accept"], what="a connected socket (Accept=yes)")
    refused("datagram", [tcp()], [server, "--listen", "systemd"] + base,
            "needs ListenStream=", ["--datagram"], what="a datagram socket")
    refused("exposed", ["0.0.0.0:%d" % free_port()], [server, "--listen", "systemd"] + base,
            "not a loopback address", what="every interface without --token-file")
    refused("tls-unix", [os.path.join(work, "tls.sock")],
            [server, "--listen", "tls:systemd", "--tls-cert", cert, "--tls-key", key] + base,
            "TLS needs a TCP socket", what="tls:systemd on a unix socket")

    r = run([server, "--listen", "systemd"] + base, timeout=30)
    check(r.returncode == 1 and "no socket from systemd (LISTEN_FDS is not set)" in r.stderr,
          "started without systemd: said so", r.all)
    r = run([server, "--listen", "systemd"] + base, {"LISTEN_FDS": "1", "LISTEN_PID": "1"},
            timeout=30)
    check(r.returncode == 1 and "are for process 1, not this one" in r.stderr,
          "LISTEN_PID of another process: said so", r.all)
    r = run([server, "--listen", "systemd", "--stdio"] + base, timeout=30)
    check(r.returncode == 2 and "--stdio" in r.stderr, "--stdio with --listen systemd: usage error",
          r.all)

    # Given an address while systemd passed a socket: it warns (and serves its own address).
    port = free_port()
    sock_path = os.path.join(work, "own.sock")
    a = Activated(work, "mismatch", ["127.0.0.1:%d" % port],
                  [server, "--listen", "unix:" + sock_path] + base)
    poke(("127.0.0.1", port))
    deadline = time.time() + 10
    while time.time() < deadline and not os.path.exists(sock_path):
        time.sleep(0.05)
    rc = a.stop()
    check(rc == 0 and "systemd passed this server a socket, but --listen is unix:" in a.stderr(),
          "--listen ADDRESS under socket activation: a warning naming --listen systemd",
          a.stderr())
    return finish(work, "socket activation")


if __name__ == "__main__":
    sys.exit(main())
