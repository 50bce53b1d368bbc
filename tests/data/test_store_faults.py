"""The database when things go wrong (issue 21, item 6): a write waits for another writer's lock
and lands; one still locked after the wait, or one that finds the disk full, is one typed error
whose message names the cause and the fix (and the run to resume), with nothing half-written;
and the WAL file is folded back and emptied every so many events and when the store closes."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

import data.store as store_module
from common.errors import StoreBusy, StoreError, StoreFull
from common.events import Note, StepRevised
from common.types import RunStatus
from data.store import Store, store_error
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.test_app import ROOT, cli

pytestmark = pytest.mark.sqlite_only  # SQLite's own faults: a full disk, a locked file


@pytest.fixture
def run(tmp_path):
    """A store with one run and two events."""
    store = Store(tmp_path / "faults.db", busy_timeout=0.3)
    run_id = store.create_run("rat", store.add_task("Write about owls."), {})
    store.append_event(run_id, 1, Note("one"), {"steps_done": 1})
    store.append_event(run_id, 2, Note("two"), {"steps_done": 2})
    yield store, run_id
    store.close()


def _lock(path) -> sqlite3.Connection:
    """Another program holding the file's write lock (an open write transaction)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("begin immediate")
    other.execute("insert into tasks (prompt, kind, task_set, meta, created) values ('x', 'writing', '', '{}', 'x')")
    return other


def test_a_write_waits_for_another_writers_lock_and_lands(tmp_path):
    store = Store(tmp_path / "wait.db")  # the default wait
    assert store.busy_timeout == store_module.BUSY_SECONDS >= 10
    assert store.db.execute("pragma busy_timeout").fetchone() == (int(store_module.BUSY_SECONDS * 1000),)
    run_id = store.create_run("rat", store.add_task("Write about owls."), {})
    other = _lock(store.path)
    threading.Timer(0.5, lambda: other.execute("commit")).start()
    started = time.monotonic()
    store.append_event(run_id, 1, Note("waited"), {"steps_done": 1})
    assert time.monotonic() - started >= 0.4, "it waited for the lock"
    assert [e.text for e in store.events(run_id)] == ["waited"]
    other.close()
    store.close()


def test_a_write_still_locked_is_one_typed_error_and_nothing_is_half_written(run):
    store, run_id = run
    other = _lock(store.path)
    try:
        with pytest.raises(StoreBusy) as caught:
            store.append_event(run_id, 3, Note("three"), {"steps_done": 3, "status": RunStatus.DONE})
    finally:
        other.execute("rollback")
        other.close()
    message = str(caught.value)
    assert "locked by another program" in message and f"python app.py resume {run_id}" in message, message
    assert caught.value.retryable and "\n" not in message
    assert store.last_seq(run_id) == 2 and store.get_run(run_id).steps_done == 2
    assert store.get_run(run_id).status == RunStatus.RUNNING
    store.append_event(run_id, 3, Note("three"), {"steps_done": 3})  # the same write, once the lock is gone
    assert [e.text for e in store.events(run_id)] == ["one", "two", "three"]


def test_an_event_and_the_run_row_it_changes_land_together_or_not_at_all(tmp_path):
    """A process killed (SIGKILL, the machine going down) between an event's insert and its run
    row's update leaves neither: sqlite-utils 4 commits a statement that opened a transaction at
    once, so inside ``with conn:`` the event was committed before the row's counters were written,
    and a run killed right after a model call was resumed counting one call less than its events
    (CI saw it in test_kill_browser)."""
    path = tmp_path / "kill.db"
    code = f"""
import os
import sqlite_utils.db
from common.events import Note
from data.store import Store
store = Store({str(path)!r})
run_id = store.create_run("rat", store.add_task("Write about owls."), {{}})
store.append_event(run_id, 1, Note("one"), {{"llm_calls": 1}})
update = sqlite_utils.db.Table.update
def killed(self, *args, **kwargs):
    if self.name == "runs":
        os._exit(9)  # as SIGKILL: no clean-up of any kind
    return update(self, *args, **kwargs)
sqlite_utils.db.Table.update = killed
store.append_event(run_id, 2, Note("two"), {{"llm_calls": 2}})
"""
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60).returncode == 9
    with sqlite3.connect(path) as conn:
        assert conn.execute("select seq from events").fetchall() == [(1,)]
        assert conn.execute("select llm_calls from runs").fetchall() == [(1,)]


def _fill(store: Store) -> None:
    """The disk is full, as sqlite sees it: the file may not grow by a page."""
    pages = store.db.execute("pragma page_count").fetchone()[0]
    store.db.execute(f"pragma max_page_count = {pages}")


def test_a_full_disk_is_one_typed_error_that_says_what_to_free_and_how_to_go_on(run):
    store, run_id = run
    _fill(store)
    with pytest.raises(StoreFull) as caught:
        store.append_event(run_id, 3, Note("x" * 200_000), {"steps_done": 3})
    message = str(caught.value)
    assert "is full" in message and f"free space on {store.path.parent}" in message, message
    assert message.endswith(f"then continue the run: python app.py resume {run_id}."), message
    assert store.last_seq(run_id) == 2 and store.get_run(run_id).steps_done == 2, "nothing half-written"
    store.db.execute("pragma max_page_count = 1073741823")  # space freed
    store.append_event(run_id, 3, Note("x" * 200_000), {"steps_done": 3})
    assert store.get_run(run_id).steps_done == 3


