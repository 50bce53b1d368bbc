"""The schema, written once for both databases, is the schema the two hand-written forms made: a
new SQLite file and a new PostgreSQL database end as ``schema_golden.json`` says, and a SQLite file
an older version migrated (to any migration) opens and ends the same.

``schema_golden.json`` was written by the hand-written migrations (SQLite's ``data.migrations``,
PostgreSQL's ``data.pg_migrations``) before the schema was declared once; write it again only for
a new migration: ``python -m tests.data.test_schema_once`` (it keeps the shipped migrations' steps
as recorded, and adds the new one's). It holds, in a normalized form:

- ``sqlite``: each object of ``sqlite_master`` (its SQL as tokens: case, quotes and spaces aside),
  each table's ``table_xinfo``, ``foreign_key_list``, ``index_list`` with ``index_xinfo`` and
  CHECKs, each partial index's WHERE, each trigger's table and SQL;
- ``sqlite_steps``: what each migration added, changed (its SQL as written) or dropped (null) in
  ``sqlite_master``, to make a file as an older version left it;
- ``postgresql``: the catalog's columns, sequences, indexes, constraints, triggers and functions
  (their bodies with spaces collapsed)."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
import sqlite_utils

from data import migrations
from data.store import Store

GOLDEN = Path(__file__).with_name("schema_golden.json")

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\[[^\]]*\]|\w+|!=|<>|<=|>=|\|\||\S")


def tokens(sql: str) -> list[str]:
    """``sql``'s tokens: string literals as written, names unquoted, the rest in lower case."""
    return [t if t[0] == "'" else t[1:-1].lower() if t[0] in "\"[" else t.lower() for t in _TOKEN.findall(sql)]


def normal(sql: str | None) -> str | None:
    return None if sql is None else " ".join(tokens(sql))


def _parenthesized(words: list[str], start: int) -> str:
    """The tokens of the parenthesized group that opens at ``words[start]``, without its parentheses."""
    depth = 0
    for end in range(start, len(words)):
        depth += {"(": 1, ")": -1}.get(words[end], 0)
        if depth == 0:
            return " ".join(words[start + 1:end])
    raise ValueError(f"unbalanced: {' '.join(words[start:])}")


def checks(sql: str) -> list[str]:
    words = tokens(sql)
    return [_parenthesized(words, i + 1) for i, w in enumerate(words[:-1]) if w == "check" and words[i + 1] == "("]


def partial_where(sql: str | None) -> str | None:
    """A partial index's WHERE (the tokens after a ``where`` outside parentheses)."""
    words, depth = tokens(sql or ""), 0
    for i, w in enumerate(words):
        depth += {"(": 1, ")": -1}.get(w, 0)
        if w == "where" and depth == 0:
            return " ".join(words[i + 1:])
    return None


def sqlite_facts(conn: sqlite3.Connection) -> dict:
    """The normalized schema of a SQLite file (see the module's docstring)."""
    master = conn.execute("select type, name, tbl_name, sql from sqlite_master order by type, name").fetchall()
    tables = {}
    for _, table, _, sql in (row for row in master if row[0] == "table"):
        indexes = {}
        for _, name, unique, origin, partial in conn.execute(f"pragma index_list('{table}')"):
            sql_of = next((row[3] for row in master if row[1] == name), None)  # WITHOUT ROWID: none
            indexes[name] = {"unique": unique, "origin": origin, "partial": partial,
                             "where": partial_where(sql_of),
                             "columns": [list(c) for c in conn.execute(f"pragma index_xinfo('{name}')")]}
        tables[table] = {
            "columns": [[*c[:2], c[2].upper(), *c[3:]] for c in conn.execute(f"pragma table_xinfo('{table}')")],
            "foreign_keys": [list(k) for k in conn.execute(f"pragma foreign_key_list('{table}')")],
            "indexes": indexes,
            "checks": checks(sql or ""),
        }
    return {
        "objects": [[kind, name, table, normal(sql)] for kind, name, table, sql in master],
        "tables": tables,
        "triggers": {name: [table, normal(sql)] for kind, name, table, sql in master if kind == "trigger"},
    }


