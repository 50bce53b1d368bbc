"""annotation.voting.arena.Arena: what the tabs and the command line share."""

from __future__ import annotations

import random
from dataclasses import astuple

import pytest

from annotation.errors import NoPairLeft
from annotation.voting.arena import Arena
from annotation.voting.shown import Reveal
from common.errors import StoreError
from data import arena
from tests.annotation.conftest import results, seed_outputs

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


def test_a_second_vote_that_passed_a_stale_check_is_refused_by_the_database(service, store, monkeypatch):
    """Two tabs voting on one pair at once both read it unvoted: the database refuses the second
    vote (votes.battle_id is unique), said as the check says it, and one vote is stored."""
    shown = service.next_pair("ana")
    unvoted = arena.get_battle(store, shown.battle_id)
    service.vote(shown.battle_id, "ana", "a")
    monkeypatch.setattr(arena, "find_battle", lambda store, battle_id: unvoted)  # the other tab's read
    with pytest.raises(StoreError, match="already voted on this pair: press Next"):
        service.vote(shown.battle_id, "ana", "b")
    assert [r.choice for r in arena.vote_rows(store)] == ["a"]
    monkeypatch.undo()
    assert service.vote(service.next_pair("bob").battle_id, "bob", "tie").choice == "tie", "the store goes on"


def test_a_vote_on_an_unknown_or_anothers_battle_is_refused_naming_next(service):
    shown = service.next_pair("ana")
    with pytest.raises(StoreError, match="No battle 999: press Next"):
        service.vote(999, "ana", "a")
    with pytest.raises(StoreError, match="another annotator: press Next"):
        service.vote(shown.battle_id, "bob", "a")


def test_leaderboard_and_agreement(service, store):
    shown = service.next_pair("ana")
    revealed = service.vote(shown.battle_id, "ana", "a")
    board = results(service).leaderboard("people", bootstrap=5)
    assert board.votes == 1 and board.methods[0] == revealed.method_a
    assert results(service).leaderboard("judge").rows == []
    assert results(service).agreement().compared == 0
    task_id = arena.arena_outputs(store)[0].task_id
    arena.add_judge_vote(store, task_id=task_id, output_a=None, output_b=None, method_a=revealed.method_b,
                         method_b=revealed.method_a, choice="b", n=10, detail={}, model="m")
    shared = results(service).agreement()
    assert (shared.compared, shared.agreed) == (1, 1)
    assert results(service).methods() == sorted(METHODS) and results(service).task_sets() == [""]


def test_agreement_and_voters_kept_as_votes_arrive_equal_a_rebuild(store):
    """The leaderboard's refresh reads only what is new: after people's votes, judge votes and a
    correction, the kept agreement and voter rows are what reading everything again gives."""
    from annotation.results import ratings
    from annotation.results.board import Boards

    seed_outputs(store, {"owls": {"rat": "r", "cot": "c", "direct": "d"}, "bats": {"rat": "r2", "cot": "c2"}},
                 task_set="animals")
    seed_outputs(store, {"ships": {"rat": "r3", "cot": "c3"}}, task_set="boats")
    outputs = arena.arena_outputs(store)
    boards, rng = Boards(store), random.Random(3)

    def check() -> None:
        for task_set in (None, "animals", "boats"):
            people, judged = (arena.vote_rows(store, s, task_set) for s in ("people", "judge"))
            if rng.random() < 0.5:  # a tally rebuilt first starts the agreement from the votes it read
                assert boards.tally("people", task_set).total == len(people)
            assert boards.agreement(task_set) == ratings.agreement(people, judged), task_set
        rows = sorted(boards.voters())
        assert rows == sorted(arena.annotator_rows(store))

    for step in range(40):
        task = rng.choice(sorted({o.task_id for o in outputs}))
        a, b = rng.sample([o for o in outputs if o.task_id == task], 2)
        if step % 4 == 3:
            arena.add_judge_vote(store, task_id=a.task_id, output_a=a.id, output_b=b.id, method_a=a.method,
                                 method_b=b.method, choice=rng.choice(("a", "b", "tie")), n=1, detail={}, model="m")
        else:
            who = rng.choice(("ana", "bob", "cy"))
            arena.record_vote(store, arena.create_battle(store, a.id, b.id, who), who, rng.choice(arena.CHOICES))
        check()
    assert boards.agreement().compared > 0, "the test compared something"
    first = arena.vote_rows(store)[0]
    arena.correct_vote(store, first.id, "void", "dan", "did not read")
    check()


def test_warm_up_computes_the_leaderboard_in_the_background_and_logs_a_failure(service, monkeypatch, caplog):
    from annotation.results import ratings

    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a")
    results(service).warm_up(bootstrap=5).join(timeout=60)

    def computed_again(*args, **kwargs):
        raise AssertionError("the first opening after the warm-up computed the leaderboard again")

    monkeypatch.setattr(ratings, "rows", computed_again)
    assert results(service).leaderboard("people", bootstrap=5).votes == 1
    results(service).agreement(None)
    results(service).flags()

    monkeypatch.setattr(ratings, "rows", lambda *a, **k: (_ for _ in ()).throw(StoreError("disk gone: check it")))
    fresh = Arena(service.store)
    with caplog.at_level("WARNING", logger="annotation.voting.arena"):
        results(fresh).warm_up(bootstrap=5).join(timeout=60)
    assert "leaderboard warm-up failed (the tab will try again when opened): disk gone" in caplog.text
