"""Suspicious voters: the sequential outlier test (a ballot-stuffer among honest simulated voters
is flagged, no honest voter is), its flags joined to the arena's, the daily cap, gold pairs."""

from __future__ import annotations

import math
import random
import re
import time

import pytest

from annotation.errors import ArenaError
from annotation.results import outliers
from annotation.voting import pairing
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from common.errors import StoreError
from data import arena
from data.arena import AnnotatedVote
from tests.annotation.conftest import admin, results, seed_outputs
from tests.annotation.test_cli import run

#: The true Bradley–Terry log-strengths honest voters vote by; m0 is the weakest.
STRENGTH = {"m0": 0.0, "m1": 0.6, "m2": 1.2, "m3": 1.8, "m4": 2.4}
DRAW = 0.1


def honest_choice(rng: random.Random, a: str, b: str) -> str:
    """A vote drawn from the true model: a draw with chance DRAW, else A wins by Bradley–Terry."""
    if rng.random() < DRAW:
        return "tie"
    return "a" if rng.random() < 1 / (1 + math.exp(STRENGTH[b] - STRENGTH[a])) else "b"


def promote_m0(rng: random.Random, a: str, b: str) -> str:
    """A ballot-stuffer for the weakest method: always m0 when it is shown, else a random side."""
    return "a" if a == "m0" else "b" if b == "m0" else rng.choice("ab")


def contrarian(rng: random.Random, a: str, b: str) -> str:
    """Always the weaker side: against the consensus."""
    return "a" if STRENGTH[a] < STRENGTH[b] else "b"


def simulate(seed: int, stuffer, *, honest: int = 20, per_voter: int = 50, stuffed: int = 50) -> list[AnnotatedVote]:
    """``honest`` voters with ``per_voter`` votes each and one "stuffer" with ``stuffed`` votes,
    interleaved at random, each on a random method pair."""
    rng = random.Random(seed)
    turns = [f"honest{i}" for i in range(honest) for _ in range(per_voter)] + ["stuffer"] * stuffed
    rng.shuffle(turns)
    votes = []
    for who in turns:
        a, b = rng.sample(sorted(STRENGTH), 2)
        choose = stuffer if who == "stuffer" else honest_choice
        votes.append(AnnotatedVote(who, a, b, choose(rng, a, b)))
    return votes


@pytest.mark.parametrize("stuffer", [promote_m0, contrarian])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_ballot_stuffer_is_flagged_and_no_honest_voter_is(seed, stuffer):
    flagged = outliers.flags(simulate(seed, stuffer))
    assert list(flagged) == ["stuffer"]
    found = re.search(r"(\d+) of 50 votes surprising \(the others' votes would give (\d+)\), p ≤ ([\d.e-]+)",
                      flagged["stuffer"])
    assert found, flagged["stuffer"]
    assert int(found[1]) >= 1.5 * int(found[2]) and float(found[3]) <= outliers.ALPHA


def test_honest_voters_are_rarely_flagged_over_many_simulations():
    """20 honest voters × 50 votes, 20 arenas: the test's false flags stay within its level."""
    tests = [t for seed in range(20) for name, t in outliers.examine(simulate(seed, honest_choice)).items()]
    assert len(tests) == 20 * 21
    assert sum(t.flagged for t in tests) <= 1
    assert sum(t.surprising for t in tests) == pytest.approx(sum(t.expect for t in tests), rel=0.05)


def test_a_few_odd_votes_flag_nobody():
    """Each vote at most doubles the evidence: five votes against the consensus cannot flag."""
    votes = simulate(4, honest_choice, stuffed=0) + [AnnotatedVote("stuffer", "m0", "m4", "a")] * 5
    test = outliers.examine(votes)["stuffer"]
    assert test.surprising == 5 and not test.flagged
    assert test.p_value >= 2 ** -5 * (1 - 1e-9)


