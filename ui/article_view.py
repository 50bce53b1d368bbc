"""The article in the Writer: the steps the author may undo or take (labelled for the
checkbox lists), the text with its citations as HTML (each [n] opens on the passage that supports
its sentence; a sentence no source supports is underlined), and the export as Markdown or Word.
What the edits do to the article is ``core.article.edits``'; the export is its ``Article``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.article.citations import CITE_THRESHOLD, Cited, Mark
from core.article.docx import to_docx
from core.article.markdown import to_markdown
from core.text.oneline import short
from ui.escape import esc, link
from ui.runview import RunView

_STEP_LABEL = re.compile(r"^\s*step\s*\d+\s*[:.)-]\s*", re.I)  # "Step 2: ..." -> "..."
PASSAGE_CHARS = 600  # characters of a supporting passage shown when its mark is opened
UNSUPPORTED = "no source supports this sentence"


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
    supports the sentence (escaped, at most PASSAGE_CHARS characters) and a link to its page."""
    passage = re.sub(r"[ \t]*\r?\n\s*", "\n", mark.passage.strip())  # line breaks kept, blank lines not
    if len(passage) > PASSAGE_CHARS:
        passage = passage[:PASSAGE_CHARS - 1].rstrip() + "…"
    title = " ".join((mark.title or mark.url).split())
    by = " · cited by the model" if mark.by_model else ""
    box = (f"<span class='rat-cite-box'><span class='rat-cite-passage'>{esc(passage).replace(chr(10), '<br>')}"
           f"</span>"
           f"<span class='rat-meta'>[{mark.n}] {link(mark.url, title)} · {mark.score:.0%} of the sentence's "
           f"words{by}</span></span>")
    html_ = (f"<details class='rat-cite'><summary title='Source {mark.n}: {esc(title)}'>[{mark.n}]</summary>"
             f"{box}</details>")
    return html_.replace("\r", " ").replace("\n", " ")  # paragraphs are told by the article's newlines


def cited_html(cited: Cited, *, head: bool = True) -> str:
    """The article with its citations, as HTML with no script: each [n] opens on its passage
    and page (``mark_html``); a sentence that needs a source and has none is underlined, with a
    marker and a tooltip. Blank lines separate paragraphs, single newlines break lines, and
    everything is escaped. ``head``: a line with the counts above it."""
    parts = []
    for piece in cited.pieces:
        if piece.marks:
            marks = "".join(mark_html(m) for m in piece.marks)
            parts.append(f"<span class='rat-sentence'>{esc(piece.body)} {marks}</span>{esc(piece.tail)}")
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


def export_markdown(view: RunView, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                    threshold: float = CITE_THRESHOLD) -> str:
    """The article (as edited) as Markdown with its [n] marks, its numbered sources and the
    steps that were never checked against one."""
    return to_markdown(view.edits.article(view.task, text, undone, taken, threshold=threshold))


def export_docx(view: RunView, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                threshold: float = CITE_THRESHOLD) -> bytes:
    """The same article as ``export_markdown``, as the bytes of a Word document."""
    return to_docx(view.edits.article(view.task, text, undone, taken, threshold=threshold))


def export_name(view: RunView, suffix: str = "md") -> str:
    """A file name for the article: the task's first words and the run id, ending in ``suffix``."""
    words = re.findall(r"[A-Za-z0-9]+", view.task)[:8]
    slug = "-".join(words).lower()[:60] or "article"
    return f"{slug}-{view.run_id or 'run'}.{suffix.lstrip('.')}"
