"""The transparency matrix of the end-to-end tests: one live job dumped by gdb and the front end
with the vendor DLL loaded natively, then through libmqdproxy.so and real mqd-proxy-servers in
every cache mode; every proxied dump must equal the native one byte for byte (JSON and text).

    from dump_matrix import DumpMatrix
    matrix = DumpMatrix(server_bin, dll, shim, work, relay_bin)  # starts the servers
    matrix.add("ssh", sshd.url(server_bin), {...})        # more proxied runs, if any
    outputs = matrix.dump(job.pids, frontend, "dump of 4 ranks")  # {name: (json, text)}
    problems = matrix.differences(outputs)               # [] when every dump is the native one
    print(summary(json.loads(outputs["native"][0])))      # "dumped N operations on ..."
    matrix.stop()

The proxied runs, in order: unix (cache epoch; the first session ever, nothing learned), tcp
(epoch, compressed, a fresh session with learned look-ups and memory, the server behind an
mqd-relay with a round trip of TCP_RTT_MS: on another machine), unix-call and unix-off
(the conservative cache modes), node (a server new to the DLL, with --node-memory, which
reads each rank on this host once it has proved it is the debugger's), node-learned (a
second session with that server, which has learned what the first read: nothing may spare it
the proof) and tcp-new (a server that never saw the job, behind a relay like tcp's: each
rank's first update is guessed from the first rank's). Every run's shim keeps its learned
look-ups in WORK/shim-state (MQD_PROXY_STATE_DIR), so the node server gets them all with each
mqs_setup_image.
differences() also requires, from the node server's log, the proof for every rank in each of
its sessions and that the server asked the debugger for no look-up one by one; from the tcp
run's shim, that it answered the set-ups the unix run recorded from those records; and,
from the tcp server's log, that its second dump (a refresh of the whole job) refreshed every
rank but the first ahead, with the first rank's update: the shim refreshes ahead where reading
a rank's memory again costs less than the round trip it saves, which gdb's local reads do
against that link (and need not against a unix socket's).
"""
import os
import re
import time

from failure import LOADED_MACHINE_SLACK
from gdb_driver import gdb_dump
from servers import Relay, Server

# The tcp run's server link: a round trip long enough that gdb's local reads of a rank's
# memory cost less, as against a server on another machine.
TCP_RTT_MS = 20


