"""Annotation campaigns in the UI (issue 24, item 4), without a browser: the admin's campaign rows,
the Leaderboard read by campaign, and the Arena tab showing a campaign's pairs in its style and
naming it in the progress line. The votes are cast through the arena service on a real store:
campaign "pilot" (3 pairs, overlap 2, quota 3, voters ana and bob, shown plain); ana casts her 3
votes, bob 1, and cy, whom no campaign admits, 1 in the open arena (shown with sources)."""

from __future__ import annotations

import random
import re

import gradio as gr
import pytest

from annotation.errors import NoPairLeft
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from annotation.voting.shown import Progress
from data.store import Store
from tests.annotation.conftest import admin, results, rooms, seed_outputs
from tests.annotation.test_present import BARE, SOURCED
from ui import arena as arena_tab
from ui import leaderboard
from ui.render_arena import (
    CAMPAIGN_ANNOTATOR_HEADERS,
    CAMPAIGN_HEADERS,
    campaign_annotator_rows,
    campaign_rows,
    progress_text,
)

TASKS = 3


@pytest.fixture
def service(tmp_path):
    store = Store(tmp_path / "campaigns.db")
    seed_outputs(store, {f"Task {k}: describe owls": {"rat": SOURCED["imported"], "cot": BARE["cot"]}
                         for k in range(TASKS)}, task_set="s")
    service = Arena(store, rng=random.Random(1), limits=VoteLimits(per_annotator=10_000, per_address=0))
    service.campaigns.create("pilot", task_set="s", methods=["rat", "cot"], style="plain", overlap=2, quota=3,
                             voters=["ana", "bob"], by="lee")
    yield service
    store.close()


def cast(service: Arena, who: str, choice: str, most: int = 100) -> int:
    """``who`` votes ``choice`` on the pairs the arena gives them until none is left (or ``most``
    votes); how many were cast."""
    for k in range(most):
        try:
            shown = service.next_pair(who)
        except NoPairLeft:
            return k
        service.vote(shown.battle_id, who, choice)
    return most


@pytest.fixture
def voted(service) -> Arena:
    assert cast(service, "ana", "tie") == 3  # her quota, and every pair once
    assert cast(service, "bob", "tie", most=1) == 1
    assert cast(service, "cy", "a", most=1) == 1  # the open arena's
    return service


@pytest.fixture
def board(voted):
    with gr.Blocks():
        return leaderboard.build(rooms(voted), None)


@pytest.fixture
def tab(service):
    with gr.Blocks():
        return arena_tab.build(service)


def test_campaign_rows_give_each_campaigns_progress(voted):
    progress = admin(voted).campaign_progress("pilot")
    rows = campaign_rows([progress])
    assert len(rows[0]) == len(CAMPAIGN_HEADERS)
    assert rows == [["pilot", "open", progress.campaign.settings(), 3, 1, "4 / 6", "67%", 2]]
    assert "2 annotators per pair" in rows[0][2] and "shown plain" in rows[0][2]


def test_campaign_annotator_rows_give_each_ones_votes_quota_and_agreement(voted):
    progress = admin(voted).campaign_progress("pilot")
    rows = campaign_annotator_rows(progress, results(voted).people_agreement(campaign="pilot"))
    assert all(len(r) == len(CAMPAIGN_ANNOTATOR_HEADERS) for r in rows)
    assert [r[:5] for r in rows] == [["ana", 3, 3, 3, "100%"], ["bob", 1, 1, 3, "33%"]]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", r[5]) for r in rows), rows
    assert [r[6] for r in rows] == ["1/1 (100%)", "1/1 (100%)"], "both called the pair they shared a tie"


def test_the_progress_line_names_the_campaign():
    assert progress_text(Progress(3, 12, 8, 20, "pilot")) == (
        "Campaign “pilot” · 3 voted today · 12 in all · about 8 pairs left · quota 20")
    assert progress_text(Progress(3, 12, 8)) == "3 voted today · 12 in all · about 8 pairs left"
    assert "&lt;b>" in progress_text(Progress(0, 0, 1, None, "<b>x")), "a campaign's name is made inert"


def test_the_leaderboard_counts_only_the_chosen_campaigns_votes(board):
    every = board.show("people", leaderboard.ALL, False, False, leaderboard.EVERY)
    pilot = board.show("people", leaderboard.ALL, False, False, "pilot")
    assert "**5** people votes over" in every[board.summary]
    assert "**4** people votes in campaign “pilot”" in pilot[board.summary]
    assert {r[0] for r in pilot[board.table]} == {"rat", "cot"}
    assert sum(r[5] for r in pilot[board.table]) == 2 * 4, "each vote is a battle of both methods"
    styled = board.styled("people", leaderboard.ALL, False, True, "pilot")
    assert "**4** votes" in styled[board.style_note]


def test_the_judge_by_campaign_is_explained_not_failed(board):
    out = board.show("judge", leaderboard.ALL, False, False, "pilot")
    assert out[board.table] == [] and "belong to no campaign" in out[board.summary]


def test_the_campaign_choices_list_every_campaign(board):
    choices = board.choices()[board.campaign]["choices"]
    assert choices == [("every vote", leaderboard.EVERY), ("pilot", "pilot")]


def test_the_campaigns_accordion_shows_the_chosen_campaigns_annotators(board):
    out = board.campaign_view("pilot")
    assert [r[:2] for r in out[board.campaigns_table]] == [["pilot", "open"]]
    assert [r[0] for r in out[board.campaign_people]] == ["ana", "bob"]
    assert "**pilot** (open)" in out[board.campaign_note]
    every = board.campaign_view(leaderboard.EVERY)
    assert every[board.campaigns_table] == out[board.campaigns_table] and every[board.campaign_people] == []
    assert "Choose a campaign" in every[board.campaign_note]
    closed = board.campaign_view("pilot", False)
    assert all(v == gr.update() for v in closed.values()), "a closed accordion reads nothing"


def test_a_campaigns_pair_is_shown_in_its_style_and_the_open_arenas_in_the_arenas(tab):
    ana = tab.next({"annotator": "ana", "battle": None})
    cy = tab.next({"annotator": "cy", "battle": None})
    plain = ana[tab.out_a] + ana[tab.out_b]
    sourced = cy[tab.out_a] + cy[tab.out_b]
    assert "[1]" not in plain and "Sources" not in plain, "campaign pilot is shown plain"
    assert "[1]" in sourced and "**Sources**" in sourced, "the open arena shows sources (--arena-style)"
    assert ana[tab.progress].startswith("Campaign “pilot” · 0 voted today")
    assert "Campaign" not in cy[tab.progress]


def test_a_done_campaign_part_says_so_and_the_open_arena_keeps_its_words(voted, tab):
    ana = tab.next({"annotator": "ana", "battle": None})
    assert ana[tab.task].startswith(arena_tab.CAMPAIGN_DONE) and "“pilot”" in ana[tab.task]
    assert ana[tab.progress].startswith("Campaign “pilot” · 3 voted today · 3 in all · no pair left")
    cast(voted, "cy", "a")
    assert tab.next({"annotator": "cy", "battle": None})[tab.task] == arena_tab.ALL_JUDGED
