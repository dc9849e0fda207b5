"""Every mqd-proxy command against real servers (unix socket, TCP with a token, one whose DLL
does not load), the configuration file's precedence as the CLI reports it, and `graph`, the
deadlock analysis of a saved snapshot, with good and bad input and without its package or
python3.

usage: pytest-3 tests/cli/test_cli.py --build BUILD   (ctest: cli)
Each test runs the real binary and looks at its exit status and output. The tests run in file
order: `stats` lists the sessions the `ping` and `info` tests before it opened.
"""
import json
import os
import re
import shutil

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
                                      "graph",
                                      "MQD_PROXY_SSH_OPTIONS", "MQD_PROXY_CONFIG")), r.all[-3000:]


def test_unknown_command_exits_2(cli):
    r = run([cli, "frobnicate"])
    assert r.returncode == 2 and "unknown command" in r.stderr, r.all[-3000:]


def test_ping_count_0_is_a_usage_error(cli):
    r = run([cli, "ping", "--count", "0"])
    assert r.returncode == 2, r.all[-3000:]


@pytest.mark.parametrize("argv, words", [
    (["ping", "stray"], 'ping takes no operand "stray"'),
    (["ping", "--bogus"], 'unexpected argument "--bogus"'),
    (["--server"], "--server"),
    (["--timeout", "soon", "ping"], "--timeout"),
    (["--count", "100001", "ping"], "between 1 and 100000"),
])
def test_usage_errors_are_one_sentence_and_exit_2(cli, argv, words):
    r = run([cli] + argv)
    assert _one_sentence(r) and words in r.stderr and "see --help" in r.stderr, r.all[-3000:]


def test_options_go_before_or_after_the_command(cli):
    """--server, --timeout and --json mean the same before and after the command; the last of a
    repeated one wins, as a later setting overrides an earlier one."""
    before = run([cli, "--json", "--timeout", "7", "--server", "unix:/a", "config"])
    after = run([cli, "config", "--server", "unix:/b", "--server", "unix:/a", "--timeout=7",
                 "--json"])
    assert before.returncode == 0 and after.returncode == 0, before.all + after.all
    assert json.loads(before.stdout) == json.loads(after.stdout)
    server = [s for s in json.loads(after.stdout)["settings"] if s["key"] == "server"][0]
    assert server["value"] == "unix:/a" and server["source"] == "--server", after.stdout


def test_server_options_in_the_docs_are_those_of_its_help(artefacts):
    """docs/configuration.md's table of server options names every option `mqd-proxy-server
    --help` shows, and the same default where --help says one."""
    r = run([artefacts.require("server"), "--help"])
    assert r.returncode == 0, r.all[-3000:]
    helped = {}  # option -> default ("" when --help says none)
    option = None
    for line in r.stdout.splitlines():
        m = re.match(r"  (?:-\w, )?(--[\w-]+)", line)
        if m:
            option = m.group(1)
            helped[option] = ""
        d = re.search(r"Default: (\S+)\.$", line)
        if d and option:
            helped[option] = d.group(1)
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "configuration.md")
    with open(docs) as f:
        text = f.read()
    section = text[text.index("## Server options"):]
    section = section[:section.index("\n## ", 1)]
    rows = {}
    for row in section.splitlines():
        cells = row.split("|")
        if len(cells) > 3:
            for name in re.findall(r"(--[a-z][\w-]*)", cells[1]):
                rows[name] = cells[2]
    assert len(helped) >= 20 and set(helped) == set(rows), (sorted(helped), sorted(rows))
    for name, default in helped.items():
        assert "`%s`" % default in rows[name] if default else True, (name, default, rows[name])


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


def test_config_json_escapes_what_it_shows(cli):
    """A value with quotes, a backslash, a tab and non-ASCII text is shown exactly, as valid JSON."""
    odd = '/tmp/a "quoted"\\dir\twith tab/é.log'
    r = run([cli, "config", "--json"], {"MQD_PROXY_LOG_FILE": odd, "MQD_PROXY_CONFIG": "/nonexistent"})
    doc = json.loads(r.stdout)
    by_key = {s["key"]: s for s in doc["settings"]}
    assert (r.returncode == 0 and by_key["log_file"]["value"] == odd and
            by_key["log_file"]["source"] == "MQD_PROXY_LOG_FILE" and doc["problems"] == []), \
        r.all[-3000:]


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


def test_a_server_on_every_node_each_asked_in_turn(cli, unix):
    """With several servers in the setting (one on each node of a job), ping and doctor ask
    each in turn, under a header naming it, and fail when one fails; --json and replay, which
    take one server, say to pick it."""
    both = unix.endpoint + " " + unix.endpoint
    r = run([cli, "--server", both, "ping", "--count", "2"])
    assert r.returncode == 0 and r.stdout.count("== %s ==" % unix.endpoint) == 2 and \
        r.stdout.count("round trip ") == 4, r.all[-3000:]
    r = run([cli, "--server", unix.endpoint + " tcp:127.0.0.1:1", "doctor"])
    assert r.returncode == 1 and "== tcp:127.0.0.1:1 ==" in r.stdout, r.all[-3000:]
    for argv in (["ping", "--json"], ["replay", "x.mqdrec"]):
        r = run([cli, "--server", both] + argv)
        assert r.returncode == 2 and "pick one with --server" in r.stderr, r.all[-3000:]


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
    sessions = json.loads(r.stdout)
    # The info and ping tests above opened sessions: each with its numbers as numbers and its
    # counters by name.
    assert (r.returncode == 0 and isinstance(sessions, list) and sessions and
            all(isinstance(s["connection"], int) and isinstance(s["started_ms"], int) and
                isinstance(s["counters"], dict) and
                all(isinstance(v, int) for v in s["counters"].values())
                for s in sessions)), r.all[-3000:]


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


