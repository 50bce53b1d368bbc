"""An author's edits of a run's article: undoing a step's revision, taking a refused one, and
the article (text, sources, citations, unchecked steps) they leave.

Undoing a step's revision is offered when a run's revisions are revisions of its draft's steps,
told from the events (:attr:`Revisions.mode`):
  paragraph   (rat-step) each revision rewrote only its own step: revision i was given T_i.
              Undoing step i swaps that one paragraph back to T_i; the others keep theirs.
  cumulative  (rat, rat-noncausal, cot-rag) each revision rewrote the answer so far: revision i
              was given the article after step i-1 followed by T_i (CoT+RAG: by T_i..T_n),
              and every later revision was made on top of it. Undoing step i gives the
              article as it stood after step i-1, followed by the draft's steps i..n as
              drafted: steps i..n are all undone.
Other methods (ITRG's rounds, AAG's critic loop, FuRePA's evidence) emit StepRevised events that
are not revisions of draft steps; their article is edited by hand only.

A revision the guards refused (core.text.guards: empty, talk about the task, too much text lost)
left its step as it stood; in the two modes above the author can take it: in paragraph mode for
that paragraph alone, in cumulative mode as the answer up to that step, followed by the later
steps as drafted.

A step the author had done again (``common.events.StepRedone``: regenerated, searched again, a
source excluded) has a later revision that replaces its earlier one (:func:`latest_revisions`);
until the redo ends with a new Final the run has no final text to edit. A section the author added
(``common.events.ADD``) is a step of the draft from then on, numbered where it was put
(``common.events.renumbered``): undoing its revision leaves the author's line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from common.events import DraftReady, Event, Final, PassagesChosen, StepRedone, StepRevised, renumbered
from common.types import Passage, Source
from core.article.article import Article
from core.article.citations import CITE_THRESHOLD, Cited, shown_labels
from core.article.sources import SourceBook, unchecked_lines
from core.text.guards import strip_chatter
from core.text.prompts import join_steps, tidy_reply

PARAGRAPH, CUMULATIVE = "paragraph", "cumulative"  # the two ways revisions can be undone


@dataclass(frozen=True)
class Revisions:
    """What a run's events say of its article's steps: the last draft's ``steps``, each step's
    last revision since that draft (``revised``, by step), the passages each step was shown
    (``shown``), every stored event, and the run's ``final`` (None until it finishes)."""

    steps: tuple[str, ...] = ()
    drafted: bool = False
    revised: Mapping[int, StepRevised] = field(default_factory=dict)
    shown: Mapping[int, tuple[Passage, ...]] = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    final: Final | None = None

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> Revisions:
        steps, drafted, final = (), False, None
        revised: dict[int, StepRevised] = {}
        shown: dict[int, tuple[Passage, ...]] = {}
        kept = []
        for e in renumbered(events):  # a step the author added: numbered as the run reads now
            kept.append(e)
            if isinstance(e, DraftReady):  # an edited draft replaces the first: revision starts over
                steps, drafted, revised, shown, final = tuple(e.steps), True, {}, {}, None
            elif isinstance(e, StepRevised):
                revised[e.i] = e
            elif isinstance(e, PassagesChosen):
                shown[e.i] = e.passages
            elif isinstance(e, Final):
                final = e
            elif isinstance(e, StepRedone):  # the step is being done again: a new Final will come
                final = None
        return cls(steps=steps, drafted=drafted, revised=dict(sorted(revised.items())), shown=shown,
                   events=tuple(kept), final=final)

    @property
    def mode(self) -> str:
        """PARAGRAPH, CUMULATIVE, or "" when the revisions cannot be undone (see the module
        docstring); told from what each revision was given to revise."""
        if self.final is None or not self.drafted or not self.revised:
            return ""
        paragraph = cumulative = True
        before_i = ""  # the article after the previous revision
        for i, rev in self.revised.items():
            if not 1 <= i <= len(self.steps):
                return ""
            step = self.steps[i - 1].strip()
            paragraph = paragraph and rev.before.strip() == step
            given = rev.before.strip()  # step i alone, or (CoT+RAG) steps i..n at once
            cumulative = cumulative and given in (join_steps([before_i, step]),
                                                  join_steps([before_i, *self.steps[i - 1:]]))
            before_i = rev.article
        return PARAGRAPH if paragraph else CUMULATIVE if cumulative else ""

    def undoable(self) -> list[int]:
        """The steps whose revision can be undone: none without a ``mode``, and none for a
        revision that changed nothing."""
        if not self.mode:
            return []
        return [i for i, rev in self.revised.items() if not rev.skipped and rev.before != rev.after]

    def takeable(self) -> list[int]:
        """The steps whose revision the guards refused and the author may take by hand: none
        without a ``mode`` (the same rules say what taking it does to the steps after it)."""
        if not self.mode:
            return []
        return [i for i, rev in self.revised.items() if rev.guarded and taken_text(rev)]

    def undone_steps(self, chosen: Iterable[int]) -> list[int]:
        """The steps actually undone when ``chosen`` are: themselves (paragraph mode), or every
        revised step from the first chosen one on (cumulative mode)."""
        mode = self.mode
        chosen = sorted({int(i) for i in chosen} & set(self.revised))
        if not chosen or not mode:
            return []
        if mode == PARAGRAPH:
            return chosen
        return [i for i in self.revised if i >= chosen[0]]

    def chosen(self, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> tuple[set[int], set[int]]:
        """The steps undone and the steps whose refused revision is taken, once the mode's rules
        apply: in paragraph mode each step on its own; in cumulative mode everything from the
        first chosen step on goes back to the draft, except that step itself when its revision is
        taken."""
        guarded = {i for i, rev in self.revised.items() if rev.guarded}
        taken = {int(i) for i in taken} & guarded if self.mode else set()
        undone = set(self.undone_steps(undone))
        if self.mode == PARAGRAPH or not (undone | taken):
            return undone, taken - undone
        first = min(undone | taken)
        later = {i for i in self.revised if i >= first}
        return (later - {first}, {first}) if first in taken else (later, set())

    def text(self, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> str:
        """The final article with the revisions of ``undone`` steps taken back and the refused
        revisions of ``taken`` steps used (see the module docstring for what that means in each
        mode). The run's own text when nothing is chosen."""
        undone, taken = self.chosen(undone, taken)
        base = self.final.text if self.final else ""
        if not undone and not taken:
            return base
        revised = self.revised
        if self.mode == PARAGRAPH:
            return join_steps([rev.before if i in undone else taken_text(rev) if i in taken else rev.after
                               for i, rev in revised.items()])
        first = min(undone | taken)
        if first in taken:  # the refused revision was of the whole answer up to this step
            return join_steps([taken_text(revised[first]), *self.steps[first:]])
        kept = [i for i in revised if i < first]
        before = revised[kept[-1]].article if kept else ""
        return join_steps([before, *self.steps[first - 1:]])

    def book(self, undone: Iterable[int] = (), taken: Iterable[int] = (),
             threshold: float = CITE_THRESHOLD) -> SourceBook:
        """The run's source book as if the ``undone`` steps had not been revised and the refused
        revisions of ``taken`` steps had been accepted (with all the passages their step was
        shown); both as :meth:`chosen` leaves them."""
        undone, taken = self.chosen(undone, taken)
        book = SourceBook(threshold)
        book.labels = shown_labels(self.events)  # what the model's marks mean: what each prompt showed
        for e in latest_revisions(self.events):
            if isinstance(e, StepRevised) and e.i in undone:
                continue
            if isinstance(e, StepRevised) and e.i in taken:
                e = replace(e, sources=tuple(dict.fromkeys(p.url for p in self.shown.get(e.i, ()))), guarded="",
                            after=taken_text(e))
            book.see(e)
        return book

    def sources(self, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                book: SourceBook | None = None) -> tuple[Source, ...]:
        """The sources of the steps whose revisions are kept (and, for a refused revision taken
        by hand, the passages it was written from), numbered in order of first use. ``book``: the
        :meth:`book` of these edits, when the caller has it already."""
        chosen = self.chosen(undone, taken)
        if not any(chosen) and self.final is not None:
            return self.final.sources
        return (book or self.book(*chosen)).sources()

    def cited(self, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
              threshold: float = CITE_THRESHOLD) -> Cited:
        """``text`` (the article as the author edited it) with its citations: each sentence marked
        with the sources of the kept steps that support it, numbered as :meth:`sources` numbers
        them. ``threshold``: the share of a sentence's words a passage must hold."""
        undone, taken = self.chosen(undone, taken)
        return self.book(undone, taken, threshold).cited(text, undone=undone, taken=taken)

    def unchecked(self, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> tuple[str, ...]:
        """One line per step of the article (as undone and taken) never checked against a source."""
        undone, taken = self.chosen(undone, taken)
        return unchecked_lines(self.revised.values(), undone, taken)

    def article(self, task: str, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                threshold: float = CITE_THRESHOLD) -> Article:
        """The article as the author left it: ``text`` (as edited) with the sources, citations and
        unchecked steps of these edits, from one source book."""
        return self.cited_article(task, text, undone, taken, threshold=threshold)[1]

    def cited_article(self, task: str, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                      threshold: float = CITE_THRESHOLD) -> tuple[Cited, Article]:
        """:meth:`cited` and :meth:`article` of the same edits at once, from one source book and
        one attribution (the Writer shows both on every keystroke)."""
        undone, taken = self.chosen(undone, taken)
        book = self.book(undone, taken, threshold)
        cited = book.cited(text, undone=undone, taken=taken)
        return cited, Article.edited(task, text, book, sources=self.sources(undone, taken, book=book),
                                     unchecked=self.unchecked(undone, taken), undone=undone, taken=taken,
                                     cited=cited)


def latest_revisions(events: Iterable[Event]) -> list[Event]:
    """``events`` without the revisions a later revision of the same step replaced, in a run
    whose author had steps done again (``StepRedone``): what its sources are counted from, so a
    source excluded from a step is no longer one of the step's. Any other run's events as they are."""
    events = list(events)
    if not any(isinstance(e, StepRedone) for e in events):
        return events
    last = {e.i: n for n, e in enumerate(events) if isinstance(e, StepRevised)}
    return [e for n, e in enumerate(events) if not isinstance(e, StepRevised) or last[e.i] == n]


def taken_text(rev: StepRevised) -> str:
    """A refused revision as the author takes it: without the model's preamble and postscript."""
    return tidy_reply(strip_chatter(rev.rejected)) or rev.rejected.strip()

