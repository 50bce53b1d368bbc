"""Votes by criterion in a real headless Chromium at 1366x768 (issue 40, item 4): a campaign asks
the bench's four criteria; two annotators, logged in at once, answer every criterion and cast
their overall votes by keyboard alone (← A, → B, ↓ Tie on the marked row, ↑ back a row; then
1-4); an overall vote with a criterion left open is not counted and the message names the
criterion; then an admin's Leaderboard, on the campaign, lists a rating per criterion. On her first
pair ana also flags a sentence of each side (a click in it, then F or W; one taken back and flagged
again), and the flags reach ``dataset export`` (issue 40, item 5)."""

from __future__ import annotations

import json
import re

import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import Accounts
from annotation.admin.dataset import JSONL, export_dataset
from annotation.campaigns import BENCH_CRITERIA
from common.settings import Settings
from tests.annotation.conftest import seed_outputs
from tests.ui.browser import chromium, chromium_missing, logged_in, serve

TIMEOUT = 20_000  # ms
FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
PAIRS = 3
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

#: The keys each annotator presses on every pair, and the criterion choices they leave: ana goes
#: back a row once (→ on the first row, ↑, then ←); bob answers straight down.
KEYS = {"ana": (["ArrowRight", "ArrowUp", "ArrowLeft", "ArrowDown", "ArrowRight", "ArrowLeft"], "1",
                ("a", "tie", "b", "a"), "a"),
        "bob": (["ArrowRight", "ArrowRight", "ArrowDown", "ArrowLeft"], "2", ("b", "b", "tie", "a"), "b")}


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"]


def ready(page) -> None:
    """Wait until the pair on screen can be voted on (the page's mode turned the votes on)."""
    page.wait_for_function("() => { const b = document.querySelector('#rat-vote-a button, button#rat-vote-a');"
                           " return b && !b.disabled; }", timeout=TIMEOUT)


def flag_sentences(page) -> None:
    """A click in A's sentence, then F (unsupported); in B's, W (wrong); B's taken back (a click on
    it in the list) and flagged again."""
    flags = page.locator("#rat-sflags .rat-sflag")
    page.locator("#rat-pane-a p").first.click(position={"x": 4, "y": 4})
    page.keyboard.press("f")
    page.locator("#rat-pane-b p").first.click(position={"x": 4, "y": 4})
    page.keyboard.press("w")
    assert flags.count() == 2
    flags.nth(1).click()
    assert flags.count() == 1
    page.locator("#rat-pane-b p").first.click(position={"x": 4, "y": 4})
    page.keyboard.press("w")
    assert [f.inner_text() for f in flags.all()] == [
        f"A · unsupported: “{page.locator('#rat-pane-a p').first.inner_text()}” ✕",
        f"B · wrong: “{page.locator('#rat-pane-b p').first.inner_text()}” ✕"]


def answer_every_pair(page, name: str) -> None:
    keys, vote, _, _ = KEYS[name]
    reveal = page.locator("#rat-reveal")
    for k in range(PAIRS):
        page.locator("#rat-pane-a").get_by_text("Owls").wait_for(timeout=TIMEOUT)
        ready(page)
        rows = page.locator("#rat-criteria .rat-crit")
        rows.first.wait_for(timeout=TIMEOUT)
        assert rows.count() == len(BENCH_CRITERIA)
        for row, criterion in zip(rows.all(), BENCH_CRITERIA, strict=True):
            assert row.get_by_text(criterion).is_visible()
        assert in_view(page, rows.last) and in_view(page, page.locator("#rat-votebar")), "all of it in one screen"
        if k == 0:  # the overall vote first: not counted, the message names the criterion left open
            page.keyboard.press(vote)
            reveal.get_by_text("“Comprehensiveness” has no choice yet").wait_for(timeout=TIMEOUT)
            assert "Not counted" in reveal.inner_text()
            if name == "ana":
                flag_sentences(page)
        for key in keys:
            page.keyboard.press(key)
        page.keyboard.press(vote)
        reveal.get_by_text("was written by").wait_for(timeout=TIMEOUT)
        if k < PAIRS - 1:
            page.keyboard.press("n")
            reveal.get_by_text("was written by").wait_for(state="detached", timeout=TIMEOUT)
            # a new pair: every row empty again, the first one marked
            page.locator("#rat-criteria .rat-crit-current").get_by_text(BENCH_CRITERIA[0]).wait_for(timeout=TIMEOUT)
            assert page.locator("#rat-criteria input:checked").count() == 0
            assert page.locator("#rat-sflags .rat-sflag").count() == 0, "a new pair starts with no flag"


