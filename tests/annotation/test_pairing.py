"""annotation.voting.pairing: which pair an annotator sees next."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from annotation.errors import NoPairLeft
from annotation.results.ratings import Tally
from annotation.voting import pairing
from data import arena
from data.arena import OutputRow
from tests.annotation.conftest import finished_run, seed_outputs


def outputs(*rows):
    return [OutputRow(i, t, m) for i, t, m in rows]


def even(_a, _b):
    return 0.5


def test_candidates_are_two_methods_on_one_task():
    rows = outputs((1, 1, "rat"), (2, 1, "cot"), (3, 1, "rat"), (4, 2, "cot"))
    pairs = {frozenset((x.id, y.id)) for x, y in pairing.candidate_pairs(rows)}
    assert pairs == {frozenset((1, 2)), frozenset((2, 3))}


def test_the_least_battled_method_pair_comes_first():
    rows = outputs((1, 1, "rat"), (2, 1, "cot"), (3, 1, "direct"))
    battles = {frozenset(("rat", "cot")): 5, frozenset(("rat", "direct")): 1, frozenset(("cot", "direct")): 3}
    for seed in range(20):
        x, y = pairing.choose_pair(rows, set(), battles, {}, even, random.Random(seed))
        assert {x.method, y.method} == {"rat", "direct"}


def test_at_equal_battles_the_closer_match_comes_first():
    rows = outputs((1, 1, "rat"), (2, 1, "cot"), (3, 1, "direct"))
    quality = {frozenset(("rat", "cot")): 0.2, frozenset(("rat", "direct")): 0.1, frozenset(("cot", "direct")): 0.4}
    x, y = pairing.choose_pair(rows, set(), {}, {}, lambda a, b: quality[frozenset((a, b))], random.Random(0))
    assert {x.method, y.method} == {"cot", "direct"}


def test_among_the_best_method_pairs_the_least_shown_outputs_come_first_then_any():
    rows = outputs((1, 1, "rat"), (2, 1, "cot"), (3, 2, "rat"), (4, 2, "cot"), (5, 3, "rat"), (6, 3, "cot"))
    shown = {frozenset((1, 2)): 2, frozenset((3, 4)): 0, frozenset((5, 6)): 0}
    chosen = {frozenset((x.id, y.id)) for seed in range(40)
              for x, y in [pairing.choose_pair(rows, set(), {}, shown, even, random.Random(seed))]}
    assert chosen == {frozenset((3, 4)), frozenset((5, 6))}  # never the twice-shown pair; both of the others


def test_the_choice_minimises_the_whole_key_on_random_arenas():
    methods = ["rat", "cot", "direct", "rag-1", "aag"]
    for seed in range(30):
        rng = random.Random(seed)
        rows = outputs(*[(10 * t + k, t, m) for t in range(4) for k, m in enumerate(methods) if rng.random() < 0.8])
        pairs = [frozenset((x.id, y.id)) for x, y in pairing.candidate_pairs(rows)]
        seen = {p for p in pairs if rng.random() < 0.3}
        m_battles = {frozenset(p): rng.randrange(3) for p in combinations(methods, 2)}
        o_battles = {p: rng.randrange(3) for p in pairs}
        quality = {m: rng.choice([0.1, 0.2, 0.3]) for m in m_battles}

        def q(a, b, quality=quality):
            return quality[frozenset((a, b))]

        def key(x, y, m_battles=m_battles, o_battles=o_battles, q=q):
            return (m_battles[frozenset((x.method, y.method))], -q(x.method, y.method),
                    o_battles[frozenset((x.id, y.id))])

        fresh = [(x, y) for x, y in pairing.candidate_pairs(rows) if frozenset((x.id, y.id)) not in seen]
        got = pairing.choose_pair(rows, seen, m_battles, o_battles, q, rng)
        if not fresh:
            assert got is None
            continue
        assert frozenset((got[0].id, got[1].id)) not in seen
        assert key(*got) == min(key(x, y) for x, y in fresh)


def test_seen_pairs_are_never_chosen_and_ab_order_is_random():
    rows = outputs((1, 1, "rat"), (2, 1, "cot"), (3, 2, "rat"), (4, 2, "cot"))
    seen = {frozenset((1, 2))}
    firsts = set()
    for seed in range(30):
        x, y = pairing.choose_pair(rows, seen, {}, {}, even, random.Random(seed))
        assert {x.id, y.id} == {3, 4}
        firsts.add(x.id)
    assert firsts == {3, 4}
    assert pairing.choose_pair(rows, seen | {frozenset((3, 4))}, {}, {}, even, random.Random(0)) is None


def test_an_annotator_never_gets_a_new_battle_of_a_pair_they_saw(store):
    seed_outputs(store, {f"task {k}": {"rat": f"r{k}", "cot": f"c{k}", "direct": f"d{k}"} for k in range(3)})
    rng = random.Random(1)
    shown = []
    for _ in range(9):  # 3 tasks x 3 method pairs
        battle = arena.get_battle(store, pairing.next_battle(store, "ana", Tally(), rng=rng))
        shown.append(frozenset((battle.output_a, battle.output_b)))
        arena.record_vote(store, battle.id, "ana", "tie")
    assert len(set(shown)) == 9
    with pytest.raises(NoPairLeft, match="every pair") as raised:
        pairing.next_battle(store, "ana", Tally(), rng=rng)
    assert raised.value.judged_all
    pairing.next_battle(store, "bob", Tally(), rng=rng)  # another annotator still has pairs


def test_the_arena_spreads_battles_over_method_pairs(store):
    seed_outputs(store, {f"task {k}": {"rat": f"r{k}", "cot": f"c{k}", "direct": f"d{k}"} for k in range(4)})
    for n in range(6):
        pairing.next_battle(store, f"ann{n}", Tally(), rng=random.Random(n))
    by_methods = arena.battle_counts(store).by_methods
    assert sorted(by_methods.values()) == [2, 2, 2]


def test_finished_runs_are_paired_too(store):
    finished_run(store, "Describe owls", "rat", "Owls are birds.")
    finished_run(store, "Describe owls", "cot", "Owls hunt at night.")
    battle = arena.get_battle(store, pairing.next_battle(store, "ana", Tally(), rng=random.Random(0)))
    assert {battle.method_a, battle.method_b} == {"rat", "cot"}
    assert {battle.text_a, battle.text_b} == {"Owls are birds.", "Owls hunt at night."}


def test_nothing_to_pair_says_how_to_make_more(store):
    seed_outputs(store, {"lonely": {"rat": "only one method"}})
    with pytest.raises(NoPairLeft, match="outputs import"):
        pairing.next_battle(store, "ana", Tally())


def test_battle_counts_fold_in_only_new_battles_and_match_a_recount(store):
    from annotation.results.board import Boards

    seed_outputs(store, {"Describe owls": {"rat": "r", "cot": "c", "direct": "d"}})
    boards = Boards(store)
    first = boards.battle_counts()
    assert first.last_id == 0 and first.by_methods == {}
    for n in range(5):
        pairing.next_battle(store, f"ann{n}", Tally(), rng=random.Random(n), counts=boards.battle_counts())
    counted = boards.battle_counts()
    assert counted == arena.battle_counts(store), "incremental counts equal a full recount"
    assert sum(counted.by_methods.values()) == 5 and counted.last_id == 5
    assert first.by_methods == {}, "an earlier result is not changed by a later fold"


def _many(task: int, method: str, n: int, first_id: int) -> list[OutputRow]:
    return [OutputRow(first_id + k, task, method) for k in range(n)]


def test_a_large_group_is_sampled_never_listed_and_still_takes_an_unshown_pair():
    """Issue 26: after an import of 200,000 votes with their texts (399k outputs) each Next listed
    every pair of a task's outputs (seconds, gigabytes); now a group past LIST_AT_MOST is sampled."""
    outputs = _many(1, "rat", 300, 0) + _many(1, "cot", 300, 1_000)  # 90,000 candidate pairs
    shown_before = {frozenset((x, 1_000 + y)): 1 for x in range(300) for y in range(150)}  # half were shown
    seen = {frozenset((0, 1_000))}
    picked = {frozenset(o.id for o in pairing.choose_pair(outputs, seen, {}, shown_before, lambda a, b: 0.5,
                                                          random.Random(k))) for k in range(200)}
    assert not picked & (set(shown_before) | seen)  # always one nobody was shown: the fewest battles
    assert len(picked) > 150  # spread over the 45,000 such pairs, not one picked again and again
    assert all(len(p) == 2 for p in picked)


def test_a_dense_large_group_falls_back_to_the_fewest_battles(monkeypatch):
    monkeypatch.setattr(pairing, "SAMPLE_TRIES", 3)
    monkeypatch.setattr(pairing, "LIST_AT_MOST", 10)
    outputs = _many(1, "rat", 5, 0) + _many(1, "cot", 5, 100)
    every = [frozenset((x, 100 + y)) for x in range(5) for y in range(5)]
    battles = {ids: 2 for ids in every} | {frozenset((4, 103)): 1}
    seen = {frozenset((0, 100))}
    assert {o.id for o in pairing.choose_pair(outputs, seen, {}, battles, lambda a, b: 0.5,
                                              random.Random(0))} == {4, 103}
    del battles[frozenset((2, 101))]  # one never shown: taken whatever the draws
    assert {o.id for o in pairing.choose_pair(outputs, seen, {}, battles, lambda a, b: 0.5,
                                              random.Random(0))} == {2, 101}
    assert pairing.choose_pair(outputs, set(every), {}, battles, lambda a, b: 0.5, random.Random(0)) is None
