"""Actions on a finished run's step cards (issue 23.2) in a real headless Chromium: regenerate a
step, search again with the author's own query, exclude a source. Each makes a new version of the
article and shows in History as it happened. The app, the fake model server and the local web are
those of tests/ui/test_writer_browser.py (one app for this module)."""

from __future__ import annotations

import re
import time

import pytest

from common.events import Final, PageRead, StepRedone, StepRevised
from data.versions import Versions
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.ui import test_writer_browser as shared
from tests.ui.browser import article_box, chromium_missing
from tests.ui.test_writer_browser import TIMEOUT, run_now
from ui import step_actions
from ui.runview import fold

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

# the Writer tests' app, stand-ins and browser (module-scoped: one of each for this module too)
stand_ins, app_url, browser = shared.stand_ins, shared.app_url, shared.browser
llm, web, app, open_page = shared.llm, shared.web, shared.app, shared.open_page


def open_in_history(page, run_id: str):
    """Open ``run_id`` in the History tab; its panel."""
    page.get_by_role("tab", name="History").click()
    history = page.locator("#rat-tab-history")
    history.get_by_label("Run", exact=True).fill(run_id)
    history.get_by_role("button", name="Open").click()
    expect(history.locator(".rat-progress")).to_contain_text("Done", timeout=TIMEOUT)
    return history


def finished_run(app, llm, task: str, steps: int = 3) -> tuple[str, RatAuthor]:
    author = RatAuthor(draft_steps(steps))
    llm.reply(author)
    return run_now(app, "rat-step", task), author


def versions_of(app, run_id: str) -> list[tuple[str, str]]:
    return [(v.action, v.text) for v in Versions(app.store).list(run_id)]


