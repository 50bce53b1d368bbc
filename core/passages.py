"""From pages to the retrieved text of a prompt: split each page's Markdown into passages, rank
them against the query with BM25, keep the best within a token budget, and format them as fenced,
labelled blocks, with the lines of page text that imitate our prompts' headings neutralised
(:func:`prompt_template` registers a prompt's headings).

Token counts are estimates (:func:`count_tokens`); no tokenizer is loaded.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from common.types import Page, Passage

__all__ = ["count_tokens", "tokenize", "split_passages", "rank_passages", "select_passages", "format_passages",
           "prompt_template", "neutralise_fences", "neutralise_headings"]

#: What opens and closes a passage in a prompt. Neither can occur in a passage's text:
#: :func:`format_passages` neutralises them there.
FENCE_OPEN = "<passage>"
FENCE_CLOSE = "</passage>"
_FENCE_IN_TEXT = re.compile(r"<(\s*/?\s*passage\b)", re.I)

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# a sentence ends at . ! ? … (and CJK full stops), possibly followed by closing quotes or
# brackets, before whitespace; a line break inside a paragraph (list items) is a boundary too
_SENTENCE_END = re.compile(r"(?<=[.!?…。！？])[\"'”’)\]]*\s+|\n")
_WORD_END = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """a about an and are as at be but by for from has have he her his i if in into is it its
    of on or our she so than that the their them then there these they this to was we were what
    when where which who why will with would you your""".split()
)


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text``: one token per 4 characters, rounded up.

    The usual rule of thumb for GPT-style tokenizers on English (about 1.3 tokens per word);
    it counts a little high for plain English prose, which is the safe side for a budget, and
    does not fall apart on URLs, code or languages with long words."""
    return math.ceil(len(text) / 4)


