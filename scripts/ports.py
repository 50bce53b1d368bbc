"""A free TCP port on 127.0.0.1 for a server started a moment later: the tests' servers, the
throwaway PostgreSQL (scripts/pg_cluster.py) and the tiny model (scripts/tiny_model.py)."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def free_port(count: int = 1) -> int:
    """A TCP port P on 127.0.0.1 with P..P+count-1 free (at the time asked: for servers started
    later, and for "unreachable" URLs), below the range the system hands out to outgoing
    connections. A port from inside it (bind to port 0) was sometimes taken again by some client's
    connection before the server bound it (CI: "The server did not start on ...: is the port
    taken?")."""
    rng, low = random.Random(), 20_000
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):  # (not Linux)
        ephemeral = 60_000
    high = ephemeral if ephemeral - low > 1_000 + count else 60_000
    while True:
        first = rng.randrange(low, high - count)
        try:
            for port in range(first, first + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
