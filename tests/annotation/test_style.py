"""Style control (annotation.results.style): the features of an output, the style-controlled
Bradley–Terry fit against simulated votes with a known answer, and the ranking as the service,
the CLI and the Leaderboard tab show it."""

from __future__ import annotations

import json
import re

import gradio as gr
import numpy as np
import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import Accounts
from annotation.present import PLAIN, SOURCES, present
from annotation.results import ratings, style
from annotation.voting.arena import Arena
from common.settings import Settings
from data import arena
from tests.annotation.conftest import results, rooms
from tests.annotation.test_cli import run, write_jsonl
from tests.ui.browser import chromium, chromium_missing, logged_in, serve
from ui import leaderboard

SOURCED = """# Owls

Owls hunt at night [1], and most [2][3] are silent.

## Sources
1. [A](https://a.example)
2. [B](https://b.example)
3. [C](https://c.example)
"""


@pytest.mark.parametrize("text, expected", [
    ("One two three.", [3, 0, 0, 0, 0]),
    ("", [0, 0, 0, 0, 0]),
    (SOURCED, [9, 3, 1, 0, 0]),  # the sources list is neither words nor list items
    ("Intro\n\n- a b\n* c\n1. d\n2) e\n\n```\n- in code\n# not a heading\n```", [11, 0, 0, 4, 0]),
    ("## One\n\nText.\n\nTwo\n---\n\nIn [2020] it rained.", [7, 0, 2, 0, 0]),  # [2020] is a year, not a mark
])
def test_features_of_small_texts(text, expected):
    assert style.features(text).tolist() == expected


def test_the_plain_style_shows_no_citation():
    assert style.features(SOURCED, PLAIN).tolist() == [9, 0, 1, 0, 0]
    with pytest.raises(ValueError, match="--arena-style"):
        style.features("x", "fancy")


#: Outputs that open with the writer speaking of its own work, and how many such lines each has.
CHATTY = {
    "Let me search for recent work on owls.\n\nI'll write the report now.\n\n# Owls\n\nOwls hunt.": 2,
    "Sure! I'm going to research owl flight first.\nOwls hunt at night.": 1,
    "Okay, I will look into the flight of owls [1].\n\nOwls hunt.\n\n## Sources\n1. [A](https://a.example)": 1,
    "我将为您撰写一份关于猫头鹰的研究报告。\n\n# 猫头鹰\n\n猫头鹰在夜间捕猎。": 1,
    "好的，我来研究一下这个问题。\n\n猫头鹰在夜间捕猎。": 1,
    "让我先搜索相关资料。\n我正在整理搜索结果。\n\n猫头鹰在夜间捕猎。": 2,
}
NOT_CHATTY = [
    "Owls hunt at night. I will come back to this.",  # the answer first
    "# Owls\n\nLet me explain how owls hunt.",  # after the answer's heading: its own voice
    "In this report I will describe owls.",
    "我们将在本文中讨论猫头鹰。",  # a report's "we"
    "Iceland has few owls.",
    "I will argue that " + "owls hunt at night and " * 20 + "sleep by day.",  # a long first line: an essay's
]


@pytest.mark.parametrize("text", sorted(CHATTY))
def test_opening_chatter_is_counted_and_shown_as_written(text):
    assert style.features(text)[-1] == CHATTY[text] == style.features(text, PLAIN)[-1]
    first = text.splitlines()[0]
    assert present(text, SOURCES).startswith(first) and present(text, PLAIN).startswith(first.replace(" [1]", ""))


@pytest.mark.parametrize("text", NOT_CHATTY)
def test_an_answer_that_begins_with_its_answer_has_no_chatter(text):
    assert style.features(text)[-1] == 0


def test_without_chatter_its_column_changes_no_number():
    votes, fa, fb = simulate({"long": 0, "mid": 0, "short": 0}, {"long": 600, "mid": 450, "short": 300}, 1.0, n=600)
    with_column = style.board(votes, fa, fb, rounds=5)
    assert with_column.effects[-1].coef is None and "not estimated" in with_column.effects[-1].sentence()
    i, j = np.arange(len(votes)) % 3, (np.arange(len(votes)) + 1) % 3
    share = np.ones(len(votes))
    assert np.allclose(style.fit(i, j, share, (fa - fb), 3).theta, style.fit(i, j, share, (fa - fb)[:, :4], 3).theta)


