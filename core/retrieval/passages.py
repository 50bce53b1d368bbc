"""From pages to the retrieved text of a prompt: split each page's Markdown into passages, rank
them against the query with BM25, and keep the best within a token budget. Formatting them for a
prompt is ``core.text.fencing``'s; token counts are ``core.text.tokens``' estimates.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from common.types import Page, Passage
from core.text.segment import sentence_spans, word_spans, words
from core.text.tokens import STOPWORDS, count_tokens, tokenize

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


# -- splitting ---------------------------------------------------------------------------------
def split_passages(page: Page, *, size_tokens: int = 180) -> list[Passage]:
    """Split a page's Markdown text into passages of about ``size_tokens`` each.

    Paragraphs (separated by blank lines) are packed together while they fit; a paragraph
    longer than ``size_tokens`` is cut at sentence ends (or line breaks), and a sentence longer
    than that at word ends. A heading starts a new passage when the current one is at least
    half full, so that it stays with the text it introduces. Passages carry the page's
    requested URL and title. A page with no text (or an error page) gives no passages."""
    if not page.text.strip():
        return []
    size_tokens = max(size_tokens, 1)
    pieces: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(page.text):
        paragraph = paragraph.strip()
        if paragraph:
            pieces += _cut(paragraph, size_tokens)

    texts: list[str] = []
    current = ""
    for piece in pieces:
        heading = piece.startswith("#")
        if current and heading and count_tokens(current) * 2 >= size_tokens:
            texts.append(current)
            current = ""
        candidate = f"{current}\n\n{piece}" if current else piece
        if current and count_tokens(candidate) > size_tokens:
            texts.append(current)
            current = piece
        else:
            current = candidate
    if current:
        texts.append(current)
    return [Passage(text=text, url=page.url, title=page.title, tokens=count_tokens(text)) for text in texts]


def _cut(text: str, size_tokens: int) -> list[str]:
    """``text`` in pieces of at most ``size_tokens``, cut at sentence ends (``core.text.segment``,
    in any script; a line break inside a paragraph, as between list items, is one too), else
    word ends, else anywhere."""
    if count_tokens(text) <= size_tokens:
        return [text]
    for ends in (_sentence_ends, _word_ends):
        units = _split_at(text, ends(text))
        if len(units) > 1:
            pieces: list[str] = []
            for unit in _pack(units, size_tokens):
                pieces += _cut(unit, size_tokens)
            return pieces
    width = size_tokens * 4  # one unbroken run of characters (a URL, base64): cut blindly
    return [text[i:i + width] for i in range(0, len(text), width)]


def _sentence_ends(text: str) -> list[int]:
    ends = {end for _, end in sentence_spans(text)} | {m.end() for m in re.finditer(r"\n", text)}
    return sorted(ends)


def _word_ends(text: str) -> list[int]:
    """Where whitespace ends, and where a word of a script written without spaces ends inside a
    run of letters: cut there, a piece keeps whole words."""
    ends = [m.end() for m in re.finditer(r"\s+", text)]
    spans = word_spans(text)
    ends += [a for (_, b), (a, _) in zip(spans, spans[1:], strict=False) if a == b]
    return sorted(ends)


def _split_at(text: str, ends: list[int]) -> list[str]:
    """``text`` split at each of ``ends``, separators kept with the unit before."""
    units, start = [], 0
    for end in ends:
        if end > start:
            units.append(text[start:end])
            start = end
    units.append(text[start:])
    return [unit for unit in units if unit.strip()]


def _pack(units: Iterable[str], size_tokens: int) -> list[str]:
    """Concatenate consecutive units while the result fits ``size_tokens``."""
    packed: list[str] = []
    current = ""
    for unit in units:
        if current and count_tokens((current + unit).strip()) > size_tokens:
            packed.append(current.strip())
            current = unit
        else:
            current += unit
    if current.strip():
        packed.append(current.strip())
    return packed


# -- ranking -----------------------------------------------------------------------------------
def rank_passages(query: str, passages: Sequence[Passage], *, k1: float = 1.5, b: float = 0.75) -> list[Passage]:
    """The passages with ``score`` set to their BM25 relevance to ``query``, best first.

    The passages themselves are the collection (document frequencies and average length come
    from them). IDF is the non-negative form ``ln(1 + (N - df + 0.5) / (df + 0.5))``; each
    distinct query word counts once. Ties (including all-zero scores) keep the input order."""
    if not passages:
        return []
    terms = set(tokenize(query))
    counts, lengths = [], []
    for passage in passages:  # the hot loop: C-level counting, no per-word Python code
        found = words(passage.text.lower())
        count = Counter(found)
        counts.append(count)
        lengths.append(len(found) - sum(count[word] for word in STOPWORDS.intersection(count)))
    average = (sum(lengths) / len(lengths)) or 1.0
    n = len(passages)
    idf = {}
    for term in terms:
        df = sum(1 for count in counts if term in count)
        idf[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))

    scored = []
    for passage, count, length in zip(passages, counts, lengths, strict=True):
        norm = k1 * (1 - b + b * length / average)
        score = 0.0
        for term in terms:
            tf = count.get(term)
            if tf:
                score += idf[term] * tf * (k1 + 1) / (tf + norm)
        scored.append(replace(passage, score=score))
    return sorted(scored, key=lambda p: -p.score)  # sorted() is stable: ties keep input order


# -- choosing ----------------------------------------------------------------------------------
def select_passages(ranked: Sequence[Passage], budget_tokens: int, *, max_per_page: int | None = None) -> list[Passage]:
    """The passages to put in a prompt, in the order given (best first): each one is taken if
    its tokens still fit ``budget_tokens`` (and its page has fewer than ``max_per_page``), else
    skipped for the next. Passages that scored zero are only used when none scored above zero."""
    scored = [p for p in ranked if p.score > 0]
    pool = scored or list(ranked)
    chosen: list[Passage] = []
    used = 0
    per_page: Counter[str] = Counter()
    for passage in pool:
        tokens = passage.tokens or count_tokens(passage.text)
        if used + tokens > budget_tokens:
            continue
        if max_per_page is not None and per_page[passage.url] >= max_per_page:
            continue
        chosen.append(passage)
        used += tokens
        per_page[passage.url] += 1
    return chosen
