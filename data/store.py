"""The one SQLite file: tasks, runs, their events, and the page and search caches.

A ``sqlite_utils.Database`` must not cross threads, so ``Store`` keeps one connection per
thread (Gradio handlers run in worker threads; the runner in the event loop's thread). The file
is in WAL mode so readers never block the writer; a write waits up to ``busy_timeout`` seconds
(``BUSY_SECONDS``) for another writer's lock. The WAL is folded back into the file and emptied
every ``CHECKPOINT_EVERY`` events (when no reader holds it) and when the store closes.

What sqlite (or the file system) raises is mapped at this boundary, in every public method, to
one of ours, whose message names the cause and the fix: ``StoreBusy`` (still locked after the
wait), ``StoreFull`` (the disk is full) or ``StoreError``; a failed write is rolled back whole
(an event and its run's row are one transaction), and the message of a write for a run says how
to continue it (``python app.py resume RUN``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import sqlite_utils

from common.errors import ConfigError, RunLive, RunNotFound, StoreBusy, StoreError, StoreFull
from common.events import Event, event_from_dict
from common.types import RunStatus
from data import migrations, sql


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


HEARTBEAT_SECONDS = 5.0  # how often a runner says it is alive
BUSY_SECONDS = 30.0  # how long a write waits for another writer's lock before it gives up
CHECKPOINT_EVERY = 500  # events stored between two checkpoints of the WAL
CHECKPOINT_SECONDS = 60.0  # a write at least this long after the last checkpoint checkpoints the WAL first
WAL_LIMIT_BYTES = 4 << 20  # a WAL emptied by a checkpoint is cut back to this size (journal_size_limit)
STALE_SECONDS = 30.0  # a runner not heard from for this long is gone
MIN_RUN_PREFIX = 4  # the fewest first characters of a run id that name it (Store.resolve_run_id)
HOST = socket.gethostname()

log = logging.getLogger(__name__)


def new_owner() -> str:
    """A runner's identity: this host, this process, and a token of its own (two runners in
    one process are two owners)."""
    return f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_alive(owner: str, heartbeat: str, *, stale_after: float = STALE_SECONDS) -> bool:
    """True when the runner ``owner`` may still be driving its run: it was heard from less than
    ``stale_after`` seconds ago and, when it runs on this host, its process exists."""
    if not owner or _age(heartbeat) > stale_after:
        return False
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host == HOST and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, as another user
            return True
    return True


def describe_owner(owner: str, heartbeat: str) -> str:
    """ "process 1234 on host-a (heard from 2 s ago)" """
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    where = "this process" if host == HOST and pid == str(os.getpid()) else f"process {pid} on {host}"
    return f"{where} (heard from {_age(heartbeat):.0f} s ago)"


def _age(stamp: str) -> float:
    """Seconds since an ISO time stamp (infinite for none or a bad one)."""
    try:
        return (datetime.now(UTC) - datetime.fromisoformat(stamp)).total_seconds()
    except (TypeError, ValueError):
        return float("inf")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class EventRow(NamedTuple):
    seq: int
    type: str
    ts: str  # ISO time stamp of when it was stored


@dataclass(frozen=True)
class TaskRow:
    id: int
    prompt: str
    kind: str = "writing"
    task_set: str = ""
    meta: dict = field(default_factory=dict)  # e.g. a task set's id and gold answers
    created: str = ""


@dataclass(frozen=True)
class RunRow:
    """A run as stored, with its task's prompt, kind and set."""

    id: str
    task_id: int
    method: str
    status: RunStatus
    task: str = ""  # the task's prompt
    kind: str = "writing"
    task_set: str = ""
    settings: dict = field(default_factory=dict)  # model, search providers, k, params... as run
    final_text: str = ""
    sources: list = field(default_factory=list)  # the Final's sources, as dicts
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    tokens_by_role: dict = field(default_factory=dict)  # role -> {"prompt", "completion", "calls"}
    llm_seconds: float = 0.0
    search_seconds: float = 0.0
    fetch_seconds: float = 0.0
    wall_seconds: float = 0.0
    steps_done: int = 0
    steps_total: int = 0
    steps_sourced: int = 0  # steps whose text was checked against a page that was read
    steps_guarded: int = 0  # revisions refused by the guards (the text was kept)
    sentences: int = 0  # the finished article's sentences (0: not counted, e.g. stored before citations)
    sentences_cited: int = 0  # of them, supported by a source (they carry [n] marks)
    marks_removed: int = 0  # the model's own marks that named no passage of their step
    owner: str = ""  # the runner driving it, "host:pid:token" (see new_owner)
    heartbeat: str = ""  # when that runner was last heard from
    created: str = ""
    updated: str = ""
    finished: str = ""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict:
        """The row as JSON-friendly values (``history --json``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"status": str(self.status)}


_RUN_FIELDS = frozenset(f.name for f in fields(RunRow))

_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL = 5, 6, 13  # sqlite's primary result codes
_F = TypeVar("_F", bound=Callable[..., Any])


def store_error(path: Path | str, exc: BaseException, run_id: str | None = None, *,
                waited: float = BUSY_SECONDS) -> StoreError:
    """Our error for what sqlite, PostgreSQL or the file system raised on the database ``path``
    (a file, or a server's URL with its password masked): StoreFull (the disk is full), StoreBusy
    (still locked by another writer after ``waited`` seconds) or StoreError. Each names the cause
    and the fix; with ``run_id``, how to continue that run."""
    then = f"then continue the run: python app.py resume {run_id}" if run_id else "then try again"
    if isinstance(exc, sql.psycopg.Error):
        return _server_error(str(path), exc, then, waited)
    code = getattr(exc, "sqlite_errorcode", None)
    code = code & 0xFF if isinstance(code, int) else None
    text = str(exc) or type(exc).__name__
    if code == _SQLITE_FULL or "database or disk is full" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        return StoreFull(f"The disk holding the database {path} is full ({text}): free space on "
                         f"{path.parent} (or pass another --db), {then}.")
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in text:
        return StoreBusy(f"The database {path} stayed locked by another program for {waited:g} s ({text}): "
                         f"close what holds it (another RAT Studio writing to the same --db, a database "
                         f"browser), {then}.")
    return StoreError(f"The database {path} could not be used ({text}): check the file and the disk it is on, "
                      f"{then}.")


_PG_FULL = ("53100", "53200")  # disk_full, out_of_memory
_PG_BUSY = ("55P03", "40P01", "40001", "57014")  # lock not available, deadlock, serialization, timeout


def _server_error(url: str, exc: BaseException, then: str, waited: float) -> StoreError:
    """store_error for what PostgreSQL (or the way to it) raised."""
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if state in _PG_FULL:
        return StoreFull(f"The database server of {url} is out of space ({text}): free space on its disk, {then}.")
    if state in _PG_BUSY:
        return StoreBusy(f"The database {url} stayed locked by another writer for {waited:g} s ({text}): {then}.")
    if isinstance(exc, sql.psycopg.OperationalError) and not state:
        return StoreError(f"Cannot reach the database server {url} ({text}): start PostgreSQL, or pass another "
                          f"URL or a file path with --db or RAT_STUDIO_DB, {then}.")
    return StoreError(f"The database {url} could not be used ({text}): check the server's log, {then}.")


def _enable_wal(db: sqlite_utils.Database, timeout: float) -> None:
    """Turn a file to write-ahead logging. Several processes opening a new file at once each ask
    for it; SQLite answers "database is locked" at once, without waiting in its busy handler, to
    the one whose lock could deadlock another's, so that one tries again until ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def _mapped(method: _F) -> _F:
    """Map sqlite's and the file system's errors of a Store method to ours (``store_error``),
    after rolling back what its transaction had written; a method whose first argument is
    ``run_id`` names that run in the message."""
    names_run = method.__code__.co_varnames[1:2] == ("run_id",)

    @functools.wraps(method)
    def mapped(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (*sql.DatabaseError, OSError) as exc:
            self._roll_back()
            run_id = kwargs.get("run_id", args[0] if names_run and args else None)
            error = store_error(self.path, exc, run_id, waited=self.busy_timeout)
            self.refused(error)
            raise error from exc

    return mapped  # type: ignore[return-value]


class Store:
    """``path``: a SQLite file, or a PostgreSQL URL (``postgresql://user@host:port/database``;
    ``dialect`` says which). ``busy_timeout``: seconds a write waits for another writer's lock
    (then StoreBusy). Raises StoreError when the file cannot be opened or created (StoreFull when
    its disk is full) or the server cannot be reached; ConfigError for another database's URL."""

    def __init__(self, path: str | Path, *, busy_timeout: float = BUSY_SECONDS):
        self.url = sql.server_url(str(path))
        self.dialect = sql.POSTGRESQL if self.url else sql.SQLITE
        #: Where it is, for messages: the file, or the server's URL with its password masked.
        self.path: Path = Path(path) if self.url is None else sql.mask(self.url)  # type: ignore[assignment]
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._trails: dict[str, _Trail] = {}  # run id -> what its next StepRevised may be stored against
        self._trails_lock = threading.Lock()
        self._stored = 0  # events stored since the last checkpoint of the WAL
        self._stored_lock = threading.Lock()
        self._checkpointed = time.monotonic()  # when the WAL was last checkpointed (or this Store opened)
        self._full = False  # a write found the disk full, and no checkpoint has emptied the WAL since
        #: One write transaction of this Store's threads at a time (``write_transaction``): a thread
        #: that found SQLite's write lock taken would sleep in its busy handler (1, 2, 5, ... up to
        #: 100 ms a try) well past the moment the lock is free; waiting here wakes it at that moment.
        self._writer = threading.RLock()
        self._servers: list[sql.PgDatabase] = []  # every thread's connection to PostgreSQL
        self._servers_lock = threading.Lock()
        try:
            if self.url is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = self.db
            if self.url is None:
                _enable_wal(db, busy_timeout)
            migrations.apply(db, self.path)
        except (*sql.DatabaseError, OSError) as exc:
            error = store_error(self.path, exc, waited=busy_timeout)
            if isinstance(error, StoreFull | StoreBusy) or self.url:
                raise error from exc
            raise StoreError(
                f"Cannot open the database {self.path}: {exc}. Pass another path with --db or RAT_STUDIO_DB."
            ) from exc

    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's connection (a ``data.sql.PgDatabase`` on PostgreSQL)."""
        db = getattr(self._local, "db", None)
        if db is None or (self.url and db.closed):
            db = self._connect()
            self._local.db = db
        return db

    def _connect(self) -> sqlite_utils.Database:
        if self.url:
            server = sql.PgDatabase(self.url, writer=self._writer, connect_timeout=self.busy_timeout)
            with self._servers_lock:
                self._servers.append(server)
            return server  # type: ignore[return-value] (the same surface, see data.sql)
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout, check_same_thread=True)
        conn.execute(f"pragma busy_timeout = {int(self.busy_timeout * 1000)}")
        conn.execute("pragma foreign_keys = on")
        conn.execute(f"pragma journal_size_limit = {WAL_LIMIT_BYTES}")
        db = sqlite_utils.Database(conn)
        db.writer = self._writer  # type: ignore[attr-defined] (write_transaction takes it)
        db.dialect = sql.SQLITE  # type: ignore[attr-defined]
        db.owner = self  # type: ignore[attr-defined] (write_transaction tells it of writes and refusals)
        return db

    def close(self) -> None:
        """Close this thread's connection (it opens a new one if it goes on), after folding the
        WAL back into the file and emptying it (``checkpoint``; skipped, not waited for, while
        another connection reads)."""
        db = getattr(self._local, "db", None)
        if self.url:
            if db is not None:
                with self._servers_lock:
                    self._servers = [s for s in self._servers if s is not db]
                db.close()
                self._local.db = None
            return
        if db is not None:
            try:
                self.checkpoint()
            except StoreError:  # the file is busy or its disk full: the WAL stays, and is folded in later
                pass
            db.close()
            self._local.db = None

    def close_all(self) -> None:
        """Close every thread's connection to PostgreSQL (a thread that goes on opens a new one);
        on SQLite, this thread's (see ``close``)."""
        with self._servers_lock:
            servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        self.close()

    def checkpoint(self) -> tuple[int, int, int]:
        """Fold the WAL into the database file and truncate it (``wal_checkpoint(TRUNCATE)``),
        without waiting: when another connection is reading or writing, as much as can be is
        folded in now and the rest later. Returns sqlite's (busy, WAL pages, pages folded in);
        (0, 0, 0) on PostgreSQL, whose server does its own. Raises StoreError (StoreFull, ...)."""
        if self.url:
            return (0, 0, 0)
        conn = self.db.conn
        try:
            conn.execute("pragma busy_timeout = 0")
            try:
                return tuple(conn.execute("pragma wal_checkpoint(TRUNCATE)").fetchone())
            finally:
                conn.execute(f"pragma busy_timeout = {int(self.busy_timeout * 1000)}")
        except (sqlite3.Error, OSError) as exc:
            raise store_error(self.path, exc, waited=0) from exc

    def before_write(self) -> None:
        """Called before each write transaction (``write_transaction``), with this process's
        writer lock held: checkpoint the WAL, without waiting, when CHECKPOINT_SECONDS have passed
        since the last one, or while a write found the disk full and no checkpoint has emptied
        the WAL since: the space it holds is then given back as soon as the disk has room to fold
        it in (issue 38, item 4: a serving arena never truncated its WAL)."""
        if self.url or not (self._full or time.monotonic() - self._checkpointed >= CHECKPOINT_SECONDS):
            return
        self._checkpointed = time.monotonic()
        try:
            busy, wal, folded = self.checkpoint()
        except StoreError:  # still full, or busy: the write itself says so, if it fails too
            return
        if self._full and not busy and folded == wal:
            self._full = False
            log.info("The WAL of %s was folded back in and emptied after the disk had been full.", self.path)

    def refused(self, error: StoreError) -> None:
        """Called with each write's error: after StoreFull, the next writes checkpoint first
        (``before_write``)."""
        if isinstance(error, StoreFull):
            self._full = True

    def _roll_back(self) -> None:
        """Undo what this thread's open transaction wrote (a write that failed mid-way)."""
        db = getattr(self._local, "db", None)
        if db is not None and db.conn.in_transaction:
            try:
                db.conn.rollback()
            except sql.DatabaseError:  # the connection is gone: nothing of it was committed
                pass

    def _event_stored(self) -> None:
        """Count an event; every ``CHECKPOINT_EVERY`` events, checkpoint the WAL (without waiting)."""
        with self._stored_lock:
            self._stored += 1
            due = self._stored >= CHECKPOINT_EVERY
            if due:
                self._stored = 0
        if due:
            try:
                self.checkpoint()
            except StoreError:  # the next one will try again; the event itself is stored
                pass

    @contextmanager
    def exclusive(self, what: str, keys: Sequence[str] | None = None) -> Iterator[None]:
        """Reads and writes that must be one step for every process on the database (a campaign's
        pair chosen and started; a quota checked and the vote stored): one write transaction
        (``write_transaction``), which the data/ writes inside it join. ``keys``: what the reads
        depend on, when less than the whole database (``write_transaction``). Raises StoreError."""
        with write_transaction(self.db, what, keys):
            yield

    # -- tasks -----------------------------------------------------------------------------
    @_mapped
    def add_task(self, prompt: str, kind: str = "writing", task_set: str = "", meta: dict | None = None) -> int:
        """The id of the task with this prompt, kind and set; created if new."""
        db = self.db
        row = db.execute(
            "select id from tasks where prompt = ? and kind = ? and task_set = ?", [prompt, kind, task_set]
        ).fetchone()
        if row:
            return row[0]
        with db.conn:
            cur = db.execute(
                "insert into tasks (prompt, kind, task_set, meta, created) values (?, ?, ?, ?, ?)",
                [prompt, kind, task_set, _json(meta or {}), now()],
            )
        return cur.lastrowid

    @_mapped
    def get_task(self, task_id: int) -> TaskRow:
        """Raises StoreError for an unknown id."""
        rows = list(self.db.query("select * from tasks where id = ?", [task_id]))
        if not rows:
            raise StoreError(f"No task {task_id} in {self.path}.")
        row = rows[0]
        return TaskRow(id=row["id"], prompt=row["prompt"], kind=row["kind"], task_set=row["task_set"],
                       meta=json.loads(row["meta"] or "{}"), created=row["created"])

    # -- runs ------------------------------------------------------------------------------
    @_mapped
    def create_run(self, method: str, task_id: int, settings: dict, *, steps_total: int = 0, owner: str = "") -> str:
        """A new run, status running, driven by ``owner``."""
        run_id = uuid.uuid4().hex[:12]
        stamp = now()
        with self.db.conn:
            self.db["runs"].insert(
                {
                    "id": run_id, "task_id": task_id, "method": method, "settings": _json(settings),
                    "status": RunStatus.RUNNING.value, "final_text": "", "sources": "[]", "error": "",
                    "prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tokens_by_role": "{}",
                    "llm_seconds": 0.0, "search_seconds": 0.0, "fetch_seconds": 0.0, "wall_seconds": 0.0,
                    "steps_done": 0, "steps_total": steps_total, "created": stamp, "updated": stamp,
                    "finished": "", "owner": owner, "heartbeat": stamp if owner else "",
                }
            )
        return run_id

    @_mapped
    def update_run(self, run_id: str, **changes: Any) -> None:
        with self.db.conn:
            self.db["runs"].update(run_id, _run_changes(changes))

    @_mapped
    def claim_run(self, run_id: str, owner: str) -> None:
        """Make ``owner`` the one runner of the run and mark it running, in one transaction.
        Raises RunLive when another runner that is still alive drives it, RunNotFound."""
        with write_transaction(self.db, f"claim run {run_id}") as conn:  # no writer between check and claim
            row = conn.execute("select status, owner, heartbeat from runs where id = ?", [run_id]).fetchone()
            if row is None:
                raise RunNotFound(f"No run {run_id!r} in {self.path}. `python app.py history` lists the runs.")
            status, current, heartbeat = row
            if status == RunStatus.RUNNING and current != owner and owner_alive(current, heartbeat):
                raise RunLive(f"Run {run_id} is already running in {describe_owner(current, heartbeat)}: "
                              "follow it there, or stop it (Stop, Ctrl-C) and then continue it.")
            stamp = now()
            conn.execute("update runs set status = ?, error = '', owner = ?, heartbeat = ?, updated = ? where id = ?",
                         [RunStatus.RUNNING.value, owner, stamp, stamp, run_id])

    @_mapped
    def beat(self, run_id: str, owner: str) -> None:
        """The runner ``owner`` is alive (only while it still owns the run)."""
        with self.db.conn:
            self.db.execute("update runs set heartbeat = ? where id = ? and owner = ?", [now(), run_id, owner])

    @_mapped
    def interrupt_orphans(self) -> list[str]:
        """Runs left ``running`` by a runner that is gone (killed, its machine restarted) become
        ``interrupted``, so they can be continued; returns their ids."""
        rows = self.db.execute("select id, owner, heartbeat, updated from runs where status = ?",
                               [RunStatus.RUNNING.value]).fetchall()
        gone = [run_id for run_id, owner, heartbeat, updated in rows
                if (not owner_alive(owner, heartbeat) if owner else _age(updated) > STALE_SECONDS)]
        if gone:
            with self.db.conn:
                self.db.conn.executemany(
                    "update runs set status = ?, error = ?, updated = ? where id = ? and status = ?",
                    [(RunStatus.INTERRUPTED.value, "The process running it stopped (killed, or its machine "
                      "restarted); continue it from where it stopped.", now(), run_id, RunStatus.RUNNING.value)
                     for run_id in gone])
        return gone

    @_mapped
    def get_run(self, run_id: str) -> RunRow:
        """The run with its task's prompt and kind. Raises RunNotFound."""
        rows = list(
            self.db.query(
                "select runs.*, tasks.prompt as task, tasks.kind as kind, tasks.task_set as task_set "
                "from runs join tasks on tasks.id = runs.task_id where runs.id = ?",
                [run_id],
            )
        )
        if not rows:
            raise RunNotFound(f"No run {run_id!r} in {self.path}. `python app.py history` lists the runs.")
        return _decode_run(rows[0])

    @_mapped
    def resolve_run_id(self, prefix: str) -> str:
        """The id of the run that ``prefix`` names: its whole id, or the start of one run's id only,
        of at least ``MIN_RUN_PREFIX`` characters (spaces around it are ignored). Raises RunNotFound
        when no run's id is or starts with it (or it is shorter and no whole id), ConfigError naming
        the candidates when several runs' ids start with it."""
        prefix = (prefix or "").strip()
        if self.db.execute("select 1 from runs where id = ?", [prefix]).fetchone():
            return prefix
        if len(prefix) < MIN_RUN_PREFIX:
            raise RunNotFound(f"No run {prefix!r} in {self.path}: give a run's id, or at least its first "
                              f"{MIN_RUN_PREFIX} characters. `python app.py history` lists the runs.")
        shown = 5
        ids = [row[0] for row in self.db.execute(
            "select id from runs where substr(id, 1, ?) = ? order by created desc limit ?",
            [len(prefix), prefix, shown + 1])]
        if not ids:
            raise RunNotFound(f"No run {prefix!r} in {self.path}. `python app.py history` lists the runs.")
        if len(ids) > 1:
            more = ", ..." if len(ids) > shown else ""
            raise ConfigError(f"{prefix!r} starts the ids of several runs ({', '.join(ids[:shown])}{more}): "
                              "give more of the id's characters.")
        return ids[0]

    @_mapped
    def list_runs(self, *, limit: int = 200, method: str | None = None,
                  status: RunStatus | str | None = None) -> list[RunRow]:
        where, args = [], []
        if method:
            where.append("runs.method = ?")
            args.append(method)
        if status:
            where.append("runs.status = ?")
            args.append(RunStatus(status).value)
        sql = (
            "select runs.*, tasks.prompt as task, tasks.kind as kind, tasks.task_set as task_set "
            "from runs join tasks on tasks.id = runs.task_id "
            + ("where " + " and ".join(where) + " " if where else "")
            + "order by runs.created desc limit ?"
        )
        return [_decode_run(r) for r in self.db.query(sql, [*args, limit])]

    # -- events ----------------------------------------------------------------------------
    @_mapped
    def append_event(self, run_id: str, seq: int, event: Event, run: dict | None = None) -> None:
        """Store an event and, in the same transaction, the run's changes it brings (``run``:
        counters, status...), so the run's row never disagrees with its events.

        A StepRevised is stored as a delta (:class:`_Trail`): its ``article`` and ``before`` are
        left out when they follow from the run's earlier events, so a run's stored events grow
        with its text, not with the text times its steps; :meth:`events` rebuilds them."""
        payload = event.to_dict()
        with self._trails_lock:
            trail = self._trails.get(run_id)
            if trail is None:
                trail = self._trails[run_id] = _Trail.of(self.events(run_id) if seq > 1 else [])
            payload = trail.compact(event, payload)
        try:
            with self.db.conn:
                if self.dialect == sql.SQLITE:  # begun here: in a bare ``with conn:`` sqlite-utils 4 commits the
                    self.db.conn.execute("begin immediate")  # insert at once (a kill then left the event
                self.db.execute(                             # without its counters)
                    "insert into events (run_id, seq, type, payload, ts) values (?, ?, ?, ?, ?)",
                    [run_id, seq, event.type, _json(payload), now()],
                )
                if run:
                    self.db["runs"].update(run_id, _run_changes(dict(run)))
        except BaseException:
            with self._trails_lock:
                self._trails.pop(run_id, None)  # rebuilt from what was stored, next time
            raise
        if run and run.get("status") not in (None, RunStatus.RUNNING):
            with self._trails_lock:
                self._trails.pop(run_id, None)  # the run ended: forget its trail
        self._event_stored()

    @_mapped
    def events(self, run_id: str) -> list[Event]:
        trail = _Trail()
        return [
            trail.expand(row["type"], json.loads(row["payload"]))
            for row in self.db.query("select type, payload from events where run_id = ? order by seq", [run_id])
        ]

    @_mapped
    def timed_events(self, run_id: str) -> list[tuple[Event, str]]:
        """``events`` with when each was stored (ISO time), in one read: for a run followed again."""
        trail = _Trail()
        return [
            (trail.expand(row["type"], json.loads(row["payload"])), row["ts"])
            for row in self.db.query("select type, payload, ts from events where run_id = ? order by seq", [run_id])
        ]

    @_mapped
    def event_rows(self, run_id: str) -> list[EventRow]:
        """Each event's number, type and time, for timing a replay."""
        return [EventRow(*row) for row in
                self.db.execute("select seq, type, ts from events where run_id = ? order by seq", [run_id])]

    @_mapped
    def last_seq(self, run_id: str) -> int:
        row = self.db.execute("select max(seq) from events where run_id = ?", [run_id]).fetchone()
        return row[0] or 0

    # -- caches (the Fetcher's PageCache and the SearchChain's SearchCache) -------------------
    @_mapped
    def get_page(self, url: str) -> dict | None:
        rows = list(self.db.query("select * from pages where url = ?", [url]))
        if not rows:
            return None
        row = rows[0]
        row["metadata"] = json.loads(row["metadata"] or "{}")
        return row

    @_mapped
    def put_page(self, page: dict) -> None:
        record = {k: page.get(k) for k in ("url", "final_url", "title", "text", "content_type", "size")}
        record["metadata"] = _json(page.get("metadata") or {})
        record["fetched"] = now()
        with self.db.conn:
            self.db["pages"].upsert(record, pk="url")

    @_mapped
    def get_search(self, provider: str, query: str, k: int) -> list[dict] | None:
        row = self.db.execute(
            "select results from searches where provider = ? and query = ? and k = ?", [provider, query, k]
        ).fetchone()
        return json.loads(row[0]) if row else None

    @_mapped
    def put_search(self, provider: str, query: str, k: int, results: list[dict]) -> None:
        with self.db.conn:
            self.db["searches"].upsert(
                {"provider": provider, "query": query, "k": k, "results": _json(results), "searched": now()},
                pk=("provider", "query", "k"),
            )


class _Trail:
    """What a run's next StepRevised can be stored against: the last draft's steps and the
    article after the last revised step. ``compact`` leaves out of a StepRevised's payload what
    follows from them (``article``: equal to ``after``, as in rat, or the article so far plus
    ``after``, as in rat-step; ``before``: the article so far plus the draft's step i, as in rat),
    checked by rebuilding it; ``expand`` puts it back, reading the events in order."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.article = ""

    @classmethod
    def of(cls, events: list[Event]) -> _Trail:
        trail = cls()
        for e in events:
            trail.see(e.type, e.to_dict())
        return trail

    def see(self, type_name: str, payload: dict) -> None:
        if type_name == "DraftReady":
            self.steps, self.article = list(payload.get("steps") or []), ""
        elif type_name == "StepRevised":
            self.article = payload.get("article") or ""

    def _step(self, i: int) -> str:
        return self.steps[i - 1] if 0 < i <= len(self.steps) else ""

    def compact(self, event: Event, payload: dict) -> dict:
        if event.type == "StepRevised":
            full = dict(payload)
            rebuilt = {"after": payload["after"], "appended": _join(self.article, payload["after"])}
            for how, text in rebuilt.items():
                if payload["article"] and payload["article"] == text:
                    payload = {**payload, "article": None, "article_from": how}
                    break
            so_far = _join(self.article, self._step(payload["i"]))
            if payload["before"] and payload["before"] == so_far and self._step(payload["i"]):
                payload = {**payload, "before": None, "before_from": "so_far"}
            self.see(event.type, full)
        else:
            self.see(event.type, payload)
        return payload

    def expand(self, type_name: str, payload: dict) -> Event:
        if payload.get("before_from") == "so_far":
            payload["before"] = _join(self.article, self._step(payload["i"]))
        how = payload.get("article_from")
        if how is not None:
            payload["article"] = payload["after"] if how == "after" else _join(self.article, payload["after"])
        self.see(type_name, payload)
        return event_from_dict(type_name, payload)


def _join(*texts: str) -> str:
    """Texts as paragraphs of one text (as core.text.prompts.join_steps joins steps)."""
    return "\n\n".join(t.strip() for t in texts if t and t.strip())


def _run_changes(changes: dict) -> dict:
    for key in ("settings", "sources", "tokens_by_role"):
        if key in changes and not isinstance(changes[key], str):
            changes[key] = _json(changes[key])
    if "status" in changes:
        changes["status"] = RunStatus(changes["status"]).value
    changes["updated"] = now()
    return changes


def _decode_run(row: dict) -> RunRow:
    for key, empty in (("settings", {}), ("sources", []), ("tokens_by_role", {})):
        row[key] = json.loads(row.get(key) or json.dumps(empty))
    row["status"] = RunStatus(row["status"])
    return RunRow(**{k: v for k, v in row.items() if k in _RUN_FIELDS and v is not None})


@contextmanager
def write_transaction(db: sqlite_utils.Database, what: str,
                      keys: Sequence[str] | None = None) -> Iterator[sqlite3.Connection]:
    """One write transaction, holding the write lock from its start, for the data/ modules that
    write several rows at once (arena, versions): SQLite's ``begin immediate``; on PostgreSQL a
    transaction that first takes the writers' advisory lock (``data.sql.WRITE_LOCK``), so writers
    take turns across processes as they do on one SQLite file. The Store's threads take their turn
    on its ``writer`` lock first. One inside another (``Store.exclusive`` around a write) joins
    it. Raises StoreError (naming ``what``) when the database refuses it.

    ``keys``: what its reads depend on, when that is less than the whole database (e.g. one
    annotator's and one address's votes). On PostgreSQL it then holds a lock per key from its
    start and the writers' lock only from its first write (``PgConnection.begin_writing``), and
    takes no turn on the Store's ``writer`` lock: transactions about other keys read at the same
    time, in this process and in others. On SQLite it is as without keys."""
    conn = db.conn
    if getattr(db, "writing", False):  # this thread's connection is in one already
        db.write_depth += 1  # type: ignore[attr-defined]
        try:
            yield conn
        finally:
            db.write_depth -= 1  # type: ignore[attr-defined]
        return
    server = getattr(db, "dialect", sql.SQLITE) == sql.POSTGRESQL
    turn = None if server and keys is not None else getattr(db, "writer", None)
    owner: Store | None = getattr(db, "owner", None)
    with turn or contextlib.nullcontext():  # a Store's threads queue here, not in SQLite
        if owner is not None:
            owner.before_write()
        try:
            if server:
                conn.begin_writing(keys)
            else:
                conn.execute("begin immediate")
        except sql.DatabaseError as exc:
            conn.rollback()
            raise _refused(db, what, exc, "Try again; if it persists, check the database.") from exc
        db.writing, db.write_depth = True, 1  # type: ignore[attr-defined]
        try:
            yield conn
            conn.commit()  # (nothing left to commit after ``write_and_commit``)
        except sql.DatabaseError as exc:
            conn.rollback()
            raise _refused(db, what, exc) from exc
        except BaseException:
            conn.rollback()
            raise
        finally:
            db.writing, db.write_depth = False, 0  # type: ignore[attr-defined]


def _refused(db: sqlite_utils.Database, what: str, exc: BaseException, then: str = "") -> StoreError:
    """The error of a ``write_transaction`` the database refused: StoreFull, StoreBusy or
    StoreError as ``store_error`` tells them apart, saying what could not be done; its Store hears
    of it (``Store.refused``)."""
    owner: Store | None = getattr(db, "owner", None)
    found = store_error(owner.path if owner else Path("the database"), exc)
    if type(found) is StoreError:
        error = StoreError(f"Could not {what}: {exc}." + (f" {then}" if then else ""))
    else:  # full or locked: what to do about it
        error = type(found)(f"Could not {what}. {found}")
    if owner is not None:
        owner.refused(error)
    return error


def write_and_commit(db: sqlite_utils.Database, statement: str, params: Sequence[Any], *,
                     ends_joined: bool = False) -> Any:
    """The last write of the ``write_transaction`` it runs in, and the commit, returning the
    write's cursor: on PostgreSQL in one round trip, so the writers' lock is held only inside the
    server (``PgConnection.execute_and_commit``); on SQLite a write, then the commit. In a
    transaction joined into another (``Store.exclusive`` around it) the write alone, unless
    ``ends_joined`` says the outer one has nothing left to do after it. Outside any, the write."""
    depth = getattr(db, "write_depth", 0)
    conn = db.conn
    if depth == 0 or (depth > 1 and not ends_joined):
        return conn.execute(statement, params)
    if getattr(db, "dialect", sql.SQLITE) == sql.POSTGRESQL:
        return conn.execute_and_commit(statement, params)
    cursor = conn.execute(statement, params)
    conn.commit()
    return cursor
