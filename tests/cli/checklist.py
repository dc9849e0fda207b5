"""What the Python tests of the mqd-proxy commands share (tests/cli, tests/packaging): a list of
named checks, each printed as it is made; running a command as a user would, but without the
MQD_PROXY_* settings or configuration file of whoever runs the tests (a check that wants one
sets it); the build's artefacts; a free port; the dump client's result."""
import json
import os
import shutil
import socket
import subprocess
import time
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402

failures = []


def check(condition, what, output=""):
    if condition:
        print("ok    " + what)
    else:
        failures.append(what)
        print("FAIL  " + what + ("\n" + output[-3000:] if output else ""))


def run(argv, env=None, timeout=120):
    """Runs argv; the result has returncode, stdout, stderr, all (both) and seconds."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("MQD_PROXY_")}
    e["MQD_PROXY_CONFIG"] = ""
    e.update(env or {})
    started = time.time()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                       timeout=timeout)
    r.seconds = time.time() - started
    r.all = r.stdout + r.stderr
    return r


def finish(work, what):
    """The exit status: 1 (work kept for a look) if any check failed, else 0 (work removed)."""
    if failures:
        print("\n%d check(s) failed; files kept in %s" % (len(failures), work))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("\nall %s checks passed" % what)
    return 0


class Build:
    """The artefacts of the build tree BUILD that these tests run."""

    def __init__(self, build):
        self.dir = os.path.abspath(build)
        built = Artefacts(self.dir)
        self.cli = built.require("cli")
        self.server = built.require("server")
        self.shim = built.require("shim")
        self.l3 = built.require("testdll_l3")
        self.l2 = built.require("testdll_l2")
        self.dump_client = built.require("dump_client")


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_json(r):
    """The JSON object a command printed as the last line of its stdout (the dump client's
    summary), or {} when it printed nothing."""
    return json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
