"""Every mqd-proxy command against real servers (unix socket, TCP with a token, one whose DLL
does not load), and the configuration file's precedence as the CLI reports it.

usage: pytest-3 tests/cli/test_cli.py --build BUILD   (ctest: cli)
Each test runs the real binary and looks at its exit status and output. The tests run in file
order: `stats` lists the sessions the `ping` and `info` tests before it opened.
"""
import json
import os

import pytest
from run_command import run
from servers import Server

SCRATCH_PREFIX = "mqd-cli-"


@pytest.fixture(scope="module")
def cli(artefacts):
    return artefacts.require("cli")


@pytest.fixture(scope="module")
def token(scratch):
    path = os.path.join(scratch, "token")
    with open(path, "w") as f:
        f.write("s3cret-token-for-the-cli-test\n")
    os.chmod(path, 0o600)
    return path


@pytest.fixture(scope="module")
def not_a_dll(scratch):
    """A file that exists but is no DLL: on the allow-list, it fails to load in its worker."""
    path = os.path.join(scratch, "libnot_a_dll.so")
    with open(path, "w") as f:
        f.write("not an ELF file\n")
    return path


def _server(artefacts, scratch, name, listen, dlls, extra=()):
    server = Server(artefacts.require("server"), listen, dlls, scratch, name, state_dir="none",
                    extra=extra)
    yield server
    server.stop(check_exit=False)


@pytest.fixture(scope="module")
def unix(artefacts, scratch):
    """A server on a unix socket with both test DLLs (level 3, the default, and level 2)."""
    yield from _server(artefacts, scratch, "unix", "unix:" + os.path.join(scratch, "s.sock"),
                       [artefacts.require("testdll_l3"), artefacts.require("testdll_l2")])


@pytest.fixture(scope="module")
def tcp(artefacts, scratch, token):
    """A server on TCP loopback that wants the token."""
    yield from _server(artefacts, scratch, "tcp", "tcp:127.0.0.1:0",
                       [artefacts.require("testdll_l3")], ["--token-file", token])


@pytest.fixture(scope="module")
def broken(artefacts, scratch, not_a_dll):
    """A server whose second DLL does not load."""
    yield from _server(artefacts, scratch, "broken", "unix:" + os.path.join(scratch, "b.sock"),
                       [artefacts.require("testdll_l3"), not_a_dll])


@pytest.fixture
def config_file(scratch, unix):
    """A configuration file naming the unix server, a timeout and a cache mode."""
    path = os.path.join(scratch, "config")
    with open(path, "w") as f:
        f.write("# mqd-proxy settings\nserver = %s\ntimeout = 7\ncache = call\n"
                % unix.endpoint)
    return path


# --help and usage errors.

def test_help_lists_every_command_and_setting(cli):
    r = run([cli, "--help"])
    assert r.returncode == 0 and all(c in r.stdout for c in
                                     ("config", "ping", "info", "stats", "doctor", "replay",
                                      "MQD_PROXY_SSH_OPTIONS", "MQD_PROXY_CONFIG")), r.all[-3000:]


def test_unknown_command_exits_2(cli):
    r = run([cli, "frobnicate"])
    assert r.returncode == 2 and "unknown command" in r.stderr, r.all[-3000:]


def test_ping_count_0_is_a_usage_error(cli):
    r = run([cli, "ping", "--count", "0"])
    assert r.returncode == 2, r.all[-3000:]


# config: defaults, file, environment, command line, and the sources it names.

def test_config_file_environment_and_sources(cli, config_file, unix):
    """File values, environment overriding them, and each value's source."""
    conf = config_file
    r = run([cli, "config"], {"MQD_PROXY_CONFIG": conf, "MQD_PROXY_TIMEOUT": "9"})
    lines = {l.split()[0]: l for l in r.stdout.splitlines() if l and l.split()[0] in
             ("server", "timeout", "cache", "log")}
    assert (r.returncode == 0 and unix.endpoint in lines.get("server", "") and
            lines.get("server", "").endswith(conf + ":2") and
            "9" in lines.get("timeout", "") and
            lines.get("timeout", "").endswith("MQD_PROXY_TIMEOUT") and
            lines.get("cache", "").endswith(conf + ":4") and
            lines.get("log", "").endswith("default")), r.all[-3000:]


def test_config_json_command_line_wins_over_file(cli, config_file):
    r = run([cli, "config", "--json", "--server", "tcp:h:1"], {"MQD_PROXY_CONFIG": config_file})
    doc = json.loads(r.stdout)
    by_key = {s["key"]: s for s in doc["settings"]}
    assert (doc["file_read"] and by_key["server"]["value"] == "tcp:h:1" and
            by_key["server"]["source"] == "--server" and
            by_key["cache"]["value"] == "call"), r.all[-3000:]


