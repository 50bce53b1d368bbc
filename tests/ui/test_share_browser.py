"""The Share button in a real headless Chromium (issue 39, item 4): an admin logged in runs a task in
the Writer and clicks Share; the link, opened in a fresh browser context (no cookie, no account) at
1366x768, shows the article with its sources and the run's replay (stepping, playing, Present),
while the app itself still sends that visitor to the login page; Revoke closes the link (404)."""

from __future__ import annotations

import re

import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import ADMIN, Accounts
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.fakes.web_server import FakeWeb
from tests.ui.browser import chromium, chromium_missing, logged_in, serve
from tests.ui.test_writer_browser import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

TIMEOUT = 20_000  # ms
FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
TASK = "Write a short history of Python 3 for a shared link."


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    with FakeLLM() as llm, FakeWeb() as web:
        app = app_module.build(make_settings(tmp_path_factory.mktemp("share"), llm, web))
        accounts = Accounts(app.store, hasher=FAST)
        accounts.add("ana", "correct-horse", role=ADMIN)  # an account exists: every visitor logs in
        with serve(app, accounts) as url, chromium() as browser:
            yield llm, app, url, browser


@pytest.fixture
def llm(stand_ins):
    return stand_ins[0]


@pytest.fixture
def app(stand_ins):
    return stand_ins[1]


@pytest.fixture
def open_page(stand_ins):
    """``open_page(path, login=...)``: a page at 1366x768 in a browser context of its own, logged
    in as the admin or not at all."""
    _, _, url, browser = stand_ins
    contexts = []

    def opener(path: str = "", *, login: bool = False):
        if login:
            page = logged_in(browser, url, "ana", "correct-horse")
            contexts.append(page.context)
            page.wait_for_url(url, timeout=TIMEOUT)
            return page
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        contexts.append(context)
        page = context.new_page()
        page.goto(url + path.lstrip("/"))
        return page

    yield opener
    for context in contexts:
        context.close()


def test_share_in_the_writer_gives_a_link_that_shows_the_article_and_replay_without_a_login(open_page, llm, app):
    llm.reply(RatAuthor(draft_steps(3)))
    admin = open_page(login=True)
    writer = admin.locator("#rat-tab-writer")
    expect(writer.get_by_text("the model server answers")).to_be_visible(timeout=TIMEOUT)
    writer.get_by_label("Task").fill(TASK)
    writer.get_by_role("button", name="Run", exact=True).click()
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)

    writer.get_by_role("button", name="Share", exact=True).click()
    box = writer.locator(".rat-share-link").get_by_role("textbox")
    expect(box).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/share/[A-Za-z0-9_-]{43}$"), timeout=TIMEOUT)
    link = box.input_value()
    expect(writer.locator(".block.rat-share-said")).to_contain_text("the model's own text")
    screenshot(admin, "writer-share.png", top=writer.get_by_role("button", name="Download Markdown", exact=True))
    path = "/share/" + link.rsplit("/", 1)[1]

    # a stranger: no account, no cookie; the app asks for a login, the link does not
    stranger = open_page("/")
    expect(stranger).to_have_url(re.compile(r"/login$"))
    errors: list[str] = []
    reader = open_page()
    reader.on("pageerror", lambda exc: errors.append(str(exc)))
    reader.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    reader.goto(link)
    expect(reader.get_by_role("heading", level=1)).to_have_text(TASK)
    expect(reader.locator("#rat-share-article p").first).to_contain_text("[revised]")
    expect(reader.get_by_role("heading", name="Sources")).to_be_visible()
    sources = reader.locator("ol.sources > li")
    assert sources.count() >= 1 and sources.first.locator("a").get_attribute("href").startswith("http")
    mark = reader.locator("#rat-share-article a.cite").first
    expect(mark).to_have_attribute("href", re.compile(r"^#src-\d+$"))
    screenshot(reader, "share-link.png", top=reader.get_by_role("heading", level=1))

    # the replay: the finished run, then stepped back to the start and played
    replay = reader.locator("#rat-tab-replay")
    expect(replay.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.")
    expect(replay.locator(".rat-steps-panel .rat-card")).to_have_count(3)
    expect(replay.locator(".rat-share-draft ol.rat-draft > li")).to_have_count(3)
    position = replay.locator(".rat-replay-position input")
    position.fill("0")
    expect(replay.locator(".rat-steps-panel .rat-card")).to_have_count(0)
    replay.get_by_role("button", name="Step forward ▶").click()
    expect(replay.locator(".rat-share-draft ol.rat-draft > li")).to_have_count(3)
    screenshot(reader, "share-link-replay.png", top=replay)
    replay.get_by_role("button", name="▶ Play").click()
    expect(replay.locator(".rat-progress")).to_contain_text(re.compile(r"Step [23] of 3"), timeout=TIMEOUT)

    # Present: the stage over the whole window, the active step in large type; Esc leaves
    replay.get_by_role("button", name="Present").click()
    stage = reader.locator("#rat-stage")
    expect(stage).to_be_visible()
    expect(stage.locator(".rat-stage-task")).to_have_text(TASK)
    expect(stage.locator(".rat-stage-card .rat-card")).to_have_count(1, timeout=TIMEOUT)
    expect(stage.locator(".rat-stage-progress")).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    screenshot(reader, "share-link-present.png", top=stage)
    reader.keyboard.press("Escape")
    expect(stage).to_be_hidden()
    assert not errors, errors

    # the author revokes it: the link answers 404
    writer.get_by_role("button", name="Revoke", exact=True).click()
    expect(writer.locator(".rat-share-link")).to_be_hidden(timeout=TIMEOUT)
    expect(writer.locator(".block.rat-share-said")).to_contain_text("Revoked")
    answer = reader.goto(link)
    assert answer.status == 404
    assert app.store.db.execute("select count(*) from share_links where revoked is null").fetchone()[0] == 0
    assert path in link
