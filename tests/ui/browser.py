"""Helpers for the browser tests: serve the app on a free 127.0.0.1 port in this process (Gradio
runs its own server thread), and start Debian's headless Chromium through Playwright (never
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
def serve(app) -> Iterator[str]:
    """The app on http://127.0.0.1:<free port>/ for the duration of the block."""
    from ui.app import build_app, css

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    demo = build_app(app.settings, app.store, app.clients, app.runner, app.arena)
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, css=css(), quiet=True,
                show_error=True, footer_links=[])
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


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
