"""Inline citations by attribution: each sentence of an article gets [n] marks for the one or
two sources whose passages support it, where n is the source's number in the article's list
(``core.article.sources.SourceBook``: a source is numbered when it is first used, and passages in a
revision prompt carry those numbers, so a label the model copies is a right one). An article that
leaves the house is renumbered for its readers from its marks (:func:`mark_order`,
:func:`renumber_marks`; ``core.article.article.Article.renumbered``).

A sentence is matched against the passages retrieved for its step: the steps whose revised text
holds the sentence (for RAT, where each revision rewrites the answer so far, every step that kept
it), else, for a sentence no revised step holds (a RAG answer, an author's edit), the passages a
step used without revising (``SourcesUsed``). Support is word overlap: the share of the
sentence's content words (``core.text.tokens.tokenize``) found in the passage; a sentence is
supported at ``threshold`` or more (``--cite-threshold``, default CITE_THRESHOLD), with at
least MIN_SHARED words in common.

Marks the model wrote itself stay only when they name a passage of that sentence's step; any
other is removed and counted (``Cited.removed``). A sentence with no mark is unsupported: the
Writer and History show it, so the author sees what still needs a source.

Pure functions of a run's events and a text: the runner computes them for ``Final`` and the UI
again for an article as the author edited it, with the same result for the same input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import regex

from common.events import DraftReady, Event, Final, PassagesChosen, SourcesUsed, StepRevised
from common.types import Passage
from core.text.fencing import page_labels
from core.text.segment import UNSPACED_SCRIPT, sentence_spans
from core.text.tokens import tokenize

CITE_THRESHOLD = 0.6  # share of a sentence's content words a passage must hold to support it
MIN_WORDS = 3  # a piece with fewer content words (a heading, "Answer: Paris") needs no source
MIN_SHARED = 3  # content words a passage must share with a sentence to support it, whatever the share
MAX_MARKS = 2  # marks attribution adds to one sentence (its best sources)
RANGE_MAX = 10  # "[2-5]" in a model's text names each of 2..5 when the range is at most this long

# [3], [1, 2], [2-4], [1; 5]: not a Markdown link "[1](...)"; nor a reference definition "[1]: ...",
# which starts its line (:func:`_is_mark`): "... these sites [1]: ..." is a sentence's mark
_MARK = re.compile(r"[ \t]?\[(\d{1,4}(?:\s*[,;]\s*\d{1,4}|\s*[-–]\s*\d{1,4})*)\](?!\()")
# a sentence's closing punctuation, in any script (. , ; : ! ? 。 ， ！ ？ ...), with the closing
# quotes or brackets after it, and the whitespace after them: its marks go before it
_TAIL = regex.compile(r"(?:[\p{Terminal_Punctuation}…]+[\p{Pe}\p{Pf}\"']*)?\s*$")
# text that ends in a script written without spaces (or its punctuation: 》」）): its mark follows it
# with no space, as Chinese and Japanese write citations
_UNSPACED_END = regex.compile(UNSPACED_SCRIPT.pattern[:-1] + r"\p{Block=CJK_Symbols_and_Punctuation}"
                              r"\p{Block=Halfwidth_and_Fullwidth_Forms}]$")
_LINE_PREFIX = re.compile(r"^\s*(?:[-*+]\s+|\d{1,3}[.)]\s+|>\s*)*")
_HEADING = re.compile(r"^\s{0,3}(#{1,6}\s|={3,}\s*$|-{3,}\s*$|\*{3,}\s*$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


@dataclass(frozen=True)
class Mark:
    """One [n] of a sentence: the source, and the passage that supports the sentence."""

    n: int
    url: str
    title: str
    passage: str
    score: float  # share of the sentence's content words in the passage
    by_model: bool = False  # the model wrote this mark (and it names a passage of the step)


@dataclass(frozen=True)
class Piece:
    """A run of the article: ``body``, then its marks, then ``tail`` (the sentence's closing
    punctuation and the whitespace after it). ``sentence``: a sentence that needs a source."""

    body: str
    tail: str = ""
    marks: tuple[Mark, ...] = ()
    sentence: bool = False

    @property
    def space(self) -> str:
        """What goes between the body and its marks (:func:`mark_space`)."""
        return mark_space(self.body)

    @property
    def text(self) -> str:
        if not self.marks:
            return self.body + self.tail
        return self.body + self.space + "".join(f"[{m.n}]" for m in self.marks) + self.tail


@dataclass(frozen=True)
class Cited:
    """An article with its marks, piece by piece, and its counts."""

    pieces: tuple[Piece, ...] = ()
    removed: int = 0  # marks the model wrote that name no passage of their step

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.pieces)

    @property
    def sentences(self) -> int:
        return sum(p.sentence for p in self.pieces)

    @property
    def supported(self) -> int:
        return sum(p.sentence and bool(p.marks) for p in self.pieces)

    def summary(self) -> str:
        return summary(self.supported, self.sentences, self.removed)


def mark_space(before: str) -> str:
    """What goes between a text and the [n] marks after it: a space, none after a script written
    without spaces or its punctuation ("…《茶经》[1]。", "… in 2008 [1]."), nor after whitespace or
    at the start. The house writes marks so everywhere (``cite``, ``annotation.present``)."""
    return "" if not before or before[-1].isspace() or _UNSPACED_END.search(before) else " "


def citation_line(final: Final) -> str:
    """'7 of 9 sentences cited, 1 mark removed' for a run's Final."""
    return summary(final.supported, final.sentences, final.marks_removed)


