"""The tiny real model (SmolLM2-135M-Instruct on llama.cpp's server, scripts/tiny_model.py), started
once per session, and the app built on it over the local web."""

from __future__ import annotations

import os

import pytest

from scripts.tiny_model import TinyModel, TinyModelError, start_tiny_model
from tests.real.replies import ReplyCache
from tests.real.support import build_app, settings_for


@pytest.fixture(scope="session")
def tiny_model() -> TinyModel:
    """The server, started once for the session. A missing package fails the tests that need it,
    with the pip command that installs it (`bash scripts/test.sh` does). At a lower CPU priority:
    on two cores it kept both busy, and a browser test beside it waited 20 s for a run to begin.
    Each test worker (pytest-xdist) has a server of its own, and the servers share the cores:
    threads that read prompts = cores / workers, at least one (two servers of two threads each on
    two cores wait on each other's preempted threads, which llama.cpp's meet after every layer);
    each writes on one (``WRITE_THREADS``)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    try:
        model = start_tiny_model(nice=10, n_threads=max(1, (os.cpu_count() or 1) // workers))
    except TinyModelError as exc:
        pytest.fail(str(exc), pytrace=False)
    with model:
        yield model


@pytest.fixture(scope="session")
def model_replies(tiny_model, tmp_path_factory) -> ReplyCache:
    """The tiny model behind ``ReplyCache``: a greedy request it answered once in this session is
    answered again with its bytes. The workers of one session share the folder (their temp
    folders' parent is the session's); a later session starts empty."""
    root = tmp_path_factory.getbasetemp()
    folder = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "tiny-model-replies"
    with ReplyCache(tiny_model.base_url, folder) as cache:
        yield cache


@pytest.fixture
def real_app(tmp_path, tiny_model, model_replies, shared_web):
    """``app.build`` on the tiny model (its greedy answers given once a session: ``model_replies``)
    and the local web, a fresh SQLite file, calls capped."""
    built = build_app(settings_for(model_replies.base_url, tiny_model.model, shared_web.searxng_url,
                                   tmp_path / "rat.db"))
    yield built
    built.store.close()
