"""The Fetcher, over real HTTP against the fake web server, with real trafilatura."""

import asyncio
import contextlib
import re
from dataclasses import replace

import httpx
import pytest

from common.errors import (
    BlockedURL,
    ExtractionError,
    FetchTimeout,
    HTTPStatusError,
    PageTooLarge,
    TooManyRedirects,
    UnsupportedContentType,
)
from common.settings import FetchSettings
from core.retrieval.fetch import Fetcher
from core.retrieval.netguard import static_resolver
from tests.fakes.web_server import load_manifest

MANIFEST = load_manifest()
LOCAL = FetchSettings(allow_private_urls=True, timeout=5.0, step_deadline=10.0)


def words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


class DictCache:
    """The PageCache protocol over a dict, counting lookups."""

    def __init__(self):
        self.pages: dict[str, dict] = {}
        self.gets = 0

    def get_page(self, url):
        self.gets += 1
        return self.pages.get(url)

    def put_page(self, page):
        self.pages[page["url"]] = page


@pytest.fixture
def web(shared_web):
    return shared_web


@pytest.fixture
async def fetcher():
    async with Fetcher(LOCAL) as f:
        yield f


@contextlib.asynccontextmanager
async def raw_server(response: bytes):
    """A one-response-per-connection HTTP server on 127.0.0.1 that writes ``response`` as is
    (for what FakeWeb cannot send: no Content-Length, no Content-Type). Yields (url, requests)."""
    requests: list[bytes] = []

    async def handle(reader, writer):
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(response)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/", requests


# -- extraction ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", MANIFEST, ids=[entry["file"] for entry in MANIFEST])
async def test_fixture_pages_extract_with_title_and_text(web, fetcher, entry):
    url = web.page_url(entry["file"])
    page = await fetcher.fetch(url)
    assert page.ok and not page.cached
    assert page.title == entry["title"]
    start = words(entry["snippet"]).split()[:8]
    assert " ".join(start) in words(page.text)
    assert page.url == page.final_url == url
    assert page.content_type == "text/html"
    assert page.size == (web.folder / entry["file"]).stat().st_size
    assert page.seconds > 0
    assert not page.text.startswith("---")  # trafilatura's metadata header is not in the text


async def test_metadata_is_kept(web, fetcher):
    page = await fetcher.fetch(web.page_url("blog.python.org.html"))
    assert page.metadata["author"] == "Ned Deily"
    assert page.metadata["sitename"] == "blog.python.org"
    assert page.metadata["description"].startswith("Python 3.6.0 is now available!")
    assert set(page.metadata) <= {"author", "date", "sitename", "description"}


async def test_plain_text_is_taken_as_is(web, fetcher):
    body = "Notes on goats\n\nGoats climb trees in Morocco.\n  Indented line stays.\n"
    page = await fetcher.fetch(web.add_page("notes.txt", body, "text/plain; charset=utf-8"))
    assert page.text == body.strip()
    assert page.content_type == "text/plain"


async def test_the_declared_charset_is_used(web, fetcher):
    html = ("<html><head><title>Café</title></head>"
            "<body><p>Crème brûlée à la française, s'il vous plaît.</p></body></html>")
    url = web.add_page("latin.html", html.encode("iso-8859-1"), "text/html; charset=ISO-8859-1")
    page = await fetcher.fetch(url)
    assert page.title == "Café" and "Crème brûlée" in page.text


async def test_a_meta_charset_is_used_when_the_header_has_none(web, fetcher):
    html = ('<html><head><meta charset="windows-1252"><title>Déjà vu</title></head>'
            "<body><p>Déjà vu “quoted”, again and again.</p></body></html>")
    page = await fetcher.fetch(web.add_page("cp1252.html", html.encode("cp1252"), "text/html"))
    assert "Déjà vu “quoted”" in page.text


