"""Style control: how much of a method's lead is its answers' style, as LMArena's style control
measures it. Pure functions over vote outcomes and output texts; no SQL, no gradio.

An output's style is what an annotator saw of it (``annotation.present``, in the arena's style):
its length in words, the [n] citation marks shown in its body, its headings, its list items and
its opening chatter: the lines at its top in which the writer speaks of its own work ("Let me
search for...", "I'll research...", "我将为您撰写...", "好的，我来..."), which some systems leave in
their reports and which are shown as written (``features``; the sources list under the body is
not counted). A feature no answer has (chatter, in most arenas) is left out of the fit. Outputs never change, so each
one's features are computed once (``FeatureCache``, by output id).

The fit (``fit``) is one logistic regression over the votes, each vote a row: +1 in the column of
method A and -1 in that of method B, as the Bradley–Terry fit of ``annotation.results.ratings`` has them,
and the differences A - B of the style features, each divided by its standard deviation over
the votes (the root mean square of the difference: a difference of 0 stays 0). A tie counts as
half a win to each side, and the L2 penalty on the coefficients is the Bradley–Terry one
(``ratings.BT_REG``). The methods' coefficients are the style-controlled ranking (Elo scale,
``ratings.to_elo``); a style coefficient is the log-odds a side gains by being one standard
deviation "more" (longer, more cited, ...) at equal quality. A feature in which no two answers
shown together differ is left out of the fit (its coefficient is None).

How sure it is: each coefficient and each controlled score has a 95% interval from the fit
repeated on votes resampled with replacement (``bootstrap_rounds`` rounds, seeded, so the same
votes give the same intervals); below MIN_VOTES votes no effect is put in words as a finding (the
sentence says how many votes are needed), and an effect whose interval holds 50% says the votes
cannot tell it from none. Each vote's style is measured on the texts as its annotator saw them:
a vote of a ``plain`` campaign counts no [n] mark (none was shown).
"""

from __future__ import annotations

import math
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from annotation.present import HEADING, SOURCES, Mark, Parsed, check_style, parse
from annotation.results import ratings
from core.text.segment import word_count

FEATURES = ("words", "citations", "headings", "list_items", "chatter")
#: How the sentence about each feature names the side that has more of it, and its unit.
_SIDE = {"words": ("the longer answer", "words"), "citations": ("the answer with more [n] citations", "citations"),
         "headings": ("the answer with more headings", "headings"),
         "list_items": ("the answer with more list items", "list items"),
         "chatter": ("the answer that opens with more remarks about its own work", "opening remarks")}

_SHARE = {"a": 1.0, "b": 0.0, "draw": 0.5}  # A's share of a vote's win, by ratings.outcome
MIN_VOTES = 50  # fewer votes than this: no effect is stated as a finding
BOOTSTRAP_ROUNDS = 100  # resampled fits for the intervals, for up to BOOTSTRAP_VOTES votes
BOOTSTRAP_VOTES = 20_000  # past this many votes the rounds shrink (never under MIN_ROUNDS): one fit costs ~votes
MIN_ROUNDS = 20


