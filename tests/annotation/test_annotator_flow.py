"""An annotator's own pace in the arena (issue 22, items 3 and 4): progress, skipped pairs that
come back, undo of one's last vote within UNDO_SECONDS, and a comment and a flag with a vote
(stored, exported and imported again)."""

from __future__ import annotations

import json
import random

import pytest
import sqlite_utils

from annotation.errors import ArenaError, ImportFormatError, NoPairLeft
from annotation.voting import pairing
from annotation.voting.arena import UNDO_SECONDS, Arena
from annotation.voting.shown import Progress
from data import arena, migrations, sql
from data.store import Store
from tests.annotation.conftest import admin, results, seed_outputs


@pytest.fixture
def service(store) -> Arena:
    """Ten tasks, each with outputs of two methods: ten pairs to judge."""
    seed_outputs(store, {f"task {k}": {"rat": f"rat text {k}", "cot": f"cot text {k}"} for k in range(10)})
    return Arena(store, rng=random.Random(0))


def vote_on_next(service: Arena, who: str = "ana", choice: str = "tie") -> int:
    shown = service.next_pair(who)
    service.vote(shown.battle_id, who, choice)
    return shown.battle_id


# -- progress ---------------------------------------------------------------------------------
def test_progress_counts_own_votes_minus_undone_and_the_pairs_left(service):
    assert service.progress("ana") == Progress(today=0, total=0, left=10, quota=None)
    for _ in range(3):
        vote_on_next(service)
    vote_on_next(service, "bob")  # someone else's vote is not ana's
    assert service.progress("ana", quota=20) == Progress(today=3, total=3, left=7, quota=20)
    service.undo("ana")  # the undone vote no longer counts; its pair is on screen again, unvoted
    assert service.progress("ana") == Progress(today=2, total=2, left=8)
    tomorrow = service.clock() + 86_400
    service.clock = lambda: tomorrow
    assert (service.progress("ana").today, service.progress("ana").total) == (0, 2)


def test_a_skipped_pair_counts_as_left(service):
    service.next_pair("ana")  # shown, then skipped: still to judge
    assert service.progress("ana").left == 10
    service.next_pair("ana")
    assert service.progress("ana").left == 10


# -- skipped pairs come back ------------------------------------------------------------------
def test_a_skipped_pair_comes_back_after_three_votes_as_the_same_battle(service):
    skipped = service.next_pair("ana")  # Next without a vote
    voted = [vote_on_next(service) for _ in range(pairing.SKIPPED_COME_BACK_AFTER - 1)]
    fresh = service.next_pair("ana")
    assert fresh.battle_id not in (skipped.battle_id, *voted), "two votes are not enough"
    service.vote(fresh.battle_id, "ana", "a")
    again = service.next_pair("ana")
    assert again == skipped, "the same battle id, task, and A and B in the same order"


def test_a_pair_skipped_again_waits_three_more_votes(service):
    skipped = service.next_pair("ana")
    for _ in range(3):
        vote_on_next(service)
    assert service.next_pair("ana").battle_id == skipped.battle_id
    later = [service.next_pair("ana").battle_id]  # skipped a second time
    service.vote(later[0], "ana", "b")
    for _ in range(2):
        later.append(vote_on_next(service))
    assert skipped.battle_id not in later
    assert service.next_pair("ana").battle_id == skipped.battle_id


def test_with_no_fresh_pair_left_skipped_pairs_come_back_at_once_oldest_shown_first(store):
    seed_outputs(store, {f"task {k}": {"rat": f"r{k}", "cot": f"c{k}"} for k in range(3)})
    service = Arena(store, rng=random.Random(1))
    first, second, third = (service.next_pair("ana") for _ in range(3))  # all three skipped
    assert service.next_pair("ana") == first
    assert service.next_pair("ana") == second
    assert service.next_pair("ana") == third
    shown = service.next_pair("ana")
    assert shown == first
    for _ in range(3):
        service.vote(shown.battle_id, "ana", "tie")
        try:
            shown = service.next_pair("ana")
        except NoPairLeft as exc:
            assert exc.judged_all and "every pair" in str(exc)
            break
    else:
        pytest.fail("three votes judge three pairs")


