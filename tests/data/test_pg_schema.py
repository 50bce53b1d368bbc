"""data.dialect: PostgreSQL, migrated by the schema's PostgreSQL form, ends with the schema SQLite's
migrations make (tables, columns and their types, NOT NULL, defaults, foreign keys, named indexes),
refuses what SQLite's triggers and checks refuse with the same messages, computes julianday as
SQLite does, and searches the procedure memory (data.procedures.search) through its own index."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass

import psycopg
import pytest
from psycopg.rows import dict_row

from data import procedures
from data.dialect import script
from data.migrations import MIGRATIONS
from data.schema import SCHEMA
from data.store import Store

#: Each migration's PostgreSQL script, by name.
PG = {name: script(steps) for name, steps in SCHEMA}


def migrate(url: str) -> psycopg.Connection:
    """A connection (autocommit off) to the database at ``url``, migrated as the app does it: each
    script in MIGRATIONS' order, in a transaction of its own."""
    conn = psycopg.connect(url)
    for name, _ in MIGRATIONS:
        with conn.transaction():
            conn.execute(PG[name])
    return conn


@pytest.fixture(scope="module")
def pair(pg_cluster, tmp_path_factory):
    """A SQLite file (a Store's) and a migrated PostgreSQL database, both holding SEED."""
    store = Store(tmp_path_factory.mktemp("pg_schema") / "s.db")
    lite = sqlite3.connect(store.path)
    lite.execute("pragma foreign_keys = on")
    pg = migrate(pg_cluster.new_database())
    for sql in SEED:
        lite.execute(sql)
        pg.execute(sql)
    lite.commit()
    pg.commit()
    yield lite, pg
    lite.close()
    pg.close()
    store.close()


T = "'2026-01-01T00:00:00+00:00'"
HASH_A, HASH_B, HASH_C = ("'" + c * 64 + "'" for c in "abc")

#: One row of every append-only table, in SQL both databases run alike (ids 1, 2: fresh tables).
SEED = (
    f"insert into tasks (prompt, kind, task_set, meta, created) values ('p', 'writing', 's', '{{}}', {T})",
    f"insert into runs (id, task_id, method, status, created) values ('r1', 1, 'rat', 'done', {T})",
    f"insert into runs (id, task_id, method, status, created) values ('r2', 1, 'cot', 'done', {T})",
    *(f"insert into outputs (task_id, method, text, digest, source, run_id, created) values {row}"
      for row in (f"(1, 'rat', 'a', 'd1', 'run', 'r1', {T})", f"(1, 'cot', 'b', 'd2', 'run', 'r2', {T})")),
    f"insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, created) "
    f"values (1, 1, 2, 'rat', 'cot', 'ann', {T})",
    f"insert into votes (battle_id, annotator, choice, created) values (1, 'ann', 'a', {T})",
    f"insert into judge_votes (task_id, method_a, method_b, output_a, output_b, choice, n, detail, model, created) "
    f"values (1, 'rat', 'cot', 1, 2, 'a', 1, '{{}}', 'm', {T})",
    f"insert into vote_corrections (vote_id, choice, corrected_by, why, created) "
    f"values (1, 'void', 'adm', 'test', {T})",
    f"insert into versions (run_id, n, text, action, created) values ('r1', 1, 'v1', 'edit', {T})",
    f"insert into accounts (name, created) values ('ann', {T})",
    f"insert into invites (token_hash, account, created) values ({HASH_A}, 'ann', {T})",
    f"insert into sessions (token_hash, account, invite, created) values ({HASH_B}, 'ann', 1, {T})",
    f"insert into gold_pairs (output_a, output_b, better, added_by, created) values (1, 2, 'a', 'adm', {T})",
    f"insert into campaigns (name, style, overlap, status, changed_by, created) "
    f"values ('c', 'plain', 1, 'open', 'adm', {T})",
    f"insert into share_links (token_hash, run_id, version, created) values ({HASH_A}, 'r1', 1, {T})",
    f"insert into vote_criteria (vote_id, criterion, choice, created) values (1, 'Readability', 'tie', {T})",
    f"insert into sentence_flags (vote_id, side, sentence, kind, created) values (1, 'a', 'Owls.', 'wrong', {T})",
)


@dataclass(frozen=True)
class Refusal:
    trigger: str  # SQLite's trigger that refuses ``sql``
    sql: str
    words: str  # in the message

    def __str__(self) -> str:
        return self.trigger


