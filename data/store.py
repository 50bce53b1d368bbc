"""The one SQLite file: tasks, runs, their events, and the page and search caches.

A ``sqlite_utils.Database`` must not cross threads, so ``Store`` keeps one connection per
thread (Gradio handlers run in worker threads; the runner in the event loop's thread). The file
is in WAL mode so readers never block the writer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlite_utils

from common.errors import RunNotFound, StoreError
from common.events import Event, event_from_dict
from data import migrations


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class Store:
    """Raises StoreError when the file cannot be opened or created."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = self.db
            db.enable_wal()
            migrations.apply(db)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"Cannot open the database {self.path}: {exc}. Pass another path with --db or RAT_STUDIO_DB."
            ) from exc

    @property
    def db(self) -> sqlite_utils.Database:
        """This thread's connection."""
        db = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=True)
            conn.execute("pragma busy_timeout = 30000")
            conn.execute("pragma foreign_keys = on")
            db = sqlite_utils.Database(conn)
            self._local.db = db
        return db

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # -- tasks -----------------------------------------------------------------------------
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

    def get_task(self, task_id: int) -> dict:
        rows = list(self.db.query("select * from tasks where id = ?", [task_id]))
        if not rows:
            raise StoreError(f"No task {task_id} in {self.path}.")
        return rows[0]

    # -- runs ------------------------------------------------------------------------------
    def create_run(self, method: str, task_id: int, settings: dict, *, steps_total: int = 0) -> str:
        run_id = uuid.uuid4().hex[:12]
        stamp = now()
        with self.db.conn:
            self.db["runs"].insert(
                {
                    "id": run_id, "task_id": task_id, "method": method, "settings": _json(settings),
                    "status": "running", "final_text": "", "sources": "[]", "error": "",
                    "prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tokens_by_role": "{}",
                    "llm_seconds": 0.0, "search_seconds": 0.0, "fetch_seconds": 0.0, "wall_seconds": 0.0,
                    "steps_done": 0, "steps_total": steps_total, "created": stamp, "updated": stamp,
                    "finished": "",
                }
            )
        return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        for key in ("settings", "sources", "tokens_by_role"):
            if key in fields and not isinstance(fields[key], str):
                fields[key] = _json(fields[key])
        fields["updated"] = now()
        with self.db.conn:
            self.db["runs"].update(run_id, fields)

    def get_run(self, run_id: str) -> dict:
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

    def list_runs(self, *, limit: int = 200, method: str | None = None, status: str | None = None) -> list[dict]:
        where, args = [], []
        if method:
            where.append("runs.method = ?")
            args.append(method)
        if status:
            where.append("runs.status = ?")
            args.append(status)
        sql = (
            "select runs.*, tasks.prompt as task, tasks.kind as kind, tasks.task_set as task_set "
            "from runs join tasks on tasks.id = runs.task_id "
            + ("where " + " and ".join(where) + " " if where else "")
            + "order by runs.created desc limit ?"
        )
        return [_decode_run(r) for r in self.db.query(sql, [*args, limit])]

    # -- events ----------------------------------------------------------------------------
    def append_event(self, run_id: str, seq: int, event: Event) -> None:
        with self.db.conn:
            self.db.execute(
                "insert into events (run_id, seq, type, payload, ts) values (?, ?, ?, ?, ?)",
                [run_id, seq, event.type, _json(event.to_dict()), now()],
            )

    def events(self, run_id: str) -> list[Event]:
        return [
            event_from_dict(row["type"], json.loads(row["payload"]))
            for row in self.db.query("select type, payload from events where run_id = ? order by seq", [run_id])
        ]

    def event_rows(self, run_id: str) -> list[dict]:
        """Raw rows (seq, type, ts), for timing a replay."""
        return list(self.db.query("select seq, type, ts from events where run_id = ? order by seq", [run_id]))

    def last_seq(self, run_id: str) -> int:
        row = self.db.execute("select max(seq) from events where run_id = ?", [run_id]).fetchone()
        return row[0] or 0

    # -- caches (the Fetcher's PageCache and the SearchChain's SearchCache) -------------------
    def get_page(self, url: str) -> dict | None:
        rows = list(self.db.query("select * from pages where url = ?", [url]))
        if not rows:
            return None
        row = rows[0]
        row["metadata"] = json.loads(row["metadata"] or "{}")
        return row

    def put_page(self, page: dict) -> None:
        record = {k: page.get(k) for k in ("url", "final_url", "title", "text", "content_type", "size")}
        record["metadata"] = _json(page.get("metadata") or {})
        record["fetched"] = now()
        with self.db.conn:
            self.db["pages"].upsert(record, pk="url")

    def get_search(self, provider: str, query: str, k: int) -> list[dict] | None:
        row = self.db.execute(
            "select results from searches where provider = ? and query = ? and k = ?", [provider, query, k]
        ).fetchone()
        return json.loads(row[0]) if row else None

    def put_search(self, provider: str, query: str, k: int, results: list[dict]) -> None:
        with self.db.conn:
            self.db["searches"].upsert(
                {"provider": provider, "query": query, "k": k, "results": _json(results), "searched": now()},
                pk=("provider", "query", "k"),
            )


def _decode_run(row: dict) -> dict:
    for key, empty in (("settings", {}), ("sources", []), ("tokens_by_role", {})):
        row[key] = json.loads(row.get(key) or json.dumps(empty))
    return row
