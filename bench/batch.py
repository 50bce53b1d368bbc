"""How much faster a batch of RAT tasks runs several at a time than one at a time.

Runs a batch (``core.batch.Batch``, as ``python app.py batch`` does) of 8 distinct tasks with one
method against the fake OpenAI-compatible server with injected latency (0.2 s before the first
token, then 100 tokens/s) and the local web with injected page latency (each fixture page
0.05-0.6 s, seeded, as bench/pipeline.py), once per concurrency (default 1, then 4). Every
batch gets a fresh store, so no page or search result cached by one batch helps another; within
a batch, a page read by one task is cached for the next (as in a real batch), so the batches can
fetch different numbers of pages. Prints, per concurrency:

  conc        runs at once (``Batch(concurrency=...)``, the CLI's --concurrency)
  wall s      the batch's wall-clock time, from Batch.run's start to its report
  speedup     wall at the first concurrency listed (normally 1) / this wall
  ideal s     a lower bound for the batch at this concurrency: max(the longest task's critical
              path, the sum of the tasks' critical paths / conc); a task's critical path is every
              LLM call's latency + tokens/rate, every uncached search's latency, and, per step,
              its slowest uncached page (as bench/pipeline.py's "bound")
  wall/ideal  how close the batch came to that bound (1.00: nothing to gain)
  cpu %       this process's CPU time (time.process_time) over wall time, over os.cpu_count()
              cores: 100 % would be every core busy with this process (the fake LLM's and fake
              web's server threads run in it too, so they are counted)
  wrk cpu %   the same for the extraction worker processes (core.retrieval.extract's pool; CPU time read
              from /proc, so Linux only, else nan), which parse the pages outside this process
  llm max     LLM requests in flight at most, from the runs' LLMCalled events (each call spans
              its end minus its seconds)
  calls       LLM calls in the batch
  pages       pages the fake web served (requests to /pages/)
  cached      page reads answered from the store's cache instead
  searches    searches the fake web answered
  ok          runs that finished (done or unsourced) out of the tasks

    python -m bench.batch [--tasks 8] [--concurrency 1,4] [--steps 4] [--method rat-step]
                          [--latency 0.2] [--tps 100]

Before measuring, the extraction pool is started and waited for (``core.retrieval.extract.warm_up``) and
one short batch warms the process up (imports of the openai SDK and trafilatura, the first
extraction), as in the app, where they happen once at start.

The fake model answers like a cooperative one (bench/pipeline.py's Reviser): the draft of task t
is its own steps (each step names its article, so no two tasks search for the same query); a
revision keeps its paragraph and adds one sentence from the retrieved text.
Numbers, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from collections.abc import AsyncIterator
from concurrent.futures import wait
from contextlib import aclosing
from pathlib import Path

import app as app_module
from bench.pipeline import SEARCH_DELAY, Reviser
from common.events import Event, LLMCalled, PageRead, SearchDone
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from common.types import Task
from core.batch import Batch, TaskSpec
from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import TOPICS, kind_of, prompt_of
from tests.fakes.web_server import FakeWeb

SUBJECTS = [
    "Python 3 and its releases", "moving large code bases to Python 3", "Python packaging and environments",
    "forests and the climate", "modern telescopes", "fast JSON parsing", "visualising high-dimensional data",
    "testing web applications",
]


def task_prompts(n: int) -> list[str]:
    return [f"Write an overview of {SUBJECTS[t % len(SUBJECTS)]} (article {t + 1})." for t in range(n)]


def task_steps(t: int, n: int) -> list[str]:
    """Task t's draft: n steps over the topics, starting at its own, each naming its article so
    that its queries are its own."""
    return [f"Step {i + 1}: In article {t + 1}, {TOPICS[(t + i) % len(TOPICS)]}" for i in range(n)]


class Author:
    """The fake model's reply function for the whole batch: each request gets a fresh Reviser
    (requests arrive on several server threads at once), drafting the steps of the task its
    prompt names."""

    def __init__(self, prompts: list[str], steps: int):
        self.prompts, self.steps = prompts, steps

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        t = 0
        if kind_of(prompt) == "draft":  # "... (article 1)." is not part of "... (article 12)."
            t = next((n for n, p in enumerate(self.prompts) if p in prompt), 0)
        return Reviser(task_steps(t, self.steps))(body)


class WatchedRunner:
    """The app's runner, recording every event of every run with its time (perf_counter)."""

    def __init__(self, runner):
        self.runner = runner
        self.settings = runner.settings  # Batch checks --param against it
        self.log: list[tuple[str, Event, float]] = []  # (task prompt, event, when it was seen)

    async def start(self, method: str, task: Task, **kw) -> AsyncIterator[Event]:
        async with aclosing(self.runner.start(method, task, **kw)) as events:
            async for event in events:
                self.log.append((task.prompt, event, time.perf_counter()))
                yield event


