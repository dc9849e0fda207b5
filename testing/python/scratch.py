"""A test run's scratch directory and what the run started in it: tear_down() stops them and
removes the directory if the run passed (kept for a look when it failed, or when MQD_KEEP is
set).

    from scratch import tear_down
    work = tempfile.mkdtemp(prefix="mqd-e2e-")
    ...
    finally:
        tear_down(work, passed, servers, job)
"""
import os
import shutil


def tear_down(work, passed, *started):
    """Stops what a run started, in the order given (None, and lists of servers, allowed), and
    removes its work directory if it passed, unless MQD_KEEP is set."""
    for thing in started:
        for t in (thing if isinstance(thing, list) else [thing]):
            if t:
                t.stop()
    if passed and not os.environ.get("MQD_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
