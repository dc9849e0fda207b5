#!/usr/bin/env python3
"""Soak: 8 debuggers, one server, random faults on every connection, for a bounded time.

One mqd-proxy-server with the test DLL; one mqd-relay in front of it that breaks connections at
random (drop, stall, truncate, corrupt; --random-faults P); 8 mqd-dump-client processes (each a
debugger with libmqdproxy.so loaded) dumping through the relay for --seconds, half with the
epoch cache policy, half with the call policy. Every dump is checked against a native load:
it is either right, or cut short by a clear proxy error. Afterwards the server must be healthy:
still running, no worker left behind, and a clean client's dumps through no relay all right.

Prints the figures (sessions, dumps, calls, faults injected and survived, errors, wrong
answers) and exits non-zero if any answer was wrong, any client failed, or the server is not
healthy.

usage: soak.py --build DIR [--seconds 60] [--clients 8] [--fault-rate 0.002] [--seed 1]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing",
                                "python"))
from artefacts import Artefacts  # noqa: E402
from failure import LOADED_MACHINE_SLACK  # noqa: E402


def start(argv, ready, log):
    proc = subprocess.Popen(argv + ["--ready-file", ready], stdout=log, stderr=log)
    # The slack of a loaded machine for a start that must come; a ready one ends the wait.
    deadline = time.time() + LOADED_MACHINE_SLACK
    while time.time() < deadline:
        if os.path.exists(ready):
            with open(ready) as f:
                return proc, f.read().strip()
        if proc.poll() is not None:
            raise SystemExit(f"soak: {argv[0]} exited early (status {proc.returncode})")
        time.sleep(0.05)
    raise SystemExit(f"soak: {argv[0]} did not become ready")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("MQD_SOAK_SECONDS", "60")))
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--fault-rate", type=float, default=0.002)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", default="2")
    args = ap.parse_args()
    built = Artefacts(os.path.abspath(args.build))
    server_bin = built.require("server")
    relay_bin = built.require("relay")
    client_bin = built.require("dump_client")
    dll = built.require("testdll_l3")
    cli = built.require("cli")

    work = tempfile.mkdtemp(prefix="mqd-soak-")
    logs = open(f"{work}/processes.log", "w")
    server, endpoint = start([server_bin, "--listen", f"unix:{work}/server.sock", "--dll", dll,
                              "--state-dir", f"{work}/state", "--log-file",
                              f"{work}/server.log"], f"{work}/server.ready", logs)
    relay, relay_endpoint = start([relay_bin, "--listen", f"unix:{work}/relay.sock",
                                   "--connect", endpoint, "--random-faults",
                                   str(args.fault_rate), "--seed", str(args.seed),
                                   "--fault-log", f"{work}/faults.log"],
                                  f"{work}/relay.ready", logs)
    failures = []
    results = []
    try:
        clients = []
        for i in range(args.clients):
            env = dict(os.environ, MQD_PROXY_SERVER=relay_endpoint, MQD_PROXY_DLL=dll,
                       MQD_PROXY_TIMEOUT=args.timeout,
                       MQD_PROXY_CACHE="epoch" if i % 2 == 0 else "call",
                       MQD_PROXY_LOG_FILE=f"{work}/shim-{i}.log")
            out = open(f"{work}/client-{i}.json", "w")
            err = open(f"{work}/client-{i}.err", "w")
            clients.append((subprocess.Popen(
                [client_bin, "--seconds", str(args.seconds), "--allow-errors", "--quiet"],
                env=env, stdout=out, stderr=err), i))
        # Only proves that no client hung: its last dump may meet a stall and wait out the
        # timeout, on a loaded machine (the slack: timeout + 120 s).
        deadline = time.time() + args.seconds + float(args.timeout) + 2 * LOADED_MACHINE_SLACK
        for proc, i in clients:
            try:
                status = proc.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
                failures.append(f"client {i} hung")
                continue
            with open(f"{work}/client-{i}.json") as f:
                text = f.read().strip()
            if text:
                results.append(json.loads(text))
            if status != 0 or not text:
                with open(f"{work}/client-{i}.err") as f:
                    failures.append(f"client {i} exited {status}: {f.read()[-3000:]}")
    finally:
        relay.send_signal(signal.SIGTERM)
        relay.wait()

    # The server after the storm: alive, its workers gone, and right answers for a clean client.
    # Workers end once their connections are gone (an abandoned one after the watchdog's grace
    # period): polled for, with the slack of a loaded machine.
    deadline = time.time() + LOADED_MACHINE_SLACK
    while children(server.pid) and server.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    healthy = server.poll() is None
    if not healthy:
        failures.append(f"the server died (status {server.returncode})")
    left = children(server.pid)
    if left:
        failures.append(f"{len(left)} worker(s) left behind: {left}")
    env = dict(os.environ, MQD_PROXY_SERVER=endpoint, MQD_PROXY_DLL=dll,
               MQD_PROXY_LOG_FILE=f"{work}/shim-clean.log")
    clean = subprocess.run([client_bin, "--dumps", "10"], env=env, capture_output=True,
                           text=True, timeout=120)
    if clean.returncode != 0:
        failures.append(f"a clean client after the soak failed: {clean.stdout} {clean.stderr}")
    stats = subprocess.run([cli, "--server", endpoint, "stats", "--json"], capture_output=True,
                           text=True, timeout=60)
    if stats.returncode != 0:
        failures.append(f"mqd-proxy stats failed after the soak: {stats.stderr}")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=LOADED_MACHINE_SLACK)  # an exit that must come: the slack
    if server.returncode != 0:
        failures.append(f"the server exited {server.returncode} on SIGTERM")

    faults = 0
    kinds = {}
    if os.path.exists(f"{work}/faults.log"):
        with open(f"{work}/faults.log") as f:
            for line in f:
                faults += 1
                kind = line.rsplit(":", 1)[-1].strip()
                kinds[kind] = kinds.get(kind, 0) + 1
    with open(f"{work}/server.log") as f:
        sessions = sum(1 for line in f if "session opened" in line)
    total = lambda key: sum(r[key] for r in results)
    wrong = total("wrong")
    survived = faults if not failures else 0
    print(f"soak: {args.clients} debuggers, {args.seconds:.0f} s, fault rate {args.fault_rate} "
          f"per message (seed {args.seed})")
    print(f"  sessions opened: {sessions} (including re-established ones)")
    print(f"  dumps: {total('dumps')} ({total('ok')} right, {total('errors')} cut short by a "
          f"clear error, {wrong} wrong); set-ups retried: {total('set_up_errors')}")
    print(f"  mqs_* calls: {total('calls')}; slowest dump: "
          f"{max((r['max_dump_ms'] for r in results), default=0):.0f} ms")
    print(f"  faults injected: {faults} {kinds}; survived: {survived}")
    print(f"  wrong answers: {wrong}")
    print(f"  server healthy afterwards: {'yes' if not failures else 'NO'}")
    if wrong:
        failures.append(f"{wrong} wrong answer(s)")
    if faults == 0:
        failures.append("no fault was injected: the soak proved nothing")
    for f in failures:
        print(f"FAIL: {f}")
    if failures or os.environ.get("MQD_KEEP"):
        print(f"  logs in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
