"""Annotation campaigns in a real headless Chromium (issue 24, item 4): an admin opens the
Leaderboard, picks a campaign in its Campaign menu, and reads that campaign's ratings and, in the
Campaigns accordion, its progress row and its annotators. The votes are cast through the arena
service beforehand: campaign "pilot" has 3 pairs, overlap 2; ana casts 3 votes, bob 1, and cy
1 in the open arena."""

from __future__ import annotations

import re

import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import Accounts
from common.settings import Settings
from tests.annotation.conftest import seed_outputs
from tests.ui.browser import chromium, chromium_missing, logged_in, serve
from tests.ui.test_campaigns_ui import cast

TIMEOUT = 20_000  # ms
FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]


def test_an_admin_reads_the_leaderboard_and_progress_of_one_campaign(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "campaigns.db", arena_only=True))
    seed_outputs(app.store, {f"Task {k}: owls, part {k}.": {"rat": f"Owls hunt at night ({k}).",
                                                              "cot": f"Owls sleep by day ({k})."} for k in range(3)},
                 task_set="s")
    accounts = Accounts(app.store, hasher=FAST)
    accounts.add("boss", "correct-horse", role="admin")
    app.arena.campaigns.create("pilot", task_set="s", methods=["rat", "cot"], overlap=2, quota=3,
                               voters=["ana", "bob"], by="boss")
    assert (cast(app.arena, "ana", "tie"), cast(app.arena, "bob", "tie", most=1), cast(app.arena, "cy", "a", most=1)) \
        == (3, 1, 1)
    with serve(app, accounts) as url, chromium() as browser:
        page = logged_in(browser, url, "boss", "correct-horse")
        page.get_by_role("tab", name="Leaderboard").click()
        page.get_by_text("5 people votes over").wait_for(timeout=TIMEOUT)  # every vote, by default
        page.locator("#rat-campaign-pick input").click()
        page.get_by_role("option", name="pilot").click()
        page.get_by_text("4 people votes in campaign “pilot”").wait_for(timeout=TIMEOUT)
        page.get_by_role("button", name=re.compile("^Campaigns: progress")).click()
        row = page.locator("#rat-campaigns").get_by_role("row").filter(has_text="pilot")
        row.wait_for(timeout=TIMEOUT)
        assert re.search(r"pilot\s+open\s+task set 's'.*2 annotators per pair.*\s+3\s+1\s+4 / 6\s+67%\s+2",
                         row.inner_text(), re.DOTALL), row.inner_text()
        people = page.locator("#rat-campaign-annotators").get_by_role("row").filter(has_text="bob")
        people.wait_for(timeout=TIMEOUT)
        assert re.search(r"bob\s+1\s+1\s+3\s+33%", people.inner_text()), people.inner_text()
        page.locator("#rat-campaigns").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "campaigns.png"), full_page=True)
    app.store.close()
    assert (tmp_path / "campaigns.png").stat().st_size > 0
