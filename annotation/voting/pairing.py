"""Which two outputs an annotator sees next.

A pair the annotator skipped (pressed Next without voting) comes back, as the same battle with
the same A and B, once they have voted on SKIPPED_COME_BACK_AFTER other pairs since it was last
shown, or sooner when no fresh pair is left (then the one shown longest ago first); until then,
and otherwise:

Candidates are pairs of outputs of the same task from two different methods (finished runs and
imported outputs alike) that this annotator has not been shown yet — a fresh battle never shows
an annotator a pair of outputs they were shown before, whether or not they voted on it. Among
them, the pair that teaches the leaderboard most comes first, by this key, smallest first:

1. how many battles people were shown for the pair's two *methods* (the least-compared methods
   first: every method pair gets evidence before any gets a lot);
2. minus TrueSkill's match quality of the two methods' current ratings (evenly matched,
   uncertain pairs first: their result is the least predictable);
3. how many battles were shown for this very pair of *outputs* (spread over tasks);
4. a random number (ties broken at random).

Which output is A and which is B is a coin flip.

Gold pairs: when an admin has marked the better side of some pairs (``votes gold add``), about
one new pair in ten (GOLD_SHARE) is a gold pair of the task set the annotator was not shown yet.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, combinations, product
from typing import Any, NamedTuple

from annotation.errors import NoPairLeft
from annotation.outputs import article_renderer
from annotation.results.ratings import Tally
from data import arena
from data.arena import OutputRow
from data.store import Store

#: A skipped pair comes back once the annotator has voted on this many other pairs since.
SKIPPED_COME_BACK_AFTER = 3
#: The share of new pairs that are gold pairs, while the annotator has one left to be shown.
GOLD_SHARE = 0.1

HOW_TO_MAKE_MORE = (
    "To make more, run methods on the same tasks (the Writer tab, or `python app.py batch`), "
    "or import outputs of other systems with `python app.py outputs import FILE.jsonl`."
)


def candidate_pairs(outputs: Sequence[OutputRow]) -> list[tuple[OutputRow, OutputRow]]:
    """Every pair of outputs of one task from two methods."""
    return [pair for sides in _by_methods(outputs).values() for xs, ys in sides for pair in product(xs, ys)]


#: What was built last from a list of outputs (its grouping by methods, its index by id), by the
#: identity of the list: the arena service keeps one list per task set until an output is added,
#: and every next pair would build them again from its hundreds (or, after a large import, its
#: hundreds of thousands) of outputs.
_BUILT: list[tuple[Sequence[OutputRow], Callable, Any]] = []
_BUILT_KEPT = 8  # two builds each of a few lists (task sets, campaigns); a replaced list drops out soon
#: A group of candidate pairs larger than this is sampled (``_sample_pair``), not listed: after
#: an import of 200,000 votes with their texts a task can hold hundreds of outputs per method,
#: and listing every pair of them took seconds and gigabytes.
LIST_AT_MOST = 20_000
SAMPLE_TRIES = 256


def _built(outputs: Sequence[OutputRow], build: Callable[[Sequence[OutputRow]], Any]) -> Any:
    """``build(outputs)``, built once for the same list (the very object; callers do not change it)."""
    for kept, how, value in list(_BUILT):
        if kept is outputs and how is build:
            return value
    value = build(outputs)
    _BUILT[:] = [(outputs, build, value), *_BUILT[:_BUILT_KEPT - 1]]
    return value


def prepare(outputs: Sequence[OutputRow]) -> None:
    """Build what pairing builds from ``outputs`` once (its grouping and index), ahead of the
    first annotator (the arena service's warm-up): 4 s at 400,000 outputs here."""
    _by_methods(outputs)
    _built(outputs, _index)


def _index(outputs: Sequence[OutputRow]) -> dict[int, OutputRow]:
    return {o.id: o for o in outputs}


def _by_methods(outputs: Sequence[OutputRow]) -> dict[tuple[str, str], list[tuple[list[OutputRow], list[OutputRow]]]]:
    """The candidate pairs by their two methods (in name order), each task's as the two lists
    of outputs whose product they are (built only where they are looked at), built once per list."""
    return _built(outputs, _group)


def _group(outputs: Sequence[OutputRow]) -> dict[tuple[str, str], list[tuple[list[OutputRow], list[OutputRow]]]]:
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
    among the pairs left. The match quality (the second part) is computed only for the method
    pairs of the fewest battles that are looked at."""
    grouped = _by_methods(outputs)
    by_count: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for methods in grouped:
        by_count[method_battles.get(frozenset(methods), 0)].append(methods)
    for count in sorted(by_count):
        by_quality: dict[float, list[tuple[str, str]]] = defaultdict(list)
        for methods in by_count[count]:
            by_quality[-round(quality(*methods), 9)].append(methods)
        for key in sorted(by_quality):
            cells = [cell for methods in by_quality[key] for cell in grouped[methods]]
            if sum(len(xs) * len(ys) for xs, ys in cells) > LIST_AT_MOST:
                pair = _sample_pair(cells, seen, output_battles, rng)
                if pair is None:
                    continue
                x, y = pair
                return (y, x) if rng.random() < 0.5 else (x, y)
            fresh = [(x, y, ids) for xs, ys in cells
                     for x, y in product(xs, ys) if (ids := frozenset((x.id, y.id))) not in seen]
            if fresh:
                fewest = min(output_battles.get(ids, 0) for _, _, ids in fresh)
                x, y, _ = rng.choice([p for p in fresh if output_battles.get(p[2], 0) == fewest])
                return (y, x) if rng.random() < 0.5 else (x, y)
    return None


def _sample_pair(cells: Sequence[tuple[list[OutputRow], list[OutputRow]]], seen: set[frozenset[int]],
                 output_battles: dict[frozenset[int], int], rng: random.Random) -> tuple[OutputRow, OutputRow] | None:
    """A pair of the ``cells`` (each the lists of outputs of two methods on one task) with the
    fewest battles among those not ``seen``, without listing them all: pairs drawn uniformly until
    one was never shown to anyone (the fewest there can be; in a large group nearly every pair),
    else, in a group that dense, the first such pair in order, or the pair of fewest battles; None
    when every pair was seen. What it looks at is bounded by the battles and ``seen``, not by
    the product of the outputs."""
    bounds = list(accumulate(len(xs) * len(ys) for xs, ys in cells))
    for _ in range(SAMPLE_TRIES):
        k = rng.randrange(bounds[-1])
        c = bisect_right(bounds, k)
        xs, ys = cells[c]
        offset = k - (bounds[c - 1] if c else 0)
        x, y = xs[offset // len(ys)], ys[offset % len(ys)]
        if (ids := frozenset((x.id, y.id))) not in seen and ids not in output_battles:
            return x, y
    best: tuple[int, OutputRow, OutputRow] | None = None
    for xs, ys in cells:
        for x, y in product(xs, ys):
            if (ids := frozenset((x.id, y.id))) in seen:
                continue
            n = output_battles.get(ids, 0)
            if n == 0:
                return x, y
            if best is None or n < best[0]:
                best = (n, x, y)
    return (best[1], best[2]) if best else None


def gold_pair(store: Store, outputs: Sequence[OutputRow], seen: set[frozenset[int]],
              rng: random.Random) -> tuple[OutputRow, OutputRow] | None:
    """About GOLD_SHARE of the time, a gold pair of ``outputs`` not in ``seen``, in random A/B
    order; else None (the random draw only happens when there is a gold pair at all).
    Raises StoreError."""
    golds = arena.gold_pairs(store)
    if not golds or rng.random() >= GOLD_SHARE:
        return None
    by_id = _built(outputs, _index)
    fresh = [(by_id[g.output_a], by_id[g.output_b]) for g in golds if g.output_a in by_id and g.output_b in by_id
             and frozenset((g.output_a, g.output_b)) not in seen]
    if not fresh:
        return None
    x, y = rng.choice(fresh)
    return (y, x) if rng.random() < 0.5 else (x, y)


class PairSpace(NamedTuple):
    """The candidate pairs of a list of outputs, counted once (``pair_space``): how many there
    are, and each output's task and method (to tell which pairs an annotator saw were candidates)."""

    total: int
    where: dict[int, tuple[int, str]]


def pair_space(outputs: Sequence[OutputRow]) -> PairSpace:
    """The candidate pairs of ``outputs``, counted, not built."""
    per_task: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for o in outputs:
        per_task[o.task_id][o.method] += 1
    total = sum(n * m for methods in per_task.values() for n, m in combinations(methods.values(), 2))
    return PairSpace(total, {o.id: (o.task_id, o.method) for o in outputs})


def unseen_pairs(outputs: Sequence[OutputRow] | PairSpace, seen: set[frozenset[int]]) -> int:
    """How many candidate pairs of ``outputs`` (or of their ``pair_space``) are not in ``seen``."""
    space = outputs if isinstance(outputs, PairSpace) else pair_space(outputs)
    candidates_seen = 0
    for pair in seen:
        x, y = (space.where.get(i) for i in pair) if len(pair) == 2 else (None, None)
        candidates_seen += bool(x and y and x[0] == y[0] and x[1] != y[1])
    return space.total - candidates_seen


def skipped_order(unvoted: Sequence[int], shown: Mapping[int, tuple[int, int]]) -> list[int]:
    """The unvoted battles' ids, shown longest ago first: those the arena service does not
    remember showing (shown before it started), oldest first, then in the order it showed them
    (``shown``: battle id -> (the newest vote's id then, a sequence number))."""
    return sorted(unvoted, key=lambda b: (1, shown[b][1]) if b in shown else (0, b))


def votes_since(votes: Sequence[arena.CountedVote], battle_id: int, shown: Mapping[int, tuple[int, int]]) -> int:
    """How many of ``votes`` were cast since the battle was last shown: after the newest vote
    there was then (``shown``), else, for a battle the service does not remember showing, on
    battles started after it."""
    if battle_id in shown:
        return sum(v.id > shown[battle_id][0] for v in votes)
    return sum(v.battle_id > battle_id for v in votes)


def quality_from(t: Tally) -> Callable[[str, str], float]:
    """Match quality of two methods under the tally's ratings (new methods at the prior)."""
    prior = (t.ts.env.mu, t.ts.env.sigma)
    return lambda m1, m2: t.ts.quality(t.ratings.get(m1, prior), t.ratings.get(m2, prior))


def arena_pairs_left(store: Store, annotator: str, *, task_set: str | None = None, text: str = arena.LATEST,
                     outputs: Sequence[OutputRow] | PairSpace | None = None) -> int:
    """About how many pairs are left for ``annotator``: the fresh pairs they were never shown and
    the battles they have not voted on (skipped, or on their screen). Finished runs not yet in the
    arena are not counted. ``outputs``: ``arena.arena_outputs`` of the task set (or their
    ``pair_space``), when the caller has them. Raises StoreError."""
    if outputs is None:
        outputs = arena.arena_outputs(store, task_set, text)
    fresh = unseen_pairs(outputs, arena.seen_output_pairs(store, annotator))
    return fresh + len(arena.unvoted_battles(store, annotator, task_set))


def next_battle(
    store: Store, annotator: str, people: Tally, *, rng: random.Random | None = None, task_set: str | None = None,
    counts: arena.BattleCounts | None = None, text: str = arena.LATEST,
    shown: Mapping[int, tuple[int, int]] | None = None, render: arena.Render | None = None,
    outputs_of: Callable[[str | None], Sequence[OutputRow]] | None = None,
) -> int:
    """The id of the battle to show ``annotator`` next: a skipped one that is due again, else a
    new battle of the best fresh pair, else the skipped one shown longest ago (see the module
    docstring). ``people`` is the current tally of people's votes (for match quality);
    ``counts`` the battles shown so far (read from the store when not given); ``text`` which
    text of a run is shown (``--arena-text``: ``data.arena.ARENA_TEXTS``); ``shown`` when the
    arena service last showed each battle (``skipped_order``, ``votes_since``);
    ``render`` how a finished run's text is stored (default: its article with its sources,
    ``annotation.outputs.article_renderer``); ``outputs_of(task_set)`` the outputs that can be
    paired once the runs are synced (default ``arena.arena_outputs``). Raises NoPairLeft when there is nothing (left) to
    show (``judged_all`` when the annotator voted on every pair there is), StoreError."""
    shown = shown or {}
    unvoted = skipped_order(arena.unvoted_battles(store, annotator, task_set), shown)
    if unvoted:
        votes = arena.counted_votes(store, annotator)
        for battle_id in unvoted:
            if votes_since(votes, battle_id, shown) >= SKIPPED_COME_BACK_AFTER:
                return battle_id
    arena.sync_run_outputs(store, text, render or article_renderer(store))
    outputs = outputs_of(task_set) if outputs_of else arena.arena_outputs(store, task_set, text)
    if not outputs and not unvoted:
        raise NoPairLeft("No task has finished outputs from two different methods yet. " + HOW_TO_MAKE_MORE)
    method_battles, output_battles, _ = counts if counts is not None else arena.battle_counts(store)
    seen, rng = arena.seen_output_pairs(store, annotator), rng or random.Random()
    pair = gold_pair(store, outputs, seen, rng) or choose_pair(
        outputs, seen, method_battles, output_battles, quality_from(people), rng,
    ) if outputs else None
    if pair is not None:
        first, second = pair
        return arena.create_battle(store, first.id, second.id, annotator)
    if unvoted:
        return unvoted[0]
    raise NoPairLeft(f"You have judged every pair there is, {annotator} — thank you! " + HOW_TO_MAKE_MORE,
                     judged_all=True)


def campaign_outputs(outputs: Sequence[OutputRow], methods: Sequence[str]) -> list[OutputRow]:
    """The outputs of a campaign's ``methods`` (none: every method's) that can still be paired:
    of tasks with outputs of at least two of them."""
    if methods:
        wanted = set(methods)
        outputs = [o for o in outputs if o.method in wanted]
    per_task: dict[int, set[str]] = defaultdict(set)
    for o in outputs:
        per_task[o.task_id].add(o.method)
    return [o for o in outputs if len(per_task[o.task_id]) >= 2]


def started_pair(outputs: Sequence[OutputRow], held: Mapping[frozenset[int], set[str]], overlap: int,
                 seen: set[frozenset[int]], rng: random.Random) -> tuple[OutputRow, OutputRow] | None:
    """A pair of ``outputs`` that some annotators hold (``held``) but fewer than ``overlap``, and
    this annotator was not shown, the one closest to its overlap first (ties at random), in random
    A/B order; None when there is none. Finishing started pairs first makes complete pairs (the
    ones agreement is measured on) early, instead of many pairs with one vote each."""
    by_id = _built(outputs, _index)
    open_ = [(len(who), ids) for ids, who in held.items()
             if len(who) < overlap and ids not in seen and all(i in by_id for i in ids)]
    if not open_:
        return None
    most = max(n for n, _ in open_)
    x, y = (by_id[i] for i in sorted(rng.choice([ids for n, ids in open_ if n == most])))
    return (y, x) if rng.random() < 0.5 else (x, y)


def campaign_pairs_left(outputs: Sequence[OutputRow] | PairSpace, held: Mapping[frozenset[int], set[str]],
                        overlap: int, seen: set[frozenset[int]], unvoted: int) -> int:
    """About how many pairs of a campaign are left for an annotator: its candidate pairs they were
    not shown that do not have their ``overlap`` yet, and their ``unvoted`` battles of it."""
    full = {ids for ids, who in held.items() if len(who) >= overlap}
    return unseen_pairs(outputs, seen | full) + unvoted


def next_campaign_battle(
    store: Store, annotator: str, people: Tally, campaign, *, held: Mapping[frozenset[int], set[str]],
    outputs: Sequence[OutputRow], voted: int, rng: random.Random | None = None,
    counts: arena.BattleCounts | None = None, shown: Mapping[int, tuple[int, int]] | None = None,
) -> int:
    """The id of the battle to show ``annotator`` next in ``campaign``
    (``annotation.campaigns.Campaign``): none once they cast its quota (``voted``: their votes in
    it that count); else a skipped pair of it that is due again; else a pair others started and
    that still lacks votes to meet the overlap (``started_pair``; ``held`` says who holds each
    pair); else a new battle as in the open arena (``choose_pair``, gold pairs included) among its
    ``outputs`` (of its task set and methods) that do not have their overlap; else the skipped pair
    shown longest ago. Raises NoPairLeft (``judged_all``) saying why there is none, StoreError."""
    if campaign.quota is not None and voted >= campaign.quota:
        raise NoPairLeft(f"You have cast your {campaign.quota} votes in campaign “{campaign.name}” — thank you!",
                         judged_all=True)
    shown = shown or {}
    unvoted = skipped_order(arena.unvoted_battles(store, annotator, campaign=campaign.name), shown)
    if unvoted:
        votes = arena.counted_votes(store, annotator)
        for battle_id in unvoted:
            if votes_since(votes, battle_id, shown) >= SKIPPED_COME_BACK_AFTER:
                return battle_id
    rng = rng or random.Random()
    seen = arena.seen_output_pairs(store, annotator)
    full = {ids for ids, who in held.items() if len(who) >= campaign.overlap}
    pair = started_pair(outputs, held, campaign.overlap, seen, rng)
    if pair is None and outputs:
        method_battles, output_battles, _ = counts if counts is not None else arena.battle_counts(store)
        pair = gold_pair(store, outputs, seen | full, rng) or choose_pair(
            outputs, seen | full, method_battles, output_battles, quality_from(people), rng)
    if pair is not None:
        first, second = pair
        return arena.create_battle(store, first.id, second.id, annotator, campaign=campaign.name)
    if unvoted:
        return unvoted[0]
    raise NoPairLeft(f"Every pair of campaign “{campaign.name}” you can judge has its votes — thank you!",
                     judged_all=True)
