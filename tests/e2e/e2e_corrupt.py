#!/usr/bin/env python3
"""Crash containment with the real Open MPI DLL fed corrupted target memory.

A live Open MPI job (tests/e2e/pending.c) parks with pending operations. gdb attaches to rank 0,
corrupts one field of Open MPI's own data in the rank (tests/e2e/target_poke.py), and dumps its
queues through libmqdproxy.so and a real mqd-proxy-server running Open MPI's
libompi_dbg_msgq.so, which trusts what it reads:

  group-count    MPI_COMM_WORLD's group claims -1 processes: the DLL keeps no group for the
                 communicator and dereferences it while translating a request's peer (SIGSEGV
                 in mqs_next_operation). Cache mode epoch: the crash comes during the server's
                 walk of the communicators, inside the debugger's mqs_update_communicator_list.
  free-list-zero ob1's send-request free list claims 0 requests per allocation: the DLL
                 divides by it (SIGFPE in mqs_setup_operation_iterator). Cache mode off: every
                 send queue fails in place, every other call of the same dump succeeds.
  circular-list  the send free list's list of allocations is made to loop (its first element
                 points at an item that points at itself): the DLL walks it forever without
                 asking the debugger anything. The call must end with MQD_PROXY_ERR_TIMEOUT
                 after MQD_PROXY_TIMEOUT, and the server must kill the abandoned worker.

For each: gdb must survive; the dump must carry the proxy's error text (signal, DLL and entry
point, or the timeout); the server log must have the crash line; then, in the same gdb and the
same shim session, the memory is restored and a dump through the proxy must equal the native
dump taken before any corruption (the next call re-establishes the session). For the record,
the same corruption is also given to a natively loaded DLL in a separate, disposable gdb: that
gdb's fate is printed, never checked.

usage: e2e_corrupt.py --build DIR --ompi-dll PATH --frontend PATH [--ranks 3] [--ops 8]
"""
import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # importing the test infrastructure must not litter the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import LOADED_MACHINE_SLACK, Failure, verdict, wait_for  # noqa: E402
from gdb_driver import gdb_dump  # noqa: E402
from mpi_job import Job  # noqa: E402
from scratch import tear_down  # noqa: E402
from servers import Server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
POKE = os.path.join(HERE, "target_poke.py")
PROXY_HEADER = os.path.join(HERE, "..", "..", "schema", "mqd_proxy.h")

FREE_LIST = "((opal_free_list_t *)&mca_pml_base_send_requests)"
WORLD_GROUP = "((ompi_communicator_t *)&ompi_mpi_comm_world)->c_local_group"

# name, [(lvalue, new value)], environment of the proxied gdb, expected outcome
SCENARIOS = [
    ("group-count", [(WORLD_GROUP + "->grp_proc_count", "-1")], {},
     {"signal": "SIGSEGV", "entry": "mqs_next_operation"}),
    ("free-list-zero", [(FREE_LIST + "->fl_num_per_alloc", "0")], {"MQD_PROXY_CACHE": "off"},
     {"signal": "SIGFPE", "entry": "mqs_setup_operation_iterator"}),
    ("circular-list", [(FREE_LIST + "->fl_allocations.opal_list_sentinel.opal_list_next",
                        "&" + FREE_LIST + "->super.opal_lifo_ghost")],
     # 5 s, not less: the same session's later calls (a new worker, then the dumps after the
     # restore) run with this timeout too, and a loaded machine may leave them silent a while.
     {"MQD_PROXY_TIMEOUT": "5"}, {"timeout": 5.0, "entry": "mqs_next_operation"}),
]
NATIVE_HANG_SECONDS = 8  # how long the disposable native gdb may spin before it is killed


def proxy_codes():
    """MQD_PROXY_ERR_* values, read from the header the shim is built from."""
    text = open(PROXY_HEADER).read()
    first = int(re.search(r"MQD_PROXY_ERR_FIRST\s*=\s*(0x[0-9a-fA-F]+)", text).group(1), 16)
    return {m.group(1): first + int(m.group(2)) for m in
            re.finditer(r"(MQD_PROXY_ERR_\w+)\s*=\s*MQD_PROXY_ERR_FIRST\s*\+\s*(\d+)", text)}