def tokenize(text: str) -> list[str]:
    """The words BM25 compares: lowercase runs of letters and digits, stopwords removed."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


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
    """``text`` in pieces of at most ``size_tokens``, cut at sentence ends, else word ends, else
    anywhere."""
    if count_tokens(text) <= size_tokens:
        return [text]
    for boundary in (_SENTENCE_END, _WORD_END):
        units = _split_after(text, boundary)
        if len(units) > 1:
            pieces: list[str] = []
            for unit in _pack(units, size_tokens):
                pieces += _cut(unit, size_tokens)
            return pieces
    width = size_tokens * 4  # one unbroken run of characters (a URL, base64): cut blindly
    return [text[i:i + width] for i in range(0, len(text), width)]


def _split_after(text: str, boundary: re.Pattern) -> list[str]:
    """``text`` split after each match of ``boundary``, separators kept with the unit before."""
    units, start = [], 0
    for match in boundary.finditer(text):
        if match.end() > start:
            units.append(text[start:match.end()])
            start = match.end()
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
        words = _WORD.findall(passage.text.lower())
        count = Counter(words)
        counts.append(count)
        lengths.append(len(words) - sum(count[word] for word in STOPWORDS.intersection(count)))
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


# -- formatting --------------------------------------------------------------------------------
def format_passages(passages: Sequence[Passage], numbers: Mapping[str, int] | None = None) -> str:
    """The retrieved text as it goes into a prompt: for each passage a label line
    ``[n] Title — URL`` and its text between ``<passage>`` and ``</passage>``.

    Passages of the same URL share a number: its number in ``numbers`` (the article's sources
    so far, ``core.sources``), else the next one after them in order of first appearance here,
    which is the number it gets when the step uses it.
    Retrieved text is data, not instructions: a fence marker inside a passage (or its title) is
    neutralised (``<`` becomes ``‹``) so the text cannot close its fence; a line that imitates a
    heading of our prompts (``##Instruction:``, ``Question: ...``) is marked as quoted
    (:func:`neutralise_headings`) so it cannot read as a new section; and titles and URLs are put
    on one line so they cannot forge a label."""
    numbers = dict(numbers or {})
    last = max(numbers.values(), default=0)
    blocks = []
    for passage in passages:
        n = numbers.get(passage.url)
        if n is None:
            last += 1
            n = numbers[passage.url] = last
        title = neutralise_headings(_one_line(passage.title))
        url = _one_line(passage.url)
        label = f"[{n}] {title} — {url}" if title else f"[{n}] {url}"
        text = neutralise_headings(neutralise_fences(passage.text)).strip()
        blocks.append(f"{label}\n{FENCE_OPEN}\n{text}\n{FENCE_CLOSE}")
    return "\n\n".join(blocks)


def neutralise_fences(text: str) -> str:
    """``text`` with anything that reads as a passage fence (``<passage>``, ``</passage>``,
    ``< / PASSAGE ...``) or as a chat template's special token (``<|im_start|>``) defused by
    turning its ``<`` into ``‹``."""
    return _SPECIAL_TOKEN.sub("‹|", _FENCE_IN_TEXT.sub(r"‹\1", text))


def _one_line(text: str) -> str:
    return neutralise_fences(" ".join(text.split()))


# -- our prompts' headings, imitated in page text ------------------------------------------------
#: What a neutralised line starts with: it reads as quoted text, not as a heading of the prompt.
QUOTED_MARK = "‹quoted› "
_SPECIAL_TOKEN = re.compile(r"<\s*\|")
#: Labels of instruction-tuned chat formats ("### Instruction:", "### Response:"), which page text
#: may imitate though our prompts do not use them all; as a plain "Input:" line (code examples)
#: they are kept, as a heading or in bold they are neutralised.
_FORMAT_LABELS = frozenset({"instruction", "instructions", "input", "response", "output", "system", "user",
                            "assistant"})
#: The labels of every registered prompt (:func:`prompt_template`), lower case.
_LABELS: set[str] = set()
# a heading line of a prompt template: "##Question:", "## Answer so far (read-only):"
_TEMPLATE_HEADING = re.compile(r"^#{1,6}\s*(?P<label>[^#{}\n:]+?)\s*:?\s*$")
# a label line of a prompt template: "Question: {question}", "Document:", "Refined document:"
_TEMPLATE_LABEL = re.compile(r"^(?P<label>[A-Z][A-Za-z ()'-]{0,40}?)\s*:\s*(?:\{\w*\})?\s*$")
# an emphasised line of a prompt template: "**IMPORTANT**", "IMPORTANT"
_TEMPLATE_EMPHASIS = re.compile(r"^\**(?P<label>[A-Z][A-Z ]{3,40}?)\**\s*$")
# a line of page text: its leading marks (#, >, *, _, =, spaces), then the rest
_LINE = re.compile(r"^(?P<marks>[\s#>*_=~`|-]*)(?P<rest>.*)$")


def prompt_template(template: str) -> str:
    """Register the headings of the prompt ``template`` (its ``##Label:`` lines, ``Label:``
    lines such as ``Question: {question}``, and emphasised lines such as ``**IMPORTANT**``), so
    that :func:`format_passages` neutralises lines of page text that imitate them. Returns
    ``template`` unchanged: ``DRAFT = prompt_template(\"\"\"...\"\"\")``."""
    _LABELS.update(prompt_labels(template))
    return template


def prompt_labels(template: str) -> set[str]:
    """The heading labels of a prompt template, lower case (``{"question", "instruction"}``)."""
    labels = set()
    for line in template.splitlines():
        for pattern in (_TEMPLATE_HEADING, _TEMPLATE_LABEL, _TEMPLATE_EMPHASIS):
            match = pattern.match(line.strip())
            if match:
                labels.add(_label_key(match.group("label")))
                break
    labels.discard("")
    return labels


def neutralise_headings(text: str) -> str:
    """``text`` with each line that imitates a heading of our prompts marked as quoted
    (:data:`QUOTED_MARK` before it), so it cannot read as a new section of the prompt. A line
    imitates a heading when it is a Markdown heading (``#``) that names a registered label or
    ends with a colon (our prompts' ``##Label:`` form), a ``Label:`` line of a registered label
    (``Question: ...``, ``**Instruction:**``), or a registered label alone in capitals or bold
    (``IMPORTANT``); chat formats' labels (``### Response:``) count as a heading or in bold. Other
    lines, Markdown headings such as ``## History`` and code examples' ``Input:`` included, are kept."""
    if not text:
        return text
    lines = text.split("\n")
    changed = False
    for j, line in enumerate(lines):
        if _imitates_heading(line):
            lines[j] = QUOTED_MARK + line.lstrip()
            changed = True
    return "\n".join(lines) if changed else text


def _imitates_heading(line: str) -> bool:
    flat = unicodedata.normalize("NFKC", line)
    match = _LINE.match(flat)
    if match is None or not match.group("rest").strip():
        return False
    marks, rest = match.group("marks"), match.group("rest")
    label, colon, after = rest.partition(":")
    key = _label_key(label)
    emphasised = "#" in marks or "*" in marks or label.strip(" *_").isupper()
    known = key in _LABELS or (emphasised and key in _FORMAT_LABELS)
    if "#" in marks:
        return known or bool(colon and not after.strip(" *_#\t\r"))
    if colon:
        return known
    return known and emphasised


def echoed_heading(line: str) -> str | None:
    """The label of a heading of our prompts that ``line`` repeats on its own ("##Instruction:",
    "**Question:**", "Answer so far (already revised, read-only):"), else None. In a model's
    reply such a line is the prompt read back, not text of the answer ("Answer: Paris" is not one:
    something follows its colon)."""
    match = _LINE.match(unicodedata.normalize("NFKC", line).strip())
    if match is None:
        return None
    label, colon, after = match.group("rest").partition(":")
    key = _label_key(label)
    if key not in _LABELS or after.strip(" *_#\t\r"):
        return None
    return key if "#" in match.group("marks") or colon or label.strip(" *_").isupper() else None


def _label_key(label: str) -> str:
    return " ".join(label.strip(" \t\r*_#=`~").lower().split())
