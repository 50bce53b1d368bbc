"""The article in the Writer: the steps the author may undo or take (labelled for the
checkbox lists), the text with its citations as HTML (each [n] opens on the passage that supports
its sentence and links to its entry in the source list; a sentence no source supports is
underlined), the source list as HTML, and the export as Markdown or Word. What the edits do to the
article is ``core.article.edits``'; the export is its ``Article``. The marks and the list are in the
readers' numbering (``core.article.article.renumber_cited``, ``Article.renumbered``), so the Writer
shows the numbers the export writes."""

from __future__ import annotations

import re

from common.types import Source
from core.article.article import Article, renumber_cited
from core.article.citations import CITE_THRESHOLD, Cited, Mark
from core.article.docx import to_docx
from core.article.markdown import to_markdown
from core.authoring import Edit
from core.text.oneline import short
from ui.escape import esc, link
from ui.runview import RunView

_STEP_LABEL = re.compile(r"^\s*step\s*\d+\s*[:.)-]\s*", re.I)  # "Step 2: ..." -> "..."
PASSAGE_CHARS = 600  # characters of a supporting passage shown when its mark is opened
UNSUPPORTED = "no source supports this sentence"
SOURCE_ID = "rat-source-{n}"  # the id of source n's entry in ``sources_html``; its marks link to it


def revert_choices(view: RunView) -> list[tuple[str, int]]:
    """(label, step) for each step whose revision can be undone (``Revisions.undoable``)."""
    return [(_label(view, i), i) for i in view.edits.undoable()]


def take_choices(view: RunView) -> list[tuple[str, int]]:
    """(label, step) for each step whose refused revision the author may take by hand
    (``Revisions.takeable``)."""
    return [(_label(view, i), i) for i in view.edits.takeable()]


def _label(view: RunView, i: int) -> str:
    return f"Step {i}: {short(_STEP_LABEL.sub('', view.cards[i].thought or view.steps[i - 1]), 60)}"


def mark_html(mark: Mark) -> str:
    """One [n] mark: a ``<details>`` whose summary is "[n]" and which opens on the passage that
    supports the sentence (escaped, at most PASSAGE_CHARS characters), a link to its page and one
    ("[n]") to its entry in the source list (``sources_html``)."""
    passage = re.sub(r"[ \t]*\r?\n\s*", "\n", as_read(mark.passage).strip())  # line breaks kept, blank lines not
    if len(passage) > PASSAGE_CHARS:
        passage = passage[:PASSAGE_CHARS - 1].rstrip() + "…"
    title = " ".join((mark.title or mark.url).split())
    by = " · cited by the model" if mark.by_model else ""
    box = (f"<span class='rat-cite-box'><span class='rat-cite-passage'>{esc(passage).replace(chr(10), '<br>')}"
           f"</span>"
           f"<span class='rat-meta'><a class='rat-cite-to' href='#{SOURCE_ID.format(n=mark.n)}' "
           f"title='Source {mark.n} in the list'>[{mark.n}]</a> {link(mark.url, title)} · "
           f"{mark.score:.0%} of the sentence's "
           f"words{by}</span></span>")
    html_ = (f"<details class='rat-cite'><summary title='Source {mark.n}: {esc(title)}'>[{mark.n}]</summary>"
             f"{box}</details>")
    return html_.replace("\r", " ").replace("\n", " ")  # paragraphs are told by the article's newlines


_MD_LINE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+|>[ \t]?)", re.M)  # a heading's hashes, a quote's >
_MD_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\)")


def as_read(passage: str) -> str:
    """A passage as a reader reads it: the Markdown the page's extraction left in it (heading
    hashes, quote marks, bold, links) taken away, its words kept ("## **How would…**" reads
    "How would…")."""
    text = _MD_LINE.sub("", passage)
    text = _MD_LINK.sub(r"\1", text)
    return _MD_EMPHASIS.sub(r"\2", text)


