"""A job run by Slurm, as `mqd attach --launcher PID` reaches its ranks on other nodes: through
a `gdbserver --attach` per rank, started on the rank's node by Slurm itself (one job step
beside the job's, `srun --jobid=J --overlap`, one task a node), so that nobody has to log in to
a node, open a port or start a daemon by hand. The launcher is the job's srun, or an mpirun
run inside a Slurm allocation (`salloc ... mpirun`, which starts its daemons through srun).

  job_of(pid)               the Slurm job of launcher `pid` on this host: the job of the step
                            srun `pid` runs (Slurm records every step's srun host and pid), else
                            $SLURM_JOB_ID in the launcher's environment; None for neither
  start_gdbservers(job, ranks)
                            one gdbserver --attach per rank on its node; the addresses to give
                            gdb (host -> addresses, in the order of the host's ranks)
  release_gdbservers(addresses)
                            ends those of them gdb will not connect to (an attach that failed
                            part way): each lets its rank go, and the step ends with the last

How it asks Slurm: `scontrol -o show step` (which step srun `pid` runs), `scontrol -o show node`
(each node's address: the one Slurm itself reaches the node by), and one `srun` for the
gdbservers. Each gdbserver listens on a port its node's kernel picks and says which; it serves
one debugger connection and ends when gdb detaches, and the step with the last of them. Slurm
runs them as the user that asks (the job's: nobody else may attach its ranks), but a gdbserver
port has no authentication of its own: anyone who can reach the node's address meanwhile can
connect first (docs/security.md, "A Slurm job's nodes").

Tunables: GDBSERVERS_TIMEOUT (how long the nodes may take to start theirs: the bound for a
loaded cluster; a step starts in well under a second), RELEASE_TIMEOUT (how long releasing
unused ones may take in all). The Slurm commands are the ones on PATH,
and they read the user's Slurm configuration ($SLURM_CONF or the system's) as usual.
"""
from __future__ import annotations

import errno
import os
import re
import select
import socket
import subprocess
import time
from typing import Dict, List, Optional, Tuple

from .errors import MqdError
from .hosts import is_this_host

GDBSERVERS_TIMEOUT = 60
RELEASE_TIMEOUT = 5

# What each node's task runs: for every pid this node was given ("NODE=PID,PID ..." as
# arguments; $SLURMD_NODENAME is the node's name in Slurm's table), a gdbserver --attach on a
# port the kernel picks. Its lines come back prefixed by the node and the pid it serves (two
# nodes may well run a process of the same pid), up to the one with its port; what it says
# later is dropped on the node (srun's output is not read any more). One that ends without a
# port (it could not attach) says "ended" last.
_NODE_SCRIPT = r"""
for entry in "$@"; do
  case "$entry" in "$SLURMD_NODENAME="*) pids=${entry#*=} ;; esac
done
for pid in $(echo "$pids" | tr , ' '); do
  (gdbserver --once --attach :0 "$pid" 2>&1 | while IFS= read -r line; do
     echo "mqd-gdbserver $SLURMD_NODENAME $pid $line"
     case "$line" in "Listening on port"*) exec cat >/dev/null ;; esac
   done; echo "mqd-gdbserver $SLURMD_NODENAME $pid ended") &
done
wait
"""
_LISTENING = re.compile(r"^(?:\s*\d+: )?mqd-gdbserver (\S+) (\d+) Listening on port (\d+)\s*$")
_ENDED = re.compile(r"^(?:\s*\d+: )?mqd-gdbserver (\S+) (\d+) ended\s*$")
_SAID = re.compile(r"^(?:\s*\d+: )?mqd-gdbserver (\S+) (\d+) (.*)$")