def test_a_lone_skipped_pair_is_shown_again_rather_than_the_end(store):
    seed_outputs(store, {"owls": {"rat": "r", "cot": "c"}})
    service = Arena(store)
    shown = service.next_pair("ana")
    assert service.next_pair("ana") == shown  # not "every pair was judged": it was not


def test_nothing_to_pair_is_not_judged_all(store):
    with pytest.raises(NoPairLeft) as raised:
        Arena(store).next_pair("ana")
    assert not raised.value.judged_all


def test_skipped_pairs_come_back_after_a_restart(service):
    skipped = service.next_pair("ana")
    for _ in range(3):
        vote_on_next(service)
    restarted = Arena(service.store)  # nothing remembered: counted from when the battle started
    assert restarted.next_pair("ana") == skipped


# -- undo -------------------------------------------------------------------------------------
def test_undo_within_the_window_voids_the_vote_and_shows_the_pair_again(service, store):
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a", comment="A is clearer")
    again = service.undo("ana", shown.battle_id)
    assert (again.task, again.text_a, again.text_b) == (shown.task, shown.text_a, shown.text_b)
    assert again.battle_id != shown.battle_id
    [c] = admin(service).corrections()
    assert (c.choice, c.cast, c.corrected_by) == (arena.VOID, "a", "ana")
    assert c.why == f"undone by the annotator within {UNDO_SECONDS} s"
    assert store.db.execute("select count(*) from votes").fetchone()[0] == 1, "the vote stays as cast"
    assert results(service).leaderboard(bootstrap=2).votes == 0
    revealed = service.vote(again.battle_id, "ana", "b")
    old, new = arena.get_battle(store, shown.battle_id), arena.get_battle(store, again.battle_id)
    assert (new.method_a, new.method_b, new.output_a, new.output_b) == (old.method_a, old.method_b,
                                                                         old.output_a, old.output_b)
    assert revealed.choice == "b" and results(service).leaderboard(bootstrap=2).votes == 1


def test_undo_after_the_window_is_refused(service):
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a")
    cast = service.clock()
    service.clock = lambda: cast + UNDO_SECONDS + 5
    with pytest.raises(ArenaError, match=f"within {UNDO_SECONDS} s.*ask the study's admin"):
        service.undo("ana")
    assert admin(service).corrections() == []


def test_undo_just_inside_the_window(service):
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a")
    cast = service.clock()
    service.clock = lambda: cast + UNDO_SECONDS - 1
    assert service.undo("ana").text_a == shown.text_a


@pytest.mark.parametrize("case, message", [
    ("none", "no vote to undo"),
    ("twice", "already undone"),
    ("not last", "Only your last vote"),
    ("someone else's", "no vote to undo"),
])
def test_undo_refusals_name_why(service, case, message):
    if case != "none":
        first = vote_on_next(service, "bob" if case == "someone else's" else "ana")
    if case == "twice":
        service.undo("ana")
    if case == "not last":
        vote_on_next(service)
    with pytest.raises(ArenaError, match=message):
        service.undo("ana", first if case == "not last" else None)


# -- comment and flag -------------------------------------------------------------------------
def test_comment_and_flag_are_stored_exported_and_imported_again(service, tmp_path):
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a", comment="  B stops mid-sentence.  ", flag="b_broken")
    vote_on_next(service)  # no note
    exported = list(admin(service).export_votes())
    assert (exported[0]["comment"], exported[0]["flag"]) == ("B stops mid-sentence.", "b_broken")
    assert "comment" not in exported[1] and "flag" not in exported[1]

    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in exported), encoding="utf-8")
    elsewhere = Store(tmp_path / "elsewhere.db")
    try:
        assert admin(Arena(elsewhere)).import_votes(str(path)) == (2, 0, 0)  # added, present, corrections
        again = list(admin(Arena(elsewhere)).export_votes())
        assert (again[0]["comment"], again[0]["flag"]) == ("B stops mid-sentence.", "b_broken")
        assert "comment" not in again[1]
    finally:
        elsewhere.close()


@pytest.mark.parametrize("note, message", [
    ({"flag": "a_is_ugly"}, "flag must be one of"),
    ({"comment": "x" * 1_001}, "limit is 1,000"),
])
def test_a_bad_flag_or_an_over_long_comment_is_refused_and_nothing_stored(service, store, note, message):
    shown = service.next_pair("ana")
    with pytest.raises(ArenaError, match=message):
        service.vote(shown.battle_id, "ana", "a", **note)
    with pytest.raises(ValueError, match=message):
        arena.record_vote(store, shown.battle_id, "ana", "a", **note)
    assert store.db.execute("select count(*) from votes").fetchone()[0] == 0
    service.vote(shown.battle_id, "ana", "a", comment="x" * 1_000)  # the limit itself is fine


