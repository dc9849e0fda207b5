"""ssh:// servers against a real OpenSSH server on loopback (testing/python/sshd.py): every
mqd-proxy command through ssh, a whole shim session (the dump client, checked against a native
load of the test DLL), ssh's options passing through (a configuration file, a jump host,
connection reuse), failures that must be explained rather than hang (wrong key, no server
program, no ssh program), and no process left behind.

usage: pytest-3 tests/cli/test_ssh.py --build BUILD   (ctest: ssh)
The tests run in file order, sharing one sshd; the last one checks that none of the --stdio
servers the others started outlives its connection.
"""
import json
import os
import subprocess
import time

import pytest
from failure import LOADED_MACHINE_SLACK
from run_command import last_json, run
from sshd import Sshd

SCRATCH_PREFIX = "mqd-ssh-"
MQD_PROXY_ERR_WORKER_DIED = 0x4d510000 + 5  # schema/mqd_proxy.h: MQD_PROXY_ERR_FIRST + 5


@pytest.fixture(scope="module")
def cli(artefacts):
    return artefacts.require("cli")


@pytest.fixture(scope="module")
def server_bin(artefacts):
    return artefacts.require("server")


@pytest.fixture(scope="module")
def l3(artefacts):
    return artefacts.require("testdll_l3")


@pytest.fixture(scope="module")
def dump_client(artefacts):
    return artefacts.require("dump_client")


@pytest.fixture(scope="module")
def sshd(scratch):
    server = Sshd(scratch)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def url(sshd, server_bin):
    return sshd.url(server_bin)


@pytest.fixture(scope="module")
def env(sshd, url):
    """The settings of a user of this sshd: the ssh:// server and the ssh options."""
    return {"MQD_PROXY_SERVER": url, "MQD_PROXY_SSH_OPTIONS": sshd.options}


def logins_since(sshd, before, expected):
    """How many logins sshd accepted since it had accepted `before`, once that is `expected`
    or more: sshd may log a login a little after the client is done, so the count is polled
    for, with the slack of a loaded machine (only a wrong count waits it out)."""
    deadline = time.time() + LOADED_MACHINE_SLACK
    while sshd.accepted() - before < expected and time.time() < deadline:
        time.sleep(0.1)
    return sshd.accepted() - before


def stdio_servers(server_bin):
    r = subprocess.run(["pgrep", "-f", server_bin + " --stdio"], stdout=subprocess.PIPE,
                       text=True)
    return r.stdout.split()


# Every command through ssh.

def test_ping(cli, env, note):
    r = run([cli, "ping", "--count", "3"], env)
    note("ping through ssh (%.2f s)" % r.seconds)
    assert r.returncode == 0 and "round trips: min" in r.stdout, r.all[-3000:]


def test_info_one_login(cli, env, l3, sshd, note):
    """A --stdio server without --dll describes the DLL named by path; info and doctor
    describe the server and load the DLL over one connection: one login, one ssh start-up."""
    before = sshd.accepted()
    r = run([cli, "info", "--json"], dict(env, MQD_PROXY_DLL=l3))
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    logins = logins_since(sshd, before, 1)
    note("info through ssh (%d login, %.2f s)" % (logins, r.seconds))
    assert (r.returncode == 0 and doc.get("any_dll") and
            doc["dlls"][0]["version_string"] == "mqd-proxy test DLL 1.0 (level 3)" and
            logins == 1), r.all[-3000:]


def test_doctor_one_login(cli, env, l3, sshd, note):
    before = sshd.accepted()
    r = run([cli, "doctor"], dict(env, MQD_PROXY_DLL=l3))
    logins = logins_since(sshd, before, 1)
    note("doctor through ssh (%d login, %.2f s)" % (logins, r.seconds))
    assert (r.returncode == 0 and "authentication: by ssh" in r.stdout and
            "all checks passed" in r.stdout and logins == 1), r.all[-3000:]


def test_doctor_without_dll_says_to_name_one(cli, env):
    r = run([cli, "doctor"], env)
    assert r.returncode == 1 and "set MQD_PROXY_DLL" in r.stdout, r.all[-3000:]


def test_stats(cli, env):
    r = run([cli, "stats"], env)
    assert r.returncode == 0 and "session(s) on ssh://" in r.stdout, r.all[-3000:]


# A whole debugger session through the shim over ssh, every answer checked against a native
# load of the same DLL.