async def test_undecodable_bytes_become_replacement_characters(web, fetcher):
    body = b"<html><body><p>Broken \xff\xfe bytes in an otherwise fine paragraph of text.</p></body></html>"
    page = await fetcher.fetch(web.add_page("broken.html", body, "text/html; charset=utf-8"))
    assert "Broken \ufffd\ufffd bytes" in page.text


async def test_the_title_falls_back_to_the_title_element(web, fetcher):
    html = ("<html><head><title>Only &amp; title</title></head>"
            "<body><p>Some body text that is long enough to keep.</p></body></html>")
    page = await fetcher.fetch(web.add_page("titled.html", html))
    assert page.title == "Only & title"


async def test_a_page_without_main_text_is_an_extraction_error(web, fetcher):
    url = web.add_page("empty.html", "<html><head><title>Empty</title></head><body></body></html>")
    with pytest.raises(ExtractionError, match="No main text"):
        await fetcher.fetch(url)


async def test_a_missing_content_type_is_sniffed(fetcher):
    body = (b"<!DOCTYPE html><html><head><title>Sniffed</title></head>"
            b"<body><p>Found by sniffing the body.</p></body></html>")
    async with raw_server(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body) as (url, _):
        page = await fetcher.fetch(url)
    assert page.title == "Sniffed" and page.content_type == "text/html"


async def test_a_missing_content_type_on_something_else_is_refused(fetcher):
    async with raw_server(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + bytes(range(256))) as (url, _):
        with pytest.raises(UnsupportedContentType, match="no content type"):
            await fetcher.fetch(url)


async def test_the_user_agent_is_sent(fetcher):
    body = b"<html><body><p>Hello there, reader of headers.</p></body></html>"
    response = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + body
    async with raw_server(response) as (url, requests):
        await fetcher.fetch(url)
    assert f"user-agent: {LOCAL.user_agent}".lower() in requests[0].decode().lower()


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("code", [404, 500, 403, 429])
async def test_error_statuses(web, fetcher, code):
    url = web.url(f"/status/{code}")
    with pytest.raises(HTTPStatusError) as err:
        await fetcher.fetch(url)
    assert err.value.status == code
    assert err.value.retryable == (code >= 500 or code == 429)
    page = await fetcher.read(url)
    assert page.status == "error" and not page.ok
    assert url in page.error and f"answered {code}" in page.error
    assert page.text == ""


async def test_a_slow_page_times_out(web):
    async with Fetcher(replace(LOCAL, timeout=0.5)) as fetcher:
        with pytest.raises(FetchTimeout, match=r"did not answer within 0\.5 s"):
            await fetcher.fetch(web.url("/slow/3"))


async def test_a_page_over_the_size_cap_is_refused(web):
    async with Fetcher(replace(LOCAL, max_bytes=100_000)) as fetcher:
        with pytest.raises(PageTooLarge, match="larger than the limit of 100,000 bytes"):
            await fetcher.fetch(web.url("/huge"))


async def test_the_size_cap_holds_without_a_content_length():
    body = b"<html><body>" + b"<p>all work and no play</p>" * 10_000 + b"</body></html>"
    response = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + body
    async with Fetcher(replace(LOCAL, max_bytes=50_000)) as fetcher:
        async with raw_server(response) as (url, _):
            with pytest.raises(PageTooLarge):
                await fetcher.fetch(url)


@pytest.mark.parametrize("path, media", [("/binary", "application/octet-stream"), ("/image", "image/png")])
async def test_other_content_types_are_refused(web, fetcher, path, media):
    with pytest.raises(UnsupportedContentType, match=media):
        await fetcher.fetch(web.url(path))


async def test_a_redirect_loop_is_stopped(web, fetcher):
    with pytest.raises(TooManyRedirects, match="loop"):
        await fetcher.fetch(web.url("/redirect-loop"))
    assert len(web.requests) == 1


@pytest.mark.parametrize("n", [3, 5])
async def test_redirects_are_followed(web, fetcher, n):
    page = await fetcher.fetch(web.url(f"/redirect/{n}"))
    assert page.title == "Arrived" and "made it through" in page.text
    assert page.url == web.url(f"/redirect/{n}")
    assert page.final_url == web.url("/redirect/0")
    assert len(web.requests) == n + 1