def _append_only(table: str, words: str, *, reuse: bool = True) -> list[Refusal]:
    """Update, delete and (``reuse``) an insert of a stored row again, refused with ``words``."""
    cases = [Refusal(f"{table}_append_only_update", f"update {table} set created = 'x'", words),
             Refusal(f"{table}_append_only_delete", f"delete from {table}", words)]
    if reuse:
        cases.append(Refusal(f"{table}_append_only_reuse", f"insert into {table} select * from {table}", words))
    return cases


REFUSALS = [
    *_append_only("votes", "votes are append-only"),
    Refusal("votes_append_only_reuse",
            f"insert into votes (battle_id, annotator, choice, created) values (1, 'bob', 'b', {T})",
            "votes are append-only: add a new row"),
    *_append_only("judge_votes", "judge votes are append-only"),
    *_append_only("outputs", "outputs are append-only: add a new row", reuse=False),
    Refusal("outputs_append_only_reuse",  # no run: a run's output again is skipped, not refused
            f"insert into outputs (id, task_id, method, text, digest, source, created) "
            f"values (1, 1, 'x', 't', 'd8', 'import', {T})", "outputs are append-only: add a new row"),
    *_append_only("battles", "battles are append-only: add a new row"),
    *_append_only("vote_corrections", "vote corrections are append-only"),
    *_append_only("versions", "versions are append-only", reuse=False),
    Refusal("versions_append_only_reuse",  # the run's next number: only the id is reused
            f"insert into versions (id, run_id, n, text, action, created) values (1, 'r1', 2, 'v2', 'edit', {T})",
            "versions are append-only"),
    Refusal("versions_numbered",
            f"insert into versions (run_id, n, text, action, created) values ('r1', 3, 'v3', 'edit', {T})",
            "numbered 1, 2, 3"),
    *_append_only("gold_pairs", "gold pairs are append-only"),
    *_append_only("vote_criteria", "vote criteria are append-only"),  # m024
    *_append_only("sentence_flags", "sentence flags are append-only"),
    *_append_only("campaigns", "campaigns are append-only"),
    Refusal("accounts_never_deleted", "delete from accounts", "never deleted"),
    Refusal("accounts_never_renamed", "update accounts set name = 'bob'", "never renamed"),
    Refusal("accounts_no_reuse", "insert into accounts select * from accounts", "accounts are never replaced"),
    Refusal("accounts_no_reuse", f"insert into accounts (name, created) values ('ann', {T})",
            "accounts are never replaced"),
    Refusal("sessions_never_deleted", "delete from sessions", "sessions are never deleted"),
    Refusal("sessions_end_once", "update sessions set address = '10.0.0.1'", "a session only ends, once"),
    Refusal("sessions_no_reuse", "insert into sessions select * from sessions", "sessions are never replaced"),
    Refusal("invites_never_deleted", "delete from invites", "invites are never deleted"),
    Refusal("invites_only_disabled", "update invites set quota = 5", "an invite only gets disabled"),
    Refusal("invites_no_reuse", "insert into invites select * from invites", "invites are never replaced"),
    Refusal("share_links_never_deleted", "delete from share_links", "share links are never deleted"),
    Refusal("share_links_revoked_once", "update share_links set version = 2", "only gets revoked, once"),
    Refusal("share_links_no_reuse",
            f"insert into share_links (token_hash, run_id, created) values ({HASH_A}, 'r1', {T})",
            "share links are never replaced"),
]

#: A second output of a run's version (null: the model's own text), as SQLite's outputs_append_only_run
#: (``raise(ignore)``) skips it.
OUTPUT_OF_RUN = ("insert into outputs (task_id, method, text, digest, source, run_id, version, created) "
                 f"values (1, 'rat', 'again', 'd3', 'run', 'r1', {{version}}, {T})")
SKIPPED = {"outputs_append_only_run": OUTPUT_OF_RUN.format(version="null")}
#: SQLite's triggers that keep the FTS index in step (test_procedure_search_follows_the_table).
FTS_TRIGGERS = {"procedures_fts_insert", "procedures_fts_update", "procedures_fts_delete"}