def test_two_annotators_answer_every_criterion_by_keyboard_and_the_leaderboard_rates_each(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "criteria.db", arena_only=True))
    tasks = {f"Task {k}: owls, part {k}.": {"rat": f"Owls hunt at night ({k}).", "cot": f"Owls sleep by day ({k})."}
             for k in range(PAIRS)}
    seed_outputs(app.store, tasks, task_set="s")
    accounts = Accounts(app.store, hasher=FAST)
    for name in ("ana", "bob"):
        accounts.add(name, "correct-horse")
    accounts.add("boss", "correct-horse", role="admin")
    app.arena.campaigns.create("bench", task_set="s", methods=["rat", "cot"], overlap=2, quota=PAIRS,
                               voters=["ana", "bob"], criteria=BENCH_CRITERIA, by="boss")
    with serve(app, accounts) as url, chromium() as browser:
        pages = {name: logged_in(browser, url, name, "correct-horse") for name in ("ana", "bob")}
        for name, page in pages.items():
            page.wait_for_url(re.compile(r"/arena/$"), timeout=TIMEOUT)
            answer_every_pair(page, name)
        pages["ana"].screenshot(path=str(tmp_path / "criteria-arena.png"))
        boss = logged_in(browser, url, "boss", "correct-horse")
        boss.get_by_role("tab", name="Leaderboard").click()
        boss.get_by_text("people votes over").wait_for(timeout=TIMEOUT)
        boss.locator("#rat-campaign-pick input").click()
        boss.get_by_role("option", name="bench").click()
        boss.get_by_text(f"{2 * PAIRS} people votes in campaign “bench”").wait_for(timeout=TIMEOUT)
        board = boss.locator("#rat-criteria-board")
        for criterion in BENCH_CRITERIA:
            for method in ("rat", "cot"):
                board.get_by_role("row").filter(has_text=criterion).filter(has_text=method).first.wait_for(
                    timeout=TIMEOUT)
        assert "votes per criterion" in boss.locator("#rat-criteria-note").inner_text()
        boss.get_by_role("button", name=re.compile("^Style control")).click()  # style control per criterion
        styled = boss.locator("#rat-criteria-style")
        for criterion in BENCH_CRITERIA:
            styled.get_by_role("row").filter(has_text=criterion).first.wait_for(timeout=TIMEOUT)
        board.scroll_into_view_if_needed()
        boss.screenshot(path=str(tmp_path / "criteria-board.png"), full_page=True)
    rows = app.store.db.execute(
        "select v.annotator, v.choice, k.criterion, k.choice from votes v join vote_criteria k on k.vote_id = v.id "
        "order by v.id, k.id").fetchall()
    export_dataset(app.rooms.admin, tmp_path / "dataset", fmt=JSONL, campaign="bench", names=True)
    app.store.close()
    votes = [json.loads(line) for line in (tmp_path / "dataset/votes/train.jsonl").read_text().splitlines()]
    flagged = [(v["annotator"], json.loads(v["sentence_flags"])) for v in votes if v.get("sentence_flags")]
    assert len(flagged) == 1 and flagged[0][0] == "ana"
    assert [(f["side"], f["kind"]) for f in flagged[0][1]] == [("a", "unsupported"), ("b", "wrong")]
    assert all(re.fullmatch(r"Owls (hunt at night|sleep by day) \(\d\)\.", f["sentence"]) for f in flagged[0][1])
    assert all(json.loads(v["criteria"]).keys() == set(BENCH_CRITERIA) for v in votes)
    assert len(rows) == 2 * PAIRS * len(BENCH_CRITERIA)
    for name, (_, _, picks, overall) in KEYS.items():
        mine = [r for r in rows if r[0] == name]
        assert {r[1] for r in mine} == {overall}
        assert [(r[2], r[3]) for r in mine] == list(zip(BENCH_CRITERIA, picks, strict=True)) * PAIRS
