"""Words and sentences of text in any script, by ICU's break iterators (the Unicode text
segmentation of UAX #29, with ICU's dictionaries for the scripts written without spaces between
words: Chinese, Japanese, Thai, Lao, Khmer, Burmese), through ``icu4py``, which ships ICU4C
in its wheel. Regexes over ``\\s`` and ``[.!?]`` know only scripts that put spaces between words
and end sentences with a full stop: a Chinese paragraph was one "word" and one sentence.

- A **word** is a run of letters, digits and combining marks (RUN) cut where ICU puts a word
  boundary inside it. Where words are spaced, ICU puts none inside such a run, so an English text
  has the words of the regex alone (and text without a script written without spaces never
  reaches ICU's word rules); "量子计算机利用" is "量子", "计算", "机", "利用".
- A **sentence** ends where ICU's sentence rules end one: after 。！？ as after . ! ?, not after
  "e.g." before a lowercase word, not inside "U.S.A."; and, where words are spaced, at . ! ?
  before whitespace and anything but a lowercase letter (ICU reads "in 2008. 3 items" as one
  sentence). The spaces after it go with it.

    words("量子计算的基本原理。")            # ['量子', '计算', '的', '基本', '原理']
    sentences("第一句。第二句！Third one.")   # ['第一句。', '第二句！', 'Third one.']
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator

import regex
from icu4py.breakers import SentenceBreaker, WordBreaker

#: A run of letters, digits and the marks that combine with them (Thai and Devanagari vowel
#: signs): a word where words are spaced, or a run ICU may cut further.
RUN = regex.compile(r"[\p{L}\p{N}\p{M}]+")
#: The same where the text has no combining mark: Python's own ``re`` (about twice as fast)
_PLAIN_RUN = re.compile(r"[^\W_]+")
#: The scripts written without spaces between words (ICU segments them with dictionaries).
UNSPACED_SCRIPT = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]")
#: What makes a text need RUN or ICU: a combining mark, or a script written without spaces
_SPECIAL = regex.compile(r"[\p{M}" + UNSPACED_SCRIPT.pattern[1:])
#: What :func:`spaced` puts between the words of a run: ZERO WIDTH SPACE, invisible on a page
#: and a separator to SQLite FTS5's unicode61 tokenizer.
WORD_JOINER = "\u200b"
#: Where words are spaced, a sentence also ends at . ! ? before whitespace and anything but a
#: lowercase letter: ICU joins "in 2008. 3 items" and "done. [note]" into one sentence.
_SPACED_STOP = re.compile(r"[.!?…]+[\"'”’)\]]*\s+(?=[^a-z\s])")
#: What ends a sentence in any script: Unicode's Sentence_Terminal characters (. ! ? 。 ！ ？ ।
#: ؟ ...) and the ellipsis, with the closing quotes and brackets that may follow them.
SENTENCE_STOP = regex.compile(r"[\p{Sentence_Terminal}…]+[\p{Pe}\p{Pf}\"']*$")


def _unspaced(text: str) -> bool:
    """Whether ``text`` holds a script written without spaces: only there does ICU cut a run of
    letters into words (ASCII text is not even searched)."""
    return not text.isascii() and UNSPACED_SCRIPT.search(text) is not None


def _boundaries(text: str) -> list[int]:
    """Where ICU puts word boundaries in ``text``, as string offsets (ICU counts UTF-16 units;
    the pieces it gives are counted here)."""
    at, out = 0, []
    for piece in WordBreaker(text, ""):
        at += len(piece)
        out.append(at)
    return out


def _plain(text: str) -> bool:
    """Whether ``text`` has neither a combining mark nor a script written without spaces: its
    words are ``re``'s runs of letters and digits."""
    return text.isascii() or _SPECIAL.search(text) is None


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text`` (see the module docstring), in order."""
    if _plain(text):
        return [m.span() for m in _PLAIN_RUN.finditer(text)]
    runs = [m.span() for m in RUN.finditer(text)]
    if UNSPACED_SCRIPT.search(text) is None:
        return runs
    bounds = _boundaries(text)
    spans: list[tuple[int, int]] = []
    for a, b in runs:
        k = bisect_right(bounds, a)
        while k < len(bounds) and bounds[k] < b:
            spans.append((a, bounds[k]))
            a = bounds[k]
            k += 1
        spans.append((a, b))
    return spans


def words(text: str) -> list[str]:
    """The words of ``text``, as written (see the module docstring)."""
    if _plain(text):
        return _PLAIN_RUN.findall(text)
    return [text[a:b] for a, b in word_spans(text)]


def word_count(text: str) -> int:
    """How many words ``text`` has for a reader: its whitespace-separated words, a piece written
    in a script without spaces counting as the words it holds ("量子计算的原理" is four)."""
    return len(_units(text))


def first_words(text: str, n: int) -> str:
    """``text`` up to the end of its ``n``-th word (as :func:`word_count` counts), on one line
    ("" for n < 1); all of it when it has no more."""
    units = _units(text)
    if n < 1 or not units:
        return ""
    return " ".join(text[:units[min(n, len(units)) - 1][1]].split())


def _units(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word a reader counts: a whitespace-separated piece, cut before each
    word ICU finds in it when it holds a script written without spaces."""
    out: list[tuple[int, int]] = []
    for m in re.finditer(r"\S+", text):
        a, b = m.span()
        piece = m.group()
        if piece.isascii() or not UNSPACED_SCRIPT.search(piece):
            out.append((a, b))
            continue
        starts = [a + x for x, _ in word_spans(piece)][1:]
        for cut in starts:
            out.append((a, cut))
            a = cut
        out.append((a, b))
    return out


def spaced(text: str) -> str:
    """``text`` with WORD_JOINER between the words ICU finds inside a run of letters (the words
    of a Chinese clause); text whose words are spaced comes back as it is."""
    if not _unspaced(text):
        return text
    parts, at = [], 0
    for a, b in word_spans(text):
        if a == at and parts and text[a - 1:a] != WORD_JOINER:
            parts.append(WORD_JOINER)
        parts.append(text[at:b])
        at = b
    parts.append(text[at:])
    return "".join(parts)


def unspaced(text: str) -> str:
    """``text`` without the WORD_JOINERs :func:`spaced` put in."""
    return text.replace(WORD_JOINER, "")


def sentence_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, the whitespace after it included: together they
    cover the text."""
    ends, at = set(), 0
    for piece in SentenceBreaker(text, "") if text else ():
        at += len(piece)
        ends.add(at)
    ends.update(m.end() for m in _SPACED_STOP.finditer(text))
    at = 0
    for end in sorted(ends):
        yield at, end
        at = end


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see the module docstring), each with the whitespace after it:
    ``"".join(sentences(text)) == text``."""
    return [text[a:b] for a, b in sentence_spans(text)]


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends like a sentence: with . ! ? or their form in another script
    (。！？…), closing quotes or brackets after it allowed."""
    return SENTENCE_STOP.search(text.rstrip()) is not None
