"""How fast the LLM client streams from the fake OpenAI-compatible server paced like a real one
(``latency`` before the first token, then ``tokens_per_second``). Prints numbers; passes or fails
nothing.

    python -m bench.llm [--latency 0.1] [--tps 100] [--words 10] [--repeat 5]

With the defaults the first word should arrive soon after 0.1 s (was held: 0.1 <= first < 0.5)
and the whole answer after about 0.2 s (was held: 0.2 <= total < 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from common.settings import LLMSettings
from core.llm import Completion, LLMClient
from tests.fakes.llm_server import FakeLLM


async def one_stream(client: LLMClient, llm: FakeLLM, words: int) -> tuple[float, float, int]:
    """Seconds to the first word and to the end of the stream, and the words received."""
    llm.queue("w " * words)
    started = time.monotonic()
    first = None
    received = 0
    async for item in client.stream("x", role="draft"):
        if isinstance(item, str):
            received += 1
            first = first if first is not None else time.monotonic() - started
        elif isinstance(item, Completion):
            break
    return first or 0.0, time.monotonic() - started, received


async def bench(llm: FakeLLM, args: argparse.Namespace) -> None:
    settings = LLMSettings(base_url=llm.base_url, api_key="sk-bench", model="fake-model", max_retries=0)
    async with LLMClient(settings) as client:
        await one_stream(client, llm, 1)  # warm-up: the SDK's first request
        llm.latency, llm.tokens_per_second = args.latency, args.tps
        runs = [await one_stream(client, llm, args.words) for _ in range(args.repeat)]
    firsts, totals = [r[0] for r in runs], [r[1] for r in runs]
    expected = args.latency + args.words / args.tps
    print(f"{args.words} words at {args.tps:g} tokens/s after {args.latency:g} s latency; {args.repeat} streams")
    print(f"first word:   median {statistics.median(firsts):6.3f} s   worst {max(firsts):6.3f} s   "
          f"(paced: {args.latency:.3f} s)")
    print(f"whole stream: median {statistics.median(totals):6.3f} s   worst {max(totals):6.3f} s   "
          f"(paced: {expected:.3f} s; {runs[-1][2]} words received)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.1, help="seconds before an answer's first token")
    ap.add_argument("--tps", type=float, default=100.0, help="tokens per second")
    ap.add_argument("--words", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with FakeLLM() as llm:
        asyncio.run(bench(llm, args))


if __name__ == "__main__":
    main()
