"""Web and local search: one small class per provider behind the ``SearchProvider`` protocol,
and ``SearchChain``, which retries a provider with backoff, falls back to the next one and
caches what it found.

Providers raise only our errors: ``SearchRateLimited`` and ``SearchUnavailable`` (retryable),
``SearchUnreachable`` (the host could not be reached at all: DNS, connection refused; the
chain skips the provider for the rest of its life) or ``SearchError`` (retrying will not help:
a wrong setting). Every message says what went wrong in words (never a lower layer's repr) and
what to do, on one line.

Nothing here reads the environment: ``build_providers`` receives ``SearchSettings``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import math
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from common.errors import (
    ConfigError,
    RatStudioError,
    SearchError,
    SearchRateLimited,
    SearchUnavailable,
    SearchUnreachable,
    StoreError,
)
from common.settings import SEARCH_PROVIDERS, SearchSettings
from common.types import SearchResult
from core.tls import TLS

log = logging.getLogger(__name__)

FIX_HINT = (
    "Wait a minute and try again, or add another provider: "
    "--search ddg,searxng with --searxng-url URL (a SearXNG instance), "
    "or a local folder with --search ddg,corpus."
)


class SearchProvider(Protocol):
    """One search backend. ``search`` returns at most ``k`` results, best first, and raises
    SearchRateLimited / SearchUnavailable (worth retrying later) or SearchError."""

    name: str

    async def search(self, query: str, k: int) -> list[SearchResult]: ...


class SearchCache(Protocol):
    """Where the chain keeps results (the store's ``searches`` table). Both methods are called
    on the event loop's thread and must be quick; they may raise StoreError, which the chain
    reports as a warning and otherwise ignores."""

    def get_search(self, provider: str, query: str, k: int) -> list[dict] | None: ...

    def put_search(self, provider: str, query: str, k: int, results: list[dict]) -> None: ...


def _reason(err: SearchError) -> str:
    """The short form of ``err`` the chain shows in its warnings: the error's own ``reason``, else
    one that follows from its class."""
    if err.reason:
        return err.reason
    if isinstance(err, SearchUnreachable):
        return f"unreachable ({err.cause or 'could not connect'})"
    if isinstance(err, SearchRateLimited):
        return "rate-limited"
    if isinstance(err, SearchUnavailable):
        return "unavailable"
    return "failed"


def _unreachable(provider: str, who: str, cause: str, fix: str) -> SearchUnreachable:
    """``who`` (e.g. "searxng at http://host:8888") could not be reached for ``cause``."""
    return SearchUnreachable(f"{who} could not be reached ({cause}): {fix}.", provider=provider, cause=cause,
                             fix=fix, reason=f"unreachable ({cause})")


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it wraps: its ``__cause__``/``__context__`` and the
    exceptions in its args (ddgs wraps one DDGSException in another that way)."""
    chain: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or any(e is seen for seen in chain):
            continue
        chain.append(e)
        todo.extend(a for a in e.args if isinstance(a, BaseException))
        todo += [e.__cause__, e.__context__]
    return chain


_URL = re.compile(r"\(?\b(?:https?|socks5h?)://[^\s)]*\)?")
_CONNECT_TYPES = {"ConnectError", "DNSError", "gaierror", "herror", "ConnectionRefusedError"}
_CONNECT_TEXT = re.compile(r"\b(?:ConnectError|DNSError|dns error|connect error|tcp connect)\b", re.I)
_UNREACHABLE_CAUSES = (  # (what lower layers say, the cause in words); the first that matches wins
    (re.compile(r"\bSSL|certificate|\btls\b", re.I), "TLS handshake failed"),
    (re.compile(r"\bdns|gaierror|resolv|name or service not known|nodename nor servname|name resolution|"
                r"getaddrinfo|no address associated", re.I), "DNS lookup failed"),
    (re.compile(r"refused|errno 111\b|errno 61\b|10061", re.I), "connection refused"),
    (re.compile(r"no route to host|errno 113\b", re.I), "no route to host"),
    (re.compile(r"network is unreachable|errno 101\b", re.I), "network unreachable"),
)


def _unreachable_cause(exc: BaseException) -> str | None:
    """What kept us from reaching the host, in words ("DNS lookup failed", "connection
    refused", ...), when ``exc`` (or what it wraps) is a failure to connect; None otherwise
    (the host was reached and answered badly, or it was too slow)."""
    chain = _exception_chain(exc)
    names = {t.__name__ for e in chain for t in type(e).__mro__}
    text = _URL.sub(" ", " ".join([str(e) for e in chain] + [type(e).__name__ for e in chain]))
    if not (names & _CONNECT_TYPES or _CONNECT_TEXT.search(text)):
        return None
    return next((cause for pattern, cause in _UNREACHABLE_CAUSES if pattern.search(text)), "could not connect")


_WRAPPED_REPR = re.compile(r"\b(\w+): \1\((['\"])(.*)\2\)", re.S)  # ddgs: "DNSError: DNSError('...')"
_REPR = re.compile(r"\b\w*(?:Error|Exception)\((['\"])(.*?)\1\)", re.S)


def _plain(exc: BaseException, limit: int = 200) -> str:
    """A lower layer's message without Python reprs or newlines, cut to ``limit``."""
    text = str(exc) or type(exc).__name__
    text = _REPR.sub(r"\2", _WRAPPED_REPR.sub(r"\3", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- DuckDuckGo ------------------------------------------------------------------------------


def _default_ddgs_factory(timeout: float) -> Callable[[], Any]:
    def make() -> Any:
        from ddgs import DDGS

        return DDGS(timeout=max(1, math.ceil(timeout)))

    return make


def ddg_backend_names() -> list[str]:
    """The text backends the installed ``ddgs`` knows, plus "auto"."""
    from ddgs.engines import ENGINES

    return sorted(ENGINES["text"]) + ["auto"]


class DDGProvider:
    """DuckDuckGo (or another engine) through the ``ddgs`` package, run in a worker thread.

    ``backends`` is passed explicitly to ``DDGS().text`` (ddgs would otherwise pick engines at
    random). ``ddgs_factory`` returns an object with ddgs' ``text(query, max_results=,
    backend=)``; tests inject a fake."""

    name = "ddg"
    #: what to do when DuckDuckGo cannot be reached
    UNREACHABLE_FIX = ("check the network (and DDGS_PROXY if you use a proxy), "
                       "or use --search searxng or corpus")

    def __init__(self, backends: str = "duckduckgo", timeout: float = 15.0,
                 ddgs_factory: Callable[[], Any] | None = None):
        self.backends = backends
        self.timeout = timeout
        self._factory = ddgs_factory or _default_ddgs_factory(timeout)

    def _search_sync(self, query: str, k: int) -> list[dict]:
        return self._factory().text(query, max_results=k, backend=self.backends)

    async def search(self, query: str, k: int) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            # ddgs has its own timeouts, but a worker thread cannot be cancelled: bound the wait.
            rows = await asyncio.wait_for(asyncio.to_thread(self._search_sync, query, k), self.timeout * 2 + 5)
        except TimeoutError as exc:
            raise SearchUnavailable(f"DuckDuckGo did not answer within {self.timeout * 2 + 5:.0f} s. "
                                    "Check your connection, or try again later.", reason="timed out") from exc
        except DDGSException as exc:
            cause = exc.args[0] if exc.args else None
            if isinstance(exc, RatelimitException) or isinstance(cause, RatelimitException):
                raise SearchRateLimited(f"DuckDuckGo rate-limited us ({_plain(exc)}). {FIX_HINT}",
                                        reason="rate-limited") from exc
            if isinstance(exc, TimeoutException) or isinstance(cause, TimeoutException) or "timed out" in str(exc):
                raise SearchUnavailable(
                    f"DuckDuckGo timed out ({_plain(exc)}). Check your connection, or try again later.",
                    reason="timed out") from exc
            if str(exc) == "No results found.":
                # ddgs turns DuckDuckGo's silent rate limit (an empty page) into this, and cannot
                # tell it apart from a query that has no results: treat it as a rate limit.
                raise SearchRateLimited("DuckDuckGo returned no results; it does this when it rate-limits a "
                                        f"client (ddgs cannot tell the two apart). {FIX_HINT}",
                                        reason="rate-limited (empty answer)") from exc
            if unreachable := _unreachable_cause(exc):
                raise _unreachable(self.name, "ddg (DuckDuckGo)", unreachable, self.UNREACHABLE_FIX) from exc
            raise SearchUnavailable(f"DuckDuckGo failed ({_plain(exc)}). Try again later, or check "
                                    "your internet connection (and DDGS_PROXY if you use a proxy).",
                                    reason="unavailable") from exc
        return [
            SearchResult(url=row["href"], title=(row.get("title") or "").strip(),
                         snippet=(row.get("body") or "").strip(), provider=self.name)
            for row in rows or []
            if row.get("href")
        ][:k]


# -- SearXNG ---------------------------------------------------------------------------------


class SearxngProvider:
    """A SearXNG instance's JSON API: ``GET {base_url}/search?q=..&format=json``.

    The JSON format must be enabled in the instance's settings.yml (``search.formats``); it is
    off by default and the instance then answers 403. ``transport`` is httpx's seam for tests.
    Proxies from the environment are not used (core reads no environment)."""

    name = "searxng"

    def __init__(self, base_url: str, timeout: float = 15.0, *, transport: httpx.AsyncBaseTransport | None = None,
                 tls: TLS | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._transport = transport
        self._tls = tls  # the app's shared TLS contexts (``Clients``); None: httpx makes one
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        """One client (and its kept-alive connection) for all of a run's searches."""
        if self._client is None:
            verify = self._tls.web(trust_env=False) if self._tls is not None else True
            self._client = httpx.AsyncClient(timeout=self.timeout, transport=self._transport, trust_env=False,
                                             verify=verify, headers={"Accept": "application/json"})
        return self._client

    async def search(self, query: str, k: int) -> list[SearchResult]:
        url = f"{self.base_url}/search"
        try:
            response = await self._http().get(url, params={"q": query, "format": "json"})
        except httpx.TimeoutException as exc:
            raise SearchUnavailable(f"SearXNG at {self.base_url} did not answer within {self.timeout:g} s.",
                                    reason="timed out") from exc
        except httpx.HTTPError as exc:
            if unreachable := _unreachable_cause(exc):
                raise _unreachable(self.name, f"searxng at {self.base_url}", unreachable,
                                   "check --searxng-url and that the instance is running, "
                                   "or use --search ddg or corpus") from exc
            raise SearchUnavailable(f"SearXNG at {self.base_url} failed ({type(exc).__name__}: "
                                    f"{_plain(exc)}). Check --searxng-url and that the instance is running.",
                                    reason="unavailable") from exc
        status = response.status_code
        if status == 429:
            raise SearchRateLimited(f"SearXNG at {self.base_url} answered 429 Too Many Requests: its limiter "
                                    "is on. For a private instance set server.limiter: false in settings.yml, "
                                    "or wait a minute.", reason="rate-limited (429)")
        if status >= 500:
            raise SearchUnavailable(f"SearXNG at {self.base_url} answered {status}. Try again later, or check "
                                    "the instance's log.", reason=f"unavailable ({status})")
        if status == 403:
            raise SearchError(f"SearXNG at {self.base_url} refused the JSON format (403): enable the json "
                              "format in SearXNG's settings.yml (search.formats: [html, json]) and restart it.",
                              reason="refused (403)")
        if status != 200:
            raise SearchError(f"SearXNG at {self.base_url} answered {status} to {url}. Check --searxng-url "
                              "(the instance's base URL, without /search).", reason=f"failed ({status})")
        try:
            payload = response.json()
            rows = payload["results"]
        except (ValueError, KeyError, TypeError) as exc:
            raise SearchError(f"{url} did not answer with SearXNG's JSON. Check --searxng-url "
                              "(the instance's base URL, without /search).", reason="not SearXNG JSON") from exc
        results = [
            SearchResult(url=row["url"], title=(row.get("title") or "").strip(),
                         snippet=(row.get("content") or "").strip(), provider=self.name)
            for row in rows
            if isinstance(row, dict) and row.get("url")
        ][:k]
        if not results and payload.get("unresponsive_engines"):
            engines = ", ".join(" ".join(map(str, e)) if isinstance(e, list) else str(e)
                                for e in payload["unresponsive_engines"])
            raise SearchUnavailable(f"SearXNG at {self.base_url} found nothing because its engines did not "
                                    f"answer: {engines}. Try again later, or enable other engines.",
                                    reason="engines unresponsive")
        return results


# -- local corpus ----------------------------------------------------------------------------


class CorpusProvider:
    """A folder of the author's files (``core.retrieval.corpus.CorpusIndex``, BM25 over SQLite FTS5).

    The index is brought up to date with the folder on first use (in a worker thread); call
    :meth:`refresh` to pick up later changes. Results have ``file://`` URLs: take their text
    with :meth:`read`, not with the fetcher."""

    name = "corpus"

    def __init__(self, index: Any):  # core.retrieval.corpus.CorpusIndex
        self.index = index
        self._fresh = False

    async def refresh(self) -> dict[str, int]:
        """Re-index changed files now; returns ``CorpusIndex.refresh``'s counts."""
        try:
            counts = await asyncio.to_thread(self.index.refresh)
        except RatStudioError as exc:  # ConfigError (folder gone), StoreError
            raise SearchError(f"The local corpus cannot be searched: {exc}", reason="unreadable") from exc
        self._fresh = True
        log.info("corpus %s refreshed: %s", getattr(self.index, "folder", ""), counts)
        return counts

    async def search(self, query: str, k: int) -> list[SearchResult]:
        if not self._fresh:
            await self.refresh()
        try:
            return await asyncio.to_thread(self.index.search, query, k, self.name)
        except StoreError as exc:
            raise SearchError(f"The local corpus cannot be searched: {exc}", reason="unreadable") from exc

    def read(self, url: str) -> tuple[str, str] | None:
        """``(title, text)`` of a corpus result by its URL, or None when it is not ours. Sync:
        one indexed lookup in a connection of its own, quick enough for the event loop.

        Raises StoreError when the index cannot be read."""
        return self.index.read(url)


# -- the chain -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchResult]
    provider: str  # the provider whose results these are
    seconds: float
    cached: bool = False
    warnings: list[str] = field(default_factory=list)  # what went partly wrong, for gr.Warning


@dataclass
class _Failure:
    error: SearchError
    tries: int

    def describe(self) -> str:
        tries = f" after {self.tries} tries" if self.tries > 1 else ""
        return f"{_reason(self.error)}{tries}"

    def note(self, name: str) -> str:
        """The failure in a few words, for a warning or an error: "ddg unreachable (DNS lookup
        failed): skipped for the rest of this run", "searxng: rate-limited (429) after 3 tries"."""
        if isinstance(self.error, SearchUnreachable):
            return f"{name} {_reason(self.error)}: skipped for the rest of this run"
        return f"{name}: {self.describe()}"


class SearchChain:
    """Providers tried in order. On a retryable error (rate limit, unavailable) a provider is
    tried again after ``backoff * 2**attempt`` seconds, up to ``retries`` times; then (or at
    once on any other SearchError) the next provider is tried, and the response carries a
    warning such as ``"ddg: rate-limited (429) after 3 tries; used searxng"``. A provider that
    finds nothing also hands over to the next one. Results found are put in ``cache``; before
    calling anyone, the cache is asked for every provider in order, and a hit is returned with
    ``cached=True``. ``sleep`` is injectable for tests.

    A provider that could not be reached at all (``SearchUnreachable``: DNS, connection
    refused) is not retried, and the chain skips it without trying for the rest of its life
    (one chain is made per run); the search where that happened says so once, in its warnings
    or, when no provider answered, in its error."""

    def __init__(self, providers: list[SearchProvider], *, retries: int, backoff: float,
                 cache: SearchCache | None = None, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        if not providers:
            raise ConfigError("No search provider configured: use --search ddg, searxng or corpus.")
        self.providers = list(providers)
        self.retries = max(0, retries)
        self.backoff = backoff
        self.cache = cache
        self._sleep = sleep
        self._unreachable: dict[str, SearchUnreachable] = {}  # provider name -> why it is skipped

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.providers]

    @property
    def skipped(self) -> list[str]:
        """The providers this chain no longer tries because they could not be reached."""
        return [p.name for p in self.providers if p.name in self._unreachable]

    async def aclose(self) -> None:
        """Close the providers' connections."""
        for provider in self.providers:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()

    async def search(self, query: str, k: int) -> SearchResponse:
        """Up to ``k`` results for ``query``.

        Raises SearchError when the query is empty or when every provider failed (then
        SearchRateLimited if they all were rate-limited, SearchUnreachable if none could be
        reached, SearchUnavailable if all were rate-limited or unavailable); the message names,
        on one line, each provider's last error and the fix."""
        query = " ".join(query.split())
        if not query:
            raise SearchError("The search query is empty: there is nothing to search for.")
        if k < 1:
            raise SearchError(f"Asked for {k} search results; ask for at least 1.")
        started = time.monotonic()
        warnings: list[str] = []

        if hit := self._cached(query, k, warnings):
            name, results = hit
            return SearchResponse(results, name, time.monotonic() - started, cached=True, warnings=warnings)

        failures: dict[str, _Failure] = {}
        empty: list[str] = []
        for provider in self.providers:
            if provider.name in self._unreachable:
                continue  # said once, when it failed
            outcome = await self._try(provider, query, k)
            if isinstance(outcome, _Failure):
                # debug only: the warning or the error below tells the user, once
                log.debug("search %s failed: %s", provider.name, outcome.error)
                if isinstance(outcome.error, SearchUnreachable):
                    if provider.name in self._unreachable:
                        continue  # a search running alongside found out first, and says so
                    self._unreachable[provider.name] = outcome.error
                failures[provider.name] = outcome
                continue
            results = _dedupe(outcome)[:k]
            self._put(provider.name, query, k, results, warnings)
            if not results and provider is not self.providers[-1]:
                empty.append(provider.name)
                continue
            for name, failure in failures.items():
                warnings.append(f"{failure.note(name)}; used {provider.name}")
            warnings.extend(f"{name}: no results; used {provider.name}" for name in empty)
            return SearchResponse(results, provider.name, time.monotonic() - started, warnings=warnings)

        if empty:  # some found nothing, the rest failed: nothing is an answer
            warnings.extend(f"{f.note(name)}; used {empty[-1]}" for name, f in failures.items())
            return SearchResponse([], empty[-1], time.monotonic() - started, warnings=warnings)
        raise self._all_failed(query, failures)

    async def _try(self, provider: SearchProvider, query: str, k: int) -> list[SearchResult] | _Failure:
        attempt = 0
        while True:
            try:
                return await provider.search(query, k)
            except SearchError as exc:
                if not exc.retryable or attempt >= self.retries:
                    return _Failure(exc, attempt + 1)
                wait = self.backoff * 2**attempt
                # debug only: the tries are counted in the warning or error the user sees
                log.debug("search %s: %s; retrying in %.1f s", provider.name, _reason(exc), wait)
                await self._sleep(wait)
                attempt += 1

    def _cached(self, query: str, k: int, warnings: list[str]) -> tuple[str, list[SearchResult]] | None:
        if self.cache is None:
            return None
        for provider in self.providers:
            try:
                rows = self.cache.get_search(provider.name, query, k)
            except StoreError as exc:
                warnings.append(f"search cache unreadable, searching anew: {exc}")
                return None
            if rows is not None:
                return provider.name, [_result_from_dict(row, provider.name) for row in rows]
        return None

    def _put(self, name: str, query: str, k: int, results: list[SearchResult], warnings: list[str]) -> None:
        if self.cache is None or not results:  # "nothing" is not kept: another provider may do better
            return
        try:
            self.cache.put_search(name, query, k, [dataclasses.asdict(r) for r in results])
        except StoreError as exc:
            warnings.append(f"search results not cached: {exc}")

    def _all_failed(self, query: str, failures: dict[str, _Failure]) -> SearchError:
        """One line: what failed with each provider (the ones skipped as unreachable included),
        then what to do. With one provider: "ddg unreachable (DNS lookup failed): skipped for
        the rest of this run. Check the network, ... or use --search searxng or corpus"."""
        parts, fixes = [], []
        for name in self.names:
            if name in failures:
                failure = failures[name]
                error = failure.error
                if isinstance(error, SearchUnreachable):
                    parts.append(failure.note(name))
                else:
                    detail = " ".join(str(error).replace(FIX_HINT, "").split()).rstrip(".")
                    parts.append(f"{failure.note(name)}: {detail}" if detail else failure.note(name))
            elif name in self._unreachable:  # skipped: it failed on an earlier search
                error = self._unreachable[name]
                parts.append(f"{name} {_reason(error)}: not tried again in this run")
            else:
                continue
            if isinstance(error, SearchUnreachable):
                fix = error.fix or "check the network"
            elif isinstance(error, SearchRateLimited | SearchUnavailable):
                fix = FIX_HINT
            else:
                fix = ""  # a setting: its own message says what to change
            if fix and fix not in fixes:
                fixes.append(fix)
        fix_text = ". ".join(f[0].upper() + f[1:].rstrip(".") for f in fixes)
        if len(parts) == 1:
            message = f"{parts[0]}. {fix_text}"
        else:
            message = f"Every search provider failed for {query!r}: {'; '.join(parts)}. {fix_text}"
        message = message.strip().rstrip(".")  # no full stop: callers quote it inside a sentence
        errors = [failures[n].error if n in failures else self._unreachable[n] for n in self.names
                  if n in failures or n in self._unreachable]
        if all(isinstance(e, SearchUnreachable) for e in errors):
            first = next(e for e in errors if isinstance(e, SearchUnreachable))
            return SearchUnreachable(message, provider=first.provider, cause=first.cause, fix=first.fix)
        if all(isinstance(e, SearchRateLimited) for e in errors):
            return SearchRateLimited(message)
        if all(isinstance(e, SearchRateLimited | SearchUnavailable) for e in errors):
            return SearchUnavailable(message)
        return SearchError(message)

    def read_local(self, url: str) -> tuple[str, str] | None:
        """``(title, text)`` of a result that a local provider (the corpus) gave, so the
        retrieval step can use it without HTTP (the fetcher refuses file:// URLs); None when no
        provider holds that URL or its index cannot be read (logged)."""
        for provider in self.providers:
            read = getattr(provider, "read", None)
            if read is None:
                continue
            try:
                found = read(url)
            except StoreError as exc:
                log.warning("corpus read of %s failed: %s", url, exc)
                continue
            if found is not None:
                return found
        return None


def _dedupe(results: list[SearchResult]) -> list[SearchResult]:
    seen: set[str] = set()
    unique = []
    for result in results:
        if result.url not in seen:
            seen.add(result.url)
            unique.append(result)
    return unique


def _result_from_dict(row: dict, provider: str) -> SearchResult:
    return SearchResult(url=row["url"], title=row.get("title", ""), snippet=row.get("snippet", ""),
                        provider=row.get("provider") or provider)


# -- wiring ----------------------------------------------------------------------------------


def default_corpus_db_path(folder: Path) -> Path:
    """Where a folder's index goes when the caller gives no path: the system's temporary
    folder, one file per corpus folder (app.py passes a path in its data directory instead)."""
    digest = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"rat-studio-corpus-{digest}.db"


def build_providers(settings: SearchSettings, *, corpus_db_path: str | Path | None = None,
                    ddgs_factory: Callable[[], Any] | None = None, tls: TLS | None = None) -> list[SearchProvider]:
    """The providers named in ``settings.providers``, in that order (``tls``: the app's shared
    TLS contexts, for those that speak HTTP through httpx).

    Raises ConfigError when a name is unknown, a name repeats, searxng has no URL, the corpus
    has no folder or its folder is missing, or a ddg backend is unknown."""
    if not settings.providers:
        raise ConfigError(f"No search provider given: use --search with one or more of {', '.join(SEARCH_PROVIDERS)}.")
    providers: list[SearchProvider] = []
    for raw in settings.providers:
        name = raw.strip().lower()
        if name not in SEARCH_PROVIDERS:
            raise ConfigError(f"Unknown search provider {raw!r}: use one or more of {', '.join(SEARCH_PROVIDERS)}, "
                              "comma separated (e.g. --search ddg,searxng).")
        if name in (p.name for p in providers):
            raise ConfigError(f"Search provider {name!r} is listed twice in --search.")
        if name == "ddg":
            _check_ddg_backends(settings.ddg_backends)
            providers.append(DDGProvider(settings.ddg_backends, settings.timeout, ddgs_factory=ddgs_factory))
        elif name == "searxng":
            if not settings.searxng_url:
                raise ConfigError("The searxng provider needs its URL: add --searxng-url http://host:port "
                                  "(a SearXNG instance with the json format enabled).")
            if not settings.searxng_url.startswith(("http://", "https://")):
                raise ConfigError(f"--searxng-url {settings.searxng_url!r} is not an http(s) URL "
                                  "(e.g. http://localhost:8888).")
            providers.append(SearxngProvider(settings.searxng_url, settings.timeout, tls=tls))
        else:
            providers.append(CorpusProvider(_corpus_index(settings.corpus_dir, corpus_db_path)))
    return providers


def _check_ddg_backends(backends: str) -> None:
    names = [b.strip() for b in backends.split(",") if b.strip()]
    valid = ddg_backend_names()
    unknown = [b for b in names if b not in valid]
    if not names or unknown:
        raise ConfigError(f"Unknown DuckDuckGo search backend(s): {', '.join(unknown) or '(none given)'}. "
                          f"Use one or more of {', '.join(valid)}, comma separated.")


def _corpus_index(folder: Path | None, db_path: str | Path | None) -> Any:
    from core.retrieval.corpus import CorpusIndex  # the extractor is loaded when an HTML file is first read

    if folder is None:
        raise ConfigError("The corpus provider needs a folder: add --corpus DIR (a folder of .md/.txt/.html files).")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ConfigError(f"The corpus folder {folder} does not exist or is not a folder: check --corpus.")
    return CorpusIndex(db_path or default_corpus_db_path(folder), folder)
