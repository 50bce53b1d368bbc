"""Fixtures of the arena tests: a real SQLite file and helpers that fill it."""

from __future__ import annotations

import pytest

import app as app_module
from common.settings import Settings
from data import arena
from data.store import Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "arena.db")
    yield s
    s.close()


@pytest.fixture
def local_app(tmp_path) -> app_module.App:
    """The app on a tmp database, no network: what app.py builds for the CLI."""
    return app_module.build(Settings(db_path=tmp_path / "cli.db"))


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
