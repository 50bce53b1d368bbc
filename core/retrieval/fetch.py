"""Fetching pages: the SSRF guard on every hop, our own timeout, size cap, content-type check and
redirect limit, then main-text extraction (:func:`core.retrieval.extract.extract_html`: Markdown, with metadata).

:meth:`Fetcher.fetch` raises a :class:`~common.errors.FetchError` subclass; :meth:`Fetcher.read`
and :meth:`Fetcher.read_many` turn those into ``Page(status="error")``, because a dead page is
never fatal to a run. Every error message is one line naming the URL, what happened and, where
there is one, the fix.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import AsyncIterator
from typing import Protocol

import httpx

from common.errors import (
    ExtractionError,
    FetchError,
    FetchTimeout,
    HTTPStatusError,
    PageTooLarge,
    TooManyRedirects,
    UnsupportedContentType,
)
from common.settings import FetchSettings
from common.types import Page
from core.retrieval.extract import extract_html_async
from core.retrieval.netguard import Resolver, check_url, guarded_transport
from core.tls import TLS

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = (*HTML_TYPES, "text/plain")
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"

_PAGE_FIELDS = frozenset(f.name for f in dataclasses.fields(Page))
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_HTML_START = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|title|meta|p|div|h1)\b", re.I | re.S)


class PageCache(Protocol):
    """Where fetched pages are kept between runs (the store provides one).

    ``put_page(page)`` receives ``dataclasses.asdict(page)`` of a successful Page (error pages
    are never stored); it may keep any subset of the keys (at least ``text``). ``get_page(url)``
    returns what was kept for that URL (the requested URL, not the final one), or None. Extra
    keys are ignored, missing ones take Page's defaults. Both are called on the event loop's
    thread."""

    def get_page(self, url: str) -> dict | None: ...

    def put_page(self, page: dict) -> None: ...


class Fetcher:
    """Reads web pages for the retrieval path. Use as ``async with Fetcher(settings) as f:`` or
    call :meth:`aclose` when done.

    ``client`` replaces the httpx client we would build (tests, proxies); redirects are followed
    here, not by httpx, whatever the client says. ``resolver`` replaces getaddrinfo in the SSRF
    guard (see :mod:`core.retrieval.netguard`). ``tls``: the TLS contexts of the app's clients
    (``Clients``), shared rather than made anew (None: httpx makes its own)."""

    def __init__(
        self,
        settings: FetchSettings,
        *,
        cache: PageCache | None = None,
        client: httpx.AsyncClient | None = None,
        resolver: Resolver | None = None,
        metadata: bool = True,
        tls: TLS | None = None,
    ):
        self.settings = settings
        self.metadata = metadata  # False: text and <title> only (core.retrieval.extract), half the work per page
        self._cache = cache
        self._resolver = resolver
        self._own_client = client is None
        limits = httpx.Limits(max_connections=max(settings.concurrency, 1) * 2)
        self._client = client or self._own_client_for(settings, resolver, limits, tls)
        self._headers = {"User-Agent": settings.user_agent, "Accept": ACCEPT}

    @staticmethod
    def _own_client_for(settings: FetchSettings, resolver: Resolver | None, limits: httpx.Limits,
                        tls: TLS | None) -> httpx.AsyncClient:
        verify = tls.web(trust_env=True) if tls is not None else True  # (httpx's default context, made once)
        return httpx.AsyncClient(
            follow_redirects=False,
            timeout=settings.timeout,
            limits=limits,
            verify=verify,
            # the guard again where connections are made: no DNS rebinding after the check
            transport=None if settings.allow_private_urls else guarded_transport(resolver, limits=limits,
                                                                                 verify=verify),
        )

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the httpx client if we built it (an injected client belongs to the caller)."""
        if self._own_client:
            await self._client.aclose()

    # -- one page --------------------------------------------------------------------------
    async def fetch(self, url: str) -> Page:
        """Fetch ``url`` and extract its main text, or return it from the cache.

        Raises BlockedURL, FetchTimeout, HTTPStatusError, PageTooLarge, UnsupportedContentType,
        TooManyRedirects, ExtractionError, or FetchError (unresolvable host, connection
        failure)."""
        started = time.monotonic()
        timeout = self.settings.timeout
        try:
            async with asyncio.timeout(timeout):
                await self._check(url)
                cached = self._from_cache(url, started)
                if cached is not None:
                    return cached
                final_url, media, charset, body = await self._download(url)
        except TimeoutError as exc:
            raise FetchTimeout(
                f"{url} did not answer within {timeout:g} s; the site is slow or unreachable, try again later."
            ) from exc

        decoded = _decode(body, charset, media)
        if media == "text/plain":
            title, text, metadata = "", decoded.lstrip("\ufeff").strip(), {}
        else:
            page = await extract_html_async(decoded, url=str(final_url), label=url, metadata=self.metadata)
            title, text, metadata = page.title, page.text, page.metadata
        if not text.strip():
            raise ExtractionError(
                f"No main text could be extracted from {url}; the page may be empty, behind a login, "
                "or built by JavaScript."
            )
        page = Page(
            url=url,
            status="ok",
            title=title,
            text=text,
            final_url=str(final_url),
            content_type=media,
            size=len(body),
            seconds=time.monotonic() - started,
            metadata=metadata,
        )
        if self._cache is not None:
            self._cache.put_page(dataclasses.asdict(page))
        return page

    async def read(self, url: str) -> Page:
        """Like :meth:`fetch`, but a page that cannot be read comes back as
        ``Page(status="error", error=message)`` instead of raising."""
        started = time.monotonic()
        try:
            return await self.fetch(url)
        except FetchError as exc:
            return Page(url=url, status="error", error=str(exc), seconds=time.monotonic() - started)

    async def read_many(self, urls: list[str], *, deadline: float | None = None) -> AsyncIterator[Page]:
        """Read ``urls`` concurrently (at most ``settings.concurrency`` at once) and yield each
        Page as it completes. Pages not read ``deadline`` seconds from now (default
        ``settings.step_deadline``) are cancelled and yielded last, as errors, in input order.

        Closing the iterator early (``contextlib.aclosing``, or ``aclose()``) cancels the pages
        still being read; a plain ``break`` leaves that to garbage collection."""
        deadline = self.settings.step_deadline if deadline is None else deadline
        semaphore = asyncio.Semaphore(max(self.settings.concurrency, 1))

        async def one(url: str) -> Page:
            async with semaphore:
                return await self.read(url)

        tasks = [asyncio.create_task(one(url)) for url in urls]
        order = {task: n for n, task in enumerate(tasks)}
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline
        pending = set(tasks)
        try:
            while pending:
                left = end - loop.time()
                if left <= 0:
                    break
                done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=order.__getitem__):
                    yield task.result()
            late = sorted(pending, key=order.__getitem__)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            for task in late:
                if not task.cancelled():  # it finished in the moment between the wait and the cancel
                    yield task.result()
                    continue
                url = urls[order[task]]
                yield Page(
                    url=url,
                    status="error",
                    error=f"{url} was not read within the step's deadline of {deadline:g} s; "
                    "the step goes on without it.",
                    seconds=deadline,
                )
        finally:  # the consumer stopped early (or was cancelled): stop the pages still running
            unfinished = [task for task in tasks if not task.done()]
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)

    # -- internals ---------------------------------------------------------------------------
    async def _check(self, url: str | httpx.URL) -> None:
        await check_url(url, allow_private=self.settings.allow_private_urls, resolver=self._resolver)

    def _from_cache(self, url: str, started: float) -> Page | None:
        if self._cache is None:
            return None
        data = self._cache.get_page(url)
        if not data or data.get("status", "ok") != "ok":
            return None
        if self.metadata and data.get("metadata") == {} and data.get("content_type") != "text/plain":
            # read by a run, which kept no metadata: read it again for a reader that shows it (a page
            # that has none is read again too; only `fetch`, one page at a time, asks for metadata)
            return None
        fields = {key: value for key, value in data.items() if key in _PAGE_FIELDS}
        page = Page(**{**fields, "url": url, "status": "ok"})
        return dataclasses.replace(page, cached=True, seconds=time.monotonic() - started)

    async def _download(self, url: str) -> tuple[httpx.URL, str, str, bytes]:
        """GET ``url`` (already checked by the guard), following redirects ourselves so that the
        guard sees every hop. Returns (final URL, media type, charset, body)."""
        current = httpx.URL(url)
        seen = {str(current)}
        limit = self.settings.max_redirects
        for hop in range(limit + 1):
            if hop:
                await self._check(current)
            try:
                async with self._client.stream(
                    "GET", current, headers=self._headers, follow_redirects=False
                ) as response:
                    if response.is_redirect:
                        target = _redirect_target(url, current, response)
                        if str(target) in seen:
                            raise TooManyRedirects(
                                f"{url} redirects in a loop (back to {target}); the site is misconfigured."
                            )
                        seen.add(str(target))
                        current = target
                        continue
                    _check_status(url, response)
                    media, charset = _content_type(response.headers.get("content-type", ""))
                    if media and media not in TEXT_TYPES:
                        raise UnsupportedContentType(
                            f"{url} is {media}, not a web page (HTML, XHTML or plain text); it is skipped."
                        )
                    body = await self._read_body(url, response)
            except httpx.TimeoutException as exc:
                raise FetchTimeout(
                    f"{url} did not answer within {self.settings.timeout:g} s; the site is slow or "
                    "unreachable, try again later."
                ) from exc
            except httpx.HTTPError as exc:
                reason = str(exc) or type(exc).__name__
                raise FetchError(f"Could not read {url}: {reason}. Check the URL or try again later.") from exc
            if not media:
                if not _HTML_START.match(body[:2048]):
                    raise UnsupportedContentType(
                        f"{url} sent no content type and does not look like HTML; it is skipped."
                    )
                media = "text/html"
            return current, media, charset, body
        raise TooManyRedirects(f"{url} redirected more than {limit} times; the site is misconfigured.")

    async def _read_body(self, url: str, response: httpx.Response) -> bytes:
        cap = self.settings.max_bytes
        too_large = f"{url} is larger than the limit of {cap:,} bytes; it is skipped."
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise PageTooLarge(too_large)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():  # decoded: the cap also stops compression bombs
            size += len(chunk)
            if size > cap:
                raise PageTooLarge(too_large)
            chunks.append(chunk)
        return b"".join(chunks)


