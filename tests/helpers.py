"""Small helpers for tests that drive runs."""

from __future__ import annotations

from contextlib import aclosing


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


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]
