"""Schema migrations, applied in order at start. Each is a decorated function that takes a
sqlite_utils.Database; the names of applied ones are kept in ``_migrations``. Never edit a
migration that has shipped: add a new one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import sqlite_utils

MIGRATIONS: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = []


def migration(fn: Callable[[sqlite_utils.Database], None]):
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def apply(db: sqlite_utils.Database) -> list[str]:
    """Apply the migrations not yet applied; returns their names."""
    db.execute("create table if not exists _migrations (name text primary key, applied text)")
    done = {row[0] for row in db.execute("select name from _migrations").fetchall()}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db.conn:
            fn(db)
            db.execute(
                "insert into _migrations (name, applied) values (?, ?)",
                [name, datetime.now(timezone.utc).isoformat()],
            )
        applied.append(name)
    return applied


@migration
def m001_core(db: sqlite_utils.Database) -> None:
    db["tasks"].create(
        {"id": int, "prompt": str, "kind": str, "task_set": str, "meta": str, "created": str},
        pk="id",
    )
    db["tasks"].create_index(["prompt", "kind", "task_set"], unique=True)
    db["runs"].create(
        {
            "id": str, "task_id": int, "method": str, "settings": str, "status": str,
            "final_text": str, "sources": str, "error": str,
            "prompt_tokens": int, "completion_tokens": int, "llm_calls": int,
            "tokens_by_role": str, "llm_seconds": float, "search_seconds": float,
            "fetch_seconds": float, "wall_seconds": float, "steps_done": int, "steps_total": int,
            "created": str, "updated": str, "finished": str,
        },
        pk="id",
        foreign_keys=[("task_id", "tasks", "id")],
    )
    db["runs"].create_index(["task_id", "method"])
    db["runs"].create_index(["created"])
    db["events"].create(
        {"run_id": str, "seq": int, "type": str, "payload": str, "ts": str},
        pk=("run_id", "seq"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["pages"].create(
        {"url": str, "final_url": str, "title": str, "text": str, "content_type": str,
         "size": int, "metadata": str, "fetched": str},
        pk="url",
    )
    db["searches"].create(
        {"provider": str, "query": str, "k": int, "results": str, "searched": str},
        pk=("provider", "query", "k"),
    )
