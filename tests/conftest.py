"""Shared fixtures: the two stand-ins (a fake OpenAI-compatible server and a local web with a
SearXNG-style search), and the app wired to them over real HTTP, with a real SQLite file
(``app``: app.py's composition root, the same ``App`` the CLI and the UI get)."""

from __future__ import annotations

import pytest

import app as app_module
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from data.store import Store
from tests.fakes.llm_server import FakeLLM
from tests.fakes.web_server import FakeWeb


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


@pytest.fixture
def store(tmp_path):
    """A Store on a fresh SQLite file in tmp_path, closed after the test."""
    s = Store(tmp_path / "store.db")
    yield s
    s.close()


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
def settings(tmp_path, llm, web) -> Settings:
    return make_settings(tmp_path, llm, web)


@pytest.fixture
def app(settings) -> app_module.App:
    return app_module.build(settings)


@pytest.fixture
def db(tmp_path):
    """The database file of the ``cli`` fixture (a test module may give its own, seeded)."""
    return tmp_path / "x.db"


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
