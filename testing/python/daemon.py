"""Starting a helper daemon of a test (a server, a relay, gdbserver, sshd) that is ready once a
condition holds, without leaving it behind when it is not.

    from daemon import start_daemon
    proc = start_daemon(argv, lambda: os.path.exists(ready), "the relay")

A start that fails (the process exits first, the condition stays false for `seconds`, by
default LOADED_MACHINE_SLACK, or the condition raises) kills and reaps the process before the
Failure propagates: a test that fails while starting its servers must not leave one running,
holding ctest's output pipe open.
"""
import subprocess

from failure import LOADED_MACHINE_SLACK, Failure, wait_for


# A daemon that must start gets the slack of a loaded machine; a ready one ends the wait at once.
def start_daemon(argv, ready, what, seconds=LOADED_MACHINE_SLACK, log=None, **popen):
    """Runs argv (Popen's keyword arguments in `popen`) and returns the Popen once ready() is
    true. On failure the Failure names `what` and, with `log`, ends with that file's text."""
    proc = subprocess.Popen(argv, **popen)
    try:
        wait_for(lambda: proc.poll() is not None or ready(), seconds, what)
        if proc.poll() is not None:
            text = ""
            if log is not None:
                try:
                    with open(log, errors="replace") as f:
                        text = ":\n" + f.read()[-3000:]
                except OSError as e:
                    text = " (no log: %s)" % e
            raise Failure("%s did not start (exit status %d)%s" % (what, proc.returncode, text))
    except BaseException:
        stop_daemon(proc)
        raise
    return proc


def stop_daemon(proc):
    """Kills proc if it still runs and reaps it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