def test_shim_session_identical_to_native(dump_client, env, l3):
    """5 dumps identical to the native DLL's."""
    r = run([dump_client, "--dumps", "5", "--ops", "40"], dict(env, MQD_PROXY_DLL=l3))
    result = last_json(r)
    assert r.returncode == 0 and result.get("ok") == 5 and result.get("wrong") == 0, \
        r.all[-3000:]


def test_dll_crash_worker_died_then_whole_dump(dump_client, env, l3):
    """A crash of the vendor DLL on the remote side: the --stdio server is gone with the
    connection, and tells the shim how its worker ended on ssh's stderr:
    MQD_PROXY_ERR_WORKER_DIED naming signal and DLL, then the next dump whole."""
    r = run([dump_client, "--dumps", "3", "--ops", "10", "--crash-at", "1",
             "--allow-errors"], dict(env, MQD_PROXY_DLL=l3))
    result = last_json(r)
    died = str(MQD_PROXY_ERR_WORKER_DIED)
    assert (r.returncode == 0 and result.get("ok") == 2 and result.get("wrong") == 0 and
            result.get("error_codes") == {died: 1} and "killed by SIGSEGV" in r.stderr and
            "libmqd_testdll_l3.so" in r.stderr), r.all[-3000:]


def test_trace_log_and_session_summary(dump_client, env, l3, scratch, note):
    """MQD_PROXY_LOG=trace: each mqs_* call with its duration and callbacks, and the
    session's one-line summary at the end, into MQD_PROXY_LOG_FILE."""
    log = os.path.join(scratch, "shim.log")
    r = run([dump_client, "--dumps", "1", "--ops", "5"],
            dict(env, MQD_PROXY_DLL=l3, MQD_PROXY_LOG="trace", MQD_PROXY_LOG_FILE=log))
    text = open(log).read() if os.path.exists(log) else ""
    traced = [l for l in text.splitlines() if " trace: mqs_" in l]
    note("trace log: %d calls with durations and callbacks, and the session summary"
         % len(traced))
    assert (r.returncode == 0 and
            any("mqs_update_communicator_list -> 0 in" in l and "forwarded" in l
                for l in traced) and
            any("mqs_next_operation ->" in l and "answered in the shim" in l
                for l in traced) and
            "session summary:" in text and "round trips" in text), \
        r.all[-3000:] + text[-2000:]


def test_info_with_a_dll_that_is_no_mqd_dll_fails(cli, env, url):
    """The --dll allow-list still applies when the remote side is given one."""
    r = run([cli, "info"], dict(env, MQD_PROXY_DLL="/lib/x86_64-linux-gnu/libc.so.6",
                                MQD_PROXY_SERVER=url))
    assert r.returncode == 1, r.all[-3000:]


# ssh's own options pass through.

def test_jump_host_two_logins(cli, sshd, server_bin, note):
    """A jump host in MQD_PROXY_SSH_OPTIONS (here the same sshd) means two logins."""
    before = sshd.accepted()
    jump = "%s -J %s@127.0.0.1:%d" % (sshd.options, sshd.user, sshd.port)
    r = run([cli, "ping", "--count", "1"],
            {"MQD_PROXY_SERVER": "ssh://%s@localhost:%d%s" % (sshd.user, sshd.port,
                                                               server_bin),
             "MQD_PROXY_SSH_OPTIONS": jump})
    logins = logins_since(sshd, before, 2)
    note("a jump host in MQD_PROXY_SSH_OPTIONS is used (%d logins)" % logins)
    assert r.returncode == 0 and logins == 2, r.all[-3000:]