def critical_path(events: list[Event], delays: dict[str, float], latency: float, tps: float) -> float:
    """One run's lower bound (bench/pipeline.py's "bound")."""
    bound = sum(latency + e.completion_tokens / tps for e in events if isinstance(e, LLMCalled))
    bound += sum(SEARCH_DELAY for e in events if isinstance(e, SearchDone) and not e.cached)
    slowest: dict[int, float] = {}
    for e in events:
        if isinstance(e, PageRead):
            delay = 0.0 if e.cached else delays.get(e.url.rsplit("/", 1)[-1], 0.0)
            slowest[e.i] = max(slowest.get(e.i, 0.0), delay)
    return bound + sum(slowest.values())


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most intervals (start, end) that overlap at one moment."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])  # an end sorts before a start
    best = now = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def worker_cpu_seconds() -> float:
    """CPU seconds (user + system) of every process descended from this one, from /proc: the
    extraction pool's forkserver and workers. nan where /proc cannot be read."""
    try:
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        mine, found = {os.getpid()}, True
        while found:
            found = False
            for pid, parent in parents.items():
                if parent in mine and pid not in mine:
                    mine.add(pid)
                    found = True
        return sum(ticks[p] for p in mine if p != os.getpid()) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=8, help="distinct tasks in the batch")
    ap.add_argument("--concurrency", default="1,4", help="comma-separated; the first is the speedup's base")
    ap.add_argument("--steps", type=int, default=4, help="steps of each task's draft")
    ap.add_argument("--method", default="rat-step")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds before an LLM answer's first token")
    ap.add_argument("--tps", type=float, default=100.0, help="LLM tokens per second")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    cores = os.cpu_count() or 1
    began = time.perf_counter()

    from core.retrieval.extract import warm_up

    wait(warm_up())  # the extraction workers, started and ready
    rng = random.Random(7)
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
        delays = {entry["file"]: round(rng.uniform(0.05, 0.6), 3) for entry in web.manifest}
        web.page_delay = delays
        web.search_delay = SEARCH_DELAY
        llm.latency, llm.tokens_per_second = args.latency, args.tps

        def batch(name: str, n_tasks: int, concurrency: int) -> dict:
            prompts = task_prompts(n_tasks)
            settings = Settings(
                llm=LLMSettings(base_url=llm.base_url, api_key="sk-bench", model="fake-model", max_retries=0),
                search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url),
                fetch=FetchSettings(allow_private_urls=True),
                method=MethodSettings(max_steps=args.steps),
                db_path=Path(tmp) / f"bench-{name}.db")  # a fresh store: no page or search is cached yet
            llm.reply(Author(prompts, args.steps))
            app = app_module.build(settings)
            runner = WatchedRunner(app.runner)
            tasks = [TaskSpec(f"t{n + 1}", p, task_set="bench-batch") for n, p in enumerate(prompts)]
            job = Batch(runner, app.store, [args.method], concurrency=concurrency)
            pages = sum(r.startswith("/pages/") for r in web.requests)
            searches, calls = web.search_count, len(llm.requests)
            cpu, workers = time.process_time(), worker_cpu_seconds()
            started = time.perf_counter()
            report = asyncio.run(job.run(tasks))
            wall = time.perf_counter() - started
            cpu, workers = time.process_time() - cpu, worker_cpu_seconds() - workers
            by_task: dict[str, list[Event]] = {}
            for prompt, event, _ in runner.log:
                by_task.setdefault(prompt, []).append(event)
            paths = [critical_path(events, delays, args.latency, args.tps) for events in by_task.values()]
            spans = [(t - e.seconds, t) for _, e, t in runner.log if isinstance(e, LLMCalled)]
            return {
                "wall": wall, "ideal": max(max(paths, default=0.0), sum(paths) / concurrency),
                "cpu": cpu / wall / cores, "workers": workers / wall / cores, "llm_max": most_at_once(spans),
                "calls": len(llm.requests) - calls,
                "pages": sum(r.startswith("/pages/") for r in web.requests) - pages,
                "cached": sum(isinstance(e, PageRead) and e.cached for _, e, _ in runner.log),
                "searches": web.search_count - searches,
                "ok": sum(r.status in ("done", "unsourced") for r in report.results), "tasks": len(tasks),
                "path": sum(paths) / len(paths) if paths else 0.0,
            }

        batch("warm-up", 1, 1)
        print(f"{args.tasks} tasks x {args.method}, {args.steps} steps each; LLM {args.latency:.2f} s latency, "
              f"{args.tps:.0f} tokens/s; search {SEARCH_DELAY:.2f} s; pages 0.05-0.60 s each; "
              f"{cores} cores\n")
        header = (f"{'conc':>4}{'wall s':>9}{'speedup':>9}{'ideal s':>9}{'wall/ideal':>11}{'cpu %':>7}"
                  f"{'wrk cpu %':>10}{'llm max':>8}{'calls':>7}{'pages':>7}{'cached':>8}{'searches':>10}{'ok':>7}")
        print(header)
        print("-" * len(header))
        base = None
        paths = []
        for c in levels:
            r = batch(f"c{c}", args.tasks, c)
            base = base or r["wall"]
            paths.append(r["path"])
            print(f"{c:>4}{r['wall']:>9.2f}{base / r['wall']:>9.2f}{r['ideal']:>9.2f}{r['wall'] / r['ideal']:>11.2f}"
                  f"{100 * r['cpu']:>7.1f}{100 * r['workers']:>10.1f}{r['llm_max']:>8}{r['calls']:>7}"
                  f"{r['pages']:>7}{r['cached']:>8}{r['searches']:>10}{str(r['ok']) + '/' + str(r['tasks']):>7}")
        print("\nA task's critical path, on average: " + ", ".join(
            f"{p:.2f} s at conc {c}" for c, p in zip(levels, paths, strict=True))
              + " (cached pages cost nothing, so it differs between batches).")
        print(f"Took {time.perf_counter() - began:.0f} s in all, warm-up included.")


if __name__ == "__main__":
    main()
