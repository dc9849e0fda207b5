"""Every mqd-proxy command against real servers (unix socket, TCP with a token), and the
configuration file's precedence as the CLI reports it.

usage: cli_test.py --build BUILD
Each check runs the real binary and looks at its exit status and output; every failure is
listed, and the exit status is 1 if there was any.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklist import Build, check, finish, run  # noqa: E402


class Server:
    def __init__(self, binary, work, name, listen, dlls, extra=()):
        ready = os.path.join(work, name + ".ready")
        args = [binary, "--listen", listen, "--ready-file", ready, "--state-dir", "none",
                "--log-file", os.path.join(work, name + ".log")]
        for d in dlls:
            args += ["--dll", d]
        self.proc = subprocess.Popen(args + list(extra))
        deadline = time.time() + 20
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("server %s did not start" % name)
            time.sleep(0.05)
        self.endpoint = open(ready).read().strip()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    b = Build(args.build)
    cli, server_bin, l3, l2, shim = b.cli, b.server, b.l3, b.l2, b.shim
    work = tempfile.mkdtemp(prefix="mqd-cli-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("s3cret-token-for-the-cli-test\n")
    os.chmod(token, 0o600)
    # A file that exists but is no DLL: on the allow-list, it fails to load in its worker.
    not_a_dll = os.path.join(work, "libnot_a_dll.so")
    with open(not_a_dll, "w") as f:
        f.write("not an ELF file\n")
    servers = []
    try:
        unix = Server(server_bin, work, "unix", "unix:" + os.path.join(work, "s.sock"), [l3, l2])
        tcp = Server(server_bin, work, "tcp", "tcp:127.0.0.1:0", [l3],
                     ["--token-file", token])
        broken = Server(server_bin, work, "broken", "unix:" + os.path.join(work, "b.sock"),
                        [l3, not_a_dll])
        servers = [unix, tcp, broken]
        tok = {"MQD_PROXY_TOKEN_FILE": token}

        # --help and usage errors.
        r = run([cli, "--help"])
        check(r.returncode == 0 and all(c in r.stdout for c in
                                        ("config", "ping", "info", "stats", "doctor", "replay",
                                         "MQD_PROXY_SSH_OPTIONS", "MQD_PROXY_CONFIG")),
              "--help lists every command and setting", r.all)
        r = run([cli, "frobnicate"])
        check(r.returncode == 2 and "unknown command" in r.stderr, "unknown command: exit 2",
              r.all)
        r = run([cli, "ping", "--count", "0"])
        check(r.returncode == 2, "ping --count 0 is a usage error", r.all)

        # config: defaults, file, environment, command line, and the sources it names.
        conf = os.path.join(work, "config")
        with open(conf, "w") as f:
            f.write("# mqd-proxy settings\nserver = %s\ntimeout = 7\ncache = call\n"
                    % unix.endpoint)
        r = run([cli, "config"], {"MQD_PROXY_CONFIG": conf, "MQD_PROXY_TIMEOUT": "9"})
        lines = {l.split()[0]: l for l in r.stdout.splitlines() if l and l.split()[0] in
                 ("server", "timeout", "cache", "log")}
        check(r.returncode == 0 and unix.endpoint in lines.get("server", "") and
              lines.get("server", "").endswith(conf + ":2") and
              "9" in lines.get("timeout", "") and
              lines.get("timeout", "").endswith("MQD_PROXY_TIMEOUT") and
              lines.get("cache", "").endswith(conf + ":4") and
              lines.get("log", "").endswith("default"),
              "config: file values, environment overriding them, and each value's source",
              r.all)
        r = run([cli, "config", "--json", "--server", "tcp:h:1"], {"MQD_PROXY_CONFIG": conf})
        doc = json.loads(r.stdout)
        by_key = {s["key"]: s for s in doc["settings"]}
        check(doc["file_read"] and by_key["server"]["value"] == "tcp:h:1" and
              by_key["server"]["source"] == "--server" and
              by_key["cache"]["value"] == "call",
              "config --json: the command line wins over the file", r.all)
        with open(conf, "a") as f:
            f.write("colour = blue\n")
        r = run([cli, "config"], {"MQD_PROXY_CONFIG": conf, "MQD_PROXY_LOG": "loud"})
        check(r.returncode == 1 and "unknown setting \"colour\"" in r.stdout and
              "MQD_PROXY_LOG" in r.stdout, "config: bad settings are listed, exit 1", r.all)

        # ping
        r = run([cli, "--server", unix.endpoint, "ping", "--count", "4"])
        check(r.returncode == 0 and r.stdout.count("round trip ") == 4 and
              "median" in r.stdout, "ping over a unix socket", r.all)
        r = run([cli, "--server", tcp.endpoint, "ping", "--json", "--count", "3"], tok)
        check(r.returncode == 0 and len(json.loads(r.stdout)["rtt_ms"]) == 3,
              "ping --json over TCP with the token", r.all)
        r = run([cli, "--server", tcp.endpoint, "ping"])
        check(r.returncode == 1 and "token" in r.stderr.lower(),
              "ping without the token: refused, said why", r.all)
        r = run([cli, "--server", "unix:" + os.path.join(work, "nobody.sock"), "ping"])
        check(r.returncode == 1 and "cannot reach" in r.stderr, "ping with no server: exit 1",
              r.all)

        # info
        r = run([cli, "--server", unix.endpoint, "info"])
        check(r.returncode == 0 and "mqd-proxy test DLL 1.0 (level 3)" in r.stdout and
              "mqd-proxy test DLL 1.0 (level 2)" in r.stdout and
              "compatibility: 3" in r.stdout and "compatibility: 2" in r.stdout and
              "little-endian" in r.stdout and "(the default)" in r.stdout,
              "info: version, byte order, and every DLL with version string and level", r.all)
        r = run([cli, "--server", unix.endpoint, "info", "--json"])
        doc = json.loads(r.stdout)
        check(r.returncode == 0 and doc["pointer_size"] == 8 and len(doc["dlls"]) == 2 and
              all(d["loaded"] for d in doc["dlls"]) and doc["dlls"][1]["compatibility"] == 2,
              "info --json", r.all)
        r = run([cli, "--server", broken.endpoint, "info"])
        check(r.returncode == 1 and "does not load" in r.stdout and "level 3" in r.stdout,
              "info: a DLL that does not load is shown as such, exit 1", r.all)

        # stats: the sessions the info commands above opened.
        r = run([cli, "--server", unix.endpoint, "stats"])
        check(r.returncode == 0 and "session(s) on" in r.stdout and
              "connection" in r.stdout, "stats lists the sessions info and ping made", r.all)
        r = run([cli, "--server", unix.endpoint, "stats", "--json"])
        check(r.returncode == 0 and isinstance(json.loads(r.stdout), list), "stats --json",
              r.all)

        # doctor
        r = run([cli, "--server", unix.endpoint, "doctor"])
        check(r.returncode == 0 and "all checks passed" in r.stdout and
              r.stdout.count("\nok ") >= 6, "doctor: a healthy set-up passes every check",
              r.all)
        r = run([cli, "--server", "unix:" + os.path.join(work, "nobody.sock"), "doctor"])
        check(r.returncode == 1 and "FAIL  server reachable" in r.stdout and
              "fix: start mqd-proxy-server" in r.stdout,
              "doctor: no server -> what to start", r.all)
        r = run([cli, "--server", tcp.endpoint, "doctor"])
        check(r.returncode == 1 and "MQD_PROXY_TOKEN_FILE" in r.stdout,
              "doctor: missing token -> set MQD_PROXY_TOKEN_FILE", r.all)
        r = run([cli, "--server", broken.endpoint, "--dll", not_a_dll, "doctor"])
        check(r.returncode == 1 and "does not load" in r.stdout and "fix:" in r.stdout,
              "doctor: the DLL does not load -> what to do", r.all)
        r = run([cli, "--server", unix.endpoint, "--dll", "libnothere.so", "doctor"])
        check(r.returncode == 1 and "allow-list" in r.stdout,
              "doctor: a DLL not on the allow-list", r.all)
        r = run([cli, "doctor"], {"MQD_PROXY_SERVER": unix.endpoint, "MQD_PROXY_CACHE": "all"})
        check(r.returncode == 1 and "FAIL  configuration" in r.stdout,
              "doctor: a malformed setting fails the configuration check", r.all)
    finally:
        for s in servers:
            s.stop()
    return finish(work, "CLI")


if __name__ == "__main__":
    sys.exit(main())
