"""The two databases RAT Studio stores in, behind one small surface.

SQLite is the embedded default: a ``sqlite_utils.Database`` per thread (``data.store.Store``).
PostgreSQL is the server database for several app processes (``--db postgresql://...``), reached
through psycopg 3. ``PgDatabase`` offers the part of sqlite_utils' surface that data/ uses
(``execute``, ``query``, ``table_names``, ``db[table].insert / update / upsert``, ``db.conn``
as a transaction context), so each query of data/ is written once, in the SQL both databases
speak, with ``?`` placeholders; ``translate`` turns a statement into PostgreSQL's form:

- ``?`` becomes ``%s`` and a literal ``%`` becomes ``%%`` (psycopg's placeholders);
- ``insert or ignore into ...`` becomes ``insert into ... on conflict do nothing``;
- an insert into a table with an ``id`` column returns it, read as ``cursor.lastrowid``.

What is not the same SQL on both is chosen by ``dialect`` where it is written (full-text search,
the schema's DDL: ``data.dialect``); ``julianday`` is a function the schema defines on
PostgreSQL. Values read come back as SQLite gives them: a ``numeric`` (PostgreSQL's sum of
bigints, its avg) as an int when whole, else a float; a bool parameter is stored as 0 or 1.

Errors of either database are ``DatabaseError``; a refused write (a constraint, or a trigger of
an append-only table) is ``IntegrityError``: catch these tuples, not one driver's classes.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg.errors
from psycopg import adapt
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row

from common.errors import ConfigError

SQLITE, POSTGRESQL = "sqlite", "postgresql"
SERVER_SCHEMES = ("postgresql", "postgres")
#: What either database raises; what either raises for a refused write.
DatabaseError: tuple[type[BaseException], ...] = (sqlite3.Error, psycopg.Error)
IntegrityError: tuple[type[BaseException], ...] = (sqlite3.IntegrityError, psycopg.errors.IntegrityError,
                                                   psycopg.errors.RaiseException)
#: The advisory lock every write transaction on PostgreSQL takes first: writers take turns, as
#: SQLite's ``begin immediate`` makes them, across every process on the database.
WRITE_LOCK = 0x5241_5453  # "RATS"
#: The space of the advisory locks a keyed write transaction takes, one per key (two-int locks:
#: apart from WRITE_LOCK's one-bigint lock).
KEY_LOCKS = 0x5241_544B  # "RATK"


def server_url(text: str) -> str | None:
    """``text`` when it is a PostgreSQL URL, None when it is a file path. Raises ConfigError for
    a URL of another database server (it names the ones this version speaks)."""
    scheme = urlsplit(str(text)).scheme.lower() if "://" in str(text) else ""
    if not scheme:
        return None
    if scheme in SERVER_SCHEMES:
        return str(text)
    raise ConfigError(f"--db {mask(str(text))} is a {scheme} URL; this version stores in a SQLite file "
                      "(give a file path) or in PostgreSQL (give a postgresql://user@host:port/database URL).")


def mask(url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


_INSERT = re.compile(r"^\s*insert\s+(or\s+ignore\s+)?into\s+(\w+)", re.IGNORECASE)
_RETURNING = re.compile(r"\breturning\b", re.IGNORECASE)


@functools.lru_cache(maxsize=2048)
def translate(sql: str, id_tables: frozenset[str] = frozenset()) -> tuple[str, bool]:
    """PostgreSQL's form of a statement written for both databases, and whether it returns the
    id of the row it inserts (an insert into one of ``id_tables`` with no ``returning`` of its
    own). See the module's docstring for what changes."""
    out, quote = [], ""
    for ch in sql:
        if quote:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        else:
            out.append("%s" if ch == "?" else "%%" if ch == "%" else ch)
    text = "".join(out)
    insert = _INSERT.match(text)
    returns_id = False
    if insert:
        if insert.group(1):
            text = text[:insert.start(1)] + text[insert.end(1):]
            text = text.rstrip().rstrip(";") + " on conflict do nothing"
        if insert.group(2).lower() in id_tables and not _RETURNING.search(text):
            text = text.rstrip().rstrip(";") + " returning id"
            returns_id = True
    return text, returns_id


