"""The app's network clients share their TLS contexts (core/tls.py): a run's model client, page
reader and SearXNG search each made a context of their own, loading the certificate bundle
three times a run (about 0.13 s of CPU). The app's runs now load it once for each kind of client,
and each kind trusts what it trusted before."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest

from common.events import Final
from common.types import Task
from core.tls import TLS
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import bundles_loaded, collect

pytestmark = pytest.mark.own_tls  # (what one app's clients load: not the suite's shared contexts)


@pytest.fixture
def loads() -> Iterator[list[str]]:
    """Each certificate bundle loaded into a context from now on (every default context loads one)."""
    with bundles_loaded() as seen:
        yield seen


async def test_runs_load_the_certificates_once_per_kind_of_client_not_once_per_client(app, llm, loads):
    for n in range(3):
        llm.reply(RatAuthor(draft_steps(2)))
        events = await collect(app.runner.start("rat", Task(f"Write about Python 3, part {n}.")))
        assert isinstance(events[-1], Final), events[-1]
    # the model's (openai's HTTP library), the page reader's (httpx, reading the environment's
    # certificate settings) and SearXNG's (httpx, not reading them): 7 loads before, one per client
    assert len(loads) == 3, loads


def test_each_kind_is_made_once_and_as_its_library_makes_it(monkeypatch, tmp_path):
    tls = TLS()
    assert tls.model() is tls.model()
    assert tls.web(trust_env=True) is tls.web(trust_env=True)
    assert tls.web(trust_env=False) is not tls.web(trust_env=True)
    # the environment's bundle is read where the client read it (the page reader), not elsewhere
    import certifi

    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    fresh = TLS()
    certs = len(fresh.web(trust_env=False).get_ca_certs())
    assert certs > 0 and len(fresh.web(trust_env=True).get_ca_certs()) == certs
    for context in (fresh.model(), fresh.web(trust_env=True), fresh.web(trust_env=False)):
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


async def test_the_model_client_uses_the_shared_context(settings):
    from core.clients import Clients

    clients = Clients(settings)
    one, two = clients.llm(), clients.llm()
    try:
        sdk_one, sdk_two = one._sdk(), two._sdk()
        pools = [sdk._client._transport._pool for sdk in (sdk_one, sdk_two)]
        assert pools[0]._ssl_context is clients.tls.model() is pools[1]._ssl_context
    finally:
        await one.aclose()
        await two.aclose()
