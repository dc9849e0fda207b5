"""ssh:// servers against a real OpenSSH server on loopback (sshd_fixture.py): every mqd-proxy
command through ssh, a whole shim session (the dump client, checked against a native load of
the test DLL), ssh's options passing through (a configuration file, a jump host), failures that
must be explained rather than hang (wrong key, no server program, no ssh program), and no
process left behind.

usage: ssh_test.py --build BUILD
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklist import Build, check, finish, last_json, run  # noqa: E402
from sshd_fixture import Sshd  # noqa: E402

MQD_PROXY_ERR_WORKER_DIED = 0x4d510000 + 5  # contracts/mqd_proxy.h: MQD_PROXY_ERR_FIRST + 5


def stdio_servers(server_bin):
    r = subprocess.run(["pgrep", "-f", server_bin + " --stdio"], stdout=subprocess.PIPE,
                       text=True)
    return r.stdout.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    b = Build(args.build)
    cli, server_bin, l3, dump_client = b.cli, b.server, b.l3, b.dump_client
    work = tempfile.mkdtemp(prefix="mqd-ssh-")
    sshd = Sshd(work)
    try:
        url = sshd.url(server_bin)
        env = {"MQD_PROXY_SERVER": url, "MQD_PROXY_SSH_OPTIONS": sshd.options}

        r = run([cli, "ping", "--count", "3"], env)
        check(r.returncode == 0 and "round trips: min" in r.stdout,
              "ping through ssh (%.2f s)" % r.seconds, r.all)
        # info and doctor describe the server and load the DLL over one connection: one
        # login, one ssh start-up.
        before = sshd.accepted()
        r = run([cli, "info", "--json"], dict(env, MQD_PROXY_DLL=l3))
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        time.sleep(0.3)
        logins = sshd.accepted() - before
        check(r.returncode == 0 and doc.get("any_dll") and
              doc["dlls"][0]["version_string"] == "mqd-proxy test DLL 1.0 (level 3)" and
              logins == 1,
              "info through ssh: a --stdio server without --dll describes the DLL named by "
              "path (%d login, %.2f s)" % (logins, r.seconds), r.all)
        before = sshd.accepted()
        r = run([cli, "doctor"], dict(env, MQD_PROXY_DLL=l3))
        time.sleep(0.3)
        logins = sshd.accepted() - before
        check(r.returncode == 0 and "authentication: by ssh" in r.stdout and
              "all checks passed" in r.stdout and logins == 1,
              "doctor through ssh (%d login, %.2f s)" % (logins, r.seconds), r.all)
        r = run([cli, "doctor"], env)
        check(r.returncode == 1 and "set MQD_PROXY_DLL" in r.stdout,
              "doctor through ssh without a DLL says to name one", r.all)
        r = run([cli, "stats"], env)
        check(r.returncode == 0 and "session(s) on ssh://" in r.stdout, "stats through ssh",
              r.all)

        # A whole debugger session through the shim over ssh, every answer checked against
        # a native load of the same DLL.
        r = run([dump_client, "--dumps", "5", "--ops", "40"], dict(env, MQD_PROXY_DLL=l3))
        result = last_json(r)
        check(r.returncode == 0 and result.get("ok") == 5 and result.get("wrong") == 0,
              "shim session through ssh: 5 dumps identical to the native DLL's", r.all)

        # A crash of the vendor DLL on the remote side: the --stdio server is gone with the
        # connection, and tells the shim how its worker ended on ssh's stderr.
        r = run([dump_client, "--dumps", "3", "--ops", "10", "--crash-at", "1",
                 "--allow-errors"], dict(env, MQD_PROXY_DLL=l3))
        result = last_json(r)
        died = str(MQD_PROXY_ERR_WORKER_DIED)
        check(r.returncode == 0 and result.get("ok") == 2 and result.get("wrong") == 0 and
              result.get("error_codes") == {died: 1} and "killed by SIGSEGV" in r.stderr and
              "libmqd_testdll_l3.so" in r.stderr,
              "a DLL crash over ssh: MQD_PROXY_ERR_WORKER_DIED naming signal and DLL, then "
              "the next dump whole", r.all)

        # MQD_PROXY_LOG=trace: each mqs_* call with its duration and callbacks, and the
        # session's one-line summary at the end, into MQD_PROXY_LOG_FILE.
        log = os.path.join(work, "shim.log")
        r = run([dump_client, "--dumps", "1", "--ops", "5"],
                dict(env, MQD_PROXY_DLL=l3, MQD_PROXY_LOG="trace", MQD_PROXY_LOG_FILE=log))
        text = open(log).read() if os.path.exists(log) else ""
        traced = [l for l in text.splitlines() if " trace: mqs_" in l]
        check(r.returncode == 0 and
              any("mqs_update_communicator_list -> 0 in" in l and "forwarded" in l
                  for l in traced) and
              any("mqs_next_operation ->" in l and "answered in the shim" in l
                  for l in traced) and
              "session summary:" in text and "round trips" in text,
              "trace log: %d calls with durations and callbacks, and the session summary"
              % len(traced), r.all + text[-2000:])

        # The --dll allow-list still applies when the remote side is given one.
        r = run([cli, "info"], dict(env, MQD_PROXY_DLL="/lib/x86_64-linux-gnu/libc.so.6",
                                    MQD_PROXY_SERVER=url))
        check(r.returncode == 1, "info with a DLL that is no MQD DLL fails", r.all)

        # ssh's own options pass through: a jump host (here the same sshd) means two logins.
        before = sshd.accepted()
        jump = "%s -J %s@127.0.0.1:%d" % (sshd.options, sshd.user, sshd.port)
        r = run([cli, "ping", "--count", "1"],
                {"MQD_PROXY_SERVER": "ssh://%s@localhost:%d%s" % (sshd.user, sshd.port,
                                                                   server_bin),
                 "MQD_PROXY_SSH_OPTIONS": jump})
        time.sleep(0.5)
        check(r.returncode == 0 and sshd.accepted() - before == 2,
              "a jump host in MQD_PROXY_SSH_OPTIONS is used (%d logins)"
              % (sshd.accepted() - before), r.all)

        # Connection reuse (docs/configuration.md, "ssh:// servers"): ssh's ControlMaster through
        # MQD_PROXY_SSH_OPTIONS. The first connection leaves a master behind (ControlPersist),
        # the later ones ride on it: one login for all of them. None may hang on the master,
        # which outlives the ssh the shim started.
        control = os.path.join(work, "cm-%C")
        reuse = dict(env, MQD_PROXY_SSH_OPTIONS="%s -o ControlMaster=auto -o ControlPath=%s "
                     "-o ControlPersist=60" % (sshd.options, control))
        before = sshd.accepted()
        pings = [run([cli, "ping", "--count", "1"], reuse, timeout=60) for _ in range(3)]
        r = run([dump_client, "--dumps", "2", "--ops", "10"], dict(reuse, MQD_PROXY_DLL=l3),
                timeout=60)
        result = last_json(r)
        time.sleep(0.5)
        logins = sshd.accepted() - before
        check(all(p.returncode == 0 for p in pings) and result.get("ok") == 2 and logins == 1,
              "ControlMaster: 3 pings and a shim session over %d login (%s s, then the session "
              "%.2f s)" % (logins, ", ".join("%.2f" % p.seconds for p in pings), r.seconds),
              "".join(p.all for p in pings) + r.all)
        subprocess.run(["ssh"] + sshd.options.split() +
                       ["-o", "ControlPath=" + control, "-O", "exit", "-p", str(sshd.port),
                        "%s@127.0.0.1" % sshd.user],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)

        # Failures are explained, promptly.
        r = run([cli, "ping"], dict(env, MQD_PROXY_SSH_OPTIONS=sshd.options_with(sshd.wrong_key)))
        check(r.returncode == 1 and "Permission denied" in r.stderr and r.seconds < 20,
              "a key the server does not accept: ssh's reason, in %.1f s" % r.seconds, r.all)
        r = run([cli, "ping"], dict(env, MQD_PROXY_SERVER=sshd.url("/nonexistent/mqd-proxy-server")))
        check(r.returncode == 1 and "No such file or directory" in r.stderr,
              "no server program at the path: the remote shell's reason", r.all)
        r = run([cli, "ping"], dict(env, MQD_PROXY_SSH="/nonexistent/ssh"))
        check(r.returncode == 1 and "cannot start ssh: /nonexistent/ssh: No such file" in r.stderr,
              "no ssh program: said so", r.all)
        r = run([cli, "ping"], dict(env, MQD_PROXY_SERVER="ssh://%s@127.0.0.1:1%s" % (
            sshd.user, server_bin)))
        check(r.returncode == 1 and "Connection refused" in r.stderr,
              "nothing listening at the port: ssh's reason", r.all)
        r = run([cli, "ping"], dict(env, MQD_PROXY_SERVER="ssh://-oProxyCommand=x"))
        check(r.returncode == 1 and "invalid host" in r.stderr,
              "an option smuggled in as a host is refused before ssh runs", r.all)

        # No --stdio server outlives its connection.
        deadline = time.time() + 10
        while stdio_servers(server_bin) and time.time() < deadline:
            time.sleep(0.2)
        left = stdio_servers(server_bin)
        check(not left, "no mqd-proxy-server --stdio left running", " ".join(left))
    finally:
        sshd.stop()
    return finish(work, "ssh")


if __name__ == "__main__":
    sys.exit(main())
