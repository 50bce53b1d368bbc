from pathlib import Path

import httpx
import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from common.errors import ConfigError, SearchError, SearchRateLimited, SearchUnavailable, SearchUnreachable
from common.settings import SearchSettings
from common.types import SearchResult
from core.retrieval.corpus import CorpusIndex
from core.retrieval.search import (
    CorpusProvider,
    DDGProvider,
    SearchChain,
    SearchResponse,
    SearxngProvider,
    build_providers,
)
from tests.helpers import Sleeps, free_port


@pytest.fixture
def web(shared_web):
    return shared_web


@pytest.fixture
def corpus(tmp_path: Path) -> CorpusProvider:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "python.md").write_text("# Python releases\nPython 3.6 added f-strings.", encoding="utf-8")
    (folder / "tea.txt").write_text("Green tea is steeped at 80 degrees.", encoding="utf-8")
    return CorpusProvider(CorpusIndex(tmp_path / "corpus.db", folder))


class DictCache:
    def __init__(self):
        self.rows: dict[tuple, list[dict]] = {}

    def get_search(self, provider, query, k):
        return self.rows.get((provider, query, k))

    def put_search(self, provider, query, k, results):
        self.rows[(provider, query, k)] = results


class FakeDDGS:
    """Stands in for ddgs.DDGS: records calls, then raises or answers as told."""

    def __init__(self, answer):
        self.answer = answer
        self.calls: list[dict] = []

    def __call__(self):  # the factory
        return self

    def text(self, query, **kwargs):
        self.calls.append({"query": query, **kwargs})
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Scripted:
    """A provider whose answers (results or errors) a test scripts."""

    def __init__(self, name, *answers):
        self.name = name
        self.answers = list(answers)
        self.calls = 0

    async def search(self, query, k):
        self.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


# -- SearXNG against the fake web -----------------------------------------------------------


async def test_searxng_maps_results(web):
    results = await SearxngProvider(web.searxng_url, timeout=5).search("Python 3.6 release", 3)
    assert 1 <= len(results) <= 3
    first = results[0]
    assert first.url == web.page_url("blog.python.org.html")
    assert first.title == "Python 3.6.0 is now available!"
    assert first.snippet.startswith("Python 3.6.0 is now available!")
    assert first.provider == "searxng"


async def test_searxng_429_is_rate_limited(web):
    web.rate_limit_next = 1
    with pytest.raises(SearchRateLimited, match="429") as info:
        await SearxngProvider(web.searxng_url).search("python", 3)
    assert info.value.retryable


async def test_searxng_500_is_unavailable(web):
    web.fail_search_next = 1
    with pytest.raises(SearchUnavailable, match="500"):
        await SearxngProvider(web.searxng_url).search("python", 3)


async def test_searxng_unreachable_is_unavailable():
    with pytest.raises(SearchUnavailable, match="could not be reached"):
        await SearxngProvider(f"http://127.0.0.1:{free_port()}", timeout=2).search("python", 3)


@pytest.mark.parametrize(
    "status, body, error, message",
    [
        (403, b"<h1>forbidden</h1>", SearchError, "enable the json format in SearXNG's settings.yml"),
        (404, b"<h1>nope</h1>", SearchError, "--searxng-url"),
        (200, b"<html>not json</html>", SearchError, "did not answer with SearXNG's JSON"),
        (200, b'{"results": [], "unresponsive_engines": [["google", "CAPTCHA"]]}', SearchUnavailable, "google CAPTCHA"),
    ],
)
async def test_searxng_errors_say_what_to_do(status, body, error, message):
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body))
    with pytest.raises(error, match=message.replace("+", r"\+")) as info:
        await SearxngProvider("http://searx.test/", transport=transport).search("python", 3)
    assert type(info.value) is error


async def test_searxng_sends_json_format_to_search_path():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(200, json={"results": [{"url": "https://a.example/", "title": "A", "content": "aa"}]})

    results = await SearxngProvider("http://searx.test/base/", transport=httpx.MockTransport(handler)).search("q x", 5)
    assert results == [SearchResult("https://a.example/", "A", "aa", "searxng")]
    assert seen[0].path == "/base/search"
    assert seen[0].params["format"] == "json" and seen[0].params["q"] == "q x"


# -- the chain -------------------------------------------------------------------------------


