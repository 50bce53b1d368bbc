"""AAG's procedure memory: the table (migration m003), BM25 search, import/export, procedures
from finished runs, and the CLI commands."""

from __future__ import annotations

import json

import pytest

from common.errors import StoreError, TaskError
from common.types import Task
from core.procedures import ProcedureMemory
from data import procedures as table
from tests.fakes.method_scripts import MethodAuthor, collect

pytestmark = pytest.mark.both_databases


@pytest.fixture
def memory(app):
    return ProcedureMemory(app.store)


def test_the_migration_creates_the_table(app):
    assert "procedures" in app.store.db.table_names()
    applied = {r[0] for r in app.store.db.execute("select name from _migrations").fetchall()}
    assert "m003_procedures" in applied


def test_search_ranks_with_bm25_and_leaves_out_unrelated(memory):
    memory.add("flour, eggs, milk", "pancakes", ["Whisk the eggs and milk", "Fry in butter"])
    memory.add("a Django project", "test a Django application", ["Write tests", "Run manage.py test"])
    memory.add("a fresh computer", "install Python packages", ["Create a virtualenv", "pip install"])
    hits = memory.search("How do I test my Django app?", k=3)
    assert [h.output for h in hits] == ["test a Django application"]
    assert hits[0].score > 0 and hits[0].url == f"memory://procedure/{hits[0].id}"
    assert memory.search("quantum chromodynamics", k=3) == []
    assert len(memory.search("a", k=3)) == 0, "stopwords match nothing"
    # the index follows the table
    memory.add("a Django project", "deploy a Django application", ["Collect static files", "Run gunicorn"])
    assert {h.output for h in memory.search("Django application", k=3)} == {
        "test a Django application", "deploy a Django application"}


def test_search_reads_steps_stems_words_and_keeps_k(memory):
    memory.add("a garden", "", ["Water the tomatoes every evening"])
    memory.add("a balcony", "", ["Water the basil", "Turn the pots"])
    memory.add("a lawn", "", ["Mow weekly"])
    assert [h.input for h in memory.search("watering tomatoes", k=3)] == ["a garden", "a balcony"]
    assert [h.input for h in memory.search("watering tomatoes", k=1)] == ["a garden"]
    assert memory.search("watering", k=0) == []
    for nasty in ['C++ "foo', "NEAR(a b", "*", "steps:water", "'; drop table procedures; --", ""]:
        assert isinstance(memory.search(nasty, k=3), list)


def test_the_fts_index_follows_updates_and_deletes(memory):
    proc_id, _ = memory.add("a garden", "", ["Water the tomatoes"])
    db = memory.store.db
    with db.conn:
        db.execute("update procedures set steps = ? where id = ?", ['["Prune the roses"]', proc_id])
    assert memory.search("tomatoes", k=3) == [] and memory.search("roses", k=3)[0].id == proc_id
    with db.conn:
        db.execute("delete from procedures where id = ?", [proc_id])
    assert memory.search("roses", k=3) == []


def test_the_fts_migration_indexes_procedures_already_stored(tmp_path):
    import sqlite_utils

    from data import migrations
    from data.store import Store

    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    db.execute("create table _migrations (name text primary key, applied text)")
    for name, fn in migrations.MIGRATIONS:  # a store from before the FTS index
        if name == "m004_procedures_fts":
            break
        with db.conn:
            fn(db)
            db.execute("insert into _migrations (name, applied) values (?, '')", [name])
    with db.conn:
        db.execute("insert into procedures (input, output, steps, source, digest, created) values (?, ?, ?, ?, ?, ?)",
                   ["a Django project", "test it", '["Write tests", "Run manage.py test"]', "manual", "d", ""])
    db.close()
    memory = ProcedureMemory(Store(path))
    assert [h.output for h in memory.search("manage.py", k=3)] == ["test it"]


def test_the_same_procedure_is_stored_once(memory):
    first = memory.add("in", "out", ["a", "b"])
    again = memory.add("in", "out", ["a", " b "])
    assert first[1] is True and again == (first[0], False)
    assert memory.count() == 1
    with pytest.raises(TaskError, match="steps or an output"):
        memory.add("in", "", [])
    with pytest.raises(StoreError, match="source"):
        table.add(memory.store, "in", "out", ["x"], source="bogus")


