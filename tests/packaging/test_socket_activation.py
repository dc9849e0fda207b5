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

usage: pytest-3 tests/packaging/test_socket_activation.py --build BUILD
       (ctest: packaging-socket-activation)
The tests run in file order: each activated server's tests share it, the last one stops it.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest
from failure import LOADED_MACHINE_SLACK
from ports import free_port
from run_command import last_json, run

SCRATCH_PREFIX = "mqd-activation-"

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
        # The slack of a loaded machine for the tool to listen; its line ends the wait.
        deadline = time.time() + LOADED_MACHINE_SLACK
        while time.time() < deadline and "Listening on" not in self.stderr():
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)

    def stderr(self):
        try:
            return open(self.err_path).read()
        except OSError:
            return ""

    def wait(self, timeout=LOADED_MACHINE_SLACK):  # an end that must come: the slack
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


@pytest.fixture(scope="module")
def programs(artefacts):
    """(server, cli, test DLL level 3, dump client) of the build."""
    return (artefacts.require("server"), artefacts.require("cli"),
            artefacts.require("testdll_l3"), artefacts.require("dump_client"))


@pytest.fixture(scope="module")
def activate():
    """systemd's tool: a test that needs it fails, with a sentence, when it is missing."""
    if not os.access(ACTIVATE, os.X_OK):
        pytest.fail("%s is missing: install systemd (tools/install-deps.sh --test does)"
                    % ACTIVATE, pytrace=False)
    return ACTIVATE


@pytest.fixture(scope="module")
def unit(artefacts):
    """The shipped socket unit's [Socket] settings."""
    return unit_settings(os.path.join(artefacts.source, "packaging", "systemd",
                                      "mqd-proxy-server.socket"))


@pytest.fixture(scope="module")
def unit_address(unit):
    """The unit's loopback host (its ListenStream=, the port made free) and the extra
    arguments its Accept= means."""
    listen_streams = unit.get("ListenStream", [])
    m = re.fullmatch(r"(127\.\d+\.\d+\.\d+):\d+", listen_streams[0]) if listen_streams else None
    host = m.group(1) if m else "127.0.0.1"
    extra = ["--accept"] if unit.get("Accept", ["no"])[-1] == "yes" else []
    return host, extra


@pytest.fixture(scope="module")
def base(programs):
    """The server's options in every activation: the test DLL, no learned state."""
    return ["--dll", programs[2], "--state-dir", "none", "--log-level", "info"]


def session(programs, env):
    """A shim session of 2 dumps through the server of `env`, checked against a native load:
    (the run, the dump client's summary)."""
    server, cli, l3, dump_client = programs
    r = run([dump_client, "--dumps", "2", "--ops", "10"], dict(env, MQD_PROXY_DLL=l3),
            timeout=60)
    return r, last_json(r)


def test_socket_unit_one_loopback_listenstream_accept_no(unit):
    """The socket unit: one loopback ListenStream=, Accept=no."""
    listen_streams = unit.get("ListenStream", [])
    accept = unit.get("Accept", ["no"])[-1]
    m = re.fullmatch(r"(127\.\d+\.\d+\.\d+):\d+", listen_streams[0]) if listen_streams else None
    assert len(listen_streams) == 1 and m is not None and accept == "no", repr(unit)


# TCP, as the unit has it.

@pytest.fixture(scope="module")
def tcp(programs, activate, unit_address, base, scratch):
    """(the activated server on the unit's address, its endpoint, its ready file)."""
    host, extra = unit_address
    port = free_port()
    ready = os.path.join(scratch, "tcp.ready")
    a = Activated(scratch, "tcp", ["%s:%d" % (host, port)],
                  [programs[0], "--listen", "systemd", "--ready-file", ready] + base, extra)
    yield a, "tcp:%s:%d" % (host, port), ready
    a.stop()


