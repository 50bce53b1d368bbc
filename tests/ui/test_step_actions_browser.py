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
from ui import step_actions, writer
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
    deadline = time.monotonic() + TIMEOUT / 1000
    while not versions_of(app, run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert versions_of(app, run_id) == [("regenerate", final.text)]


# -- citations stay true after step actions (issue 36) --------------------------------------------
SHOWN_MARKS_JS = """panel => {
  const sentences = [...panel.querySelectorAll('.rat-cited-panel .rat-sentence')].map(s => {
    const copy = s.cloneNode(true);
    copy.querySelectorAll('details').forEach(d => d.remove());
    return {text: copy.textContent, marks: [...s.querySelectorAll('details.rat-cite > summary')]
            .map(m => parseInt(m.textContent.replace(/\\D/g, ''), 10))};
  });
  const entries = {};
  panel.querySelectorAll('.rat-sources-panel .rat-source[id]').forEach(e => {
    entries[parseInt(e.id.replace(/\\D/g, ''), 10)] = e.querySelector('a').getAttribute('href');
  });
  return {sentences, entries};
}"""


def quotes_cite_their_pages(pairs, entries: dict[int, str], quoted: dict, where: str) -> int:
    """Each (sentence, marks) holding a quote of the stand-in cites the quote's page (and no other)
    by its entry."""
    from tests.core.test_truth import norm

    checked = 0
    for sentence, marks in pairs:
        for n in marks:
            assert n in entries, f"{where}: [{n}] has no entry"
        words = norm(sentence)
        for quote, (url, title) in quoted.items():
            if marks and quote in words:
                assert {entries[n] for n in marks} == {url}, f"{where}: the quote of {title!r} cites {marks}"
                checked += 1
    return checked


def markdown_pairs(markdown: str) -> tuple[list, dict[int, str]]:
    """(sentence, its marks) and the numbered entries of an exported Markdown article."""
    body, _, listed = markdown.partition("\n## Sources")
    entries = {int(n): url for n, url in re.findall(r"^\s*\[?(\d+)\]?[.:)]?\s.*?\((https?://[^)\s]+)\)", listed, re.M)}
    pairs = [(s, [int(n) for n in re.findall(r"\[(\d+)\]", s)]) for s in re.split(r"(?<=[.!?])\s+|\n+", body)]
    return pairs, entries


def test_regenerate_then_two_more_actions_leave_each_quote_citing_its_own_page(open_page, llm, app, tmp_path):
    import docx

    from annotation.outputs import run_output_text
    from tests.fakes.scripts import QuotingAuthor

    author = QuotingAuthor(draft_steps(4))
    llm.reply(author)
    # rat: each revision rewrites the answer so far, keeping the marks the model wrote; a step done
    # again numbers the run's sources anew (its old pages gone), while those marks mean the labels
    # the model was shown (it cited a forest page as [4] once the numbers had moved)
    run_id = run_now(app, "rat", "Cited after actions: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    panel.locator("#rat-step-3 button.rat-act-regenerate").click()
    expect(panel.locator("#rat-step-3 .rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"regenerate"), timeout=TIMEOUT)
    panel.locator("#rat-step-2 button.rat-act-search").click()
    ask = panel.locator(".rat-ask")
    expect(ask).to_be_visible()
    ask.get_by_label("Your own query").fill("virtualenv pip environments")
    ask.get_by_role("button", name="Search again").click()
    expect(panel.locator("#rat-step-2 .rat-redone")).to_contain_text("searched again", timeout=TIMEOUT)
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"search"), timeout=TIMEOUT)
    latest = {e.i: e for e in app.store.events(run_id) if isinstance(e, StepRevised)}
    i, gone = 4, latest[4].sources[0]
    card = panel.locator(f"#rat-step-{i}")
    card.locator("summary.rat-card-head > b").click()
    item = card.locator("ul.rat-pages > li", has=page.locator(f"a[href='{gone}']"))
    item.hover()
    item.locator("button.rat-x").click()
    expect(card.locator(".rat-redone")).to_contain_text("excluded", timeout=TIMEOUT)
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"exclude"), timeout=TIMEOUT)
    assert [a for a, _ in versions_of(app, run_id)] == ["regenerate", "search", "exclude"]

    # the Writer (History's panel): each [n] of a quote leads to the quote's own page
    shown = panel.evaluate(SHOWN_MARKS_JS)
    entries = {int(k): v for k, v in shown["entries"].items()}
    pairs = [(s["text"], s["marks"]) for s in shown["sentences"]]
    assert quotes_cite_their_pages(pairs, entries, author.quoted, "the Writer") > 0

    # the step cards: a quote's [n] in a revision is the article's number for the quote's page (the
    # cards showed the labels the model was given, e.g. [9] of the page the article calls [4])
    cards = panel.evaluate("""p => [...p.querySelectorAll('.rat-steps-panel .rat-diff')].map(d => {
        const copy = d.cloneNode(true); copy.querySelectorAll('del').forEach(x => x.remove());
        return copy.textContent; })""")
    card_pairs = [(s, [int(n) for n in re.findall(r"\[(\d+)\]", s)])
                  for text in cards for s in re.split(r"(?<=[.!?])\s+", text)]
    assert quotes_cite_their_pages(card_pairs, entries, author.quoted, "the step cards") > 0

    # the Markdown and Word files the download buttons hold
    with page.expect_download() as got:
        panel.get_by_role("button", name=re.compile("^Download Markdown")).click()
    markdown = got.value.path().read_text(encoding="utf-8")
    md_pairs, md_entries = markdown_pairs(markdown)
    assert md_entries == entries, "the export numbers the sources as the Writer does"
    assert quotes_cite_their_pages(md_pairs, md_entries, author.quoted, "the Markdown") > 0
    with page.expect_download() as got:
        panel.get_by_role("button", name=re.compile("^Download Word")).click()
    document = docx.Document(str(got.value.path()))
    words = "\n".join(p.text for p in document.paragraphs)
    doc_pairs, _ = markdown_pairs(words.partition("\nSources")[0])
    assert quotes_cite_their_pages(doc_pairs, md_entries, author.quoted, "the Word file") > 0

    # the arena's text of the latest version (--arena-text latest)
    latest = Versions(app.store).latest(run_id)
    arena_text = run_output_text(app.store, run_id, latest.n, latest.text)
    arena_pairs, arena_entries = markdown_pairs(arena_text.replace("\nSources", "\n## Sources", 1)
                                                if "\n## Sources" not in arena_text else arena_text)
    assert arena_entries == entries, "the arena lists the sources as the Writer does"
    assert quotes_cite_their_pages(arena_pairs, arena_entries, author.quoted, "the arena") > 0


