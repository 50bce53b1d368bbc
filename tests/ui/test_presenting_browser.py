"""Presentation mode (issue 23.6) in a real headless Chromium: Present opens a stage over the whole
window (no tables, no settings, no forms) with the task, the progress line, the draft with the
active step highlighted and the active step's card in large type, following a live run; in
History it drives a replay from the keyboard (Space pauses and plays, ←/→ step, Esc leaves) and
the replay's position can be sought. With RAT_STUDIO_UPDATE_SCREENSHOTS=1 the live runs refresh
the README's presentation screenshots."""

from __future__ import annotations

import re

import pytest

from common.events import StepRevised
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.ui.browser import chromium_missing
from tests.ui.test_follow_browser import STEPS, shot, sized_page, slow_run  # noqa: F401 (fixture)
from tests.ui.test_writer_browser import (  # noqa: F401 (fixtures)
    TIMEOUT,
    app,
    app_url,
    browser,
    llm,
    run_now,
    stand_ins,
    start,
    web,
)
from ui import presenting

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect



def size(page, selector: str) -> float:
    """The smallest font size, in px, of the elements ``selector`` finds (all read in one go: the
    stage is re-rendered as the run goes on)."""
    return page.evaluate("""sel => Math.min(...[...document.querySelectorAll(sel)]
                              .map(e => parseFloat(getComputedStyle(e).fontSize)))""", selector)


