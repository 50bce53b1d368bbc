"""Search errors classified once: a provider whose host cannot be reached (DNS, connection
refused) is tried once, not retried, and skipped for the rest of the chain's life with one
warning; a rate limit is still retried; every failure is told in one line, in words, with the
fix. Unreachable providers are real: a SearXNG URL on a closed local port, and ddgs' own HTTP
client against one."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from ddgs.exceptions import DDGSException

from common.errors import SearchRateLimited, SearchUnavailable, SearchUnreachable
from common.events import Note, SearchDone
from common.settings import LLMSettings
from common.types import Task
from core.llm import LLMClient
from core.retrieval.corpus import CorpusIndex
from core.retrieval.search import FIX_HINT, CorpusProvider, DDGProvider, SearchChain, SearxngProvider
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import Sleeps, collect, free_port, of
from ui.cli.progress import progress_line

SKIPPED = "skipped for the rest of this run"

# What ddgs 9 raises when DuckDuckGo's name does not resolve (recorded offline): a DDGSException
# wrapping the DDGSException its HTTP client made of primp's DNSError.
DDGS_DNS_TEXT = ("DNSError: DNSError('error sending request for url (https://html.duckduckgo.com/html/) > error "
                 "resolving DNS > DNS error: no records found for Query { name: Name(\"html.duckduckgo.com.\"), "
                 "query_type: A, query_class: IN }')")


def ddgs_dns_error() -> DDGSException:
    return DDGSException(DDGSException(DDGS_DNS_TEXT))


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def assert_plain(message: str) -> None:
    """One line, in words: no Python repr of a lower layer's exception."""
    assert "\n" not in message
    assert "Error(" not in message and "Exception(" not in message, message


class CountingTransport(httpx.AsyncHTTPTransport):
    """httpx's real transport, counting the requests it is asked to send."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    async def handle_async_request(self, request):
        self.calls += 1
        return await super().handle_async_request(request)


class FakeDDGS:
    """Stands in for ddgs.DDGS (the factory and the object): raises or answers as told, and
    counts the calls."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    def __call__(self):
        return self

    def text(self, query, **kwargs):
        self.calls += 1
        if callable(self.answer):
            return self.answer()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def ddgs_to_closed_port():
    """What DDGS.text raises when its host refuses the connection: ddgs' own HTTP client asked
    for a closed local port, its error wrapped once more the way DDGS.text wraps an engine's."""
    from ddgs.http_client import HttpClient

    try:
        HttpClient(timeout=5).get(closed_url() + "/html/")
    except DDGSException as exc:
        raise DDGSException(exc) from None
    raise AssertionError("nothing should listen on a free port")


@pytest.fixture
def corpus(tmp_path: Path) -> CorpusProvider:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "python.md").write_text("# Python releases\nPython 3.6 added f-strings.", encoding="utf-8")
    return CorpusProvider(CorpusIndex(tmp_path / "corpus.db", folder))


# -- providers: unreachable is told apart, in words -------------------------------------------


async def test_searxng_on_a_closed_port_is_unreachable_and_not_retryable():
    url = closed_url()
    with pytest.raises(SearchUnreachable) as info:
        await SearxngProvider(url, timeout=5).search("python", 3)
    err = info.value
    assert isinstance(err, SearchUnavailable) and not err.retryable
    assert err.cause == "connection refused" and err.provider == "searxng"
    assert str(err) == (f"searxng at {url} could not be reached (connection refused): check --searxng-url and "
                        "that the instance is running, or use --search ddg or corpus.")
    assert_plain(str(err))


async def test_ddg_connection_refused_from_ddgs_is_unreachable():
    with pytest.raises(SearchUnreachable) as info:
        await DDGProvider(ddgs_factory=FakeDDGS(ddgs_to_closed_port)).search("python", 3)
    assert info.value.cause == "connection refused"
    assert "--search searxng or corpus" in str(info.value)
    assert_plain(str(info.value))
    assert isinstance(info.value.__cause__, DDGSException)


async def test_ddg_dns_failure_is_unreachable_in_words():
    with pytest.raises(SearchUnreachable) as info:
        await DDGProvider(ddgs_factory=FakeDDGS(ddgs_dns_error())).search("python", 3)
    assert str(info.value) == ("ddg (DuckDuckGo) could not be reached (DNS lookup failed): check the network (and "
                               "DDGS_PROXY if you use a proxy), or use --search searxng or corpus.")
    assert info.value.reason == "unreachable (DNS lookup failed)"