# -- helpers -----------------------------------------------------------------------------------
def _redirect_target(url: str, current: httpx.URL, response: httpx.Response) -> httpx.URL:
    location = response.headers["location"]
    try:
        return current.join(location)
    except httpx.InvalidURL as exc:
        raise FetchError(f"{url} redirects to an invalid URL ({location!r}); the site is misconfigured.") from exc


def _check_status(url: str, response: httpx.Response) -> None:
    code = response.status_code
    if code < 400:
        return
    if code in (404, 410):
        hint = "the page is gone or the URL is wrong"
    elif code in (401, 403):
        hint = "the site needs a login or refuses automated readers"
    elif code == 429:
        hint = "the site says we read too often, try again later"
    elif code >= 500:
        hint = "the site has a problem, try again later"
    else:
        hint = "the site refused the request"
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    raise HTTPStatusError(f"{url} answered {code}{reason}; {hint}.", code)


def _content_type(header: str) -> tuple[str, str]:
    """("text/html", "utf-8") from "text/html; charset=UTF-8"; ("", "") when absent."""
    media, _, params = header.partition(";")
    charset = ""
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower()
    return media.strip().lower(), charset


def _decode(body: bytes, charset: str, media: str) -> str:
    """Decode with the declared charset (header, else an HTML <meta>), falling back to UTF-8;
    undecodable bytes become U+FFFD."""
    if not charset and media in HTML_TYPES:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii").lower() if found else ""
    if body.startswith(b"\xef\xbb\xbf"):
        charset = "utf-8-sig"
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")

