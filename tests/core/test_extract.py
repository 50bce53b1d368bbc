"""core.retrieval.extract: the one HTML extraction (trafilatura, behind one lock) that the fetcher and the
corpus share, and PDF text through pypdf when it is installed."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from common.errors import ExtractionError
from core.retrieval import extract as extract_module
from core.retrieval.corpus import extract as extract_file
from core.retrieval.extract import extract_html, extract_pdf, pdf_supported
from tests.fakes.web_server import FIXTURES

PAGE = (FIXTURES / "blog.python.org.html").read_bytes()


def test_html_gives_markdown_title_and_metadata_without_front_matter():
    page = extract_html(PAGE.decode("utf-8"), url="https://blog.python.org/2016/12/python-360-is-now-available.html")
    assert page.title == "Python 3.6.0 is now available!"
    assert "newest major release" in page.text and not page.text.startswith("---")
    assert set(page.metadata) <= set(extract_module.METADATA_FIELDS) and page.metadata.get("date")
    assert extract_html(PAGE) == extract_html(PAGE.decode("utf-8")), "bytes are decoded the same way"


def test_without_metadata_the_same_text_and_the_title_element():
    url = "https://blog.python.org/2016/12/python-360-is-now-available.html"
    full, plain = extract_html(PAGE, url=url), extract_html(PAGE, url=url, metadata=False)
    assert plain.text == full.text and plain.metadata == {}
    assert plain.title == "Python Insider: Python 3.6.0 is now available!", "the <title> element, site name and all"
    bare = "<html><head><title>Menu &amp; more</title></head><body><nav><a href='/'>Home</a></nav></body></html>"
    assert extract_html(bare, keep_all_text=True, metadata=False) == extract_module.Extracted("Menu & more", "Home")


def test_without_main_text_all_visible_text_is_kept_only_when_asked(monkeypatch):
    import trafilatura

    monkeypatch.setattr(trafilatura, "extract_with_metadata", lambda *args, **kwargs: None)  # "too little text"
    html = "<html><head><title>Menu &amp; more</title></head><body><nav><a href='/'>Home</a></nav></body></html>"
    assert extract_html(html) == extract_module.Extracted("Menu & more", "")
    kept = extract_html(html, keep_all_text=True)
    assert kept.title == "Menu & more" and "Home" in kept.text
    assert extract_html("<html><body></body></html>", keep_all_text=True).text == ""


def test_a_failing_extraction_is_an_extraction_error_naming_the_page(monkeypatch):
    import trafilatura

    def broken(*args, **kwargs):
        raise ValueError("lxml gave up")

    monkeypatch.setattr(trafilatura, "extract_with_metadata", broken)
    with pytest.raises(ExtractionError, match=r"https://example\.com/a: lxml gave up; the page may be malformed"):
        extract_html("<p>x</p>", url="https://final.example/", label="https://example.com/a")


def test_the_fetcher_and_the_corpus_extract_one_at_a_time(monkeypatch, tmp_path):
    import trafilatura

    real = trafilatura.extract_with_metadata
    inside, most = 0, 0
    count = threading.Lock()

    def counting(*args, **kwargs):
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)  # long enough for another thread to try to come in
        try:
            return real(*args, **kwargs)
        finally:
            with count:
                inside -= 1

    monkeypatch.setattr(trafilatura, "extract_with_metadata", counting)
    jobs = [lambda: extract_html(PAGE.decode("utf-8"), url="https://blog.python.org/"),  # what a pool worker calls
            lambda: extract_file(tmp_path / "page.html", PAGE)]  # what the corpus calls
    threads = [threading.Thread(target=jobs[n % 2]) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


def test_pdf_without_pypdf_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as where it is not installed (the tests install it)
    assert not pdf_supported()
    with pytest.raises(ExtractionError, match="pip install pypdf"):
        extract_pdf(b"%PDF-1.4\n%%EOF\n")


def test_a_pdf_is_read_with_pypdf():
    """A PDF as the app exports one (fpdf2), read back: its title and its text, Chinese too."""
    from common.types import Source
    from core.article.article import Article
    from core.article.pdf import to_pdf

    source = Source(n=1, url="https://www.python.org/downloads/release/python-360/", title="Python 3.6.0")
    article = Article(task="Python 3.6", text="Python 3.6 added f-strings [1].\n\nPython 3.6 于 2016 年发布。",
                      sources=(source,)).renumbered()
    read = extract_pdf(to_pdf(article))
    assert pdf_supported() and read.title == "Python 3.6"
    assert "Python 3.6 added f-strings" in read.text and "2016" in read.text.replace("\0", "")


async def test_the_pool_extracts_as_the_process_does_in_parallel_workers():
    import asyncio
    import os

    from core.retrieval.extract import EXTRACT_WORKERS, _get_pool, extract_html_async, warm_up

    url = "https://blog.python.org/2016/12/python-360-is-now-available.html"
    assert all(f.result(timeout=60) for f in warm_up())
    pages = await asyncio.gather(*(extract_html_async(PAGE, url=url) for _ in range(4)))
    assert all(p == extract_html(PAGE, url=url) for p in pages), "the same page, title, text and metadata"
    pids = {f.result(timeout=30) for f in [_get_pool().submit(os.getpid) for _ in range(8 * EXTRACT_WORKERS)]}
    assert os.getpid() not in pids, "extraction runs outside the app's process"


async def test_a_dead_worker_is_an_extraction_error_and_the_next_page_works():
    import os
    from concurrent.futures.process import BrokenProcessPool

    from core.retrieval.extract import _get_pool, extract_html_async

    dying = _get_pool().submit(os._exit, 1)
    with pytest.raises(BrokenProcessPool):
        dying.result(timeout=60)
    with pytest.raises(ExtractionError, match=r"worker process ended.*Try again"):
        await extract_html_async(PAGE, url="https://blog.python.org/", label="the page")
    page = await extract_html_async(PAGE, url="https://blog.python.org/")
    assert page.text and page == extract_html(PAGE, url="https://blog.python.org/")