async def test_chain_backs_off_then_falls_back_with_a_warning(web, corpus):
    web.rate_limit_next = 10
    sleeps = Sleeps()
    chain = SearchChain([SearxngProvider(web.searxng_url), corpus], retries=2, backoff=0.5, sleep=sleeps)
    response = await chain.search("Python 3.6 release", 3)
    assert isinstance(response, SearchResponse)
    assert response.provider == "corpus"
    assert response.results[0].url.endswith("/python.md")
    assert sleeps == [0.5, 1.0]
    assert web.search_count == 3
    assert response.warnings == ["searxng: rate-limited (429) after 3 tries; used corpus"]
    assert not response.cached


async def test_chain_retries_and_succeeds_on_the_same_provider(web, corpus):
    web.rate_limit_next = 1
    sleeps = Sleeps()
    chain = SearchChain([SearxngProvider(web.searxng_url), corpus], retries=2, backoff=0.5, sleep=sleeps)
    response = await chain.search("Python 3.6 release", 3)
    assert response.provider == "searxng"
    assert response.results[0].url == web.page_url("blog.python.org.html")
    assert sleeps == [0.5]
    assert web.search_count == 2
    assert response.warnings == []


async def test_chain_raises_naming_every_provider_when_all_fail(web):
    web.rate_limit_next = 10
    ddg = DDGProvider(ddgs_factory=FakeDDGS(RatelimitException("202 Ratelimit")))
    chain = SearchChain([SearxngProvider(web.searxng_url), ddg], retries=1, backoff=0.1, sleep=Sleeps())
    with pytest.raises(SearchError) as info:
        await chain.search("python", 3)
    message = str(info.value)
    assert "searxng: rate-limited (429) after 2 tries" in message
    assert "ddg: rate-limited after 2 tries" in message
    assert "--search ddg,searxng" in message and "--searxng-url" in message
    assert isinstance(info.value, SearchRateLimited)  # all were rate limits: worth retrying later


async def test_chain_does_not_retry_a_setting_error():
    sleeps = Sleeps()
    broken = Scripted("searxng", SearchError("enable the json format"))
    good = Scripted("ddg", [SearchResult("https://a.example/", "A")])
    response = await SearchChain([broken, good], retries=3, backoff=1, sleep=sleeps).search("q", 5)
    assert broken.calls == 1 and sleeps == []
    assert response.provider == "ddg"
    assert response.warnings == ["searxng: failed; used ddg"]


async def test_chain_all_failed_with_a_setting_error_is_not_retryable():
    chain = SearchChain([Scripted("a", SearchError("bad")), Scripted("b", SearchUnavailable("down"))],
                        retries=0, backoff=1, sleep=Sleeps())
    with pytest.raises(SearchError, match="(?s)a: failed: bad.*b: unavailable: down") as info:
        await chain.search("q", 5)
    assert not info.value.retryable


async def test_chain_falls_back_when_a_provider_finds_nothing():
    first = Scripted("corpus", [])
    second = Scripted("ddg", [SearchResult("https://a.example/", "A"), SearchResult("https://a.example/", "A again")])
    response = await SearchChain([first, second], retries=2, backoff=1, sleep=Sleeps()).search("q", 5)
    assert response.provider == "ddg"
    assert [r.url for r in response.results] == ["https://a.example/"]  # duplicates dropped
    assert response.warnings == ["corpus: no results; used ddg"]


async def test_chain_returns_empty_when_the_last_provider_finds_nothing():
    response = await SearchChain([Scripted("a", []), Scripted("b", [])], retries=0, backoff=1).search("q", 5)
    assert response.results == [] and response.provider == "b"


async def test_chain_cuts_results_to_k():
    many = [SearchResult(f"https://a.example/{i}", str(i)) for i in range(10)]
    response = await SearchChain([Scripted("a", many)], retries=0, backoff=1).search("q", 3)
    assert len(response.results) == 3


async def test_cache_hit_makes_no_second_request(web):
    cache = DictCache()
    chain = SearchChain([SearxngProvider(web.searxng_url)], retries=0, backoff=1, cache=cache)
    first = await chain.search("Python  3.6 release ", 3)
    second = await chain.search("Python 3.6 release", 3)
    assert web.search_count == 1
    assert not first.cached and second.cached
    assert second.results == first.results and second.provider == "searxng"
    assert ("searxng", "Python 3.6 release", 3) in cache.rows


async def test_cache_of_a_fallback_provider_is_used_before_searching(web):
    cache = DictCache()
    cache.put_search("corpus", "tea", 2,
                     [{"url": "file:///tea.txt", "title": "tea", "snippet": "", "provider": "corpus"}])
    chain = SearchChain([SearxngProvider(web.searxng_url), Scripted("corpus", [])], retries=0, backoff=1, cache=cache)
    response = await chain.search("tea", 2)
    assert response.cached and response.provider == "corpus" and web.search_count == 0


