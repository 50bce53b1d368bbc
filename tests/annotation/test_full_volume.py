"""A serving arena on a small volume that fills up (issue 38, item 4; F25 of the reliability
battery: once the disk had been full, freeing space did not help until a restart, and each refusal
logged a traceback). Now a write the disk refuses is StoreFull, whose message names the fix; the
annotator's page says what to do and the log gets one line; the next writes checkpoint the WAL,
so it is folded back and emptied as soon as there is room, and new annotators vote at once.

Needs a real full file system: a tmpfs of 2 MiB, mounted for the test (CI runs as root)."""

from __future__ import annotations

import logging
import os
import random
import subprocess

import gradio as gr
import pytest
from argon2 import PasswordHasher

from annotation.accounts import Accounts
from annotation.voting.arena import Arena
from common.errors import StoreFull
from data.store import WAL_LIMIT_BYTES, Store
from tests.annotation.conftest import seed_outputs
from ui.arena import ArenaTab

pytestmark = pytest.mark.sqlite_only  # a file on a full disk


@pytest.fixture
def volume(tmp_path):
    """A 2 MiB file system of its own."""
    where = tmp_path / "volume"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"a small file system could not be mounted ({mounted.stderr.strip()}): run as root")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def fill(path) -> None:
    """Take the volume's last free byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_full_volume_refuses_in_one_line_and_freeing_space_lets_new_annotators_vote(volume, caplog):
    store = Store(volume / "arena.db", busy_timeout=0.5)
    assert store.db.execute("pragma journal_size_limit").fetchone() == (WAL_LIMIT_BYTES,)
    seed_outputs(store, {f"task {k}: " + "a question " * 40: {"rat": f"rat {k} " * 200, "cot": f"cot {k} " * 200}
                         for k in range(40)})
    accounts = Accounts(store, hasher=PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    link = accounts.invite(study="pilot", quota=50, completion_code="C0DE")
    arena = Arena(store, rng=random.Random(0))
    tab = ArenaTab(arena, accounts)

    def arrive(k: int) -> str:
        return accounts.redeem(link, {"PROLIFIC_PID": f"{k:024x}"}, f"198.51.100.{k}")[1].name

    working = {name: arena.next_pair(name).battle_id for name in map(arrive, range(6))}  # pairs on screen
    fill(volume / "other files")
    caplog.set_level(logging.WARNING, logger="ui.arena")

    for name, battle in working.items():  # their votes are refused, in words, one log line each
        with pytest.raises(gr.Error) as err:
            tab.vote("a", {"annotator": name, "battle": battle})
        assert "Your vote was not saved" in str(err.value.message) and err.value.print_exception is False
    logged = [r for r in caplog.records if r.name == "ui.arena"]
    assert len(logged) == len(working) and not any(r.exc_info for r in logged)
    assert all("is full" in r.getMessage() and "free space on" in r.getMessage() for r in logged)
    for k in range(6, 12):  # and newcomers are told the disk is full, typed
        with pytest.raises(StoreFull, match="free space on"):
            arrive(k)
    wal = volume / "arena.db-wal"
    full_wal = wal.stat().st_size
    assert full_wal > 100_000, "the WAL holds what was written since the last checkpoint"

    os.remove(volume / "other files")  # space is freed; nothing restarts
    for name, battle in working.items():
        arena.vote(battle, name, "a")
    assert wal.stat().st_size < full_wal / 4, "the first write after the refusals folded the WAL back in"
    for k in range(12, 24):
        name = arrive(k)
        arena.vote(arena.next_pair(name).battle_id, name, "b")
    votes = store.db.execute("select count(*) from votes").fetchone()[0]
    assert votes == len(working) + 12
    store.close()
