"""Fixtures of the arena tests: a real SQLite file and helpers that fill it."""

from __future__ import annotations

import weakref

import pytest

import app as app_module
from annotation.admin.admin import Admin
from annotation.results.results import Results
from annotation.rooms import ArenaRooms
from annotation.voting.arena import Arena
from common.settings import Settings
from data import arena
from data.sql import POSTGRESQL
from data.store import Store
from tests.conftest import open_store

_ROOMS: weakref.WeakKeyDictionary[Arena, ArenaRooms] = weakref.WeakKeyDictionary()


def rooms(service: Arena) -> ArenaRooms:
    """The rooms around ``service``, one set per Arena as app.py builds them: what a test asks of
    its results twice reads the same leaderboards' cache."""
    if service not in _ROOMS:
        _ROOMS[service] = ArenaRooms.of(service)
    return _ROOMS[service]


def results(service: Arena) -> Results:
    """What the votes of ``service``'s store say (``rooms``)."""
    return rooms(service).results


def admin(service: Arena) -> Admin:
    """The admin's work on ``service``'s store (``rooms``)."""
    return rooms(service).admin


@pytest.fixture
def store(request, tmp_path, backend):
    """A Store on a fresh database, SQLite and PostgreSQL (tests.conftest.open_store)."""
    s = open_store(request, tmp_path, "arena.db")
    yield s
    s.close_all()


@pytest.fixture
def local_app(request, tmp_path, backend) -> app_module.App:
    """The app on a fresh database (SQLite and PostgreSQL), no network: what app.py builds for the CLI."""
    db = request.getfixturevalue("pg_url") if backend == POSTGRESQL else tmp_path / "cli.db"
    return app_module.build(Settings(db_path=db))


def seed_outputs(store: Store, tasks: dict[str, dict[str, str]], task_set: str = "") -> None:
    """Import outputs: {task prompt: {method: text}}."""
    arena.import_outputs(store, [
        {"prompt": prompt, "kind": "writing", "task_set": task_set, "method": method, "text": text}
        for prompt, by_method in tasks.items() for method, text in by_method.items()
    ])


def finished_run(store: Store, prompt: str, method: str, text: str, status: str = "done") -> str:
    task_id = store.add_task(prompt)
    run_id = store.create_run(method, task_id, {})
    store.update_run(run_id, status=status, final_text=text)
    return run_id
