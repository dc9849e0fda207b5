"""Failure: how the test drivers (tests/e2e, tests/deadlock, tests/cross, bench) report that a
run went wrong, with a sentence saying what; and wait_for, which polls for something that may
never come and raises Failure when it does not.

    from failure import Failure, wait_for
    wait_for(lambda: os.path.exists(ready), 20, "the server")
"""
import time


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
