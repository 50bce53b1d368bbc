"""annotation.service.Arena: what the tabs and the command line share."""

from __future__ import annotations

import random
from dataclasses import astuple

import pytest

from annotation.errors import NoPairLeft
from annotation.service import Arena, Reveal
from common.errors import StoreError
from data import arena
from tests.annotation.conftest import seed_outputs

METHODS = ("zebrafinchmethod", "yakherdmethod")


@pytest.fixture
def service(store) -> Arena:
    seed_outputs(store, {"Describe owls": {METHODS[0]: "Owls are birds.", METHODS[1]: "Owls hunt at night."}})
    return Arena(store, rng=random.Random(0))


def test_next_pair_shows_texts_but_no_method_name(service):
    shown = service.next_pair("ana")
    assert shown.task == "Describe owls"
    assert {shown.text_a, shown.text_b} == {"Owls are birds.", "Owls hunt at night."}
    assert not any(m in str(value) for m in METHODS for value in astuple(shown))


def test_vote_reveals_the_methods_in_the_order_shown(service):
    shown = service.next_pair("ana")
    revealed = service.vote(shown.battle_id, "ana", "a")
    text_of = {METHODS[0]: "Owls are birds.", METHODS[1]: "Owls hunt at night."}
    assert isinstance(revealed, Reveal) and revealed.choice == "a"
    assert (text_of[revealed.method_a], text_of[revealed.method_b]) == (shown.text_a, shown.text_b)
    with pytest.raises(StoreError, match="already voted"):
        service.vote(shown.battle_id, "ana", "b")
    with pytest.raises(NoPairLeft):
        service.next_pair("ana")


def test_leaderboard_and_agreement(service, store):
    shown = service.next_pair("ana")
    revealed = service.vote(shown.battle_id, "ana", "a")
    board = service.leaderboard("people", bootstrap=5)
    assert board.votes == 1 and board.methods[0] == revealed.method_a
    assert service.leaderboard("judge").rows == []
    assert service.agreement().compared == 0
    task_id = arena.arena_outputs(store)[0].task_id
    arena.add_judge_vote(store, task_id=task_id, output_a=None, output_b=None, method_a=revealed.method_b,
                         method_b=revealed.method_a, choice="b", n=10, detail={}, model="m")
    shared = service.agreement()
    assert (shared.compared, shared.agreed) == (1, 1)
    assert service.methods() == sorted(METHODS) and service.task_sets() == [""]
