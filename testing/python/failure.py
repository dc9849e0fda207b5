"""Failure: how the test drivers (tests/e2e, tests/deadlock, tests/cross, bench) report that a
run went wrong, with a sentence saying what; and wait_for, which polls for something that may
never come and raises Failure when it does not; and LOADED_MACHINE_SLACK, how long a test waits
for what must happen.

    from failure import LOADED_MACHINE_SLACK, Failure, verdict, wait_for
    wait_for(lambda: os.path.exists(ready), LOADED_MACHINE_SLACK, "the server")
    return verdict(problems, work, "what was checked")   # the end of a driver's run
"""
import time

# How long a test waits for what must happen (a process to start or end, a line in a log, a
# server ready) before it fails, in seconds: the slack of a loaded machine (two tests at once, a
# sanitized copy, a CPU hog beside them). Only a failure waits this long: a wait ends as soon as
# its condition holds. An upper bound on elapsed time that proves "did not hang" gets this too.
# The C++ tests' kLoadedMachineSlack (testing/harness/ServerProcess.h).
LOADED_MACHINE_SLACK = 60


class Failure(Exception):
    """The run failed; str() is the sentence to print."""


def wait_for(condition, seconds, what):
    """Returns once condition() is true, polling every 0.1 s; raises Failure("timed out after
    SECONDS s waiting for WHAT") after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise Failure("timed out after %d s waiting for %s" % (seconds, what))


def verdict(problems, work, ok):
    """The end of a driver's run: 1 after printing `problems` as "FAIL: ..." lines (the first
    50), how many there were and where the files were kept (`work`); else 0 after printing
    "ok: " and `ok`."""
    if problems:
        for p in problems[:50]:
            print("FAIL: " + p)
        print("(%d problem%s; files kept in %s)" % (len(problems), "" if len(problems) == 1
                                                     else "s", work))
        return 1
    print("ok: " + ok)
    return 0
