"""Running a program of the build as its user would, but without the settings of whoever runs
the tests: no MQD_PROXY_* variable of theirs, no configuration file and no learned look-ups (a test that wants one
passes it in `env`). The counterpart of testing/rigs/RunCommand.h for the Python tests.

    from run_command import run, last_json
    r = run([cli, "ping"], {"MQD_PROXY_SERVER": endpoint})
    r.returncode, r.stdout, r.stderr, r.all, r.seconds
"""
import json
import os
import subprocess
import time


def run(argv, env=None, timeout=120):
    """Runs argv; the result has returncode, stdout, stderr, all (both) and seconds."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("MQD_PROXY_")}
    e["MQD_PROXY_CONFIG"] = ""
    e["MQD_PROXY_STATE_DIR"] = "off"
    e.update(env or {})
    started = time.time()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                       timeout=timeout)
    r.seconds = time.time() - started
    r.all = r.stdout + r.stderr
    return r


def last_json(r):
    """The JSON object a command printed as the last line of its stdout (the dump client's
    summary), or {} when it printed nothing."""
    return json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