def test_control_master_one_login(cli, dump_client, env, l3, sshd, scratch, note):
    """Connection reuse (docs/configuration.md, "ssh:// servers"): ssh's ControlMaster through
    MQD_PROXY_SSH_OPTIONS. The first connection leaves a master behind (ControlPersist), the
    later ones ride on it: one login for 3 pings and a shim session. None may hang on the
    master, which outlives the ssh the shim started."""
    control = os.path.join(scratch, "cm-%C")
    reuse = dict(env, MQD_PROXY_SSH_OPTIONS="%s -o ControlMaster=auto -o ControlPath=%s "
                 "-o ControlPersist=60" % (sshd.options, control))
    before = sshd.accepted()
    try:
        # A hang on the master ends in run()'s own timeout (120 s), well past a loaded
        # machine's slack.
        pings = [run([cli, "ping", "--count", "1"], reuse) for _ in range(3)]
        r = run([dump_client, "--dumps", "2", "--ops", "10"], dict(reuse, MQD_PROXY_DLL=l3))
        result = last_json(r)
        logins = logins_since(sshd, before, 1)
        note("ControlMaster: 3 pings and a shim session over %d login (%s s, then the session "
             "%.2f s)" % (logins, ", ".join("%.2f" % p.seconds for p in pings), r.seconds))
        assert (all(p.returncode == 0 for p in pings) and result.get("ok") == 2 and
                logins == 1), "".join(p.all for p in pings) + r.all[-3000:]
    finally:
        subprocess.run(["ssh"] + sshd.options.split() +
                       ["-o", "ControlPath=" + control, "-O", "exit", "-p", str(sshd.port),
                        "%s@127.0.0.1" % sshd.user],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=LOADED_MACHINE_SLACK)


# Failures are explained, promptly.

def test_wrong_key_ssh_reason_promptly(cli, env, sshd, note):
    """A key the server does not accept: ssh's reason, promptly: not after a timeout."""
    # MQD_PROXY_TIMEOUT (also ssh's ConnectTimeout) far past the bound below, so that the bound
    # proves that ssh's answer ended the command, not a timeout; the bound itself only proves
    # that, and is the slack of a loaded machine.
    r = run([cli, "ping"], dict(env, MQD_PROXY_SSH_OPTIONS=sshd.options_with(sshd.wrong_key),
                                MQD_PROXY_TIMEOUT=str(10 * LOADED_MACHINE_SLACK)))
    note("a key the server does not accept: ssh's reason, in %.1f s" % r.seconds)
    assert (r.returncode == 1 and "Permission denied" in r.stderr and
            r.seconds < LOADED_MACHINE_SLACK), r.all[-3000:]


def test_shim_session_wrong_key_ssh_reason(dump_client, env, l3, sshd, scratch):
    """A shim session whose launcher fails before the server could answer: ssh's reason in
    the shim's log, and the debugger's call fails (not a hang, not only a code)."""
    log = os.path.join(scratch, "wrong-key-shim.log")
    r = run([dump_client, "--dumps", "1", "--ops", "5"],
            dict(env, MQD_PROXY_DLL=l3, MQD_PROXY_LOG_FILE=log,
                 MQD_PROXY_SSH_OPTIONS=sshd.options_with(sshd.wrong_key)))
    text = open(log).read() if os.path.exists(log) else ""
    assert (r.returncode == 1 and "set-up through the shim failed" in r.stderr and
            "Permission denied" in text), r.all[-3000:] + text[-3000:]


def test_no_server_program_remote_shells_reason(cli, env, sshd):
    r = run([cli, "ping"],
            dict(env, MQD_PROXY_SERVER=sshd.url("/nonexistent/mqd-proxy-server")))
    assert r.returncode == 1 and "No such file or directory" in r.stderr, r.all[-3000:]


def test_no_ssh_program_said_so(cli, env):
    r = run([cli, "ping"], dict(env, MQD_PROXY_SSH="/nonexistent/ssh"))
    assert (r.returncode == 1 and
            "cannot start ssh: /nonexistent/ssh: No such file" in r.stderr), r.all[-3000:]


def test_nothing_listening_at_the_port_ssh_reason(cli, env, sshd, server_bin):
    r = run([cli, "ping"], dict(env, MQD_PROXY_SERVER="ssh://%s@127.0.0.1:1%s" % (
        sshd.user, server_bin)))
    assert r.returncode == 1 and "Connection refused" in r.stderr, r.all[-3000:]


def test_option_as_host_refused_before_ssh_runs(cli, env):
    """An option smuggled in as a host is refused before ssh runs."""
    r = run([cli, "ping"], dict(env, MQD_PROXY_SERVER="ssh://-oProxyCommand=x"))
    assert r.returncode == 1 and "invalid host" in r.stderr, r.all[-3000:]


# Last: no --stdio server outlives its connection.

def test_no_stdio_server_left_running(server_bin):
    # Each ends once its connection is gone: polled for, with the slack of a loaded machine.
    deadline = time.time() + LOADED_MACHINE_SLACK
    while stdio_servers(server_bin) and time.time() < deadline:
        time.sleep(0.2)
    left = stdio_servers(server_bin)
    assert not left, " ".join(left)
