"""Which sources an article used, and where: built from the events of a run, so a resumed or
replayed run numbers its sources exactly as the live one did.

Methods keep no book: the runner keeps one per run (from the run's stored events, then each new
one) and fills ``Final.sources`` from it (:meth:`SourceBook.sourced`). A step's sources are the
URLs its ``StepRevised`` says it was shown, or those of a ``SourcesUsed`` (a method that uses
passages without revising a step); a source's title is the first one a ``PageRead`` or a
``PassagesChosen`` gave for its URL. A step whose last ``StepRevised`` was not checked against
retrieved text (kept as drafted, or its revision refused) is listed in ``Final.unchecked``,
unless the step left the whole text exactly as it stood (ITRG's round with nothing new, AAG's
refused edit): that text keeps the checks it had. A step checked against retrieved text that
was given the whole text and rewrote it (ITRG, AAG) clears the list. A new ``DraftReady`` (an
edited draft) starts the book over: the old revisions are gone.

One numbering per article: a source gets its number when a step first uses it, and
:meth:`SourceBook.numbers` gives the numbers so far to the methods (``MethodContext.numbers``),
which label a prompt's passages with them (``core.text.fencing.format_passages``): a new source is
labelled with the number it will get, so a label the model copies is the source's own number.
``Final.cited`` marks each sentence with its sources (``core.article.citations``). ``Final.cut`` says the
text ends where an answer the token limit cut short ended (``LLMCalled.cut_ending``): whatever
the method did with that answer, the text's end is missing.

A source whose page was never read (only its search snippet was used) is flagged ``read=False``
with the reason the page could not be read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from common.events import (
    DraftReady,
    Event,
    Final,
    LLMCalled,
    PageRead,
    PassagesChosen,
    SourcesUsed,
    StepRevised,
    renumbered,
)
from common.types import Source
from core.article.citations import CITE_THRESHOLD, cite, evidence, shown_labels


class SourceBook:
    """Numbers sources in the order they were first used. ``threshold``: the share of a
    sentence's words a passage must hold to be cited for it (``core.article.citations``)."""

    def __init__(self, threshold: float = CITE_THRESHOLD) -> None:
        self.threshold = threshold
        self._titles: dict[str, str] = {}
        self._steps: dict[str, list[int]] = {}
        self._revised: dict[int, StepRevised] = {}  # each step's last revision (since the last draft)
        self._read: set[str] = set()  # URLs of which a passage of the page itself was chosen
        self._failed: dict[str, str] = {}  # URL -> why its page could not be read
        self._events: list[Event] = []  # what citations are computed from (since the last draft)
        self._cut_endings: set[str] = set()  # the endings of answers the token limit cut short
        #: each step's labels as its prompt showed them (``core.article.citations.shown_labels``),
        #: when not read from this book's own events: a book made of each step's latest revision
        #: only (a step done again) lacks the earlier revisions that numbered the later prompts
        self.labels: dict[int, dict[str, int]] | None = None

    def see(self, event: Event) -> None:
        if isinstance(event, LLMCalled):
            if event.cut_ending:
                self._cut_endings.add(event.cut_ending)
        elif isinstance(event, PageRead):
            if event.title:
                self._titles.setdefault(event.url, event.title)
            if event.status != "ok":
                self._failed[event.url] = event.error or "the page could not be read"
        elif isinstance(event, PassagesChosen):
            self._events.append(event)
            for p in event.passages:
                if p.title:
                    self._titles.setdefault(p.url, p.title)
                if not p.snippet:
                    self._read.add(p.url)
        elif isinstance(event, DraftReady):
            self._steps, self._revised, self._events = {}, {}, [event]
        elif isinstance(event, StepRevised):
            self._events.append(event)
            self.use(event.i, event.sources)
            self._revised[event.i] = event
        elif isinstance(event, SourcesUsed):
            self._events.append(event)
            self.use(event.i, event.urls)

    def use(self, step: int, urls: Iterable[str]) -> None:
        for url in urls:
            steps = self._steps.setdefault(url, [])
            if step not in steps:
                steps.append(step)

    def numbers(self) -> dict[str, int]:
        """Each used source's URL and its number, in order of first use."""
        return {url: n for n, url in enumerate(self._steps, start=1)}

    def sources(self) -> tuple[Source, ...]:
        return tuple(
            Source(n=n, url=url, title=self._titles.get(url, url), steps=tuple(sorted(steps)),
                   read=url in self._read, why="" if url in self._read else self._why(url))
            for n, (url, steps) in enumerate(self._steps.items(), start=1)
        )

    def _why(self, url: str) -> str:
        return self._failed.get(url, "the page was not fetched")

    def cited(self, text: str, *, undone: Iterable[int] = (), taken: Iterable[int] = ()):
        """``text`` with its citations (a ``core.article.citations.Cited``), from the evidence of the
        run's steps (``undone`` and ``taken``: as the author edited the article)."""
        steps = evidence(self._events, undone=undone, taken=taken)
        shown = self.labels if self.labels is not None else shown_labels(self._events)
        for step in steps:
            step.labels = shown.get(step.i)
        return cite(text, steps, self.numbers(), threshold=self.threshold)

    def ends_cut(self, text: str) -> bool:
        """Whether ``text`` ends as an answer the token limit cut short ended (its end is missing)."""
        end = _collapsed(text)
        return any(end.endswith(ending) for ending in self._cut_endings)

    def unchecked(self) -> tuple[str, ...]:
        return unchecked_lines([rev for _, rev in sorted(self._revised.items())])

    def sourced(self, event: Event) -> Event:
        """See ``event`` and return it as the runner passes it on: a ``Final`` with the
        sources used so far and the steps left unchecked, any other event as it is."""
        self.see(event)
        if isinstance(event, Final):
            cited = self.cited(event.text)
            return replace(event, sources=self.sources(), unchecked=self.unchecked(), cited=cited.text,
                           sentences=cited.sentences, supported=cited.supported, marks_removed=cited.removed,
                           cut=self.ends_cut(event.text))
        return event

    @classmethod
    def from_events(cls, events: Iterable[Event], threshold: float = CITE_THRESHOLD) -> SourceBook:
        """The book of a run's ``events``, their steps numbered as the run reads now (``renumbered``)."""
        book = cls(threshold)
        for e in renumbered(events):
            book.see(e)
        return book


