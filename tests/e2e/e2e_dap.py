#!/usr/bin/env python3
"""The front end driven as an IDE drives gdb: through the Debug Adapter Protocol (gdb 14 and
later: `gdb -i=dap`), the way VS Code, Theia, code-server and other cloud-hosted front ends do.

A live 4-rank Open MPI job (tests/e2e/pending.c). First the command line's answers: a batch gdb
sources the front end, runs `mqd attach --launcher <mpirun's pid>`, `mqd load`, and writes
`mqd dump --all --json` and `mqd graph --json`. Then gdb as a debug adapter, spoken to as a
client does (Content-Length framed JSON on its standard input and output): `initialize`, an
`attach` to rank 0, `configurationDone`, then `evaluate` requests with context "repl" running
the same commands. Each must succeed, and the two JSON documents the adapter returns must be
the command line's. The whole conversation must end within DAP_TIMEOUT seconds, and gdb must
exit when the client disconnects.

usage: e2e_dap.py --build DIR --frontend PATH [--ranks 4] [--ops 10]
"""
import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "testing", "python"))
from artefacts import Artefacts  # noqa: E402
from failure import Failure, verdict  # noqa: E402
from mpi_job import Job  # noqa: E402
from scratch import tear_down  # noqa: E402

DAP_TIMEOUT = 300  # seconds for the whole conversation: a bound against hangs, not a measure


class Adapter:
    """gdb -i=dap, spoken to as a DAP client; its conversation is logged to LOG."""

    def __init__(self, log):
        self.proc = subprocess.Popen(["gdb", "-i=dap", "-q", "-nx",
                                      "-iex", "set debuginfod enabled off"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(log + ".stderr", "w"))
        self.log = open(log, "w")
        self.seq = 0
        self.buffer = b""
        self.deadline = time.time() + DAP_TIMEOUT
        self.pending = {}  # request seq -> response, once received

    def send(self, command, **arguments):
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.log.write(">>> %s\n" % body.decode())
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return self.seq

    def _message(self):
        """The next message from gdb; Failure at the deadline or if gdb ends."""
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = int(dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
                              [b"Content-Length"])
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    message = json.loads(rest[:length])
                    self.log.write("<<< %s\n" % json.dumps(message))
                    return message
            left = self.deadline - time.time()
            if left <= 0:
                raise Failure("gdb's DAP conversation took over %d s: see %s"
                              % (DAP_TIMEOUT, self.log.name))
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            chunk = os.read(self.proc.stdout.fileno(), 65536) if ready else b""
            if ready and not chunk:
                raise Failure("gdb ended in the middle of the DAP conversation: see "
                              + self.log.name)
            self.buffer += chunk

    def response(self, seq):
        """The response to request `seq` (events and other responses meanwhile are kept or
        logged); Failure if it says the request failed."""
        while seq not in self.pending:
            m = self._message()
            if m.get("type") == "response":
                self.pending[m["request_seq"]] = m
        r = self.pending.pop(seq)
        if not r.get("success"):
            raise Failure("gdb's DAP %s request failed: %s (see %s)"
                          % (r.get("command"), r.get("message"), self.log.name))
        return r

    def repl(self, command):
        """The output of gdb command `command`, run by an evaluate request in the repl."""
        return self.response(self.send("evaluate", expression=command,
                                       context="repl"))["body"]["result"]

    def close(self):
        """Disconnects, leaving the processes running; gdb must then exit."""
        if self.proc.poll() is None:
            try:
                self.response(self.send("disconnect", terminateDebuggee=False))
            except Failure:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("gdb did not exit after the DAP client disconnected")
        self.log.close()


def command_line(frontend, launcher, work):
    """The command line's JSON: (dump, graph)."""
    dump, graph = os.path.join(work, "cli-dump.json"), os.path.join(work, "cli-graph.json")
    out = subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                          "-ex", "source " + frontend,
                          "-ex", "mqd attach --launcher %d" % launcher, "-ex", "mqd load",
                          "-ex", "mqd dump --all --json --output " + dump,
                          "-ex", "pipe mqd graph --json | cat > " + graph],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", timeout=600).stdout
    with open(os.path.join(work, "cli.log"), "w") as f:
        f.write(out)
    if not os.path.exists(dump) or not os.path.getsize(graph) or "Traceback" in out:
        raise Failure("the command line's dump or graph failed: see cli.log")
    return json.load(open(dump)), json.load(open(graph))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--frontend", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--ops", type=int, default=10)
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))

    work = tempfile.mkdtemp(prefix="mqd-e2e-dap-")
    job = adapter = None
    passed = False
    try:
        job = Job(built.require("pending"), args.ranks, args.ops, work)
        want_dump, want_graph = command_line(args.frontend, job.proc.pid, work)

        started = time.time()
        adapter = Adapter(os.path.join(work, "dap.log"))
        adapter.response(adapter.send("initialize", clientID="mqd-e2e", adapterID="gdb",
                                      linesStartAt1=True, columnsStartAt1=True,
                                      pathFormat="path"))
        attach = adapter.send("attach", pid=job.pids[0])
        adapter.response(adapter.send("configurationDone"))
        adapter.response(attach)
        adapter.repl("source " + args.frontend)
        said = adapter.repl("mqd attach --launcher %d" % job.proc.pid)
        adapter.repl("mqd load")
        dump = adapter.repl("mqd dump --all --json")
        graph = adapter.repl("mqd graph --json")
        seconds = time.time() - started
        adapter.close()
        adapter = None

        problems = []
        if "attached %d ranks" % args.ranks not in said:
            problems.append("mqd attach through DAP said %r" % said)
        for what, text, want in (("mqd dump --all --json", dump, want_dump),
                                 ("mqd graph --json", graph, want_graph)):
            with open(os.path.join(work, "dap-" + what.split()[1] + ".json"), "w") as f:
                f.write(text)
            try:
                got = json.loads(text)
            except ValueError as e:
                problems.append("%s through DAP is no JSON (%s): see %s" % (what, e, work))
                continue
            if got != want:
                problems.append("%s through DAP differs from the command line's: see %s"
                                % (what, work))
        print("DAP: attach, load, dump and graph of %d ranks in %.2f s" % (args.ranks, seconds))
        status = verdict(problems, work,
                         "gdb's DAP (evaluate in the repl) gives the command line's dump and "
                         "graph of %d ranks attached from the launcher" % args.ranks)
        passed = status == 0
        return status
    except Failure as e:
        return verdict([str(e)], work, None)
    finally:
        if adapter is not None:
            adapter.proc.kill()
            adapter.proc.wait()
        tear_down(work, passed, job)


if __name__ == "__main__":
    sys.exit(main())