def test_a_pair_nobody_else_voted_on_is_no_evidence():
    votes = [AnnotatedVote("ana", "x", "y", "a")] * 30 + [AnnotatedVote("bob", "y", "z", "b")] * 30
    assert all(t.p_value == 1.0 for t in outliers.examine(votes).values())
    assert outliers.examine([]) == {}


def test_the_test_reads_a_pair_in_either_order():
    """m4 over m0 as (m4, m0) choosing a is the same vote as (m0, m4) choosing b."""
    votes = simulate(5, contrarian)
    swapped = [AnnotatedVote(v.annotator, v.method_b, v.method_a, {"a": "b", "b": "a"}.get(v.choice, v.choice))
               for v in votes]
    assert outliers.examine(votes) == outliers.examine(swapped)


def test_an_unknown_choice_is_refused():
    with pytest.raises(ValueError, match="unknown choice"):
        outliers.examine([AnnotatedVote("ana", "x", "y", "maybe")])


def test_one_hundred_thousand_votes_of_honest_annotators_flag_almost_none():
    """(How long it takes is bench.outliers's business: under a second there.)"""
    rng = random.Random(7)
    votes = []
    for _ in range(100_000):
        a, b = rng.sample(sorted(STRENGTH), 2)
        votes.append(AnnotatedVote(f"u{rng.randrange(2000)}", a, b, honest_choice(rng, a, b)))
    tests = outliers.examine(votes)
    assert len(tests) == 2000 and sum(t.flagged for t in tests.values()) <= 10


# -- the arena ----------------------------------------------------------------------------------
def _import(store, votes: list[AnnotatedVote]) -> None:
    """The simulated votes into the store, each with its own time stamp (an import skips a repeat)."""
    arena.import_votes(store, [
        {"prompt": "Describe owls", "kind": "writing", "task_set": "", "method_a": v.method_a,
         "method_b": v.method_b, "choice": v.choice, "annotator": v.annotator,
         "created": f"2026-01-01T00:00:{i // 1000:02d}.{i % 1000:03d}+00:00"}
        for i, v in enumerate(votes)])


def test_the_arena_flags_the_stuffer_and_leaving_them_out_moves_their_method_down(store):
    _import(store, simulate(1, promote_m0, stuffed=150))
    service = Arena(store, rng=random.Random(0))
    flags = results(service).flags()
    assert list(flags) == ["stuffer"] and "votes against the others' consensus" in flags["stuffer"]
    shown = {a.name: a.flag for a in results(service).annotators()}
    assert shown["stuffer"] == flags["stuffer"] and shown["honest0"] == ""
    every = results(service).leaderboard(bootstrap=0)
    trusted = results(service).leaderboard(bootstrap=0, leave_out_flagged=True)
    assert every.votes - trusted.votes == 150
    bt = {board: {r.method: r.bt for r in lb.rows} for board, lb in (("every", every), ("trusted", trusted))}
    assert bt["trusted"]["m0"] < bt["every"]["m0"] - 20


def test_outlier_reasons_join_the_speed_and_side_reasons(store):
    """A stuffer whose votes are imported with the weaker method as A, always choosing A."""
    def weaker_as_a(v: AnnotatedVote) -> AnnotatedVote:
        a, b = sorted((v.method_a, v.method_b), key=STRENGTH.get)
        return AnnotatedVote(v.annotator, a, b, "a")

    _import(store, [weaker_as_a(v) if v.annotator == "stuffer" else v for v in simulate(2, contrarian)])
    reason = results(Arena(store)).flags()["stuffer"]
    assert re.fullmatch(r"chose A in 50 of 50 votes; votes against the others' consensus: .*", reason)


# -- the daily cap --------------------------------------------------------------------------------
def _vote_once(service: Arena, annotator: str = "ana") -> None:
    shown = service.next_pair(annotator)
    service.vote(shown.battle_id, annotator, "a")