async def test_ddg_other_failures_stay_unavailable_without_a_repr():
    raised = DDGSException(DDGSException("HTTPError: HTTPError('502 Bad Gateway')"))
    with pytest.raises(SearchUnavailable) as info:
        await DDGProvider(ddgs_factory=FakeDDGS(raised)).search("python", 3)
    assert type(info.value) is SearchUnavailable and info.value.retryable
    assert "502 Bad Gateway" in str(info.value)
    assert_plain(str(info.value))


# -- the chain: tried once, then skipped, said once --------------------------------------------


async def test_unreachable_provider_is_tried_once_then_skipped_with_one_warning(corpus):
    transport = CountingTransport()
    sleeps = Sleeps()
    chain = SearchChain([SearxngProvider(closed_url(), timeout=5, transport=transport), corpus],
                        retries=2, backoff=0.5, sleep=sleeps)
    try:
        first = await chain.search("Python 3.6 release", 3)
        assert first.provider == "corpus" and first.results
        assert transport.calls == 1 and sleeps == [], "not retried like a rate limit"
        assert first.warnings == [f"searxng unreachable (connection refused): {SKIPPED}; used corpus"]
        assert chain.skipped == ["searxng"]

        second = await chain.search("f-strings", 3)
        assert second.provider == "corpus"
        assert transport.calls == 1, "not tried again"
        assert second.warnings == []
    finally:
        await chain.aclose()


async def test_searches_running_alongside_warn_once(corpus):
    await corpus.refresh()  # index once, before the searches run alongside
    chain = SearchChain([SearxngProvider(closed_url(), timeout=5), corpus], retries=2, backoff=0.5, sleep=Sleeps())
    try:
        responses = await asyncio.gather(*(chain.search(q, 3) for q in ("Python 3.6", "f-strings", "releases")))
    finally:
        await chain.aclose()
    warnings = [w for r in responses for w in r.warnings]
    assert warnings == [f"searxng unreachable (connection refused): {SKIPPED}; used corpus"]


async def test_a_lone_unreachable_provider_fails_each_search_in_one_line_naming_the_fix():
    ddg = FakeDDGS(ddgs_dns_error())
    sleeps = Sleeps()
    chain = SearchChain([DDGProvider(ddgs_factory=ddg)], retries=2, backoff=0.5, sleep=sleeps)
    with pytest.raises(SearchUnreachable) as first:
        await chain.search("python", 3)
    with pytest.raises(SearchUnreachable) as second:
        await chain.search("tea", 3)
    assert ddg.calls == 1 and sleeps == []
    assert str(first.value) == (f"ddg unreachable (DNS lookup failed): {SKIPPED}. Check the network (and DDGS_PROXY "
                                "if you use a proxy), or use --search searxng or corpus")
    assert str(second.value) == ("ddg unreachable (DNS lookup failed): not tried again in this run. Check the "
                                 "network (and DDGS_PROXY if you use a proxy), or use --search searxng or corpus")
    assert not first.value.retryable


async def test_rate_limited_provider_is_still_retried_and_not_skipped(web):
    web.rate_limit_next = 10
    sleeps = Sleeps()
    chain = SearchChain([SearxngProvider(web.searxng_url, timeout=5)], retries=2, backoff=0.5, sleep=sleeps)
    try:
        with pytest.raises(SearchRateLimited) as info:
            await chain.search("Python 3.6 release", 3)
        assert sleeps == [0.5, 1.0] and web.search_count == 3
        message = str(info.value)
        assert message.startswith("searxng: rate-limited (429) after 3 tries: ")
        assert message.endswith(FIX_HINT.rstrip(".")) and message.count(FIX_HINT.rstrip(".")) == 1
        assert_plain(message)

        web.rate_limit_next = 0
        response = await chain.search("Python 3.6 release", 3)
        assert response.provider == "searxng" and response.results and chain.skipped == []
    finally:
        await chain.aclose()


