"""Text out of documents: the one place that runs trafilatura (HTML: main text as Markdown, a
title and metadata) and pypdf (PDF, optional). The fetcher (:mod:`core.retrieval.fetch`) and the
local corpus (:mod:`core.retrieval.corpus`) both extract through here, so both go through the same
lock (one trafilatura call at a time in a process).

Both functions are synchronous and CPU-bound. On an event loop, :func:`extract_html_async`
runs ``extract_html`` in a pool of worker processes (``EXTRACT_WORKERS``): each has its own
trafilatura and lxml, so pages are extracted in parallel, safely, and off the loop's process.
:func:`warm_up` starts the workers (and their imports) ahead of the first page.
"""

from __future__ import annotations

import asyncio
import html as html_lib
import io
import multiprocessing
import os
import re
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial

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
                 label: str | None = None, metadata: bool = True) -> Extracted:
    """The main text of an HTML page as Markdown (trafilatura), with its title and metadata.

    ``url`` is the page's address (it helps trafilatura with metadata). A page with too little
    "main" text gives ``text=""``, unless ``keep_all_text``: then all its visible text is kept
    (the corpus wants every file it holds to be findable; the fetcher wants only articles).
    Bytes are decoded by trafilatura. The title is the page's metadata title, else its <title>.
    ``label`` names the document in an error message (default: ``url``). Without ``metadata``,
    only the text, and the title of the <title> element: about half the work per page (the
    runs' path, where only the title is shown and the search result names the page).

    Raises ExtractionError when trafilatura or lxml fail on the input."""
    import trafilatura  # imported on first use: it takes a while to load
    from trafilatura.metadata import extract_metadata

    document = None
    try:
        with _EXTRACTING:
            if metadata:
                document = trafilatura.extract_with_metadata(
                    html, url=url, output_format="markdown", include_comments=False, include_tables=True
                )
                if document is None and keep_all_text:  # no main text: the metadata alone
                    document = extract_metadata(html, url)
                text = _strip_front_matter(document.text or "") if document is not None else ""
            else:
                text = (trafilatura.extract(html, url=url, output_format="markdown", include_comments=False,
                                            include_tables=True, with_metadata=False) or "").strip()
            if not text and keep_all_text:
                text = (trafilatura.html2txt(html) or "").strip()
    except Exception as exc:  # trafilatura and lxml raise many types on broken input
        raise ExtractionError(f"Could not extract the text of {label or url or 'a page'}: {exc}; "
                              "the page may be malformed.") from exc
    if document is None:
        return Extracted(_html_title(html), text)
    found = {name: value for name in METADATA_FIELDS if (value := getattr(document, name, None))}
    return Extracted((document.title or _html_title(html)).strip(), text, found)


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


# -- the pool of extraction processes ------------------------------------------------------------
#: Worker processes for extraction: one per core, at most 4 (each holds trafilatura, ~60 MB).
EXTRACT_WORKERS = max(1, min(4, os.cpu_count() or 1))
_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _get_pool() -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            # forkserver: workers are forked from a clean server process, never from this one (whose
            # threads may hold locks); the server imports trafilatura once, so workers start warm.
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["core.retrieval.extract", "trafilatura"])
            _pool = ProcessPoolExecutor(max_workers=EXTRACT_WORKERS, mp_context=context)
        return _pool


def _drop_pool(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _pool_lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def warm_up() -> list[Future]:
    """Start the extraction workers and their imports (call it when a run starts, so the first
    page finds them ready). Returns at once: the pool is started by a background thread; the
    futures (one per worker) say when the workers are ready."""
    futures: list[Future] = [Future() for _ in range(EXTRACT_WORKERS)]

    def start() -> None:
        try:
            pool = _get_pool()
            for future in futures:
                pool.submit(_ready).add_done_callback(partial(_pass_on, future))
        except Exception as exc:  # the pages will say so when they are extracted
            for future in futures:
                future.set_exception(exc)

    threading.Thread(target=start, name="extract-warm-up", daemon=True).start()
    return futures


def _pass_on(to: Future, done: Future) -> None:
    if done.exception() is not None:
        to.set_exception(done.exception())
    else:
        to.set_result(done.result())


def _ready() -> bool:
    import trafilatura  # noqa: F401  (the import is the warm-up)

    return True


async def extract_html_async(html: str | bytes, *, url: str | None = None, keep_all_text: bool = False,
                             label: str | None = None, metadata: bool = True) -> Extracted:
    """:func:`extract_html` in a worker process. Raises ExtractionError, also when the worker
    died (the pool is started anew for the next page)."""
    pool = _get_pool()
    job = partial(extract_html, html, url=url, keep_all_text=keep_all_text, label=label, metadata=metadata)
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, job)
    except BrokenProcessPool as exc:
        _drop_pool(pool)
        what = label or url or "a page"
        raise ExtractionError(f"The extraction of {what} stopped: its worker process ended ({exc}). Try again; "
                              "if it keeps happening, the page may be too large to parse.") from exc


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