def summary(supported: int, sentences: int, removed: int) -> str:
    """'7 of 9 sentences cited, 1 mark removed', for status lines, History and the CLI."""
    line = f"{supported} of {sentences} sentences cited"
    if removed:
        line += f", {removed} mark{'s' if removed != 1 else ''} removed"
    return line


@dataclass
class StepEvidence:
    """What one step was checked against: its revised text ('' for a step that used passages
    without revising), and the passages it was shown."""

    i: int
    text: str
    passages: list[Passage] = field(default_factory=list)
    #: the label its prompt gave each page (``shown_labels``): what a mark the model wrote in it means
    labels: Mapping[str, int] | None = None


def shown_labels(events: Iterable[Event]) -> dict[int, dict[str, int]]:
    """For each step of the run's last draft, the labels its latest revision prompt gave the pages
    it was shown, as ``core.text.fencing.format_passages`` gave them: a page already used by a
    step its number (in order of first use, as ``core.article.sources.SourceBook`` numbers), any
    other the next free one in the order the step chose them. A page the step then did not use
    gets another number when a later step uses it, so the label a model copied names a page only
    through the prompt it was written in; ``events``: all of them, earlier revisions of a step
    done again included (they numbered the pages the later prompts were shown)."""
    used: dict[str, None] = {}  # URLs in order of first use
    pending: dict[int, list[str]] = {}  # each step's pages chosen since its last revision
    labels: dict[int, dict[str, int]] = {}
    for e in events:
        if isinstance(e, DraftReady):
            used, pending, labels = {}, {}, {}
        elif isinstance(e, PassagesChosen):
            pending.setdefault(e.i, []).extend(p.url for p in e.passages)
        elif isinstance(e, StepRevised | SourcesUsed):
            labels[e.i] = page_labels(pending.pop(e.i, []), {url: n for n, url in enumerate(used, start=1)})
            used.update(dict.fromkeys(e.sources if isinstance(e, StepRevised) else e.urls))
    return labels


