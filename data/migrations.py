"""Schema migrations, applied in order at start: those of ``data.schema``, each made on the
database's dialect by ``data.dialect``; the names of applied ones are kept in ``_migrations``.
Each is one transaction, landing whole or not at all; on PostgreSQL, two processes starting at
once take turns on an advisory lock.

Before applying anything, ``apply`` refuses a file it must not write to: one written by a newer
version (a migration it does not know) or one that is not ours (tables it needs are missing or
are something else), with a message that names the file and what to do."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from common.errors import StoreError
from data.dialect import POSTGRESQL, SQLITE, FullText, Step, Table, script, statements
from data.schema import SCHEMA


def run(steps: tuple[Step, ...], db: sqlite_utils.Database) -> None:
    """Make ``steps`` on ``db`` (a ``data.sql.PgDatabase`` on PostgreSQL), in the transaction open
    or in one of their own (Python's sqlite3 runs DDL outside any transaction unless one is open)."""
    if getattr(db, "dialect", SQLITE) == POSTGRESQL:
        db.conn.raw.execute(script(steps))
        return
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements(steps, SQLITE):
        db.execute(sql)


#: Each migration's name and the function that applies it to a database.
MIGRATIONS: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = [
    (name, functools.partial(run, steps)) for name, steps in SCHEMA]

#: The tables each migration creates, to tell a database of ours from a foreign one.
TABLES = {name: made for name, steps in SCHEMA
          if (made := tuple(step.name for step in steps if isinstance(step, Table | FullText)))}


def apply(db: sqlite_utils.Database, path: str | Path = "the database") -> list[str]:
    """Apply the migrations not yet applied; returns their names. Raises StoreError, naming
    ``path``, for a database of a newer version or a foreign one (see :func:`check`)."""
    server = getattr(db, "dialect", SQLITE) == POSTGRESQL
    if server:
        with db.conn:  # two processes may start on a new database at once: read it while none migrates
            db.execute("select pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            check(db, path)
            db.execute("create table if not exists _migrations (name text primary key, applied text)")
    else:
        with db.conn:  # one snapshot: another process may commit a migration between two reads
            if not db.conn.in_transaction:
                db.execute("begin")
            check(db, path)
        db.execute("create table if not exists _migrations (name text primary key, applied text)")
    done = {row[0] for row in db.execute("select name from _migrations").fetchall()}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db.conn:  # one transaction per migration: it lands whole or not at all
            if server:
                db.execute("select pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            elif not db.conn.in_transaction:
                db.execute("begin immediate")  # the write lock first: two processes may open a new file
            if db.execute("select 1 from _migrations where name = ?", [name]).fetchone():
                continue  # another process applied it while we waited for the lock
            fn(db)
            db.execute(
                "insert into _migrations (name, applied) values (?, ?)",
                [name, datetime.now(UTC).isoformat()],
            )
        applied.append(name)
    if server and applied:
        db.refresh_tables()  # inserts into the new tables return their ids
    return applied


_MIGRATION_LOCK = 0x5241_544D  # "RATM": PostgreSQL's advisory lock for applying migrations


def check(db: sqlite_utils.Database, path: str | Path = "the database") -> None:
    """Raises StoreError when the file at ``path`` must not be migrated or written: it lists
    migrations this version does not know (a newer RAT Studio wrote it), or it is not a RAT
    Studio database (it has tables but no migration record, or a table a recorded migration
    made is missing)."""
    tables = set(db.table_names())
    known = [name for name, _ in MIGRATIONS]
    if "_migrations" not in tables:
        if tables:
            raise StoreError(f"{path} is not a RAT Studio database (it holds other tables: "
                             f"{', '.join(sorted(tables)[:5])}). Pass another file with --db or RAT_STUDIO_DB.")
        return
    done = [row[0] for row in db.execute("select name from _migrations order by name").fetchall()]
    unknown = [name for name in done if name not in known]
    if unknown:
        raise StoreError(f"{path} was written by a newer version of RAT Studio (migrations "
                         f"{', '.join(unknown)} are unknown here). Upgrade RAT Studio, or pass another "
                         "file with --db or RAT_STUDIO_DB.")
    missing = [table for name in done for table in TABLES.get(name, ()) if table not in tables]
    if missing:
        raise StoreError(f"{path} is not a RAT Studio database as this version writes it (tables "
                         f"{', '.join(missing)} are missing). Pass another file with --db or RAT_STUDIO_DB, "
                         "or restore the file from a backup.")
