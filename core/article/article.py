"""The article as it leaves the house: one frozen value that every output reads (Markdown,
Word, the command line's run and show, the Writer's export), so what an article's ending says
is decided once.

An ``Article`` is made from a run's events (:meth:`Article.from_events`: the text and sources
of its ``Final``) or from an author's edited text (:meth:`Article.edited`, with the source book
of the edits: ``core.article.edits``).

Two numberings. While a run goes on, a source is numbered when a step first uses it
(``core.article.sources.SourceBook``): prompts label passages with those numbers, ``Final`` and the
marks of ``Revisions.cited`` keep them. An article as it leaves the house is in the readers'
numbering (:meth:`Article.renumbered`, which both constructors apply): the sources its text cites are
numbered 1..n in the order their first [n] mark appears, the ones a step read but no sentence cites
have no number ("Also read"), nor have snippet-only sources no sentence cites. The numbers follow
from the cited text alone, so one version of an article has the same numbers in Markdown, Word, the
command line and the Writer (whose marks :func:`renumber_cited` renumbers alike), however the run
numbered them (an undo that renumbers the run's sources changes none of them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from common.events import DraftReady, Event, Final, PageRead, SearchDone, StepRevised
from common.types import Source
from core.article.attribution import Attribution
from core.article.citations import Cited, cited_numbers, mark_order, renumber_marks
from core.article.sources import SourceBook
from core.text.oneline import short

CUT = "the text ends where the model's answer was cut at the token limit, so its end is missing"
CUT_TEXT = f"{CUT} (raise --max-tokens)"  # the CLI's and the exports' words; the Writer names where to raise it
TITLE_CHARS = 120  # of the task, when it stands as the article's title


def readers_numbers(cited: str, numbers: Iterable[int]) -> dict[int, int]:
    """Old number -> the readers' number: the ``numbers`` (of sources) that the marks of ``cited``
    name, 1..n in the order their first mark appears (``core.article.citations.mark_order``)."""
    known = set(numbers)
    return {old: k for k, old in enumerate((n for n in mark_order(cited) if n in known), start=1)}


def renumber_cited(cited: Cited) -> Cited:
    """``cited`` (marks in any numbering, e.g. ``Revisions.cited``) with the numbers
    :meth:`Article.attributed` gives the same text: each mark's page numbered 1..n in the order it
    is first cited, by its URL (so what the Writer shows agrees with the export, and a mark's
    number always names its own page)."""
    return Attribution(cited).numbered()


@dataclass(frozen=True)
class Article:
    """An article with what its ending must say.

    ``text``: the article as written; ``cited``: the same text with its [n] marks
    (``core.article.citations``), "" when it was not attributed; ``sources``: the read ones and the
    snippet-only ones (``Source.read``), numbered as the marks of ``cited`` number them; from the
    constructors, in the readers' numbering (:meth:`renumbered`: the cited ones 1..n first, then the
    others with ``n`` 0); ``unchecked``: one line per step never
    checked against a source; ``unsourced``: why no part of it was checked ("" when some was);
    ``cut``: its end is missing (an answer the token limit cut short); ``title``: "" for the task's
    first words."""

    task: str
    text: str
    sources: tuple[Source, ...] = ()
    cited: str = ""
    unchecked: tuple[str, ...] = ()
    unsourced: str = ""
    cut: bool = False
    title: str = ""

    @property
    def heading(self) -> str:
        """The article's title: its own, else the task on one line."""
        return self.title or short(self.task, TITLE_CHARS)

    @property
    def body(self) -> str:
        """The text as written out: with its [n] marks when it has them."""
        return (self.cited or self.text).strip()

    @property
    def read_sources(self) -> tuple[Source, ...]:
        return tuple(s for s in self.sources if s.read)

    @property
    def snippet_sources(self) -> tuple[Source, ...]:
        """Sources whose page was never read: only their search snippet was used."""
        return tuple(s for s in self.sources if not s.read)

    @property
    def numbered(self) -> tuple[Source, ...]:
        """The list under "Sources": the sources the text's marks name, by number (a snippet-only
        one among them: its entry says so); for a text never attributed, every read source."""
        marked = self.marked
        if marked is None:
            return self.read_sources
        return tuple(sorted((s for s in self.sources if s.n in marked), key=lambda s: s.n))

    @property
    def also_read(self) -> tuple[Source, ...]:
        """Sources a step read that no mark of the text names (none for a text never attributed:
        nothing is said of which sources it cites)."""
        marked = self.marked
        return () if marked is None else tuple(s for s in self.read_sources if s.n not in marked)

    @property
    def snippets_apart(self) -> tuple[Source, ...]:
        """Snippet-only sources not in :attr:`numbered`, listed apart with why their page was not read."""
        marked = self.marked or set()
        return tuple(s for s in self.snippet_sources if s.n not in marked)

    def renumbered(self) -> Article:
        """This article in the readers' numbering: the sources its marks name numbered 1..n in the
        order their first mark appears in ``cited`` (its marks rewritten to match, as
        ``core.article.citations.renumber_marks`` writes them), then the sources no mark names, in
        their order, with ``n`` 0 (no number: "Also read", or snippets apart). A mark naming no
        source is left out. An article never attributed (``cited`` "") keeps its numbers, and one
        already renumbered is returned as it is."""
        if not self.cited:
            return self
        new = readers_numbers(self.cited, (s.n for s in self.sources if s.n > 0))
        sources = (*sorted((replace(s, n=new[s.n]) for s in self.sources if s.n in new), key=lambda s: s.n),
                   *(replace(s, n=0) for s in self.sources if s.n not in new))
        cited = renumber_marks(self.cited, new)
        if sources == self.sources and cited == self.cited:
            return self
        return replace(self, sources=sources, cited=cited)

    @cached_property
    def marked(self) -> set[int] | None:
        """The numbers the text's [n] marks name; None when the text was not attributed (then
        nothing is said of which sources it cites)."""
        return cited_numbers(self.cited) if self.cited else None

    @property
    def unchecked_lines(self) -> tuple[str, ...]:
        """The steps listed as not checked, each line capitalised; none for an unsourced article,
        whose warning says it of all of it."""
        if self.unsourced:
            return ()
        return tuple(line[0].upper() + line[1:] for line in self.unchecked)

    def used_in(self, source: Source) -> str:
        """' — used in steps 2, 3' ('' for a source no step names); a source no [n] mark of the
        text names says so: a step was checked against the page, but no sentence of the text
        matches it closely enough to be cited."""
        said = []
        if source.steps:
            label = "step" if len(source.steps) == 1 else "steps"
            said.append(f"used in {label} " + ", ".join(str(x) for x in source.steps))
        marked = self.marked
        if marked is not None and source.n not in marked:
            said.append("no sentence cites it")
        return " — " + "; ".join(said) if said else ""

    @classmethod
    def from_events(cls, task: str, events: Sequence[Event], *, unsourced: bool = False) -> Article:
        """The article of a stored or just finished run: its last ``Final`` (no text for a run
        that has none). ``unsourced``: the run finished without checking any step against a
        source (its status); the cause is read from its events (:func:`unsourced_cause`)."""
        final = next((e for e in reversed(events) if isinstance(e, Final)), None)
        cause = unsourced_cause(events) if unsourced else ""
        if final is None:
            return cls(task=task, text="", unsourced=cause)
        return cls(task=task, text=final.text, sources=tuple(final.sources), cited=final.cited,
                   unchecked=tuple(final.unchecked), unsourced=cause, cut=final.cut).renumbered()

    @classmethod
    def edited(cls, task: str, text: str, book: SourceBook, *, sources: Iterable[Source] | None = None,
               unchecked: Iterable[str] = (), undone: Iterable[int] = (), taken: Iterable[int] = (),
               cited: Cited | None = None) -> Article:
        """An author's text, attributed and checked with ``book`` (the run's source book as the
        author's edits left it: ``undone`` steps' revisions taken back, ``taken`` steps' refused
        revisions used); ``sources``: the list to give, when not the book's own; ``cited``: the
        book's attribution of ``text``, when the caller has it already."""
        cited = cited or book.cited(text, undone=undone, taken=taken)
        attribution = Attribution.of(cited, book.sources() if sources is None else sources, unchecked,
                                     book.ends_cut(text))
        return cls.attributed(task, text, attribution)

    @classmethod
    def attributed(cls, task: str, text: str, attribution: Attribution, *, unsourced: str = "") -> Article:
        """``text`` with the marks and sources of ``attribution`` (a stored version's, or one just
        made), in the readers' numbering: each page numbered by where this text first cites it,
        whatever the run's numbering was."""
        return cls(task=task, text=text, sources=attribution.numbered_sources(),
                   cited=attribution.numbered().text, unchecked=attribution.unchecked, unsourced=unsourced,
                   cut=attribution.cut)


