"""Text out of documents: the one place that runs trafilatura (HTML: main text as Markdown, a
title and metadata) and pypdf (PDF, optional). The fetcher (:mod:`core.retrieval.fetch`) and the
local corpus (:mod:`core.retrieval.corpus`) both extract through here, so both go through the same
lock (one trafilatura call at a time in a process).

Both functions are synchronous and CPU-bound. On an event loop, :func:`extract_html_async`
runs ``extract_html`` in a pool of worker processes (``EXTRACT_WORKERS``): each has its own
trafilatura and lxml, so pages are extracted in parallel, safely, and off the loop's process.
:func:`warm_up` starts the workers (and their imports) ahead of the first page; :func:`shutdown`
ends them. It is called from one place: an ``atexit`` hook that the first pool registers, so every
way out of the process that unwinds (the end of a command, an error, Ctrl-C, or SIGTERM, which the
front end turns into Ctrl-C) ends the workers before the interpreter goes; left alone, they would
outlive the app, and a worker still starting would print a traceback as the app's semaphores go.
A worker that finds the app gone (killed, so that nothing ran) ends itself within a second or two.
"""

from __future__ import annotations

import asyncio
import atexit
import html as html_lib
import io
import multiprocessing
import os
import re
import signal
import threading
import time
from concurrent.futures import Future, InvalidStateError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
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
#: Seconds :func:`shutdown` waits for the workers to end before it kills them.
STOP_SECONDS = 3.0
_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()
_exit_hook = False  # shutdown is registered with atexit (once, by the first pool)


def _get_pool() -> ProcessPoolExecutor:
    global _pool, _exit_hook
    with _pool_lock:
        if _pool is None:
            # forkserver: workers are forked from a clean server process, never from this one (whose
            # threads may hold locks); the server imports trafilatura once, so workers start warm.
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["core.retrieval.extract", "trafilatura"])
            _pool = ProcessPoolExecutor(max_workers=EXTRACT_WORKERS, mp_context=context,
                                        initializer=_worker_started, initargs=(os.getpid(),))
            if not _exit_hook:  # runs before multiprocessing's own exit hook (atexit runs the last first)
                atexit.register(shutdown)
                _exit_hook = True
        return _pool


def shutdown(timeout: float = STOP_SECONDS) -> None:
    """Stop the pool and end its worker processes now: pages being extracted are given up (their
    runs are ending too). Waits at most ``timeout`` seconds for the workers to end, then kills
    those left. A worker being started as this is called is waited for (the pool's own lock) and
    ended with the others. Idempotent; a later page starts a new pool. Called by the ``atexit``
    hook that the first pool registers (see the module's docstring)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is None:
        return
    workers = pool._processes  # the pool's own dict (pid -> process): a worker being started is added to it
    pool.shutdown(wait=False, cancel_futures=True)  # waits for a submit that is starting a worker, then refuses more
    deadline = time.monotonic() + timeout
    _end(list((workers or {}).values()), timeout)
    # The pool's manager thread sees its workers gone and closes the pool's queues: let it finish
    # now, before multiprocessing's own exit hook closes them under it (a traceback at exit).
    for thread in threading.enumerate():
        if getattr(thread, "executor_reference", lambda: None)() is pool:
            thread.join(max(0.1, deadline - time.monotonic()))


def _end(processes: list, timeout: float) -> None:
    """SIGTERM each process, wait up to ``timeout`` seconds in all, then SIGKILL the ones left."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(1.0)


def _worker_started(app_pid: int) -> None:
    """In each worker as it starts: Ctrl-C in a terminal reaches the whole process group, and the
    app ends its workers itself (no traceback from each of them); and a worker whose app is gone
    without ending it (SIGKILL, a crash) ends itself, instead of waiting for pages forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with, args=(app_pid,), name="extract-app-watch", daemon=True).start()


def _end_with(app_pid: int, every: float = 1.0) -> None:
    while _alive(app_pid):
        time.sleep(every)
    os._exit(0)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie, dead but not yet reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[:1] not in (["Z"], ["X"])
    except OSError:  # no /proc (not Linux): it exists
        return True


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
                with suppress(InvalidStateError):  # some may have been settled already
                    future.set_exception(exc)

    threading.Thread(target=start, name="extract-warm-up", daemon=True).start()
    return futures


def _pass_on(to: Future, done: Future) -> None:
    try:
        if done.cancelled():  # the pool was shut down before the worker started
            to.cancel()
        elif done.exception() is not None:
            to.set_exception(done.exception())
        else:
            to.set_result(done.result())
    except InvalidStateError:  # already settled: the warm-up failed as a whole (the pool was shut down)
        pass


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
