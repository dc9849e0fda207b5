#!/usr/bin/env python3
"""Round-trip economy benchmark: one Open MPI rank, dumped by gdb through the mqd front end.

For N = 10, 100, 1000 pending operations per queue (3N per rank: tests/e2e/pending), it dumps
rank 0 of a live 4-rank job in these modes:

  native    Open MPI's DLL loaded in gdb (the reference)
  naive     the proxy with every optimisation off (MQD_PROXY_CACHE=off, no compression)
  cold      the proxy fully optimised, first session ever (empty --state-dir)
  learned   the proxy fully optimised, a fresh session after `cold` (learned look-ups, memory)
  repeat    the proxy fully optimised, a second refresh in the `cold` session

at injected RTT 0 (unix socket), 1 and 20 ms (mqd-relay on TCP loopback; compression is then
on, as by default for TCP). It prints one table (wall time of the dump, round trips, bytes on
the wire, ratio to native) and writes it, with the machine and date, to bench/RESULTS.md.

usage: bench_openmpi.py --build DIR [--sizes 10,100,1000] [--rtts 0,1,20] [--output FILE]
                        [--naive-max-rtt MS]
The naive mode is measured up to --naive-max-rtt (default 1 ms); above, its time is
extrapolated from its measured round trips (marked so in the table).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from e2e_openmpi import Job, wait_for  # noqa: E402

OMPI_DLL_GLOB = "/usr/lib/{arch}/openmpi/lib/openmpi3/libompi_dbg_msgq.so"

GDB_SCRIPT = r'''
import gdb, json, os, subprocess, time
cfg = json.loads(os.environ["MQD_BENCH"])
gdb.execute("source " + cfg["frontend"])
gdb.execute(cfg["load"], to_string=True)

def counters():
    if not cfg.get("direct"):
        return {}
    out = subprocess.check_output([cfg["cli"], "--server", cfg["direct"], "stats", "--json"])
    sessions = [s for s in json.loads(out) if s["state"] == "open"]
    return sessions[-1]["counters"] if sessions else {}

results = []
for i in range(cfg["dumps"]):
    before = counters()
    t = time.time()
    gdb.execute("mqd dump --output %s.%d.txt" % (cfg["out"], i))
    elapsed = time.time() - t
    after = counters()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    results.append({"seconds": elapsed, "counters": delta})
with open(cfg["out"] + ".json", "w") as f:
    json.dump(results, f)
'''


def gdb_run(pid, frontend, load, out, dumps, cli, direct, env_extra):
    script = out + ".gdb.py"
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    env = dict(os.environ)
    env.update(env_extra)
    env["MQD_BENCH"] = json.dumps({"frontend": frontend, "load": load, "out": out,
                                   "dumps": dumps, "cli": cli, "direct": direct})
    subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                    "-p", str(pid), "-x", script], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=7200)
    with open(out + ".json") as f:
        data = json.load(f)
    if os.environ.get("MQD_BENCH_DEBUG"):
        print(json.dumps(data, indent=1))
    return data


class Relay:
    def __init__(self, binary, target, delay_ms, workdir):
        ready = os.path.join(workdir, "relay.ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.proc = subprocess.Popen([binary, "--listen", "tcp:127.0.0.1:0", "--connect", target,
                                      "--delay-ms", str(delay_ms), "--ready-file", ready])
        wait_for(lambda: os.path.exists(ready), 20, "the relay")
        self.endpoint = open(ready).read().strip()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)


def round_trips(c):
    return c.get("rt.calls", 0) + c.get("rt.callbacks", 0)


def wire_bytes(c):
    return c.get("wire.bytes_in", 0) + c.get("wire.bytes_out", 0)


def human(n):
    if n < 10 * 1024:
        return "%d B" % n
    if n < 10 * 1024 * 1024:
        return "%.1f KiB" % (n / 1024)
    return "%.1f MiB" % (n / 1024 / 1024)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--rtts", default="0,1,20")
    ap.add_argument("--naive-max-rtt", type=float, default=1)
    ap.add_argument("--output", default=os.path.join(HERE, "RESULTS.md"))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    frontend = os.path.join(build, "share", "mqd-proxy", "gdb", "mqd.py")
    shim = os.path.join(build, "shim", "libmqdproxy.so")
    server_bin = os.path.join(build, "proxy-server", "mqd-proxy-server")
    relay_bin = os.path.join(build, "tools", "mqd-relay")
    cli = os.path.join(build, "proxy-client", "mqd-proxy")
    program = os.path.join(build, "tests", "e2e", "pending")
    arch = subprocess.check_output(["gcc", "-print-multiarch"], text=True).strip()
    dll = OMPI_DLL_GLOB.format(arch=arch)
    sizes = [int(x) for x in args.sizes.split(",")]
    rtts = [float(x) for x in args.rtts.split(",")]

    debug = bool(os.environ.get("MQD_BENCH_DEBUG"))
    rows = []
    for n in sizes:
        work = tempfile.mkdtemp(prefix="mqd-bench-")
        job = Job(program, 4, 3 * n, work)
        try:
            pid = job.pids[0]
            native = gdb_run(pid, frontend, "mqd load", os.path.join(work, "native"), 1, cli,
                             None, {})[0]
            reference = open(os.path.join(work, "native.0.txt")).read()
            ops = reference.count("\n      #")
            rows.append({"n": n, "ops": ops, "mode": "native", "rtt": None,
                         "seconds": native["seconds"], "rts": 0, "bytes": 0, "note": ""})
            print("N=%d (%d operations): native %.3f s" % (n, ops, native["seconds"]), flush=True)
            for rtt in rtts:
                for mode in ("naive", "cold", "learned"):
                    if mode == "naive" and rtt > args.naive_max_rtt:
                        zero = [r for r in rows if r["n"] == n and r["mode"] == "naive"
                                and r["rtt"] == 0]
                        if zero:
                            z = zero[0]
                            rows.append({"n": n, "ops": ops, "mode": "naive", "rtt": rtt,
                                         "seconds": z["seconds"] + z["rts"] * rtt / 1000.0,
                                         "rts": z["rts"], "bytes": z["bytes"],
                                         "note": "extrapolated: 0 ms time + round trips x RTT"})
                        continue
                    state = os.path.join(work, "state-%s" % rtt)
                    if mode == "cold" and os.path.exists(state):
                        shutil.rmtree(state)
                    sock = os.path.join(work, "s.sock")
                    # The server's state dir: a fresh one for cold, the cold run's for learned.
                    proc = subprocess.Popen([server_bin, "--listen", "unix:" + sock, "--dll", dll,
                                             "--state-dir", state, "--ready-file",
                                             os.path.join(work, "srv.ready"), "--log-file",
                                             os.path.join(work, "server.log")] +
                                            (["--log-level", "trace"] if debug else []))
                    ready = os.path.join(work, "srv.ready")
                    wait_for(lambda: os.path.exists(ready), 20, "server")
                    direct = open(ready).read().strip()
                    os.unlink(ready)
                    relay = Relay(relay_bin, direct, rtt / 2.0, work) if rtt > 0 else None
                    endpoint = relay.endpoint if relay else direct
                    env = {}
                    if mode == "naive":
                        env = {"MQD_PROXY_CACHE": "off", "MQD_PROXY_COMPRESS": "off"}
                    dumps = 2 if mode == "cold" else 1
                    out = os.path.join(work, "%s-%s" % (mode, rtt))
                    try:
                        result = gdb_run(pid, frontend,
                                         "mqd load --server %s %s" % (endpoint, shim), out, dumps,
                                         cli, direct, env)
                    finally:
                        if relay:
                            relay.stop()
                        proc.send_signal(signal.SIGTERM)
                        proc.wait(timeout=30)
                    if debug:
                        print(open(os.path.join(work, "server.log")).read())
                        os.unlink(os.path.join(work, "server.log"))
                    for i in range(dumps):
                        if open("%s.%d.txt" % (out, i)).read() != reference:
                            raise SystemExit("FAIL: %s dump %d at %s ms differs from native"
                                             % (mode, i, rtt))
                    measured = [(mode, result[0])]
                    if mode == "cold":
                        measured.append(("repeat", result[1]))
                    for name, r in measured:
                        c = r["counters"]
                        rows.append({"n": n, "ops": ops, "mode": name, "rtt": rtt,
                                     "seconds": r["seconds"], "rts": round_trips(c),
                                     "bytes": wire_bytes(c), "note": ""})
                        print("N=%d %-7s RTT %4.1f ms: %8.3f s, %6d round trips, %s"
                              % (n, name, rtt, r["seconds"], round_trips(c),
                                 human(wire_bytes(c))), flush=True)
        finally:
            job.stop()
            shutil.rmtree(work, ignore_errors=True)

    write_results(rows, args.output)


def write_results(rows, path):
    native = {r["n"]: r["seconds"] for r in rows if r["mode"] == "native"}
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = ["# mqd-proxy benchmark: one Open MPI rank dumped by gdb", "",
             "Date: %s. Machine: %s, %d CPUs (%s), %s." % (
                 datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.node(),
                 os.cpu_count(), cpu, platform.platform()),
             "",
             "Rank 0 of a live 4-rank Open MPI 4.1.4 job (`--mca pml ob1 --mca btl self,vader`)",
             "with N pending operations per queue (3N per rank: receives from specific and any",
             "source/tag, large unmatched sends, on WORLD, a dup, a split and a named",
             "communicator). gdb with the mqd front end dumps it; time is the wall time of",
             "`mqd dump` measured inside gdb. RTT is injected by mqd-relay on TCP loopback",
             "(compression on, as by default for TCP); RTT 0 is a direct unix socket. Round",
             "trips and bytes come from the server's session counters (`mqd-proxy stats`). Every",
             "proxied dump is checked byte for byte against the native one.",
             "",
             "Reproduce: `python3 bench/bench_openmpi.py --build build`",
             "",
             "| N | operations | mode | RTT | wall time | round trips | bytes on the wire | ratio to native | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    order = {"native": 0, "naive": 1, "cold": 2, "learned": 3, "repeat": 4}
    for r in sorted(rows, key=lambda r: (r["n"], -1 if r["rtt"] is None else r["rtt"],
                                         order[r["mode"]])):
        ratio = r["seconds"] / native[r["n"]] if native.get(r["n"]) else 0
        lines.append("| %d | %d | %s | %s | %.3f s | %s | %s | %s | %s |" % (
            r["n"], r["ops"], r["mode"], "—" if r["rtt"] is None else "%g ms" % r["rtt"],
            r["seconds"], "—" if r["mode"] == "native" else "{:,}".format(r["rts"]),
            "—" if r["mode"] == "native" else human(r["bytes"]),
            "1.00" if r["mode"] == "native" else "%.2f" % ratio, r["note"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