def test_config_bad_settings_listed_exit_1(cli, config_file):
    with open(config_file, "a") as f:
        f.write("colour = blue\n")
    r = run([cli, "config"], {"MQD_PROXY_CONFIG": config_file, "MQD_PROXY_LOG": "loud"})
    assert (r.returncode == 1 and "unknown setting \"colour\"" in r.stdout and
            "MQD_PROXY_LOG" in r.stdout), r.all[-3000:]


# ping

def test_ping_unix_socket(cli, unix):
    r = run([cli, "--server", unix.endpoint, "ping", "--count", "4"])
    assert r.returncode == 0 and r.stdout.count("round trip ") == 4 and "median" in r.stdout, \
        r.all[-3000:]


def test_ping_json_tcp_with_token(cli, tcp, token):
    r = run([cli, "--server", tcp.endpoint, "ping", "--json", "--count", "3"],
            {"MQD_PROXY_TOKEN_FILE": token})
    assert r.returncode == 0 and len(json.loads(r.stdout)["rtt_ms"]) == 3, r.all[-3000:]


def test_ping_without_token_refused(cli, tcp):
    """Refused, and said why."""
    r = run([cli, "--server", tcp.endpoint, "ping"])
    assert r.returncode == 1 and "token" in r.stderr.lower(), r.all[-3000:]


def test_ping_no_server_exit_1(cli, scratch):
    r = run([cli, "--server", "unix:" + os.path.join(scratch, "nobody.sock"), "ping"])
    assert r.returncode == 1 and "cannot reach" in r.stderr, r.all[-3000:]


# info

def test_info_versions_byte_order_every_dll(cli, unix):
    """Version, byte order, and every DLL with version string and level."""
    r = run([cli, "--server", unix.endpoint, "info"])
    assert (r.returncode == 0 and "mqd-proxy test DLL 1.0 (level 3)" in r.stdout and
            "mqd-proxy test DLL 1.0 (level 2)" in r.stdout and
            "compatibility: 3" in r.stdout and "compatibility: 2" in r.stdout and
            "little-endian" in r.stdout and "(the default)" in r.stdout), r.all[-3000:]


def test_info_json(cli, unix):
    r = run([cli, "--server", unix.endpoint, "info", "--json"])
    doc = json.loads(r.stdout)
    assert (r.returncode == 0 and doc["pointer_size"] == 8 and len(doc["dlls"]) == 2 and
            all(d["loaded"] for d in doc["dlls"]) and doc["dlls"][1]["compatibility"] == 2), \
        r.all[-3000:]


def test_info_dll_that_does_not_load_exit_1(cli, broken):
    """A DLL that does not load is shown as such."""
    r = run([cli, "--server", broken.endpoint, "info"])
    assert r.returncode == 1 and "does not load" in r.stdout and "level 3" in r.stdout, \
        r.all[-3000:]


# stats: the sessions the info and ping tests above opened.

def test_stats_lists_sessions(cli, unix):
    r = run([cli, "--server", unix.endpoint, "stats"])
    assert r.returncode == 0 and "session(s) on" in r.stdout and "connection" in r.stdout, \
        r.all[-3000:]


def test_stats_json(cli, unix):
    r = run([cli, "--server", unix.endpoint, "stats", "--json"])
    assert r.returncode == 0 and isinstance(json.loads(r.stdout), list), r.all[-3000:]


# doctor

def test_doctor_healthy_passes_every_check(cli, unix):
    r = run([cli, "--server", unix.endpoint, "doctor"])
    assert (r.returncode == 0 and "all checks passed" in r.stdout and
            r.stdout.count("\nok ") >= 6), r.all[-3000:]


def test_doctor_no_server_says_what_to_start(cli, scratch):
    r = run([cli, "--server", "unix:" + os.path.join(scratch, "nobody.sock"), "doctor"])
    assert (r.returncode == 1 and "FAIL  server reachable" in r.stdout and
            "fix: start mqd-proxy-server" in r.stdout), r.all[-3000:]


def test_doctor_missing_token_says_set_token_file(cli, tcp):
    r = run([cli, "--server", tcp.endpoint, "doctor"])
    assert r.returncode == 1 and "MQD_PROXY_TOKEN_FILE" in r.stdout, r.all[-3000:]


def test_doctor_dll_does_not_load_says_what_to_do(cli, broken, not_a_dll):
    r = run([cli, "--server", broken.endpoint, "--dll", not_a_dll, "doctor"])
    assert r.returncode == 1 and "does not load" in r.stdout and "fix:" in r.stdout, r.all[-3000:]


def test_doctor_dll_not_on_allow_list(cli, unix):
    r = run([cli, "--server", unix.endpoint, "--dll", "libnothere.so", "doctor"])
    assert r.returncode == 1 and "allow-list" in r.stdout, r.all[-3000:]


def test_doctor_malformed_setting_fails_configuration_check(cli, unix):
    r = run([cli, "doctor"], {"MQD_PROXY_SERVER": unix.endpoint, "MQD_PROXY_CACHE": "all"})
    assert r.returncode == 1 and "FAIL  configuration" in r.stdout, r.all[-3000:]
