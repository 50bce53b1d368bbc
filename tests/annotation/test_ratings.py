"""annotation.results.ratings: TrueSkill as the trueskill package computes it, Bradley–Terry, agreement."""

from __future__ import annotations

import random

import numpy as np
import pytest
import trueskill

from annotation.results import ratings
from annotation.results.board import Boards
from data import arena
from tests.annotation.conftest import seed_outputs

VOTES = [ratings.VoteRecord(*v) for v in [
    ("rat", "cot", "a"), ("cot", "direct", "tie"), ("rat", "direct", "a"), ("direct", "rat", "both_bad"),
    ("cot", "rat", "b"), ("direct", "cot", "b"), ("rat", "cot", "tie"), ("cot", "direct", "a"),
]]


def expected_with_package(votes, p_draw):
    """The same votes through trueskill.rate_1vs1 (the reference)."""
    env = trueskill.TrueSkill(mu=25, sigma=25 / 3, beta=25 / 6, tau=0, draw_probability=p_draw)
    r = {}
    for a, b, choice, *_ in votes:
        ra, rb = r.get(a, env.create_rating()), r.get(b, env.create_rating())
        if choice == "b":
            r[b], r[a] = trueskill.rate_1vs1(rb, ra, env=env)
        else:
            r[a], r[b] = trueskill.rate_1vs1(ra, rb, drawn=choice in ("tie", "both_bad"), env=env)
    return r


def test_trueskill_equals_the_package_for_a_known_sequence():
    t = ratings.tally(VOTES)
    assert t.p_draw == 0.38  # 3 draws of 8
    want = expected_with_package(VOTES, 0.38)
    for method, rating in want.items():
        assert t.ratings[method] == pytest.approx((rating.mu, rating.sigma), abs=1e-9)


def test_trueskill_equals_the_package_over_many_random_votes():
    rng = random.Random(7)
    methods = ["m1", "m2", "m3", "m4"]
    votes = [ratings.VoteRecord(*rng.sample(methods, 2), rng.choice(["a", "a", "b", "tie", "both_bad"]))
             for _ in range(400)]
    t = ratings.tally(votes)
    want = expected_with_package(votes, t.p_draw)
    for method, rating in want.items():
        assert t.ratings[method] == pytest.approx((rating.mu, rating.sigma), abs=1e-8)


def test_tie_and_both_bad_are_the_same_draw():
    tie = ratings.tally([ratings.VoteRecord("x", "y", "tie")])
    bad = ratings.tally([ratings.VoteRecord("x", "y", "both_bad")])
    assert tie.ratings == bad.ratings
    assert tie.record["x"] == [0, 1, 0]


@pytest.mark.parametrize("draws, total, p", [(0, 0, 0.10), (0, 50, 0.01), (50, 50, 0.99), (1, 3, 0.33)])
def test_draw_probability_is_the_observed_rate_clamped(draws, total, p):
    assert ratings.draw_probability(draws, total) == p


def test_leaderboard_rows_count_wins_ties_losses():
    rows = {r.method: r for r in ratings.leaderboard(VOTES, bootstrap=20)}
    rat = rows["rat"]
    assert (rat.wins, rat.ties, rat.losses, rat.battles) == (3, 2, 0, 5)
    assert rat.win_rate == pytest.approx((3 + 1) / 5)
    assert rat.conservative == pytest.approx(rat.mu - 3 * rat.sigma)
    assert rat.bt_low <= rat.bt <= rat.bt_high
    assert list(rows)[0] == "rat"  # best conservative score first


def test_unknown_choice_and_self_battle_are_refused():
    with pytest.raises(ValueError, match="unknown choice"):
        ratings.tally([ratings.VoteRecord("x", "y", "A is better")])
    with pytest.raises(ValueError, match="two different"):
        ratings.Tally().add("x", "x", "a")


def synthetic_votes(strengths: dict[str, float], n: int, seed: int) -> list[ratings.VoteRecord]:
    rng = np.random.default_rng(seed)
    names = list(strengths)
    votes = []
    for _ in range(n):
        a, b = rng.choice(names, size=2, replace=False)
        p_a = 1 / (1 + np.exp(strengths[b] - strengths[a]))
        u = rng.random()
        votes.append(ratings.VoteRecord(str(a), str(b), "tie" if u < 0.1 else "a" if u < 0.1 + 0.9 * p_a else "b"))
    return votes


def test_bradley_terry_recovers_a_known_order():
    strengths = {"worst": -1.5, "weak": -0.5, "fair": 0.0, "good": 0.7, "best": 1.6}
    rows = ratings.leaderboard(synthetic_votes(strengths, 3000, seed=1), bootstrap=50, seed=2)
    by_bt = [r.method for r in sorted(rows, key=lambda r: -r.bt)]
    assert by_bt == ["best", "good", "fair", "weak", "worst"]
    best = next(r for r in rows if r.method == "best")
    worst = next(r for r in rows if r.method == "worst")
    assert worst.bt_high < best.bt_low  # intervals separate the ends


def test_bradley_terry_keeps_an_unbeaten_method_finite():
    theta = ratings.bradley_terry(np.array([[0.0, 5.0], [0.0, 0.0]]))
    assert np.all(np.isfinite(theta)) and theta[0] > theta[1]