async def test_every_provider_failing_is_one_line_with_each_cause_and_fix(web):
    web.rate_limit_next = 10
    chain = SearchChain([DDGProvider(ddgs_factory=FakeDDGS(ddgs_dns_error())), SearxngProvider(web.searxng_url)],
                        retries=1, backoff=0.1, sleep=Sleeps())
    try:
        with pytest.raises(SearchUnavailable) as info:
            await chain.search("python", 3)
    finally:
        await chain.aclose()
    message = str(info.value)
    assert message.startswith(f"Every search provider failed for 'python': ddg unreachable (DNS lookup failed): "
                              f"{SKIPPED}; searxng: rate-limited (429) after 2 tries: ")
    assert "Check the network" in message and message.count(FIX_HINT.rstrip(".")) == 1
    assert_plain(message)


async def test_retries_and_failures_are_not_logged_above_debug(caplog, corpus):
    caplog.set_level(logging.DEBUG)
    chain = SearchChain([DDGProvider(ddgs_factory=FakeDDGS(ddgs_dns_error())), corpus],
                        retries=2, backoff=0.1, sleep=Sleeps())
    response = await chain.search("Python 3.6 release", 3)
    assert len(response.warnings) == 1
    about_ddg = [r for r in caplog.records if r.name == "core.retrieval.search" and "ddg" in r.getMessage()]
    assert [r for r in about_ddg if r.levelno > logging.DEBUG] == []
    assert any(r.name == "core.retrieval.search" and "ddg" in r.getMessage()
               for r in caplog.records), "kept for debugging"


async def test_llm_retry_is_not_logged_above_debug(caplog, llm):
    caplog.set_level(logging.DEBUG)
    llm.fail_next(1, status=429)
    llm.queue("An answer.")
    async with LLMClient(LLMSettings(base_url=llm.base_url, model="fake-model", timeout=2.0, max_retries=2,
                                     backoff=0.01), sleep=Sleeps()) as client:
        completion = await client.complete("Hello?", role="draft")
    assert completion.text == "An answer."
    assert [r for r in caplog.records if r.name == "core.llm" and r.levelno > logging.DEBUG] == []


# -- a run: told once -------------------------------------------------------------------------


def _app(tmp_path, llm, web, **search):
    import app as app_module
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm, web)
    settings = replace(settings, search=replace(settings.search, searxng_url=closed_url(), retries=2, **search))
    return app_module.build(settings)


def _texts(events) -> list[str]:
    texts = []
    for e in events:
        if isinstance(e, SearchDone):
            texts += [e.error, *e.warnings]
        elif isinstance(e, Note):
            texts.append(e.text)
    return [t for t in texts if t]


async def test_run_with_an_unreachable_provider_warns_once(tmp_path, llm, web):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "python.md").write_text("# Python 3.6\nPython 3.6.0 was released in December 2016 with formatted "
                                     "string literals.", encoding="utf-8")
    app = _app(tmp_path, llm, web, providers=("searxng", "corpus"), corpus_dir=notes)
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat", Task("Write a short history of Python 3.")))
    searches = of(events, SearchDone)
    assert len(searches) == 3 and all(not s.error and s.provider == "corpus" for s in searches)
    texts = _texts(events)
    assert [t for t in texts if "searxng unreachable" in t] == [
        f"searxng unreachable (connection refused): {SKIPPED}; used corpus"]
    assert searches[0].warnings and not searches[1].warnings and not searches[2].warnings
    lines = [line for e in events for line in (progress_line(e) or "").splitlines()]
    assert len([line for line in lines if "searxng unreachable" in line]) == 1, "one line on the CLI"
    for text in texts:
        assert_plain(text)


async def test_run_with_only_an_unreachable_provider_says_why_once_and_each_step_in_one_line(tmp_path, llm, web):
    app = _app(tmp_path, llm, web, providers=("searxng",))
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat", Task("Write a short history of Python 3.")))
    searches = of(events, SearchDone)
    assert len(searches) == 3 and all(s.error for s in searches)
    texts = _texts(events)
    assert sum(SKIPPED in t for t in texts) == 1 and SKIPPED in searches[0].error
    assert all("not tried again in this run" in s.error for s in searches[1:])
    for s in searches:
        assert "--searxng-url" in s.error and "--search ddg or corpus" in s.error
    for text in texts:
        assert_plain(text)
    assert not any("Wait a minute" in t for t in texts), "no rate-limit advice for an unreachable host"
