"""Ratings from pairwise votes: TrueSkill (as in appendix C and table 2 of the RAT paper) and a
Bradley–Terry fit with bootstrap intervals. Pure functions and small accumulators over vote
records; no SQL, no gradio.

Conventions
- A vote is any record with attributes ``method_a``, ``method_b``, ``choice`` (and ``task_id``
  for ``agreement``): a ``VoteRecord``, or ``data.arena.VoteRow`` as read from the store. Choice
  is ``a``, ``b``, ``tie`` or ``both_bad`` (people) or ``a``, ``b``, ``tie`` (the judge).
  ``tie`` and ``both_bad`` are draws.
- TrueSkill: mu 25, sigma 25/3, beta 25/6, tau 0 (outputs do not change). The draw probability
  is the observed share of draws, rounded to 0.01 and clamped to [0.01, 0.99] (0.10, the
  package's default, before any vote). Rounding makes it change rarely, so a board can take
  new votes one by one and still equal a rebuild from scratch. Votes are applied in the order
  they were recorded; each update is the package's own 1-vs-1 closed form (its ``v``/``w``
  functions on its default backend) — the same numbers as ``trueskill.rate_1vs1``, twenty
  times faster — except that ``w`` is kept in [0, 1), where the package would raise
  FloatingPointError for a near-certain result.
- Win rate counts a draw as half a win: (wins + ties/2) / battles.
- Bradley–Terry: maximum likelihood of log-strengths theta (ties as half a win to each side)
  with an L2 penalty ``BT_REG/2 * |theta|^2`` — as if each method had played a fraction of a
  game against an average one — so a method that never lost keeps a finite score. Fitted as a
  logistic regression (scikit-learn's, as FastChat does), one fit per bootstrap round. Reported
  on the Elo scale,
  ``1000 + 400 * theta / ln 10`` (theta centred). Intervals: 2.5 and 97.5 percentiles over
  rounds that resample the votes (a multinomial draw of the per-pair outcome counts).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import trueskill

MU = 25.0
SIGMA = MU / 3
BETA = SIGMA / 2
TAU = 0.0
DEFAULT_DRAW_PROBABILITY = 0.10
DRAW_RANGE = (0.01, 0.99)
BT_REG = 0.1
ELO_BASE = 1000.0
ELO_SCALE = 400.0 / math.log(10)
DRAW_CHOICES = frozenset({"tie", "both_bad"})


class VoteRecord(NamedTuple):
    """One vote, as the functions here read it (``data.arena.VoteRow`` has the same fields and an id)."""

    method_a: str
    method_b: str
    choice: str
    task_id: int | None = None


def outcome(choice: str) -> str:
    """``'a'``, ``'b'`` or ``'draw'``. Raises ValueError for an unknown choice."""
    if choice in ("a", "b"):
        return choice
    if choice in DRAW_CHOICES:
        return "draw"
    raise ValueError(f"unknown choice {choice!r}: expected a, b, tie or both_bad")


def draw_probability(draws: int, total: int) -> float:
    """The share of draws, rounded to 0.01 and clamped to DRAW_RANGE; the default before any vote."""
    if total <= 0:
        return DEFAULT_DRAW_PROBABILITY
    low, high = DRAW_RANGE
    return min(high, max(low, round(draws / total, 2)))


def make_env(p_draw: float) -> trueskill.TrueSkill:
    """The TrueSkill environment of the leaderboard for this draw probability."""
    return trueskill.TrueSkill(mu=MU, sigma=SIGMA, beta=BETA, tau=TAU, draw_probability=p_draw)


class TrueSkill1v1:
    """Sequential 1-vs-1 TrueSkill updates in closed form (see the module docstring)."""

    def __init__(self, p_draw: float):
        self.p_draw = p_draw
        self.env = make_env(p_draw)
        self.margin = trueskill.calc_draw_margin(p_draw, 2, env=self.env)

    def rate(self, first: tuple[float, float], second: tuple[float, float], drawn: bool):
        """New (mu, sigma) of both players after ``first`` beat ``second`` (or they drew)."""
        (mu1, s1), (mu2, s2) = first, second
        c2 = 2 * BETA * BETA + s1 * s1 + s2 * s2
        c = math.sqrt(c2)
        t, e = (mu1 - mu2) / c, self.margin / c
        v, w = self._v_w_draw(t, e) if drawn else self._v_w_win(t, e)
        w = min(max(w, 0.0), 1.0 - 1e-12)
        return (
            (mu1 + s1 * s1 / c * v, math.sqrt(s1 * s1 * (1 - s1 * s1 / c2 * w))),
            (mu2 - s2 * s2 / c * v, math.sqrt(s2 * s2 * (1 - s2 * s2 / c2 * w))),
        )

    def _v_w_win(self, t: float, e: float) -> tuple[float, float]:
        x = t - e
        denom = self.env.cdf(x)
        v = self.env.pdf(x) / denom if denom else -x
        return v, v * (v + x)

    def _v_w_draw(self, t: float, e: float) -> tuple[float, float]:
        cdf, pdf = self.env.cdf, self.env.pdf
        a, b = e - abs(t), -e - abs(t)
        denom = cdf(a) - cdf(b)
        if not denom:
            return (a if t >= 0 else -a), 1.0
        v = (pdf(b) - pdf(a)) / denom
        w = v * v + (a * pdf(a) - b * pdf(b)) / denom
        return (v if t >= 0 else -v), w

    def quality(self, first: tuple[float, float], second: tuple[float, float]) -> float:
        """TrueSkill's match quality (the draw probability of an even match), in [0, 1]: for two
        players, sqrt(2 beta^2 / c^2) * exp(-(mu1 - mu2)^2 / (2 c^2)) with c^2 = 2 beta^2 +
        sigma1^2 + sigma2^2, the closed form of what ``trueskill.quality_1vs1`` computes with
        matrices (a test checks they agree), a hundred times faster."""
        (mu1, s1), (mu2, s2) = first, second
        c2 = 2 * BETA * BETA + s1 * s1 + s2 * s2
        return math.sqrt(2 * BETA * BETA / c2) * math.exp(-((mu1 - mu2) ** 2) / (2 * c2))


class Tally:
    """Votes folded in order: TrueSkill ratings, each method's wins/ties/losses and per-pair
    counts. ``last_id`` is for callers that add votes as they come (see ``annotation.results.board``)."""

    def __init__(self, p_draw: float = DEFAULT_DRAW_PROBABILITY):
        self.ts = TrueSkill1v1(p_draw)
        self.ratings: dict[str, tuple[float, float]] = {}
        self.record: dict[str, list[int]] = {}  # method -> [wins, ties, losses]
        self.pairs: dict[tuple[str, str], list[int]] = {}  # (x, y), x < y -> [x wins, y wins, draws]
        self.draws = 0
        self.total = 0
        self.last_id = 0

    @property
    def p_draw(self) -> float:
        return self.ts.p_draw

    def add(self, method_a: str, method_b: str, choice: str) -> None:
        """Fold one vote in. Raises ValueError for an unknown choice or a method against itself."""
        result = outcome(choice)
        if method_a == method_b:
            raise ValueError(f"a vote needs two different methods, not {method_a!r} twice")
        winner, loser = (method_b, method_a) if result == "b" else (method_a, method_b)
        rw = self.ratings.get(winner, (MU, SIGMA))
        rl = self.ratings.get(loser, (MU, SIGMA))
        self.ratings[winner], self.ratings[loser] = self.ts.rate(rw, rl, result == "draw")
        self._count(winner, loser, result == "draw")

    def _count(self, winner: str, loser: str, drawn: bool) -> None:
        rw = self.record.setdefault(winner, [0, 0, 0])
        rl = self.record.setdefault(loser, [0, 0, 0])
        key = (winner, loser) if winner < loser else (loser, winner)
        cell = self.pairs.setdefault(key, [0, 0, 0])
        if drawn:
            rw[1] += 1
            rl[1] += 1
            cell[2] += 1
            self.draws += 1
        else:
            rw[0] += 1
            rl[2] += 1
            cell[0 if key[0] == winner else 1] += 1
        self.total += 1

    def add_all(self, votes: Iterable[VoteRecord]) -> Tally:
        """Fold in vote records (method_a, method_b, choice) in order; returns self.
        Raises ValueError for an unknown choice or a method against itself."""
        for v in votes:
            self.add(v.method_a, v.method_b, v.choice)
        return self

    @property
    def methods(self) -> list[str]:
        return sorted(self.record)

    def copy(self) -> Tally:
        other = Tally.__new__(Tally)
        other.ts, other.ratings = self.ts, dict(self.ratings)
        other.record = {m: list(c) for m, c in self.record.items()}
        other.pairs = {k: list(c) for k, c in self.pairs.items()}
        other.draws, other.total, other.last_id = self.draws, self.total, self.last_id
        return other


def tally(votes: Sequence[VoteRecord]) -> Tally:
    """A Tally of all votes, with the draw probability observed in them.
    Raises ValueError for an unknown choice."""
    draws = sum(outcome(v.choice) == "draw" for v in votes)
    return Tally(draw_probability(draws, len(votes))).add_all(votes)


# -- Bradley–Terry ----------------------------------------------------------------------------


def pair_matrices(t: Tally, methods: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(W, N): W[i, j] the wins of method i over method j, a draw counting half to each; N the
    battles between them (W + W.T)."""
    index = {m: k for k, m in enumerate(methods)}
    w = np.zeros((len(methods), len(methods)))
    for (x, y), (xw, yw, d) in t.pairs.items():
        i, j = index[x], index[y]
        w[i, j] += xw + d / 2
        w[j, i] += yw + d / 2
    return w, w + w.T


