"""The article's output in the Writer: the files its download buttons hold (Markdown, Word, PDF, HTML),
the texts its copy buttons copy (Markdown, plain text) and its length ("1,234 words · 6 min read").

The files of one panel go to one temporary folder (``ExportFolder``), each set in a subfolder named
by its content; a set handed over more than ``keep`` seconds ago is removed as the next one is
written, and the folder itself when the process ends. Gradio copies a file into its own cache as
soon as a handler hands it to a download button, so a set is never needed for long; ``keep`` only
covers another browser's set written at the same moment and not yet copied."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from core.article.article import Article
from core.article.citations import CITE_THRESHOLD, strip_marks
from core.article.docx import to_docx
from core.article.html import to_html
from core.article.markdown import to_markdown, to_text
from core.article.pdf import to_pdf
from core.authoring import Edit
from core.text.segment import word_count
from ui import article_view
from ui.escape import esc
from ui.runview import RunView

WORDS_PER_MINUTE = 230  # a reader's pace, for the reading time
KEEP_SECONDS = 60.0  # how long a set of export files outlives the next one
EMPTY = "The article is empty: write something, or undo fewer steps."
MD, DOCX, PDF, HTML = "md", "docx", "pdf", "html"
#: Made when their button is clicked, not with every version shown or saved: a PDF takes 0.2-0.5 s
#: (Chinese text the most), ten times a Word file.
ON_CLICK = (PDF, HTML)


def reading_line(text: str) -> str:
    """"1,234 words · 6 min read" for ``text`` (its [n] marks not counted; at least a minute),
    "" for an empty text."""
    words = word_count(strip_marks(text or ""))
    if not words:
        return ""
    minutes = max(1, round(words / WORDS_PER_MINUTE))
    return f"{words:,} word{'s' if words != 1 else ''} · {minutes} min read"


def reading_html(text: str) -> str:
    """``reading_line`` as the line under the article, or why there is nothing to export."""
    line = reading_line(text)
    return f"<span class='rat-reading'>{esc(line or EMPTY)}</span>"


@dataclass(frozen=True)
class Output:
    """One article's output: its files (``markdown``, ``docx``) and the texts to copy."""

    markdown: Path
    docx: Path
    markdown_text: str
    plain_text: str


class ExportFolder:
    """The folder a panel writes its export files to: created when first written to, removed when
    the process ends. ``keep``: seconds a set of files is kept once a newer one is written;
    ``clock``: the time (``time.monotonic``)."""

    def __init__(self, *, keep: float = KEEP_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.keep, self.clock = keep, clock
        self._dir: tempfile.TemporaryDirectory | None = None
        self._sets: dict[Path, float] = {}  # subfolder -> when it was last written
        self._lock = threading.Lock()  # handlers run in threads

    @property
    def path(self) -> Path:
        """The folder (``rat-export-*`` in the temporary directory). Raises OSError when it cannot
        be created."""
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="rat-export-")
        return Path(self._dir.name)

    def write(self, files: Mapping[str, bytes]) -> dict[str, Path]:
        """Write ``files`` (name -> content) as one set, in a subfolder named by their content (the
        same files give the same paths); then remove the other sets written more than ``keep``
        seconds ago. Returns each name's path. Raises OSError when the folder cannot be written."""
        digest = hashlib.sha256()
        for name, data in sorted(files.items()):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        with self._lock:
            folder = self.path / digest.hexdigest()[:16]
            folder.mkdir(exist_ok=True)
            paths = {}
            for name, data in files.items():
                paths[name] = folder / name
                if not paths[name].exists():
                    part = folder / f".{name}.part"
                    part.write_bytes(data)
                    part.replace(paths[name])
            now = self.clock()
            self._sets[folder] = now
            for old, written in list(self._sets.items()):
                if old != folder and now - written >= self.keep:
                    shutil.rmtree(old, ignore_errors=True)
                    del self._sets[old]
        return paths

    def output(self, view: RunView, edit: Edit, *, threshold: float = CITE_THRESHOLD, notes: bool = False,
               article: Article | None = None) -> Output:
        """The article as edited (``article_view.export_article``) as files and texts to copy;
        ``notes``: with the run notes (the steps never checked against a source) as an appendix
        of the files and the Markdown; ``article``: the article to write (a stored version as it
        reads), when not the edited text attributed anew. Raises OSError when the files cannot be written."""
        article = article or article_view.export_article(view, edit, threshold=threshold)
        markdown = to_markdown(article, notes=notes)
        md_name, docx_name = article_view.export_name(view, MD), article_view.export_name(view, DOCX)
        paths = self.write({md_name: markdown.encode("utf-8"), docx_name: to_docx(article, notes=notes)})
        return Output(markdown=paths[md_name], docx=paths[docx_name], markdown_text=markdown,
                      plain_text=to_text(article))

    def file(self, view: RunView, article: Article, fmt: str, *, notes: bool = False) -> Path:
        """``article`` as one file in ``fmt`` (one of ``ON_CLICK``), written now. Raises
        PdfFontMissing for a PDF no font here can draw, OSError when it cannot be written."""
        data = to_pdf(article, notes=notes) if fmt == PDF else to_html(article, notes=notes).encode("utf-8")
        name = article_view.export_name(view, fmt)
        return self.write({name: data})[name]

    def close(self) -> None:
        """Remove the folder and every file in it now."""
        with self._lock:
            if self._dir is not None:
                self._dir.cleanup()
                self._dir, self._sets = None, {}


# The copy buttons' script: copies its input to the clipboard (where the page is not served over
# https or from this machine, the browser has no navigator.clipboard: then by a selected textarea),
# and returns the line that says so (time-stamped, so a second copy shows it again).
COPY_JS = """async (text) => {
  const say = (cls, words) => `<span class='${cls}' data-at='${Date.now()}'>${words}</span>`;
  if (!text) return say('rat-copy-failed', 'Nothing to copy yet.');
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {
    const area = document.createElement('textarea');
    area.value = text;
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand('copy');
    area.remove();
    if (!done) return say('rat-copy-failed', 'Could not copy: allow this page to use the clipboard.');
  }
  return say('rat-copied', 'Copied ✓ (%s)');
}"""


def copy_js(what: str) -> str:
    """``COPY_JS`` saying what was copied ("Markdown", "text")."""
    return COPY_JS.replace("%s", what)
