"""Who voted: the logged-in user or the typed name with the browser session; votes rate-limited
per annotator and per address; voters who cannot have read flagged, and a leaderboard without them."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from types import SimpleNamespace

import gradio as gr
import pytest

from annotation.errors import ArenaError
from annotation.results.results import FLAG_MIN_VOTES
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from data import arena, sql
from data.store import Store
from tests.annotation.conftest import results, seed_outputs
from ui.arena import annotator_of


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_logged_in_user_is_the_annotator_whatever_name_is_typed():
    request = SimpleNamespace(username="ana", session_hash="abcdef0123456789")
    assert annotator_of("somebody else", request) == "ana"
    assert annotator_of("", request) == "ana"


def test_without_login_the_name_carries_the_browser_session():
    one = annotator_of("bob", SimpleNamespace(username=None, session_hash="abcdef0123456789"))
    two = annotator_of("bob", SimpleNamespace(username=None, session_hash="99999999aaaa"))
    assert one == "bob · abcdef01" and two != one, "one name typed in two browsers is two annotators"
    with pytest.raises(gr.Error, match="Type your name"):
        annotator_of("  ", SimpleNamespace(username=None, session_hash="x"))


def test_votes_are_rate_limited_per_annotator_and_per_address():
    clock = Clock()
    limits = VoteLimits(per_annotator=3, per_address=5, window=60, clock=clock)
    for _ in range(3):
        limits.take("ana", "10.0.0.1")
    with pytest.raises(ArenaError, match=r"Too many votes from this annotator.*vote again in 60 s"):
        limits.take("ana", "10.0.0.1")
    limits.take("bob", "10.0.0.1")
    limits.take("cy", "10.0.0.1")
    with pytest.raises(ArenaError, match="from this address"):  # 40 names from one script: one address
        limits.take("dee", "10.0.0.1")
    clock.now += 61
    limits.take("ana", "10.0.0.1")  # a minute later: allowed again


def test_a_lab_behind_one_address_can_turn_the_address_limit_off():
    limits = VoteLimits(per_annotator=2, per_address=0, window=60, clock=Clock())
    for name in ("ana", "bob", "cy", "dee"):
        limits.take(name, "10.0.0.1")
        limits.take(name, "10.0.0.1")
    with pytest.raises(ArenaError, match="from this annotator"):
        limits.take("ana", "10.0.0.1")


def test_the_vote_limits_hold_across_processes_on_one_database(store):
    """Two Arena services on their own connections to one database, as two app processes behind a
    balancer are: the limits count the votes the database holds, not what each process saw."""
    seed_outputs(store, {f"Task {t}": {m: f"{m} on task {t}." for m in ("rat", "cot", "direct")} for t in range(4)})
    other = Store(store.url or store.path)
    try:
        limits = {"per_annotator": 2, "per_address": 3}
        one, two = Arena(store, limits=VoteLimits(**limits)), Arena(other, limits=VoteLimits(**limits))

        def vote(service: Arena, annotator: str, address: str) -> None:
            service.vote(service.next_pair(annotator).battle_id, annotator, "a", address=address)

        vote(one, "ana", "10.0.0.1")
        vote(two, "ana", "10.0.0.2")
        with pytest.raises(ArenaError, match="from this annotator"):
            vote(one, "ana", "10.0.0.3")
        vote(two, "bob", "10.0.0.9")
        vote(one, "cy", "10.0.0.9")
        vote(two, "dee", "10.0.0.9")
        with pytest.raises(ArenaError, match="from this address"):
            vote(one, "eve", "10.0.0.9")
        assert len(arena.vote_rows(store)) == 5, "a refused vote is not stored"
    finally:
        other.close_all()


def test_a_refused_vote_is_not_stored(store):
    seed_outputs(store, {"Describe owls": {"rat": "Owls are birds.", "cot": "Owls hunt."}})
    service = Arena(store, rng=random.Random(0), limits=VoteLimits(per_annotator=0))
    shown = service.next_pair("ana")
    with pytest.raises(ArenaError):
        service.vote(shown.battle_id, "ana", "a")
    assert arena.vote_rows(store) == []


def _votes(store, annotator: str, choices: list[str], seconds: float) -> None:
    """``annotator``'s votes on fresh battles, each cast ``seconds`` after the battle was shown."""
    for choice in choices:
        ids = [o.id for o in arena.arena_outputs(store)]
        battle = arena.create_battle(store, ids[0], ids[1], annotator)
        arena.record_vote(store, battle, annotator, choice)
        cast = datetime.fromisoformat(store.db.execute("select created from votes where battle_id = ?",
                                                       [battle]).fetchone()[0])
        with store.db.conn:  # test setup only: age the battle, past the table's append-only trigger
            if store.dialect == sql.SQLITE:
                store.db.execute("drop trigger if exists battles_append_only_update")
            else:
                store.db.execute("alter table battles disable trigger user")
            store.db.execute("update battles set created = ? where id = ?",
                             [(cast - timedelta(seconds=seconds)).isoformat(timespec="milliseconds"), battle])
            if store.dialect != sql.SQLITE:
                store.db.execute("alter table battles enable trigger user")