def evidence(events: Iterable[Event], *, undone: Iterable[int] = (),
             taken: Iterable[int] = ()) -> list[StepEvidence]:
    """The evidence of each step of the run's last draft, from its events: a revised step's
    latest checked revision with the passages it was shown, a ``SourcesUsed`` step's passages.
    ``undone``: steps whose revision the author took back (no evidence); ``taken``: steps whose
    refused revision the author took by hand (the refused text, with all its step's passages)."""
    undone, taken = set(undone), set(taken)
    chosen: dict[int, list[Passage]] = {}
    by_url: dict[str, list[Passage]] = {}  # the passages of each URL chosen in any step of this draft
    revised: dict[int, StepEvidence] = {}
    loose: dict[int, StepEvidence] = {}
    for e in events:
        if isinstance(e, DraftReady):
            chosen, by_url, revised, loose = {}, {}, {}, {}
        elif isinstance(e, PassagesChosen):
            have = chosen.setdefault(e.i, [])
            have += [p for p in e.passages if p not in have]
            for p in e.passages:
                if p not in by_url.setdefault(p.url, []):
                    by_url[p.url].append(p)
        elif isinstance(e, StepRevised):
            revised.pop(e.i, None)
            if e.i in undone:
                continue
            if e.i in taken and e.guarded:
                revised[e.i] = StepEvidence(e.i, e.rejected, list(chosen.get(e.i, [])))
            elif e.checked:
                revised[e.i] = StepEvidence(e.i, e.after, _shown(e.sources, chosen.get(e.i, []), by_url))
        elif isinstance(e, SourcesUsed):
            loose[e.i] = StepEvidence(e.i, "", _shown(e.urls, chosen.get(e.i, []), by_url))
    return [*revised.values(), *loose.values()]


def _shown(urls: Iterable[str], own: list[Passage], by_url: Mapping[str, list[Passage]]) -> list[Passage]:
    """The passages a step used: those chosen in the step itself for ``urls``; for a URL the step
    chose none of (AAG's update step uses what its questions retrieved), that URL's passages
    from the other steps of the draft."""
    urls = list(dict.fromkeys(urls))
    mine = [p for p in own if p.url in set(urls)]
    have = {p.url for p in mine}
    return mine + [p for url in urls if url not in have for p in by_url.get(url, [])]


def _is_mark(m: re.Match) -> bool:
    """Whether a match of _MARK is a mark: not a reference definition ("[1]: https://...", its
    line's first thing). One rule for what the model wrote (:func:`cite`) and what cite wrote
    (:func:`mark_order`), so no bracket is read as a mark in one and as text in the other."""
    if m.string[m.end():m.end() + 1] != ":":
        return True
    return bool(m.string[m.string.rfind("\n", 0, m.start()) + 1:m.start()].strip())


def strip_marks(text: str) -> str:
    """``text`` without any [n] mark."""
    return _MARK.sub(lambda m: "" if _is_mark(m) else m.group(0), text)


def cite(text: str, steps: list[StepEvidence], numbers: Mapping[str, int], *,
         threshold: float = CITE_THRESHOLD) -> Cited:
    """``text`` with marks: each sentence of it gets the marks the model wrote that name a
    passage of its step and those of its best one or two supporting sources; a mark naming
    anything else is removed and counted. ``numbers`` gives each source's number (a mark's ``n``).
    A mark the model wrote means the label the prompt it wrote it in gave the page: its step's
    ``labels`` (``shown_labels``; a step without them: ``numbers``). The two differ: a page
    a prompt showed but its step did not use is numbered later by the step that uses it, and
    after an author had a step done again the run's sources are numbered anew."""
    titles: dict[str, str] = {}
    for step in steps:
        for p in step.passages:
            titles.setdefault(p.url, p.title or p.url)
    held = [(_norm(strip_marks(s.text)), s) for s in sorted(steps, key=lambda s: s.i) if s.text]
    loose_steps = [s for s in sorted(steps, key=lambda s: s.i) if not s.text]
    loose = [p for s in loose_steps for p in s.passages]
    bags: dict[str, frozenset[str]] = {}  # a passage's text -> its content words
    pieces: list[Piece] = []
    removed = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
            pieces.append(Piece(line))
            continue
        if in_fence or not line.strip() or _HEADING.match(line):
            pieces.append(Piece(line))
            continue
        for body, tail, written in _sentences(line):
            words = set(tokenize(body))
            if not words and not written:
                pieces.append(Piece(body + tail))
                continue
            key = _norm(body)
            holding = [s for norm, s in held if key in norm] if key else []
            passages = [p for s in holding for p in s.passages]
            if not passages and key:
                holding, passages = loose_steps, loose
            sentence = len(words) >= MIN_WORDS  # shorter pieces keep the model's marks, get none added
            marks, dropped = _marks(words, passages, written, numbers, titles,
                                    threshold if sentence else float("inf"), bags, _said(holding, numbers))
            removed += dropped
            pieces.append(Piece(body, tail, marks, sentence=sentence))
    return Cited(tuple(pieces), removed)


