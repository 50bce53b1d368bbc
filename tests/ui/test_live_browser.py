"""Runs belong to the server (issue 21, item 1), in a real headless Chromium: a reload mid-run
leaves the run going, and the reopened Writer shows what it did so far, then the rest live to the
end; another browser finds the run among those going on and follows it too."""

from __future__ import annotations

import re
import time

import pytest

from common.types import RunStatus
from tests.fakes.scripts import Gate
from tests.helpers import wait_until
from tests.ui import test_writer_browser as writer_tests
from tests.ui.browser import article_box, chromium_missing
from tests.ui.test_writer_browser import TIMEOUT, start

# the Writer tests' fixtures: one app served for this module, a browser, a page opener
stand_ins, app_url, browser = writer_tests.stand_ins, writer_tests.app_url, writer_tests.browser
llm, web, app, open_page = writer_tests.llm, writer_tests.web, writer_tests.app, writer_tests.open_page

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

TASK = "Describe how Python 3 came to be and how Mercurial moved to it"


def progress(writer):
    return writer.locator(".rat-progress").first


def offered_as_going_on(writer, run_id: str) -> bool:
    """Whether the Writer's list of runs (hidden when empty) shows ``run_id`` as going on."""
    listed = writer.get_by_role("combobox", name="Runs going on or stopped")
    return listed.count() > 0 and listed.input_value().endswith(f"going on · {run_id}")


def undo_step(writer, i: int) -> None:
    """Tick step ``i``'s undo box once the finished article is on the page (a click just before the
    last render came would be undone by it: Playwright's check() then fails), and see it ticked."""
    expect(writer.locator(".rat-saved").last).to_contain_text(re.compile("The model's text|Version"),
                                                              timeout=TIMEOUT)
    box = writer.get_by_role("checkbox", name=re.compile(rf"^Step {i}: "))
    box.click()
    expect(box).to_be_checked(timeout=TIMEOUT)


def test_a_reload_mid_run_leaves_the_run_going_and_shows_it_live_to_the_end(open_page, llm, app):
    gate = Gate()
    llm.reply(gate)
    page, writer = open_page()
    start(writer, TASK)
    expect(progress(writer)).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)
    assert gate.held.wait(TIMEOUT / 1000), "the first revision reached the model"
    run_id = app.store.list_runs(limit=1)[0].id
    time.sleep(3)

    page.reload()  # the request that started the run is gone
    expect(progress(writer)).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)
    minutes, seconds = re.search(r"(\d+):(\d\d) elapsed", progress(writer).inner_text()).groups()
    assert 60 * int(minutes) + int(seconds) >= 3, "timed from the run's start, not from the reload"
    assert app.store.get_run(run_id).status == RunStatus.RUNNING
    expect(writer.locator("ol.rat-draft li")).to_have_count(3)  # what it did before the reload

    other, other_writer = open_page()  # another browser: no run of its own, the list offers this one
    runs = other_writer.get_by_role("combobox", name="Runs going on or stopped")
    expect(runs).to_have_value(re.compile(rf"going on · {run_id}$"), timeout=TIMEOUT)
    other_writer.get_by_role("button", name="Open", exact=True).click()
    expect(progress(other_writer)).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)

    gate.open.set()  # the run goes on, on the server, and both pages follow it to the end
    for w in (writer, other_writer):
        expect(progress(w)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
        expect(article_box(w)).to_have_value(re.compile(r"\[revised\]"))
    assert app.store.get_run(run_id).status == RunStatus.DONE
    for w in (writer, other_writer):  # the list says so too: the run is no longer offered as going on
        wait_until(lambda w=w: not offered_as_going_on(w, run_id))

    page.reload()  # after the end, the browser's last run is still there, as stored
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)


def test_stop_in_a_reopened_writer_stops_the_run_on_the_server(open_page, llm, app):
    gate = Gate()
    llm.reply(gate)
    page, writer = open_page()
    start(writer, "Describe how pip and virtualenv keep Python projects apart")
    expect(progress(writer)).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)
    assert gate.held.wait(TIMEOUT / 1000), "the first revision reached the model"
    run_id = app.store.list_runs(limit=1)[0].id
    page.reload()
    expect(progress(writer)).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)
    writer.get_by_role("button", name="Stop", exact=True).click()
    expect(progress(writer)).to_contain_text(re.compile(r"^Stopped"), timeout=TIMEOUT)
    gate.open.set()
    assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED


def test_an_edit_and_an_undo_survive_a_reload_and_a_restart(open_page, llm, app, tmp_path, capsys):
    import app as app_module
    from tests.ui.browser import serve

    llm.reply(Gate(open_at_start=True))
    page, writer = open_page()
    start(writer, "Describe how Python 3.6 changed string formatting")
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    run_id = app.store.list_runs(limit=1)[0].id
    undo_step(writer, 2)  # (and 3: cumulative)
    article = article_box(writer)
    expect(article).not_to_have_value(re.compile(r"Step 2.*\[revised\]", re.S))
    article.fill(article.input_value() + "\n\nA closing line by the author.")
    saved = writer.locator(".rat-saved").last
    expect(saved).to_contain_text(re.compile(r"Version 2, saved"), timeout=TIMEOUT)  # 1: the undo, 2: the edit

    page.reload()
    article = article_box(writer)  # the page opens on the article as read, with its marks
    expect(article).to_have_value(re.compile(r"A closing line by the author\.$"), timeout=TIMEOUT)
    expect(writer.get_by_role("checkbox", name=re.compile(r"^Step 2: "))).to_be_checked()

    restarted = app_module.build(app.settings)  # a new server process on the same database
    with serve(restarted) as url:
        again = page.context.new_page()
        again.goto(url)
        again.get_by_role("tab", name="History").click()
        history = again.locator("#rat-tab-history")
        history.get_by_label("Run", exact=True).fill(run_id)
        history.get_by_role("button", name="Open", exact=True).click()
        edited = article_box(history)
        expect(edited).to_have_value(re.compile(r"A closing line by the author\.$"), timeout=TIMEOUT)
        expect(history.locator(".rat-saved").last).to_contain_text("Version 2, saved")
    capsys.readouterr()
    assert app_module.main(["--db", str(app.settings.db_path), "show", run_id], env={}) == 0
    shown = capsys.readouterr().out
    assert "A closing line by the author." in shown and "Step 3" in shown and shown.count("[revised]") == 1


def test_an_edit_typed_just_before_a_reload_is_shown_after_it(open_page, llm, app, monkeypatch):
    """The save of an edit waits for the author to stop typing (SAVE_AFTER); a reload, or the run
    opened in another tab, before then saves it first and shows it (before, the page came back with
    the version before the edit, and the edit was saved a moment later, out of sight)."""
    import ui.article_panel
    from data.versions import Versions

    llm.reply(Gate(open_at_start=True))
    page, writer = open_page()
    start(writer, "Describe how Python 3.8 added the walrus operator")
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    run_id = app.store.list_runs(limit=1)[0].id
    monkeypatch.setattr(ui.article_panel, "SAVE_AFTER", 60.0)  # no save on its own within the test
    writer.get_by_text(ui.article_panel.VIEW_EDIT, exact=True).click()
    article = article_box(writer)
    reading = writer.locator(".rat-reading")
    words = int(reading.inner_text().split()[0])
    article.press_sequentially(" Typed last.")
    expect(writer.locator(".rat-saved").last).to_contain_text("Saving…", timeout=TIMEOUT)
    # the server has the whole text (its word count comes back from the last keystroke's event): a
    # keystroke still on its way when the page goes is the browser's, not ours to save
    expect(reading).to_have_text(re.compile(rf"^{words + 2} words"), timeout=TIMEOUT)
    assert not [v for v in Versions(app.store).list(run_id) if "Typed last." in v.text]

    page.reload()
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    writer.get_by_text(ui.article_panel.VIEW_EDIT, exact=True).click()
    expect(article_box(writer)).to_have_value(re.compile(r"Typed last\.$"), timeout=TIMEOUT)
    (saved,) = [v for v in Versions(app.store).list(run_id) if "Typed last." in v.text]
    assert saved.action == "edit"


def test_a_streams_end_reaching_the_page_late_puts_back_nothing_the_author_did(open_page, llm, app, monkeypatch):
    """When a stream ends, Gradio sends its last update again, whole. Under load that came after
    the author had acted on the finished run: the panel settled in the stream's last update, so
    its late copy unticked an undo box and put the model's text back over a typed edit (CI saw
    both). Here the stream's end is held back 3 s, as a busy machine held it: what the author did
    meanwhile stays on the page and is saved."""
    import asyncio

    import ui.writer
    from data.versions import Versions

    following = ui.writer.RunPanel.follow

    async def late_end(self, *args, **kwargs):
        async for update in following(self, *args, **kwargs):
            yield update
        await asyncio.sleep(3)

    monkeypatch.setattr(ui.writer.RunPanel, "follow", late_end)
    llm.reply(Gate(open_at_start=True))
    page, writer = open_page()
    start(writer, "Describe how Python 3.9 merged dicts with the | operator")
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    run_id = app.store.list_runs(limit=1)[0].id
    undo_step(writer, 3)
    expect(writer.locator(".rat-saved").last).to_contain_text("Version 1, saved", timeout=TIMEOUT)
    writer.get_by_text(ui.article_panel.VIEW_EDIT, exact=True).click()
    article = article_box(writer)
    article.press_sequentially(" Typed at the end.")
    time.sleep(4)  # past the stream's late end
    expect(article).to_have_value(re.compile(r"Typed at the end\.$"))
    expect(writer.get_by_role("checkbox", name=re.compile(r"^Step 3: "))).to_be_checked()
    wait_until(lambda: "Typed at the end." in Versions(app.store).list(run_id)[-1].text)


