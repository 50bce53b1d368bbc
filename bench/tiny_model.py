"""What the tiny real model's server costs in CPU per token, as the tests use it (scripts/tiny_model.py):
the served copy (Q4_0 made from the shipped Q4_1, flash attention, written on WRITE_THREADS threads
and read on every core) against the shipped file as it is, and against the served copy written on
every core.

    python -m bench.tiny_model [--rounds 3] [--prompt-words 300] [--tokens 64]

For each server: ``--rounds`` times, a long prompt answered with one token (its prompt's cost) and a
short prompt answered with ``--tokens`` tokens (its writing's cost), greedy, each prompt new to the
server (a round number leads it: llama.cpp reuses a cached prefix). Prints the server process's CPU
per prompt token and per written token (median of the rounds, from /proc), and the wall rates.
Linux only (/proc). The machine's noise is about +-15% here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from pathlib import Path

from scripts.tiny_model import WRITE_THREADS, gguf_path, served_model, start_tiny_model
from tests.helpers import cpu_seconds


def ask(base_url: str, model: str, prompt: str, max_tokens: int) -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0}
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.load(answer)["usage"]


def measure(model_file: Path, flash_attn: bool, rounds: int, words: int, tokens: int,
            write_threads: int = WRITE_THREADS) -> dict:
    """Per round: CPU ms per prompt token, per written token, and the wall rates (tokens a second)."""
    rows: dict[str, list[float]] = {"prompt_ms": [], "write_ms": [], "prompt_rate": [], "write_rate": []}
    with start_tiny_model(model_file=model_file, flash_attn=flash_attn, write_threads=write_threads) as server:
        pid = server.process.pid
        ask(server.base_url, server.model, "Hello.", 1)  # the first call's set-up is not measured
        for n in range(rounds):
            long = f"Round {n}. " + "The history of Python 3 and its ecosystem. " * (words // 8) + "Summarize it."
            c0, w0 = cpu_seconds(pid), time.perf_counter()
            usage = ask(server.base_url, server.model, long, 1)
            c1, w1 = cpu_seconds(pid), time.perf_counter()
            rows["prompt_ms"].append(1000 * (c1 - c0) / usage["prompt_tokens"])
            rows["prompt_rate"].append(usage["prompt_tokens"] / (w1 - w0))
            usage = ask(server.base_url, server.model, f"Round {n}. Write about the history of Python 3.", tokens)
            c2, w2 = cpu_seconds(pid), time.perf_counter()
            written = max(usage["completion_tokens"], 1)
            rows["write_ms"].append(1000 * (c2 - c1) / written)
            rows["write_rate"].append(written / (w2 - w1))
    return {name: statistics.median(values) for name, values in rows.items()}


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main(argv: list[str] | None = None) -> dict[str, dict]:
    parser = argparse.ArgumentParser(prog="python -m bench.tiny_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=positive, default=3, help="prompts of each kind per server [3]")
    parser.add_argument("--prompt-words", type=positive, default=300, help="words of the long prompt [300]")
    parser.add_argument("--tokens", type=positive, default=64, help="tokens each short prompt's answer writes [64]")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    setups = {"shipped Q4_1": (gguf_path(), False, WRITE_THREADS),
              "served Q4_0+FA": (served_model(), True, WRITE_THREADS),
              f"served, writes x{cores}": (served_model(), True, cores)}
    results = {}
    print(f"{'server':20} {'prompt cpu-ms/tok':>18} {'prompt tok/s':>13} {'write cpu-ms/tok':>17} {'write tok/s':>12}")
    for name, (model_file, flash_attn, writing) in setups.items():
        r = results[name] = measure(model_file, flash_attn, args.rounds, args.prompt_words, args.tokens, writing)
        print(f"{name:20} {r['prompt_ms']:18.1f} {r['prompt_rate']:13.0f} {r['write_ms']:17.1f} "
              f"{r['write_rate']:12.0f}", flush=True)
    return results


if __name__ == "__main__":
    main()
