"""gdb driven in batch mode, as the end-to-end tests drive it: attached to MPI processes (one
inferior each, in the order given), with the mqd front end (frontends/gdb/mqd.py, as staged
in BUILD/share/mqd-proxy/gdb or installed) sourced and an MQD DLL loaded.

    from gdb_driver import gdb_command, gdb_dump
    cmd = gdb_command(pids, frontend, "mqd load") + ["-ex", "mqd dump --all"]
    seconds = gdb_dump(pids, frontend, "mqd load", os.path.join(work, "native"))
        # wrote native.json and native.txt; Failure if gdb or the front end failed
"""
import os
import subprocess
import time

from failure import Failure


def gdb_command(pids, frontend, load, attach=None, before=()):
    """gdb in batch mode attached to every rank (one inferior each), with the front end
    sourced and `load` run: add the commands to run then. `attach`, if given, is the front
    end's command that attaches the ranks instead (`mqd attach --launcher PID ...`).
    `before`: gdb commands run first, as a user's settings."""
    cmd = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    for command in before:
        cmd += ["-ex", command]
    if attach:
        return cmd + ["-ex", "source " + frontend, "-ex", attach, "-ex", load]
    for i, pid in enumerate(pids):
        if i > 0:
            cmd += ["-ex", "add-inferior", "-ex", "inferior %d" % (i + 1)]
        cmd += ["-ex", "attach %d" % pid]
    return cmd + ["-ex", "inferior 1", "-ex", "source " + frontend, "-ex", load]


# Prints gdb's selected inferior and frame level: the user's selection, which the front end
# must leave as it found it (it selects other inferiors for look-ups and reads meanwhile).
SELECTION = ("python print('mqd-selection: inferior %d, frame %d' % "
             "(gdb.selected_inferior().num, gdb.selected_frame().level()))")


def keeping_selection(commands):
    """gdb arguments: `commands` (["-ex", ...]) after selecting an outer frame, with gdb's
    selection printed before and after them, for selection_problem()."""
    return ["-ex", "frame 1", "-ex", SELECTION] + commands + ["-ex", SELECTION]


def selection_problem(output):
    """None when gdb's output shows the same selection after the commands as before them
    (keeping_selection), else a sentence."""
    selections = [line for line in output.splitlines() if line.startswith("mqd-selection: ")]
    if len(selections) != 2 or selections[0] != selections[1]:
        return "the front end changed gdb's selection (before, after): %s" % selections
    return None


def gdb_dump(pids, frontend, load, out_prefix, env_extra=None, attach=None, before=()):
    """One gdb attached to every rank (one inferior each; `attach` and `before` as for
    gdb_command);
    writes OUT.json and OUT.txt (two refreshes: the second is a repeat refresh of a
    stopped-again target). The user's selection (an outer frame of the selected inferior)
    must be the same after the dumps as before."""
    cmd = gdb_command(pids, frontend, load, attach, before) + keeping_selection([
        "-ex", "mqd dump --all --json --output %s.json" % out_prefix,
        "-ex", "mqd dump --all --output %s.txt" % out_prefix])
    started = time.time()
    env = dict(os.environ)
    env.update(env_extra or {})
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=1200, env=env)
    elapsed = time.time() - started
    errors = [line for line in result.stdout.splitlines() if line.startswith("mqd:")
              and not line.startswith(("mqd: loaded ", "mqd: attached "))]
    if result.returncode != 0 or errors or not os.path.exists(out_prefix + ".json"):
        raise Failure("gdb failed (%d):\n%s" % (result.returncode, result.stdout[-4000:]))
    if "Traceback" in result.stdout:
        raise Failure("the front end printed a Python traceback:\n" + result.stdout[-4000:])
    problem = selection_problem(result.stdout)
    if problem:
        raise Failure(problem)
    return elapsed