def sqlite_objects(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each object of ``sqlite_master`` that its SQL makes, as ``[type, SQL as written]`` (not
    FTS5's shadow tables, which their virtual table makes, nor the indexes of UNIQUE and PRIMARY KEY)."""
    shadow = {row[1] for row in conn.execute("pragma table_list") if row[2] == "shadow"}
    return {name: [kind, sql] for kind, name, sql in conn.execute("select type, name, sql from sqlite_master")
            if sql is not None and name not in shadow}


def migrated_step_by_step(path: Path):
    """Apply the migrations to the file at ``path`` one at a time, yielding each name after it."""
    every = list(migrations.MIGRATIONS)
    db = sqlite_utils.Database(path)
    try:
        for k, (name, _) in enumerate(every, start=1):
            migrations.MIGRATIONS[:] = every[:k]
            assert migrations.apply(db) == [name]
            yield name
    finally:
        migrations.MIGRATIONS[:] = every
        db.close()


PG_FACTS = {
    "columns": "select table_name, column_name, ordinal_position, data_type, is_nullable, column_default, "
               "is_identity, identity_generation from information_schema.columns "
               "where table_schema = current_schema() order by 1, 3",
    "sequences": "select sequence_name, data_type from information_schema.sequences "
                 "where sequence_schema = current_schema() order by 1",
    "indexes": "select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema() "
               "order by 1, 2",
    "constraints": "select c.relname, k.conname, k.contype::text, pg_get_constraintdef(k.oid) from pg_constraint k "
                   "join pg_class c on c.oid = k.conrelid where c.relnamespace = current_schema()::regnamespace "
                   "order by 1, 2",
    "triggers": "select c.relname, t.tgname, pg_get_triggerdef(t.oid) from pg_trigger t "
                "join pg_class c on c.oid = t.tgrelid where not t.tgisinternal order by 1, 2",
    "functions": "select p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid), "
                 "l.lanname, p.provolatile::text, p.proisstrict, p.proconfig, p.prosrc from pg_proc p "
                 "join pg_language l on l.oid = p.prolang where p.pronamespace = current_schema()::regnamespace "
                 "order by 1, 2",
}


def pg_facts(url: str) -> dict:
    """The catalog facts of the PostgreSQL database at ``url`` (function bodies' spaces collapsed)."""
    with psycopg.connect(url) as conn:
        facts = {kind: [list(row) for row in conn.execute(sql)] for kind, sql in PG_FACTS.items()}
    for row in facts["functions"]:
        row[-1] = " ".join(row[-1].split())
    return facts


def golden(tmp: Path, pg_url: str) -> dict:
    """The facts of a SQLite file and a PostgreSQL database the migrations make, and each
    migration's changes to the file's objects."""
    steps, before = [], {}
    path = tmp / "golden.db"
    for name in migrated_step_by_step(path):
        with closing(sqlite3.connect(path)) as conn:
            after = sqlite_objects(conn)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        steps.append([name, {k: after.get(k) for k in changed}])
        before = after
    with closing(sqlite3.connect(path)) as conn:
        lite = sqlite_facts(conn)
    Store(pg_url).close()
    return {"sqlite": lite, "sqlite_steps": steps, "postgresql": pg_facts(pg_url)}


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads(GOLDEN.read_text())


def test_a_new_sqlite_file_has_the_schema_the_hand_written_migrations_made(tmp_path, expected):
    store = Store(tmp_path / "new.db")
    with closing(sqlite3.connect(store.path)) as conn:
        facts = json.loads(json.dumps(sqlite_facts(conn)))
    store.close()
    for part in ("objects", "triggers", "tables"):
        assert facts[part] == expected["sqlite"][part], part


def test_a_new_postgresql_database_has_the_schema_the_hand_written_scripts_made(pg_url, expected):
    Store(pg_url).close()
    facts = json.loads(json.dumps(pg_facts(pg_url)))
    for part in PG_FACTS:
        assert facts[part] == expected["postgresql"][part], part


def test_each_migration_changes_what_it_changed(tmp_path, expected):
    """Applied one at a time, each migration leaves the objects it left before (as tokens)."""
    path, objects = tmp_path / "steps.db", {}
    steps = iter(expected["sqlite_steps"])
    for name in migrated_step_by_step(path):
        step, changes = next(steps)
        assert name == step
        objects = {k: v for k, v in {**objects, **changes}.items() if v is not None}
        with closing(sqlite3.connect(path)) as conn:
            found = sqlite_objects(conn)
        assert {k: normal(v[1]) for k, v in found.items()} == {k: normal(v[1]) for k, v in objects.items()}, name
    assert next(steps, None) is None


def old_file(path: Path, steps: list) -> None:
    """A SQLite file as an older version left it after ``steps`` (each a migration and its
    changes): its tables, indexes and triggers as that version wrote them, and its record of them."""
    objects: dict[str, list[str]] = {}
    for _, changes in steps:
        objects = {k: v for k, v in {**objects, **changes}.items() if v is not None}
    order = ("table", "index", "trigger")  # a table before what is made on it
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("begin")  # one commit, not one a statement
        for _, sql in sorted(objects.values(), key=lambda made: order.index(made[0])):
            conn.execute(sql)  # ``_migrations`` among them
        conn.executemany("insert into _migrations values (?, 'then')", [[name] for name, _ in steps])


@pytest.mark.parametrize("done", range(1, len(migrations.MIGRATIONS) + 1))
def test_a_file_an_older_version_migrated_opens_and_ends_with_the_same_schema(tmp_path, expected, done):
    steps = expected["sqlite_steps"]
    old_file(tmp_path / "old.db", steps[:done])
    store = Store(tmp_path / "old.db")
    applied = [row[0] for row in store.db.execute("select name from _migrations where applied != 'then' order by name")]
    assert applied == [name for name, _ in steps[done:]], "nothing applied twice"
    with closing(sqlite3.connect(store.path)) as conn:
        facts = json.loads(json.dumps(sqlite_facts(conn)))
    store.close()
    assert facts["tables"] == expected["sqlite"]["tables"]
    assert facts["triggers"] == expected["sqlite"]["triggers"]


if __name__ == "__main__":
    import tempfile

    from tests.pg import PgCluster

    with tempfile.TemporaryDirectory() as folder, PgCluster() as cluster:
        made = golden(Path(folder), cluster.new_database())
    # a shipped migration's steps are history (what the version that shipped it wrote): kept as
    # recorded; only a new migration's are added
    recorded = dict(json.loads(GOLDEN.read_text())["sqlite_steps"]) if GOLDEN.exists() else {}
    made["sqlite_steps"] = [[name, recorded.get(name, changes)] for name, changes in made["sqlite_steps"]]
    GOLDEN.write_text(json.dumps(made, indent=1) + "\n")
    print(f"wrote {GOLDEN}")
