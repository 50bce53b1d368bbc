"""Shared fixtures: the two stand-ins (a fake OpenAI-compatible server and a local web with a
SearXNG-style search), and the app wired to them over real HTTP, with a real SQLite file
(``app``: app.py's composition root, the same ``App`` the CLI and the UI get).

The tests of data/ and annotation/ whose Store comes from ``open_store`` (the ``store``
fixtures) run twice: on a SQLite file and on a database of a throwaway PostgreSQL
(``pg_cluster``, started once per session when a test asks for it; tests/pg.py)."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import tempfile
import threading
from pathlib import Path

import pytest

import app as app_module
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from data.sql import POSTGRESQL, SQLITE
from data.store import Store
from tests.fakes.llm_server import FakeLLM
from tests.fakes.web_server import FakeWeb

#: The TLS contexts of the apps this test process builds (``_shared_tls``), by kind and by the
#: environment's certificate settings when each was made.
_TLS_MADE: dict = {}
_TLS_LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def _shared_tls(request, monkeypatch):
    """Every app a test builds shares this test process's TLS contexts. The product makes them once
    per ``Clients`` (core/tls.py), and the suite builds over a thousand apps: 1,070 certificate
    bundles were loaded, 43 CPU-s of the quick loop. Each is still made by its library, as the
    app would make it. Tests marked ``own_tls`` (tests/core/test_tls.py, which counts what one
    app loads) get the product's own."""
    if request.node.get_closest_marker("own_tls"):
        return
    from core.tls import TLS

    def once(tls, kind, make):
        key = (kind, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        with _TLS_LOCK:
            if key not in _TLS_MADE:
                _TLS_MADE[key] = make()
            return _TLS_MADE[key]

    monkeypatch.setattr(TLS, "_once", once)


def pytest_collection_modifyitems(config, items) -> None:
    """Mark ``slow`` the tests tests/slow.txt lists (the quick loop of README leaves them out;
    tests/slow.py says how the list is made)."""
    from tests.slow import listed

    slow = listed()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session) -> None:
    """What the test process holds once it has collected (the project, Gradio, Playwright and the
    other libraries imported, every test's function): out of the garbage collector's way
    (``gc.freeze``). Python's full collections walked all of it again and again: the quick loop
    of README took 73-76 CPU-s with them, 67-69 without."""
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session) -> None:
    """Close the test process's shared Chromium, if a browser test launched it (tests/ui/browser.py)."""
    from tests.ui.browser import close_chromium

    close_chromium()


@pytest.fixture
def web():
    with FakeWeb() as server:
        yield server


@pytest.fixture(scope="session")
def _session_web():
    with FakeWeb() as server:
        yield server


@pytest.fixture
def shared_web(_session_web) -> FakeWeb:
    """One FakeWeb for the whole session, reset before each test: for tests that read pages or
    search but need no fresh server (starting one per test costs time)."""
    _session_web.reset()
    return _session_web


#: Test folders whose Store runs on both databases (see the module's docstring).
BOTH_DATABASES = ("data", "annotation")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test of BOTH_DATABASES that opens its Store through ``backend`` on both."""
    both = Path(metafunc.definition.path).parent.name in BOTH_DATABASES \
        or metafunc.definition.get_closest_marker("both_databases")
    if "backend" in metafunc.fixturenames and both and not metafunc.definition.get_closest_marker("sqlite_only"):
        metafunc.parametrize("backend", [SQLITE, POSTGRESQL], indirect=True)


@pytest.fixture
def backend(request) -> str:
    """The database a test's Store is on: SQLite unless pytest_generate_tests asks for both."""
    return getattr(request, "param", SQLITE)