def gdb_command(pid, frontend, commands):
    cmd = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
           "-ex", "attach %d" % pid, "-ex", "source " + frontend, "-ex", "source " + POKE,
           "-ex", "mqd types"]
    for c in commands:
        cmd += ["-ex", c]
    return cmd


def no_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_gdb(cmd, env_extra, timeout):
    """Runs gdb; returns (outcome, output): outcome is the exit status, "killed by SIGx", or
    "hung" (killed after `timeout` seconds)."""
    env = dict(os.environ)
    env.update(env_extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, preexec_fn=no_core_dumps, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return "hung for %d s, killed" % timeout, out
    if proc.returncode < 0:
        return "killed by %s" % signal.Signals(-proc.returncode).name, out
    return "exit %d" % proc.returncode, out


def pokes(changes, journal):
    return ['poke "%s" "%s" %s' % (lvalue, value, journal) for lvalue, value in changes]


def restore(pid, frontend, journal, where):
    """Puts back what a poke journal still holds (a gdb that died could not)."""
    os.kill(pid, signal.SIGCONT)  # a tracer that died may leave the rank stopped
    # A bound against a hang only, as for the proxied gdb: a loaded machine's gdb is slow.
    outcome, out = run_gdb(gdb_command(pid, frontend, ["unpoke " + journal]), {}, 300)
    if outcome != "exit 0" or not re.search(r"^restored \d+$", out, re.M):
        raise Failure("could not restore rank memory after %s (%s):\n%s"
                      % (where, outcome, out[-3000:]))


def dump_errors(dumps):
    """Every error the front end recorded in a `mqd dump --json --all`, with its code when the
    front end kept one: [(text, rc or None)]."""
    found = []
    for d in dumps:
        if d.get("error"):
            m = re.search(r"\((\d+)\)$", d["error"])
            found.append((d["error"], int(m.group(1)) if m else None))
        for c in d.get("communicators", []):
            if isinstance(c.get("group"), dict):
                found.append((c["group"]["error"], c["group"]["rc"]))
            for q in c["queues"].values():
                if q.get("error"):
                    found.append((q["error"], q["rc"]))
    return found


def run_scenario(name, changes, env, expect, job, server, args, shim, work, reference, codes):
    pid = job.pids[0]
    journal = os.path.join(work, name + ".journal")
    log = os.path.join(work, "unix.log")
    log_before = len(open(log).read())

    # For the record: the same corruption with the DLL inside a disposable gdb.
    native_cmds = pokes(changes, journal) + [
        "mqd load", "mqd dump --all --json --output %s" % os.path.join(work, name + "-native.json"),
        "unpoke " + journal]
    outcome, out = run_gdb(gdb_command(pid, args.frontend, native_cmds), {},
                           NATIVE_HANG_SECONDS if "timeout" in expect else 120)
    print("%-14s native load (separate gdb): %s" % (name, outcome))
    restore(pid, args.frontend, journal, "the native attempt")

    # Through the proxy: corrupt, dump, restore, dump again, all in one gdb and one session.
    corrupt = os.path.join(work, name + "-corrupt.json")
    after = os.path.join(work, name + "-after")
    load = "mqd load --server %s --vendor-dll %s %s" % (server.endpoint, args.ompi_dll, shim)
    cmds = pokes(changes, journal) + [
        load, "python import time; _mqd_t0 = time.time()",
        "mqd dump --all --json --output " + corrupt,
        "python print('mqd-e2e: corrupted dump took %.3f s' % (time.time() - _mqd_t0))",
        "unpoke " + journal,
        "mqd dump --all --json --output %s.json" % after,
        "mqd dump --all --output %s.txt" % after]
    outcome, out = run_gdb(gdb_command(pid, args.frontend, cmds), env, 300)
    with open(os.path.join(work, name + "-gdb.out"), "w") as f:
        f.write(out)
    problems = []
    if outcome != "exit 0":
        restore(pid, args.frontend, journal, "the proxied gdb")
        return ["gdb with the proxy did not survive: %s:\n%s" % (outcome, out[-3000:])]
    if "Traceback" in out or "internal error" in out:
        problems.append("the front end failed:\n" + out[-3000:])
    if len(re.findall(r"^poked 0x", out, re.M)) != len(changes):
        problems.append("the corruption was not applied:\n" + out[-3000:])
    if not re.search(r"^restored %d$" % len(changes), out, re.M):
        problems.append("the memory was not restored:\n" + out[-3000:])
        restore(pid, args.frontend, journal, "the proxied gdb")
    took = re.search(r"^mqd-e2e: corrupted dump took ([\d.]+) s$", out, re.M)
    if not took or not os.path.exists(corrupt) or not os.path.exists(after + ".json"):
        return problems + ["a dump is missing:\n" + out[-3000:]]
    took = float(took.group(1))

    errors = dump_errors(json.load(open(corrupt)))
    if "signal" in expect:
        want = "killed by %s in vendor DLL %s during %s" % (expect["signal"], args.ompi_dll,
                                                           expect["entry"])
        code = codes["MQD_PROXY_ERR_WORKER_DIED"]
        hits = [e for e in errors if want in e[0] and e[1] == code
                and "re-establishes the session" in e[0]]
        server_line = "in vendor DLL %s during %s" % (args.ompi_dll, expect["entry"])
        server_re = r"error: connection \d+: worker \d+ killed by %s %s" % (
            expect["signal"], re.escape(server_line))
    else:
        code = codes["MQD_PROXY_ERR_TIMEOUT"]
        hits = [e for e in errors if e[1] == code and "did not answer in time" in e[0]]
        limit = expect["timeout"]
        # At least the timeout; the upper bound only proves that the call did not hang past it
        # (timeout + 120 s: the slack of a loaded machine).
        if not limit <= took <= limit + 2 * LOADED_MACHINE_SLACK:
            problems.append("the hung call took %.2f s to fail; MQD_PROXY_TIMEOUT is %s s"
                            % (took, limit))
        # The abandoned worker must not spin forever: its watchdog kills it after the grace
        # period (3 s by default), and the supervisor reports the death.
        server_re = r"error: connection \d+: worker \d+ killed by SIGKILL in vendor DLL %s " \
                    r"during %s" % (re.escape(args.ompi_dll), expect["entry"])
    if not hits:
        problems.append("no error with code %d and the expected text; the dump said: %s"
                        % (code, errors or "no error at all"))
    else:
        print("%-14s proxied dump: %s (%d such error(s), %.2f s)" % (name, hits[0][0],
                                                                     len(hits), took))
    try:
        wait_for(lambda: re.search(server_re, open(log).read()[log_before:]),
                 LOADED_MACHINE_SLACK, "the server's log line " + server_re)
    except Failure as e:
        problems.append(str(e))

    for suffix, index in ((".json", 0), (".txt", 1)):
        if open(after + suffix).read() != reference[index]:
            problems.append("after restoring, the proxied dump (%s) differs from the native one"
                            % (after + suffix))
    if not problems:
        print("%-14s after restoring: the same session's dump equals the native one" % name)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--ompi-dll", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ops", type=int, default=8)
    ap.add_argument("--ranks", type=int, default=3)
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    shim = built.require("shim")
    server_bin = built.require("server")
    program = built.require("pending")
    codes = proxy_codes()

    work = tempfile.mkdtemp(prefix="mqd-e2e-corrupt-")
    job = server = None
    passed = False
    started = time.time()
    try:
        job = Job(program, args.ranks, args.ops, work)
        server = Server(server_bin, "unix:" + os.path.join(work, "s.sock"), args.ompi_dll,
                        work, "unix")
        native = os.path.join(work, "native")
        gdb_dump(job.pids[:1], args.frontend, "mqd load", native)
        reference = (open(native + ".json").read(), open(native + ".txt").read())
        operations = sum(len(q["operations"]) for d in json.loads(reference[0])
                         for c in d["communicators"] for q in c["queues"].values())
        if operations == 0:  # the corruptions below only bite when there are requests
            raise Failure("the native dump of rank 0 shows no operation")
        problems = []
        for name, changes, env, expect in SCENARIOS:
            problems += ["%s: %s" % (name, p) for p in
                         run_scenario(name, changes, env, expect, job, server, args, shim, work,
                                      reference, codes)]
        status = verdict(problems, work,
                         "gdb survived every corruption, the proxy reported the DLL's crash or "
                         "hang and recovered (%.1f s)" % (time.time() - started))
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        tear_down(work, passed, server, job)


if __name__ == "__main__":
    sys.exit(main())
