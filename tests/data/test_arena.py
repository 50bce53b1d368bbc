"""data.arena: outputs, battles and votes in a real SQLite file."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from common.errors import StoreError
from data import arena, sql
from data.store import Store


def outputs(store, prompt="Write about owls", methods=("rat", "cot"), task_set=""):
    arena.import_outputs(store, [
        {"prompt": prompt, "kind": "writing", "task_set": task_set, "method": m, "text": f"{m} on {prompt}"}
        for m in methods
    ])
    task_id = store.add_task(prompt, task_set=task_set)
    return {o.method: o.id for o in arena.arena_outputs(store) if o.task_id == task_id}


def run(store, prompt, method, text, status="done"):
    run_id = store.create_run(method, store.add_task(prompt), {})
    store.update_run(run_id, status=status, final_text=text)
    return run_id


def test_finished_runs_join_the_arena_once(store):
    run(store, "t", "rat", "the RAT text")
    run(store, "t", "cot", "the CoT text")
    run(store, "t", "direct", "   ")  # empty: not an output
    run(store, "t", "rag-1", "half done", status="running")
    assert arena.sync_run_outputs(store) == 2
    assert arena.sync_run_outputs(store) == 0
    assert sorted(o.method for o in arena.arena_outputs(store)) == ["cot", "rat"]


def test_arena_outputs_need_two_methods_on_a_task(store):
    outputs(store, "alone", methods=("rat",))
    assert arena.arena_outputs(store) == []
    outputs(store, "pair", methods=("rat", "cot"))
    assert len(arena.arena_outputs(store)) == 2


def test_importing_the_same_output_twice_adds_it_once(store):
    record = {"prompt": "t", "kind": "writing", "task_set": "", "method": "rat", "text": "x"}
    assert arena.import_outputs(store, [record]) == (1, 0)
    assert arena.import_outputs(store, [record]) == (0, 1)


def test_a_vote_is_stored_as_cast(store):
    ids = outputs(store)
    battle = arena.create_battle(store, ids["rat"], ids["cot"], "ana")
    arena.record_vote(store, battle, "ana", "both_bad")
    row = arena.get_battle(store, battle)
    assert (row.method_a, row.method_b, row.choice) == ("rat", "cot", "both_bad")
    assert [(r.method_a, r.method_b, r.choice) for r in arena.vote_rows(store)] == [("rat", "cot", "both_bad")]


@pytest.mark.parametrize("annotator, message", [("bob", "another annotator"), ("ana", "already voted")])
def test_a_battle_takes_one_vote_from_its_annotator(store, annotator, message):
    ids = outputs(store)
    battle = arena.create_battle(store, ids["rat"], ids["cot"], "ana")
    arena.record_vote(store, battle, "ana", "a")
    with pytest.raises(StoreError, match=message):
        arena.record_vote(store, battle, annotator, "b")
    assert len(arena.vote_rows(store)) == 1


def test_unknown_battle_and_choice_are_refused(store):
    with pytest.raises(StoreError, match="No battle"):
        arena.record_vote(store, 999, "ana", "a")
    with pytest.raises(ValueError):
        arena.record_vote(store, 1, "ana", "A is better")


def test_votes_are_append_only(store):
    ids = outputs(store)
    arena.record_vote(store, arena.create_battle(store, ids["rat"], ids["cot"], "ana"), "ana", "a")
    with pytest.raises(sql.IntegrityError, match="append-only"):
        with store.db.conn:
            store.db.execute("update votes set choice = 'b'")
    with pytest.raises(sql.IntegrityError, match="append-only"):
        with store.db.conn:
            store.db.execute("delete from votes")


def test_twenty_concurrent_writers_lose_no_vote(tmp_path):
    path = tmp_path / "busy.db"
    setup = Store(path)
    ids = outputs(setup)
    battles = {f"ann{k}": [arena.create_battle(setup, ids["rat"], ids["cot"], f"ann{k}") for _ in range(10)]
               for k in range(20)}
    setup.close()
    errors: list[BaseException] = []
    barrier = threading.Barrier(20)

    def writer(annotator: str) -> None:
        own = Store(path)  # each thread its own Store and connection
        barrier.wait()
        try:
            for n, battle in enumerate(battles[annotator]):
                arena.record_vote(own, battle, annotator, arena.CHOICES[n % 4])
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=writer, args=(a,)) for a in battles]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check = Store(path)
    assert len(arena.vote_rows(check)) == 200
    assert check.db.execute("select count(distinct battle_id) from votes").fetchone()[0] == 200


def _vote(**overrides):
    record = {"prompt": "t", "kind": "writing", "task_set": "", "task_id": None, "method_a": "rat",
              "method_b": "cot", "choice": "a", "annotator": "ana", "output_a": None, "output_b": None,
              "created": None, "line": 1}
    return {**record, **overrides}


def test_a_failed_import_imports_nothing(store):
    records = [_vote(), _vote(choice="tie"), _vote(task_id=12345, line=3)]
    with pytest.raises(StoreError, match="line 3"):
        arena.import_votes(store, records)
    assert arena.vote_rows(store) == []
    assert store.db.execute("select count(*) from battles").fetchone()[0] == 0


def test_import_skips_votes_already_present(store):
    records = [_vote(created="2025-01-01T00:00:00", output_a="A text", output_b="B text")]
    assert arena.import_votes(store, records) == arena.VotesImported(added=1, present=0, corrections=0)
    assert arena.import_votes(store, records) == arena.VotesImported(added=0, present=1, corrections=0)
    exported = list(arena.export_votes(store))
    assert exported[0]["output_a"] == "A text" and exported[0]["winner"] == "a"


def test_vote_rows_filter_by_source_and_task_set(store):
    ids = outputs(store, "in set", task_set="s1")
    other = outputs(store, "elsewhere")
    arena.record_vote(store, arena.create_battle(store, ids["rat"], ids["cot"], "ana"), "ana", "a")
    arena.record_vote(store, arena.create_battle(store, other["rat"], other["cot"], "ana"), "ana", "b")
    arena.add_judge_vote(store, task_id=store.add_task("elsewhere"), output_a=other["rat"], output_b=other["cot"],
                         method_a="rat", method_b="cot", choice="tie", n=10, detail={}, model="m")
    assert [r.choice for r in arena.vote_rows(store, "people", "s1")] == ["a"]
    assert [r.choice for r in arena.vote_rows(store, "judge")] == ["tie"]
    assert arena.vote_rows(store, "judge", "s1") == []
    assert arena.task_sets(store) == ["", "s1"]
    with pytest.raises(ValueError):
        arena.vote_rows(store, "robots")


def test_the_arena_migration_is_all_or_nothing(tmp_path, monkeypatch):
    import sqlite_utils

    from data import migrations

    db = sqlite_utils.Database(tmp_path / "m.db")
    arena_step = dict(migrations.MIGRATIONS)["m002_arena"]
    monkeypatch.setattr(migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m[0] == "m001_core"])
    migrations.apply(db)

    def fails_at_the_end(db):
        arena_step(db)
        db.execute("create table votes (x)")  # already exists

    migrations.MIGRATIONS.append(("m002_arena", fails_at_the_end))
    with pytest.raises(sqlite3.OperationalError):
        migrations.apply(db)
    assert "votes" not in db.table_names() and "outputs" not in db.table_names()
    migrations.MIGRATIONS[-1] = ("m002_arena", arena_step)
    assert migrations.apply(db) == ["m002_arena"]