#: Writes a CHECK refuses (PostgreSQL says "violates check constraint", SQLite "CHECK constraint failed").
_VERSION = "insert into versions (run_id, n, text, action, created, undone) values ('r1', 2, 'v2', {}, {T}, {})"
CHECKS = [
    _VERSION.format("'edit'", "'not json'", T=T),
    _VERSION.format("'edit'", "'{\"a\": 1}'", T=T),
    _VERSION.format("'rewrite'", "'[]'", T=T),
    f"insert into accounts (name, quota, created) values ('bob', 0, {T})",
    f"insert into accounts (name, participant, created) values ('bob', '[1]', {T})",
    f"insert into accounts (name, password_hash, created) values ('bob', 'plain', {T})",
    f"insert into accounts (name, created) values (' bob', {T})",
    f"insert into invites (token_hash, created) values ({HASH_C}, {T})",
    f"insert into gold_pairs (output_a, output_b, better, added_by, created) values (1, 1, 'a', 'adm', {T})",
    f"insert into campaigns (name, style, overlap, status, changed_by, created) "
    f"values ('d', 'plain', 51, 'open', 'a', {T})",
    f"insert into campaigns (name, methods, style, overlap, status, changed_by, created) "
    f"values ('d', '{{}}', 'plain', 1, 'open', 'a', {T})",
    f"insert into outputs (task_id, method, text, digest, source, created, version) "
    f"values (1, 'x', 't', 'd9', 'import', {T}, 0)",
    f"insert into campaigns (name, style, overlap, status, changed_by, created, criteria) "
    f"values ('d', 'plain', 1, 'open', 'a', {T}, '\"Readability\"')",  # m024: a JSON list, not a string
    f"insert into vote_criteria (vote_id, criterion, choice, created) values (1, 'Insight', 'both_bad', {T})",
    f"insert into vote_criteria (vote_id, criterion, choice, created) values (1, ' ', 'a', {T})",
    f"insert into sentence_flags (vote_id, side, sentence, kind, created) values (1, 'c', 'Owls.', 'wrong', {T})",
    f"insert into sentence_flags (vote_id, side, sentence, kind, created) values (1, 'a', 'Owls.', 'odd', {T})",
]

#: Writes the append-only tables allow: each must go through on both.
ALLOWED = [
    "update accounts set disabled = 1",
    "update accounts set name = 'ann'",
    f"update sessions set ended = {T}",
    "update invites set disabled = 1",
    _VERSION.format("'regenerate'", "'[2]'", T=T),  # m015's action
    f"update share_links set revoked = {T}",  # m023: a link gets revoked, once
    f"insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, created, campaign) "
    f"values (1, 2, 1, 'cot', 'rat', 'ann', {T}, 'c')",  # m017's column
]


def lite_refusal(lite: sqlite3.Connection, sql: str) -> str:
    """SQLite's message refusing ``sql`` (nothing is written)."""
    try:
        with pytest.raises(sqlite3.IntegrityError) as exc:
            lite.execute(sql)
    finally:
        lite.rollback()
    return str(exc.value)


def pg_refusal(pg: psycopg.Connection, sql: str, error: type[psycopg.Error] = psycopg.IntegrityError) -> str:
    """PostgreSQL's message refusing ``sql`` with ``error`` (nothing is written)."""
    with pytest.raises(error) as exc:
        with pg.transaction():
            pg.execute(sql)
    return exc.value.diag.message_primary


def sqlite_triggers(lite: sqlite3.Connection) -> set[str]:
    return {r[0] for r in lite.execute("select name from sqlite_master where type = 'trigger'")}


def test_every_migration_has_a_postgresql_script_in_order():
    assert list(PG) == [name for name, _ in MIGRATIONS]
    assert all(script.strip() for script in PG.values())


def test_every_sqlite_trigger_is_tested_and_exists_on_postgresql(pair):
    lite, pg = pair
    triggers = sqlite_triggers(lite)
    assert {case.trigger for case in REFUSALS} | set(SKIPPED) | FTS_TRIGGERS == triggers
    on_pg = {r[0] for r in pg.execute("select distinct trigger_name from information_schema.triggers")}
    assert triggers - on_pg == {"procedures_fts_delete"}, "on PostgreSQL that one is the foreign key's cascade"


@pytest.mark.parametrize("case", REFUSALS, ids=str)
def test_postgresql_refuses_what_a_sqlite_trigger_refuses_with_its_message(pair, case):
    lite, pg = pair
    message = lite_refusal(lite, case.sql)
    assert case.words in message, f"{case.sql} is refused by another rule than {case.trigger}: {message}"
    assert pg_refusal(pg, case.sql) == message


@pytest.mark.parametrize("sql", CHECKS)
def test_postgresql_refuses_what_a_sqlite_check_refuses(pair, sql):
    lite, pg = pair
    assert "CHECK constraint failed" in lite_refusal(lite, sql)
    assert "violates check constraint" in pg_refusal(pg, sql, psycopg.errors.CheckViolation)