def test_flags_name_voters_too_fast_or_always_on_one_side_and_the_board_can_leave_them_out(store):
    seed_outputs(store, {"Describe owls": {"rat": "Owls are birds.", "cot": "Owls hunt."}})
    n = FLAG_MIN_VOTES
    _votes(store, "careful", ["a", "b"] * (n // 2), seconds=40)
    _votes(store, "clicker", ["a", "b"] * (n // 2), seconds=1.5)
    _votes(store, "lefty", ["a"] * n, seconds=30)
    _votes(store, "few", ["a"] * (n - 1), seconds=1)  # too few votes to judge
    service = Arena(store)
    flags = results(service).flags()
    assert set(flags) == {"clicker", "lefty"}
    assert "median" in flags["clicker"] and f"chose A in {n} of {n}" in flags["lefty"]
    everyone = results(service).leaderboard(bootstrap=0)
    trusted = results(service).leaderboard(bootstrap=0, leave_out_flagged=True)
    assert everyone.votes == 4 * n - 1 and trusted.votes == 2 * n - 1


def test_annotator_rows_count_each_voter_and_take_the_median_of_the_arena_votes_only(store):
    seed_outputs(store, {"Describe owls": {"rat": "Owls are birds.", "cot": "Owls hunt."}})
    for choice, seconds in [("a", 5), ("b", 1), ("a", 9), ("tie", 3)]:
        _votes(store, "even", [choice], seconds=seconds)
    for choice, seconds in [("b", 2), ("b", 8), ("both_bad", 4)]:
        _votes(store, "odd", [choice], seconds=seconds)
    arena.import_votes(store, [{"prompt": "Describe owls", "kind": "writing", "task_set": "", "method_a": "rat",
                                "method_b": "cot", "choice": "a", "annotator": "odd", "line": 1}])
    rows = {r.annotator: r for r in arena.annotator_rows(store)}
    assert set(rows) == {"even", "odd"}
    assert (rows["even"].votes, rows["even"].a, rows["even"].b) == (4, 2, 1)
    assert (rows["odd"].votes, rows["odd"].a, rows["odd"].b) == (4, 1, 2), "the imported vote counts, untimed"
    assert rows["even"].median_seconds == pytest.approx(5, abs=0.01), "the upper median of 1, 3, 5, 9"
    assert rows["odd"].median_seconds == pytest.approx(4, abs=0.01), "the median of 2, 4, 8 (not the import)"
    assert [r.annotator for r in arena.annotator_rows(store, ["odd"])] == ["odd"]
    assert arena.annotator_rows(store, []) == []
