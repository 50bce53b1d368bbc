"""The test process's shared Chromium (tests/ui/browser.py): lent to each block with nothing of
the block before it left open, and leaving the thread free for the event loops of later tests."""

from __future__ import annotations

import asyncio

import pytest

from tests.ui.browser import chromium, chromium_missing

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]


def test_a_block_leaves_no_context_open_and_a_later_test_can_run_its_own_loop():
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.set_content("<p id=x>one</p>")
        assert page.locator("#x").inner_text() == "one"
        browser.new_page().set_content("<p>two</p>")
        assert len(browser.contexts) >= 2
    assert asyncio.run(asyncio.sleep(0, result="a loop of its own")) == "a loop of its own"
    with chromium() as again:
        assert again.contexts == []  # (the same browser: what the block before opened is closed)
        assert again.new_page().evaluate("1 + 1") == 2
    assert asyncio.run(asyncio.sleep(0, result=2)) == 2
