"""How long the outlier test (``annotation.results.outliers.examine``) takes over 100,000 votes of 2,000
honest annotators of five methods of known strength. Prints numbers; passes or fails nothing
(tests/annotation/test_outliers.py checks what it finds).

    python -m bench.outliers [--votes 100000] [--annotators 2000] [--repeat 3]

Target: under a second for 100,000 votes (best of the repeats), so a leaderboard refresh never
waits for it.
"""

from __future__ import annotations

import argparse
import math
import random
import time

from annotation.results import outliers
from data.arena import AnnotatedVote

STRENGTH = {"m0": 0.0, "m1": 0.6, "m2": 1.2, "m3": 1.8, "m4": 2.4}  # log-odds, as the test's simulation


def votes(n: int, annotators: int, seed: int = 7) -> list[AnnotatedVote]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.sample(sorted(STRENGTH), 2)
        choice = "a" if rng.random() < 1 / (1 + math.exp(STRENGTH[b] - STRENGTH[a])) else "b"
        out.append(AnnotatedVote(f"u{rng.randrange(annotators)}", a, b, choice))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    cast = votes(args.votes, args.annotators)
    times, flagged = [], 0
    for _ in range(args.repeat):
        started = time.perf_counter()
        tests = outliers.examine(cast)
        times.append(time.perf_counter() - started)
        flagged = sum(t.flagged for t in tests.values())
    print(f"outlier test over {args.votes:,} votes of {args.annotators:,} annotators: best {min(times):.3f} s, "
          f"worst {max(times):.3f} s ({args.repeat} runs); {flagged} honest annotator(s) flagged")


if __name__ == "__main__":
    main()
