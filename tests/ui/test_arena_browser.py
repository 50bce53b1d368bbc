"""The Arena tab end to end: blind before the vote (page, /config, API info), revealed after,
and outputs shown as inert text. The browser test drives a real headless Chromium."""

from __future__ import annotations

import json
import urllib.request

import gradio as gr
import pytest

from annotation.voting.arena import Arena
from annotation.voting.shown import Reveal
from data import arena
from data.store import Store
from tests.helpers import free_port
from tests.ui.browser import chromium, chromium_missing
from ui import arena as arena_tab
from ui.render_arena import method_name, reveal_text, safe_markdown

METHODS = ("zebrafinchmethod", "yakherdmethod")
HOSTILE = 'Alpha answer <script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture
def arena_store(tmp_path) -> Store:
    path = tmp_path / "arena.db"
    store = Store(path)
    arena.import_outputs(store, [
        {"prompt": "Describe the owl", "kind": "writing", "task_set": "", "method": METHODS[0], "text": HOSTILE},
        {"prompt": "Describe the owl", "kind": "writing", "task_set": "", "method": METHODS[1],
         "text": "Beta answer: owls hunt at **night**."},
    ])
    return store


@pytest.fixture
def arena_url(arena_store):
    with gr.Blocks() as demo:
        arena_tab.build(Arena(arena_store))
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    yield f"http://127.0.0.1:{port}"
    demo.close()


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def leaks(text: str) -> list[str]:
    return [m for m in METHODS if m in text]


def test_no_method_name_in_config_or_api_info(arena_url):
    config = get(f"{arena_url}/config")
    assert leaks(config) == []
    info = json.loads(get(f"{arena_url}/gradio_api/info"))
    assert info["named_endpoints"] == {} and info["unnamed_endpoints"] == {}  # every event is private
    deps = json.loads(config)["dependencies"]
    assert deps and all(d["api_visibility"] == "private" for d in deps)


@pytest.mark.parametrize("text, inert", [
    ("<script>alert(1)</script>", "&lt;script>"),
    ('<img src=x onerror="alert(1)">', "&lt;img"),
    ("[click](javascript:alert(1))", "[click](#)"),
])
def test_safe_markdown_makes_html_inert(text, inert):
    assert inert in safe_markdown(text)


def test_safe_markdown_keeps_code_as_written():
    text = "Use `a < b` here.\n\n```\nif a < b: pass\n```\n"
    assert safe_markdown(text) == text


def test_reveal_names_both_methods():
    shown = reveal_text(Reveal(1, "rat", "<b>cot</b>", "both_bad"))
    assert "`rat`" in shown and "`<b>cot</b>`" in shown and "Both are bad" in shown


@pytest.mark.parametrize("name, shown", [
    ("a<b", "`a<b`"),  # in a code span Markdown shows < as written: escaping it too showed "a&lt;b"
    ("R&D", "`R&D`"),
    ("odd`name", "`odd'name`"),  # a backtick would end the span
    ("two\nlines", "`two lines`"),
])
def test_a_method_name_is_shown_as_written(name, shown):
    assert method_name(name) == shown


@pytest.mark.browser
@pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())
def test_blind_until_the_vote_in_a_browser(arena_url, arena_store):
    with chromium() as browser:
        page = browser.new_page()
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(arena_url)
        page.get_by_label("Your name").fill("ana")
        page.get_by_role("button", name="Start").click()
        page.get_by_text("Beta answer").wait_for(timeout=15_000)
        page.get_by_text("Alpha answer").wait_for()
        assert leaks(page.content()) == []
        assert page.evaluate("window.pwned") is None and dialogs == []

        page.get_by_role("button", name="A is better").click()
        page.get_by_text("was written by").wait_for(timeout=15_000)
        assert set(leaks(page.content())) == set(METHODS)
        assert page.get_by_role("button", name="B is better").is_disabled()
    rows = arena.vote_rows(arena_store)
    assert [r.choice for r in rows] == ["a"] and {rows[0].method_a, rows[0].method_b} == set(METHODS)