@pytest.mark.parametrize("width, height", [(1366, 768), (1920, 1080)])
def test_present_shows_the_live_run_full_window_in_large_type_and_follows_it(sized_page, llm, width, height):  # noqa: F811
    slow_run(llm)
    page, writer = sized_page(width, height)
    task = "Write a short history of Python 3 and its ecosystem."
    start(writer, task)
    expect(writer.locator(".rat-progress")).to_contain_text(f"Step 2 of {STEPS}", timeout=TIMEOUT)
    writer.get_by_role("button", name="Present").click()
    stage = page.locator("#rat-stage")
    expect(stage).to_be_visible()
    page.wait_for_function("document.fullscreenElement !== null", timeout=TIMEOUT)  # the screen, not only the window
    box = stage.bounding_box()
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, width, height), "the whole window"
    for x, y in ((width // 2, height // 2), (20, height - 20), (width - 20, 20)):
        assert page.evaluate(f"document.elementFromPoint({x}, {y}).closest('#rat-stage') !== null"), "nothing over it"
    expect(stage.locator("table, textarea, input, select")).to_have_count(0)
    expect(stage.locator(".rat-stage-task")).to_have_text(task)
    expect(stage.locator(".rat-stage-progress")).to_contain_text(re.compile(rf"Step \d of {STEPS}"))

    # it follows the run: the stage's card is always the active step's, its draft line highlighted
    expect(writer.locator(".rat-progress")).to_contain_text(f"Step 4 of {STEPS}", timeout=TIMEOUT)
    card = stage.locator(".rat-stage-card .rat-card")
    expect(card.locator("summary.rat-card-head")).to_contain_text(f"Step 4 of {STEPS}", timeout=TIMEOUT)
    expect(stage.locator(".rat-stage-draft li.rat-current")).to_contain_text("Step 4:")
    expect(card.locator(".rat-label", has_text="Pages")).to_be_visible(timeout=TIMEOUT)
    on_stage = "#rat-stage .rat-stage-card .rat-card"
    assert size(page, f"{on_stage} .rat-card-body") >= 20 and size(page, f"{on_stage} ul.rat-pages") >= 20, "large"
    assert 14 <= size(page, f"{on_stage} .rat-meta") < 100, "meta text readable"
    # the page under the stage stays put (following scrolled it, and Chromium in full screen then
    # showed the stage shifted up, its task and progress line cut off)
    assert page.evaluate("document.scrollingElement.scrollTop") == 0
    shot(page, f"presenting-{width}x{height}.png")

    page.keyboard.press("Escape")
    expect(stage).to_be_hidden()
    page.wait_for_function("document.fullscreenElement === null", timeout=TIMEOUT)
    expect(writer.locator(".rat-progress")).to_contain_text(f"Done: {STEPS} steps revised.", timeout=TIMEOUT)


def number(history) -> int:
    """The replay position the slider's box shows."""
    return int(float(history.locator(".rat-replay-position input[type=number]").input_value()))


def test_a_replay_is_paused_stepped_and_sought_from_the_stage(sized_page, llm, app, page_timeout=TIMEOUT):  # noqa: F811
    llm.reply(RatAuthor(draft_steps(4)))
    llm.latency = 0.5  # stored time stamps far apart: the replay takes a while (at 0.5x, ~4 s a step)
    run_id = run_now(app, "rat", "A stored run about Mercurial and Python 3.")
    llm.latency = 0.0
    events = app.store.events(run_id)
    after = {e.i: k + 1 for k, e in enumerate(events) if isinstance(e, StepRevised)}
    page, _ = sized_page(1366, 768)
    page.get_by_role("tab", name="History").click()
    history = page.locator("#rat-tab-history")
    history.get_by_role("gridcell", name=run_id).click()
    expect(history.locator(".rat-progress")).to_contain_text("Done: 4 steps revised.")
    # at 0.5x a step stays on the stage for seconds: at 2x a busy machine (CI) showed the stage only
    # once the replay had passed steps 2 and 3
    speed = history.locator(".rat-replay-speed input[type=number]")
    speed.click()
    speed.press("Control+a")
    speed.press_sequentially("0.5")
    speed.press("Tab")
    expect(history.locator(".rat-replay-speed input[type=range]")).to_have_value("0.5")
    history.get_by_role("button", name="Replay").click()
    history.get_by_role("button", name="Present").click()
    stage = page.locator("#rat-stage")
    expect(stage).to_be_visible()
    expect(stage.locator(".rat-stage-keys")).to_contain_text("Space: pause / play")
    card = stage.locator(".rat-stage-card .rat-card > summary")
    # mid-replay: step 2 or 3
    expect(card).to_contain_text(re.compile(r"Step [23] of 4"), timeout=page_timeout)

    page.keyboard.press(" ")  # pause
    expect(history.locator(f"#{presenting.PLAY_ID}")).to_be_visible()
    page.wait_for_timeout(400)  # an update already on its way when the pause was pressed may still land
    held, shown = number(history), stage.locator(".rat-stage-progress").inner_text()
    page.wait_for_timeout(1200)
    assert number(history) == held and stage.locator(".rat-stage-progress").inner_text() == shown, "paused"
    assert 0 < held < len(events)

    page.keyboard.press("ArrowRight")  # to the end of the step shown
    expect(card).to_contain_text(re.compile(r"Step \d of 4"))
    position = history.locator(".rat-replay-position input[type=number]")
    expect(position).not_to_have_value(str(held))  # (paused right at a step's end, the box read before it moved)
    expect(position).to_have_value(re.compile("|".join(str(v) for v in after.values())))
    stepped = number(history)
    i = next(i for i, k in after.items() if k == stepped)
    expect(card).to_contain_text(f"Step {i} of 4")
    expect(card.locator(".rat-badge")).to_have_text("revised")
    page.keyboard.press("ArrowLeft")
    expect(card).to_contain_text(f"Step {i - 1} of 4" if i > 1 else "")
    assert number(history) == (after[i - 1] if i > 1 else number(history))

    # seek: to just after step 3's revision, typed in the position's box
    box = history.locator(".rat-replay-position input[type=number]")
    box.click()
    box.press("Control+a")
    box.press_sequentially(str(after[3]))
    # Gradio takes the typed value on a later tick (the range follows then); leaving the box sends it
    expect(history.locator(".rat-replay-position input[type=range]")).to_have_value(str(after[3]))
    box.press("Tab")
    expect(card).to_contain_text("Step 3 of 4", timeout=page_timeout)
    expect(card.locator(".rat-badge")).to_have_text("revised")
    expect(stage.locator(".rat-stage-draft li.rat-current")).to_contain_text("Step 3:")
    expect(stage.locator(".rat-stage-card .rat-diff ins")).to_be_visible()
    shot(page, "presenting-replay-1366x768.png")

    page.locator("body").click(position={"x": 5, "y": 5})  # out of the box: the keys are the stage's again
    page.keyboard.press(" ")  # play on from there
    expect(history.locator(f"#{presenting.PAUSE_ID}")).to_be_visible()
    expect(card).to_contain_text("Step 4 of 4", timeout=page_timeout)
    expect(history.locator(".rat-progress")).to_contain_text("Done: 4 steps revised.", timeout=page_timeout)
    page.keyboard.press("Escape")
    expect(stage).to_be_hidden()
    controls = history.locator(f".{presenting.CONTROLS_CLASS}")
    assert controls.evaluate("el => getComputedStyle(el).position") != "fixed", "back in the page"
