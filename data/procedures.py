"""Procedure memory queries (AAG, paper 002): the only SQL of the ``procedures`` table (schema in
migration ``m003_procedures``) and of its full-text index ``procedures_fts`` (migration
``m004_procedures_fts``, kept in step with the table by triggers: FTS5 on SQLite, a tsvector
with a GIN index on PostgreSQL). A procedure is an input, an output and a list of steps.

Rows come back as dicts with ``steps`` decoded to a list of strings.
"""

from __future__ import annotations

import hashlib
import json

from common.errors import StoreError
from data import sql
from data.fts import fts_query
from data.store import Store, now

SOURCES = ("run", "import", "task", "manual")

#: The search of :func:`search` by the store's dialect, with the FTS query (``fts_query``) and
#: ``k`` as parameters. PostgreSQL's ``procedures_fts`` (data.dialect's FullText, m004) holds each
#: procedure's ``document``, a tsvector; ``websearch_to_tsquery`` reads the quoted, OR-ed words.
SEARCH = {
    "sqlite": """select procedures.*, -bm25(procedures_fts) as score
             from procedures_fts join procedures on procedures.id = procedures_fts.rowid
             where procedures_fts match ?
             order by bm25(procedures_fts), procedures.id
             limit ?""",
    "postgresql": """select procedures.*, ts_rank(f.document, q.query)::double precision as score
             from procedures_fts f join procedures on procedures.id = f.rowid
             cross join websearch_to_tsquery('english', ?) as q(query)
             where f.document @@ q.query
             order by score desc, procedures.id
             limit ?""",
}


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
    except sql.DatabaseError as exc:
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
    """The ``k`` procedures that best match ``query`` over their input, output and steps, best
    first, each with ``score`` (higher is better, always above zero): BM25 of FTS5 with Porter
    stemming on SQLite, ``ts_rank`` with English stemming on PostgreSQL (:data:`SEARCH`). Any
    text is accepted: it is reduced to quoted words OR-ed together (see
    :func:`data.fts.fts_query`); a procedure sharing no word with it is not returned, and a
    query without a word returns []. Ties keep the oldest first.

    Raises StoreError when the index cannot be read."""
    match = fts_query(query)
    if not match or k < 1:
        return []
    statement = SEARCH[store.dialect]
    try:
        return [_decode(r) for r in store.db.query(statement, [match, k])]
    except sql.DatabaseError as exc:
        raise StoreError(f"Could not search the procedure memory in {store.path}: {exc}.") from exc


def _decode(row: dict) -> dict:
    row["steps"] = json.loads(row.get("steps") or "[]")
    return row