class DumpMatrix:
    def __init__(self, server_bin, dll, shim, work, relay_bin):
        self.dll, self.shim, self.work = dll, shim, work
        self.servers = [Server(server_bin, "unix:" + os.path.join(work, "s.sock"), dll, work,
                               "unix"),
                        Server(server_bin, "tcp:127.0.0.1:0", dll, work, "tcp"),
                        Server(server_bin, "unix:" + os.path.join(work, "node.sock"), dll, work,
                               "node", state_dir=os.path.join(work, "node-state"),
                               extra=["--node-memory"]),
                        Server(server_bin, "tcp:127.0.0.1:0", dll, work, "tcp-new",
                               state_dir=os.path.join(work, "tcp-new-state"))]
        unix, direct, node, direct_new = (s.endpoint for s in self.servers)
        self.relay = Relay(relay_bin, direct, TCP_RTT_MS, work, "tcp-relay")
        self.relay_new = Relay(relay_bin, direct_new, TCP_RTT_MS, work, "tcp-new-relay")
        tcp = self.relay.endpoint
        self.node_log = self.servers[2].log
        self.pids = []
        # (name, endpoint, environment of gdb)
        # The tcp run's shim logs its session summary: what it answered from records.
        self.tcp_shim_log = os.path.join(work, "tcp-shim.log")
        # The node run's shim logs its summary too: how each refresh's epoch check went.
        self.node_shim_log = os.path.join(work, "node-shim.log")
        self.proxied = [("unix", unix, {}),
                        ("tcp", tcp, {"MQD_PROXY_LOG": "info",
                                      "MQD_PROXY_LOG_FILE": self.tcp_shim_log}),
                        ("unix-call", unix, {"MQD_PROXY_CACHE": "call"}),
                        ("unix-off", unix, {"MQD_PROXY_CACHE": "off"}),
                        ("node", node, {"MQD_PROXY_LOG": "info",
                                        "MQD_PROXY_LOG_FILE": self.node_shim_log}),
                        ("node-learned", node, {}),
                        ("tcp-new", self.relay_new.endpoint, {})]
        self.node_runs = 2

    def add(self, name, endpoint, env):
        """One more proxied run (e.g. a server the shim starts itself over ssh://)."""
        self.proxied.append((name, endpoint, env))

    def names(self):
        return [name for name, _, _ in self.proxied]

    def dump(self, pids, frontend, what, attach=None):
        """gdb dumps every rank natively, then once per proxied run; each writes
        WORK/NAME.json and WORK/NAME.txt. Prints each run's time. Returns {name: (json, text)};
        a gdb or front-end failure raises Failure. `attach`: the front end's command that
        attaches the ranks, instead of an `attach PID` per rank (gdb_driver.gdb_command)."""
        # Read cost pinned, as ctest pins it: measured, "refreshed ahead" follows machine speed.
        shim_state = {"MQD_PROXY_STATE_DIR": os.path.join(self.work, "shim-state"),
                      "MQD_PROXY_READ_COST": "0"}
        runs = [("native", "mqd load", {})] + [
            (name, "mqd load --server %s --vendor-dll %s %s" % (endpoint, self.dll, self.shim),
             dict(shim_state, **env)) for name, endpoint, env in self.proxied]
        self.pids = list(pids)
        outputs = {}
        for name, load, env in runs:
            prefix = os.path.join(self.work, name)
            seconds = gdb_dump(pids, frontend, load, prefix, env, attach)
            with open(prefix + ".json") as j, open(prefix + ".txt") as t:
                outputs[name] = (j.read(), t.read())
            print("%-9s %s: %.2f s" % (name, what, seconds))
        return outputs

    def _log_with_session(self, path, sessions=1):
        """The server log at `path` once it holds the summaries of `sessions` sessions with the
        DLL: each is logged when its worker has exited, shortly after gdb did (waited for with
        the slack of a loaded machine, LOADED_MACHINE_SLACK)."""
        deadline = time.time() + LOADED_MACHINE_SLACK
        while True:
            with open(path) as f:
                log = f.read()
            if len(re.findall(r"session summary: .*%s" % re.escape(os.path.basename(self.dll)),
                              log)) >= sessions or time.time() > deadline:
                return log
            time.sleep(0.2)

    def differences(self, outputs):
        """A sentence for every proxied dump (JSON or text) that is not the native one, for
        every rank the node run did not read on this host, and for an epoch run whose refresh
        of the whole job was not made with one update."""
        problems = ["%s dump (%s) differs from the native one: see %s" % (name, kind, self.work)
                    for name in self.names() for i, kind in enumerate(("JSON", "text"))
                    if outputs[name][i] != outputs["native"][i]]
        # The epoch run behind the relay: the first rank's update of the second dump refreshed
        # all the others ahead, or, in a session after one that read the same ranks (their
        # set-up replies name what that one read), the first dump's did, and the second dump
        # served them from those epochs, held, finding them unchanged (docs/round-trips.md,
        # "An epoch like the last"); 2 x others from a server that holds no epoch.
        for server in self.servers[1:2]:
            log = self._log_with_session(server.log)
            ahead = re.findall(r"session summary: .*%s.*\((\d+) refreshed ahead\)"
                               % re.escape(os.path.basename(self.dll)), log)
            others = len(self.pids) - 1
            if others > 0 and (not ahead or int(ahead[0]) not in (others, 2 * others)):
                problems.append("%s: the whole job's refresh refreshed %s ranks ahead, not %d "
                                "(or %d with the first dump's): see %s"
                                % (server.name, ahead[:1], others, 2 * others, server.log))
        # The tcp run, a later session on the same ranks as the unix run, which recorded every
        # rank's set-ups but the first's (that one asked its look-ups one by one): those are
        # answered from the records, and the DLL contradicts none (docs/round-trips.md,
        # "Set-ups answered from a record").
        with open(self.tcp_shim_log) as f:
            recalled = re.findall(r"session summary: .* (\d+) set-ups answered from records "
                                  r"\(\d+ moved from another process's, (\d+) contradicted",
                                  f.read())
        wanted = 2 * (len(self.pids) - 1)
        if not recalled or int(recalled[-1][0]) < wanted or int(recalled[-1][1]) != 0:
            problems.append("tcp: the shim answered %s set-ups from records (contradicted), "
                            "not %d or more: see %s" % (recalled[-1:], wanted, self.tcp_shim_log))
        log = self._log_with_session(self.node_log, self.node_runs)
        proved = [int(p) for p in re.findall(r"memory read on this host, from pid (\d+)", log)]
        problems += ["the --node-memory server proved rank pid %d in %d of its %d sessions: see %s"
                     % (pid, proved.count(pid), self.node_runs, self.node_log)
                     for pid in self.pids if proved.count(pid) != self.node_runs]
        # Each proof made late: the AT_RANDOM bytes and the stack's top of the one process of
        # that rank here, as the session's opening listed them, read by the shim while the
        # set-up travelled and compared with the node's: no round trip of its own, nor a wait
        # for the debugger's read before it
        # (docs/round-trips.md, "Reading the target on its node").
        ahead = re.findall(r"memory read on this host, from pid \d+ \(.*; the one process of "
                           r"that rank here, its AT_RANDOM bytes and its stack's top for the "
                           r"shim to compare", log)
        if len(ahead) != len(proved):
            problems.append("node: %d of the %d proofs made late, not all: see %s"
                            % (len(ahead), len(proved), self.node_log))
        # Every update of a rank read on the node (the set-up proved it), in each of the two
        # dumps: the first rank's with its epoch check made while the update travelled, every
        # other rank's made ahead on the node with it and proved at its own update by its check
        # (docs/round-trips.md, "The whole job"), the node's bytes the debugger's each time;
        # and every set-up's proof the node's bytes too.
        with open(self.node_shim_log) as f:
            summary = f.read()
        late = re.findall(r"session summary: .* (\d+) updates served from refreshes ahead and "
                          r"\d+ from epochs held \((\d+) more found stale\).* (\d+) epoch "
                          r"checks made late \((\d+) sent again\), (\d+) set-ups proved late "
                          r"\((\d+) sent again\)", summary)
        wanted = (2 * (len(self.pids) - 1), 0, 2, 0, len(self.pids), 0)
        if not late or tuple(int(n) for n in late[-1]) != wanted:
            problems.append("node: %s updates served from refreshes ahead (found stale), epoch "
                            "checks made late (sent again) and set-ups proved late (sent "
                            "again), not %s: see %s" % (late[-1:], wanted, self.node_shim_log))
        # The tcp-new run, a job the server never saw (its state is new) behind the relay:
        # every rank's first update after the first was guessed from the first rank's
        # (docs/round-trips.md, "A job never seen"). Whether a guess was whole enough to serve
        # a refresh ahead depends on the MPI's heap (Open MPI's are: round-trips and the bench
        # count them; MPICH's at 1,000 operations a rank were not).
        new_log = self._log_with_session(self.servers[3].log)
        guessed = re.findall(r"\((\d+) refreshed ahead\); (\d+) first updates guessed", new_log)
        others = len(self.pids) - 1
        if others > 0 and (not guessed or int(guessed[0][1]) != others):
            problems.append("tcp-new: %s (refreshed ahead, first updates guessed), not %d "
                            "guessed: see %s" % (guessed[:1], others, self.servers[3].log))
        misses = [int(m) for m in re.findall(r"look-ups \d+ hits / (\d+) misses", log)]
        if not misses or max(misses) != 0:
            problems.append("the node server, new to the DLL, asked for look-ups one by one "
                            "(%s misses) despite the shim's learned ones: see %s"
                            % (misses, self.node_log))
        return problems

    def stop(self):
        self.relay.stop()
        self.relay_new.stop()
        for s in self.servers:
            s.stop()


def summary(dumps):
    """One line: how many operations on how many communicators across how many ranks."""
    comms = [c for d in dumps for c in d.get("communicators", [])]
    total = sum(len(q["operations"]) for c in comms for q in c["queues"].values())
    return "dumped %d operations on %d communicators across %d ranks" % (total, len(comms),
                                                                        len(dumps))