# graph: runs the analysis staged in the build (frontends/analysis), as installed it runs the
# installed one (packaging-install checks that).

def _queue(operations=(), rc=2):
    return {"rc": rc, "operations": list(operations)}


def _receive_cycle():
    """A whole-job snapshot (frontends/analysis/SNAPSHOT.md): ranks 0 and 1 each blocked in
    MPI_Recv from the other."""
    def recv(peer):
        return {"status": "pending", "desired_local_rank": peer, "desired_global_rank": peer,
                "tag_wild": False, "desired_tag": 1, "desired_length": 4}
    ranks = [{"rank": r, "pid": 100 + r,
              "state": {"mpi_call": "MPI_Recv", "frames": ["PMPI_Recv", "main"]},
              "communicators": [{"unique_id": 0, "name": "MPI_COMM_WORLD", "local_rank": r,
                                 "size": 2, "group": [0, 1],
                                 "queues": {"sends": _queue(),
                                            "receives": _queue([recv(1 - r)]),
                                            "unexpected": _queue(rc=1)}}]}
             for r in (0, 1)]
    return {"mqd_snapshot": 1, "dll": None, "ranks": ranks}


@pytest.fixture(scope="module")
def deadlocked(scratch):
    path = os.path.join(scratch, "deadlocked.json")
    with open(path, "w") as f:
        json.dump(_receive_cycle(), f)
    return path


def _one_sentence(r):
    """Exit 2, nothing on stdout, one line on stderr from mqd-proxy, no traceback."""
    return (r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and
            r.stderr.startswith("mqd-proxy: ") and "Traceback" not in r.stderr)


def test_graph_deadlock_text_json_and_files(cli, deadlocked, scratch):
    r = run([cli, "graph", deadlocked])
    assert r.returncode == 0 and r.stdout.startswith("DEADLOCK: ranks 0-1") and \
        "[receive-cycle]" in r.stdout, r.all[-3000:]
    r = run([cli, "graph", deadlocked, "--json"])
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["deadlock"] and doc["knots"] == [[0, 1]], r.all[-3000:]
    dot = os.path.join(scratch, "deadlocked.dot")
    r = run([cli, "graph", "--dot", dot, deadlocked])
    assert r.returncode == 0 and open(dot).read().startswith("digraph"), r.all[-3000:]


def test_graph_help_is_the_analysis_under_this_name(cli):
    r = run([cli, "graph", "--help"])
    assert (r.returncode == 0 and "usage: mqd-proxy graph" in r.stdout and
            "--compare" in r.stdout and "exit status" in r.stdout), r.all[-3000:]


@pytest.mark.parametrize("name, content, words", [
    ("truncated.json", '{"mqd_snapshot": 1, "ranks": [{"rank": 0, "commun', "truncated"),
    ("foreign.json", '{"name": "left-pad", "version": "1.3.0"}', "not"),
    ("empty.json", "", "empty"),
])
def test_graph_bad_input_exits_2_with_one_sentence(cli, scratch, name, content, words):
    path = os.path.join(scratch, name)
    with open(path, "w") as f:
        f.write(content)
    r = run([cli, "graph", path])
    assert _one_sentence(r) and path in r.stderr and words in r.stderr, r.all[-3000:]


def test_graph_missing_file_exits_2(cli, scratch):
    path = os.path.join(scratch, "no-such-snapshot.json")
    r = run([cli, "graph", path])
    assert _one_sentence(r) and "cannot read" in r.stderr and path in r.stderr, r.all[-3000:]


def test_graph_usage_errors_exit_2(cli, deadlocked):
    r = run([cli, "graph"])
    assert _one_sentence(r) and "see --help" in r.stderr, r.all[-3000:]
    r = run([cli, "graph", deadlocked, "--bogus"])
    assert _one_sentence(r) and "--bogus" in r.stderr, r.all[-3000:]


def test_graph_without_the_analysis_package_exits_2(cli, scratch, deadlocked):
    """A copy of the binary with no share/mqd-proxy/analysis beside it says where it looked."""
    alone = os.path.join(scratch, "alone", "bin")
    os.makedirs(alone, exist_ok=True)
    copy = shutil.copy(cli, alone)
    r = run([copy, "graph", deadlocked])
    assert (_one_sentence(r) and "not installed" in r.stderr and
            "share/mqd-proxy/analysis" in r.stderr), r.all[-3000:]


def test_graph_without_python3_exits_2(cli, scratch, deadlocked):
    empty = os.path.join(scratch, "empty-path")
    os.makedirs(empty, exist_ok=True)
    r = run([cli, "graph", deadlocked], {"PATH": empty})
    assert _one_sentence(r) and "python3" in r.stderr, r.all[-3000:]
