"""A version's citations bound to their sources, not to numbers: what a stored version of an
article keeps so that it reads the same forever.

Each mark of an ``Attribution`` names the page (URL) and the passage that supports its sentence;
the numbers a reader sees are given only when the version is shown or written out, 1..n in the
order the pages are first cited in this text alone (:meth:`Attribution.numbered`,
``core.article.article.Article.attributed``). So a mark can never come to name another page's number: no later
state of the run (a step done again, an undo, another version) is read to show it.

    attribution = Attribution.of(cited, article)     # from the Writer's or the CLI's attribution
    raw = attribution.to_json()                      # stored with the version (data.versions)
    Article.attributed(task, text, Attribution.from_json(raw))   # the same Article, whenever read

The JSON holds each passage once (marks point at it by index), the sources (cited, also read,
snippet-only) without numbers, the steps never checked, whether the text's end was cut and why
the run was unsourced then, if it was (a later redo may make it so: the version still reads as it did).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from common.types import Source
from core.article.citations import Cited, Mark, Piece

FORMAT = 1  # the JSON's shape; a later shape is read by its own number


@dataclass(frozen=True)
class Attribution:
    """``cited``: the text's pieces, each mark with its page and passage (its ``n`` means
    nothing here); ``sources``: every source the version lists, by URL (their ``n`` means nothing
    either); ``unchecked``: one line per step never checked against a source; ``cut``: the
    text's end is missing; ``unsourced``: why no part of the run was checked against a source
    when the version was made ("" when some was; None where not recorded: a version stored before
    it was, read with the run's state now)."""

    cited: Cited
    sources: tuple[Source, ...] = ()
    unchecked: tuple[str, ...] = ()
    cut: bool = False
    unsourced: str | None = None

    @classmethod
    def of(cls, cited: Cited, sources: Iterable[Source], unchecked: Iterable[str] = (),
           cut: bool = False) -> Attribution:
        """An attribution of ``cited`` (marks in any numbering: each mark carries its URL) with
        ``sources``. A mark whose page is not among ``sources`` is kept with a source made of
        the mark (its URL and title), so no mark is ever without its entry."""
        listed = {s.url: s for s in sources}
        for piece in cited.pieces:
            for m in piece.marks:
                listed.setdefault(m.url, Source(n=0, url=m.url, title=m.title or m.url))
        return cls(cited=cited, sources=tuple(listed.values()), unchecked=tuple(unchecked), cut=bool(cut))

    # -- numbers, given when shown ----------------------------------------------------------------
    def order(self) -> dict[str, int]:
        """Each cited page's URL and its readers' number: 1..n in the order it is first cited."""
        order: dict[str, int] = {}
        for piece in self.cited.pieces:
            for m in piece.marks:
                order.setdefault(m.url, len(order) + 1)
        return order

    def numbered(self) -> Cited:
        """``cited`` with each mark numbered as :meth:`order` numbers its page (marks of one
        sentence in order of their numbers); ``cited`` itself when it is numbered so already."""
        order = self.order()

        def marks(piece: Piece) -> tuple[Mark, ...]:
            return tuple(sorted((replace(m, n=order[m.url]) for m in piece.marks), key=lambda m: m.n))

        pieces = tuple(replace(p, marks=marks(p)) if p.marks else p for p in self.cited.pieces)
        return self.cited if pieces == self.cited.pieces else replace(self.cited, pieces=pieces)

    def numbered_sources(self) -> tuple[Source, ...]:
        """The sources in the readers' numbering: the cited ones 1..n, then the others with ``n`` 0."""
        order = self.order()
        cited = sorted((replace(s, n=order[s.url]) for s in self.sources if s.url in order), key=lambda s: s.n)
        return (*cited, *(replace(s, n=0) for s in self.sources if s.url not in order))

    # -- stored -------------------------------------------------------------------------------------
    def to_json(self) -> str:
        passages: dict[tuple[str, str], int] = {}
        pieces = []
        for p in self.cited.pieces:
            marks = [[passages.setdefault((m.url, m.passage), len(passages)), m.score, int(m.by_model), m.title]
                     for m in p.marks]
            pieces.append([p.body, p.tail, int(p.sentence), marks] if marks or p.sentence else [p.body, p.tail])
        data = {
            "format": FORMAT,
            "passages": [[url, text] for url, text in passages],
            "pieces": pieces,
            "removed": self.cited.removed,
            "sources": [[s.url, s.title, list(s.steps), int(s.read), s.why] for s in self.sources],
            "unchecked": list(self.unchecked),
            "cut": int(self.cut),
            **({} if self.unsourced is None else {"unsourced": self.unsourced}),
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> Attribution:
        data = json.loads(raw)
        passages = [tuple(p) for p in data["passages"]]
        pieces = []
        for item in data["pieces"]:
            body, tail = item[0], item[1]
            sentence = bool(item[2]) if len(item) > 2 else False
            marks = tuple(Mark(n=0, url=passages[k][0], title=title, passage=passages[k][1], score=score,
                               by_model=bool(by))
                          for k, score, by, title in (item[3] if len(item) > 3 else ()))
            pieces.append(Piece(body, tail, marks, sentence))
        sources = tuple(Source(n=0, url=url, title=title, steps=tuple(steps), read=bool(read), why=why)
                        for url, title, steps, read, why in data["sources"])
        return cls(cited=Cited(tuple(pieces), data.get("removed", 0)), sources=sources,
                   unchecked=tuple(data.get("unchecked", ())), cut=bool(data.get("cut", 0)),
                   unsourced=data.get("unsourced"))
