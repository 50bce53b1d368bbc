"""Keyed write transactions on PostgreSQL (``PgConnection.begin_writing(keys)``): one about other
keys reads and writes while another is open, one about the same key waits for it, and once a
transaction has written, every other writer waits for its commit, so ids are committed in the
order they are given. (A vote's check and insert is such a transaction: ``Arena.vote``.) And
``write_and_commit``: a transaction's last write and its commit at once, on both databases."""

from __future__ import annotations

import threading

import pytest

from data.sql import PgDatabase
from data.store import Store, write_and_commit, write_transaction

WAIT = 0.5  # seconds a blocked writer is watched still waiting


@pytest.fixture
def url(pg_url) -> str:
    Store(pg_url).close_all()  # migrated
    return pg_url


def add_task(conn, prompt: str) -> int:
    return conn.execute("insert into tasks (prompt, kind, task_set, meta, created) values (?, 'writing', '', '{}', "
                        "'2026-11-26T00:00:00')", [prompt]).lastrowid


class Writer(threading.Thread):
    """A keyed write transaction in a thread of its own: begin, insert a task, commit; ``ids``."""

    def __init__(self, url: str, keys: list[str] | None, prompt: str):
        super().__init__(daemon=True)
        self.db, self.keys, self.prompt, self.ids = PgDatabase(url), keys, prompt, []
        self.began = threading.Event()

    def run(self) -> None:
        self.db.conn.begin_writing(self.keys)
        self.began.set()
        self.ids.append(add_task(self.db.conn, self.prompt))
        self.db.conn.commit()


def test_a_transaction_about_other_keys_does_not_wait_for_an_open_one(url):
    first = PgDatabase(url).conn
    first.begin_writing(["annotator:ana", "address:10.0.0.1"])
    first.execute("select count(*) from votes where annotator = ?", ["ana"]).fetchone()
    other = Writer(url, ["annotator:bob", "address:10.0.0.2"], "bob's")
    other.start()
    other.join(10)
    assert not other.is_alive() and other.ids, "bob's write went through while ana's check was open"
    first.commit()


def test_a_transaction_about_the_same_key_waits_for_the_open_one(url):
    first = PgDatabase(url).conn
    first.begin_writing(["annotator:ana"])
    second = Writer(url, ["address:10.0.0.9", "annotator:ana"], "ana's second tab")
    second.start()
    assert not second.began.wait(WAIT), "the same annotator's second check waits for the first"
    first.commit()
    second.join(10)
    assert second.ids


@pytest.mark.parametrize("keys", [["annotator:bob"], None])
def test_once_written_every_writer_waits_for_the_commit_and_ids_come_in_order(url, keys):
    first = PgDatabase(url).conn
    first.begin_writing(["annotator:ana"])
    mine = add_task(first, "ana's")
    other = Writer(url, keys, "bob's")
    other.start()
    other.join(WAIT)
    assert other.is_alive() and not other.ids, "a second writer waits for the first one's commit"
    first.commit()
    other.join(10)
    assert other.ids == [mine + 1]


def test_a_keyed_write_transaction_takes_no_turn_on_the_stores_writer_lock(url):
    """Threads of one Store in keyed transactions do not queue behind each other's reads."""
    store = Store(url)
    inside = threading.Event()
    release = threading.Event()

    def ana() -> None:
        with write_transaction(store.db, "check ana", keys=["annotator:ana"]):
            store.db.execute("select 1").fetchone()
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=ana, daemon=True)
    holder.start()
    assert inside.wait(10)
    done = []

    def bob() -> None:
        with write_transaction(store.db, "vote bob", keys=["annotator:bob"]) as conn:
            done.append(add_task(conn, "bob's"))

    voter = threading.Thread(target=bob, daemon=True)
    voter.start()
    voter.join(10)
    release.set()
    holder.join(10)
    assert done, "bob's transaction ran while ana's was open in another thread of the same Store"
    store.close_all()


# -- the last write and the commit in one round trip (both databases) -------------------------------
def seen_outside(store: Store) -> int:
    """Tasks another connection sees committed."""
    from tests.conftest import outside

    conn = outside(store)
    try:
        return conn.execute("select count(*) from tasks").fetchone()[0]
    finally:
        conn.close()


INSERT = "insert into tasks (prompt, kind, task_set, meta, created) values (?, 'writing', '', '{}', '2026')"


def test_write_and_commit_commits_with_the_write_where_the_transaction_is_its_own(store):
    with write_transaction(store.db, "add", keys=()):
        cur = write_and_commit(store.db, INSERT, ["owls"])
        assert cur.lastrowid and seen_outside(store) == 1, "committed before the block ends"
    assert seen_outside(store) == 1


def test_in_a_joined_transaction_only_the_outer_ones_end_commits(store):
    with store.exclusive("outer", keys=["annotator:ana"]):
        with write_transaction(store.db, "inner", keys=()):
            write_and_commit(store.db, INSERT, ["owls"])
        assert seen_outside(store) == 0, "the outer transaction goes on: nothing committed"
        store.db.execute(INSERT, ["bats"])
    assert seen_outside(store) == 2
    with store.exclusive("outer", keys=["annotator:ana"]):
        with write_transaction(store.db, "inner", keys=()):
            write_and_commit(store.db, INSERT, ["cats"], ends_joined=True)
        assert seen_outside(store) == 3, "the write ends the outer transaction: committed with it"


def test_a_refused_last_write_rolls_back_and_the_connection_goes_on(store):
    from common.errors import StoreError

    with write_transaction(store.db, "add", keys=()):
        first = write_and_commit(store.db, INSERT, ["owls"]).lastrowid
    with pytest.raises(StoreError):
        with write_transaction(store.db, "add again", keys=()):
            store.db.execute(INSERT, ["bats"])
            write_and_commit(store.db, INSERT.replace("(prompt,", "(id, prompt,").replace("values (", "values (?, "),
                             [first, "owls again"])
    assert seen_outside(store) == 1, "neither bats nor the refused row"
    with write_transaction(store.db, "add", keys=()):
        write_and_commit(store.db, INSERT, ["cats"])
    assert seen_outside(store) == 2
