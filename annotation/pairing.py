"""Which two outputs an annotator sees next.

Candidates are pairs of outputs of the same task from two different methods (finished runs and
imported outputs alike) that this annotator has not been shown yet — an annotator never sees
the same pair of outputs twice, whether or not they voted on it. Among them, the pair that
teaches the leaderboard most comes first, by this key, smallest first:

1. how many battles people were shown for the pair's two *methods* (the least-compared methods
   first: every method pair gets evidence before any gets a lot);
2. minus TrueSkill's match quality of the two methods' current ratings (evenly matched,
   uncertain pairs first: their result is the least predictable);
3. how many battles were shown for this very pair of *outputs* (spread over tasks);
4. a random number (ties broken at random).

Which output is A and which is B is a coin flip.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import combinations, product

from annotation.errors import NoPairLeft
from annotation.ratings import Tally
from data import arena
from data.arena import OutputRow
from data.store import Store

HOW_TO_MAKE_MORE = (
    "To make more, run methods on the same tasks (the Writer tab, or `python app.py batch`), "
    "or import outputs of other systems with `python app.py outputs import FILE.jsonl`."
)


def candidate_pairs(outputs: Sequence[OutputRow]) -> list[tuple[OutputRow, OutputRow]]:
    """Every pair of outputs of one task from two methods."""
    return [pair for sides in _by_methods(outputs).values() for xs, ys in sides for pair in product(xs, ys)]


def _by_methods(outputs: Sequence[OutputRow]) -> dict[tuple[str, str], list[tuple[list[OutputRow], list[OutputRow]]]]:
    """The candidate pairs by their two methods (in name order), each task's as the two lists
    of outputs whose product they are (built only where they are looked at)."""
    by_task: dict[int, dict[str, list[OutputRow]]] = defaultdict(lambda: defaultdict(list))
    for o in outputs:
        by_task[o.task_id][o.method].append(o)
    grouped: dict[tuple[str, str], list[tuple[list[OutputRow], list[OutputRow]]]] = defaultdict(list)
    for per_method in by_task.values():
        for a, b in combinations(sorted(per_method), 2):
            grouped[(a, b)].append((per_method[a], per_method[b]))
    return grouped


def choose_pair(
    outputs: Sequence[OutputRow],
    seen: set[frozenset[int]],
    method_battles: dict[frozenset[str], int],
    output_battles: dict[frozenset[int], int],
    quality: Callable[[str, str], float],
    rng: random.Random,
) -> tuple[OutputRow, OutputRow] | None:
    """The pair to show next by the key in the module docstring, in random A/B order;
    None when every candidate pair was already seen.

    The first two parts of the key belong to the pair's methods, so they are computed once per
    method pair (a dozen methods: 66), and only the pairs of the best method pairs that still
    hold one this annotator has not seen are looked at, not the thousands of pairs of outputs;
    those are ranked by the third part, and the fourth, a random tie-break, is a uniform choice
    among the pairs left."""
    grouped = _by_methods(outputs)
    method_key = {(a, b): (method_battles.get(frozenset((a, b)), 0), -round(quality(a, b), 9)) for a, b in grouped}
    for key in sorted(set(method_key.values())):
        fresh = [(x, y, ids) for methods, k in method_key.items() if k == key for xs, ys in grouped[methods]
                 for x, y in product(xs, ys) if (ids := frozenset((x.id, y.id))) not in seen]
        if fresh:
            fewest = min(output_battles.get(ids, 0) for _, _, ids in fresh)
            x, y, _ = rng.choice([p for p in fresh if output_battles.get(p[2], 0) == fewest])
            return (y, x) if rng.random() < 0.5 else (x, y)
    return None


def quality_from(t: Tally) -> Callable[[str, str], float]:
    """Match quality of two methods under the tally's ratings (new methods at the prior)."""
    prior = (t.ts.env.mu, t.ts.env.sigma)
    return lambda m1, m2: t.ts.quality(t.ratings.get(m1, prior), t.ratings.get(m2, prior))


def next_battle(
    store: Store, annotator: str, people: Tally, *, rng: random.Random | None = None, task_set: str | None = None,
    counts: arena.BattleCounts | None = None, text: str = arena.LATEST,
) -> int:
    """Start the next battle for ``annotator`` and return its id. ``people`` is the current tally
    of people's votes (for match quality); ``counts`` the battles shown so far (read from the
    store when not given); ``text`` which text of a run is shown (``--arena-text``:
    ``data.arena.ARENA_TEXTS``). Raises NoPairLeft when there is nothing (left) to show, StoreError."""
    arena.sync_run_outputs(store, text)
    outputs = arena.arena_outputs(store, task_set, text)
    if not outputs:
        raise NoPairLeft("No task has finished outputs from two different methods yet. " + HOW_TO_MAKE_MORE)
    method_battles, output_battles, _ = counts if counts is not None else arena.battle_counts(store)
    pair = choose_pair(
        outputs, arena.seen_output_pairs(store, annotator), method_battles, output_battles,
        quality_from(people), rng or random.Random(),
    )
    if pair is None:
        raise NoPairLeft(f"You have judged every pair there is, {annotator} — thank you! " + HOW_TO_MAKE_MORE)
    first, second = pair
    return arena.create_battle(store, first.id, second.id, annotator)
