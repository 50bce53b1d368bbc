"""What a run costs this process's CPU beyond the model and the web: one app on the stand-ins
(the fake OpenAI-compatible server with no latency, the local web), a warm-up run, then ``--runs``
RAT runs of a 3-step draft one after another, each measured with ``time.process_time``.

    python -m bench.run_cpu [--runs 12] [--method rat]

Prints the CPU and wall time per run (median, min, max) and how many certificate bundles the runs
loaded into TLS contexts (core/tls.py: one per kind of client for the app, none per run).
Compare two commits by running it in each; the machine's noise is about +-15% here.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import app as app_module
from common.events import Final
from common.settings import FetchSettings, LLMSettings, SearchSettings, Settings
from common.types import Task
from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.fakes.web_server import FakeWeb
from tests.helpers import bundles_loaded, collect


def measure(runs: int, method: str) -> dict:
    """Run it; the per-run CPU and wall seconds, and the bundles loaded during the measured runs."""
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            llm=LLMSettings(base_url=llm.base_url, api_key="sk-test", model="fake-model"),
            search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url),
            fetch=FetchSettings(allow_private_urls=True),
            db_path=Path(tmp) / "bench.db",
        )
        built = app_module.build(settings)

        async def one(n: int) -> None:
            llm.reply(RatAuthor(draft_steps(3)))
            events = await collect(built.runner.start(method, Task(f"Write a short history of Python 3, part {n}.")))
            if not isinstance(events[-1], Final):
                raise SystemExit(f"run {n} did not finish: {events[-1]}")

        try:
            asyncio.run(one(0))  # imports, the extraction workers, the store
            cpu, wall = [], []
            with bundles_loaded() as loaded:
                for n in range(1, runs + 1):
                    c0, w0 = time.process_time(), time.perf_counter()
                    asyncio.run(one(n))
                    cpu.append(time.process_time() - c0)
                    wall.append(time.perf_counter() - w0)
        finally:
            built.store.close()
    return {"cpu": cpu, "wall": wall, "loaded": loaded}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=12, help="measured runs [12]")
    ap.add_argument("--method", default="rat", help="a method that drafts and revises [rat]")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    result = measure(args.runs, args.method)
    for name in ("cpu", "wall"):
        ms = [1000 * s for s in result[name]]
        print(f"{name:5} per run: median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f}) "
              f"over {len(ms)} runs of {args.method}")
    print(f"certificate bundles loaded in those runs: {len(result['loaded'])}")
    return result


if __name__ == "__main__":
    main()
