"""An open page of the app that nobody touches costs next to nothing (ui/idle_frames.js, put first in
the page's head by ``ui.server.PageScript``), in a real headless Chromium.

Gradio's status tracker leaves a loop of animation frames running for good (a tracker removed while
its event ran: the page's own "Loading..." at start): an idle Writer asked the browser for 60-90
frames a second, about a tenth of a core. The browser's own function is counted here, under the
script (an init script runs before any of the page's): what the script asks of it is what costs."""

from __future__ import annotations

import time

import pytest

import app as app_module
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.web_server import FakeWeb
from tests.ui.browser import chromium, chromium_missing, serve

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

TIMEOUT = 20_000  # ms

#: Counts the frames the page asks of the browser itself, and the changes to the page (installed
#: before the page's own scripts)
COUNT_NATIVE = """
window.__nativeFrames = 0;
window.__changes = 0;
const nativeFrame = window.requestAnimationFrame;
window.requestAnimationFrame = function (callback) {
  window.__nativeFrames++;
  return nativeFrame.call(window, callback);
};
new MutationObserver(records => { window.__changes += records.length; })
  .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
COUNTS = "[window.__nativeFrames, window.__changes]"

#: The rule, step by step, on the page as served; each answer is what the browser was asked
RULE = """async () => {
  const native = () => window.__nativeFrames;
  const pause = ms => new Promise(done => setTimeout(done, ms));
  const inFrame = f => new Promise(done => requestAnimationFrame(() => done(f())));
  const errors = [];
  window.addEventListener('error', e => { errors.push(String(e.message)); e.preventDefault(); });
  const out = {guarded: window.__ratIdleFrames === true};

  let n = 0, on = true;  // a loop that changes nothing on the page
  const loop = () => { n++; if (on) { requestAnimationFrame(loop); } };
  requestAnimationFrame(loop);
  for (let k = 0; k < 6; k++) {  // 2 s after 1 s in which nothing changed on the page
    const changes = window.__changes;
    await pause(1000);
    const before = n;
    await pause(2000);
    out.loopFramesIn2s = n - before;
    out.changesMeanwhile = window.__changes - changes;
    if (out.changesMeanwhile === 0) { break; }
  }

  // a loop's next frame while still: not asked of the browser; a change brings it at the next frame
  out.askedInFrame = await inFrame(() => { const a = native(); requestAnimationFrame(() => {}); return native() - a; });
  const waited = n;
  document.body.append(document.createElement('i'));
  await pause(0);  // (the page's MutationObservers are told)
  await inFrame(() => 0);  // a frame asked after the change: the loop's comes in it, first
  out.loopRanWithTheChange = n > waited;

  // a loop's next frame right after a change: asked at once
  out.askedInFrameAfterChange = await inFrame(() => {
    document.body.append(document.createElement('i'));
    return 0;
  }).then(() => inFrame(() => { const a = native(); requestAnimationFrame(() => {}); return native() - a; }));

  // a frame asked by a timer on a still page: at once
  await pause(800);
  const byTimer = native();
  let timerFrame = false;
  requestAnimationFrame(() => { timerFrame = true; });
  out.askedByTimer = native() - byTimer;
  await inFrame(() => 0);
  out.timerFrameCame = timerFrame;

  // cancelled while waiting: never called; one that throws is reported and the next still runs
  let cancelled = false, after = false;
  await pause(800);
  await inFrame(() => {
    cancelAnimationFrame(requestAnimationFrame(() => { cancelled = true; }));
    requestAnimationFrame(() => { throw new Error('a loop failed'); });
    requestAnimationFrame(() => { after = true; });
  });
  document.body.append(document.createElement('i'));
  await pause(0);
  await inFrame(() => 0);
  out.cancelledRan = cancelled;
  out.afterTheErrorRan = after;
  out.errors = errors;
  on = false;
  return out;
}"""


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    with FakeLLM() as llm, FakeWeb() as web, serve(app_module.build(
            make_settings(tmp_path_factory.mktemp("idle"), llm, web))) as url:
        yield url


@pytest.fixture(scope="module")
def writer_page(page_url):
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        context.add_init_script(COUNT_NATIVE)
        page = context.new_page()
        page.goto(page_url)
        expect(page.locator("#rat-tab-writer").get_by_text("the model server answers")).to_be_visible(timeout=TIMEOUT)
        yield page


def test_an_idle_writer_asks_the_browser_for_about_a_frame_a_second(writer_page):
    """Measured over 2 s in which nothing on the page changed, after 1 s that nothing changed either
    (the page's load events end a few seconds after it shows; their announcements come and go)."""
    assert writer_page.evaluate("window.__ratIdleFrames") is True, "the script runs in the page"
    seen = []
    for _ in range(6):
        _, first = writer_page.evaluate(COUNTS)
        time.sleep(1)
        frames, changes = writer_page.evaluate(COUNTS)
        time.sleep(2)
        frames_after, changes_after = writer_page.evaluate(COUNTS)
        seen.append((frames_after - frames, changes_after - first))
        if changes_after == first:
            break
    frames, changes = seen[-1]
    assert changes == 0, f"the page changed in every 3 s (frames, changes): {seen}"
    assert frames <= 4, f"{frames} frames asked in 2 s by a page that did not change (Gradio asks 120): {seen}"


def test_frames_come_at_once_for_what_changes_and_once_a_second_for_loops_that_change_nothing(writer_page):
    out = writer_page.evaluate(RULE)
    assert out["guarded"] is True
    assert out["changesMeanwhile"] == 0, out
    assert out["loopFramesIn2s"] <= 4, out  # 120 at 60 frames a second
    assert out["askedInFrame"] == 0, out
    assert out["loopRanWithTheChange"] is True, out
    assert out["askedInFrameAfterChange"] == 1, out
    assert out["askedByTimer"] == 1, out
    assert out["timerFrameCame"] is True, out
    assert out["cancelledRan"] is False, out
    assert out["afterTheErrorRan"] is True, out
    assert out["errors"] == ["Uncaught Error: a loop failed"], out
