"""Small helpers shared by the tests: driving runs, free ports, recorded sleeps."""

from __future__ import annotations

import os
import ssl
import time
import urllib.request
from collections.abc import Iterator
from contextlib import aclosing, contextmanager
from pathlib import Path

from scripts.ports import free_port  # noqa: F401  (the tests' servers take their ports from it)


async def collect(gen, stop_after=None):
    """All events of a run; with ``stop_after``, stop listening the way the UI's Stop button
    does (closing the generator)."""
    events = []
    async with aclosing(gen):
        async for e in gen:
            events.append(e)
            if stop_after and stop_after(events):
                break
    return events


def answers(url: str, timeout: float = 2) -> bool:
    """Whether GET ``url`` (plain HTTP) answers 200 now: a poll for a server that starts. Through
    urllib: ``httpx.get`` makes a client for each call, and with it a TLS context that loads the
    certificate bundle (about 40 ms of CPU), on every poll of every wait."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status == 200
    except OSError:  # (not listening yet, refused, an HTTP error status, a timeout)
        return False


def wait_until(holds, seconds: float = 20) -> None:
    """Poll ``holds()`` every 0.1 s until it is true; fails after ``seconds`` (a bound, never a
    measurement)."""
    deadline = time.monotonic() + seconds
    while not holds():
        assert time.monotonic() < deadline, "still not so after the timeout"
        time.sleep(0.1)


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, its threads included) process ``pid`` has used, from /proc
    (Linux); 0 where there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot, every core, from /proc/stat (Linux)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


class Sleeps(list):
    """An injectable ``sleep`` that records the waits (in seconds) instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@contextmanager
def bundles_loaded() -> Iterator[list[str]]:
    """The certificate bundles loaded into TLS contexts inside the block (every default context
    loads one: core/tls.py makes each kind once), as a list that grows while it runs."""
    seen: list[str] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self, cafile=None, capath=None, cadata=None):
        seen.append(str(cafile or capath or "data"))
        return load(self, cafile, capath, cadata)

    ssl.SSLContext.load_verify_locations = counted
    try:
        yield seen
    finally:
        ssl.SSLContext.load_verify_locations = load
