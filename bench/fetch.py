"""How long the Fetcher takes against the local fake web with injected delays: pages read at
once against one at a time, the step deadline, and the per-page timeout. Prints numbers; passes
or fails nothing (the tests prove concurrency by counting requests in flight instead).

    python -m bench.fetch

What each line used to be held to in the tests:
  read_many, 4 pages (0.9, 0.3, 0.35, 0.4 s)   under 0.8 x the sum of the delays (near the slowest)
  read_many, concurrency 1, 3 pages x 0.2 s     at least 0.55 s (one at a time)
  read_many, deadline 0.5 s over a 2 s page     under 1.5 s
  fetch, timeout 0.5 s on a 3 s page            under 2 s
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from common.errors import FetchTimeout
from common.settings import FetchSettings
from core.retrieval.fetch import Fetcher
from tests.fakes.web_server import FakeWeb

LOCAL = FetchSettings(allow_private_urls=True, timeout=5.0, step_deadline=10.0)
FILES = ["salon.com.emissions.html", "lemire.me.json.html", "reuters.com.parasite.html", "vice.com.amazon.html"]


async def read_all(fetcher: Fetcher, urls: list[str], **options) -> tuple[float, int, int]:
    """Seconds to read ``urls`` with read_many, the pages read and the pages that failed."""
    started = time.monotonic()
    pages = [page async for page in fetcher.read_many(urls, **options)]
    return time.monotonic() - started, sum(page.ok for page in pages), sum(not page.ok for page in pages)


async def bench(web: FakeWeb) -> None:
    async with Fetcher(LOCAL) as fetcher:
        await fetcher.read(web.page_url(FILES[1]))  # warm-up: imports, trafilatura's first extraction

        web.page_delay = {FILES[0]: 0.9, FILES[1]: 0.3, FILES[2]: 0.35, FILES[3]: 0.4}
        total = sum(web.page_delay.values())
        seconds, ok, _ = await read_all(fetcher, [web.page_url(f) for f in FILES])
        print(f"read_many, 4 pages at once:        {seconds:6.2f} s  (slowest 0.90 s, sum {total:.2f} s; "
              f"ratio to sum {seconds / total:.2f}, was held < 0.80; {ok} read, most in flight {web.max_in_flight})")

        web.reset()
        web.page_delay = 0.2
        async with Fetcher(replace(LOCAL, concurrency=1)) as one_at_a_time:
            seconds, ok, _ = await read_all(one_at_a_time, [web.page_url(f) for f in FILES[:3]])
        print(f"read_many, concurrency 1, 3 pages: {seconds:6.2f} s  (3 x 0.20 s; was held >= 0.55; "
              f"{ok} read, most in flight {web.max_in_flight})")

        web.reset()
        seconds, ok, failed = await read_all(fetcher, [web.url("/slow/2"), web.page_url(FILES[1])], deadline=0.5)
        print(f"read_many, deadline 0.5 s:         {seconds:6.2f} s  (one page takes 2 s; was held < 1.5; "
              f"{ok} read, {failed} cut by the deadline)")

    async with Fetcher(replace(LOCAL, timeout=0.5)) as impatient:
        started = time.monotonic()
        try:
            await impatient.fetch(web.url("/slow/3"))
            outcome = "read (the timeout did not fire)"
        except FetchTimeout:
            outcome = "FetchTimeout"
        print(f"fetch, timeout 0.5 s:              {time.monotonic() - started:6.2f} s  (the page takes 3 s; "
              f"was held < 2; {outcome})")


def main() -> None:
    with FakeWeb() as web:
        asyncio.run(bench(web))


if __name__ == "__main__":
    main()
