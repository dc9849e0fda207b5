"""A throwaway OpenSSH server on loopback, for tests of ssh:// endpoints (tests/cli/test_ssh.py,
the ssh:// dump of tests/e2e/e2e_openmpi.py).

Sshd(workdir) generates a host key and a user key, authorizes the user key for the current
user, and runs Debian's /usr/sbin/sshd in the foreground on a free 127.0.0.1 port. `options`
is what MQD_PROXY_SSH_OPTIONS needs to use it (the key, and no host-key prompts or warnings).
stop() ends it. Raises RuntimeError with what to do when sshd is missing, a Failure (and
leaves nothing running) when it does not start.
"""
import getpass
import os
import socket
import subprocess

from daemon import start_daemon
from ports import free_port

SSHD = "/usr/sbin/sshd"


class Sshd:
    def __init__(self, workdir):
        if not os.path.exists(SSHD):
            raise RuntimeError("%s is missing: install openssh-server "
                               "(tools/install-deps.sh --test does)" % SSHD)
        self.dir = os.path.join(workdir, "sshd")
        os.makedirs(self.dir, exist_ok=True)
        self.host_key = os.path.join(self.dir, "host_key")
        self.user_key = os.path.join(self.dir, "user_key")
        self.wrong_key = os.path.join(self.dir, "wrong_key")
        for key in (self.host_key, self.user_key, self.wrong_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key],
                           check=True)
        authorized = os.path.join(self.dir, "authorized_keys")
        with open(self.user_key + ".pub") as src, open(authorized, "w") as dst:
            dst.write(src.read())
        os.chmod(authorized, 0o600)
        self.port = free_port()
        self.user = getpass.getuser()
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write("\n".join([
                "Port %d" % self.port,
                "ListenAddress 127.0.0.1",
                "HostKey " + self.host_key,
                "AuthorizedKeysFile " + authorized,
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                "PidFile none",
                # Keep the environment of the test (PATH, LD_LIBRARY_PATH are not passed by
                # ssh anyway; the server is named by absolute path).
                "PermitUserEnvironment no",
                ""]))
        # sshd wants its privilege-separation directory even when it runs as the user.
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.log = os.path.join(self.dir, "sshd.log")
        self.proc = start_daemon([SSHD, "-D", "-f", config, "-E", self.log],
                                 self._listening, "sshd on port %d" % self.port,
                                 log=self.log)
        self.options = self.options_with(self.user_key)

    def _listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def options_with(self, key):
        """MQD_PROXY_SSH_OPTIONS for this server with `key`: an ssh configuration file (-F),
        which ssh also hands to the connections it makes for -J jump hosts."""
        path = os.path.join(self.dir, "client_config_" + os.path.basename(key))
        with open(path, "w") as f:
            f.write("Host *\n  IdentityFile %s\n  IdentitiesOnly yes\n"
                    "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                    "  LogLevel ERROR\n" % key)
        return "-F " + path

    def accepted(self):
        """How many logins sshd has accepted so far."""
        return self.log_text(whole=True).count("Accepted publickey")

    def url(self, server_path):
        return "ssh://%s@127.0.0.1:%d%s" % (self.user, self.port, server_path)

    def log_text(self, whole=False):
        try:
            text = open(self.log).read()
            return text if whole else text[-2000:]
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
