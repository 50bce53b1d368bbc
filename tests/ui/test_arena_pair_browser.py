"""The annotator's pair in a real headless Chromium (issue 22, items 3 and 4): with two answers of
about 1,500 words, A and B sit side by side in panes that scroll on their own and the vote bar is
in view without scrolling the page, at 1366x768 and at 1920x1080; keys vote (1), move on (N) and
undo (U); each new pair starts at the top of both panes; a vote over the rate limit is refused
without a traceback in the server's log. The app is served as ``python app.py --arena-only``
serves it (``tests.ui.browser.serve``), with its style sheet.

Screenshots go to /tmp/shots/ (arena_WxH_*.png), to look at."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

import app as app_module
from annotation.voting.arena import Arena
from annotation.voting.shown import Progress
from common.settings import Settings
from data import arena
from tests.annotation.conftest import seed_outputs
from tests.ui.browser import chromium, chromium_missing, serve
from ui import arena as arena_tab
from ui.render_arena import CHOICE_KEYS, button_label, progress_text

METHODS = ("a<b", "plainmethod")  # a method name holding "<" is shown as written
SHOTS = Path("/tmp/shots")
TIMEOUT = 15_000  # ms
SIZES = [(1366, 768), (1920, 1080)]
needs_chromium = pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())


def essay(side: str, task: int, words: int = 1_500) -> str:
    """About ``words`` words of Markdown: a heading and paragraphs that say which answer they are."""
    paragraphs, n = [], 0
    while n < words:
        k = len(paragraphs) + 1
        vocab = [f"{w}{k}" for w in ("owls", "hunt", "at", "night", "and", "sleep", "by", "day", "in", "trees")]
        text = f"Paragraph {k} of answer {side}{task}. " + " ".join(vocab * 5)
        paragraphs.append(text)
        n += len(text.split())
    return f"## Answer {side}{task}\n\n" + "\n\n".join(paragraphs) + f"\n\nEnd of answer {side}{task}."


def served_app(tmp_path, **settings) -> app_module.App:
    app = app_module.build(Settings(db_path=tmp_path / "pair.db", arena_only=True, **settings))
    seed_outputs(app.store, {f"Task {k}: write about owls, part {k}.": {METHODS[0]: essay("X", k),
                                                                        METHODS[1]: essay("Y", k)} for k in range(6)})
    return app


@pytest.fixture
def annotator_page(tmp_path):
    """(page factory, app): the Arena served on 127.0.0.1 and a Chromium to open it in."""
    app = served_app(tmp_path)
    with serve(app) as url, chromium() as browser:
        def open_page(width: int = 1366, height: int = 768):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            return page

        yield open_page, app
    app.store.close()


def start(page, name: str = "ana") -> None:
    page.get_by_label("Your name").press_sequentially(name)
    page.get_by_role("button", name="Start").click()
    page.locator("#rat-pane-a").get_by_text("Paragraph 3 of answer").wait_for(timeout=TIMEOUT)
    page.wait_for_function("() => getComputedStyle(document.documentElement).getPropertyValue('--rat-arena-top')")


def layout(page) -> dict:
    return page.evaluate("""() => {
        const box = (el) => el.getBoundingClientRect().toJSON();
        const pane = (id) => { const el = document.getElementById(id);
                               return {...box(el), scrollHeight: el.scrollHeight, clientHeight: el.clientHeight}; };
        return {scrollHeight: document.scrollingElement.scrollHeight, innerHeight: innerHeight, innerWidth: innerWidth,
                buttons: [...document.querySelectorAll("#rat-votebar button")].map(box),
                a: pane("rat-pane-a"), b: pane("rat-pane-b"), task: box(document.getElementById("rat-task"))};
    }""")


def check_fits(seen: dict) -> None:
    """The vote bar in the window, the page itself not scrolling, A and B side by side, scrolling."""
    assert seen["scrollHeight"] <= seen["innerHeight"] + 2, seen
    assert len(seen["buttons"]) == 6
    for b in seen["buttons"]:
        assert 0 <= b["top"] and b["bottom"] <= seen["innerHeight"], b
        assert 0 <= b["left"] and b["right"] <= seen["innerWidth"], b
    a, b = seen["a"], seen["b"]
    assert abs(a["top"] - b["top"]) < 2 and a["right"] <= b["left"], "A and B side by side"
    assert min(a["scrollHeight"] - a["clientHeight"], b["scrollHeight"] - b["clientHeight"]) > 500, "own scroll"
    assert a["height"] >= 150, "room to read"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    page.screenshot(path=str(SHOTS / f"arena_{size['width']}x{size['height']}_{name}.png"))


def vote_rows(app) -> list[tuple]:
    return app.store.db.execute("select battle_id, choice, comment, flag from votes order by id").fetchall()


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("width, height", SIZES)
def test_the_pair_and_the_vote_bar_fit_the_window(annotator_page, width, height):
    open_page, _ = annotator_page
    page = open_page(width, height)
    start(page)
    check_fits(layout(page))
    assert page.locator("#rat-rules").get_by_text("Weigh the answers on").is_visible(), "rules open before a vote"
    shot(page, "1_first_pair")

    page.mouse.click(width // 2, 5)  # the page, not a box
    page.keyboard.press("1")
    page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
    page.locator("#rat-rules").get_by_text("Weigh the answers on").wait_for(state="hidden", timeout=TIMEOUT)
    seen = layout(page)
    check_fits(seen)
    shot(page, "2_voted")
    page.locator("#rat-pane-a").evaluate("el => el.scrollTop = el.scrollHeight")
    shot(page, "3_scrolled_a")


@pytest.mark.browser
@needs_chromium
def test_keys_vote_and_next_starts_both_panes_at_the_top(annotator_page):
    open_page, app = annotator_page
    page = open_page()
    start(page)
    first_task = page.locator("#rat-task").inner_text()
    page.locator("#rat-comment textarea").press_sequentially("B repeats itself 1 2")  # keys in a box type
    assert vote_rows(app) == [], "typing 1 or 2 in the comment box votes nothing"
    page.locator("#rat-flag input").click()
    page.get_by_role("option", name="B is broken").click()
    page.locator("#rat-pane-a").evaluate("el => el.scrollTop = 900")
    page.locator("#rat-pane-b").evaluate("el => el.scrollTop = 600")
    page.mouse.click(683, 5)
    page.keyboard.press("1")
    page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
    [(battle, choice, comment, flag)] = vote_rows(app)
    assert (choice, comment, flag) == ("a", "B repeats itself 1 2", "b_broken")
    reveal = page.locator("#rat-reveal").inner_text()
    assert "a<b" in reveal and "a&lt;b" not in reveal and "plainmethod" in reveal
    assert "Undo (U) within 30 s" in reveal
    assert page.get_by_role("button", name="A is better").is_disabled()
    assert page.locator("#rat-comment textarea").input_value() == "B repeats itself 1 2", "as sent, until Next"

    page.keyboard.press("n")
    page.wait_for_function("t => document.getElementById('rat-task').innerText !== t", arg=first_task,
                           timeout=TIMEOUT)
    page.locator("#rat-pane-a").get_by_text("Paragraph 3 of answer").wait_for(timeout=TIMEOUT)
    page.wait_for_function("() => !document.getElementById('rat-reveal').innerText.includes('written by')",
                           timeout=TIMEOUT)  # the new pair's outputs land in more than one frame
    page.wait_for_function("() => ['rat-pane-a', 'rat-pane-b'].every(id => !document.getElementById(id).scrollTop)",
                           timeout=TIMEOUT)
    assert page.get_by_role("button", name="A is better").is_enabled()
    assert page.locator("#rat-comment textarea").input_value() == "", "a new pair, a new comment"
    progress = page.locator("#rat-progress-line").inner_text()
    assert re.search(r"1 voted today · 1 in all · about \d+ pairs left", progress), progress


@pytest.mark.browser
@needs_chromium
def test_scroll_a_and_b_together(annotator_page):
    open_page, _ = annotator_page
    page = open_page()
    start(page)
    page.locator("#rat-pane-a").evaluate("el => el.scrollTop = 400")
    page.wait_for_timeout(200)
    assert page.locator("#rat-pane-b").evaluate("el => el.scrollTop") == 0, "off by default"
    page.get_by_label("Scroll A and B together").check()
    page.locator("#rat-pane-a").hover()
    page.mouse.wheel(0, 600)
    page.wait_for_function("() => document.getElementById('rat-pane-b').scrollTop > 300", timeout=TIMEOUT)
    page.keyboard.press("2")  # the checkbox has the focus: keys still vote
    page.get_by_text("was written by").wait_for(timeout=TIMEOUT)


@pytest.mark.browser
@needs_chromium
def test_undo_with_u_shows_the_same_pair_again_to_vote_anew(annotator_page):
    open_page, app = annotator_page
    page = open_page()
    start(page)
    a_text = page.locator("#rat-pane-a").inner_text()
    page.mouse.click(683, 5)
    page.keyboard.press("2")
    page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
    page.keyboard.press("u")
    page.get_by_text("Your vote was undone").wait_for(timeout=TIMEOUT)
    assert page.locator("#rat-pane-a").inner_text() == a_text, "the same A"
    assert page.get_by_role("button", name="Tie").is_enabled()
    assert not page.get_by_text("was written by").is_visible()
    page.keyboard.press("t")
    page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
    (first, cast, *_), (second, again, *_) = vote_rows(app)
    assert (cast, again) == ("b", "tie") and second != first
    [c] = arena.vote_corrections(app.store)
    assert (c.vote_id, c.choice, c.why) == (1, arena.VOID, "undone by the annotator within 30 s")
    assert app.results.leaderboard(bootstrap=2).votes == 1


def enabled(page) -> dict[str, bool]:
    """Which of the vote bar's buttons are on, by element id."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll("#rat-votebar button")]
        .map(b => [b.closest("[id^=rat-]").id, !b.disabled]))""")


def wait_mode(page, mode: str) -> None:
    """Until the vote bar's buttons are those of ``mode`` (arena_tab.MODES); fails after TIMEOUT."""
    page.wait_for_function("""(want) => [...document.querySelectorAll("#rat-votebar button")]
        .every(b => !b.disabled === want[b.closest("[id^=rat-]").id])""", arg=arena_tab.MODES[mode], timeout=TIMEOUT)
    assert enabled(page) == arena_tab.MODES[mode]