def test_regenerate_a_step_from_its_card(open_page, llm, app):
    run_id, author = finished_run(app, llm, "Regenerate: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    card = panel.locator("#rat-step-2")
    fresh = author.steps[1] + " [regenerated]"
    llm.queue(fresh)  # the one call a regenerate makes
    card.locator("button.rat-act-regenerate").click()
    expect(card.locator(".rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)
    expect(panel.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.")
    article = article_box(panel)
    expect(article).to_have_value(re.compile(re.escape(fresh)))
    assert article.input_value().split("\n\n")[0] == author.steps[0] + " [revised]", "the other steps stay"
    assert versions_of(app, run_id)[-1] == ("regenerate", article.input_value())
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"regenerate"))

    # History, opened afresh: the card says what happened, and when
    again, _ = open_page()
    card = open_in_history(again, run_id).locator("#rat-step-2")
    expect(card.locator(".rat-redone")).to_contain_text(re.compile(r"regenerated \d\d:\d\d"))
    # the buttons stay on one line, the line of what was done again under them (it once squeezed
    # them into a column of one button each)
    tops = [b["y"] for b in (button.bounding_box() for button in card.locator("summary button.rat-act").all())]
    assert len(tops) >= 3 and max(tops) - min(tops) < 4, tops
    assert card.locator(".rat-redone").bounding_box()["y"] > max(tops)
    stored = app.store.events(run_id)
    assert [e.action for e in stored if isinstance(e, StepRedone)] == ["regenerate"]
    assert [e.i for e in stored if isinstance(e, StepRevised)] == [1, 2, 3, 2], "the earlier revision stays"


def test_search_again_with_the_authors_query(open_page, llm, app):
    run_id, _ = finished_run(app, llm, "Search again: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    card = panel.locator("#rat-step-1")
    card.locator("button.rat-act-search").click()
    ask = panel.locator(".rat-ask")
    expect(ask).to_be_visible()
    query = ask.get_by_label("Your own query")
    assert query.input_value() == card.locator(".rat-query").text_content(), "prefilled with the step's query"
    query.fill("")
    query.press_sequentially("virtualenv pip environments")
    ask.get_by_role("button", name="Search again").click()
    expect(card.locator(".rat-redone")).to_contain_text("searched again: “virtualenv pip environments”",
                                                        timeout=TIMEOUT)
    expect(card.locator(".rat-query")).to_have_text("virtualenv pip environments")
    expect(card).to_contain_text("the author's own query")
    assert versions_of(app, run_id)[-1][0] == "search"

    again, _ = open_page()
    card = open_in_history(again, run_id).locator("#rat-step-1")
    expect(card.locator(".rat-redone")).to_contain_text("searched again: “virtualenv pip environments”")
    expect(card.locator(".rat-query")).to_have_text("virtualenv pip environments")


def test_an_empty_query_is_refused_by_name(open_page, llm, app):
    run_id, _ = finished_run(app, llm, "An empty query: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    panel.locator("#rat-step-1 button.rat-act-search").click()
    ask = panel.locator(".rat-ask")
    ask.get_by_label("Your own query").fill("")
    ask.get_by_role("button", name="Search again").click()
    expect(ask).to_be_visible()  # nothing is sent: the box waits for a query
    assert not [e for e in app.store.events(run_id) if isinstance(e, StepRedone)]


def a_page_of_one_step(revised: list[StepRevised]) -> tuple[int, str]:
    """A step and a source of it that no other step used."""
    for rev in revised:
        others = {u for e in revised if e.i != rev.i for u in e.sources}
        for url in rev.sources:
            if url not in others:
                return rev.i, url
    raise AssertionError("every source is shared by several steps: script the steps apart")


def test_exclude_a_source_and_revise_again(open_page, llm, app):
    run_id, _ = finished_run(app, llm, "Exclude: a short history of Python 3.", steps=4)
    stored = app.store.events(run_id)
    i, gone = a_page_of_one_step([e for e in stored if isinstance(e, StepRevised)])
    assert [p.url for p in stored if isinstance(p, PageRead) and p.i == i].count(gone) == 1
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    card = panel.locator(f"#rat-step-{i}")
    card.locator("summary.rat-card-head > b").click()  # open the folded card: its pages get their ✕
    page_item = card.locator("ul.rat-pages > li", has=page.locator(f"a[href='{gone}']"))
    page_item.hover()
    page_item.locator("button.rat-x").click()
    expect(card.locator(".rat-redone")).to_contain_text(f"excluded {step_actions.site(gone)}", timeout=TIMEOUT)
    expect(panel.locator(".rat-progress")).to_contain_text("Done")
    expect(card.locator(f"ul.rat-pages a[href='{gone}']")).to_have_count(0)
    view = fold(app.store.events(run_id))
    assert gone not in {s.url for s in view.final.sources}
    expect(panel.locator(f".block.rat-sources-panel a[href='{gone}']")).to_have_count(0)
    expect(panel.locator(".block.rat-sources-panel a").first).to_be_attached()  # the other sources are listed
    assert versions_of(app, run_id)[-1][0] == "exclude"
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"exclude"))

    again, _ = open_page()
    card = open_in_history(again, run_id).locator(f"#rat-step-{i}")
    expect(card.locator(".rat-redone")).to_contain_text(f"excluded {step_actions.site(gone)}")


def test_the_cards_undo_drives_the_boxes_above_the_article(open_page, llm, app):
    run_id, author = finished_run(app, llm, "Undo from the card: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    card = panel.locator("#rat-step-2")
    box = panel.get_by_role("checkbox", name=re.compile("^Step 2: "))
    card.locator("button.rat-act-undo").click()
    expect(card.locator(".rat-badge")).to_have_text("undone", timeout=TIMEOUT)
    expect(box).to_be_checked()
    article = article_box(panel)
    expect(article).to_have_value(re.compile(re.escape(f"\n\n{author.steps[1]}\n\n")))
    assert versions_of(app, run_id)[-1][0] == "undo"
    card.locator("button.rat-act-undo").click()  # now "Put back"
    expect(box).not_to_be_checked(timeout=TIMEOUT)
    expect(card.locator(".rat-badge")).to_have_text("revised")


def test_a_reload_mid_redo_follows_it(open_page, llm, app):
    author = RatAuthor(draft_steps(2))
    llm.reply(author)
    page, writer = open_page()
    shared.start(writer, "Reload mid-redo: a short history of Python 3.", method="rat")
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    llm.latency = 1.0  # slow enough to reload while the redo goes on
    writer.locator("#rat-step-1 button.rat-act-regenerate").click()
    expect(progress).to_contain_text(re.compile(r"Step [12] of 2"), timeout=TIMEOUT)
    page.reload()  # the run is the server's: the page comes back to it, still going on
    writer = page.locator("#rat-tab-writer")
    expect(writer.locator("#rat-step-1 .rat-note", has_text="Revised again at the author's request")).to_be_attached(
        timeout=TIMEOUT)
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    expect(writer.locator("#rat-step-1 .rat-redone")).to_contain_text("regenerated")
    run_id = app.store.list_runs(limit=1)[0].id
    assert [e.i for e in app.store.events(run_id) if isinstance(e, StepRevised)] == [1, 2, 1, 2], \
        "rat: step 2 is revised again on top of step 1"
    final = [e for e in app.store.events(run_id) if isinstance(e, Final)][-1]
    # the tab that asked was reloaded: the server saves the redo's text when the run ends
    deadline = time.monotonic() + 5
    while not versions_of(app, run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert versions_of(app, run_id) == [("regenerate", final.text)]