@pytest.mark.parametrize("sql", ALLOWED)
def test_postgresql_allows_what_sqlite_allows(pair, sql):
    lite, pg = pair
    try:
        assert lite.execute(sql).rowcount == 1
    finally:
        lite.rollback()
    with pg.transaction(force_rollback=True):
        assert pg.execute(sql).rowcount == 1


def test_a_second_output_of_a_runs_version_is_skipped_on_both(pair):
    lite, pg = pair
    skipped, stored = SKIPPED["outputs_append_only_run"], OUTPUT_OF_RUN.format(version=1)
    try:
        assert [lite.execute(sql).rowcount for sql in (skipped, stored)] == [0, 1]
    finally:
        lite.rollback()
    with pg.transaction(force_rollback=True):
        assert [pg.execute(sql).rowcount for sql in (skipped, stored)] == [0, 1]


def _pg_type(declared: str) -> str:
    """The PostgreSQL type of SQLite's declared column type."""
    return {"INTEGER": "bigint", "TEXT": "text", "REAL": "double precision", "FLOAT": "double precision"}[
        declared.upper()]


def _default(value: str | None) -> str | None:
    """A column default without PostgreSQL's cast (``'[]'::text`` is ``'[]'``)."""
    return None if value is None else re.sub(r"::[a-z ]+$", "", value)


def sqlite_columns(lite: sqlite3.Connection) -> dict[str, set[tuple]]:
    """Each table's columns (name, PostgreSQL type, not null, default), less SQLite's internals,
    FTS5's tables (virtual and shadow) and ``_migrations`` (made by the apply code)."""
    rows = lite.execute("select name, sql from sqlite_master where type = 'table'").fetchall()
    fts = [name for name, sql in rows if sql.upper().startswith("CREATE VIRTUAL TABLE")]
    tables = [name for name, _ in rows if not name.startswith(("sqlite_", "_migrations", *fts))]
    return {table: {(c[1], _pg_type(c[2]), bool(c[3]) or bool(c[5]), c[4])
                    for c in lite.execute(f"pragma table_info({table})")} for table in tables}


def pg_columns(pg: psycopg.Connection) -> dict[str, set[tuple]]:
    """Each table's columns (name, type, not null, default) on PostgreSQL."""
    tables: dict[str, set[tuple]] = {}
    for table, column, type_, nullable, default in pg.execute(
            "select table_name, column_name, data_type, is_nullable, column_default "
            "from information_schema.columns where table_schema = 'public'"):
        tables.setdefault(table, set()).add((column, type_, nullable == "NO", _default(default)))
    return tables


def test_postgresql_has_sqlites_tables_and_columns(pair):
    lite, pg = pair
    on_pg = pg_columns(pg)
    for table, columns in sqlite_columns(lite).items():
        assert {c[0] for c in on_pg.get(table, ())} == {c[0] for c in columns}, table
    assert len(on_pg) > 10 and set(on_pg) - set(sqlite_columns(lite)) == {"procedures_fts"}


def test_postgresql_columns_have_sqlites_types_not_null_and_defaults(pair):
    """A primary key is not null on PostgreSQL whatever SQLite's table_info says of it."""
    lite, pg = pair
    on_pg = pg_columns(pg)
    for table, columns in sqlite_columns(lite).items():
        assert on_pg[table] == columns, table


def test_postgresql_fts_table_is_what_the_schema_guard_finds(pair):
    _, pg = pair
    assert {c[0] for c in pg_columns(pg)["procedures_fts"]} == {"rowid", "document"}


def test_postgresql_has_sqlites_foreign_keys(pair):
    lite, pg = pair
    tables = sqlite_columns(lite)
    expected = {(table, fk[3], fk[2], fk[4]) for table in tables
                for fk in lite.execute(f"pragma foreign_key_list({table})")}
    found = set(pg.execute(
        "select c.relname, a.attname, r.relname, ra.attname from pg_constraint k "
        "join pg_class c on c.oid = k.conrelid join pg_class r on r.oid = k.confrelid "
        "join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1] "
        "join pg_attribute ra on ra.attrelid = k.confrelid and ra.attnum = k.confkey[1] "
        "where k.contype = 'f' and c.relname != 'procedures_fts'").fetchall())
    assert len(expected) > 10 and found == expected


