"""Votes by criterion on the command line (issue 40, item 4): ``campaign create --criteria`` (the
bench's four by default), ``campaign set --criteria/--no-criteria``, and ``leaderboard`` with a
rating (and style control) per criterion, as text and as JSON."""

from __future__ import annotations

import json
import random

import pytest

from annotation.campaigns import BENCH_CRITERIA
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from data.arena import get_battle
from data.store import Store
from tests.annotation.conftest import seed_outputs


@pytest.fixture
def db(tmp_path):
    """Two tasks of set "animals", each written by rat and cot."""
    path = tmp_path / "x.db"
    store = Store(path)
    seed_outputs(store, {"Describe owls": {"rat": "Owls hunt at night.", "cot": "Owls hoot."},
                         "Describe bats": {"rat": "Bats fly by ear.", "cot": "Bats."}}, "animals")
    store.close()
    return path


def vote_all(db, annotator: str) -> int:
    """``annotator`` votes on every pair of the campaign: rat wins overall and on every criterion
    but Readability, where cot wins. Returns the votes cast."""
    store = Store(db)
    try:
        arena = Arena(store, rng=random.Random(5), limits=VoteLimits(per_annotator=1_000, per_address=0))
        cast = 0
        for _ in range(2):
            shown = arena.next_pair(annotator)
            rat = "a" if get_battle(store, shown.battle_id).method_a == "rat" else "b"
            cot = "b" if rat == "a" else "a"
            picks = {c: (cot if c == "Readability" else rat) for c in shown.criteria}
            arena.vote(shown.battle_id, annotator, rat, criteria=picks)
            cast += 1
        return cast
    finally:
        store.close()


def test_criteria_alone_are_the_bench_s_four_and_set_changes_them(cli):
    code, out, _ = cli("campaign", "create", "bench", "--methods", "rat,cot", "--criteria")
    assert code == 0 and f"criteria {', '.join(BENCH_CRITERIA)}" in out
    code, out, _ = cli("campaign", "set", "bench", "--criteria", "Readability, Accuracy")
    assert code == 0
    assert out.splitlines()[0] == (f"Changed campaign 'bench': criteria: {', '.join(BENCH_CRITERIA)} -> "
                                   "Readability, Accuracy.")
    shown = json.loads(cli("campaign", "show", "bench", "--json")[1])
    assert shown["criteria"] == ["Readability", "Accuracy"]
    assert [h["criteria"] for h in shown["history"]] == [list(BENCH_CRITERIA), ["Readability", "Accuracy"]]
    code, out, _ = cli("campaign", "set", "bench", "--no-criteria")
    assert code == 0 and "criteria: Readability, Accuracy -> none" in out
    code, _, err = cli("campaign", "set", "bench", "--criteria", "x", "--no-criteria")
    assert code == 1 and "--no-criteria" in err


def test_leaderboard_lists_a_rating_per_criterion_as_text_and_json(cli, db):
    cli("campaign", "create", "bench", "--methods", "rat,cot", "--overlap", "2", "--criteria")
    assert vote_all(db, "ana") + vote_all(db, "bob") == 4
    code, out, _ = cli("leaderboard", "--campaign", "bench", "--bootstrap", "5", "--style")
    assert code == 0
    for criterion in BENCH_CRITERIA:
        assert f"Criterion “{criterion}”: 4 people vote(s)" in out
    readability = out.split("Criterion “Readability”: ")[1].splitlines()
    assert readability[2].split()[0] == "cot", "cot leads on readability"
    code, out, _ = cli("leaderboard", "--campaign", "bench", "--bootstrap", "5", "--json", "--style")
    board = json.loads(out)
    assert [c["criterion"] for c in board["criteria"]] == list(BENCH_CRITERIA)
    by_name = {c["criterion"]: c for c in board["criteria"]}
    assert [r["method"] for r in by_name["Readability"]["rows"]] == ["cot", "rat"]
    assert [r["method"] for r in by_name["Comprehensiveness"]["rows"]] == ["rat", "cot"]
    assert all(c["votes"] == 4 and "style_controlled" in c for c in board["criteria"])
    # without --campaign: every criterion answered, the JSON an object with its criteria
    every = json.loads(cli("leaderboard", "--bootstrap", "5", "--json")[1])
    assert [c["criterion"] for c in every["criteria"]] == list(BENCH_CRITERIA)
