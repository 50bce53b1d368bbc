"""Which sources an article used, and where: built from the events of a run, so a resumed or
replayed run numbers its sources exactly as the live one did.

Methods keep no book: the runner keeps one per run (from the run's stored events, then each new
one) and fills ``Final.sources`` from it (:meth:`SourceBook.sourced`). A step's sources are the
URLs its ``StepRevised`` says it was shown, or those of a ``SourcesUsed`` (a method that uses
passages without revising a step); a source's title is the first one a ``PageRead`` or a
``PassagesChosen`` gave for its URL. A step whose last ``StepRevised`` was not checked against
retrieved text (kept as drafted, or its revision refused) is listed in ``Final.unchecked``. A
new ``DraftReady`` (an edited draft) starts the book over: the old revisions are gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from common.events import DraftReady, Event, Final, PageRead, PassagesChosen, SourcesUsed, StepRevised
from common.types import Source


class SourceBook:
    """Numbers sources in the order they were first used."""

    def __init__(self) -> None:
        self._titles: dict[str, str] = {}
        self._steps: dict[str, list[int]] = {}
        self._unchecked: dict[int, str] = {}

    def see(self, event: Event) -> None:
        if isinstance(event, PageRead) and event.title:
            self._titles.setdefault(event.url, event.title)
        elif isinstance(event, PassagesChosen):
            for p in event.passages:
                if p.title:
                    self._titles.setdefault(p.url, p.title)
        elif isinstance(event, DraftReady):
            self._steps, self._unchecked = {}, {}
        elif isinstance(event, StepRevised):
            self.use(event.i, event.sources)
            if event.checked:
                self._unchecked.pop(event.i, None)
            else:
                self._unchecked[event.i] = unchecked_reason(event)
        elif isinstance(event, SourcesUsed):
            self.use(event.i, event.urls)

    def use(self, step: int, urls: Iterable[str]) -> None:
        for url in urls:
            steps = self._steps.setdefault(url, [])
            if step not in steps:
                steps.append(step)

    def sources(self) -> tuple[Source, ...]:
        return tuple(
            Source(n=n, url=url, title=self._titles.get(url, url), steps=tuple(sorted(steps)))
            for n, (url, steps) in enumerate(self._steps.items(), start=1)
        )

    def unchecked(self) -> tuple[str, ...]:
        return tuple(f"step {i}: {why}" for i, why in sorted(self._unchecked.items()))

    def sourced(self, event: Event) -> Event:
        """See ``event`` and return it as the runner passes it on: a ``Final`` with the
        sources used so far and the steps left unchecked, any other event as it is."""
        self.see(event)
        if isinstance(event, Final):
            return replace(event, sources=self.sources(), unchecked=self.unchecked())
        return event

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> SourceBook:
        book = cls()
        for e in events:
            book.see(e)
        return book


def unchecked_reason(rev: StepRevised) -> str:
    """Why a step's text was not checked against retrieved text, in a few words."""
    if rev.guarded:
        return f"the model's revision was refused (it {rev.guarded}); kept as it stood"
    if rev.skipped:
        return rev.skipped
    return "revised without retrieved text"
