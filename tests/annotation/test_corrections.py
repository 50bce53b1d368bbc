"""A vote is corrected by a new row that supersedes it, with who and why (issue 11, item 1): the
vote stays as cast, the leaderboard counts its newest correction (``void``: not at all), and the
corrections themselves are append-only, whoever writes to the file."""

from __future__ import annotations

import json

import pytest

from annotation.errors import ArenaError
from annotation.voting.arena import Arena
from common.errors import StoreError
from data import arena, sql
from tests.annotation.conftest import admin, results
from tests.annotation.test_cli import VOTES, run, write_jsonl
from tests.conftest import outside


@pytest.fixture
def voted(store, tmp_path):
    """Three imported votes: ana rat>cot, bob cot/direct both bad, ana rat=direct (tie)."""
    admin(Arena(store)).import_votes(write_jsonl(tmp_path / "votes.jsonl", VOTES))
    return store


def wins(service: Arena) -> dict[str, tuple[int, int, int]]:
    return {r.method: (r.wins, r.ties, r.losses) for r in results(service).leaderboard(bootstrap=2).rows}


def test_a_correction_supersedes_the_vote_and_keeps_it_as_cast(voted):
    service = Arena(voted)
    before = wins(service)
    assert before["rat"] == (1, 1, 0) and before["cot"] == (0, 1, 1)  # both bad counts as a tie
    first = arena.vote_rows(voted)[0]
    c = admin(service).correct(first.id, "b", "carol", "ana pressed A by mistake (she said so)")
    assert (c.vote_id, c.cast, c.choice, c.corrected_by) == (first.id, "a", "b", "carol")
    assert wins(service)["rat"] == (0, 1, 1) and wins(service)["cot"] == (1, 1, 0)
    stored = voted.db.execute("select choice from votes where id = ?", [first.id]).fetchone()[0]
    assert stored == "a", "the vote itself is never changed"

    admin(service).correct(first.id, "void", "dan", "ana did not read the texts")  # the newest correction wins
    assert wins(service)["rat"] == (0, 1, 0) and wins(service)["cot"] == (0, 1, 0)
    assert [(x.choice, x.corrected_by) for x in admin(service).corrections()] == [("b", "carol"), ("void", "dan")]


def test_a_correction_names_who_why_and_a_known_vote(voted):
    service = Arena(voted)
    vote_id = arena.vote_rows(voted)[0].id
    with pytest.raises(ArenaError, match=r"say why"):
        admin(service).correct(vote_id, "b", "carol", "  ")
    with pytest.raises(ArenaError, match=r"say who"):
        admin(service).correct(vote_id, "b", "", "a reason")
    with pytest.raises(ArenaError, match=r"choice must be one of a, b, tie, both_bad, void"):
        admin(service).correct(vote_id, "A wins", "carol", "a reason")
    with pytest.raises(StoreError, match=r"No vote 999"):
        admin(service).correct(999, "b", "carol", "a reason")
    assert admin(service).corrections() == []


def test_corrections_are_append_only_for_any_writer(voted):
    vote_id = arena.vote_rows(voted)[0].id
    admin(Arena(voted)).correct(vote_id, "tie", "carol", "a reason")
    conn = outside(voted)
    changes = ["update vote_corrections set choice = 'a'", "delete from vote_corrections"]
    if voted.dialect == sql.SQLITE:  # PostgreSQL has no replacing insert
        changes.append("insert or replace into vote_corrections (id, vote_id, choice, corrected_by, why, created) "
                       "values (1, 1, 'a', 'x', 'y', 'z')")
    try:
        for statement in changes:
            with pytest.raises(sql.DatabaseError, match="append-only"), conn:
                conn.execute(statement)
    finally:
        conn.close()
    assert [c.choice for c in admin(Arena(voted)).corrections()] == ["tie"]


def test_a_kept_leaderboard_sees_a_correction(voted):
    service = Arena(voted)
    assert results(service).tally().total == 3  # the tally is now cached by the service's boards
    admin(service).correct(arena.vote_rows(voted)[1].id, "void", "carol", "bob voted twice on this pair")
    assert results(service).tally().total == 2


def test_cli_correct_list_and_export(local_app, tmp_path, capsys):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES))
    capsys.readouterr()
    run(local_app, "votes", "export")
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    vote_id = exported[0]["vote_id"]
    assert run(local_app, "votes", "correct", str(vote_id), "--choice", "tie", "--by", "carol",
               "--why", "both texts are the same") == 0
    assert f"Vote {vote_id} (cast: a) now counts as tie" in capsys.readouterr().out
    run(local_app, "votes", "corrections")
    assert f"vote {vote_id}: a -> tie\tby carol: both texts are the same" in capsys.readouterr().out
    run(local_app, "votes", "export")
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["winner"] == "a" and first["correction"]["choice"] == "tie" and first["correction"]["by"] == "carol"
    with pytest.raises(SystemExit):  # argparse refuses a choice it does not know, and names them
        run(local_app, "votes", "correct", str(vote_id), "--choice", "x", "--by", "c", "--why", "w")