def _said(steps: list[StepEvidence], labels: Mapping[str, int]) -> dict[int, str]:
    """What each label a model wrote in a sentence of ``steps`` names: the page the prompt of the
    first of them labelled so (its ``labels``, else ``labels``)."""
    said: dict[int, str] = {}
    for s in steps:
        for url, n in (s.labels if s.labels is not None else labels).items():
            said.setdefault(n, url)
    return said


def _marks(words: set[str], passages: list[Passage], written: list[int], numbers: Mapping[str, int],
           titles: Mapping[str, str], threshold: float,
           bags: dict[str, frozenset[str]], said: Mapping[int, str]) -> tuple[tuple[Mark, ...], int]:
    """The marks of one sentence: the model's that name (by ``said``: label -> page) a passage of
    its step (else counted as removed), then its best supporting sources."""
    best: dict[str, tuple[float, Passage]] = {}  # url -> its best passage for this sentence
    for p in passages:
        if p.url not in numbers:
            continue
        bag = bags.get(p.text)
        if bag is None:
            bag = bags[p.text] = frozenset(tokenize(p.text))
        shared = len(words & bag)
        score = shared / len(words) if words and shared >= min(MIN_SHARED, len(words)) else 0.0
        if p.url not in best or score > best[p.url][0]:
            best[p.url] = (score, p)
    by_label = {n: url for n, url in said.items() if url in best}
    marks: list[Mark] = []
    dropped = 0
    for n in dict.fromkeys(written):
        url = by_label.get(n)
        if url is None:
            dropped += 1
            continue
        score, p = best[url]
        marks.append(Mark(numbers[url], url, titles.get(url, url), p.text, round(score, 3), by_model=True))
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], numbers[item[0]]))
    added = 0
    for url, (score, p) in ranked:
        if score < threshold or added >= MAX_MARKS:
            break
        added += 1
        if all(m.url != url for m in marks):
            marks.append(Mark(numbers[url], url, titles.get(url, url), p.text, round(score, 3)))
    return tuple(sorted(marks, key=lambda m: m.n)), dropped


def _sentences(line: str) -> list[tuple[str, str, list[int]]]:
    """A line as (body, tail, numbers of the marks written in it) per sentence; the line's
    list marker or quote prefix is a body of its own with no words."""
    clean, found = _unmark(line)
    prefix = _LINE_PREFIX.match(clean).end()
    spans = [(prefix + a, prefix + b) for a, b in sentence_spans(clean[prefix:])]
    if not spans:
        spans.append((prefix, len(clean)))
    out: list[tuple[str, str, list[int]]] = [(clean[:prefix], "", [])] if prefix else []
    ends = [end for _, end in spans]
    for k, (a, b) in enumerate(spans):
        b_full = spans[k + 1][0] if k + 1 < len(spans) else len(clean)
        chunk = clean[a:b_full]
        lead = len(chunk) - len(chunk.lstrip())
        if lead:  # the whitespace between two sentences goes with the one before
            if out:
                body, tail, nums = out[-1]
                out[-1] = (body, tail + chunk[:lead], nums)
            else:
                out.append((chunk[:lead], "", []))
            chunk = chunk[lead:]
        tail = _TAIL.search(chunk)
        cut = tail.start() if tail else len(chunk)
        if not chunk[:cut].strip():  # nothing but punctuation: keep it with what it follows
            cut = len(chunk)
        mine = [n for pos, n in found if (k == 0 or pos > ends[k - 1]) and (k + 1 == len(spans) or pos <= b)]
        out.append((chunk[:cut], chunk[cut:], mine))
    return out