PROGRESS_SEEN_JS = """panel => {
  window.__progress = [];
  const box = panel.querySelector('.rat-progress').parentElement;
  new MutationObserver(() => window.__progress.push(box.textContent)).observe(box, {subtree: true,
      childList: true, characterData: true});
}"""


def test_two_step_actions_in_a_row_are_queued_each_saved_and_only_the_redone_step_streams(open_page, llm, app):
    run_id, author = finished_run(app, llm, "Two actions in a row: a short history of Python 3.", steps=4)
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    panel.evaluate(PROGRESS_SEEN_JS)
    llm.latency = 1.0  # the first is still going when the second is asked
    try:  # two clicks in a row, the second before the first has even been sent
        panel.evaluate("""p => { p.querySelector('#rat-step-2 button.rat-act-regenerate').click();
                                 p.querySelector('#rat-step-3 button.rat-act-regenerate').click(); }""")
        expect(panel.locator("#rat-step-3 .rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)
        expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"^2 · .*regenerate"),
                                                                         timeout=TIMEOUT)
    finally:
        llm.latency = 0.0
    stored = app.store.events(run_id)
    assert [(e.i, e.action) for e in stored if isinstance(e, StepRedone)] == [(2, "regenerate"), (3, "regenerate")]
    assert [a for a, _ in versions_of(app, run_id)] == ["regenerate", "regenerate"], "each action saved"
    seen = page.evaluate("window.__progress")
    assert any("Queued" in s for s in seen), "the second said it waits for the first"
    steps = {int(n) for s in seen for n in re.findall(r"Step (\d+) of 4", s)}
    assert steps <= {2, 3}, f"only the redone steps streamed, not the whole run again: {steps}"
    assert not any("No run yet" in s for s in seen)
    article = article_box(panel).input_value().split("\n\n")
    assert article[0] == author.steps[0] + " [revised]" and article[3] == author.steps[3] + " [revised]"


def test_the_second_action_settles_when_the_first_ones_settle_is_still_running(open_page, llm, app, monkeypatch):
    """Found in CI under load: the first action's settling event was still on its way when the
    second action's stream ended, and Gradio dropped the second one's (trigger mode "once"): the
    page kept the stream's last frame, with no step buttons and the second action not shown. Made
    here with a first settle whose answer takes 3 s to leave the server."""
    run_id, _ = finished_run(app, llm, "A slow settle: a short history of Python 3.", steps=4)
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    expect(panel.locator("#rat-step-3 button.rat-act-regenerate")).to_be_visible()
    settle, slow = writer.RunPanel.settle, [True]

    def slow_first(self, view, *args, **kwargs):
        out = settle(self, view, *args, **kwargs)
        if slow and view.run_id == run_id:
            slow.clear()
            time.sleep(3)  # the second action's stream ends meanwhile (its call alone takes a second)
        return out

    monkeypatch.setattr(writer.RunPanel, "settle", slow_first)
    llm.latency = 1.0
    panel.evaluate("""p => { p.querySelector('#rat-step-2 button.rat-act-regenerate').click();
                             p.querySelector('#rat-step-3 button.rat-act-regenerate').click(); }""")
    expect(panel.locator("#rat-step-3 .rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)
    expect(panel.locator("#rat-step-2 .rat-redone")).to_contain_text("regenerated")
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"^2 · .*regenerate"))
    assert not slow, "the first settle was slow"


