"""How fast annotators may vote (``VoteLimits``): a cap a minute per annotator and per client
address, and one a day per annotator, so that a script or a hurried annotator cannot flood the
leaderboard. Kept apart from ``annotation.voting.arena`` so the limits read in one place; the
arena counts the day's cap and holds the database's lock for the count (``lock_keys``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

from annotation.errors import ArenaError


class VoteLimits:
    """At most ``per_annotator`` votes a minute from one annotator and ``per_address`` from one
    client address (a script casting votes under many names still comes from one address; 0: no
    limit by address, for a lab behind one NAT), and ``per_day`` votes a day from one annotator
    (0: no cap; ``Arena.vote`` counts the day's stored votes). Counted here, or (``stored``) from
    the votes the database holds, so the limits hold across every process on it. Thread-safe;
    the clock (seconds since the epoch) is injectable for tests."""

    def __init__(self, per_annotator: int = 10, per_address: int = 60, window: float = 60.0,
                 clock: Callable[[], float] = time.time, per_day: int = 0):
        self.limits = {"annotator": per_annotator, "address": per_address}
        self.per_day = per_day
        self.window = window
        self.clock = clock
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def keys(self, annotator: str, address: str | None) -> list[tuple[str, str]]:
        """What a vote counts against: its annotator, and its address where that has a limit."""
        by_address = address and self.limits["address"] > 0
        return [("annotator", annotator)] + ([("address", address)] if by_address else [])

    def lock_keys(self, annotator: str, address: str | None) -> list[str]:
        """``keys`` as the keys of a write transaction (``Store.exclusive``)."""
        return [f"{kind}:{key}" for kind, key in self.keys(annotator, address)]

    def take(self, annotator: str, address: str | None,
             stored: Callable[[str, str, float], list[float]] | None = None) -> None:
        """Count one vote. ``stored(kind, key, since)``: the times of the stored votes of that
        annotator or address since ``since``; the vote counts once it is stored (the caller stores
        it in the same transaction). Raises ArenaError saying how long to wait when a limit is
        reached."""
        now = self.clock()
        keys = self.keys(annotator, address)
        # (counted from the database: the caller's transaction holds these keys, ``lock_keys``)
        with self._lock if stored is None else contextlib.nullcontext():
            for kind, key in keys:
                if stored is not None:
                    times = deque(stored(kind, key, now - self.window))
                else:
                    times = self._seen.setdefault((kind, key), deque())
                    while times and now - times[0] >= self.window:
                        times.popleft()
                if len(times) >= self.limits[kind]:
                    wait = self.window - (now - times[0]) if times else self.window
                    raise ArenaError(f"Too many votes from this {kind} in a minute (the limit is "
                                     f"{self.limits[kind]}): read both answers, then vote again in {wait:.0f} s.")
            if stored is None:
                for kind, key in keys:
                    self._seen[(kind, key)].append(now)
