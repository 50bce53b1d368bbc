"""Durable under kill -9 (issue 21): the real app in a subprocess drives 10 runs, started as the
Writer's Run button starts them (its queued event over HTTP); the app is killed with SIGKILL at a
random moment while they go; a new app on the same database is opened in Chromium, and each run
that was not finished is continued from History's Continue button and finishes. No stored event
is lost: every run's events are numbered 1..n without a gap, its counters agree with its events,
and it ends with one Final."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.fakes.scripts import RatAuthor, draft_steps
from tests.test_clean_stop import _start_a_run, descendants, end
from tests.test_clean_stop import serve as serve_app
from tests.ui.browser import chromium, chromium_missing

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

RUNS = 10
TIMEOUT = 30_000  # ms, for anything a run has to reach in the browser


@pytest.fixture
def env(tmp_path, llm, web):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    return {**clean, "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
            "RAT_STUDIO_DB": str(tmp_path / "app.db"), "RAT_STUDIO_CONCURRENCY": str(RUNS)}


def runs_of(db: Path) -> list[dict]:
    with sqlite3.connect(db, timeout=10) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("select id, status, llm_calls from runs order by created")]


def events_of(db: Path, run_id: str) -> list[tuple[int, str, dict]]:
    with sqlite3.connect(db, timeout=10) as conn:
        rows = conn.execute("select seq, type, payload from events where run_id = ? order by seq", [run_id])
        return [(seq, kind, json.loads(payload)) for seq, kind, payload in rows]


# the kill leaves up to all 10 runs to continue by hand, 5-10 s each in a loaded suite (120 s ran out)
@pytest.mark.timeout(300)
def test_runs_killed_with_sigkill_are_continued_from_the_ui_with_no_event_lost(tmp_path, env, llm):
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    llm.reply(RatAuthor(draft_steps(4)))
    llm.latency = 0.3  # each call: a run of 9 calls takes about 3 s, so the kill finds them going
    db = Path(env["RAT_STUDIO_DB"])
    proc, base = serve_app(env, tmp_path)
    pids: set[int] = set()
    try:
        for k in range(RUNS):
            _start_a_run(base, f"Write a short history of Python 3, part {k + 1}.")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(runs_of(db) if db.exists() else []) < RUNS:
            time.sleep(0.05)
        assert len(runs_of(db)) == RUNS, "every run started"
        time.sleep(rng.uniform(0.0, 1.5))  # a random moment while they go
        pids = descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        end(proc, pids)
    killed = runs_of(db)
    left = [r["id"] for r in killed if r["status"] != "done"]
    assert left, f"the kill (seed {seed}) came after every run had finished: {killed}"
    print(f"seed {seed}: {len(left)} of {RUNS} runs left unfinished by the kill")

    llm.latency = 0.0
    proc, base = serve_app(env, tmp_path)  # a restart on the same database
    pids = set()
    try:
        with chromium() as browser:
            page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
            page.set_default_timeout(10_000)
            page.goto(base)
            tab = page.get_by_role("tab", name="History")
            expect(tab).to_be_visible(timeout=TIMEOUT)  # (the app's page, drawn under load: past 10 s in CI)
            tab.click()
            history = page.locator("#rat-tab-history")
            progress = history.locator(".rat-progress")
            for run_id in left:
                history.get_by_label("Run", exact=True).fill(run_id)
                history.get_by_role("button", name="Open", exact=True).click()
                expect(history.get_by_role("button", name="Continue")).to_be_visible(timeout=TIMEOUT)
                history.get_by_role("button", name="Continue").click()
                expect(progress).to_contain_text(re.compile(r"^Done: 4 steps revised"), timeout=TIMEOUT)
        pids = descendants(proc.pid)
    finally:
        end(proc, pids)

    for run in runs_of(db):
        events = events_of(db, run["id"])
        assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1)), f"a gap in run {run['id']}"
        kinds = [kind for _, kind, _ in events]
        assert run["status"] == "done" and kinds[-1] == "Final" and kinds.count("Final") == 1, (run, kinds)
        assert run["llm_calls"] == kinds.count("LLMCalled"), f"the run counts calls it has no event of: {run}"
        revised = {payload["i"] for _, kind, payload in events if kind == "StepRevised"}
        assert revised == {1, 2, 3, 4}, (run["id"], kinds)