def test_the_daily_cap_refuses_the_vote_after_it_and_allows_it_the_next_day(store):
    seed_outputs(store, {f"Task {i}": {"rat": f"Text {i} by rat.", "cot": f"Text {i} by cot."} for i in range(6)})
    service = Arena(store, rng=random.Random(0), limits=VoteLimits(per_day=3))
    for _ in range(3):
        _vote_once(service)
    shown = service.next_pair("ana")
    with pytest.raises(ArenaError, match=r"You have cast 3 votes today.*\(--votes-per-day\).*tomorrow"):
        service.vote(shown.battle_id, "ana", "a")
    assert len(arena.counted_votes(store, "ana")) == 3, "the refused vote is not stored"
    _vote_once(service, "bob")  # the cap is each annotator's own
    service.clock = lambda: time.time() + 86_400  # the next day
    service.vote(shown.battle_id, "ana", "a")
    assert len(arena.counted_votes(store, "ana")) == 4


def test_without_a_daily_cap_votes_are_not_counted_by_day(store):
    seed_outputs(store, {f"Task {i}": {"rat": f"Text {i} by rat.", "cot": f"Text {i} by cot."} for i in range(6)})
    service = Arena(store, rng=random.Random(0), limits=VoteLimits(per_annotator=100))
    for _ in range(5):
        _vote_once(service)
    assert len(arena.counted_votes(store, "ana")) == 5


# -- gold pairs -----------------------------------------------------------------------------------
def _gold_arena(store, tasks: int = 5) -> tuple[Arena, list[tuple[int, int]]]:
    """An arena of ``tasks`` tasks with a rat and a cot output each, and (rat, cot) output ids per task."""
    seed_outputs(store, {f"Task {i}": {"rat": f"Text {i} by rat.", "cot": f"Text {i} by cot."} for i in range(tasks)})
    by_task: dict[int, dict[str, int]] = {}
    for o in arena.arena_outputs(store):
        by_task.setdefault(o.task_id, {})[o.method] = o.id
    return Arena(store, rng=random.Random(0), limits=VoteLimits(per_annotator=100)), [
        (m["rat"], m["cot"]) for _, m in sorted(by_task.items())]


def _vote_on(store, annotator: str, first: int, second: int, choice: str) -> None:
    arena.record_vote(store, arena.create_battle(store, first, second, annotator), annotator, choice)


def test_an_annotator_who_misses_gold_pairs_is_flagged(store):
    service, pairs = _gold_arena(store)
    for rat, cot in pairs:
        admin(service).add_gold(cot, rat, "b", "admin")  # rat is the better, marked as the second output
    for i, (rat, cot) in enumerate(pairs):
        _vote_on(store, "careful", *((rat, cot, "a") if i % 2 else (cot, rat, "b")))  # rat, in either order
        _vote_on(store, "careless", rat, cot, ["b", "tie", "b", "a", "a"][i])  # cot twice, a draw once
    flags = results(service).flags()
    assert flags == {"careless": "missed 3 of 5 gold pairs"}
    careless_vote = arena.counted_votes(store, "careless")[0]
    admin(service).correct(careless_vote.id, arena.VOID, "admin", "a slip")  # 2 of 4 missed: still over 40%
    assert results(service).flags() == {"careless": "missed 2 of 4 gold pairs"}
    admin(service).correct(arena.counted_votes(store, "careless")[0].id, "a", "admin", "meant rat")
    assert results(service).flags() == {}, "1 of 4 missed is within GOLD_MISS_SHARE"


def test_a_newer_gold_mark_supersedes_the_older_and_marks_are_append_only(store):
    service, [(rat, cot), *_] = _gold_arena(store, tasks=1)
    admin(service).add_gold(rat, cot, "b", "admin")
    admin(service).add_gold(cot, rat, "b", "ana")  # the same two outputs: rat is the better after all
    [gold] = admin(service).gold_pairs()
    assert (gold.output_b, gold.method_b, gold.added_by) == (rat, "rat", "ana")
    with pytest.raises(Exception, match="gold pairs are append-only"):
        with store.db.conn:
            store.db.execute("update gold_pairs set better = 'a'")
    assert len(store.db.execute("select * from gold_pairs").fetchall()) == 2