def test_the_step_actions_command_stays_in_the_page_while_a_stream_hides_the_article(open_page, llm, app):
    """Found in CI under load: the second of two actions clicked in a row is sent a moment after
    the first; the first one's stream had hidden the article, and the hidden box the command is
    sent by with it, so the second action was lost without a word."""
    run_id, _ = finished_run(app, llm, "The command box: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    article = article_box(panel)
    llm.latency = 1.0  # the stream goes on for a second
    panel.locator("#rat-step-2 button.rat-act-regenerate").click()
    expect(article).to_be_hidden(timeout=TIMEOUT)  # the stream shows
    assert panel.locator("[id^='rat-act-'][id$='-cmd'] textarea").count() == 1
    assert panel.locator("button[id^='rat-act-'][id$='-go']").count() == 1
    expect(panel.locator("#rat-step-2 .rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)


def test_a_step_action_waits_for_a_command_box_drawn_anew(open_page, llm, app):
    """A click's command is sent by the panel's hidden box: when the box is not in the page at that
    moment (drawn anew), the click waits for it instead of being lost without a word."""
    run_id, _ = finished_run(app, llm, "A box drawn anew: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    panel.evaluate("""p => {
      const box = p.querySelector("[id^='rat-act-'][id$='-cmd']"), parent = box.parentNode, next = box.nextSibling;
      box.remove();
      p.querySelector('#rat-step-2 button.rat-act-regenerate').click();
      setTimeout(() => parent.insertBefore(box, next), 800);
    }""")
    expect(panel.locator("#rat-step-2 .rat-redone")).to_contain_text("regenerated", timeout=TIMEOUT)
    assert [a for a, _ in versions_of(app, run_id)] == ["regenerate"]


def test_an_undo_that_would_lose_a_hand_edit_is_refused_and_one_elsewhere_keeps_it(open_page, llm, app):
    run_id, _ = finished_run(app, llm, "Undo a hand edit: a short history of Python 3.")
    page, _ = open_page()
    panel = open_in_history(page, run_id)
    article = article_box(panel)
    text = article.input_value().split("\n\n")
    text[1] = text[1].replace("Mercurial", "The Mercurial project")  # the author edits step 2's paragraph
    article.fill("\n\n".join(text))
    deadline = time.monotonic() + TIMEOUT / 1000
    while not versions_of(app, run_id) and time.monotonic() < deadline:  # saved a second after the last key
        time.sleep(0.1)
    step2 = panel.get_by_role("checkbox", name=re.compile("^Step 2: "))
    step2.click()  # (not check(): the refusal may clear the box before Playwright looks at it again)
    expect(page.get_by_text("Your edit is kept").first).to_be_visible(timeout=TIMEOUT)
    expect(step2).not_to_be_checked()
    assert [a for a, _ in versions_of(app, run_id)] == ["edit"], "refused: nothing stored"
    assert "The Mercurial project" in article.input_value()
    step3 = panel.get_by_role("checkbox", name=re.compile("^Step 3: "))
    step3.check()  # another step's undo keeps the edit in step 2
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"· undo ·"), timeout=TIMEOUT)
    action, saved = versions_of(app, run_id)[-1]
    assert action == "undo" and "The Mercurial project" in saved and saved.split("\n\n")[2] == draft_steps(3)[2]
    expect(article).to_have_value(saved)


@pytest.mark.parametrize("width, height", [(1366, 768)])
def test_revise_as_i_say_and_add_a_section_from_the_cards(open_page, llm, app, width, height):
    """Issue 39, item 1 in the Writer: a card's ✎ asks for the author's one line and revises the
    step by it; ＋ adds a new step after the card from the author's line, with its own search, and
    the cards after it move one number down. Each is a version that names what was asked."""
    run_id, author = finished_run(app, llm, "Instruct and add: a short history of Python 3.")
    page, _ = open_page()
    page.set_viewport_size({"width": width, "height": height})
    panel = open_in_history(page, run_id)
    card = panel.locator("#rat-step-2")
    said = "Shorter, and name the year."
    shorter = author.steps[1].replace("over several years of work.", "from 2008 on.") + " [revised]"
    llm.queue(shorter)  # the revision the instruction asks for
    card.locator("button.rat-act-instruct").click()
    ask = panel.locator(".rat-ask")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text("How should step 2 change?")
    line = ask.get_by_label("How should step 2 change?")
    assert line.input_value() == "" and line.get_attribute("placeholder")
    line.press_sequentially(said)
    writer_shot = ask.get_by_role("button", name="Revise")
    writer_shot.click()
    expect(card.locator(".rat-redone")).to_contain_text(f"revised as asked: “{said}”", timeout=TIMEOUT)
    expect(article_box(panel)).to_have_value(re.compile(re.escape(shorter)), timeout=TIMEOUT)
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"instruct"), timeout=TIMEOUT)
    assert versions_of(app, run_id)[-1][0] == "instruct"
    assert said in llm.requests[-1]["messages"][-1]["content"], "the model was asked what the author said"

    topic = "How packaging changed with wheels and pip"
    panel.locator("#rat-step-2 button.rat-act-add").click()
    expect(ask).to_contain_text("A new section after step 2, about")
    ask.get_by_label("A new section after step 2, about").press_sequentially(topic)
    ask.get_by_role("button", name="Add the section").click()
    added = panel.locator("#rat-step-3")
    expect(added.locator(".rat-redone")).to_contain_text(f"added by you: “{topic}”", timeout=TIMEOUT)
    expect(panel.locator(".rat-progress")).to_contain_text("Done: 4 steps revised", timeout=TIMEOUT)
    expect(panel.locator("#rat-step-4")).to_contain_text(author.steps[2][:30])
    expect(article_box(panel)).to_have_value(re.compile(re.escape(topic)), timeout=TIMEOUT)
    paragraphs = article_box(panel).input_value().split("\n\n")
    assert len(paragraphs) == 4 and paragraphs[1] == shorter and paragraphs[2].startswith(topic)
    assert paragraphs[3] == author.steps[2] + " [revised]", "the step after it moved down, as it was"
    action, text = versions_of(app, run_id)[-1]
    assert action == "add" and text == article_box(panel).input_value()
    assert Versions(app.store).latest(run_id).instruction == topic
    stored = app.store.events(run_id)
    assert [(e.i, e.action) for e in stored if isinstance(e, StepRedone)] == [(2, "instruct"), (3, "add")]
    # the undo box of the added step names it, and undoing it leaves the author's line
    box = panel.get_by_role("checkbox", name=re.compile(r"^Step 3: "))
    box.click()
    expect(article_box(panel)).to_have_value(re.compile(r"\n\n" + re.escape(topic) + r"\n\n"), timeout=TIMEOUT)
    shared.screenshot(page, f"writer-add-section-{width}x{height}.png", top=panel.locator("#rat-step-2"))

    again, _ = open_page()
    fresh = open_in_history(again, run_id)
    expect(fresh.locator("#rat-step-3 .rat-redone")).to_contain_text(f"added by you: “{topic}”")
    expect(fresh.locator("#rat-step-2 .rat-redone")).to_contain_text("revised as asked")


@pytest.mark.parametrize("width, height", [(1366, 768)])
def test_revise_the_whole_article_as_i_say(open_page, llm, app, width, height):
    """Issue 39, item 1, for the whole article in the Writer: the box above the article takes the
    author's one line; every step is revised again with it (each card says so), the article is
    saved as an "instruct" version that keeps the line; an empty box is refused by name."""
    run_id, author = finished_run(app, llm, "Whole article: a short history of Python 3.")
    page, _ = open_page()
    page.set_viewport_size({"width": width, "height": height})
    panel = open_in_history(page, run_id)
    box = panel.get_by_label("Revise the whole article as I say")
    expect(box).to_be_visible()
    go = panel.get_by_role("button", name="Revise the whole article")
    go.click()  # nothing typed
    expect(page.get_by_text(re.compile("Type in the box how the whole article should change"))).to_be_visible(
        timeout=TIMEOUT)
    said = "More formal, and name the years."
    box.fill(said)
    go.click()
    for i in (1, 2, 3):
        expect(panel.locator(f"#rat-step-{i} .rat-redone")).to_contain_text(
            f"revised with the whole article as asked: “{said}”", timeout=TIMEOUT)
    expect(panel.locator(".rat-progress")).to_contain_text("Done: 3 steps revised", timeout=TIMEOUT)
    expect(panel.get_by_label(re.compile("^Versions"))).to_have_value(re.compile(r"instruct"), timeout=TIMEOUT)
    latest = Versions(app.store).latest(run_id)
    assert (latest.action, latest.instruction) == ("instruct", said)
    asked = [r["messages"][-1]["content"] for r in llm.requests[-3:]]
    assert all(said in prompt for prompt in asked), "each step's revision was asked with the author's line"
    assert [(e.i, e.action) for e in app.store.events(run_id) if isinstance(e, StepRedone)] == [(1, "instruct-all")]
    shared.screenshot(page, f"writer-revise-all-{width}x{height}.png", top=box)
