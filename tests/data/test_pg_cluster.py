"""The tests' throwaway PostgreSQL (scripts/pg_cluster.py): its files in memory where the machine
has room (a copy of the migrated database took 0.35-0.45 s of the server's CPU on disk, 0.03 s in
memory), on disk for a cluster that must keep what it commits, and each test's copy of the
database dropped after it."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import psycopg
import pytest

from scripts import pg_cluster
from scripts.pg_cluster import PgCluster, scratch_folder
from tests.conftest import open_store

Usage = namedtuple("Usage", "total used free")


def made(cluster: PgCluster) -> Path:
    """The folder ``cluster`` made for its files (removed here: it was never started)."""
    folder = cluster.folder
    shutil.rmtree(folder)
    return folder.parent


def test_a_cluster_that_keeps_nothing_lives_in_memory_where_there_is_room():
    if not (Path("/dev/shm").is_dir() and scratch_folder()):
        pytest.skip("this machine has no writable /dev/shm with room")
    assert made(PgCluster()) == Path("/dev/shm")
    assert made(PgCluster(durable=True)) != Path("/dev/shm"), "a durable cluster's commits reach the disk"


def test_without_room_in_memory_the_cluster_is_in_the_temp_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(pg_cluster.shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 64 << 20, 64 << 20))
    assert scratch_folder() is None  # (a container's 64 MB /dev/shm)
    monkeypatch.setattr(pg_cluster.tempfile, "tempdir", str(tmp_path))
    assert made(PgCluster()) == tmp_path


def test_each_tests_copy_of_the_database_is_dropped_after_it(request, tmp_path, pg_cluster):
    request.getfixturevalue("pg_migrated")

    class Backend:  # the request open_store reads, asking for PostgreSQL, with its own finalizers
        def __init__(self):
            self.finalizers = []

        def getfixturevalue(self, name):
            return "postgresql" if name == "backend" else request.getfixturevalue(name)

        def addfinalizer(self, fn):
            self.finalizers.append(fn)

    backend = Backend()
    store = open_store(backend, tmp_path)
    name = store.url.rsplit("/", 1)[1]
    store.close_all()

    def databases() -> set[str]:
        with psycopg.connect(pg_cluster.url("postgres")) as conn:
            return {row[0] for row in conn.execute("select datname from pg_database")}

    assert name in databases()
    for fn in reversed(backend.finalizers):
        fn()
    assert name not in databases()
