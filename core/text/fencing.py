"""Retrieved text fenced for a prompt: passages formatted as labelled blocks between
``<passage>`` fences, fence markers and chat-template tokens in page text defused, and lines of
page text that imitate our prompts' headings marked as quoted (:func:`prompt_template`
registers a prompt's headings)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from common.types import Passage

#: What opens and closes a passage in a prompt. Neither can occur in a passage's text:
#: :func:`format_passages` neutralises them there.
FENCE_OPEN = "<passage>"
FENCE_CLOSE = "</passage>"
_FENCE_IN_TEXT = re.compile(r"<(\s*/?\s*passage\b)", re.I)


# -- formatting --------------------------------------------------------------------------------
def page_labels(urls: Iterable[str], numbers: Mapping[str, int] | None = None) -> dict[str, int]:
    """The label a prompt gives each page of ``urls``: its number in ``numbers`` (the article's
    sources so far), else the next free one, in order of first appearance. A page the step then
    does not use gets another number from the step that does (``core.article.citations.shown_labels``
    reads a model's marks with these)."""
    labels = dict(numbers or {})
    last = max(labels.values(), default=0)
    for url in urls:
        if url not in labels:
            last += 1
            labels[url] = last
    return labels


def format_passages(passages: Sequence[Passage], numbers: Mapping[str, int] | None = None) -> str:
    """The retrieved text as it goes into a prompt: for each passage a label line
    ``[n] Title — URL`` and its text between ``<passage>`` and ``</passage>``.

    Passages of the same URL share a label (:func:`page_labels`): its number in ``numbers`` (the
    article's sources so far, ``core.article.sources``), else the next free one in order of first
    appearance here.
    Retrieved text is data, not instructions: a fence marker inside a passage (or its title) is
    neutralised (``<`` becomes ``‹``) so the text cannot close its fence; a line that imitates a
    heading of our prompts (``##Instruction:``, ``Question: ...``) is marked as quoted
    (:func:`neutralise_headings`) so it cannot read as a new section; and titles and URLs are put
    on one line so they cannot forge a label."""
    labels = page_labels((p.url for p in passages), numbers)
    blocks = []
    for passage in passages:
        n = labels[passage.url]
        title = neutralise_headings(_one_line(passage.title))
        url = _one_line(passage.url)
        label = f"[{n}] {title} — {url}" if title else f"[{n}] {url}"
        text = neutralise_headings(neutralise_fences(passage.text)).strip()
        blocks.append(f"{label}\n{FENCE_OPEN}\n{text}\n{FENCE_CLOSE}")
    return "\n\n".join(blocks)


#: What opens and closes the author's own words in a prompt (an instruction for a revision); the
#: text inside cannot hold either (:func:`fence_author`).
AUTHOR_OPEN = "<author>"
AUTHOR_CLOSE = "</author>"
_AUTHOR_IN_TEXT = re.compile(r"<(\s*/?\s*author\b)", re.I)


def fence_author(text: str) -> str:
    """The author's ``text`` (an instruction typed in a box or on the command line) as it goes
    into a prompt: on one line, between ``<author>`` and ``</author>``, with anything that reads as
    one of these fences, a passage fence or a chat template's token defused, and a line imitating
    a heading of our prompts marked as quoted, so it cannot close its fence or open a new section."""
    line = _AUTHOR_IN_TEXT.sub(r"‹\1", _one_line(text))
    return f"{AUTHOR_OPEN}\n{neutralise_headings(line).strip()}\n{AUTHOR_CLOSE}"


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