def test_import_and_export_round_trip(memory, tmp_path):
    src = tmp_path / "procs.jsonl"
    src.write_text('{"input": "eggs", "output": "omelette", "steps": ["Beat", "Cook"]}\n\n'
                   '{"prompt": "Plan a crafting table", "steps": "Punch a tree\\nCraft planks", '
                   '"answers": ["1 table"]}\n',
                   encoding="utf-8")
    assert memory.import_jsonl(src) == (2, 0)
    assert memory.import_jsonl(src) == (0, 2)
    listed = memory.recent()
    assert [p.source for p in listed] == ["task", "import"]
    assert listed[0].steps == ("Punch a tree", "Craft planks") and listed[0].output == "1 table"
    records = list(memory.export_records())
    assert records[0] == {"input": "eggs", "output": "omelette", "steps": ["Beat", "Cook"]}


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2: not valid JSON"),
    ('["a list"]', "line 2: expected a JSON object"),
    ('{"output": "x", "steps": ["a"]}', 'line 2: "input"'),
    ('{"input": "x", "steps": "" }', 'line 2: a procedure needs "steps" or an "output"'),
    ('{"input": "x", "steps": [1, 2]}', 'line 2: "steps" must be a list of strings'),
    # issue 38 (F33): no size cap on an import
    ('{"input": "' + "x" * 20_001 + '", "output": "y"}', 'line 2: "input" is 20,001 characters long; the limit'),
    ('{"input": "x", "steps": ' + '["s"]' .replace('"s"', ", ".join(['"s"'] * 201)) + '}',
     'line 2: "steps" has 201 steps; the limit is 200'),
    ('{"input": "x", "steps": ["a", "' + "b" * 20_001 + '"]}', 'line 2: "steps" item 2 is 20,001 characters'),
])
def test_import_names_the_bad_line_and_stores_nothing(memory, tmp_path, line, message):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"input": "eggs", "output": "omelette", "steps": ["Beat"]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(TaskError, match=message):
        memory.import_jsonl(src)
    assert memory.count() == 0


async def test_a_finished_run_becomes_a_procedure(app, llm, memory):
    author = MethodAuthor(["First, gather wood.", "Then craft planks."])
    llm.reply(author)
    events = await collect(app.runner.start("cot", Task("Plan a crafting table", "plan")))
    run_id = events[0].run_id
    proc_id, new = memory.add_from_run(run_id)
    assert new
    proc = table.get(app.store, proc_id)
    assert proc["input"] == "Plan a crafting table"
    assert proc["output"] == "First, gather wood.\n\nThen craft planks."
    assert proc["steps"] == ["First, gather wood.", "Then craft planks."] and proc["run_id"] == run_id
    assert memory.add_from_run(run_id) == (proc_id, False)


async def test_an_unfinished_run_is_refused(app, llm, memory):
    llm.reply(MethodAuthor())
    events = await collect(app.runner.start("rat", Task("Write about Python")), stop_after=lambda ev: len(ev) > 3)
    with pytest.raises(TaskError, match="has not finished"):
        memory.add_from_run(events[0].run_id)


def test_procedures_commands(app, tmp_path, capsys):
    from ui.cli import build_parser

    parser = build_parser()
    src = tmp_path / "p.jsonl"
    src.write_text('{"input": "eggs", "output": "omelette", "steps": ["Beat", "Cook"]}\n', encoding="utf-8")

    def run(*argv):
        args = parser.parse_args(list(argv))
        return args.func(args, app)

    assert run("procedures", "import", str(src)) == 0
    assert "1 procedures added" in capsys.readouterr().err
    assert run("procedures", "list", "--json") == 0
    assert json.loads(capsys.readouterr().out)[0]["output"] == "omelette"
    out = tmp_path / "out.jsonl"
    assert run("procedures", "export", str(out)) == 0
    assert json.loads(out.read_text().splitlines()[0])["steps"] == ["Beat", "Cook"]