def test_tcp_not_started_before_a_connection(tcp):
    """systemd's tool listens; the server is not started before a connection."""
    a, endpoint, ready = tcp
    assert "Listening on" in a.stderr() and not os.path.exists(ready), a.stderr()


def test_tcp_first_connection_starts_the_server(tcp, programs, note):
    """The first connection starts the server, and is served (ping)."""
    a, endpoint, ready = tcp
    r = run([programs[1], "ping", "--count", "3"], {"MQD_PROXY_SERVER": endpoint})
    note("the first connection starts the server, and is served (ping, %.2f s)" % r.seconds)
    assert r.returncode == 0 and "round trips: min" in r.stdout, r.all + a.stderr()


def test_tcp_info(tcp, programs):
    """info from the activated server."""
    a, endpoint, ready = tcp
    r = run([programs[1], "info", "--json"], {"MQD_PROXY_SERVER": endpoint})
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    assert (r.returncode == 0 and doc.get("dlls") and
            doc["dlls"][0].get("version_string") == "mqd-proxy test DLL 1.0 (level 3)"), r.all


def test_tcp_shim_session(tcp, programs):
    """A shim session: 2 dumps identical to the native DLL's."""
    a, endpoint, ready = tcp
    r, result = session(programs, {"MQD_PROXY_SERVER": endpoint})
    assert r.returncode == 0 and result.get("ok") == 2 and result.get("wrong") == 0, r.all


def test_tcp_ready_file_and_log_name_systemds_socket(tcp):
    """--ready-file and the log name systemd's socket."""
    a, endpoint, ready = tcp
    text = open(ready).read().strip() if os.path.exists(ready) else ""
    assert text == endpoint and "(socket from systemd)" in a.stderr(), a.stderr()


def test_tcp_sigterm_ends_it(tcp):
    a, endpoint, ready = tcp
    rc = a.stop()
    assert rc == 0 and "stopped after" in a.stderr(), a.stderr()


# A unix socket: systemd's file, left where it is.

@pytest.fixture(scope="module")
def unix(programs, activate, unit_address, base, scratch):
    """(the activated server on a unix socket, the socket's path)."""
    path = os.path.join(scratch, "activated.sock")
    a = Activated(scratch, "unix", [path], [programs[0], "--listen", "systemd"] + base,
                  unit_address[1])
    yield a, path
    a.stop()


def test_unix_ping_and_shim_session(unix, programs):
    """A unix socket from systemd: ping and a shim session."""
    a, path = unix
    env = {"MQD_PROXY_SERVER": "unix:" + path}
    r = run([programs[1], "ping", "--count", "2"], env)
    r2, result = session(programs, env)
    assert r.returncode == 0 and r2.returncode == 0 and result.get("ok") == 2, \
        r.all + r2.all + a.stderr()


def test_unix_sigterm_ends_it_socket_file_stays(unix):
    """SIGTERM ends it, and the socket file stays systemd's."""
    a, path = unix
    rc = a.stop()
    assert rc == 0 and os.path.exists(path), a.stderr()


# TLS on systemd's TCP socket.

@pytest.fixture(scope="module")
def tls_files(scratch):
    """(certificate, key): self-signed, for localhost and 127.0.0.1."""
    return make_tls(scratch)


def test_tls_ping_and_shim_session(programs, activate, unit_address, base, scratch, tls_files):
    """--listen tls:systemd: ping and a shim session over TLS."""
    cert, key = tls_files
    port = free_port()
    a = Activated(scratch, "tls", ["%s:%d" % (unit_address[0], port)],
                  [programs[0], "--listen", "tls:systemd", "--tls-cert", cert, "--tls-key", key]
                  + base, unit_address[1])
    try:
        env = {"MQD_PROXY_SERVER": "tls:localhost:%d" % port, "MQD_PROXY_TLS_CA": cert}
        r = run([programs[1], "ping", "--count", "2"], env)
        r2, result = session(programs, env)
        assert r.returncode == 0 and r2.returncode == 0 and result.get("ok") == 2, \
            r.all + r2.all + a.stderr()
    finally:
        a.stop()