def bradley_terry(w: np.ndarray, reg: float = BT_REG) -> np.ndarray:
    """Penalised maximum-likelihood log-strengths (centred) from win matrices ``w`` of shape
    (..., n, n); the leading axes are independent fits (bootstrap rounds). Each fit is a
    scikit-learn logistic regression (see ``_fit_bt``)."""
    flat = w.reshape(-1, *w.shape[-2:])
    theta = np.stack([_fit_bt(one, reg) for one in flat]) if len(flat) else np.zeros((0, w.shape[-1]))
    return theta.reshape(w.shape[:-1])


def _fit_bt(w: np.ndarray, reg: float) -> np.ndarray:
    """One Bradley–Terry fit as FastChat does it: one row per ordered pair (i, j) with i's wins
    over j as its sample weight, +1 in column i and -1 in column j, outcome 1; each row also
    mirrored (columns negated, outcome 0) so that both classes are present. No intercept. The
    mirror counts every game twice, so the L2 strength ``reg`` becomes ``C = 1 / (2 reg)``."""
    n = w.shape[-1]
    i, j = np.nonzero(w > 0)
    if not len(i):
        return np.zeros(n)
    x = np.zeros((len(i), n))
    x[np.arange(len(i)), i] = 1.0
    x[np.arange(len(i)), j] = -1.0
    from sklearn.linear_model import LogisticRegression  # 1.5 s to import: only when a fit is asked for

    model = LogisticRegression(C=1.0 / (2.0 * reg), fit_intercept=False, solver="newton-cholesky",
                               tol=1e-10, max_iter=200)
    model.fit(np.vstack([x, -x]), np.r_[np.ones(len(i)), np.zeros(len(i))],
              sample_weight=np.r_[w[i, j], w[i, j]])
    theta = model.coef_[0]
    return theta - theta.mean()