def cited_html(cited: Cited, *, head: bool = True) -> str:
    """The article with its citations, as HTML with no script: each [n] opens on its passage
    and page (``mark_html``); a sentence that needs a source and has none is underlined, with a
    marker and a tooltip. Blank lines separate paragraphs, single newlines break lines, and
    everything is escaped. ``head``: a line with the counts above it. The marks are in the readers'
    numbering (``renumber_cited``: the export's numbers for the same text), whatever numbering
    ``cited`` came in."""
    cited = renumber_cited(cited)
    parts = []
    for piece in cited.pieces:
        if piece.marks:
            marks = "".join(mark_html(m) for m in piece.marks)
            parts.append(f"<span class='rat-sentence'>{esc(piece.body)}{piece.space}{marks}</span>{esc(piece.tail)}")
        elif piece.sentence:
            parts.append(f"<span class='rat-sentence rat-unsupported' title='{UNSUPPORTED}'>{esc(piece.body)}"
                         f"<sup class='rat-nosource' title='{UNSUPPORTED}'>?</sup></span>{esc(piece.tail)}")
        else:
            parts.append(esc(piece.body + piece.tail))
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return "<div class='rat-empty'>The article is empty.</div>"
    paragraphs = "".join(f"<div class='rat-para'>{para.strip().replace(chr(10), '<br>')}</div>"
                         for para in re.split(r"\n[ \t]*\n\s*", text))
    top = ""
    if head:
        unsupported = cited.sentences - cited.supported
        todo = (f" {unsupported} sentence{'s' if unsupported != 1 else ''} with no source "
                f"<span class='rat-unsupported'>underlined</span>." if unsupported else "")
        top = (f"<div class='rat-cite-summary'>{esc(cited.summary())}. Click a [n] to see the passage that "
               f"supports its sentence.{todo}</div>")
    return f"<div class='rat-cited'>{top}{paragraphs}</div>"


def sources_html(article: Article) -> str:
    """The article's source list as HTML with no script, in the readers' numbering
    (``Article.renumbered``, as the export and ``cited_html``): under "Sources" the cited ones, each
    "[n]" with its title as a link to its page, the steps that used it and id ``rat-source-{n}``
    (where its marks link); then "Also read" (pages read that no sentence cites) and the snippet-only
    sources with why their page was not read, apart and with no number. Everything is escaped."""
    article = article.renumbered()
    also = "Also read <span class='rat-meta'>(no sentence of the text cites these)</span>"
    groups = [("Sources", article.numbered), (also, article.also_read),
              ("Search snippets only (page not read)", article.snippets_apart)]
    html_ = "".join(f"<div class='rat-sources-group'><div class='rat-sources-head'>{head}</div>"
                    f"{''.join(_source_html(article, s) for s in sources)}</div>"
                    for head, sources in groups if sources)
    if not html_:
        return "<div class='rat-sources rat-empty'>No source was used.</div>"
    return f"<div class='rat-sources'>{html_}</div>"


def _source_html(article: Article, s: Source) -> str:
    """One entry of ``sources_html``: "[n]" and an id when it has a number."""
    title = " ".join((s.title or s.url).split())
    unread = "" if s.read else f"; the page was not read: {s.why or 'unknown reason'}"
    meta = f"<span class='rat-meta'>{esc(article.used_in(s) + unread)}</span>"
    if s.n > 0:
        return (f"<div class='rat-source' id='{SOURCE_ID.format(n=s.n)}'><span class='rat-source-n'>[{s.n}]</span> "
                f"{link(s.url, title)}{meta}</div>")
    return f"<div class='rat-source rat-source-apart'>{link(s.url, title)}{meta}</div>"


def export_article(view: RunView, edit: Edit, *, threshold: float = CITE_THRESHOLD) -> Article:
    """The article as the author has it (``edit``: its text, with its undone and taken steps), as
    it leaves the house: what every export of it writes."""
    return view.edits.article(view.task, edit.text, edit.undone, edit.taken, threshold=threshold)


def export_markdown(view: RunView, edit: Edit, *, threshold: float = CITE_THRESHOLD, notes: bool = False) -> str:
    """The article (as edited) as Markdown with its [n] marks, its numbered sources and, with
    ``notes``, the steps that were never checked against one (run notes)."""
    return to_markdown(export_article(view, edit, threshold=threshold), notes=notes)


def export_docx(view: RunView, edit: Edit, *, threshold: float = CITE_THRESHOLD, notes: bool = False) -> bytes:
    """The same article as ``export_markdown``, as the bytes of a Word document."""
    return to_docx(export_article(view, edit, threshold=threshold), notes=notes)


def export_name(view: RunView, suffix: str = "md") -> str:
    """A file name for the article: the task's first words and the run id, ending in ``suffix``."""
    words = re.findall(r"[A-Za-z0-9]+", view.task)[:8]
    slug = "-".join(words).lower()[:60] or "article"
    return f"{slug}-{view.run_id or 'run'}.{suffix.lstrip('.')}"
