"""A throwaway PostgreSQL, for the tests (started the way they start chromium) and for a try-out of
several arena workers (``scripts/arena_cluster.py --postgres``): Debian's server binaries
(``/usr/lib/postgresql/*/bin``, installed by ``scripts/test.sh`` when missing), a cluster made
with ``initdb`` in a temp folder, listening on a free port of 127.0.0.1 only, stopped and removed
at the end of the session. ``initdb`` refuses to run as root, so as root the cluster belongs to
Debian's ``postgres`` user.

``PgCluster.new_database()`` gives a fresh empty database and its URL; databases are made from
one template, so each costs a file copy, not a server start. A cluster that keeps nothing (not
``durable``: the tests') keeps its files in memory where the machine has room for them
(``scratch_folder``)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg

from scripts.ports import free_port


def server_bin() -> Path:
    """The folder of Debian's PostgreSQL server binaries (the newest version installed).
    Raises RuntimeError naming the fix when none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if not found:
        raise RuntimeError("PostgreSQL's server is not installed: run `bash scripts/test.sh` (it installs "
                           "Debian's postgresql package) or `apt-get install postgresql`.")
    return Path(found[-1]).parent


#: Free space a memory file system must have for a cluster that keeps nothing to live there.
SCRATCH_ROOM = 2 * 1024**3


def scratch_folder() -> str | None:
    """Where a cluster that keeps nothing puts its files: /dev/shm (memory) when it is writable
    and has ``SCRATCH_ROOM`` free, else None (the temp folder). Copying the app's migrated
    database (550 files) took 0.35-0.45 s of the server's CPU on this machine's disk, nearly all of
    it the file system's, and 0.03 s in memory; the tests make a copy for each of about 340 tests."""
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= SCRATCH_ROOM:
            return str(shm)
    except OSError:
        pass
    return None


class PgCluster:
    """A PostgreSQL cluster in a temp folder; a context manager (started on enter, removed on
    exit). ``max_connections`` is high: every thread of a Store keeps its own connection.
    ``durable``: a commit waits for the disk, as on a real server (the bench and the try-out);
    without it (the tests), nothing waits for the disk, and the files are in memory where there
    is room (``scratch_folder``)."""

    def __init__(self, *, max_connections: int = 400, durable: bool = False, statements: bool = False) -> None:
        self.bin = server_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="rat-pg-", dir=None if durable else scratch_folder()))
        self.data = self.folder / "data"
        self.port = free_port()
        self.max_connections = max_connections
        self.durable = durable
        self.statements = statements
        self.user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def __enter__(self) -> PgCluster:
        if self.user:
            shutil.chown(self.folder, self.user)
        self._run("initdb", "-D", str(self.data), "-U", "rat", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.folder} "
                   f"-c max_connections={self.max_connections} -c shared_buffers=64MB")
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        if self.statements:  # counted by pg_stat_statements (Debian's server package ships it)
            options += " -c shared_preload_libraries=pg_stat_statements"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute("create database rat_template")
            if self.statements:
                conn.execute("create extension pg_stat_statements")
        return self

    def statements_run(self) -> int:
        """How many statements the cluster's databases have run so far (``statements=True``;
        the extension's own reads not counted)."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            return conn.execute("select coalesce(sum(calls), 0) from pg_stat_statements "
                                "where query not like '%pg_stat_statements%'").fetchone()[0]

    def __exit__(self, *exc: object) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql://rat@127.0.0.1:{self.port}/{database}"

    def new_database(self, template: str = "rat_template") -> str:
        """The URL of a new database: a copy of ``template`` (by default an empty one). A template
        must have no open connection while it is copied."""
        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'create database {name} template "{template}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop the database of ``url`` (one ``new_database`` made), ending what is still connected
        to it."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')