CUT_ENDING_CHARS = 40  # of an answer cut at the token limit, what a text that ends with it must end with


def cut_ending(answer: str) -> str:
    """The last words of an answer the token limit cut short (whitespace collapsed), which
    ``SourceBook.ends_cut`` finds at the end of a text that kept that answer's end."""
    return _collapsed(answer)[-CUT_ENDING_CHARS:]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def unchecked_lines(revisions: Iterable[StepRevised], undone: Iterable[int] = (),
                    taken: Iterable[int] = ()) -> tuple[str, ...]:
    """One line per step whose text was never checked against retrieved text, from each step's
    last revision in order (``undone``: steps whose revision the author took back; ``taken``:
    steps whose refused revision the author used). A step that left the whole text exactly as it
    stood adds no line (its text keeps the checks it had), and a checked step that was given the
    whole text and rewrote it clears the lines before it (except the author's undos)."""
    undone, taken = set(undone), set(taken)
    lines: dict[int, str] = {}
    article = ""  # the whole text after the previous step
    for rev in revisions:
        whole = bool(article) and rev.before == article  # it was given the whole text as it stood
        if rev.i in undone:
            lines[rev.i] = "its revision was undone by the author"
        elif rev.checked or rev.i in taken:
            if whole and rev.after == rev.article:  # it rewrote all of it against retrieved text
                lines = {i: why for i, why in lines.items() if i in undone}
            lines.pop(rev.i, None)
        elif not (whole and rev.article == article):
            lines[rev.i] = unchecked_reason(rev)
        article = rev.article
    return tuple(f"step {i}: {why}" for i, why in sorted(lines.items()))


def unchecked_reason(rev: StepRevised) -> str:
    """Why a step's text was not checked against retrieved text, in a few words."""
    if rev.guarded:
        return f"the model's revision was refused (it {rev.guarded}); kept as it stood"
    if rev.skipped:
        return rev.skipped
    return "revised without retrieved text"
