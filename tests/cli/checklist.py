"""What the tests in tests/cli share: a list of named checks, each printed as it is made, and
running a command as a user would, but without the MQD_PROXY_* settings or configuration
file of whoever runs the tests (a check that wants one sets it)."""
import os
import shutil
import subprocess
import time

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