@pytest.mark.parametrize("width, height", [(1366, 768), (1920, 1080)])
def test_a_backspace_and_a_paste_are_saved_and_the_servers_own_text_is_not_an_edit(open_page, llm, app, width,
                                                                                    height):
    """Gradio 6's Textbox sends its ``input`` event for printable keys and Enter only: a Backspace,
    a paste or an input method's text changed the box and was never saved (it showed until a
    reload, then was gone). Now every change the author's hand makes is saved, and a text the
    server puts in the box (an undo's) is not saved again as an edit."""
    from data.versions import Versions

    llm.reply(Gate(open_at_start=True))
    page, writer = open_page()
    page.set_viewport_size({"width": width, "height": height})
    start(writer, "Describe how Python 3.7 kept dicts in insertion order")
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    run_id = app.store.list_runs(limit=1)[0].id
    saved = writer.locator(".rat-saved").last
    undo_step(writer, 3)  # the server rewrites the text
    expect(saved).to_contain_text("Version 1, saved", timeout=TIMEOUT)
    time.sleep(2.5)  # past SAVE_AFTER: an edit would have been saved by now
    assert [v.action for v in Versions(app.store).list(run_id)] == ["undo"]
    undone = Versions(app.store).list(run_id)[-1].text

    article = article_box(writer)
    article.click()
    article.press("Control+End")
    article.press("Backspace")
    expect(saved).to_contain_text("Version 2, saved", timeout=TIMEOUT)
    assert Versions(app.store).list(run_id)[-1].text == undone[:-1]
    page.keyboard.insert_text(" 作者粘贴的一句。")  # as a paste or an input method puts text in
    expect(saved).to_contain_text("Version 3, saved", timeout=TIMEOUT)
    versions = Versions(app.store).list(run_id)
    assert [v.action for v in versions] == ["undo", "edit", "edit"]
    assert versions[-1].text == undone[:-1] + " 作者粘贴的一句。"

    writer_tests.screenshot(page, f"writer-pasted-{width}x{height}.png", top=article)

    page.reload()
    expect(progress(writer)).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    expect(article_box(writer)).to_have_value(re.compile(r"作者粘贴的一句。$"), timeout=TIMEOUT)
    writer.get_by_role("radio", name="Read").check()
    cited = writer.locator(".rat-cited-panel").last
    expect(cited).to_contain_text("作者粘贴的一句")
    writer_tests.screenshot(page, f"writer-pasted-read-{width}x{height}.png", top=cited)


def test_a_run_opened_while_another_is_followed_stays_on_screen_as_that_one_goes_on(open_page, llm, app):
    """One panel shows one run: the one asked for last. In History, a run was continued (its stream
    following it), then another opened to continue too; the first run's stream went on yielding into
    the same panel and put its own run back (its view, its Done, the editor hidden), so the second
    run's Continue was gone (CI saw it in test_kill_browser). Now the stream a newer one replaced
    stops showing, and its run goes on on the server."""
    llm.reply(Gate(open_at_start=True))
    page, writer = open_page()
    ids = []
    for k in (1, 2):
        task = f"Describe how Python 3.1{k} changed the interpreter"
        start(writer, task, method="rat" if k == 1 else None, draft_only=True)  # (rat stays picked)
        wait_until(lambda t=task: [r.task for r in app.store.list_runs(limit=1)] == [t])
        ids.append(app.store.list_runs(limit=1)[0].id)
        wait_until(lambda: app.store.get_run(ids[-1]).status == RunStatus.DRAFT)
    first, second = ids
    gate = Gate()
    llm.reply(gate)
    page.get_by_role("tab", name="History").click()
    history = page.locator("#rat-tab-history")
    shown = history.locator(".rat-progress").first
    cont = history.get_by_role("button", name="Continue")

    def open_run(run_id: str) -> None:
        history.get_by_label("Run", exact=True).fill(run_id)
        history.get_by_role("button", name="Open", exact=True).click()
        expect(cont).to_be_visible(timeout=TIMEOUT)

    open_run(first)
    cont.click()
    expect(shown).to_contain_text(re.compile(r"Step 1 of 3"), timeout=TIMEOUT)
    assert gate.held.wait(TIMEOUT / 1000), "the first run's revision reached the model"
    open_run(second)
    expect(shown).to_contain_text(re.compile(r"^Draft ready"), timeout=TIMEOUT)

    gate.open.set()  # the first run goes on to its end, on the server
    wait_until(lambda: app.store.get_run(first).status == RunStatus.DONE)
    time.sleep(1.5)  # what its stream would still send has reached the page
    expect(shown).to_contain_text(re.compile(r"^Draft ready"))
    expect(cont).to_be_visible()
    expect(page.locator(".toast-body")).to_have_count(0)  # the stream stopped says nothing on the page
    cont.click()  # and the second run, the one on screen, is the one that goes on
    expect(shown).to_contain_text(re.compile(r"^Done: 3 steps revised"), timeout=TIMEOUT)
    assert app.store.get_run(second).status == RunStatus.DONE
