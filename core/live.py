"""Runs that belong to the server, not to a browser's request.

``LiveRuns`` drives each run in a task of its own on the server's event loop; a browser only
*follows* it: ``start`` and ``resume`` launch a run and follow it, ``follow`` joins one that is
going on and gets what it did so far, then each event as it happens. A follower that goes away
(a reload, a closed tab, a lost connection) ends its own following and nothing else: the run
goes on, and the next follower picks it up where it is. ``stop`` stops the run itself (the
runner stores it as interrupted, resumable); ``stop_all`` does so for every run when the server
goes down.

At most ``limit`` runs go at once (``--concurrency``); a run launched beyond that waits in line,
and its followers get ``Queued`` (never stored) until it starts.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime

from common.errors import RatStudioError
from common.events import Event, Failed, RunStarted
from common.settings import Settings
from common.types import RunStatus, Task

_END = object()  # put in a follower's queue when the run's task has ended


@dataclass(frozen=True)
class Queued:
    """Not an event of the run (never stored): the run waits for one of the ``limit`` places,
    with ``ahead`` runs waiting before it; ``ticket`` names it for ``LiveRuns.stop_launched``."""

    ahead: int
    limit: int
    ticket: int = 0
    persist: bool = False


@dataclass(frozen=True)
class CaughtUp:
    """Not an event of the run (never stored): a follower was given what the run did before it
    joined (a resumed or redone run's stored events, or a late joiner's), and what comes next
    happens live. Given as a ``Timed`` when following ``timed``: a page folds what came before it
    into one rendering, not one per event."""


@dataclass(frozen=True)
class Timed:
    """An item of a followed run with ``at``, when it happened (epoch seconds; None: not known),
    as ``LiveRuns.follow(..., timed=True)`` gives them: a follower that joins late times the run
    and its steps from these, not from when it was shown them. ``more``: others were already
    waiting (the follower fell behind the run): a follower that shows the run may show them all
    at once, so that under load its batches grow rather than its backlog."""

    item: Event | Queued | CaughtUp
    at: float | None
    more: bool = False  # more of the run's items were waiting for this follower as it was given this one


@dataclass(eq=False)
class _Live:
    ticket: int
    run_id: str = ""
    history: list = field(default_factory=list)  # what a new follower is shown first
    stamps: list = field(default_factory=list)  # when each of ``history`` happened (None: not known)
    followers: set = field(default_factory=set)  # one asyncio.Queue per follower
    task: asyncio.Task | None = None
    error: Exception | None = None  # what kept the run from starting (raised to its followers)
    ended: bool = False  # its followers were told the end

    def publish(self, item, *, keep: bool = True) -> None:
        at = time.time()
        if keep and item is not _END:
            self.history.append(item)
            self.stamps.append(at)
        for queue in self.followers:
            queue.put_nowait((item, at))


class LiveRuns:
    """The runs this server drives, through ``runner`` (``core.runner.Runner``), at most
    ``limit`` at once."""

    def __init__(self, runner, *, limit: int = 4) -> None:
        self.runner = runner
        self.limit = max(1, int(limit))
        self._runs: dict[str, _Live] = {}  # run id -> the live run driving it
        self._line: list[_Live] = []  # launched, waiting for a place, in order
        self._tickets = itertools.count(1)
        self._places: asyncio.Semaphore | None = None  # made on the loop that first needs it

    # -- launching ----------------------------------------------------------------------------
    def start(self, method: str, task: Task, *, draft_only: bool = False, providers: Sequence[str] | None = None,
              settings: Settings | None = None, timed: bool = False) -> AsyncIterator[Event | Queued | Timed]:
        """Launch a run (``Runner.start``, with the run's own ``settings`` when given) and follow
        it. Following raises what the runner raises before the run exists (TaskError,
        ConfigError); closing it leaves the run going. ``timed``: each event as a ``Timed``, with when
        it happened (as :meth:`follow` gives it: every follower of a run sees the same times, so their
        elapsed times agree)."""
        live = self._launch(lambda: self.runner.start(method, task, draft_only=draft_only, providers=providers,
                                                      settings=settings))
        return self._follow(live, timed=timed)

    def resume(self, run_id: str, *, draft: list[str] | None = None, providers: Sequence[str] | None = None,
               budget_tokens: int | None = None, timed: bool = False) -> AsyncIterator[Event | Queued | Timed]:
        """Launch the continuation of a stored run (``Runner.resume``, with a new ``budget_tokens``
        when given) and follow it, from the run's stored events on (``timed``: as :meth:`start`).
        Raises (when followed) what ``Runner.resume`` raises."""
        live = self._launch(lambda: self.runner.resume(run_id, draft=draft, providers=providers,
                                                       budget_tokens=budget_tokens),
                            prior=self._stored(run_id))
        return self._follow(live, timed=timed)

    def redo(self, run_id: str, i: int, *, action: str, query: str = "", exclude: Sequence[str] = (),
             instruction: str = "", timed: bool = False) -> AsyncIterator[Event | Queued | Timed]:
        """Launch the redo of step ``i`` of a stored run (``Runner.redo``) and follow it, from the
        run's stored events on (``timed``: as :meth:`start`). Raises (when followed) what
        ``Runner.redo`` raises."""
        live = self._launch(lambda: self.runner.redo(run_id, i, action=action, query=query, exclude=exclude,
                                                     instruction=instruction),
                            prior=self._stored(run_id))
        return self._follow(live, timed=timed)

    def _stored(self, run_id: str) -> tuple[list[Event], list[float | None]]:
        """The run's stored events and when each was stored (None where that is not known)."""
        events, stamps = [], []
        for event, ts in self.runner.store.timed_events(run_id):
            events.append(event)
            try:
                stamps.append(datetime.fromisoformat(ts).timestamp())
            except (TypeError, ValueError):
                stamps.append(None)
        return events, stamps

    def _launch(self, events: Callable[[], AsyncIterator[Event]], *,
                prior: tuple[list[Event], list[float | None]] | None = None) -> _Live:
        history, stamps = prior or ([], [])
        live = _Live(ticket=next(self._tickets), history=list(history), stamps=list(stamps))
        self._line.append(live)
        live.task = asyncio.get_running_loop().create_task(self._drive(live, events))
        # the end is told when the task is done, however it ends: a run stopped while it waited
        # may be cancelled before its first step, when no ``finally`` of it runs
        live.task.add_done_callback(lambda _: self._ended(live))
        return live

    async def _drive(self, live: _Live, events: Callable[[], AsyncIterator[Event]]) -> None:
        places = self._places or asyncio.Semaphore(self.limit)
        self._places = places
        try:
            self._tell_line()
            async with places:
                self._line.remove(live)
                self._tell_line()
                async with aclosing(events()) as stream:
                    async for event in stream:
                        if isinstance(event, RunStarted) and not live.run_id:
                            live.run_id = event.run_id
                            self._runs[live.run_id] = live
                        live.publish(event)
        except Exception as exc:  # raised to the followers when the run never started; else shown as Failed
            if not live.run_id:
                live.error = exc
            else:  # the runner could not even store its failure (the disk, the database): say so all the same
                live.publish(Failed(error=f"The run stopped: {exc}", resumable=True, error_type=type(exc).__name__))
                self._mark_interrupted(live.run_id, exc)
        finally:
            self._ended(live)

    def _ended(self, live: _Live) -> None:
        """The run's task is over: out of the line and the live runs, and its followers told
        (once; called by the task's end and by its done callback)."""
        if live.ended:
            return
        live.ended = True
        if live in self._line:
            self._line.remove(live)
            self._tell_line()
        self._runs.pop(live.run_id, None)
        live.publish(_END)

    def _mark_interrupted(self, run_id: str, exc: Exception) -> None:
        """Best effort for a run whose failure could not be stored: its row says interrupted
        (resumable) now, not ``running`` until its heartbeat goes stale. An update in place may
        fit where a new event did not (a full disk); when it does not either, the staleness
        check (``Store.interrupt_orphans``) is left to find it."""
        try:
            self.runner.store.update_run(run_id, status=RunStatus.INTERRUPTED,
                                         error=f"The run stopped: {exc} Continue it from where it stopped.")
        except RatStudioError:
            pass

    def _tell_line(self) -> None:
        if self._places is not None and not self._places.locked():
            return
        for ahead, waiting in enumerate(self._line):
            waiting.publish(Queued(ahead=ahead, limit=self.limit, ticket=waiting.ticket), keep=False)

    # -- following ----------------------------------------------------------------------------
    def running(self) -> list[str]:
        """The ids of the runs going on now, the oldest first."""
        return [run_id for run_id, _ in sorted(self._runs.items(), key=lambda kv: kv[1].ticket)]

    def is_live(self, run_id: str) -> bool:
        return run_id in self._runs

    def follow(self, run_id: str, *, timed: bool = False) -> AsyncIterator[Event | Queued | Timed]:
        """Join a run going on: its events so far (a resumed run's stored ones first), then
        each as it happens, until it ends; ``timed``: each as a ``Timed``, with when it happened.
        Nothing when it is not live."""
        live = self._runs.get(run_id)
        return self._follow(live, timed=timed) if live is not None else _nothing()

    async def _follow(self, live: _Live, *, timed: bool = False) -> AsyncIterator[Event | Queued | Timed]:
        queue: asyncio.Queue = asyncio.Queue()
        # taken as the queue joins: on one loop, nothing comes in between
        seen = list(zip(live.history, live.stamps, strict=True))
        ended = live.task is None or live.task.done()
        live.followers.add(queue)
        try:
            if live in self._line and self._places is not None and self._places.locked():
                queued = Queued(ahead=self._line.index(live), limit=self.limit, ticket=live.ticket)
                yield Timed(queued, time.time()) if timed else queued
            for item, at in seen:
                yield Timed(item, at) if timed else item
            if timed:
                yield Timed(CaughtUp(), time.time())
            while not ended:
                item, at = await queue.get()
                if item is _END:
                    break
                yield Timed(item, at, more=not queue.empty()) if timed else item
            if live.error is not None:
                raise live.error
        finally:
            live.followers.discard(queue)

    # -- stopping -----------------------------------------------------------------------------
    def stop(self, run_id: str) -> bool:
        """Stop a live run (the runner stores it as interrupted); False when it is not live."""
        live = self._runs.get(run_id)
        if live is None or live.task is None:
            return False
        live.task.cancel()
        return True

    def stop_launched(self, ticket: int) -> str | None:
        """Stop the run launched under ``ticket`` (a ``Queued``'s): one that waits for a place
        leaves the line and never starts (nothing is stored; returns ""), one that has started
        since is stopped as :meth:`stop` does (returns its id). None when it is over or unknown."""
        for live in (*self._line, *self._runs.values()):
            if live.ticket == ticket and live.task is not None and not live.task.done():
                live.task.cancel()
                return live.run_id
        return None

    async def stop_all(self) -> None:
        """Stop every run, going or waiting (the server is going down), and wait until each is
        stored as interrupted."""
        tasks = [live.task for live in {*self._runs.values(), *self._line} if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _nothing() -> AsyncIterator[Event | Queued]:
    return
    yield  # an async generator that ends at once
