"""The draft as step cards (issue 23.3) in a real headless Chromium: a draft-only run's steps are
cards to edit, move up or down, delete and add, kept in step with the draft's textbox, and
Continue revises them in their new order. The app, the fake model server and the local web are
those of tests/ui/test_writer_browser.py (one app for this module)."""

from __future__ import annotations

import pytest

from common.events import DraftReady
from tests.fakes.scripts import RatAuthor, draft_steps, sections
from tests.ui import test_writer_browser as shared
from tests.ui.browser import chromium_missing
from tests.ui.test_writer_browser import TIMEOUT, start

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

# the Writer tests' app, stand-ins and browser (module-scoped: one of each for this module too)
stand_ins, app_url, browser = shared.stand_ins, shared.app_url, shared.browser
llm, web, app, open_page = shared.llm, shared.web, shared.app, shared.open_page


def expect_steps(cards, steps: list[str]) -> None:
    """The draft's cards hold ``steps``, in this order."""
    expect(cards).to_have_count(len(steps))
    for k, step in enumerate(steps):
        expect(cards.nth(k).locator("textarea")).to_have_value(step)


def test_move_delete_add_steps_as_cards_then_continue(open_page, llm, app):
    author = RatAuthor(draft_steps(3))
    llm.reply(author)
    page, writer = open_page()
    start(writer, "Write about Python packaging, as cards.", method="rat-step", draft_only=True)
    expect(writer.locator(".rat-progress")).to_contain_text("Draft ready: 3 steps.", timeout=TIMEOUT)
    cards = writer.locator(".rat-dcard")
    expect(cards).to_have_count(3)
    expect_steps(cards, author.steps)
    s1, s2, s3 = author.steps

    cards.nth(2).get_by_role("button", name="Move up (step 3)").click()
    expect_steps(cards, [s1, s3, s2])
    cards.nth(0).get_by_role("button", name="Delete this step (step 1)").click()
    expect_steps(cards, [s3, s2])
    expect(cards.nth(0).get_by_role("button", name="Move up (step 1)")).to_be_disabled()
    writer.get_by_role("button", name="+ Add a step").click()
    expect(cards).to_have_count(3)
    new = cards.nth(2).locator("textarea")
    expect(new).to_be_focused()
    new.press_sequentially("A closing step on wheels.")
    editor = writer.get_by_label("Draft steps")
    expect(editor).to_have_value("\n\n".join([s3, s2, "A closing step on wheels."]))

    # editing a card's text is written into the textbox too
    cards.nth(1).locator("textarea").press_sequentially(" EDITED")
    expect(editor).to_have_value("\n\n".join([s3, s2 + " EDITED", "A closing step on wheels."]))

    writer.get_by_role("button", name="Continue").click()
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    run_id = app.store.list_runs(limit=1)[0].id
    drafts = [e for e in app.store.events(run_id) if isinstance(e, DraftReady)]
    assert drafts[-1].steps == (s3, s2 + " EDITED", "A closing step on wheels."), "the steps in their new order"
    revised = [sections(p)["Paragraph to revise"] for p in author.of_kind("revise-step")]
    assert revised == list(drafts[-1].steps)


@pytest.mark.parametrize("width, height", [(1366, 768), (1920, 1080)])
def test_a_draft_waiting_for_edits_is_brought_into_view(open_page, llm, width, height):
    """With "Follow the active step" ticked, the draft's cards are scrolled into view when a
    draft-only run stops at its draft (they sat 1,200 px below the window at 1366x768); after the
    author scrolls away, a re-render does not pull the page back."""
    llm.reply(RatAuthor(draft_steps(6)))
    page, writer = open_page()
    page.set_viewport_size({"width": width, "height": height})
    start(writer, f"Write about Python packaging, in view ({width}).", method="rat-step", draft_only=True)
    expect(writer.locator(".rat-progress")).to_contain_text("Draft ready: 6 steps.", timeout=TIMEOUT)
    first = writer.locator(".rat-dcard").first
    expect(first).to_be_visible()
    page.wait_for_function("""() => { const b = document.querySelector('#rat-tab-writer .rat-dcard')
                                        .getBoundingClientRect(); return b.top >= 0 && b.bottom <= innerHeight; }""",
                           timeout=TIMEOUT)
    last = writer.locator(".rat-dcard").last.bounding_box()
    go_on = writer.get_by_role("button", name="Continue", exact=True).bounding_box()
    assert 0 < go_on["y"] - (last["y"] + last["height"]) < 120, "Continue right under the last card"
    page.evaluate("window.scrollTo(0, 0)")  # the author goes up to read the task again
    first.locator("textarea").evaluate("t => { t.value += ' more'; "
                                       "t.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_timeout(500)
    assert page.evaluate("scrollY") == 0, "brought into view once, not at every change"