def test_chatter_that_sways_votes_is_controlled_for():
    """Two methods of equal quality; "chatty" leaves its search notes at the top of most of its
    answers and people mark them down: the raw ranking puts it behind, style control does not."""
    rng = np.random.default_rng(3)
    n = 3000
    a_chatty = rng.random(n) < 0.5
    votes, fa, fb = [], np.zeros((n, len(style.FEATURES))), np.zeros((n, len(style.FEATURES)))
    for k in range(n):
        chat = float(rng.random() < 0.8)
        fa[k, 0], fb[k, 0] = rng.normal(400, 100, 2)
        (fa if a_chatty[k] else fb)[k, 4] = chat
        pull = -1.5 * chat * (1 if a_chatty[k] else -1)
        choice = "a" if rng.random() < 1 / (1 + np.exp(-pull)) else "b"
        votes.append(ratings.VoteRecord(*(("chatty", "clean") if a_chatty[k] else ("clean", "chatty")), choice))
    board = style.board(votes, fa, fb, rounds=10)
    rows = {r.method: r for r in board.rows}
    assert rows["clean"].bt_raw - rows["chatty"].bt_raw > 100, rows
    assert abs(rows["clean"].bt - rows["chatty"].bt) < 40, rows
    chatter = board.effects[-1]
    assert chatter.feature == "chatter" and chatter.coef < -0.5
    assert "the answer that opens with more remarks about its own work" in chatter.sentence()


def test_features_are_computed_once_per_output():
    asked = []

    def read(ids):
        asked.append(list(ids))
        return {1: "one two", 2: "- a\n- b"}

    cache = style.FeatureCache()
    table = cache.table([1, 2, 1], read)
    assert table.tolist() == [[2, 0, 0, 0, 0], [2, 0, 0, 2, 0], [2, 0, 0, 0, 0]]
    assert cache.table([2, 3], read).tolist() == [[2, 0, 0, 2, 0], [0, 0, 0, 0, 0]]
    assert asked == [[1, 2], [3]]


def test_without_style_columns_the_fit_is_the_bradley_terry_one():
    votes = [ratings.VoteRecord(a, b, c) for a, b, c in [("x", "y", "a"), ("x", "y", "a"), ("y", "x", "a"),
                                                          ("y", "z", "tie"), ("z", "x", "b"), ("z", "y", "a")]]
    t = ratings.tally(votes)
    w, _ = ratings.pair_matrices(t, t.methods)
    index = {m: k for k, m in enumerate(t.methods)}
    i = [index[v.method_a] for v in votes]
    j = [index[v.method_b] for v in votes]
    share = [{"a": 1.0, "b": 0.0, "tie": 0.5}[v.choice] for v in votes]
    fitted = style.fit(i, j, share, np.zeros((len(votes), 0)), len(t.methods))
    assert np.allclose(fitted.theta, ratings.bradley_terry(w), atol=1e-5)


def simulate(quality: dict[str, float], mean_words: dict[str, float], length_pull: float, n: int = 6000,
             seed: int = 1):
    """Votes between methods of ``quality`` (log-odds) whose answers have about ``mean_words``
    words (spread 150); the side longer by 100 words gains ``length_pull`` log-odds. Citations
    are drawn at random and sway nobody."""
    rng = np.random.default_rng(seed)
    names = sorted(quality)
    a = rng.integers(0, len(names), n)
    b = (a + rng.integers(1, len(names), n)) % len(names)
    words = lambda k: rng.normal([mean_words[names[m]] for m in k], 150).clip(10)  # noqa: E731
    wa, wb = words(a), words(b)
    q = np.array([quality[m] for m in names])
    p_a = 1 / (1 + np.exp(-(q[a] - q[b] + length_pull * (wa - wb) / 100)))
    u = rng.random(n)
    choice = np.where(u < 0.1, "tie", np.where(u < 0.1 + 0.9 * p_a, "a", "b"))
    votes = [ratings.VoteRecord(names[x], names[y], str(c)) for x, y, c in zip(a, b, choice, strict=True)]
    cites = rng.integers(0, 10, (2, n))
    zeros = np.zeros(n)
    return votes, np.c_[wa, cites[0], zeros, zeros, zeros], np.c_[wb, cites[1], zeros, zeros, zeros]


def test_when_only_length_decides_the_style_controlled_ranking_is_flat():
    votes, fa, fb = simulate({"long": 0, "mid": 0, "short": 0}, {"long": 600, "mid": 450, "short": 300}, 1.0)
    board = style.board(votes, fa, fb)
    raw = {r.method: r.bt_raw for r in board.rows}
    controlled = {r.method: r.bt for r in board.rows}
    assert raw["long"] - raw["mid"] > 60 and raw["mid"] - raw["short"] > 60, raw
    assert max(controlled.values()) - min(controlled.values()) < 25, controlled
    length, cites, headings, items, chatter = board.effects
    assert length.coef > 1.0 and length.win_share > 0.73
    assert abs(cites.coef) < 0.1, "random citations sway nobody"
    assert headings.coef is None and items.coef is None and chatter.coef is None, "no answer differs in them"
    assert length.sentence().startswith(f"At equal quality, the longer answer (by one standard deviation of the "
                                        f"difference, ~{length.sd:,.0f} words) wins {length.win_share:.0%}")
    assert "not estimated" in headings.sentence()