@pytest.mark.browser
@needs_chromium
def test_the_buttons_follow_the_page_through_start_vote_undo_and_the_end(tmp_path):
    """The page turns the buttons on and off (the server sends a mode, not six button updates):
    before Start none; with a pair the votes and Next; after a vote Next and Undo; with no pair left
    Next only. A key for a button that is off does nothing; in the whole app the Arena tab keeps
    its mode when the annotator visits another tab and comes back."""
    app = app_module.build(Settings(db_path=tmp_path / "modes.db"))
    seed_outputs(app.store, {f"Task {k}": {METHODS[0]: essay("X", k, 50), METHODS[1]: essay("Y", k, 50)}
                             for k in range(2)})
    with serve(app) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url)
        page.get_by_role("tab", name="Arena").click()
        page.get_by_label("Your name").wait_for(timeout=TIMEOUT)
        wait_mode(page, "start")
        page.keyboard.press("n")
        page.get_by_label("Your name").press_sequentially("ana")
        page.get_by_role("button", name="Start").click()
        wait_mode(page, "pair")
        page.mouse.click(683, 5)
        page.keyboard.press("u")  # Undo is off: nothing to undo
        page.keyboard.press("1")
        page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
        wait_mode(page, "voted")
        page.keyboard.press("2")  # the votes are off: no second vote on this pair
        page.get_by_role("tab", name="Writer").click()
        page.get_by_role("tab", name="Arena").click()
        wait_mode(page, "voted")
        page.keyboard.press("u")
        page.get_by_text("Your vote was undone").wait_for(timeout=TIMEOUT)
        wait_mode(page, "pair")
        for _ in range(2):
            page.keyboard.press("t")
            page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
            wait_mode(page, "voted")
            page.keyboard.press("n")
            page.wait_for_function("() => !document.getElementById('rat-reveal').innerText.includes('written by')",
                                   timeout=TIMEOUT)
        page.get_by_text("every pair there is").wait_for(timeout=TIMEOUT)
        wait_mode(page, "closed")
        page.wait_for_timeout(300)
    choices = [row[1] for row in vote_rows(app)]
    assert choices == ["a", "tie", "tie"], choices
    assert [c.choice for c in arena.vote_corrections(app.store)] == [arena.VOID]
    app.store.close()