def test_an_imported_line_with_a_bad_flag_names_the_line(service, tmp_path):
    line = {"task": "t", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ana", "flag": "meh"}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match='line 1: "flag" must be one of a_broken'):
        admin(service).import_votes(str(path))


# -- the migration ----------------------------------------------------------------------------
def test_m014_adds_comment_and_flag_to_votes_that_stay_append_only(tmp_path, monkeypatch):
    db = sqlite_utils.Database(tmp_path / "old.db")
    every = [m for m in migrations.MIGRATIONS if m[0] <= "m014_vote_notes"]  # later ones are not this test's
    assert every[-1][0] == "m014_vote_notes"
    monkeypatch.setattr(migrations, "MIGRATIONS", every[:-1])
    migrations.apply(db)  # a file of the version before
    assert "comment" not in db["votes"].columns_dict
    old = Store(tmp_path / "old.db")
    seed_outputs(old, {"owls": {"rat": "r", "cot": "c"}})
    outs = arena.arena_outputs(old)
    battle = old.db.execute(  # as that version stored a battle (today's create_battle names a campaign too)
        "insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, created) "
        "values (?, ?, ?, ?, ?, 'ana', '2024-01-01')",
        [outs[0].task_id, outs[0].id, outs[1].id, outs[0].method, outs[1].method]).lastrowid
    old.db.execute("insert into votes (battle_id, annotator, choice, created) values (?, 'ana', 'a', '2024-01-01')",
                   [battle])
    old.db.conn.commit()
    old.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", every)
    assert migrations.apply(db) == ["m014_vote_notes"]
    assert {"comment", "flag"} <= set(db["votes"].columns_dict)
    assert db.execute("select comment, flag from votes").fetchall() == [(None, None)]
    for statement in ("update votes set comment = 'later'", "update votes set flag = 'a_empty'", "delete from votes"):
        with pytest.raises(sql.IntegrityError, match="append-only"):
            db.execute(statement)


# -- the admin's view of the annotators ---------------------------------------------------------
def test_the_admin_sees_each_annotators_progress_quota_pace_and_flag(service):
    from ui.render_arena import ANNOTATOR_HEADERS, annotator_rows

    for _ in range(3):
        vote_on_next(service, "ana", "a")
    service.undo("ana")  # the undone vote does not count
    vote_on_next(service, "bob", "b")
    results(service)._flags = lambda: {"bob": "chose B in 1 of 1 votes"}  # (the flag rules are tested apart)
    people = {a.name: a for a in results(service).annotators({"ana": 4})}
    assert sorted(people) == ["ana", "bob"]
    ana, bob = people["ana"], people["bob"]
    assert (ana.total, ana.today, ana.quota, ana.done, ana.flag) == (2, 2, 4, 0.5, "")
    assert (bob.total, bob.quota, bob.done) == (1, None, None) and "chose B" in bob.flag
    assert ana.median_seconds is not None and ana.last >= bob.last[:10]
    tomorrow = service.clock() + 86_400
    service.clock = lambda: tomorrow
    assert {a.name: a.today for a in results(service).annotators()} == {"ana": 0, "bob": 0}
    rows = annotator_rows(results(service).annotators({"ana": 4}))
    assert [len(r) for r in rows] == [len(ANNOTATOR_HEADERS)] * 2
    assert rows[0][:5] == ["ana", 2, 0, 4, "50%"] and rows[1][3:5] == ["", ""]


def test_the_flagged_voters_line_counts_them_in_the_singular_or_plural():
    from ui.render_arena import flags_text

    one = flags_text({"ana": "votes in 0.5 s (median)"}, left_out=True)
    assert "**1 flagged voter**, left out: ana (votes in 0.5 s (median))." in one
    two = flags_text({"ana": "fast", "bob": "always A"}, left_out=False)
    assert two.startswith("\n\n**2 flagged voters**, counted;") and "ana (fast); bob (always A)" in two
    assert flags_text({}, left_out=False) == ""
