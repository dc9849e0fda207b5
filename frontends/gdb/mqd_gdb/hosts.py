"""Host names as the launcher's process table and Slurm give them: whether one names the
machine gdb runs on (its host name or fully qualified name, compared whole or by their first
label, as launchers write either)."""
from __future__ import annotations

import socket
from typing import Optional


def is_this_host(host: Optional[str]) -> bool:
    """True when `host` names the machine gdb runs on (none, "" and localhost do)."""
    if host is None or host in ("", "localhost"):
        return True
    names = {socket.gethostname(), socket.getfqdn()}
    return host in names or host.split(".")[0] in {n.split(".")[0] for n in names}
