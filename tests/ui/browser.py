"""Helpers for the browser tests: serve the app on a free 127.0.0.1 port in this process (the
product's own server, ``ui.app.serve``, in a thread), and start Debian's headless Chromium through Playwright (never
`playwright install`: nothing is downloaded)."""

from __future__ import annotations

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


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (playwright's sync Browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


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
