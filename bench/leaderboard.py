"""How long the leaderboard takes: rebuild from 100,000 votes over 12 methods, and record one
vote with the leaderboard brought up to date. Prints numbers; passes or fails nothing.

    python -m bench.leaderboard [--votes 100000] [--methods 12] [--rounds 100]

Targets: TrueSkill rebuild under 2 s; Bradley–Terry with 100 bootstrap rounds under 10 s.

Then the Leaderboard tab's own handler (ui.leaderboard, what Gradio calls; serialisation aside),
on the same store: the first opening (table and summary, plots closed) of a fresh service, cold
(scikit-learn already imported by the lines above; in a fresh process add its import) and after
the warm-up that ``python app.py`` starts in the background (``Arena.warm_up``, timed too),
opening it again with no new vote, the refresh after one vote, and the plots when their
accordion is opened.
Targets: 100k votes on screen in under 1 s; refresh after a vote under 200 ms.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from annotation.results import ratings, style
from annotation.results.board import Boards
from data import arena
from data.store import Store


def synthetic(n_votes: int, n_methods: int, seed: int = 0) -> list[ratings.VoteRecord]:
    """Votes between methods of evenly spread strengths; about 1 in 5 a draw."""
    rng = np.random.default_rng(seed)
    names = [f"method{k:02d}" for k in range(n_methods)]
    strength = np.linspace(-1, 1, n_methods)
    a = rng.integers(0, n_methods, n_votes)
    b = (a + rng.integers(1, n_methods, n_votes)) % n_methods
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(n_votes)
    choice = np.where(u < 0.2, "tie", np.where(u < 0.2 + 0.8 * p_a, "a", "b"))
    return [ratings.VoteRecord(names[i], names[j], str(c)) for i, j, c in zip(a, b, choice, strict=True)]


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--methods", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--single", type=int, default=50, help="single votes timed one by one")
    args = ap.parse_args()

    votes = synthetic(args.votes, args.methods)
    print(f"{args.votes:,} votes over {args.methods} methods")
    t, s = timed(ratings.tally, votes)
    print(f"TrueSkill rebuild (in memory):            {s:7.3f} s   (target < 2 s)")
    methods = t.methods
    w, _ = ratings.pair_matrices(t, methods)
    _, s_fit = timed(ratings.bradley_terry, w)
    _, s_boot = timed(ratings.bootstrap_bt, t, methods, rounds=args.rounds)
    print(f"Bradley–Terry fit + {args.rounds} bootstrap rounds:  {s_fit + s_boot:7.3f} s   (target < 10 s)")
    _, s_rows = timed(ratings.rows, t, bootstrap=args.rounds)
    print(f"Leaderboard rows from a tally (BT + CI):  {s_rows:7.3f} s")
    style_fit(votes)

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        start = datetime(2026, 1, 1, tzinfo=UTC)  # a time stamp each: no two records are the same vote
        records = [{"prompt": f"task {k % 500}", "kind": "writing", "task_set": "", "task_id": None,
                    "method_a": a, "method_b": b, "choice": c, "annotator": f"ann{k % 40}", "line": k + 1,
                    "created": (start + timedelta(seconds=k)).isoformat()}
                   for k, (a, b, c, _) in enumerate(votes)]
        _, s_import = timed(arena.import_votes, store, records)
        print(f"Import of the votes into SQLite:          {s_import:7.3f} s")
        boards = Boards(store)
        _, s_db = timed(boards.tally, "people")
        print(f"TrueSkill rebuild from SQLite:            {s_db:7.3f} s")

        arena.import_outputs(store, [{"prompt": "bench task", "kind": "writing", "task_set": "", "method": m,
                                      "text": f"text of {m}"} for m in methods[:2]])
        ids = [o.id for o in arena.arena_outputs(store) if o.method in methods[:2]][-2:]
        battles = [arena.create_battle(store, ids[0], ids[1], "bench") for _ in range(args.single)]
        record_s, update_s, table_s = [], [], []
        for k, battle in enumerate(battles):
            _, s1 = timed(arena.record_vote, store, battle, "bench", "a" if k % 2 else "tie")
            current, s2 = timed(boards.tally, "people")
            _, s3 = timed(ratings.rows, current, bootstrap=args.rounds)
            record_s.append(s1)
            update_s.append(s2)
            table_s.append(s3)
        ms = lambda xs: 1000 * float(np.median(xs))  # noqa: E731
        print(f"One vote: record {ms(record_s):.2f} ms + TrueSkill update {ms(update_s):.2f} ms "
              f"(median of {args.single}; slowest update {1000 * max(update_s):.1f} ms: it rebuilds only when the "
              f"rounded draw rate moves); whole table with BT CI {ms(table_s):.1f} ms")
        tab_figures(store, battles_for=(ids[0], ids[1]))


def style_fit(votes: list[ratings.VoteRecord], tasks: int = 500, seed: int = 0) -> None:
    """Style control over the votes, each between two of ``tasks`` outputs per method of made-up
    Markdown (length, citations, headings and list items drawn at random): the features of every
    output (computed once each, then cached), then the style-controlled fit."""
    rng = np.random.default_rng(seed)
    names = sorted({m for v in votes for m in (v.method_a, v.method_b)})

    def text(k: int) -> str:
        words, cites, heads, items = rng.integers(50, 800), rng.integers(0, 12), rng.integers(0, 4), rng.integers(0, 8)
        body = " ".join(f"word{w}" + (f" [{w % 9 + 1}]" if w < cites else "") for w in range(words))
        return "\n\n".join([*(f"## Part {h}" for h in range(heads)), body, *(f"- item {i}" for i in range(items))])

    texts = {k: text(k) for k in range(tasks * len(names))}
    cache = style.FeatureCache()
    task = rng.integers(0, tasks, len(votes))
    index = {m: k for k, m in enumerate(names)}
    ids_a = [index[v.method_a] * tasks + t for v, t in zip(votes, task, strict=True)]
    ids_b = [index[v.method_b] * tasks + t for v, t in zip(votes, task, strict=True)]
    table, s_features = timed(cache.table, ids_a + ids_b, lambda missing: {k: texts[k] for k in missing})
    _, s_again = timed(cache.table, ids_a + ids_b, lambda missing: {})
    styled, s_style = timed(style.board, votes, table[:len(votes)], table[len(votes):])
    print(f"Style control: features of {len(texts):,} outputs {s_features:.3f} s (once; cached: {s_again:.3f} s), "
          f"style-controlled fit over {styled.votes:,} votes {s_style:7.3f} s   (target < 1 s)")


def tab_figures(store: Store, battles_for: tuple[int, int]) -> None:
    import gradio as gr

    from annotation.rooms import ArenaRooms
    from annotation.voting.arena import Arena
    from ui import leaderboard

    with gr.Blocks():
        warmed = leaderboard.build(ArenaRooms.of(Arena(store)), None)
    _, warming = timed(lambda: warmed.results.warm_up(leaderboard.BOOTSTRAP).join())
    _, first_warm = timed(warmed.show, "people", leaderboard.ALL)
    with gr.Blocks():
        tab = leaderboard.build(ArenaRooms.of(Arena(store)), None)
    _, first = timed(tab.show, "people", leaderboard.ALL)
    _, again = timed(tab.show, "people", leaderboard.ALL)
    refresh = []
    for k in range(5):
        battle = arena.create_battle(store, *battles_for, "bench")
        arena.record_vote(store, battle, "bench", "a" if k % 2 else "b")
        refresh.append(timed(tab.show, "people", leaderboard.ALL)[1])
    _, drawn = timed(tab.draw, "people", leaderboard.ALL)
    print(f"Leaderboard tab, {tab.results.leaderboard('people').votes:,} votes: first opening {first:.3f} s cold, "
          f"{1000 * first_warm:.1f} ms after the server's warm-up ({warming:.3f} s in the background) "
          f"(target < 1 s); again, nothing new {1000 * again:.1f} ms; refresh after a vote "
          f"{1000 * float(np.median(refresh)):.0f} ms (median of 5; target < 200 ms); plots when opened {drawn:.3f} s")


if __name__ == "__main__":
    main()