class _Number(adapt.Loader):
    """PostgreSQL's ``numeric`` read as SQLite gives numbers: an int when whole, else a float."""

    def load(self, data: Any) -> int | float:
        value = Decimal(bytes(data).decode())
        return int(value) if value == value.to_integral_value() else float(value)


class _BoolAsInt(adapt.Dumper):
    """A bool parameter as 0 or 1: the schema's flags are integers, as in SQLite."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: bool) -> bytes:
        return b"1" if obj else b"0"


def _writes(text: str) -> bool:
    """Whether a statement may change rows (anything but a select)."""
    return text.lstrip()[:6].lower() != "select"


class PgCursor:
    """A cursor that reads like sqlite3's: fetchone, fetchall, iteration, rowcount, lastrowid."""

    def __init__(self, cursor: psycopg.Cursor, returns_id: bool):
        self._cursor = cursor
        self.lastrowid: int | None = None
        if returns_id:
            rows = cursor.fetchall()
            self.lastrowid = rows[-1][0] if rows else None

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)


class PgConnection:
    """The part of sqlite3.Connection that data/ uses: ``execute``, ``executemany``, ``commit``,
    ``rollback``, ``in_transaction``, and ``with conn:`` as one transaction (committed when the
    block ends, rolled back when it raises; a block inside another joins it)."""

    def __init__(self, raw: psycopg.Connection, id_tables: frozenset[str]):
        self.raw = raw
        self.id_tables = id_tables
        self._depth = 0
        self._lock_at_write = False  # a keyed write transaction that has not written yet

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        return self._run(sql, params, commit=False)

    def execute_and_commit(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """The transaction's last statement and its commit in one round trip (with the writers'
        lock first, when the transaction has not taken it yet): the lock is then held only inside
        the server, never while a reply travels to this process and waits for its turn at Python."""
        return self._run(sql, params, commit=True)

    def _run(self, sql: str, params: Sequence[Any] | None, *, commit: bool) -> PgCursor:
        """One statement (then ``commit``), in one round trip with the writers' lock when it is
        a keyed transaction's first write (``begin_writing``)."""
        text, returns_id = translate(sql, self.id_tables)
        lock = self._lock_at_write and (commit or _writes(text))
        if lock:
            self._lock_at_write = False
            text = f"select pg_advisory_xact_lock({WRITE_LOCK}); {text}"
        cursor = self.raw.execute(f"{text}; commit" if commit else text, list(params or ()))
        if lock:
            cursor.nextset()  # to the statement's own result
        return PgCursor(cursor, returns_id)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        text, _ = translate(sql, frozenset())
        if self._lock_at_write:
            self._lock_at_write = False
            self.raw.execute(f"select pg_advisory_xact_lock({WRITE_LOCK})")
        with self.raw.cursor() as cur:
            cur.executemany(text, [list(r) for r in rows])

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def begin(self) -> None:
        if not self.in_transaction:
            self.raw.execute("begin")

    def begin_writing(self, keys: Sequence[str] | None = None) -> None:
        """Begin a write transaction, in one round trip to the server.

        ``keys`` None: it holds the writers' lock (WRITE_LOCK) from its start, so whatever it reads
        stays as read until it commits, in every process (SQLite's ``begin immediate``).

        ``keys`` given: what it reads depends only on these keys (e.g. one annotator's votes). It
        holds a lock of its own for each key from its start, and takes the writers' lock with its
        first write, in that write's round trip, until it commits. Writers still commit ids in the
        order they take them (readers of "rows after the last id seen" miss none); a writer about
        other keys waits only for this one's writes, not for its reads. (Key locks are taken
        sorted, and the writers' lock after them: no two transactions wait on each other.)"""
        if keys is None:
            self.raw.execute(f"begin; select pg_advisory_xact_lock({WRITE_LOCK})")
            return
        names = sorted(set(keys))
        self.raw.execute("begin;" + "".join(f" select pg_advisory_xact_lock({KEY_LOCKS}, hashtext(%s));"
                                            for _ in names), names)
        self._lock_at_write = True

    def commit(self) -> None:
        self._lock_at_write = False
        if self.in_transaction:
            self.raw.execute("commit")

    def rollback(self) -> None:
        self._lock_at_write = False
        if self.in_transaction:
            self.raw.execute("rollback")

    def __enter__(self) -> PgConnection:
        if self._depth == 0:
            self.begin()
        self._depth += 1
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            if kind is None:
                self.commit()
            else:
                self.rollback()

    def close(self) -> None:
        self.raw.close()

    @property
    def closed(self) -> bool:
        return self.raw.closed


class PgTable:
    """``db[table]``: insert, update by primary key, upsert; as sqlite_utils does them."""

    def __init__(self, db: PgDatabase, name: str):
        self.db, self.name = db, name
        self.last_pk: Any = None

    def insert(self, record: dict[str, Any]) -> PgTable:
        columns = list(record)
        cur = self.db.execute(f"insert into {self.name} ({', '.join(columns)}) values "
                              f"({', '.join('?' for _ in columns)})", [record[c] for c in columns])
        self.last_pk = cur.lastrowid
        return self

    def update(self, pk_value: Any, changes: dict[str, Any]) -> PgTable:
        if changes:
            sets = ", ".join(f"{c} = ?" for c in changes)
            self.db.execute(f"update {self.name} set {sets} where id = ?", [*changes.values(), pk_value])
        return self

    def upsert(self, record: dict[str, Any], *, pk: str | Sequence[str]) -> PgTable:
        keys = [pk] if isinstance(pk, str) else list(pk)
        columns = list(record)
        rest = [c for c in columns if c not in keys]
        action = f"do update set {', '.join(f'{c} = excluded.{c}' for c in rest)}" if rest else "do nothing"
        self.db.execute(f"insert into {self.name} ({', '.join(columns)}) values ({', '.join('?' for _ in columns)}) "
                        f"on conflict ({', '.join(keys)}) {action}", [record[c] for c in columns])
        return self


class PgDatabase:
    """One thread's connection to PostgreSQL, used as data/ uses a sqlite_utils.Database.
    Raises psycopg.Error (a ``DatabaseError``) when the server cannot be reached."""

    dialect = POSTGRESQL

    def __init__(self, url: str, *, writer: threading.RLock | None = None, connect_timeout: float = 10):
        # parameters bound on the client, as SQLite binds them: "? is null" needs no type
        raw = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout)),
                              cursor_factory=psycopg.ClientCursor)
        raw.adapters.register_loader("numeric", _Number)
        raw.adapters.register_dumper(bool, _BoolAsInt)
        self.conn = PgConnection(raw, frozenset())
        self.writer = writer
        self.refresh_tables()

    def refresh_tables(self) -> None:
        """Learn which tables have an ``id`` column (an insert into them returns it); after a
        migration, which may add some."""
        rows = self.conn.raw.execute(
            "select table_name from information_schema.columns where column_name = 'id' "
            "and table_schema = current_schema()").fetchall()
        self.conn.id_tables = frozenset(r[0] for r in rows)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> Iterator[dict[str, Any]]:
        text, _ = translate(sql, frozenset())
        with self.conn.raw.cursor(row_factory=dict_row) as cur:
            yield from cur.execute(text, list(params or ()))

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.raw.execute(
            "select table_name from information_schema.tables where table_schema = current_schema()").fetchall()]

    def __getitem__(self, table: str) -> PgTable:
        return PgTable(self, table)

    def close(self) -> None:
        self.conn.close()

    @property
    def closed(self) -> bool:
        return self.conn.closed
