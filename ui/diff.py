"""A word-level diff of two texts, as data and as escaped HTML (pure; no gradio).

Words and punctuation are compared one token at a time; the whitespace after each token is kept
so the HTML shows the text with its own spacing and paragraph breaks (the caller styles the
container with ``white-space: pre-wrap``). Insertions are wrapped in ``<ins>``, deletions in
``<del>``; a replaced run shows its deletion first.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from functools import lru_cache

_TOKEN = re.compile(r"(\w+|[^\w\s]+)(\s*)")
_LEADING = re.compile(r"^\s*")
_WORD_SPACE = re.compile(r"\s*\S+\s*")
_WORD = re.compile(r"\w+")
ELIDED = "…"


@dataclass(frozen=True)
class Piece:
    op: str  # "equal" | "insert" | "delete"
    text: str


def tokens(text: str) -> tuple[list[str], list[str]]:
    """The words/punctuation of ``text`` and the whitespace after each (leading whitespace is
    dropped)."""
    words, spaces = [], []
    start = _LEADING.match(text).end()
    for m in _TOKEN.finditer(text, start):
        words.append(m.group(1))
        spaces.append(m.group(2))
    return words, spaces


def word_diff(before: str, after: str) -> list[Piece]:
    """The pieces that turn ``before`` into ``after``: equal runs (as written in ``after``),
    deletions (as written in ``before``) and insertions. Adjacent pieces never share an op."""
    a, a_space = tokens(before or "")
    b, b_space = tokens(after or "")
    pieces: list[Piece] = []

    def add(op: str, words: list[str], spaces: list[str]) -> None:
        if not words:
            return
        text = "".join(w + s for w, s in zip(words, spaces, strict=False))
        if pieces and pieces[-1].op == op:
            pieces[-1] = Piece(op, pieces[-1].text + text)
        else:
            pieces.append(Piece(op, text))

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            add("equal", b[j1:j2], b_space[j1:j2])
        else:
            if i2 > i1:
                add("delete", a[i1:i2], a_space[i1:i2])
            if j2 > j1:
                add("insert", b[j1:j2], b_space[j1:j2])
    return pieces


def _elide(text: str, context: int, *, first: bool, last: bool) -> str:
    """An unchanged run, escaped, keeping ``context`` words next to each change it touches
    (none at the start of the text or at its end) and "…" for the words left out."""
    words = _WORD_SPACE.findall(text)
    keep_head = 0 if first else context
    keep_tail = 0 if last else context
    if len(words) <= keep_head + keep_tail + 4:
        return html.escape(text)
    head = "".join(words[:keep_head])
    tail = "".join(words[len(words) - keep_tail:]) if keep_tail else ""
    gap = f"<span class='rat-elided' title='unchanged text left out'>{ELIDED}</span>"
    return html.escape(head) + gap + (" " if tail else "") + html.escape(tail)


@lru_cache(maxsize=512)
def diff_html(before: str, after: str, context: int | None = None) -> str:
    """``after`` with the words inserted since ``before`` in ``<ins>`` and the deleted ones in
    ``<del>``, every piece HTML-escaped. With ``context``, unchanged runs keep only that many
    words next to a change (a long unchanged text becomes "…")."""
    pieces = word_diff(before, after)
    if all(p.op == "equal" for p in pieces):
        return html.escape(after or "")
    out = []
    for n, piece in enumerate(pieces):
        if piece.op == "insert":
            out.append(f"<ins>{html.escape(piece.text)}</ins>")
        elif piece.op == "delete":
            out.append(f"<del>{html.escape(piece.text)}</del>")
        elif context is None:
            out.append(html.escape(piece.text))
        else:
            out.append(_elide(piece.text, context, first=n == 0, last=n == len(pieces) - 1))
    return "".join(out)


def changed(before: str, after: str) -> tuple[int, int]:
    """How many words (runs of letters and digits) were inserted and deleted."""
    ins = dele = 0
    for piece in word_diff(before, after):
        if piece.op == "insert":
            ins += len(_WORD.findall(piece.text))
        elif piece.op == "delete":
            dele += len(_WORD.findall(piece.text))
    return ins, dele