def test_a_better_method_at_equal_length_keeps_its_lead():
    votes, fa, fb = simulate({"good": 1.0, "other": 0, "third": 0}, {"good": 300, "other": 450, "third": 450}, 0.6)
    board = style.board(votes, fa, fb)
    rows = {r.method: r for r in board.rows}
    assert board.rows[0].method == "good" and rows["good"].rank == 1
    lead = rows["good"].bt - max(rows["other"].bt, rows["third"].bt)
    # one log-odd of quality, a tenth of the votes ties (half a win each): A wins a share p of an even-length vote
    p = 0.05 + 0.9 / (1 + np.exp(-1.0))
    expected = np.log(p / (1 - p)) * 400 / np.log(10)  # ~154 Elo points
    assert abs(lead - expected) < 25, f"expected a lead of ~{expected:.0f} Elo points, not {lead:.0f}"
    assert lead > rows["good"].bt_raw - max(rows["other"].bt_raw, rows["third"].bt_raw), \
        "its shorter answers hid part of its lead"


def test_the_effects_and_scores_say_how_sure_they_are():
    votes, fa, fb = simulate({"long": 0, "mid": 0, "short": 0}, {"long": 600, "mid": 450, "short": 300}, 1.0,
                             n=2000)
    board = style.board(votes, fa, fb)
    length, cites = board.effects[:2]
    low, high = length.share_interval
    assert 0.5 < low < length.win_share < high, "the length effect's interval is clear of 50%"
    assert f"(95% interval {low:.0%}–{high:.0%}; odds" in length.sentence()
    assert cites.share_interval[0] < 0.5 < cites.share_interval[1], "random citations: the interval holds 50%"
    assert "cannot tell this from 50%, no effect" in cites.sentence()
    for r in board.rows:
        assert r.bt_low < r.bt < r.bt_high and r.bt_high - r.bt_low < 120, r
    assert style.board(votes, fa, fb) == board, "seeded: the same votes give the same intervals"
    few = style.board(votes[:style.MIN_VOTES - 1], fa[:style.MIN_VOTES - 1], fb[:style.MIN_VOTES - 1])
    assert few.effects[0].sentence() == (f"Too few votes to say what words are worth: {style.MIN_VOTES - 1} of the "
                                         f"{style.MIN_VOTES} needed for an estimate.")
    assert style.bootstrap_rounds(100) == style.BOOTSTRAP_ROUNDS
    assert style.MIN_ROUNDS <= style.bootstrap_rounds(10**6) < style.BOOTSTRAP_ROUNDS


def test_a_plain_campaigns_votes_count_no_citation_marks(local_app):
    from tests.annotation.conftest import seed_outputs

    arena_ = local_app.arena
    seed_outputs(local_app.store, {f"t{k}": {"rat": LONG, "cot": LONG.replace("[1]", "")} for k in range(4)},
                 task_set="s")
    arena_.campaigns.create("plainly", task_set="s", style=PLAIN, voters=["ana"])
    for _ in range(4):
        arena_.vote(arena_.next_pair("ana").battle_id, "ana", "a")
    board = results(arena_).style_board("people", campaign="plainly")
    assert board.votes == 4 and board.effects[1].coef is None, \
        "the marks were not shown in a plain campaign: no answer differs in citations"
    arena_.campaigns.close("plainly", by="lee")
    for _ in range(2):
        arena_.vote(arena_.next_pair("bob").battle_id, "bob", "a")  # the open arena shows the marks
    assert results(arena_).style_board("people").effects[1].coef is not None


def test_a_lone_vote_and_no_vote_fit():
    one = style.board([ratings.VoteRecord("x", "y", "a")], np.array([[5, 0, 0, 0, 0]]), np.array([[3, 0, 0, 0, 0]]))
    assert [r.method for r in one.rows] == ["x", "y"] and one.effects[0].coef > 0
    assert style.board([], np.zeros((0, len(style.FEATURES))), np.zeros((0, len(style.FEATURES)))).rows == []
    with pytest.raises(ValueError, match="one features row per vote"):
        style.board([ratings.VoteRecord("x", "y", "a")], np.zeros((0, len(style.FEATURES))),
                    np.zeros((0, len(style.FEATURES))))


