"""Accounts in a real headless Chromium, served as ``python app.py --arena-only`` serves them: two
annotators log in on the app's own login page and vote at the same time, each vote stored under
its account and each account with its own rate limit; an invite link logs its annotator in and
shows the completion code once the quota is cast; an annotator's page has no Leaderboard, and an
admin's has."""

from __future__ import annotations

import re

import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import Accounts
from common.settings import Settings
from tests.annotation.conftest import seed_outputs
from tests.ui.browser import chromium, chromium_missing, serve

TIMEOUT = 20_000  # ms
FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]


def wired(tmp_path, **settings) -> tuple[app_module.App, Accounts]:
    app = app_module.build(Settings(db_path=tmp_path / "accounts.db", arena_only=True, **settings))
    seed_outputs(app.store, {f"Task {k}: owls, part {k}.": {"rat": f"Owls hunt at night ({k}).",
                                                              "cot": f"Owls sleep by day ({k})."} for k in range(5)})
    return app, Accounts(app.store, hasher=FAST)


def log_in(browser, url: str, name: str, password: str):
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(url)
    page.wait_for_url(re.compile(r"/login$"), timeout=TIMEOUT)
    assert page.get_by_role("heading", name="RAT Studio").is_visible()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/arena/$"), timeout=TIMEOUT)
    return page


def first_pair(page) -> None:
    page.locator("#rat-pane-a").get_by_text("Owls").wait_for(timeout=TIMEOUT)


def votes(app) -> list[tuple[str, str]]:
    return app.store.db.execute("select annotator, choice from votes order by id").fetchall()


def test_two_accounts_vote_at_once_each_under_its_name_and_limit(tmp_path):
    app, accounts = wired(tmp_path, votes_per_minute=1)
    accounts.add("ana", "correct-horse")
    accounts.add("bob", "battery-staple")
    with serve(app, accounts) as url, chromium() as browser:
        ana, bob = log_in(browser, url, "ana", "correct-horse"), log_in(browser, url, "bob", "battery-staple")
        for page in (ana, bob):
            first_pair(page)
            assert page.get_by_label("Your name").is_hidden(), "with accounts no name is typed"
        ana.get_by_role("button", name=re.compile("^A is better")).click()
        bob.get_by_role("button", name=re.compile("^B is better")).click()
        for page in (ana, bob):
            page.locator("#rat-reveal").get_by_text("was written by").wait_for(timeout=TIMEOUT)
        # ana's second vote is over her limit (1 a minute); bob's limit is his own
        ana.get_by_role("button", name=re.compile("^Next")).click()
        ana.locator("#rat-reveal").get_by_text("was written by").wait_for(state="detached", timeout=TIMEOUT)
        ana.get_by_role("button", name=re.compile("^Tie")).click()
        ana.locator("#rat-reveal").get_by_text("Not counted").wait_for(timeout=TIMEOUT)
        assert ana.get_by_role("tab", name="Leaderboard").count() == 0
    app.store.close()
    assert sorted(votes(app)) == [("ana", "a"), ("bob", "b")]


def test_an_invite_link_logs_in_and_shows_the_completion_code_at_the_quota(tmp_path):
    app, accounts = wired(tmp_path)
    accounts.add("cy", None, quota=2, completion_code="OWL-2026")
    token = accounts.invite("cy")
    with serve(app, accounts) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url + f"invite/{token}")
        page.wait_for_url(re.compile(r"/arena/$"), timeout=TIMEOUT)
        first_pair(page)
        progress = page.locator("#rat-progress-line")
        for k in range(2):
            assert "OWL-2026" not in progress.inner_text()
            page.keyboard.press(str(k + 1))
            page.locator("#rat-reveal").get_by_text("was written by").wait_for(timeout=TIMEOUT)
            if k == 0:
                page.keyboard.press("n")
                page.locator("#rat-reveal").get_by_text("was written by").wait_for(state="detached",
                                                                                  timeout=TIMEOUT)
        progress.get_by_text("OWL-2026").wait_for(timeout=TIMEOUT)
        assert "2 in all" in progress.inner_text() and "quota 2" in progress.inner_text()
    app.store.close()
    assert votes(app) == [("cy", "a"), ("cy", "b")]


def test_an_admin_sees_the_leaderboard_and_an_annotator_does_not(tmp_path):
    app, accounts = wired(tmp_path)
    accounts.add("ana", "correct-horse", quota=4)
    accounts.add("boss", "correct-horse", role="admin")
    with serve(app, accounts) as url, chromium() as browser:
        ana = log_in(browser, url, "ana", "correct-horse")
        first_pair(ana)
        ana.get_by_role("button", name=re.compile("^A is better")).click()
        ana.locator("#rat-reveal").get_by_text("was written by").wait_for(timeout=TIMEOUT)
        ana.goto(url)  # the whole app's address sends an annotator back to the Arena
        ana.wait_for_url(re.compile(r"/arena/$"), timeout=TIMEOUT)
        assert ana.get_by_role("tab", name="Leaderboard").count() == 0
        boss = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
        boss.goto(url + "login")
        boss.get_by_label("Name").fill("boss")
        boss.get_by_label("Password").fill("correct-horse")
        boss.get_by_role("button", name="Log in").click()
        boss.get_by_role("tab", name="Leaderboard").wait_for(timeout=TIMEOUT)
        boss.locator("#rat-who").get_by_text("boss").wait_for(timeout=TIMEOUT)  # the page's load event fills it
        assert boss.get_by_role("link", name="Log out").is_visible()
        boss.get_by_role("tab", name="Leaderboard").click()  # the admin follows each annotator's progress
        boss.get_by_role("button", name=re.compile("Annotators: progress")).click()
        row = boss.locator("#rat-annotators").get_by_role("row").filter(has_text="ana")
        row.wait_for(timeout=TIMEOUT)
        assert re.search(r"ana\s+1\s+1\s+4\s+25%", row.inner_text()), row.inner_text()
        # the page's own Log out link still logs out (a same-origin click; one from another site does not)
        ana.get_by_role("link", name="Log out").click()  # in this tab (it opened a new one, leaving this)
        ana.wait_for_url(re.compile(r"/login$"), timeout=TIMEOUT)
        ana.goto(url + "arena/")
        ana.wait_for_url(re.compile(r"/login$"), timeout=TIMEOUT)
    app.store.close()
