"""Which sources an article used, and where: built from the events of a run, so a resumed or
replayed run numbers its sources exactly as the live one did."""

from __future__ import annotations

from collections.abc import Iterable

from common.events import Event, PageRead, PassagesChosen, StepRevised
from common.types import Source


class SourceBook:
    """Numbers sources in the order they were first used."""

    def __init__(self) -> None:
        self._titles: dict[str, str] = {}
        self._steps: dict[str, list[int]] = {}

    def see(self, event: Event) -> None:
        if isinstance(event, PageRead) and event.title:
            self._titles.setdefault(event.url, event.title)
        elif isinstance(event, PassagesChosen):
            for p in event.passages:
                if p.title:
                    self._titles.setdefault(p.url, p.title)
        elif isinstance(event, StepRevised):
            self.use(event.i, event.sources)

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

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> "SourceBook":
        book = cls()
        for e in events:
            book.see(e)
        return book
