"""free_port(): a TCP port on 127.0.0.1 that nothing listens on right now, for a test's own
listener (a server, sshd, a socket handed over by systemd's tool). Another process may take it
before the test does; on a test machine that is rare enough."""
import socket


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