@pytest.fixture(scope="session")
def pg_cluster():
    from tests.pg import PgCluster

    with PgCluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a fresh, empty PostgreSQL database."""
    return pg_cluster.new_database()


@functools.cache
def _migrated() -> bytes:
    """A new RAT Studio SQLite file as ``Store`` leaves it (its WAL folded in), made once per test
    process."""
    with tempfile.TemporaryDirectory() as folder:
        made = Path(folder) / "migrated.db"
        Store(made).close()
        wal = made.with_name(made.name + "-wal")
        assert not wal.exists() or not wal.stat().st_size, "the new file's WAL was not folded in"
        return made.read_bytes()


def new_database(path: Path) -> Path:
    """A new RAT Studio SQLite file at ``path`` (unless one is there): a copy of ``_migrated``.
    Migrating a file is 26 transactions, 55 CPU-ms; the copy takes 3 ms, and the suite opens over
    a thousand. Migrating itself is tested on files of their own (tests/data)."""
    if not path.exists():
        path.write_bytes(_migrated())
    return path


@pytest.fixture(scope="session")
def pg_migrated(pg_cluster) -> str:
    """The name of a PostgreSQL database as a new ``Store`` leaves it, made once per session:
    what ``open_store`` copies, as ``new_database`` copies a migrated SQLite file (migrating a
    fresh database was 26 transactions in every test of the store on PostgreSQL; migrating itself
    is tested on databases of their own, ``pg_url``)."""
    url = pg_cluster.new_database()
    Store(url).close_all()
    return url.rsplit("/", 1)[1]


def open_store(request: pytest.FixtureRequest, tmp_path: Path, name: str = "store.db") -> Store:
    """A Store on the test's ``backend``: a new SQLite file in tmp_path (``new_database``), or a
    fresh copy of a migrated PostgreSQL database (``pg_migrated``), dropped after the test."""
    if request.getfixturevalue("backend") == POSTGRESQL:
        cluster = request.getfixturevalue("pg_cluster")
        url = cluster.new_database(template=request.getfixturevalue("pg_migrated"))
        request.addfinalizer(lambda: cluster.drop_database(url))  # (after the fixture's own teardown)
        return Store(url)
    return Store(new_database(tmp_path / name))


def outside(store: Store):
    """A connection of its own to the store's database, as another program would open it (a plain
    sqlite3 one; on PostgreSQL, data.sql's, which takes the same ``?`` SQL): what the database
    itself refuses, it refuses there too. A context manager commits as sqlite3's does."""
    if store.url:
        from data.sql import PgDatabase

        return PgDatabase(store.url).conn
    import sqlite3

    return sqlite3.connect(store.path)


@pytest.fixture
def store(request, tmp_path, backend):
    """A Store on a fresh database (see open_store), closed after the test."""
    s = open_store(request, tmp_path)
    yield s
    s.close_all()


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def make_settings(tmp_path, llm: FakeLLM, web: FakeWeb, **method) -> Settings:
    return Settings(
        llm=LLMSettings(base_url=llm.base_url, api_key="sk-test", model="fake-model", timeout=10,
                        max_retries=2, backoff=0.01),
        search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url, retries=1, backoff=0.01),
        fetch=FetchSettings(allow_private_urls=True, timeout=5, step_deadline=8),
        method=MethodSettings(**method),
        db_path=tmp_path / "rat.db",
    )


@pytest.fixture
def settings(request, tmp_path, llm, web, backend) -> Settings:
    """The app's settings for the stand-ins, on the test's ``backend`` (its database's URL on
    PostgreSQL)."""
    base = make_settings(tmp_path, llm, web)
    if backend == POSTGRESQL:
        return dataclasses.replace(base, db_path=request.getfixturevalue("pg_url"))
    return base


@pytest.fixture
def app(settings) -> app_module.App:
    if isinstance(settings.db_path, Path):  # (a URL on PostgreSQL)
        new_database(settings.db_path)
    return app_module.build(settings)


@pytest.fixture
def db(request, tmp_path, backend):
    """The database of the ``cli`` fixture: a file, or a fresh PostgreSQL database's URL on that
    backend (a test module may give its own, seeded)."""
    return request.getfixturevalue("pg_url") if backend == POSTGRESQL else tmp_path / "x.db"


@pytest.fixture
def cli(capsys, db):
    """``python app.py ARGS`` in-process; returns (exit code, stdout, stderr). Without ``env``,
    only the database is set (commands that call no model)."""

    def run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = app_module.main(list(argv), env=env or {"RAT_STUDIO_DB": str(db)})
        out, err = capsys.readouterr()
        return code, out, err

    return run
