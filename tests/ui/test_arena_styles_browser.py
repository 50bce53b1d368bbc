"""Outputs shown alike, as Chromium renders them through Gradio's Markdown (issue 22, item 5): in
"sources" and in "plain", the two panes of a pair hold the same kinds of HTML element whichever
methods wrote them (the same content written as a chat reply with 【1】 marks and a bulleted
Sources list, and as an imported report with [1] marks and a References section)."""

from __future__ import annotations

import pytest

import app as app_module
from common.settings import Settings
from tests.annotation.conftest import seed_outputs
from tests.annotation.test_present import SOURCED
from tests.ui.browser import chromium, chromium_missing, serve

TIMEOUT = 20_000
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

KINDS_JS = """id => [...new Set([...document.querySelectorAll('#' + id + ' .prose *')]
                     .map(el => el.tagName.toLowerCase()))].sort()"""


@pytest.mark.parametrize("style", ["sources", "plain"])
def test_both_panes_hold_the_same_kinds_of_element(tmp_path, style):
    app = app_module.build(Settings(db_path=tmp_path / "styles.db", arena_only=True, arena_style=style))
    seed_outputs(app.store, {"Describe owls": {"chat": SOURCED["chat"], "imported": SOURCED["imported"]}})
    with serve(app) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url)
        page.get_by_label("Your name").press_sequentially("ana")
        page.get_by_role("button", name="Start").click()
        page.locator("#rat-pane-a").get_by_text("owls", exact=False).first.wait_for(timeout=TIMEOUT)
        page.locator("#rat-pane-b").get_by_text("owls", exact=False).first.wait_for(timeout=TIMEOUT)
        side_a, side_b = page.evaluate(KINDS_JS, "rat-pane-a"), page.evaluate(KINDS_JS, "rat-pane-b")
        text_a = page.locator("#rat-pane-a").inner_text()
    app.store.close()
    assert side_a == side_b, (side_a, side_b)
    if style == "sources":
        assert {"ol", "li", "a", "h4"} <= set(side_a) and "[1]" in text_a and "Sources" in text_a
    else:
        assert not {"ol", "li", "a"} & set(side_a) and "[1]" not in text_a and "【" not in text_a