def unsourced_cause(events: list[Event]) -> str:
    """Why a run used no source (or only search snippets: no page could be read), and what to do,
    in one line: read from its events (the last draft's steps on)."""
    last_draft = max((k for k, e in enumerate(events) if isinstance(e, DraftReady)), default=0)
    events = events[last_draft:]
    searches = [e for e in events if isinstance(e, SearchDone)]
    pages = [e for e in events if isinstance(e, PageRead)]
    guarded = [e for e in events if isinstance(e, StepRevised) and e.guarded]
    if searches and all(s.error for s in searches):
        return f"search failed for every step: {searches[-1].error}"
    if searches and not any(s.results for s in searches if not s.error):
        return ("no search returned any result: try another provider (--search ddg,searxng,corpus) "
                "or a task with more common words")
    final = next((e for e in reversed(events) if isinstance(e, Final)), None)
    if final is not None and final.sources and not any(s.read for s in final.sources):  # snippets, no page
        failed = [p.error for p in pages if p.status != "ok"] or [s.why for s in final.sources if s.why]
        last = f"; last: {failed[-1]}" if failed else ""
        return (f"only search snippets were used: no page could be read ({len(pages)} tried{last}): try another "
                "search provider, or --corpus with local files")
    if pages and not any(p.status == "ok" for p in pages):
        return (f"no page could be read ({len(pages)} tried; last: {pages[-1].error}): try another search "
                "provider, or --corpus with local files")
    if guarded:  # --min-keep is named only where it refused a revision: it cannot help a talk or a cut reply
        also = ", or lower --min-keep" if any("--min-keep" in e.guarded for e in guarded) else ""
        return (f"the model's revisions were refused at {len(guarded)} step(s), e.g. it {guarded[-1].guarded}: "
                f"try a larger model{also}")
    if not searches:
        return "no search was made: the method found nothing to look up"
    return "no retrieved text was used: see the steps' notes"