def test_bootstrap_is_reproducible_with_a_seed():
    t = ratings.tally(synthetic_votes({"a": 0, "b": 1, "c": 2}, 300, seed=3))
    one = ratings.bootstrap_bt(t, t.methods, rounds=30, seed=5)
    two = ratings.bootstrap_bt(t, t.methods, rounds=30, seed=5)
    assert one.shape == (30, 3) and np.array_equal(one, two)


def test_matrices():
    t = ratings.tally([ratings.VoteRecord(*v) for v in [("x", "y", "a"), ("x", "y", "tie"), ("y", "z", "b")]])
    wr = ratings.win_rate_matrix(t, ["x", "y", "z"])
    assert wr[0, 1] == pytest.approx(0.75) and wr[1, 0] == pytest.approx(0.25) and np.isnan(wr[0, 2])
    assert ratings.battle_matrix(t, ["x", "y", "z"]).tolist() == [[0, 2, 0], [2, 0, 1], [0, 1, 0]]


def test_agreement_compares_people_with_the_judge_on_the_same_task_and_pair():
    vote = ratings.VoteRecord
    judge = [vote("rat", "cot", "a", 1), vote("rat", "cot", "tie", 2)]
    people = [
        vote("cot", "rat", "b", 1),  # rat wins: agrees (order of the pair does not matter)
        vote("rat", "cot", "b", 1),  # cot wins: disagrees
        vote("rat", "cot", "both_bad", 2),  # draw = judge's tie: agrees
        vote("rat", "direct", "a", 1),  # the judge never saw this pair
    ]
    result = ratings.agreement(people, judge)
    assert (result.compared, result.agreed) == (3, 2)
    assert ratings.agreement([], judge).rate is None


def test_judge_people_agreement_per_method_pair():
    vote = ratings.VoteRecord
    judge = [vote("rat", "cot", "a", 1), vote("direct", "rat", "a", 1), vote("cot", "direct", "b", 2)]
    people = [
        vote("cot", "rat", "b", 1), vote("rat", "cot", "a", 1),  # rat-cot: the judge's rat, twice
        vote("rat", "direct", "a", 1), vote("direct", "rat", "tie", 1), vote("rat", "direct", "a", 1),  # 0 of 3
        vote("direct", "cot", "a", 2),  # cot-direct: direct, as the judge
    ]
    result = ratings.agreement(people, judge)
    assert result.by_pair == {("cot", "direct"): (1, 1), ("cot", "rat"): (2, 2), ("direct", "rat"): (3, 0)}
    assert (result.compared, result.agreed) == (6, 3)
    assert result.as_json()["by_method_pair"][2] == {"method_a": "direct", "method_b": "rat", "compared": 3,
                                                     "agreed": 0, "rate": 0.0}


def test_board_adds_new_votes_and_equals_a_rebuild(store):
    seed_outputs(store, {"t": {"rat": "r", "cot": "c", "direct": "d"}})
    ids = {o.method: o.id for o in arena.arena_outputs(store)}
    boards = Boards(store)
    rng = random.Random(4)
    for k in range(60):
        a, b = rng.sample(sorted(ids), 2)
        battle = arena.create_battle(store, ids[a], ids[b], f"ann{k}")
        arena.record_vote(store, battle, f"ann{k}", rng.choice(arena.CHOICES))
        cached = boards.tally("people")
        fresh = ratings.tally(arena.vote_rows(store))
        assert cached.ratings == fresh.ratings and cached.p_draw == fresh.p_draw
        assert cached.record == fresh.record and cached.total == k + 1


def test_choosing_a_pair_does_not_wait_for_another_threads_refresh(store):
    """``tally(wait=False)``: while another thread holds the board (bringing it up to date), the
    tally of the last refresh, a private copy; with nobody refreshing, the up-to-date one."""
    seed_outputs(store, {"t": {"rat": "r", "cot": "c"}})
    ids = {o.method: o.id for o in arena.arena_outputs(store)}
    boards = Boards(store)

    def vote(k: int) -> None:
        arena.record_vote(store, arena.create_battle(store, ids["rat"], ids["cot"], f"ann{k}"), f"ann{k}", "a")

    vote(0)
    assert boards.tally("people", wait=False).total == 1
    vote(1)
    with boards._lock:  # another thread is refreshing
        last = boards.tally("people", wait=False)
        assert last.total == 1, "the last refresh's tally, at once"
        last.add_all(arena.vote_rows(store))  # a private copy: changing it changes nothing kept
        assert boards.tally("people", wait=False).total == 1
    assert boards.tally("people", wait=False).total == 2, "nobody refreshing: up to date"
    assert boards.tally("people").total == 2
    assert boards.battle_counts().last_id == 2


@pytest.mark.parametrize("first, second", [((25, 25 / 3), (25, 25 / 3)), ((30, 2), (18, 5)), ((10, 8), (40, 1))])
def test_match_quality_in_closed_form_equals_trueskills(first, second):
    import trueskill

    from annotation.results.ratings import TrueSkill1v1

    ts = TrueSkill1v1(0.1)
    expected = trueskill.quality_1vs1(ts.env.create_rating(*first), ts.env.create_rating(*second), env=ts.env)
    assert ts.quality(first, second) == pytest.approx(expected, rel=1e-12)