async def test_too_many_redirects(web, fetcher):
    with pytest.raises(TooManyRedirects, match="more than 5 times"):
        await fetcher.fetch(web.url("/redirect/6"))
    assert len(web.requests) == 6


async def test_an_unreachable_host_is_a_read_error(fetcher):
    page = await fetcher.read("http://127.0.0.1:9/nothing-listens-here")
    assert page.status == "error" and "Could not read" in page.error


# -- many pages -------------------------------------------------------------------------------
# How long these take is measured by `python -m bench.fetch`; here the server counts what overlaps.
async def test_read_many_yields_pages_as_they_complete(web, fetcher):
    files = ["salon.com.emissions.html", "lemire.me.json.html", "reuters.com.parasite.html", "vice.com.amazon.html"]
    web.gather = 4  # each page waits until all four are being answered at once
    slow = web.hold(files[0])  # the first URL is answered only once the other three have come back
    stream = fetcher.read_many([web.page_url(f) for f in files])
    pages = [await anext(stream) for _ in range(3)]
    slow.set()
    pages += [page async for page in stream]
    assert all(page.ok for page in pages)
    assert pages[-1].url == web.page_url(files[0])  # the slow one last
    assert {page.url for page in pages[:3]} == {web.page_url(f) for f in files[1:]}
    assert web.max_in_flight == 4  # concurrent: all four at once, not one after another


async def test_read_many_reads_up_to_the_concurrency_limit_at_once(web):
    files = ["salon.com.emissions.html", "lemire.me.json.html", "reuters.com.parasite.html"]
    web.gather = 3
    async with Fetcher(replace(LOCAL, concurrency=8)) as fetcher:
        pages = [page async for page in fetcher.read_many([web.page_url(f) for f in files])]
    assert len(pages) == 3 and all(page.ok for page in pages)
    assert web.max_in_flight == 3


async def test_read_many_respects_the_concurrency_limit(web):
    files = ["salon.com.emissions.html", "lemire.me.json.html", "reuters.com.parasite.html"]
    web.page_delay = 0.2  # time for a second request to overlap, were one sent
    async with Fetcher(replace(LOCAL, concurrency=1)) as fetcher:
        pages = [page async for page in fetcher.read_many([web.page_url(f) for f in files])]
    assert len(pages) == 3 and web.max_in_flight == 1  # one at a time


async def test_the_deadline_turns_slow_pages_into_errors(web, fetcher):
    urls = [web.url("/slow/2"), web.page_url("lemire.me.json.html")]  # 2 s: well within the 5 s timeout
    pages = [page async for page in fetcher.read_many(urls, deadline=0.5)]
    assert [page.url for page in pages] == [urls[1], urls[0]]
    assert pages[0].ok
    assert pages[1].status == "error"
    assert "not read within the step's deadline of 0.5 s" in pages[1].error


async def test_errors_come_back_as_pages_in_read_many(web, fetcher):
    urls = [web.url("/status/404"), web.url("/image"), web.page_url("lemire.me.json.html")]
    pages = {page.url: page async for page in fetcher.read_many(urls)}
    assert set(pages) == set(urls)
    assert [pages[url].status for url in urls] == ["error", "error", "ok"]


async def test_stopping_read_many_early_cancels_the_rest(web, fetcher):
    urls = [web.page_url("lemire.me.json.html"), web.url("/slow/2"), web.url("/slow/2")]
    stream = fetcher.read_many(urls)
    first = await anext(stream)
    assert first.ok
    await stream.aclose()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


# -- cache ------------------------------------------------------------------------------------
async def test_a_cached_page_makes_no_request(web):
    cache = DictCache()
    url = web.page_url("lemire.me.json.html")
    async with Fetcher(LOCAL, cache=cache) as fetcher:
        first = await fetcher.fetch(url)
        assert not first.cached and url in cache.pages
        requests = len(web.requests)
        second = await fetcher.fetch(url)
    assert len(web.requests) == requests
    assert second.cached
    assert (second.title, second.text, second.final_url) == (first.title, first.text, first.final_url)
    assert second.metadata == first.metadata


