"""How close a RAT run comes to its critical path, and how many tokens it writes.

Runs RAT and RAT step-scope against the fake OpenAI-compatible server with injected latency
(0.2 s before the first token, then 100 tokens/s) and the local web with injected page
latency (each fixture page 0.05-0.6 s, seeded), for drafts of 5, 10 and 20 steps, and prints:

  wall        the run's wall-clock time
  bound       the critical-path lower bound: every LLM call's latency + tokens/rate, every
              search's latency, and, per step, the slowest page it had to fetch (cached pages
              cost nothing); nothing can finish sooner, since each step needs its pages and
              each call needs the one before
  ratio       wall / bound (target: <= 1.10)
  crawl       per step, the time from the search's answer to the last page read, against the
              slowest page and the sum of its pages (target: near the slowest, not the sum)
  out tok     output tokens the model generated, against the final article's tokens, in all
              (out/art) and by role (draft, query, revise per article token)
              (target: step-scope <= 1.3 x the article at 20 steps)
  prompt/st   prompt tokens sent per step (all calls / steps): flat when prompts grow linearly
  ev B/st     bytes of the run's stored events per step: flat when events grow linearly
  crawl/sl    crawl over the slowest pages' injected delays (target: <= 1.10)
  crawl/rd    crawl over the slowest pages' own read times (fetch + extraction, as PageRead.seconds
              says): what is left is the cost of running pages side by side and of storing events
  worst sl/rd the largest crawl/sl and crawl/rd of a single step that fetched pages (the per-step target)
  cached      mean ms of crawl of a step whose pages were all cached (in crawl, but not in slowest)
  1st call    ms from Runner.start to the first model request reaching the server (target: < 100)

    python -m bench.pipeline [--steps 5,10,20] [--methods rat,rat-step] [--latency 0.2] [--tps 100]

Before measuring, one short run warms the process up (imports of the openai SDK and
trafilatura, trafilatura's first extraction), as in the app, where they happen once at start.

The fake model answers like a cooperative one: the draft is the given steps; a revision keeps
its paragraph(s) and adds one sentence from the retrieved text (what a RAT revision does).
Numbers, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import tempfile
import time
from pathlib import Path

import app as app_module
from common.events import Final, LLMCalled, PageRead, RunStarted, SearchDone, StepRevised
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from common.types import Task
from tests.fakes.llm_server import FakeLLM, count_tokens
from tests.fakes.scripts import RatAuthor, draft_steps, sections
from tests.fakes.web_server import FakeWeb

SEARCH_DELAY = 0.05


class Reviser(RatAuthor):
    """RatAuthor whose revisions add a sentence from the retrieved text, as a real one would."""

    def __call__(self, body: dict) -> str:
        reply = super().__call__(body)
        kind, prompt = self.calls[-1]
        if kind in ("revise", "revise-step"):
            retrieved = sections(prompt).get("Existing Text in Wiki Web", "")
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", re.sub(r"<[^>]+>|\[\d+\][^\n]*\n", " ", retrieved))
                         if 40 < len(s) < 220]
            if sentences:
                reply = reply.replace(" [revised]", " " + sentences[0].strip() + " [revised]", 1) \
                    if kind == "revise-step" else _add_to_last(reply, sentences[0].strip())
        return reply


def _add_to_last(text: str, sentence: str) -> str:
    paragraphs = text.split("\n\n")
    paragraphs[-1] = paragraphs[-1].replace(" [revised]", " " + sentence + " [revised]")
    return "\n\n".join(paragraphs)


async def one_run(app: app_module.App, method: str, delays: dict[str, float], latency: float, tps: float,
                  llm: FakeLLM | None = None) -> dict:
    arrived = len(llm.arrivals) if llm else 0
    started = time.perf_counter()
    events, stamps = [], []
    async for e in app.runner.start(method, Task("Write an overview of Python 3, its tools and its community.")):
        events.append(e)
        stamps.append(time.perf_counter())
    wall = time.perf_counter() - started
    final = next(e for e in events if isinstance(e, Final))
    calls = [e for e in events if isinstance(e, LLMCalled)]
    bound = sum(latency + c.completion_tokens / tps for c in calls)
    bound += sum(SEARCH_DELAY for e in events if isinstance(e, SearchDone) and not e.cached)
    crawl, slowest_sum, pages_sum, read_sum = [], 0.0, 0.0, 0.0
    search_at: dict[int, float] = {}
    last_page_at: dict[int, float] = {}
    per_step: dict[int, list[float]] = {}
    read_time: dict[int, list[float]] = {}
    for e, t in zip(events, stamps, strict=False):
        if isinstance(e, SearchDone):
            search_at[e.i] = t
        if isinstance(e, PageRead):
            last_page_at[e.i] = t
            per_step.setdefault(e.i, []).append(0.0 if e.cached else delays.get(e.url.rsplit("/", 1)[-1], 0.0))
            read_time.setdefault(e.i, []).append(e.seconds)
    worst, worst_read, cached_only = 0.0, 0.0, []  # the fetching step furthest over its slowest page; cached steps
    for i, ds in per_step.items():
        bound += max(ds)
        slowest_sum += max(ds)
        pages_sum += sum(ds)
        read_sum += max(read_time[i])
        crawl.append(last_page_at[i] - search_at[i])
        if max(ds) > 0:
            worst = max(worst, crawl[-1] / max(ds))
            worst_read = max(worst_read, crawl[-1] / max(read_time[i]))
        else:
            cached_only.append(crawl[-1])
    by_role: dict[str, int] = {}
    for c in calls:
        by_role[c.role] = by_role.get(c.role, 0) + c.completion_tokens
    return {
        "method": method, "steps": sum(isinstance(e, StepRevised) for e in events), "wall": wall, "bound": bound,
        "crawl": sum(crawl), "slowest": slowest_sum, "worst": worst, "worst_read": worst_read,
        "cached_ms": 1000 * sum(cached_only) / len(cached_only) if cached_only else float("nan"),
        "read": read_sum, "pages_sum": pages_sum, "by_role": by_role,
        "out": sum(by_role.values()), "article": count_tokens(final.text), "run_id": events[0].run_id
        if isinstance(events[0], RunStarted) else "",
        "prompt": sum(c.prompt_tokens for c in calls),
        "event_bytes": app.store.db.execute(
            "select coalesce(sum(length(payload)), 0) from events where run_id = ?", [events[0].run_id]).fetchone()[0],
        "first_call": (llm.arrivals[arrived] - started) if llm and len(llm.arrivals) > arrived else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", default="5,10,20,40")
    ap.add_argument("--methods", default="rat,rat-step")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds before an LLM answer's first token")
    ap.add_argument("--tps", type=float, default=100.0, help="LLM tokens per second")
    args = ap.parse_args()

    rng = random.Random(7)
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
        delays = {entry["file"]: round(rng.uniform(0.05, 0.6), 3) for entry in web.manifest}
        web.page_delay = delays
        web.search_delay = SEARCH_DELAY
        llm.latency, llm.tokens_per_second = args.latency, args.tps
        print(f"LLM: {args.latency:.2f} s latency, {args.tps:.0f} tokens/s; search {SEARCH_DELAY:.2f} s; "
              f"pages 0.05-0.60 s each\n")
        header = (f"{'method':<9}{'steps':>6}{'wall s':>9}{'bound s':>9}{'ratio':>7}"
                  f"{'crawl s':>9}{'slowest':>9}{'sum pg':>8}{'out tok':>9}{'article':>9}{'out/art':>8}"
                  f"{'draft':>7}{'query':>7}{'revise':>7}{'prompt/st':>10}{'ev B/st':>9}{'crawl/sl':>9}"
                  f"{'crawl/rd':>9}{'worst sl':>9}{'worst rd':>9}{'cached':>7}{'1st call':>9}")
        print(header)
        print("-" * len(header))
        def build_app(name: str, n: int) -> app_module.App:
            db = Path(tmp) / f"bench-{name}-{n}.db"  # a fresh store: no page is cached yet
            settings = Settings(
                llm=LLMSettings(base_url=llm.base_url, api_key="sk-bench", model="fake-model", max_retries=0),
                search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url),
                fetch=FetchSettings(allow_private_urls=True),
                method=MethodSettings(max_steps=n), db_path=db)
            llm.reply(Reviser(draft_steps(n)))
            return app_module.build(settings)

        asyncio.run(one_run(build_app("warm-up", 2), "rat-step", delays, args.latency, args.tps))
        for n in [int(x) for x in args.steps.split(",")]:
            for method in args.methods.split(","):
                r = asyncio.run(one_run(build_app(method, n), method, delays, args.latency, args.tps, llm))
                print(f"{method:<9}{r['steps']:>6}{r['wall']:>9.2f}{r['bound']:>9.2f}{r['wall'] / r['bound']:>7.3f}"
                      f"{r['crawl']:>9.2f}{r['slowest']:>9.2f}{r['pages_sum']:>8.2f}{r['out']:>9}{r['article']:>9}"
                      f"{r['out'] / r['article']:>8.2f}"
                      + "".join(f"{r['by_role'].get(role, 0) / r['article']:>7.2f}"
                                for role in ("draft", "query", "revise"))
                      + f"{r['prompt'] / r['steps']:>10.0f}{r['event_bytes'] / r['steps']:>9.0f}"
                      f"{r['crawl'] / r['slowest'] if r['slowest'] else float('nan'):>9.2f}"
                      f"{r['crawl'] / r['read'] if r['read'] else float('nan'):>9.2f}"
                      f"{r['worst']:>9.2f}{r['worst_read']:>9.2f}{r['cached_ms']:>7.1f}"
                      f"{r['first_call'] * 1000:>9.0f}")
        print("\ndraft/query/revise: each role's output tokens per article token (they add up to out/art).")
        print("crawl: summed over steps, search answered -> last page read; slowest/sum pg: the injected page "
              "delays of each step's slowest page and of all its pages, summed over steps.")
        print("crawl/sl: crawl over the slowest page's injected delay; crawl/rd: over the slowest page's own read time "
              "(its fetch and its extraction, PageRead.seconds), which no crawl can beat.")
        print("worst sl/rd: the largest crawl/sl and crawl/rd of one step that fetched a page; cached: mean ms of "
              "crawl of the steps whose pages were all in the cache (they count in crawl, not in slowest).")


if __name__ == "__main__":
    main()