LONG = "# Answer\n\n" + " ".join(["word"] * 120) + " [1]\n\n- a\n- b\n\n## Sources\n1. [S](https://s.example)"
SHORT = "A short answer."


def vote_lines(n: int = 12) -> list[dict]:
    """People's votes where the long answer always wins, whichever method wrote it, and one vote
    imported without its texts."""
    lines = []
    for k in range(n):
        a_long = k % 3 != 0
        lines.append({"task": f"task {k % 4}", "method_a": "rat" if k % 2 else "cot",
                      "method_b": "cot" if k % 2 else "rat", "winner": "a" if a_long else "b",
                      "annotator": f"ann{k}", "output_a": LONG if a_long else SHORT,
                      "output_b": SHORT if a_long else LONG})
    lines.append({"task": "task 9", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ann0"})
    return lines


def test_the_service_fits_the_texts_the_votes_showed(local_app, tmp_path):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", vote_lines()))
    board = local_app.results.style_board("people")
    assert board.votes == 12 and board.left_out == 1
    assert board.effects[0].coef > 0 and board.effects[1].coef > 0
    assert local_app.results.style_board("people") is board, "kept until a vote arrives"


def test_cli_leaderboard_style(local_app, tmp_path, capsys):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", vote_lines()))
    capsys.readouterr()
    assert run(local_app, "leaderboard", "--style", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"rows", "style_controlled", "style"}
    assert {r["method"] for r in out["style_controlled"]} == {"rat", "cot"} == {r["method"] for r in out["rows"]}
    assert [s["feature"] for s in out["style"]] == list(style.FEATURES)
    assert out["style"][0]["coef"] > 0
    assert out["style"][0]["sentence"] == \
        "Too few votes to say what words are worth: 12 of the 50 needed for an estimate."
    assert out["style"][0]["coef_low"] is not None and out["style_controlled"][0]["bt_low"] <= \
        out["style_controlled"][0]["bt"] <= out["style_controlled"][0]["bt_high"]
    run(local_app, "leaderboard", "--json")
    assert isinstance(json.loads(capsys.readouterr().out), list), "without --style, the rows as before"
    run(local_app, "leaderboard", "--style")
    text = capsys.readouterr().out
    assert "Style-controlled ranking (12 vote(s); 1 without their texts left out)" in text
    assert "95% interval" in text and "Too few votes to say what words are worth: 12 of the 50 needed" in text
    assert "At equal quality" not in text, "13 votes state no effect as a finding (issue 36)"


def test_the_leaderboard_tab_shows_the_style_controlled_ranking(local_app, tmp_path):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", vote_lines()))
    with gr.Blocks():
        tab = leaderboard.build(rooms(Arena(local_app.store)), None)
    out = tab.styled("people", leaderboard.ALL, False, True)
    assert sorted(row[0] for row in out[tab.style_table]) == ["cot", "rat"]
    assert [row[3] for row in out[tab.style_table]] == [1, 2]
    assert all(re.fullmatch(r"[\d,]+–[\d,]+", row[2]) for row in out[tab.style_table]), "each score's interval"
    assert "**12** votes (1 imported without their texts left out)" in out[tab.style_note]
    assert "- Too few votes to say what words are worth: 12 of the 50 needed" in out[tab.style_note]
    closed = tab.styled("people", leaderboard.ALL, False, False)
    assert closed[tab.style_table] == gr.update(), "a closed accordion fits nothing"
    assert "No task set" in tab.styled("people", "gone", False, True)[tab.style_note]
    assert arena.vote_outputs(local_app.store, "judge") == {}


@pytest.mark.browser
@pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())
def test_an_admin_sees_the_style_controlled_ranking_in_the_browser(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "style.db", arena_only=True))
    run(app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", vote_lines(60)))
    accounts = Accounts(app.store, hasher=PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    accounts.add("boss", "correct-horse", role="admin")
    with serve(app, accounts) as url, chromium() as browser:
        page = logged_in(browser, url, "boss", "correct-horse")
        page.get_by_role("tab", name="Leaderboard").click(timeout=20_000)
        page.get_by_role("button", name=re.compile("^Style control")).click(timeout=20_000)
        page.get_by_text("At equal quality, the longer answer").wait_for(timeout=20_000)
        rows = page.locator("#rat-style").get_by_role("row")
        rows.filter(has_text="rat").wait_for(timeout=20_000)
        assert rows.filter(has_text="cot").count() == 1
    app.store.close()
