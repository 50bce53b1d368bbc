"""The arena shows a run's latest author version (``--arena-text latest``, the default) or the
method's own text (``model``); a newer version is a new output and battles keep what they showed."""

from __future__ import annotations

import pytest

from common.errors import StoreError
from data import arena, sql
from data.versions import Versions
from tests.conftest import outside


def run(store, method, text, prompt="Write about owls"):
    run_id = store.create_run(method, store.add_task(prompt), {})
    store.update_run(run_id, status="done", final_text=text)
    return run_id


def shown(store, text=arena.LATEST):
    """method -> the text the arena would pair now."""
    arena.sync_run_outputs(store, text)
    ids = {o.id: o.method for o in arena.arena_outputs(store, text=text)}
    rows = store.db.execute("select id, text from outputs").fetchall()
    return {ids[i]: t for i, t in rows if i in ids}


def test_the_arena_shows_the_authors_latest_version(store):
    rat = run(store, "rat", "The model's owls.")
    run(store, "cot", "CoT owls.")
    assert shown(store) == {"rat": "The model's owls.", "cot": "CoT owls."}
    Versions(store).add(rat, "The author's owls.", action="edit")
    assert shown(store) == {"rat": "The author's owls.", "cot": "CoT owls."}
    Versions(store).add(rat, "The author's owls, again.", undone=[1], action="undo")
    assert shown(store) == {"rat": "The author's owls, again.", "cot": "CoT owls."}
    assert arena.sync_run_outputs(store) == 0, "each version enters once"


def test_model_text_ignores_the_authors_versions(store):
    rat = run(store, "rat", "The model's owls.")
    run(store, "cot", "CoT owls.")
    Versions(store).add(rat, "The author's owls.", action="edit")
    assert shown(store, arena.MODEL) == {"rat": "The model's owls.", "cot": "CoT owls."}
    assert shown(store, arena.LATEST)["rat"] == "The author's owls."
    assert shown(store, arena.MODEL)["rat"] == "The model's owls.", "a later latest output does not leak into model"


def test_a_draft_version_and_an_emptied_article_are_not_shown(store):
    rat = run(store, "rat", "The model's owls.")
    run(store, "cot", "CoT owls.")
    versions = Versions(store)
    versions.add(rat, "Step one.\n\nStep two.", action="draft")
    assert shown(store)["rat"] == "The model's owls.", "the draft the author continued with is not the article"
    versions.add(rat, "   ", action="edit")
    assert shown(store)["rat"] == "The model's owls.", "an emptied article keeps the last text worth showing"


def test_a_version_back_to_the_shown_text_adds_no_output(store):
    rat = run(store, "rat", "The model's owls.")
    run(store, "cot", "CoT owls.")
    shown(store)
    Versions(store).add(rat, "The model's owls.", undone=[], action="restore")
    assert arena.sync_run_outputs(store) == 0


def test_a_battle_keeps_the_text_it_showed(store):
    rat = run(store, "rat", "The model's owls.")
    run(store, "cot", "CoT owls.")
    arena.sync_run_outputs(store)
    a, b = [o.id for o in arena.arena_outputs(store)]
    battle = arena.create_battle(store, a, b, "ana")
    Versions(store).add(rat, "The author's owls.", action="edit")
    arena.sync_run_outputs(store)
    seen = arena.get_battle(store, battle)
    assert "The model's owls." in (seen.text_a, seen.text_b)
    assert len(arena.arena_outputs(store)) == 2, "the run is paired by its newest output only"


def test_outputs_stay_append_only_per_version(store):
    rat = run(store, "rat", "The model's owls.")
    arena.sync_run_outputs(store)
    conn = outside(store)
    with pytest.raises(sql.DatabaseError, match="append-only"), conn:
        conn.execute("update outputs set text = 'rigged' where run_id = ?", [rat])
    with conn:  # a second output for the same run and version is skipped, as before
        conn.execute("insert into outputs (task_id, method, text, digest, source, run_id, version, created) "
                     "select task_id, method, 'again', '', 'run', run_id, version, created from outputs")
    conn.close()
    assert [r[0] for r in store.db.execute("select text from outputs").fetchall()] == ["The model's owls."]


def test_an_unknown_arena_text_is_refused(store):
    with pytest.raises(StoreError, match="--arena-text"):
        arena.sync_run_outputs(store, "author")