async def test_a_page_a_run_read_without_metadata_is_read_again_for_a_reader_that_shows_it(web):
    cache = DictCache()
    url = web.page_url("blog.python.org.html")
    async with Fetcher(LOCAL, cache=cache, metadata=False) as run_reader:
        plain = await run_reader.fetch(url)
    assert plain.metadata == {} and plain.title.startswith("Python Insider:")
    async with Fetcher(LOCAL, cache=cache) as shower:
        full = await shower.fetch(url)
        again = await shower.fetch(url)
    assert not full.cached and full.metadata.get("date") and full.title == "Python 3.6.0 is now available!"
    assert again.cached and again.metadata == full.metadata
    async with Fetcher(LOCAL, cache=cache, metadata=False) as run_reader:
        assert (await run_reader.fetch(url)).cached, "a page with metadata serves a run too"


async def test_a_cache_that_keeps_only_some_fields_still_hits(web):
    class StoreLike(DictCache):  # like data/store.py: no status, a timestamp of its own
        def put_page(self, page):
            kept = {k: page[k] for k in ("url", "final_url", "title", "text", "size")}
            self.pages[page["url"]] = kept | {"fetched": "now"}

    cache = StoreLike()
    url = web.page_url("lemire.me.json.html")
    async with Fetcher(LOCAL, cache=cache) as fetcher:
        first = await fetcher.fetch(url)
        second = await fetcher.fetch(url)
    assert second.cached and second.ok and second.text == first.text and second.size == first.size


async def test_errors_are_not_cached(web):
    cache = DictCache()
    async with Fetcher(LOCAL, cache=cache) as fetcher:
        page = await fetcher.read(web.url("/status/500"))
    assert page.status == "error" and cache.pages == {}


# -- SSRF -------------------------------------------------------------------------------------
async def test_the_fake_server_itself_is_blocked_by_default(web):
    async with Fetcher(replace(LOCAL, allow_private_urls=False)) as fetcher:
        with pytest.raises(BlockedURL, match="127.0.0.1 is a loopback address"):
            await fetcher.fetch(web.page_url("lemire.me.json.html"))
        page = await fetcher.read(web.url("/status/200"))
    assert page.status == "error" and "--allow-private-urls" in page.error
    assert web.requests == []


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/",
     "http://2130706433/", "http://0x7f000001/", "ftp://example.com/", "file:///etc/passwd",
     "http://[::ffff:127.0.0.1]/", "http://public.test/"],
)
async def test_the_fetcher_blocks_private_urls(url):
    resolver = static_resolver({"public.test": ["192.168.1.5"]})
    async with Fetcher(FetchSettings(), resolver=resolver) as fetcher:
        with pytest.raises(BlockedURL):
            await fetcher.fetch(url)


async def test_a_redirect_to_a_private_address_is_blocked():
    # The one place a mock transport stands in for HTTP: it tests our redirect loop, which must
    # run the guard on every hop. "public.test" resolves to a public address.
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(302, headers={"Location": "http://10.0.0.1/admin"})

    resolver = static_resolver({"public.test": ["93.184.216.34"]})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        fetcher = Fetcher(FetchSettings(), client=client, resolver=resolver)
        with pytest.raises(BlockedURL, match=r"10\.0\.0\.1 is a private address"):
            await fetcher.fetch("http://public.test/start")
        await fetcher.aclose()
        assert not client.is_closed  # an injected client belongs to the caller
    assert seen == ["http://public.test/start"]


async def test_a_redirect_to_another_scheme_is_blocked_even_when_private_is_allowed(web, fetcher):
    with pytest.raises(BlockedURL, match="not file"):
        await fetcher.fetch(web.url("/redirect-to?url=file:///etc/passwd"))
