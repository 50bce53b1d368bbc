"""data.versions and migration m011_versions: the author's versions of a run's article are numbered
per run, kept when the file is closed and opened again, never changed (the database itself refuses
an update, a delete or a replacing insert), not added twice for the same content, and a restore
copies the version it restores."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime

import pytest

from common.errors import RunNotFound, StoreError, VersionNotFound
from data import sql
from data.store import Store
from data.versions import LATEST, MODEL, VersionRow, Versions


def new_run(store: Store, final_text: str = "The model's own text.") -> str:
    run_id = store.create_run("rat-step", store.add_task("Describe owls"), {})
    store.update_run(run_id, status="done", final_text=final_text)
    return run_id


def content(v: VersionRow) -> tuple:
    return v.text, v.undone, v.taken


def test_versions_are_numbered_per_run_with_their_time(store):
    versions = Versions(store)
    a, b = new_run(store), new_run(store)
    assert versions.list(a) == [] and versions.latest(a) is None
    first = versions.add(a, "Owls hunt at night.")
    second = versions.add(a, "Owls hunt at night. Step two.", undone=[3, 2, 3], action="undo")
    other = versions.add(b, "Bats too.", taken=[1], action="take")
    third = versions.add(a, "Owls, edited by hand.")
    assert [v.n for v in versions.list(a)] == [1, 2, 3] and other.n == 1, "numbered 1, 2, 3... per run"
    assert versions.list(a) == [first, second, third], "oldest first, as add returned them"
    assert versions.latest(a) == third and versions.get(a, 2) == second and versions.get(a, "2") == second
    assert second.undone == (2, 3) and second.taken == () and second.action == "undo", "steps sorted, each once"
    assert other.taken == (1,) and versions.get(b, 1).action == "take"
    stamps = [datetime.fromisoformat(v.created) for v in versions.list(a)]
    assert stamps == sorted(stamps) and all(s.tzinfo is not None for s in stamps)
    row = second.to_dict(words=6)  # the caller counts the words, in the text's script (core.text.segment)
    assert row["words"] == 6 and row["text"] == second.text and row["undone"] == [2, 3]


def test_versions_survive_closing_and_opening_the_file(tmp_path):
    path = tmp_path / "versions.db"
    store = Store(path)
    run_id = new_run(store)
    Versions(store).add(run_id, "First.")
    Versions(store).add(run_id, "Second.", undone=[1], action="undo")
    kept = Versions(store).list(run_id)
    store.close()
    again = Store(path)
    try:
        assert Versions(again).list(run_id) == kept and len(kept) == 2
        assert Versions(again).add(run_id, "Third.").n == 3, "numbering goes on from the stored versions"
    finally:
        again.close()


def test_the_same_content_as_the_latest_version_adds_nothing(store):
    versions = Versions(store)
    run_id = new_run(store)
    first = versions.add(run_id, "Owls hunt at night.", undone=[2])
    assert versions.add(run_id, "Owls hunt at night.", undone=[2]) == first, "an autosave that fires twice"
    assert versions.add(run_id, "Owls hunt at night.", undone=[2], action="edit") == first
    assert len(versions.list(run_id)) == 1
    assert versions.add(run_id, "Owls hunt at night.", undone=[2], taken=[1]).n == 2, "other steps taken: new"
    assert versions.add(run_id, "Owls hunt at night.").n == 3, "other steps undone: new"
    assert versions.add(run_id, "Owls hunt at night.", undone=[2]).n == 4, "only the latest is compared"
    assert [v.n for v in versions.list(run_id)] == [1, 2, 3, 4]


def test_a_restore_is_a_new_version_that_copies_the_old_one(store):
    versions = Versions(store)
    run_id = new_run(store, final_text="The model's own text.")
    first = versions.add(run_id, "First, undone.", undone=[2], taken=[3], action="undo")
    versions.add(run_id, "Second, edited.")
    restored = versions.restore(run_id, 1)
    assert (restored.n, restored.action, restored.restored_from) == (3, "restore", 1)
    assert content(restored) == content(first)
    assert versions.restore(run_id, 1) == restored, "restoring what the latest holds already adds nothing"
    model = versions.add(run_id, "The model's own text.", action="restore")  # as core.authoring restores it
    assert (model.n, model.action, model.restored_from, model.text) == (4, "restore", None, "The model's own text.")
    assert [v.n for v in versions.list(run_id)] == [1, 2, 3, 4]
    assert versions.get(run_id, 1) == first, "the restored version itself is unchanged"
    with pytest.raises(VersionNotFound, match="versions 1-4"):
        versions.restore(run_id, 9)
    with pytest.raises(StoreError, match="restored_from only with action='restore'"):
        versions.add(run_id, "x", restored_from=1)
    with pytest.raises(StoreError, match="no version 5 to restore"):
        versions.add(run_id, "x", action="restore", restored_from=5)


def test_versions_are_append_only_in_the_database_itself(store):
    run_id = new_run(store)
    Versions(store).add(run_id, "First.")
    Versions(store).add(run_id, "Second.")
    db = store.db
    changes = ["update versions set text = 'rewritten' where n = 1", "delete from versions where n = 2"]
    if store.dialect == sql.SQLITE:  # PostgreSQL has no replacing insert
        changes.append("insert or replace into versions (id, run_id, n, text, action, created) "
                       "values (1, ?, 3, 'replaced', 'edit', 'now')")  # the next number, a stored id
    for statement in changes:
        with pytest.raises(sql.IntegrityError, match="append-only"):
            with db.conn:
                db.execute(statement, [run_id] if "?" in statement else [])
    for n in (1, 2, 4):  # a stored number, or one that skips the next
        with pytest.raises(sql.IntegrityError, match="numbered 1, 2, 3"):
            with db.conn:
                db.execute("insert into versions (run_id, n, text, action, created) values (?, ?, 'x', 'edit', 'now')",
                           [run_id, n])
    insert = "insert into versions (run_id, n, text, created, {}) values (?, 3, 'x', 'now', {})"
    refused = (  # each breaks one check of the table
        insert.format("action", "'rewrite'"),
        insert.format("action, undone", "'edit', '{\"a\": 1}'"),
        insert.format("action, restored_from", "'edit', 2"),
        insert.format("action, restored_from", "'restore', 3"),
    )
    for statement in refused:
        with pytest.raises(sql.IntegrityError, match="(?i)check"):  # SQLite's "CHECK constraint failed"
            with db.conn:
                db.execute(statement, [run_id])
    assert [(v.n, v.text) for v in Versions(store).list(run_id)] == [(1, "First."), (2, "Second.")]


def test_writers_at_once_each_get_the_next_number(tmp_path):
    path = tmp_path / "busy.db"
    setup = Store(path)
    run_id = new_run(setup)
    errors: list[BaseException] = []

    def write(k: int) -> None:
        store = Store(path)
        try:
            for j in range(8):
                Versions(store).add(run_id, f"writer {k}, save {j}")
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    stored = Versions(setup).list(run_id)
    assert [v.n for v in stored] == list(range(1, 33)) and len({v.text for v in stored}) == 32
    setup.close()


def test_a_missing_version_says_which_there_are_and_what_to_pick(store):
    versions = Versions(store)
    run_id = new_run(store)
    with pytest.raises(VersionNotFound, match=r"has no version 1: it has none .*pick 'model' or 'latest'"):
        versions.get(run_id, 1)
    assert versions.find(run_id, MODEL) is None and versions.find(run_id, LATEST) is None
    for text in ("One.", "Two.", "Three."):
        versions.add(run_id, text)
    assert versions.find(run_id, LATEST).text == "Three." and versions.find(run_id, "2").text == "Two."
    for bad in (0, 4, "4", "newest", True):
        with pytest.raises(VersionNotFound) as err:
            versions.find(run_id, bad)
        assert str(err.value) == (f"Run {run_id} has no version {bad}: it has versions 1-3; pick one of them, "
                                  "or 'model' for the model's own text.")
    with pytest.raises(RunNotFound, match="history"):
        versions.get("nope", 1)
    with pytest.raises(RunNotFound):
        versions.add("nope", "text")
    with pytest.raises(StoreError, match="Unknown version action 'rewrite'"):
        versions.add(run_id, "text", action="rewrite")
    assert len(versions.list(run_id)) == 3, "nothing was added by the refused calls"


def test_a_file_whose_versions_table_is_missing_is_refused(tmp_path):
    path = tmp_path / "broken.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("drop table versions")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="tables versions are missing"):
        Store(path)


def test_a_draft_version_is_history_not_the_article(store):
    run_id = new_run(store)
    versions = Versions(store)
    versions.add(run_id, "Step one.\n\nStep two.", action="draft")
    assert versions.latest(run_id) is None and versions.find(run_id, LATEST) is None, "the article is the model's"
    edit = versions.add(run_id, "The author's text.", action="edit")
    versions.add(run_id, "Step one again.", action="draft")
    assert versions.latest(run_id) == edit
    assert [v.n for v in versions.list(run_id)] == [1, 2, 3], "drafts are numbered with the rest"


def test_a_versions_attribution_is_stored_as_given_and_a_restore_copies_it(store):
    versions = Versions(store)
    run_id = new_run(store)
    bound = '{"format":1,"pieces":[["Owls hunt.", ""]]}'
    first = versions.add(run_id, "Owls hunt.", attribution=bound)
    assert versions.get(run_id, 1).attribution == bound == first.attribution
    assert versions.add(run_id, "Owls hunt.", attribution=bound) == first, "the same content adds nothing"
    other = versions.add(run_id, "Owls hunt.", attribution='{"format":1,"pieces":[]}')
    assert other.n == 2, "the same text cited otherwise is a new version"
    assert versions.restore(run_id, 1).attribution == bound, "a restore reads as the version it restores"
    assert versions.add(run_id, "Bats.").attribution is None
    with pytest.raises(sql.IntegrityError, match="append-only"):
        with store.db.conn:
            store.db.execute("update versions set attribution = '{}' where n = 1")