def _scontrol(args: List[str]) -> str:
    try:
        run = subprocess.run(["scontrol", "-o"] + args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MqdError("cannot ask Slurm (scontrol %s): %s" % (" ".join(args), e))
    if run.returncode != 0:
        raise MqdError("scontrol %s failed: %s" % (" ".join(args), run.stderr.strip()))
    return run.stdout


def _fields(line: str) -> Dict[str, str]:
    """scontrol -o's KEY=VALUE fields of one record."""
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def job_of(pid: int, env: Optional[Dict[str, str]] = None) -> Optional[str]:
    """The Slurm job of launcher `pid` (module docstring); None when it is in none. `env` is
    the environment Slurm's commands run in (gdb's own if None)."""
    try:
        listing = subprocess.run(["scontrol", "-o", "show", "step"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, errors="replace",
                                 timeout=30, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in listing.stdout.splitlines():
        f = _fields(line)
        host, _, srun = f.get("SrunHost:Pid", "").rpartition(":")
        if srun == str(pid) and is_this_host(host) and "." in f.get("StepId", ""):
            return f["StepId"].split(".", 1)[0]
    try:
        with open("/proc/%d/environ" % pid, "rb") as e:
            for entry in e.read().split(b"\0"):
                if entry.startswith(b"SLURM_JOB_ID="):
                    job = entry.split(b"=", 1)[1].decode("ascii", "replace")
                    return job if job.isdigit() else None
    except OSError:
        pass
    return None


def node_addresses(nodes: List[str]) -> Dict[str, str]:
    """Each node's address as Slurm reaches it (NodeAddr)."""
    addresses: Dict[str, str] = {}
    for line in _scontrol(["show", "node", ",".join(nodes)]).splitlines():
        f = _fields(line)
        if "NodeName" in f:
            addresses[f["NodeName"]] = f.get("NodeAddr") or f["NodeName"]
    missing = [n for n in nodes if n not in addresses]
    if missing:
        raise MqdError("Slurm knows no node %s" % ", ".join(missing))
    return addresses


def start_gdbservers(job: str, ranks: List[Tuple[str, int]]) -> Dict[str, List[str]]:
    """Starts a gdbserver --attach for each (node, pid) of `ranks` on its node, in one step of
    Slurm job `job` beside its others; returns node -> ["ADDRESS:PORT", ...] in the order of the node's ranks in
    `ranks`. MqdError, naming the node and what it said, when one does not start in
    GDBSERVERS_TIMEOUT seconds; the step is cancelled then."""
    by_node: Dict[str, List[int]] = {}
    for node, pid in ranks:
        by_node.setdefault(node, []).append(pid)
    nodes = sorted(by_node)
    addresses = node_addresses(nodes)
    argv = ["srun", "--jobid=" + job, "--overlap", "--input=none", "--label",
            "--nodelist=" + ",".join(nodes), "--nodes=%d" % len(nodes),
            "--ntasks=%d" % len(nodes), "--ntasks-per-node=1", "--kill-on-bad-exit=0",
            "--job-name=mqd-gdbservers", "/bin/sh", "-c", _NODE_SCRIPT, "mqd-gdbservers"]
    argv += ["%s=%s" % (n, ",".join(str(p) for p in by_node[n])) for n in nodes]
    # srun is started through `setsid -f`, which exits at once: srun is never gdb's child
    # (nothing for gdb's own waits to reap), and runs in a session of its own (a Ctrl-C in gdb
    # does not reach it). It ends with its tasks, once gdb has detached from every rank.
    launcher = subprocess.Popen(["setsid", "-f", "sh", "-c", 'echo "$$"; exec "$@"', "srun"]
                                + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    launcher.wait()
    out = launcher.stdout
    assert out is not None
    ports: Dict[Tuple[str, int], int] = {}
    said: Dict[Tuple[str, int], str] = {}
    lines: List[str] = []
    srun_pid: Optional[int] = None
    wanted = set(ranks)
    deadline = time.monotonic() + GDBSERVERS_TIMEOUT
    pending = b""
    ended = False  # srun's output ended: the step did
    failed: List[Tuple[str, int]] = []  # the ranks whose gdbserver ended without a port
    while not wanted <= set(ports) and not ended and not failed:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([out], [], [], left)[0]:
            break
        chunk = os.read(out.fileno(), 65536)
        ended = not chunk
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            line = raw.decode("utf-8", "replace")
            if srun_pid is None and line.strip().isdigit():
                srun_pid = int(line)
                continue
            lines.append(line)
            m = _LISTENING.match(line)
            if m:
                ports[(m.group(1), int(m.group(2)))] = int(m.group(3))
                continue
            m = _ENDED.match(line)
            if m:
                failed.append((m.group(1), int(m.group(2))))
                continue
            m = _SAID.match(line)
            if m:
                said.setdefault((m.group(1), int(m.group(2))), m.group(3))
    if not wanted <= set(ports):
        if srun_pid is not None and not ended:
            _cancel(srun_pid)
        out.close()
        # The ranks whose gdbserver gave up first: they are why the others did not start.
        missing = failed + [(n, p) for n, p in ranks if (n, p) not in ports and
                            (n, p) not in failed]
        reasons = ["pid %d on %s: %s" % (p, n, said.get((n, p), "no word"))
                   for n, p in missing[:5]]
        if len(missing) > 5:
            reasons.append("%d more not started" % (len(missing) - 5))
        other = [l for l in lines if not _SAID.match(l)][-5:]
        what = "ended before every one started" if ended or failed else \
            "did not start every one in %d s" % GDBSERVERS_TIMEOUT
        raise MqdError("Slurm's step of gdbservers for job %s %s (%s)%s" % (
            job, what, "; ".join(reasons),
            ("; srun said: " + " | ".join(other)) if other else ""))
    out.close()
    return {n: ["%s:%d" % (addresses[n], ports[(n, p)]) for p in by_node[n]] for n in nodes}


def release_gdbservers(addresses: List[str]) -> None:
    """Ends the gdbservers at `addresses` ("ADDRESS:PORT", as start_gdbservers gives them)
    that gdb will not connect to, so that none goes on holding its rank stopped, listening on
    a port anyone on the network may take, in a step that never ends: a connection opened and
    closed at once is the one connection a `gdbserver --once` serves, after which it detaches
    its process and exits (the step ends with the last). All at once, within RELEASE_TIMEOUT
    seconds in all; one that cannot be reached is left (its node may be down)."""
    pending = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        s.setblocking(False)
        try:
            connecting = s.connect_ex((host.strip("[]"), int(port))) in (0, errno.EINPROGRESS)
        except (OSError, ValueError):  # a name that does not resolve, a port that is none
            connecting = False
        if connecting:
            pending.append(s)
        else:
            s.close()
    # poll, not select: gdb attached to hundreds of ranks holds descriptors past FD_SETSIZE.
    poll = select.poll()
    by_fd = {s.fileno(): s for s in pending}
    for fd in by_fd:
        poll.register(fd, select.POLLOUT)
    deadline = time.monotonic() + RELEASE_TIMEOUT
    while by_fd:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for fd, _ in poll.poll(left * 1000):  # connected, or refused: nothing more to do
            poll.unregister(fd)
            by_fd.pop(fd).close()
    for s in by_fd.values():
        s.close()


def _cancel(pid: int) -> None:
    """Ends an srun that did not deliver: its step's tasks end with it."""
    try:
        os.kill(pid, 15)
    except OSError:
        pass
