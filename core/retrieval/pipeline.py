"""One retrieval, as events: search -> fetch the results' pages concurrently -> split into
passages -> rank them against the query (BM25) -> keep the best within the token budget.

Nothing here raises for a dead page or a failed search: those become a PageRead with an error
or a SearchDone with an error, and the caller gets fewer (or no) passages. A failure is told
once, on one line: the search chain logs its retries and failures at debug level only, and its
warnings (a provider that failed, or was unreachable and is skipped from then on) ride on the
SearchDone of the search where they happened.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from common.errors import SearchError
from common.events import Event, Note, PageRead, PassagesChosen, SearchDone
from common.types import Page, Passage, SearchResult
from core.retrieval.passages import rank_passages, select_passages, split_passages
from core.returning import Return, returning
from core.text.tokens import count_tokens


@returning
async def retrieve(ctx: Any, i: int, query: str, *, k: int | None = None, budget: int | None = None,
                   exclude: Iterable[str] = ()) -> AsyncIterator[Event | Return[list[Passage]]]:
    """Yield SearchDone, one PageRead per result, then PassagesChosen; return the chosen
    passages (empty when nothing could be read). ``ctx`` is a ``core.methods.MethodContext``
    (its ``search``, ``fetch``, ``read_local`` and ``settings`` are used). ``exclude``: URLs the
    author left out: their results are neither listed nor read (a Note says how many), and as
    many more results are asked for, so that up to ``k`` are still read."""
    k = k or ctx.settings.k
    budget = budget or ctx.settings.passage_tokens
    exclude = frozenset(exclude)
    started = time.perf_counter()
    try:
        response = await ctx.search.search(query, k + len(exclude))
    except SearchError as exc:  # the chain's message already names each provider's cause and the fix
        yield SearchDone(i=i, query=query, results=(), seconds=round(time.perf_counter() - started, 4),
                         error=" ".join(str(exc).split()))  # one line on the CLI, whatever the message
        yield Return([])
        return
    wanted = [r for r in response.results if r.url not in exclude]
    results, dropped = fetchable(wanted[:k], local=ctx.read_local is not None)
    yield SearchDone(i=i, query=query, results=results, provider=response.provider,
                     seconds=round(response.seconds, 4), cached=response.cached,
                     warnings=tuple(response.warnings))
    left_out = len(response.results) - len(wanted)
    if left_out:
        yield Note(i=i, text=f"{left_out} search result(s) the author excluded were left out, unread.")
    if dropped:
        shown = ", ".join(r.url[:60] for r in dropped[:3]) + (", ..." if len(dropped) > 3 else "")
        yield Note(i=i, level="warning",
                   text=f"{len(dropped)} search result(s) with a URL that is not http(s) were dropped, unread and "
                        f"unlisted: {shown}. Only web pages (and files of --corpus) are read.")
    if not results:
        yield Return([])
        return

    pages: list[Page] = []
    named = {r.url: r.title.strip() for r in results if r.title.strip()}  # as the result list showed it
    async for page in read_pages(ctx, [r.url for r in results]):
        if page.url in named:  # a run's pages are read without metadata: their <title> has the site's name too
            page = replace(page, title=named[page.url])
        pages.append(page)
        yield PageRead(i=i, url=page.url, title=page.title, status=page.status, error=page.error,
                       chars=len(page.text), seconds=round(page.seconds, 4), cached=page.cached)

    candidates = [p for page in pages if page.ok for p in split_passages(page, size_tokens=ctx.settings.passage_size)]
    if not candidates:
        candidates = _snippet_passages(results)
        if candidates:
            yield Note(i=i, level="warning",
                       text="No page could be read for this step; the search snippets are used instead.")
    chosen = select_passages(rank_passages(query, candidates), budget)
    yield PassagesChosen(i=i, passages=tuple(chosen))
    yield Return(chosen)


async def read_pages(ctx: Any, urls: list[str]) -> AsyncIterator[Page]:
    """Pages of a local corpus (file:// URLs) are read from its index; the rest over HTTP,
    concurrently, each yielded as soon as it is read."""
    remote = []
    for url in urls:
        if url.startswith("file://"):
            found = ctx.read_local(url) if ctx.read_local else None
            if found:
                title, text = found
                yield Page(url=url, status="ok", title=title, text=text, final_url=url, size=len(text.encode()))
            else:
                yield Page(url=url, status="error", error=f"{url} is no longer in the local corpus; re-index it.")
        else:
            remote.append(url)
    if remote:
        async with aclosing(ctx.fetch.read_many(remote)) as pages:  # a stopped run stops its fetches
            async for page in pages:
                yield page


def fetchable(results: Iterable[SearchResult], *, local: bool) -> tuple[tuple[SearchResult, ...], list[SearchResult]]:
    """The results whose URL can be read (http or https; file: only from the local corpus
    when there is one), and those dropped."""
    kept, dropped = [], []
    for r in results:
        scheme = urlsplit(r.url.strip()).scheme.lower()
        ok = scheme in ("http", "https") or (scheme == "file" and local and r.provider == "corpus")
        (kept if ok else dropped).append(r)
    return tuple(kept), dropped


def _snippet_passages(results: tuple[SearchResult, ...]) -> list[Passage]:
    return [
        Passage(text=r.snippet, url=r.url, title=r.title, tokens=count_tokens(r.snippet), snippet=True)
        for r in results
        if r.snippet.strip()
    ]