def warm_up() -> None:
    """Import what a Bradley–Terry fit needs (scikit-learn takes a second or more), ahead of the
    first fit (see ``annotation.results.results.Results.warm_up``)."""
    from sklearn.linear_model import LogisticRegression  # noqa: F401


def to_elo(theta: np.ndarray) -> np.ndarray:
    return ELO_BASE + ELO_SCALE * theta


def bootstrap_bt(t: Tally, methods: Sequence[str], rounds: int = 100, seed: int = 0, reg: float = BT_REG) -> np.ndarray:
    """Log-strengths of ``rounds`` resamples of the votes, shape (rounds, n): each round draws as
    many votes as there are, from the observed per-pair outcome counts (multinomial)."""
    index = {m: k for k, m in enumerate(methods)}
    keys = list(t.pairs)
    if not keys or rounds <= 0:
        return np.zeros((0, len(methods)))
    i = np.array([index[x] for x, _ in keys])
    j = np.array([index[y] for _, y in keys])
    counts = np.array([t.pairs[k] for k in keys], dtype=float).T.ravel()  # x wins, y wins, draws
    rng = np.random.default_rng(seed)
    sample = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=rounds).astype(float)
    xw, yw, d = np.split(sample, 3, axis=1)
    w = np.zeros((rounds, len(methods), len(methods)))
    w[:, i, j] = xw + d / 2
    w[:, j, i] = yw + d / 2
    return bradley_terry(w, reg=reg)


# -- the leaderboard --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    method: str
    mu: float
    sigma: float
    conservative: float  # mu - 3 sigma
    win_rate: float  # (wins + ties/2) / battles
    battles: int
    wins: int
    ties: int
    losses: int
    bt: float  # Bradley–Terry on the Elo scale
    bt_low: float
    bt_high: float