def test_each_event_says_the_mode_and_folds_the_rules_once(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "m.db", arena_only=True))
    seed_outputs(app.store, {"owls": {"rat": "r", "cot": "c"}, "bats": {"rat": "r2", "cot": "c2"}})
    with gr.Blocks():
        tab = arena_tab.build(app.arena)
    shown = tab.next({"annotator": "ana", "battle": None})
    assert shown[tab.mode] == "pair"
    voted = tab.vote("a", shown[tab.state])
    assert voted[tab.mode] == "voted" and voted[tab.rules].open is False and voted[tab.state]["rules"] is False
    undone = tab.undo(voted[tab.state])
    assert undone[tab.mode] == "pair"
    again = tab.vote("b", undone[tab.state])
    assert again[tab.mode] == "voted" and tab.rules not in again and tab.state not in again, "folded once"
    twice = tab.undo(undone[tab.state])
    assert twice[tab.mode] == "pair"
    refused = tab.undo(twice[tab.state])
    assert refused[tab.mode] == "closed" and "undone" in refused[tab.reveal]
    tab.vote("tie", twice[tab.state])
    second = tab.next(twice[tab.state])
    tab.vote("tie", second[tab.state])
    assert tab.next(second[tab.state])[tab.mode] == "closed", "no pair left"
    assert set(arena_tab.MODES) == {"start", "pair", "voted", "closed"}
    app.store.close()


