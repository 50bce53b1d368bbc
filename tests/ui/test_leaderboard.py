"""ui.leaderboard: the handlers called directly (no browser)."""

from __future__ import annotations

import json

import gradio as gr
import pytest
from matplotlib.figure import Figure

from annotation.voting.arena import Arena
from common.settings import Settings
from core.clients import Clients
from data import arena
from data.store import Store
from tests.annotation.conftest import rooms
from ui import leaderboard


@pytest.fixture
def tab(tmp_path):
    path = tmp_path / "lb.db"
    store = Store(path)
    votes = [{"prompt": "t", "kind": "writing", "task_set": "s", "task_id": None, "method_a": a, "method_b": b,
              "choice": c, "annotator": "ana", "output_a": None, "output_b": None, "created": None, "line": 1}
             for a, b, c in [("rat", "cot", "a"), ("cot", "direct", "tie"), ("rat", "direct", "both_bad")]]
    arena.import_votes(store, votes)
    with gr.Blocks() as demo:
        built = leaderboard.build(rooms(Arena(store)), Clients(Settings(db_path=path), cache=store))
    built.demo = demo
    return built


def test_show_people(tab):
    out = tab.show("people", leaderboard.ALL, False, True)
    assert [row[0] for row in out[tab.table]][0] == "rat"
    assert len(out[tab.table]) == 3 and "3** people votes" in out[tab.summary]
    assert all(isinstance(out[p], Figure) for p in (tab.ratings_plot, tab.winrate_plot, tab.battles_plot))


def test_plots_are_drawn_only_when_their_accordion_is_open(tab):
    closed = tab.show("people", leaderboard.ALL)
    assert closed[tab.table] and not any(p in closed for p in (tab.ratings_plot, tab.winrate_plot, tab.battles_plot))
    drawn = tab.draw("people", leaderboard.ALL)
    assert all(isinstance(drawn[p], Figure) for p in (tab.ratings_plot, tab.winrate_plot, tab.battles_plot))
    assert tab.draw("judge", leaderboard.ALL)[tab.ratings_plot] is None


def test_the_leaderboard_is_kept_until_a_vote_arrives(tab):
    first = tab.results.leaderboard("people")
    assert tab.results.leaderboard("people") is first, "nothing new: the same board, not computed again"
    arena.import_votes(tab.results.store, [{"prompt": "t", "kind": "writing", "task_set": "s", "task_id": None,
                                        "method_a": "cot", "method_b": "rat", "choice": "a", "annotator": "bob",
                                        "output_a": None, "output_b": None, "created": None, "line": 1}])
    second = tab.results.leaderboard("people")
    assert second is not first and second.votes == first.votes + 1
    tab.admin.correct(arena.vote_rows(tab.results.store)[0].id, "void", "carol", "a test")
    assert tab.results.leaderboard("people").votes == first.votes, "a correction is news too"


def test_show_without_votes_says_what_to_do(tab):
    out = tab.show("judge", leaderboard.ALL)
    assert out[tab.table] == [] and "run the LLM judge" in out[tab.summary]
    assert tab.show("people", "no such set")[tab.table] == []


def test_choices_list_task_sets_and_methods(tab):
    out = tab.choices()
    assert ("s", "s") in out[tab.task_set]["choices"]
    assert out[tab.method_a]["choices"] == ["cot", "direct", "rat"]


async def test_judge_needs_two_different_methods(tab):
    with pytest.raises(gr.Error):
        await tab.run_judge("rat", None, 10)
    with pytest.raises(gr.Error):
        await tab.run_judge("rat", "rat", 10)


def test_every_event_is_private(tab):
    deps = tab.demo.get_config_file()["dependencies"]
    assert deps and all(d["api_visibility"] == "private" for d in deps)
    json.dumps([d["api_name"] for d in deps])