def _unmark(line: str) -> tuple[str, list[tuple[int, int]]]:
    """``line`` without its marks, and (position in the clean line, number) for each number a
    mark named."""
    parts: list[str] = []
    found: list[tuple[int, int]] = []
    at = 0
    length = 0
    for m in _MARK.finditer(line):
        if not _is_mark(m):
            continue
        parts.append(line[at:m.start()])
        length += m.start() - at
        for n in _numbers(m.group(1)):
            found.append((length, n))
        at = m.end()
    parts.append(line[at:])
    return "".join(parts), found


def cited_numbers(text: str) -> set[int]:
    """The source numbers the [n] marks of a cited text (``Cited.text``) name."""
    return set(mark_order(text))


def mark_order(text: str) -> list[int]:
    """The source numbers the [n] marks of a cited text (``Cited.text``) name, each once, in the
    order they first appear. Marks are read where :func:`cite` writes them: not in headings nor
    in fenced code (lines it leaves as they are), and "[1]:" is a mark unless it starts its line
    (a sentence that ends in a colon gets its marks before it; a reference definition does not)."""
    seen: dict[int, None] = {}
    _each_mark(text, lambda numbers: seen.update(dict.fromkeys(numbers)))
    return list(seen)


def renumber_marks(text: str, new: Mapping[int, int]) -> str:
    """A cited text with each number its marks name replaced by ``new[n]``, written as
    :func:`cite` writes marks: marks side by side as one run in order ("[3][1]" -> "[1][3]"), and
    "[2, 5]" or "[2-4]" as single marks; a number ``new`` lacks is left out, and a run left with
    none goes with the space before it. Marks are read as :func:`mark_order` reads them."""
    return _each_mark(text, lambda numbers: "".join(f"[{k}]" for k in sorted({new[n] for n in numbers if n in new})))


_MARKS = re.compile(f"(?:{_MARK.pattern})+")  # marks side by side, as cite writes "[1][3]"


def _each_mark(text: str, write) -> str:
    """``text`` with each run of marks side by side (see :func:`mark_order`) replaced by what
    ``write`` gives for the numbers they name, in order (kept as they are when it gives None);
    the space before them stays when something is written."""
    def one(m: re.Match) -> str:
        if not _is_mark(m):
            return m.group(0)  # "[1]: https://..." starts its line: a reference definition
        out = write([n for mark in _MARK.finditer(m.group(0)) for n in _numbers(mark.group(1))])
        if out is None:
            return m.group(0)
        return m.group(0)[:len(m.group(0)) - len(m.group(0).lstrip(" \t"))] + out if out else ""

    lines: list[str] = []
    in_fence = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not _HEADING.match(line):
            line = _MARKS.sub(one, line)
        lines.append(line)
    return "".join(lines)


def _numbers(inside: str) -> list[int]:
    out: list[int] = []
    for item in re.split(r"\s*[,;]\s*", inside.strip()):
        ends = [int(x) for x in re.split(r"\s*[-–]\s*", item) if x.isdigit()]
        if len(ends) == 2 and 0 <= ends[1] - ends[0] <= RANGE_MAX:
            out += range(ends[0], ends[1] + 1)
        elif ends:
            out.append(ends[0])
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())