# Sockets it cannot serve: each ends the server at once, saying what to change.

def _tcp():
    return "127.0.0.1:%d" % free_port()


REFUSED = [
    # name, sockets, --listen (and TLS files), expected message, tool's options, what
    ("two", lambda s: [_tcp(), _tcp()], "systemd", "passed 2 socket(s)", [], "two sockets"),
    ("accept", lambda s: [_tcp()], "systemd", "needs Accept=no", ["--accept"],
     "a connected socket (Accept=yes)"),
    ("datagram", lambda s: [_tcp()], "systemd", "needs ListenStream=", ["--datagram"],
     "a datagram socket"),
    ("exposed", lambda s: ["0.0.0.0:%d" % free_port()], "systemd", "not a loopback address",
     [], "every interface without --token-file"),
    ("tls-unix", lambda s: [os.path.join(s, "tls.sock")], "tls:systemd",
     "TLS needs a TCP socket", [], "tls:systemd on a unix socket"),
]


@pytest.mark.parametrize("name,listens,listen,expect,extra_args,what", REFUSED,
                         ids=[case[0] for case in REFUSED])
def test_refused(name, listens, listen, expect, extra_args, what, programs, activate, base,
                 scratch, tls_files, note):
    """Exit 1 with the message, promptly (did not hang: within the slack of a loaded
    machine)."""
    tls = ["--tls-cert", tls_files[0], "--tls-key", tls_files[1]] if listen.startswith("tls") \
        else []
    listens = listens(scratch)
    a = Activated(scratch, name, listens, [programs[0], "--listen", listen] + tls + base,
                  extra_args)
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
        # The tool keeps listening, spawning a server per connection: this one's end is in
        # its log.
        deadline = time.time() + LOADED_MACHINE_SLACK  # the slack of a loaded machine
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
    note("%s: exit %s, \"%s\" (%.1f s)" % (what, rc, expect, seconds))
    # The bound only proves that it did not hang (a refused socket is refused at start-up, with
    # no timeout to wait out): the slack of a loaded machine.
    assert rc == 1 and expect in a.stderr() and seconds < LOADED_MACHINE_SLACK, a.stderr()


def test_started_without_systemd_said_so(programs, base):
    r = run([programs[0], "--listen", "systemd"] + base, timeout=LOADED_MACHINE_SLACK)
    assert (r.returncode == 1 and
            "no socket from systemd (LISTEN_FDS is not set)" in r.stderr), r.all


def test_listen_pid_of_another_process_said_so(programs, base):
    r = run([programs[0], "--listen", "systemd"] + base, {"LISTEN_FDS": "1", "LISTEN_PID": "1"},
            timeout=LOADED_MACHINE_SLACK)
    assert r.returncode == 1 and "are for process 1, not this one" in r.stderr, r.all


def test_stdio_with_listen_systemd_usage_error(programs, base):
    r = run([programs[0], "--listen", "systemd", "--stdio"] + base, timeout=LOADED_MACHINE_SLACK)
    assert r.returncode == 2 and "--stdio" in r.stderr, r.all


def test_listen_address_under_activation_warns(programs, activate, base, scratch):
    """Given an address while systemd passed a socket: a warning naming --listen systemd (and
    it serves its own address)."""
    port = free_port()
    sock_path = os.path.join(scratch, "own.sock")
    a = Activated(scratch, "mismatch", ["127.0.0.1:%d" % port],
                  [programs[0], "--listen", "unix:" + sock_path] + base)
    poke(("127.0.0.1", port))
    deadline = time.time() + LOADED_MACHINE_SLACK  # the slack of a loaded machine
    while time.time() < deadline and not os.path.exists(sock_path):
        time.sleep(0.05)
    rc = a.stop()
    assert (rc == 0 and
            "systemd passed this server a socket, but --listen is unix:" in a.stderr()), \
        a.stderr()
