"""Text out of documents: the one place that runs trafilatura (HTML: main text as Markdown, a
title and metadata) and pypdf (PDF, optional). The fetcher (:mod:`core.fetch`) and the local
corpus (:mod:`core.corpus`) both extract through here, so both go through the same lock.

Both functions are synchronous and CPU-bound: call them from a worker thread
(``asyncio.to_thread``) when on an event loop.
"""

from __future__ import annotations

import html as html_lib
import io
import re
import threading
from dataclasses import dataclass, field

from common.errors import ExtractionError

#: The metadata kept from a page, when trafilatura finds it.
METADATA_FIELDS = ("author", "date", "sitename", "description")

_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)

# trafilatura keeps module-level lxml parsers and caches, which are not safe to use from two
# threads at once (we saw heap corruption); extraction is CPU-bound under the GIL anyway, so
# one extraction at a time costs little. Every trafilatura call goes through this lock.
_EXTRACTING = threading.Lock()


@dataclass(frozen=True)
class Extracted:
    """What a document holds: its title ("" when it has none), its text (Markdown for HTML;
    "" when nothing could be extracted) and metadata (``METADATA_FIELDS`` that were found)."""

    title: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)


def extract_html(html: str | bytes, *, url: str | None = None, keep_all_text: bool = False,
                 label: str | None = None) -> Extracted:
    """The main text of an HTML page as Markdown (trafilatura), with its title and metadata.

    ``url`` is the page's address (it helps trafilatura with metadata). A page with too little
    "main" text gives ``text=""``, unless ``keep_all_text``: then all its visible text is kept
    (the corpus wants every file it holds to be findable; the fetcher wants only articles).
    Bytes are decoded by trafilatura. The title is the page's metadata title, else its <title>.
    ``label`` names the document in an error message (default: ``url``).

    Raises ExtractionError when trafilatura or lxml fail on the input."""
    import trafilatura  # imported on first use: it takes a while to load
    from trafilatura.metadata import extract_metadata

    try:
        with _EXTRACTING:
            document = trafilatura.extract_with_metadata(
                html, url=url, output_format="markdown", include_comments=False, include_tables=True
            )
            if document is None and keep_all_text:  # no main text: the metadata alone
                document = extract_metadata(html, url)
            text = _strip_front_matter(document.text or "") if document is not None else ""
            if not text and keep_all_text:
                text = (trafilatura.html2txt(html) or "").strip()
    except Exception as exc:  # trafilatura and lxml raise many types on broken input
        raise ExtractionError(f"Could not extract the text of {label or url or 'a page'}: {exc}; "
                              "the page may be malformed.") from exc
    if document is None:
        return Extracted(_html_title(html), "")
    metadata = {name: value for name in METADATA_FIELDS if (value := getattr(document, name, None))}
    return Extracted((document.title or _html_title(html)).strip(), text, metadata)


def pdf_supported() -> bool:
    """True when ``pypdf`` can be imported, i.e. PDFs can be read."""
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return False
    return True


def extract_pdf(data: bytes) -> Extracted:
    """The text of a PDF (pages separated by blank lines) and its metadata title ("" when it has
    none).

    Raises ExtractionError when ``pypdf`` is not installed (the message says to install it) or
    the file cannot be read."""
    try:
        import pypdf
    except ImportError as exc:
        raise ExtractionError("PDF files need the pypdf package: pip install pypdf.") from exc
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        text = "\n\n".join((page.extract_text() or "").strip() for page in reader.pages)
        title = (reader.metadata.title if reader.metadata else None) or ""
    except (pypdf.errors.PyPdfError, ValueError, KeyError, OSError) as exc:
        raise ExtractionError(f"Cannot read the PDF: {exc}; the file may be damaged or encrypted.") from exc
    return Extracted(str(title).strip(), text.strip())


# -- helpers -----------------------------------------------------------------------------------
def _strip_front_matter(text: str) -> str:
    """trafilatura puts the metadata before the Markdown as a YAML block (one line per field);
    we keep the metadata separately, so drop it."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end != -1:
            return text[end + len("\n---\n"):].strip()
    return text.strip()


def _html_title(html: str | bytes) -> str:
    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    found = _TITLE.search(html)
    return " ".join(html_lib.unescape(found.group(1)).split()) if found else ""