@pytest.mark.browser
@needs_chromium
def test_a_vote_over_the_rate_limit_is_refused_without_a_traceback(tmp_path, capfd):
    app = served_app(tmp_path, votes_per_minute=1)
    with serve(app) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url)
        start(page)
        page.mouse.click(683, 5)
        page.keyboard.press("1")
        page.get_by_text("was written by").wait_for(timeout=TIMEOUT)
        page.keyboard.press("n")
        page.get_by_role("button", name="A is better").and_(page.locator(":enabled")).wait_for(timeout=TIMEOUT)
        capfd.readouterr()
        page.keyboard.press("1")
        page.get_by_text("Not counted").wait_for(timeout=TIMEOUT)
        assert "Too many votes" in page.locator("#rat-reveal").inner_text()
        assert page.get_by_role("button", name="A is better").is_enabled(), "vote again after the wait"
        page.wait_for_timeout(300)
    app.store.close()
    log = capfd.readouterr()
    assert "Traceback" not in log.err + log.out and "Too many votes" not in log.err
    assert len(vote_rows(app)) == 1


def test_a_logged_in_user_gets_a_pair_on_load_and_no_name_box(tmp_path):
    """With accounts the vote is the account's: the load event shows the first pair and hides the box."""
    app = served_app(tmp_path)
    with gr.Blocks():
        tab = arena_tab.build(Arena(app.store), start_on_load=True)
        whole = arena_tab.build(Arena(app.store))  # the Arena tab of an admin's whole app
    opened = whole.load(SimpleNamespace(username="boss", session_hash="0123456789", client=None))
    assert opened[whole.name]["value"] == "boss" and whole.state not in opened, "no battle by opening the app"
    shown = tab.load(SimpleNamespace(username="ana", session_hash="0123456789", client=None))
    assert shown[tab.name_row]["visible"] is False
    assert shown[tab.state]["annotator"] == "ana" and shown[tab.state]["battle"]
    assert "Paragraph 1 of answer" in shown[tab.out_a]
    assert not any(m in str(v) for v in shown.values() for m in METHODS), "blind"
    nobody = tab.load(SimpleNamespace(username=None, session_hash="0123456789", client=None))
    assert list(nobody) == [tab.name_row]
    app.store.close()


def test_the_end_message_points_to_the_admin_not_the_writer_or_the_cli(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "end.db", arena_only=True))
    seed_outputs(app.store, {"owls": {"rat": "r", "cot": "c"}})
    with gr.Blocks():
        tab = arena_tab.build(app.arena)
    state = {"annotator": "ana", "battle": None}
    shown = tab.next(state)
    assert tab.next(shown[tab.state])[tab.task] == shown[tab.task], "a skipped pair is shown again, not the end"
    tab.vote("a", shown[tab.state])
    end = tab.next(shown[tab.state])[tab.task]
    assert "every pair" in end and "admin" in end
    assert "Writer" not in end and "python app.py" not in end
    fresh = app_module.build(Settings(db_path=tmp_path / "empty.db", arena_only=True))
    with gr.Blocks():
        empty = arena_tab.build(fresh.arena)
    message = empty.next(state)[empty.task]
    assert "every pair" not in message and "admin" in message and "Writer" not in message
    app.store.close()
    fresh.store.close()


@pytest.mark.parametrize("progress, line", [
    (Progress(3, 41, 120), "3 voted today · 41 in all · about 120 pairs left"),
    (Progress(0, 0, 1, quota=20), "0 voted today · 0 in all · about 1 pair left · quota 20"),
    (Progress(2, 2, 0), "2 voted today · 2 in all · no pair left"),
])
def test_the_progress_line(progress, line):
    assert progress_text(progress) == line


def test_buttons_show_their_keys():
    assert button_label("A is better", CHOICE_KEYS["a"]) == "A is better [1]"
    assert {k for keys in CHOICE_KEYS.values() for k in keys} == set("1234ABTX")
