"""scripts/ports.py: the port a server is started on a moment later is picked below the range the
system hands out to outgoing connections (one from inside it was taken by a client's connection
before the server bound it, in CI), and a block of ports is free as a whole."""

from __future__ import annotations

import socket
from pathlib import Path

from scripts import ports
from scripts.ports import free_port


def test_ports_come_from_below_the_outgoing_range_and_a_block_is_free():
    start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(50):
        first = free_port(3)
        assert 20_000 <= first and first + 3 <= start, (first, start)
        socks = [socket.socket() for _ in range(3)]
        try:
            for i, sock in enumerate(socks):
                sock.bind(("127.0.0.1", first + i))  # (raises if one of the block was taken)
        finally:
            for sock in socks:
                sock.close()


def test_a_taken_port_is_never_given(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        picks = iter([port, port, port + 100])  # the first two tries land on the taken port

        class Fixed:
            def randrange(self, low, high):
                return next(picks)

        monkeypatch.setattr(ports.random, "Random", Fixed)
        assert free_port() == port + 100