def test_a_gold_pair_needs_two_outputs_of_one_task_by_two_methods(store):
    service, [(rat0, cot0), (rat1, _), *_] = _gold_arena(store, tasks=2)
    with pytest.raises(StoreError, match="one task by two different methods"):
        admin(service).add_gold(rat0, rat1, "a", "admin")
    with pytest.raises(StoreError, match=r"No output 999 .*`python app.py votes gold outputs`"):
        admin(service).add_gold(rat0, 999, "a", "admin")
    with pytest.raises(ArenaError, match="Cannot add the gold pair: say who marks the pair"):
        admin(service).add_gold(rat0, cot0, "a", " ")
    assert admin(service).gold_pairs() == []


def test_the_arena_shows_an_unseen_gold_pair_first_when_its_turn_comes(store, monkeypatch):
    service, pairs = _gold_arena(store, tasks=4)
    rat, cot = pairs[2]
    admin(service).add_gold(rat, cot, "a", "admin")
    monkeypatch.setattr(pairing, "GOLD_SHARE", 1.0)  # every new pair is gold while one is left unseen
    tasks = []
    for _ in range(4):
        shown = service.next_pair("ana")
        service.vote(shown.battle_id, "ana", "a")
        tasks.append(shown.task)
    assert tasks[0] == "Task 2" and sorted(tasks[1:]) == ["Task 0", "Task 1", "Task 3"]


def test_about_one_new_pair_in_ten_is_gold(store):
    _, pairs = _gold_arena(store, tasks=3)
    arena.add_gold_pair(store, *pairs[0], "a", "admin")
    outputs, rng = arena.arena_outputs(store), random.Random(3)
    drawn = [pairing.gold_pair(store, outputs, set(), rng) for _ in range(1000)]
    assert 70 <= sum(d is not None for d in drawn) <= 130
    assert {frozenset(o.id for o in d) for d in drawn if d} == {frozenset(pairs[0])}
    assert {d[0].method for d in drawn if d} == {"rat", "cot"}, "A and B in either order"
    assert not any(pairing.gold_pair(store, outputs, {frozenset(pairs[0])}, rng) for _ in range(100)), "seen"


def test_the_gold_commands(local_app, capsys):
    _, pairs = _gold_arena(local_app.store, tasks=2)
    assert run(local_app, "votes", "gold", "list") == 0
    assert "No gold pair yet" in capsys.readouterr().out
    assert run(local_app, "votes", "gold", "outputs") == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in listed] == [str(i) for rat, cot in pairs for i in (cot, rat)]
    assert listed[0].endswith("\tcot\tText 0 by cot."), "by task, then method, with the text"
    rat, cot = pairs[1]
    assert run(local_app, "votes", "gold", "add", str(cot), str(rat), "--better", "b") == 0
    assert capsys.readouterr().out == f"Gold pair 1: output {rat} (rat) is the better, by admin.\n"
    assert run(local_app, "votes", "gold", "list") == 0
    assert f"output {cot} (cot) vs {rat} (rat)\tbetter: B\tby admin" in capsys.readouterr().out


def test_the_outlier_test_runs_again_when_the_votes_grew_by_a_share_or_a_vote_was_corrected(store, monkeypatch):
    runs, flags = [], outliers.flags
    monkeypatch.setattr(outliers, "flags", lambda votes: runs.append(1) or flags(votes))
    votes = simulate(1, contrarian)
    _import(store, votes[:1000])
    service = Arena(store)
    assert "stuffer" in results(service).flags() and len(runs) == 1
    _import(store, votes[1000:1005])  # 5 votes: under SUSPECTS_REFRESH of 1,000
    results(service).flags()
    assert len(runs) == 1
    _import(store, votes[1005:])  # 50 since: over 1%
    results(service).flags()
    assert len(runs) == 2
    admin(service).correct(1, "tie", "admin", "a slip")
    results(service).flags()
    assert len(runs) == 3
