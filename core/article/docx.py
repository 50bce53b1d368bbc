"""The article as a Word document (python-docx): the same content as ``core.article.markdown.to_markdown``
(title, unsourced warning, the text with its [n] marks, a line when its end was cut, the
sources in the readers' numbering with "Also read" and the snippet-only ones apart, the steps
never checked), for authors who finish their articles in a word processor. Titles and the task
are written as plain text runs: nothing in them is interpreted.

The article's own Markdown is mapped to Word's structure where it is plain to see: "#" headings
become headings, "- " and "1. " items list paragraphs, **bold** and *italic* runs; anything else
is kept as the text it is.
"""

from __future__ import annotations

import io
import re
import zipfile

from common.types import Source
from core.article.article import CUT_TEXT, Article

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+(.*)$")
_EMPHASIS = re.compile(r"(\*\*[^*\n]+\*\*|__[^_\n]+__|\*[^*\n]+\*)")
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not allowed in XML: dropped


def to_docx(article: Article) -> bytes:
    """The article as the bytes of a .docx file, with the content of ``to_markdown`` (in the
    readers' numbering: ``Article.renumbered``)."""
    from docx import Document  # python-docx: imported when a document is made

    article = article.renumbered()
    doc = Document()
    doc.core_properties.title = _clean(article.title or article.task)[:250]
    doc.add_heading(_clean(article.heading), level=1)
    if article.unsourced:
        warning = doc.add_paragraph()
        warning.add_run("Unsourced: ").bold = True
        warning.add_run(_clean(f"no part of this text was checked against retrieved text ({article.unsourced})."))
    _write_body(doc, article.body)
    if article.cut:
        note = doc.add_paragraph()
        note.add_run("Cut short: ").bold = True
        note.add_run(f"{CUT_TEXT}.")
    if article.numbered:
        doc.add_heading("Sources", level=2)
        for s in article.numbered:
            doc.add_paragraph(_clean(_entry(article, s) + ("" if s.read else _unread(s))))
    if article.also_read:
        doc.add_heading("Also read", level=2)
        for s in article.also_read:
            doc.add_paragraph(_clean(_entry(article, s)), style="List Bullet")
    if article.snippets_apart:
        doc.add_heading("Search snippets only (page not read)", level=2)
        for s in article.snippets_apart:
            doc.add_paragraph(_clean(_entry(article, s) + _unread(s)), style=None if s.n > 0 else "List Bullet")
    if article.unchecked_lines:
        doc.add_heading("Not checked against a source", level=2)
        for line in article.unchecked_lines:
            doc.add_paragraph(_clean(line), style="List Bullet")
    out = io.BytesIO()
    doc.save(out)
    return _reproducible(out.getvalue())


def _entry(article: Article, s: Source) -> str:
    """One source's line: "[n] " when it has a number, its title, its URL and the steps that used it."""
    number = f"[{s.n}] " if s.n > 0 else ""
    return f"{number}{s.title or s.url} — {s.url}{article.used_in(s)}"


def _unread(s: Source) -> str:
    return f"; the page was not read: {s.why or 'unknown reason'}"


def _reproducible(docx: bytes) -> bytes:
    """The same .docx with every zip entry stamped ZIP_EPOCH instead of the time it was saved, so
    one article always gives the same bytes (two exports of a run compare equal)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            stamped = zipfile.ZipInfo(entry.filename, date_time=ZIP_EPOCH)
            stamped.compress_type, stamped.external_attr = entry.compress_type, entry.external_attr
            target.writestr(stamped, source.read(entry))
    return out.getvalue()


def _write_body(doc, text: str) -> None:
    for block in re.split(r"\n[ \t]*\n", text):
        paragraph: list[str] = []  # lines of running text, joined into one paragraph
        for line in (line for line in block.splitlines() if line.strip()):
            heading, bullet, numbered = _HEADING.match(line), _BULLET.match(line), _NUMBERED.match(line)
            if (heading or bullet or numbered) and paragraph:
                _add_runs(doc.add_paragraph(), " ".join(paragraph))
                paragraph = []
            if heading:
                doc.add_heading(_clean(heading.group(2)), level=min(len(heading.group(1)) + 1, 9))
            elif bullet:
                _add_runs(doc.add_paragraph(style="List Bullet"), bullet.group(1))
            elif numbered:
                _add_runs(doc.add_paragraph(style="List Number"), numbered.group(1))
            else:
                paragraph.append(line.strip())
        if paragraph:
            _add_runs(doc.add_paragraph(), " ".join(paragraph))


def _add_runs(paragraph, text: str) -> None:
    """``text`` as runs of ``paragraph``: **bold** and *italic* spans as such, the rest plain."""
    for part in _EMPHASIS.split(text):
        if not part:
            continue
        if (part.startswith("**") and part.endswith("**")) or (part.startswith("__") and part.endswith("__")):
            paragraph.add_run(_clean(part[2:-2])).bold = True
        elif part.startswith("*") and part.endswith("*") and len(part) > 2:
            paragraph.add_run(_clean(part[1:-1])).italic = True
        else:
            paragraph.add_run(_clean(part))


def _clean(text: str) -> str:
    return _CONTROL.sub("", str(text))