@pytest.mark.parametrize("exc, kind", [
    (OSError(errno.ENOSPC, "No space left on device"), StoreFull),
    (sqlite3.OperationalError("database or disk is full"), StoreFull),
    (sqlite3.OperationalError("database is locked"), StoreBusy),
    (sqlite3.DatabaseError("file is not a database"), StoreError),
])
def test_what_sqlite_and_the_disk_raise_is_mapped_to_our_errors(tmp_path, exc, kind):
    error = store_error(tmp_path / "x.db", exc, "abc123")
    assert type(error) is kind and "python app.py resume abc123" in str(error)
    assert str(exc) in str(error), "the cause, as sqlite or the system said it"


def _fill_up(store: Store) -> None:
    """The disk is full, and so is every page of the events' table: no event fits any more."""
    other = store.create_run("rat", store.add_task("filler"), {})
    _fill(store)
    seq = 0
    with pytest.raises(StoreFull):
        while True:
            seq += 1
            store.append_event(other, seq, Note("x" * 64))


async def test_a_run_whose_disk_fills_stops_resumable_with_its_rows_whole(app, llm):
    """The disk fills once step 1 is revised: the run stops with StoreFull (the runner could
    not store even its Failed), every event stored is whole and the run's row agrees with them."""
    llm.reply(RatAuthor(draft_steps(3)))
    seen = []
    with pytest.raises(StoreFull, match="free space on"):
        async for event in app.runner.start("rat", _task()):
            seen.append(event)
            if isinstance(event, StepRevised):
                _fill_up(app.store)  # this thread's connection: the runner's
    app.store.db.execute("pragma max_page_count = 1073741823")
    row = app.store.get_run(seen[0].run_id)
    stored = app.store.events(row.id)
    assert stored == [e for e in seen if e.persist], "each event passed on was stored, whole; no other"
    assert row.status == RunStatus.RUNNING, "not marked done or failed: its process going makes it interrupted"
    assert row.steps_done == sum(isinstance(e, StepRevised) for e in stored) == 1


def _task():
    from common.types import Task

    return Task("Write a short history of Python 3.")


FILL_AFTER = """
import sys
import data.store as s

append = s.Store.append_event


def append_event(self, run_id, seq, event, run=None):
    if seq == {seq}:  # from here on, the disk is full
        pages = self.db.execute("pragma page_count").fetchone()[0]
        self.db.execute(f"pragma max_page_count = {{pages}}")
    return append(self, run_id, seq, event, run)


s.Store.append_event = append_event
import app

sys.exit(app.main(sys.argv[1:]))
"""


def test_the_cli_says_one_line_on_a_full_disk_and_the_run_resumes(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(3)))
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
           "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
           "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(tmp_path / "full.db")}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    full = subprocess.run([sys.executable, "-c", FILL_AFTER.format(seq=12), "run", "Write about Python 3."],
                          cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr, full.stderr
    (line,) = [x for x in full.stderr.splitlines() if x.startswith("error: ")]
    run_id = line.rpartition("python app.py resume ")[2].rstrip(".")
    assert "is full" in line and f"free space on {tmp_path}" in line, line
    resumed = cli("resume", run_id, env_extra=env)  # space freed (a new process: no limit)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.count("[revised]") == 3


def test_the_wal_is_emptied_every_so_many_events_and_on_close(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY", 20)
    store = Store(tmp_path / "wal.db")
    wal = tmp_path / "wal.db-wal"
    run_id = store.create_run("rat", store.add_task("Write about owls."), {})
    store.checkpoint()
    sizes = []
    for seq in range(1, 41):
        store.append_event(run_id, seq, Note("x" * 20_000), {"steps_done": seq})
        sizes.append(wal.stat().st_size)
    assert sizes[18] > 20 * 20_000 > 0, "the WAL grows with the events"
    assert sizes[19] == 0 and sizes[39] == 0, "and is emptied every 20 events"
    store.append_event(run_id, 41, Note("x" * 20_000))
    assert wal.stat().st_size > 0
    store.close()
    assert not wal.exists() or wal.stat().st_size == 0, "closing empties it"


def test_a_write_a_minute_after_the_last_checkpoint_empties_the_wal_first(tmp_path):
    """Issue 38, item 4: a serving arena writes votes, not events; its WAL is checkpointed by
    time too (CHECKPOINT_SECONDS), at the next write, not only every CHECKPOINT_EVERY events."""
    from data.store import write_transaction

    store = Store(tmp_path / "votes.db")
    wal = tmp_path / "votes.db-wal"
    store.db.execute("create table t (x text)")

    def write() -> None:
        with write_transaction(store.db, "write a row") as conn:
            conn.execute("insert into t values (?)", ["v" * 20_000])

    for _ in range(20):
        write()
    grown = wal.stat().st_size
    assert grown > 20 * 20_000, "within the minute the WAL grows"
    store._checkpointed -= store_module.CHECKPOINT_SECONDS  # a minute later
    write()
    assert 0 < wal.stat().st_size < grown / 10, "the write checkpointed first, then wrote its own pages"
    assert store.db.execute("select count(*) from t").fetchone() == (21,)
    store.close()


async def test_a_live_run_whose_failure_cannot_be_stored_is_left_interrupted_not_running(app, llm):
    """The server's run (core.live): the disk fills, the runner cannot store its Failed; the
    follower is told, and the run's row says interrupted at once (an update in place fits)."""
    from common.events import Failed
    from core.live import LiveRuns

    llm.reply(RatAuthor(draft_steps(3)))
    live = LiveRuns(app.runner, limit=1)
    seen = []
    async for event in live.start("rat", _task()):
        seen.append(event)
        if isinstance(event, StepRevised):
            _fill_up(app.store)
    app.store.db.execute("pragma max_page_count = 1073741823")
    assert isinstance(seen[-1], Failed) and "free space on" in seen[-1].error
    row = app.store.get_run(seen[0].run_id)
    assert row.status == RunStatus.INTERRUPTED, row.status