def bootstrap_rounds(votes: int) -> int:
    """How many resampled fits the intervals of ``votes`` votes take: BOOTSTRAP_ROUNDS, fewer
    (at least MIN_ROUNDS) past BOOTSTRAP_VOTES votes, so a large arena's board stays quick."""
    if votes <= BOOTSTRAP_VOTES:
        return BOOTSTRAP_ROUNDS
    return max(MIN_ROUNDS, BOOTSTRAP_ROUNDS * BOOTSTRAP_VOTES // votes)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")
_MARKER = re.compile(r"^\s*(?:#{1,6}|[-*+]|\d{1,9}[.)])\s+")
_WORD = re.compile(r"\w+(?:['’-]\w+)*")
MAX_CHATTER_CHARS = 300  # a line of opening chatter is short: a longer first line is the answer's own
#: A line in which the writer speaks, in the first person, of what it will do or is doing: an
#: optional acknowledgement ("Sure,", "好的，"), then "let me", "let's", "I'll", "I am", "I have",
#: "I need to", ... or "让我", "我将", "我来", "我正在", ... ("我们" is a report's voice, not chatter).
_CHATTER = re.compile(
    r"^[\W_]*(?:(?:ok(?:ay)?|sure|alright|all right|great|certainly|of course|got it|understood|absolutely|perfect|"
    r"好的|好|当然|没问题|明白了?|收到|可以)[\s,，.。!！:：~～—-]*)?"
    r"(?:let\s+me\b|let['’]s\b|let\s+us\b|i\s*['’]\s*(?:ll|m|ve|d)\b|"
    r"i\s+(?:will|shall|am|have|need|want|would|can|must|should|plan|intend|began|started|now)\b|"
    r"(?:now|first|next|then|to\s+begin)[,，]?\s+(?:i|let)\b|"
    r"让我|我(?!们)(?:将|会|来|先|要|需要|正在|现在|已经|开始|打算|准备|马上|立即|这就|为您|为你|给您|给你|帮您|帮你|去|再|想))",
    re.I)


def features(text: str, style: str = SOURCES) -> np.ndarray:
    """The style of one output as shown in ``style`` (``annotation.present.STYLES``): its body's
    words, its [n] citation marks (each number shown counts; none in ``plain``, which shows no
    mark), its headings, its list items and its lines of opening chatter (``chatter``), in the
    order of FEATURES. Code blocks count as words only. Raises ValueError for an unknown style."""
    check_style(style)
    parsed = parse(text or "")
    numbers, _ = parsed.numbered()
    words = citations = headings = items = 0
    for line in parsed.lines:
        plain = line.text()
        words += _words(plain if line.code else _MARKER.sub("", plain))
        if line.code:
            continue
        headings += plain.startswith(HEADING + " ")
        items += bool(_LIST_ITEM.match(plain))
        if style == SOURCES:
            citations += sum(len({numbers[k] for k in p.keys if k in numbers})
                             for p in line.pieces if isinstance(p, Mark))
    return np.array([words, citations, headings, items, chatter(parsed)], dtype=float)


def _words(text: str) -> int:
    """The words of a line: each run of word characters, and the words ICU finds in a run of a
    script written without spaces ("量子计算的原理" is four, not one: ``core.text.segment``)."""
    found = _WORD.findall(text)
    return len(found) if text.isascii() else sum(word_count(w) for w in found)


def chatter(parsed: Parsed) -> int:
    """How many lines at the top of the body (blank lines aside) speak of the writer's own work
    (``_CHATTER``, each at most MAX_CHATTER_CHARS long): 0 for an answer that begins with its
    answer. A heading, code or any other line ends them."""
    count = 0
    for line in parsed.lines:
        text = line.text().strip()
        if line.code or text.startswith(HEADING + " "):
            break
        if not text:
            continue
        if len(text) > MAX_CHATTER_CHARS or not _CHATTER.match(text):
            break
        count += 1
    return count


class FeatureCache:
    """Each output's features, computed once: outputs are append-only, so an id names one text
    for good. Thread-safe."""

    def __init__(self, style: str = SOURCES):
        self.style = check_style(style)
        self._known: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def table(self, ids: Sequence[int], read: Callable[[list[int]], Mapping[int, str]]) -> np.ndarray:
        """The features of outputs ``ids``, shape (len(ids), len(FEATURES)); ``read(missing)``
        gives the texts of the ids not seen before (an id it does not return counts as empty).
        Raises what ``read`` raises."""
        with self._lock:
            missing = sorted({i for i in ids if i not in self._known})
        if missing:
            texts = read(missing)
            computed = {i: features(texts.get(i, ""), self.style) for i in missing}
            with self._lock:
                self._known.update(computed)
        with self._lock:
            return np.array([self._known[i] for i in ids]).reshape(len(ids), len(FEATURES))


@dataclass(frozen=True)
class Fit:
    """A style-controlled Bradley–Terry fit: ``theta`` the methods' log-strengths (centred),
    ``coef`` each feature's log-odds per standard deviation of its difference (NaN: left out),
    ``sd`` that standard deviation in the feature's unit (words, citations, ...)."""

    theta: np.ndarray
    coef: np.ndarray
    sd: np.ndarray


def fit(i: np.ndarray, j: np.ndarray, share: np.ndarray, diff: np.ndarray, n_methods: int,
        reg: float = ratings.BT_REG) -> Fit:
    """Fit votes at once: vote r between methods ``i[r]`` (A) and ``j[r]`` (B), ``share[r]`` A's
    share of the win (1, 0, or 0.5 for a draw), ``diff[r]`` the style features of A minus B
    (shape (votes, features); zero columns: plain Bradley–Terry). Raises ValueError when a vote
    names one method twice or the shapes disagree."""
    i, j, share = np.asarray(i, dtype=int), np.asarray(j, dtype=int), np.asarray(share, dtype=float)
    diff = np.asarray(diff, dtype=float)
    if not (len(i) == len(j) == len(share) == len(diff)) or diff.ndim != 2:
        raise ValueError(f"i, j, share and diff (2-D) must have one entry per vote: {len(i)}, {len(j)}, "
                         f"{len(share)}, {diff.shape}")
    if np.any(i == j):
        raise ValueError("a vote needs two different methods")
    sd = np.sqrt(np.mean(diff ** 2, axis=0)) if len(i) else np.zeros(diff.shape[1])
    used = sd > 0
    coef = np.full(diff.shape[1], np.nan)
    if not len(i):
        return Fit(np.zeros(n_methods), coef, sd)
    x = np.zeros((len(i), n_methods + int(used.sum())))
    rows = np.arange(len(i))
    x[rows, i] = 1.0
    x[rows, j] = -1.0
    x[:, n_methods:] = diff[:, used] / sd[used]
    beta = _logistic(x, share, reg)
    theta = beta[:n_methods]
    coef[used] = beta[n_methods:]
    return Fit(theta - theta.mean(), coef, sd)


def _logistic(x: np.ndarray, share: np.ndarray, reg: float) -> np.ndarray:
    """Penalised maximum likelihood of P(A wins) = sigmoid(x @ beta), A's share of each vote as
    its outcome, by scikit-learn as ``ratings._fit_bt`` does it: a row of outcome 1 weighted by
    A's share and one of outcome 0 weighted by B's (zero weights dropped). Every other vote is
    written from B's side (x negated, shares swapped: the same likelihood, no intercept) so that
    both outcomes are present; a lone vote is mirrored instead, which counts it twice, so the L2
    strength ``reg`` then becomes ``C = 1 / (2 reg)``."""
    from sklearn.linear_model import LogisticRegression  # imported when a fit is asked for (see ratings.warm_up)

    flip = np.arange(len(x)) % 2 == 1
    x, share = np.where(flip[:, None], -x, x), np.where(flip, 1 - share, share)
    wins, losses = share > 0, share < 1
    xs = np.vstack([x[wins], x[losses]])
    ys = np.r_[np.ones(wins.sum()), np.zeros(losses.sum())]
    weights = np.r_[share[wins], 1 - share[losses]]
    c = 1.0 / reg
    if len(np.unique(ys)) < 2:
        xs, ys, weights, c = np.vstack([xs, -xs]), np.r_[ys, 1 - ys], np.r_[weights, weights], c / 2
    model = LogisticRegression(C=c, fit_intercept=False, solver="newton-cholesky", tol=1e-8, max_iter=100)
    model.fit(xs, ys, sample_weight=weights)
    return model.coef_[0]


# -- the style-controlled leaderboard -----------------------------------------------------------


@dataclass(frozen=True)
class StyleRow:
    """A method on the style-controlled leaderboard: its Bradley–Terry score with style held
    equal (``bt``) and without (``bt_raw``, the same votes), both on the Elo scale, and its rank
    in each (1: best); ``battles``: its votes in the fit."""

    method: str
    bt: float
    bt_raw: float
    rank: int
    rank_raw: int
    battles: int
    bt_low: float = float("nan")  # the 95% interval of ``bt`` (bootstrap); NaN: not estimated
    bt_high: float = float("nan")


@dataclass(frozen=True)
class Effect:
    """What a style feature is worth: ``coef`` the log-odds per standard deviation ``sd`` of the
    difference between two answers (in the feature's unit); None when no two answers shown
    together differ in it."""

    feature: str
    coef: float | None
    sd: float
    low: float | None = None  # the 95% interval of ``coef`` (bootstrap); None: not estimated
    high: float | None = None
    votes: int = 0  # the votes fitted

    @property
    def odds_ratio(self) -> float | None:
        return None if self.coef is None else math.exp(self.coef)

    @property
    def win_share(self) -> float | None:
        """How often the side with one standard deviation more wins two answers of equal
        quality (0.5 without the feature's pull)."""
        return None if self.coef is None else _sigmoid(self.coef)

    @property
    def share_interval(self) -> tuple[float, float] | None:
        """The 95% interval of :attr:`win_share`; None when not estimated."""
        if self.low is None or self.high is None:
            return None
        return _sigmoid(self.low), _sigmoid(self.high)

    def sentence(self) -> str:
        """The coefficient in words, with how sure it is: "At equal quality, the longer answer (by
        one standard deviation of the difference, ~180 words) wins 62% of the time instead of 50%
        (95% interval 55–69%; odds ×1.63)"; with fewer than MIN_VOTES votes, that there are too
        few to say; with an interval that holds 50%, that the votes cannot tell it from none."""
        side, unit = _SIDE[self.feature]
        if self.coef is None:
            return f"No two answers shown together differ in {unit}: its effect is not estimated."
        if self.votes < MIN_VOTES:
            return (f"Too few votes to say what {unit} are worth: {self.votes:,} of the {MIN_VOTES} needed "
                    "for an estimate.")
        amount = f"~{self.sd:,.0f}" if self.sd >= 10 else f"~{self.sd:.1f}"
        spread = self.share_interval
        interval = f"95% interval {spread[0]:.0%}–{spread[1]:.0%}" if spread else "no interval"
        if spread and spread[0] <= 0.5 <= spread[1]:
            return (f"At equal quality, {side} (by one standard deviation of the difference, {amount} {unit}) "
                    f"wins {self.win_share:.0%} of the time ({interval}): the votes cannot tell this from 50%, "
                    "no effect.")
        return (f"At equal quality, {side} (by one standard deviation of the difference, {amount} {unit}) "
                f"wins {self.win_share:.0%} of the time instead of 50% ({interval}; odds ×{self.odds_ratio:.2f}).")


@dataclass(frozen=True)
class StyleBoard:
    """The style-controlled ranking (best first), the style effects, the votes fitted (both
    texts known) and those left out (a vote imported without its texts has no style)."""

    rows: list[StyleRow]
    effects: list[Effect]
    votes: int
    left_out: int

    def as_json(self) -> dict:
        """``style_controlled`` (the rows) and ``style`` (each feature's coefficient, its
        standard deviation, odds ratio, win share and sentence), for ``leaderboard --json``."""
        return {
            "style_controlled": [asdict(r) for r in self.rows],
            "style": [{"feature": e.feature, "coef": e.coef, "coef_low": e.low, "coef_high": e.high, "sd": e.sd,
                       "odds_ratio": e.odds_ratio, "win_share": e.win_share,
                       "win_share_interval": list(e.share_interval) if e.share_interval else None,
                       "sentence": e.sentence()} for e in self.effects],
            "style_votes": self.votes, "style_left_out": self.left_out,
        }


def board(votes: Iterable, features_a: np.ndarray, features_b: np.ndarray, *, left_out: int = 0,
          reg: float = ratings.BT_REG, rounds: int | None = None, seed: int = 0) -> StyleBoard:
    """The style-controlled leaderboard of ``votes`` (records with method_a, method_b, choice; see
    ``annotation.results.ratings``) whose shown outputs had the features ``features_a``/``features_b``
    (one row per vote, FEATURES' order), with 95% intervals from ``rounds`` resampled fits
    (None: ``bootstrap_rounds``; 0: none), seeded by ``seed``. Raises ValueError for an unknown
    choice, a method against itself, or a features row count that is not the votes'."""
    votes = list(votes)
    if len(features_a) != len(votes) or len(features_b) != len(votes):
        raise ValueError(f"one features row per vote: {len(votes)} votes, {len(features_a)} and "
                         f"{len(features_b)} rows")
    if not votes:
        return StyleBoard([], [Effect(f, None, 0.0) for f in FEATURES], 0, left_out)
    methods = sorted({m for v in votes for m in (v.method_a, v.method_b)})
    index = {m: k for k, m in enumerate(methods)}
    i = np.array([index[v.method_a] for v in votes], dtype=int)
    j = np.array([index[v.method_b] for v in votes], dtype=int)
    share = np.array([_SHARE[ratings.outcome(v.choice)] for v in votes])
    diff = (np.asarray(features_a, dtype=float).reshape(len(votes), len(FEATURES))
            - np.asarray(features_b, dtype=float).reshape(len(votes), len(FEATURES)))
    styled = fit(i, j, share, diff, len(methods), reg)
    raw = _raw_theta(i, j, share, len(methods), reg)
    battles = np.bincount(np.r_[i, j], minlength=len(methods))
    elo, elo_raw = ratings.to_elo(styled.theta), ratings.to_elo(raw)
    rank, rank_raw = _ranks(elo, methods), _ranks(elo_raw, methods)
    rounds = bootstrap_rounds(len(votes)) if rounds is None else rounds
    elo_low, elo_high, coef_low, coef_high = _intervals(i, j, share, diff, len(methods), reg, rounds, seed)
    rows = [StyleRow(m, float(elo[k]), float(elo_raw[k]), int(rank[k]), int(rank_raw[k]), int(battles[k]),
                     float(elo_low[k]), float(elo_high[k]))
            for k, m in enumerate(methods)]
    effects = [Effect(f, None if np.isnan(c) else float(c), float(s), _number(lo), _number(hi), len(votes))
               for f, c, s, lo, hi in zip(FEATURES, styled.coef, styled.sd, coef_low, coef_high, strict=True)]
    return StyleBoard(sorted(rows, key=lambda r: (r.rank, r.method)), effects, len(votes), left_out)


def _intervals(i: np.ndarray, j: np.ndarray, share: np.ndarray, diff: np.ndarray, n_methods: int, reg: float,
               rounds: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 95% intervals (2.5th and 97.5th percentiles over ``rounds`` fits on votes resampled
    with replacement) of the controlled scores (Elo scale) and of the style coefficients; NaN
    where not estimated (no rounds, or a feature no resample could fit)."""
    nan_m, nan_f = np.full(n_methods, np.nan), np.full(diff.shape[1], np.nan)
    if rounds <= 0 or len(i) < 2:
        return nan_m, nan_m, nan_f, nan_f
    rng = np.random.default_rng(seed)
    thetas, coefs = [], []
    for _ in range(rounds):
        pick = rng.integers(0, len(i), len(i))
        f = fit(i[pick], j[pick], share[pick], diff[pick], n_methods, reg)
        thetas.append(ratings.to_elo(f.theta))
        coefs.append(f.coef)
    thetas, coefs = np.array(thetas), np.array(coefs)
    low, high = np.percentile(thetas, [2.5, 97.5], axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a feature no resample fitted: all NaN
        c_low, c_high = np.nanpercentile(coefs, [2.5, 97.5], axis=0)
    return low, high, c_low, c_high


def _number(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _raw_theta(i: np.ndarray, j: np.ndarray, share: np.ndarray, n_methods: int, reg: float) -> np.ndarray:
    """Plain Bradley–Terry over the same votes, from their win matrix (``ratings.bradley_terry``)."""
    w = np.zeros((n_methods, n_methods))
    np.add.at(w, (i, j), share)
    np.add.at(w, (j, i), 1 - share)
    return ratings.bradley_terry(w, reg)


def _ranks(elo: np.ndarray, methods: Sequence[str]) -> list[int]:
    """Each method's rank (1: the highest score); scores equal to 0.01 Elo point rank by name."""
    order = sorted(range(len(methods)), key=lambda k: (-round(float(elo[k]), 2), methods[k]))
    ranks = [0] * len(methods)
    for place, k in enumerate(order, start=1):
        ranks[k] = place
    return ranks