@pytest.mark.parametrize("query", ["", "   \n"])
async def test_empty_query_is_an_error(query):
    with pytest.raises(SearchError, match="empty"):
        await SearchChain([Scripted("a", [])], retries=0, backoff=1).search(query, 3)


async def test_chain_read_local_reads_corpus_results(corpus):
    chain = SearchChain([Scripted("ddg", []), corpus], retries=0, backoff=1)
    response = await chain.search("green tea", 2)
    title, text = chain.read_local(response.results[0].url)
    assert title == "tea" and "80 degrees" in text
    assert chain.read_local("https://example.com/") is None


async def test_corpus_provider_with_a_vanished_folder_is_a_search_error(tmp_path):
    provider = CorpusProvider(CorpusIndex(tmp_path / "c.db", tmp_path / "gone"))
    with pytest.raises(SearchError, match="does not exist"):
        await provider.search("tea", 3)


# -- DuckDuckGo through ddgs ----------------------------------------------------------------


async def test_ddg_maps_results_and_names_the_backend():
    fake = FakeDDGS([
        {"title": " Python ", "href": "https://python.org/", "body": "The language."},
        {"title": "no link", "href": "", "body": ""},
    ])
    results = await DDGProvider(ddgs_factory=fake).search("python", 4)
    assert results == [SearchResult("https://python.org/", "Python", "The language.", "ddg")]
    assert fake.calls == [{"query": "python", "max_results": 4, "backend": "duckduckgo"}]


async def test_ddg_backends_come_from_settings():
    fake = FakeDDGS([])
    [ddg] = build_providers(SearchSettings(providers=("ddg",), ddg_backends="duckduckgo,brave"), ddgs_factory=fake)
    await ddg.search("python", 2)
    assert fake.calls[0]["backend"] == "duckduckgo,brave"


@pytest.mark.parametrize(
    "raised, error, reason",
    [
        (RatelimitException("https://html.duckduckgo.com/html 202 Ratelimit"), SearchRateLimited, "rate-limited"),
        (DDGSException(RatelimitException("wrapped")), SearchRateLimited, "rate-limited"),
        (DDGSException("No results found."), SearchRateLimited, "rate-limited (empty answer)"),
        (TimeoutException("timed out"), SearchUnavailable, "timed out"),
        (DDGSException("ConnectError: dns failure"), SearchUnreachable, "unreachable (DNS lookup failed)"),
    ],
)
async def test_ddg_errors_are_mapped(raised, error, reason):
    with pytest.raises(error) as info:
        await DDGProvider(ddgs_factory=FakeDDGS(raised)).search("python", 3)
    assert type(info.value) is error
    assert info.value.reason == reason
    assert isinstance(info.value.__cause__, DDGSException)


# -- build_providers -------------------------------------------------------------------------


def test_build_providers_in_order(tmp_path):
    settings = SearchSettings(providers=("searxng", "corpus", "ddg"), searxng_url="http://localhost:8888",
                              corpus_dir=tmp_path)
    providers = build_providers(settings, corpus_db_path=tmp_path / "index.db")
    assert [p.name for p in providers] == ["searxng", "corpus", "ddg"]
    assert providers[1].index.db_path == tmp_path / "index.db"


@pytest.mark.parametrize(
    "settings, message",
    [
        (SearchSettings(providers=("bing",)),
         "Unknown search provider 'bing': use one or more of ddg, searxng, corpus"),
        (SearchSettings(providers=()), "No search provider"),
        (SearchSettings(providers=("ddg", "ddg")), "listed twice"),
        (SearchSettings(providers=("searxng",)), "--searxng-url"),
        (SearchSettings(providers=("searxng",), searxng_url="localhost:8888"), "not an http"),
        (SearchSettings(providers=("corpus",)), "needs a folder"),
        (SearchSettings(providers=("corpus",), corpus_dir=Path("/no/such/folder")), "does not exist"),
        (SearchSettings(providers=("ddg",), ddg_backends="duckduckgo,altavista"), "altavista"),
    ],
)
def test_build_providers_errors(settings, message):
    with pytest.raises(ConfigError, match=message):
        build_providers(settings)


def test_chain_needs_a_provider():
    with pytest.raises(ConfigError):
        SearchChain([], retries=0, backoff=1)