def rows(t: Tally, *, bootstrap: int = 100, seed: int = 0) -> list[Row]:
    """The leaderboard of a tally, best conservative score first."""
    methods = t.methods
    if not methods:
        return []
    w, _ = pair_matrices(t, methods)
    bt = to_elo(bradley_terry(w))
    boot = to_elo(bootstrap_bt(t, methods, rounds=bootstrap, seed=seed))
    low, high = (np.percentile(boot, [2.5, 97.5], axis=0) if len(boot) else (bt, bt))
    out = []
    for k, m in enumerate(methods):
        mu, sigma = t.ratings[m]
        wins, ties, losses = t.record[m]
        battles = wins + ties + losses
        out.append(Row(
            method=m, mu=mu, sigma=sigma, conservative=mu - 3 * sigma,
            win_rate=(wins + ties / 2) / battles if battles else 0.0, battles=battles,
            wins=wins, ties=ties, losses=losses,
            bt=float(bt[k]), bt_low=float(low[k]), bt_high=float(high[k]),
        ))
    return sorted(out, key=lambda r: (-r.conservative, r.method))


def leaderboard(votes: Sequence[VoteRecord], *, bootstrap: int = 100, seed: int = 0) -> list[Row]:
    """The leaderboard of vote records in the order given.
    Raises ValueError for an unknown choice."""
    return rows(tally(votes), bootstrap=bootstrap, seed=seed)


def win_rate_matrix(t: Tally, methods: Sequence[str]) -> np.ndarray:
    """M[i, j]: the share of i's battles against j that i won (draws as half); NaN when none."""
    w, n = pair_matrices(t, methods)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, w / np.where(n > 0, n, 1), np.nan)


def battle_matrix(t: Tally, methods: Sequence[str]) -> np.ndarray:
    """M[i, j]: how many battles i and j fought."""
    return pair_matrices(t, methods)[1].round().astype(int)


# -- agreement between the judge and people ---------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How many of people's votes on the tasks and method pairs the judge also judged
    (``compared``) name the judge's winner (``agreed``), in all and per method pair
    (``by_pair``: (first method, second method) in name order -> (compared, agreed), the
    pairs in name order), since the judge can be right on one pair of methods and not another."""

    compared: int
    agreed: int
    by_pair: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        return self.agreed / self.compared if self.compared else None

    def as_json(self) -> dict:
        """What ``leaderboard --json --agreement`` writes under ``agreement_judge``."""
        return {"compared": self.compared, "agreed": self.agreed, "rate": self.rate,
                "by_method_pair": [{"method_a": a, "method_b": b, "compared": n, "agreed": k,
                                    "rate": k / n if n else None} for (a, b), (n, k) in self.by_pair.items()]}


def _winner(v: VoteRecord) -> str | None:
    """The winning method of a vote, or None for a draw."""
    result = outcome(v.choice)
    return None if result == "draw" else (v.method_a if result == "a" else v.method_b)


def _pair_key(v: VoteRecord) -> tuple:
    return v.task_id, frozenset((v.method_a, v.method_b))


class AgreementTally:
    """People's winners per task and method pair, folded in as votes arrive, against the judge's
    verdicts (replaced whole when the judge votes again): ``result()`` costs one pass over the
    pairs, not over the votes, so a leaderboard refresh after one vote reads one vote."""

    def __init__(self):
        self.people: dict[tuple, dict[str | None, int]] = {}  # pair key -> winner (None: draw) -> votes
        self.verdicts: dict[tuple, str | None] = {}
        self.last_id = 0  # the newest people's vote folded in (for callers that add votes as they come)

    def add_people(self, votes: Iterable[VoteRecord]) -> AgreementTally:
        """Fold in people's votes (method_a, method_b, choice, task_id). Raises ValueError for an
        unknown choice."""
        for v in votes:
            winners = self.people.setdefault(_pair_key(v), {})
            winner = _winner(v)
            winners[winner] = winners.get(winner, 0) + 1
        return self

    def set_judge(self, judge: Iterable[VoteRecord]) -> AgreementTally:
        """The judge's verdicts, in the order recorded (the latest per task and pair counts)."""
        self.verdicts = {_pair_key(v): _winner(v) for v in judge}
        return self

    def result(self) -> Agreement:
        by_pair: dict[tuple[str, str], tuple[int, int]] = {}
        for key, verdict in self.verdicts.items():
            winners = self.people.get(key)
            if winners:
                pair = tuple(sorted(key[1]))
                n, k = by_pair.get(pair, (0, 0))
                by_pair[pair] = (n + sum(winners.values()), k + winners.get(verdict, 0))
        return Agreement(sum(n for n, _ in by_pair.values()), sum(k for _, k in by_pair.values()),
                         dict(sorted(by_pair.items())))


def agreement(people: Iterable[VoteRecord], judge: Iterable[VoteRecord]) -> Agreement:
    """How many of people's votes name the same winner (or a draw) as the judge's verdict on the
    same task and method pair (the latest verdict when judged more than once). Records have
    method_a, method_b, choice and task_id. Raises ValueError for an unknown choice."""
    return AgreementTally().add_people(people).set_judge(judge).result()
