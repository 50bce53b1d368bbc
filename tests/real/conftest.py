"""The tiny real model (SmolLM2-135M-Instruct on llama.cpp's server, scripts/tiny_model.py), started
once per session, and the app built on it over the local web."""

from __future__ import annotations

import pytest

from scripts.tiny_model import TinyModel, TinyModelError, start_tiny_model
from tests.real.support import build_app, settings_for


@pytest.fixture(scope="session")
def tiny_model() -> TinyModel:
    """The server, started once for the session. A missing package fails the tests that need it,
    with the pip command that installs it (`bash scripts/test.sh` does). At a lower CPU priority:
    on two cores it kept both busy, and a browser test beside it waited 20 s for a run to begin."""
    try:
        model = start_tiny_model(nice=10)
    except TinyModelError as exc:
        pytest.fail(str(exc), pytrace=False)
    with model:
        yield model


@pytest.fixture
def real_app(tmp_path, tiny_model, shared_web):
    """``app.build`` on the tiny model and the local web, a fresh SQLite file, calls capped."""
    built = build_app(settings_for(tiny_model.base_url, tiny_model.model, shared_web.searxng_url, tmp_path / "rat.db"))
    yield built
    built.store.close()
