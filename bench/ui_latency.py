"""How soon the Writer tab shows the model's first draft token, in a real browser.

Serves the app (as the browser tests do: in this process, on 127.0.0.1) against the fake
OpenAI-compatible server and the local web, opens the Writer in Debian's headless Chromium
(Playwright), and runs a draft-only RAT task --runs times, each with a fresh task. The fake model
waits --latency seconds before its first token, sends that token, and holds the rest of the
answer until the browser has shown it. Prints, per run and as medians:

  click->request   ms from the click on Run (the browser's clock) to the draft request reaching
                   the model server: what the app does before it asks the model
  request->token   ms from that request to the model's first content chunk leaving the server
                   (the injected latency, plus the server's own overhead)
  token->screen    ms from that chunk leaving the server to the draft panel showing it in the
                   page (a MutationObserver's time stamp); target < 150
  click->screen    the whole wait the author sees

Browser and servers run on this machine, so their wall clocks (time.time(), Date.now() through
performance.timeOrigin) are one clock. Numbers, not pass/fail.

    python -m bench.ui_latency [--runs 5] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import app as app_module
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.fakes.web_server import FakeWeb
from tests.ui.browser import chromium, chromium_missing, serve

WATCH = """() => {
  window.__clicked = null; window.__shown = null;
  const now = () => performance.timeOrigin + performance.now();
  const run = [...document.querySelectorAll('#rat-tab-writer button')].find(b => b.innerText.trim() === 'Run');
  run.addEventListener('click', () => { window.__clicked = now(); }, {capture: true, once: true});
  const panel = document.querySelector('#rat-tab-writer .rat-draft-panel');
  const seen = () => {
    if (window.__shown === null && panel.querySelector('ol.rat-streaming')) { window.__shown = now(); }
  };
  new MutationObserver(seen).observe(panel, {childList: true, subtree: true, characterData: true});
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds before the model's first token")
    args = ap.parse_args()
    missing = chromium_missing()
    if missing:
        raise SystemExit(f"error: {missing}")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    offset = time.time() - time.perf_counter()  # FakeLLM.arrivals are perf_counter(): on the wall clock
    rows = []
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
        app = app_module.build(make_settings(Path(tmp), llm, web))
        llm.reply(RatAuthor(draft_steps(3)))
        with serve(app) as url, chromium() as browser:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(30_000)
            page.goto(url)
            writer = page.locator("#rat-tab-writer")
            writer.get_by_text("the model server answers").wait_for()
            writer.get_by_role("checkbox", name="Draft only").check()
            print(f"{args.runs} draft-only runs; the model's first token after {args.latency:.2f} s\n")
            print(f"{'run':>3}{'click->request':>16}{'request->token':>16}{'token->screen':>15}{'click->screen':>15}")
            for n in range(1, args.runs + 1):
                llm.latency = args.latency
                release = llm.hold_after_first()
                requests, chunks = len(llm.arrivals), len(llm.first_chunks)
                writer.get_by_label("Task").fill(f"Write a short history of Python 3 (take {n}, {time.time():.0f}).")
                page.evaluate(WATCH)
                writer.get_by_role("button", name="Run", exact=True).click()
                page.wait_for_function("window.__shown !== null")
                release.set()
                writer.locator(".rat-progress").get_by_text("Draft ready").wait_for()
                clicked, shown = (page.evaluate(f"window.__{k}") / 1000 for k in ("clicked", "shown"))
                request = llm.arrivals[requests] + offset
                token = llm.first_chunks[chunks]
                row = [request - clicked, token - request, shown - token, shown - clicked]
                rows.append(row)
                print(f"{n:>3}" + "".join(f"{1000 * x:>{w}.0f}" for x, w in zip(row, (16, 16, 15, 15), strict=True)))
            llm.latency = 0.0
    medians = [statistics.median(col) for col in zip(*rows, strict=True)]
    print("med" + "".join(f"{1000 * x:>{w}.0f}" for x, w in zip(medians, (16, 16, 15, 15), strict=True)))
    print(f"\ntoken->screen: median {1000 * medians[2]:.0f} ms, worst {1000 * max(r[2] for r in rows):.0f} ms "
          "(target < 150 ms)")


if __name__ == "__main__":
    main()