def test_postgresql_has_sqlites_named_indexes(pair):
    lite, pg = pair
    named = {r[0] for r in lite.execute("select name from sqlite_master where type = 'index' and sql is not null")}
    expected = {(name, bool(next(i[2] for i in lite.execute(f"pragma index_list({table})") if i[1] == name)))
                for name, table in lite.execute("select name, tbl_name from sqlite_master where type = 'index'")
                if name in named}
    found = {(r[0], r[1]) for r in pg.execute(
        "select c.relname, i.indisunique from pg_index i join pg_class c on c.oid = i.indexrelid "
        "join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'")}
    assert len(expected) > 10 and expected <= found


@pytest.mark.parametrize("stamp", [
    "2026-01-01T00:00:00.000+00:00",
    "2026-11-26T06:12:00.123+02:00",
    "2026-11-26T06:12:00.123456+00:00",
    "2026-03-04 05:06:07",
    "not a time",
])
def test_julianday_is_sqlites(pg_url, stamp):
    with migrate(pg_url) as pg:
        got = pg.execute("select julianday(%s)", [stamp]).fetchone()[0]
    want = sqlite3.connect(":memory:").execute("select julianday(?)", [stamp]).fetchone()[0]
    if want is None:
        assert got is None
    else:  # SQLite keeps milliseconds, PostgreSQL microseconds
        assert got == pytest.approx(want, rel=0, abs=1e-8)


def test_julianday_of_midnight_is_exact(pg_url):
    stamp = "2026-01-01T00:00:00.000+00:00"
    with migrate(pg_url) as pg:
        got = pg.execute("select julianday(%s)", [stamp]).fetchone()[0]
    assert got == sqlite3.connect(":memory:").execute("select julianday(?)", [stamp]).fetchone()[0]


@pytest.mark.parametrize("sql", ["select min(7, 3), max(7, 3)", "select min(id), max(id) from gold_pairs"])
def test_min_and_max_of_two_ids_are_sqlites(pair, sql):
    lite, pg = pair
    assert pg.execute(sql).fetchone() == lite.execute(sql).fetchone()


class PgStore:
    """What data.procedures reads of a Store, on PostgreSQL through psycopg (``?`` as ``%s``):
    enough to run :func:`data.procedures.search` until the lead's adapter lands."""

    dialect = "postgresql"
    path = "the test database"

    def __init__(self, conn: psycopg.Connection) -> None:
        self.db = self
        self.conn = conn

    def query(self, sql: str, params: list) -> list[dict]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql.replace("?", "%s"), params).fetchall()


def add(pg: psycopg.Connection, input: str, output: str, steps: list[str]) -> int:
    return pg.execute(
        "insert into procedures (input, output, steps, source, digest, created) "
        "values (%s, %s, %s, 'manual', %s, 'now') returning id",
        [input, output, json.dumps(steps), procedures.digest(input, output, steps)]).fetchone()[0]


def test_procedure_search_on_postgresql_ranks_and_decodes(pg_url):
    with migrate(pg_url) as pg:
        owls = add(pg, "How do owls hunt?", "At night.", ["Find owl papers", "Summarise the hunting"])
        bats = add(pg, "How do bats fly?", "With wings.", ["Read about bats"])
        both = add(pg, "Owls and bats", "Both hunt at night.", ["Compare owls with bats"])
        store = PgStore(pg)
        found = procedures.search(store, "owls hunting", 5)
        assert [r["id"] for r in found] == [owls, both], "stemmed: hunting finds hunt; bats alone shares no word"
        assert found[0]["steps"] == ["Find owl papers", "Summarise the hunting"]
        assert all(r["score"] > 0 for r in found) and found[0]["score"] >= found[1]["score"]
        assert [r["id"] for r in procedures.search(store, 'C++ "bats" NEAR(', 1)] == [bats]
        assert procedures.search(store, "the of", 5) == [], "only stop words: no word to match"
        assert bats not in [r["id"] for r in procedures.search(store, "owls", 5)]


def test_procedure_search_follows_the_table(pg_url):
    """SQLite's procedures_fts_insert, _update and _delete: the index holds what the table holds."""
    with migrate(pg_url) as pg:
        store = PgStore(pg)
        first = add(pg, "Plan a garden", "Beds.", ["Measure the plot"])
        assert [r["id"] for r in procedures.search(store, "plot", 5)] == [first]
        pg.execute("update procedures set steps = %s where id = %s", ['["Dig the soil"]', first])
        assert procedures.search(store, "plot", 5) == []
        assert [r["id"] for r in procedures.search(store, "digging soil", 5)] == [first]
        pg.execute("delete from procedures where id = %s", [first])
        assert procedures.search(store, "soil", 5) == []
        assert pg.execute("select count(*) from procedures_fts").fetchone()[0] == 0
