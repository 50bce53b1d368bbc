"""The article's body as the writers that lay it out read it (Word, HTML, PDF): blocks (headings,
list items, paragraphs) of runs (plain, bold, italic, and the [n] marks that link to their
source's entry), and the language the article is written in.

The article's own Markdown is read where it is plain to see: "#" headings, "- " and "1. " items,
**bold** and *italic* runs; anything else is kept as the text it is. Lines of one paragraph are
joined with a space, as Word's export joins them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.article.article import Article

HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+(.*)$")
EMPHASIS = re.compile(r"(\*\*[^*\n]+\*\*|__[^_\n]+__|\*[^*\n]+\*)")
CITE = re.compile(r"\[(\d{1,4})\]")  # a mark in the readers' numbering: "[3]" (``renumber_marks``)
WEB = re.compile(r"^https?://\S+$", re.I)  # a URL a document may link to: nothing but http(s)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # control characters: dropped from what is written

PARAGRAPH, HEADING_BLOCK, BULLET_ITEM, NUMBERED_ITEM = "paragraph", "heading", "bullet", "numbered"


@dataclass(frozen=True)
class Block:
    """One block of the body: ``kind`` (PARAGRAPH, HEADING_BLOCK, BULLET_ITEM, NUMBERED_ITEM), its
    ``text`` (Markdown markers taken off), and a heading's ``level`` (its count of "#")."""

    kind: str
    text: str
    level: int = 0


@dataclass(frozen=True)
class Run:
    """A piece of a block's text: ``bold``, ``italic``; ``source``: the number of the source whose
    entry the [n] mark that this run is links to (0: not a mark)."""

    text: str
    bold: bool = False
    italic: bool = False
    source: int = 0


def blocks(text: str) -> list[Block]:
    """``text`` (an article's body) as blocks: paragraphs split on blank lines, each heading or
    list item line a block of its own, the other lines of a paragraph joined with a space."""
    out: list[Block] = []
    for chunk in re.split(r"\n[ \t]*\n", clean(text)):
        paragraph: list[str] = []
        for line in (line for line in chunk.splitlines() if line.strip()):
            heading, bullet, numbered = HEADING.match(line), BULLET.match(line), NUMBERED.match(line)
            if (heading or bullet or numbered) and paragraph:
                out.append(Block(PARAGRAPH, " ".join(paragraph)))
                paragraph = []
            if heading:
                out.append(Block(HEADING_BLOCK, heading.group(2), len(heading.group(1))))
            elif bullet:
                out.append(Block(BULLET_ITEM, bullet.group(1)))
            elif numbered:
                out.append(Block(NUMBERED_ITEM, numbered.group(1)))
            else:
                paragraph.append(line.strip())
        if paragraph:
            out.append(Block(PARAGRAPH, " ".join(paragraph)))
    return out


def runs(text: str, numbers: set[int] | frozenset[int] = frozenset()) -> list[Run]:
    """``text`` (a block's) as runs: **bold** and *italic* spans as such, the rest plain, and each
    [n] mark of ``numbers`` (the sources that have an entry to link to) a run of its own."""
    out: list[Run] = []
    for part in EMPHASIS.split(text):
        if not part:
            continue
        bold = (part.startswith("**") and part.endswith("**")) or (part.startswith("__") and part.endswith("__"))
        italic = not bold and part.startswith("*") and part.endswith("*") and len(part) > 2
        inner = part[2:-2] if bold else part[1:-1] if italic else part
        last = 0
        for m in CITE.finditer(inner):
            if int(m.group(1)) in numbers:
                if m.start() > last:
                    out.append(Run(inner[last:m.start()], bold, italic))
                out.append(Run(m.group(0), bold, italic, int(m.group(1))))
                last = m.end()
        if last < len(inner):
            out.append(Run(inner[last:], bold, italic))
    return out


def linked_numbers(article: Article) -> set[int]:
    """The numbers whose [n] marks link to an entry: those of the sources listed with a number."""
    return {s.n for s in (*article.numbered, *article.snippets_apart) if s.n > 0}


def clean(text: str) -> str:
    """``text`` without control characters (no document format wants them)."""
    return CONTROL.sub("", str(text))


def language_of(article: Article) -> str:
    """The language code of ``article`` for a document's language attribute ("zh", "ja", "en"), ""
    when unsure: that of its text as written (the run asked the model for the task's language, or
    the one the author set, which the article does not record), else that of its task
    (``core.text.language.detect``)."""
    from core.text.language import detect

    return detect(f"{article.heading}\n{article.body}") or detect(article.task) or ""
