"""Procedure memory queries (AAG, paper 002): the only SQL of the ``procedures`` table (schema in
migration ``m003_procedures``) and of its FTS5 index ``procedures_fts`` (migration
``m004_procedures_fts``, kept in step with the table by triggers). A procedure is an input, an
output and a list of steps.

Rows come back as dicts with ``steps`` decoded to a list of strings.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

from common.errors import StoreError
from data.fts import fts_query
from data.store import Store, now

SOURCES = ("run", "import", "task", "manual")


def digest(input: str, output: str, steps: list[str]) -> str:
    """What makes two procedures the same: their input, output and steps, exactly."""
    return hashlib.sha256(json.dumps([input, output, list(steps)], ensure_ascii=False).encode("utf-8")).hexdigest()


def add(store: Store, input: str, output: str, steps: list[str], *, source: str,
        run_id: str | None = None) -> tuple[int, bool]:
    """Store a procedure; returns its id and whether it is new (an identical one is not stored
    twice). Raises StoreError for an unknown source or when SQLite refuses the write."""
    if source not in SOURCES:
        raise StoreError(f"Unknown procedure source {source!r}: use one of {', '.join(SOURCES)}.")
    key = digest(input, output, steps)
    db = store.db
    try:
        with db.conn:
            row = db.execute("select id from procedures where digest = ?", [key]).fetchone()
            if row:
                return row[0], False
            cur = db.execute(
                "insert into procedures (input, output, steps, source, run_id, digest, created) "
                "values (?, ?, ?, ?, ?, ?, ?)",
                [input, output, json.dumps(list(steps), ensure_ascii=False), source, run_id, key, now()],
            )
    except sqlite3.Error as exc:
        raise StoreError(f"Could not store the procedure: {exc}.") from exc
    return cur.lastrowid, True


def all_procedures(store: Store) -> list[dict]:
    """Every procedure, oldest first."""
    return [_decode(r) for r in store.db.query("select * from procedures order by id")]


def list_procedures(store: Store, *, limit: int = 50, offset: int = 0) -> list[dict]:
    """The newest procedures first."""
    return [_decode(r) for r in store.db.query("select * from procedures order by id desc limit ? offset ?",
                                               [limit, offset])]


def get(store: Store, procedure_id: int) -> dict:
    """Raises StoreError when there is no such procedure."""
    rows = list(store.db.query("select * from procedures where id = ?", [procedure_id]))
    if not rows:
        raise StoreError(f"No procedure {procedure_id} in {store.path}. `python app.py procedures list` lists them.")
    return _decode(rows[0])


def count(store: Store) -> int:
    """How many procedures are stored."""
    return store.db.execute("select count(*) from procedures").fetchone()[0]


def search(store: Store, query: str, k: int) -> list[dict]:
    """The ``k`` procedures that best match ``query`` by BM25 over their input, output and
    steps (FTS5, Porter stemming), best first, each with ``score`` (higher is better, always
    above zero). Any text is accepted: it is reduced to quoted words OR-ed together (see
    :func:`data.fts.fts_query`); a procedure sharing no word with it is not returned, and a
    query without a word returns []. Ties keep the oldest first.

    Raises StoreError when the index cannot be read."""
    match = fts_query(query)
    if not match or k < 1:
        return []
    sql = """select procedures.*, -bm25(procedures_fts) as score
             from procedures_fts join procedures on procedures.id = procedures_fts.rowid
             where procedures_fts match ?
             order by bm25(procedures_fts), procedures.id
             limit ?"""
    try:
        return [_decode(r) for r in store.db.query(sql, [match, k])]
    except sqlite3.Error as exc:
        raise StoreError(f"Could not search the procedure memory in {store.path}: {exc}.") from exc


def _decode(row: dict) -> dict:
    row["steps"] = json.loads(row.get("steps") or "[]")
    return row
