"""Helpers for the browser tests: serve the app on a free 127.0.0.1 port in this process (the
product's own server, ``ui.app.serve``, in a thread), and lend each test the test process's one
headless Chromium, Debian's, driven through Playwright (never `playwright install`: nothing is
downloaded)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import free_port

CHROMIUM = os.environ.get("RAT_STUDIO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def chromium_missing() -> str:
    """Why the browser tests cannot run here, or ''."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set RAT_STUDIO_CHROMIUM)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements-dev.txt)"
    return ""


@contextmanager
def serve(app, accounts=None) -> Iterator[str]:
    """The app (``app.build``'s parts) on http://127.0.0.1:<free port>/ for the duration of the
    block, served as ``python app.py`` serves it; ``accounts``: an ``Accounts`` of the app's store
    (e.g. with a fast password hasher)."""
    from ui.app import serve as serve_app

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    served = serve_app(app.settings, app.store, app.clients, app.runner, app.rooms, accounts, port=free_port())
    try:
        yield served.url
    finally:
        served.close()


#: The test process's one headless Chromium (and Playwright's driver), launched by the first
#: ``chromium()`` and closed when the session ends (``close_chromium``, tests/conftest.py).
_SHARED: dict[str, object] = {}


def _launched():
    browser = _SHARED.get("browser")
    if browser is None or not browser.is_connected():  # (first use, or a test crashed it)
        if "playwright" not in _SHARED:
            from playwright.sync_api import sync_playwright

            manager = sync_playwright()
            _SHARED["playwright"], _SHARED["loop"] = manager.start(), manager._loop
        browser = _SHARED["browser"] = _SHARED["playwright"].chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    return browser


@contextmanager
def _lent_loop():
    """Playwright's sync API runs its event loop inside the thread that drives it, and marks that
    loop as the thread's running one between its calls: a test after a browser test in the same
    process could not start a loop of its own ("asyncio.run() cannot be called from a running event
    loop"). So the mark is put back for the browser's block only."""
    loop, before = _SHARED.get("loop"), asyncio._get_running_loop()
    if loop is not None:
        asyncio._set_running_loop(loop)
    try:
        yield
    finally:
        asyncio._set_running_loop(before)  # (None, or an enclosing block's)


class Borrowed:
    """The shared Chromium as one block of a test sees it (playwright's Browser): each context or
    page opened through it is a fresh one (cookies, storage and cache of its own), closed when the
    block ends."""

    def __init__(self, browser):
        self._browser = browser
        self._opened: list = []

    def new_context(self, **options):
        context = self._browser.new_context(**options)
        self._opened.append(context)
        return context

    def new_page(self, **options):
        page = self._browser.new_page(**options)
        self._opened.append(page.context)
        return page

    def __getattr__(self, name: str):
        return getattr(self._browser, name)

    def close_opened(self) -> None:
        while self._opened:
            try:
                self._opened.pop().close()
            except Exception:  # (gone with a crashed browser: nothing left to close)
                pass


@contextmanager
def chromium() -> Iterator[Borrowed]:
    """A headless Chromium (as playwright's sync Browser) for the block. One is launched per
    test process and lent to each block: launching one (Chromium and Playwright's driver) cost
    about 5 CPU-s, and the suite launched 36 (process accounting of a whole run). What a block
    opens in it is closed after the block, so no page of one test lives on into the next."""
    with _lent_loop():
        borrowed = Borrowed(_launched())
        try:
            yield borrowed
        finally:
            borrowed.close_opened()


def close_chromium() -> None:
    """Close the test process's Chromium and Playwright's driver, if one was launched."""
    if "playwright" not in _SHARED:
        return
    with _lent_loop():
        browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright")
        try:
            if browser is not None:
                browser.close()
        finally:
            playwright.stop()
            _SHARED.pop("loop", None)


def article_box(panel):
    """The editable article of a run panel (Writer or History): its Edit view switched on."""
    panel.get_by_role("radio", name="Edit").check()
    return panel.get_by_role("textbox", name=re.compile("^Article"))


def logged_in(browser, url: str, name: str, password: str, width: int = 1366, height: int = 768):
    """A new page at width x height, logged in as ``name`` on the app's login page (the page goes
    on to where the account's role lands)."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(url + "login")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    return page
