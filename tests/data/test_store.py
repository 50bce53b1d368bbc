"""data.store and data.migrations: what the leaderboard is computed from cannot be rewritten, and a
file this version must not write to is refused in one line that names it and what to do."""

from __future__ import annotations

import sqlite3

import pytest

from common.errors import StoreError
from data import arena
from data.store import Store


@pytest.fixture
def voted(tmp_path):
    """A store with two outputs, one battle and its vote."""
    store = Store(tmp_path / "arena.db")
    arena.import_outputs(store, [
        {"prompt": "Describe owls", "kind": "writing", "task_set": "", "method": m, "text": f"{m} on owls"}
        for m in ("rat", "cot")
    ])
    a, b = (o.id for o in arena.arena_outputs(store))
    battle = arena.create_battle(store, a, b, "ana")
    arena.record_vote(store, battle, "ana", "a")
    yield store
    store.close()


def _vote(store):
    return store.db.execute("select id, battle_id, annotator, choice from votes").fetchall()


def raw(store) -> sqlite3.Connection:
    """A plain sqlite3 connection to the store's file, as any other program would open it
    (sqlite-utils turns recursive triggers on; sqlite3 leaves them off)."""
    conn = sqlite3.connect(store.path)
    assert conn.execute("pragma recursive_triggers").fetchone() == (0,)
    return conn


@pytest.mark.parametrize("sql", [
    "insert or replace into votes (id, battle_id, annotator, choice, created) values (1, 1, 'eve', 'b', 'x')",
    "replace into votes (id, battle_id, annotator, choice, created) values (1, 1, 'eve', 'b', 'x')",
    "update votes set choice = 'b'",
    "delete from votes",
])
def test_a_stored_vote_cannot_be_rewritten(voted, sql):
    before = _vote(voted)
    conn = raw(voted)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"), conn:
        conn.execute(sql)
    conn.close()
    assert _vote(voted) == before


@pytest.mark.parametrize("sql", [
    "update battles set method_a = method_b",
    "delete from battles",
    "insert or replace into battles (id, task_id, method_a, method_b, annotator, created) "
    "select id, task_id, method_b, method_a, annotator, created from battles",
    "update outputs set text = 'something else'",
    "delete from outputs",
    "insert or replace into outputs (id, task_id, method, text, digest, source, created) "
    "select id, task_id, method, 'rewritten', digest, source, created from outputs",
])
def test_battles_and_outputs_cannot_be_rewritten(voted, sql):
    rows = lambda: (voted.db.execute("select * from battles").fetchall(),  # noqa: E731
                    voted.db.execute("select * from outputs").fetchall())
    before = rows()
    conn = raw(voted)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"), conn:
        conn.execute(sql)
    conn.close()
    assert rows() == before


def test_judge_votes_cannot_be_replaced(voted):
    (a, b) = (o.id for o in arena.arena_outputs(voted))
    arena.add_judge_vote(voted, task_id=voted.add_task("Describe owls"), output_a=a, output_b=b, method_a="rat",
                         method_b="cot", choice="a", n=4, detail="{}", model="m")
    conn = raw(voted)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"), conn:
        conn.execute("insert or replace into judge_votes select id, task_id, method_a, method_b, output_a, "
                     "output_b, 'b', n, detail, model, created from judge_votes")
    conn.close()
    assert [r.choice for r in arena.vote_rows(voted, "judge")] == ["a"]


def test_a_finished_run_still_joins_the_arena_once(voted):
    run_id = voted.create_run("rat", voted.add_task("Describe bats"), {})
    voted.update_run(run_id, status="done", final_text="Bats fly at night.")
    assert arena.sync_run_outputs(voted) == 1
    assert arena.sync_run_outputs(voted) == 0


def test_a_database_of_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "newer.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("insert into _migrations (name, applied) values ('m999_from_the_future', 'x')")
    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert str(path) in message and "newer version" in message and "m999_from_the_future" in message
    assert "--db" in message and "\n" not in message


def test_a_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table customers (id integer primary key, name text)")
    with pytest.raises(StoreError, match="not a RAT Studio database") as caught:
        Store(path)
    assert str(path) in str(caught.value) and "--db" in str(caught.value)
    with sqlite3.connect(path) as conn:  # nothing was written to it
        assert [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")] == ["customers"]


def test_a_renamed_table_is_one_line_not_a_traceback(tmp_path):
    path = tmp_path / "renamed.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("alter table runs rename to runs_old")
    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert str(path) in message and "runs" in message and "\n" not in message


def test_a_current_database_opens_again(tmp_path):
    path = tmp_path / "ok.db"
    Store(path).close()
    store = Store(path)
    assert store.list_runs() == []


def test_processes_opening_a_new_file_at_once_migrate_it_once(tmp_path, request, backend):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    db = request.getfixturevalue("pg_url") if backend == "postgresql" else tmp_path / "fresh.db"
    code = f"from data.store import Store; Store({str(db)!r}).list_runs()"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=root, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    from data import migrations
    from data.store import Store

    names = [r[0] for r in Store(db).db.execute("select name from _migrations order by name")]
    assert names == sorted(name for name, _ in migrations.MIGRATIONS)


def test_a_stores_threads_take_turns_at_writing_instead_of_waiting_in_sqlite(tmp_path):
    """Threads of one Store queue for its writer lock (``write_transaction``): with no busy timeout
    at all, none of them finds SQLite's write lock taken (before, each waiting writer slept in
    SQLite's busy handler, up to 100 ms a try, well past the moment the lock was free)."""
    import threading

    from data.store import write_transaction

    store = Store(tmp_path / "w.db", busy_timeout=0)
    store.db.execute("create table t (n integer)")
    failures: list[Exception] = []

    def writer(k: int) -> None:
        try:
            for n in range(40):
                with write_transaction(store.db, "write a row") as conn:
                    conn.execute("insert into t values (?)", [k * 100 + n])
        except Exception as exc:  # noqa: BLE001 (collected and asserted below)
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and store.db.execute("select count(*) from t").fetchone()[0] == 240
