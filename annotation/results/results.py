"""What the votes say: the leaderboards (people's and the LLM judge's, kept apart; by task set and
by campaign; with the flagged voters left out), style control, the agreement between people and
the judge and among people, and which annotators' votes look unread (``flags``), for the
Leaderboard tab, the admin's pages and the command line.

Each answer is kept until a vote, a correction or a judge's vote is added (``_keep``): opening or
refreshing the leaderboard with nothing new costs three max() queries. The tallies themselves
are the arena's live ones (``annotation.results.board.Boards``), kept up to date as votes arrive.

``flags`` points out voters whose votes look like no reading happened (too fast, or always the
same side), that go against the other annotators' (``annotation.results.outliers``), or that miss
the gold pairs; ``leaderboard(leave_out_flagged=True)`` rates without them.

Votes by criterion (issue 40): a campaign's votes may carry one A/B/tie choice per criterion
(``annotation.campaigns``); each criterion is rated by the same code as the overall vote, fed
that criterion's choices (``criterion_board``, ``criterion_style_board``), over the votes that
count (an undone vote takes its criterion choices with it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from annotation.errors import ArenaError
from annotation.results import agreement, outliers, ratings
from annotation.results import style as style_control
from data import arena

if TYPE_CHECKING:
    from annotation.voting.arena import Arena

log = logging.getLogger(__name__)

#: An annotator whose median time from seeing a pair to voting is under this many seconds (over
#: at least FLAG_MIN_VOTES votes) cannot have read both answers.
TOO_FAST_SECONDS = 8.0
#: An annotator who picks the same side (A, or B) in at least this share of their votes (over at
#: least FLAG_MIN_VOTES) votes by position, not by content: A and B are shuffled.
SAME_SIDE_SHARE = 0.9
FLAG_MIN_VOTES = 8
#: An annotator who missed the better side of more than this share of the gold pairs they voted
#: on (at least GOLD_MIN_SEEN of them) is flagged.
GOLD_MISS_SHARE = 0.4
GOLD_MIN_SEEN = 4
#: The outlier test and the gold pairs' misses are computed again when the votes have grown by
#: this share since (or a correction or a gold mark was added): at 100,000 votes they take about
#: 0.7 s, more than the leaderboard's refresh after each vote may take.
SUSPECTS_REFRESH = 0.01


@dataclass(frozen=True)
class Annotator:
    """One annotator as the study's admin follows them: votes that count (``total``, and
    ``today`` since the server's midnight), the newest vote's time, their ``quota`` (None: none),
    the median seconds from a pair shown to its vote (None: only imported votes), and why they are
    flagged ("" when they are not)."""

    name: str
    total: int
    today: int
    last: str
    quota: int | None = None
    median_seconds: float | None = None
    flag: str = ""

    @property
    def done(self) -> float | None:
        """The share of the quota cast (at most 1; None without a quota)."""
        return min(1.0, self.total / self.quota) if self.quota else None


@dataclass(frozen=True)
class Leaderboard:
    """The ratings of one source's votes over one task set (None: all)."""

    source: str
    task_set: str | None
    tally: ratings.Tally
    rows: list[ratings.Row]
    campaign: str | None = None
    criterion: str | None = None  # the criterion whose choices it rates (None: the overall vote)

    @property
    def votes(self) -> int:
        return self.tally.total

    @property
    def methods(self) -> list[str]:
        """The methods, best first."""
        return [r.method for r in self.rows]


class Results:
    def __init__(self, arena_service: Arena):
        """``arena_service``: the annotators' side (its store, live tallies, campaigns, style and
        clock are read here); one Results per Arena, as app.py builds them."""
        self.arena = arena_service
        self.store = arena_service.store
        self.boards = arena_service.boards
        self.campaigns = arena_service.campaigns
        self._kept: dict[tuple, tuple[tuple[int, int, int], Any]] = {}  # what -> (arena.version, result)
        self._kept_lock = threading.Lock()
        self._suspects_kept: tuple[tuple[int, int, int], list[tuple[str, str]]] | None = None
        # each shown output's style, once per way of showing it (the arena's, a campaign's)
        self._style_features: dict[str, style_control.FeatureCache] = {
            arena_service.style: style_control.FeatureCache(arena_service.style)}

    def tally(self, source: str = "people", task_set: str | None = None) -> ratings.Tally:
        """The up-to-date tally (a private copy). Raises ValueError for an unknown source, StoreError."""
        return self.boards.tally(source, task_set)

    def warm_up(self, bootstrap: int = 100) -> threading.Thread:
        """Bring the outputs annotators are paired from (``Arena.prepare``), people's leaderboard
        over every task set (with ``bootstrap`` rounds, as the tab asks for it), the agreement and
        the voter flags up to date in a background thread, and import scikit-learn there: the
        server's start pays for reading every vote, not the first annotator's pair or the first
        opening of the Leaderboard tab. A failure is logged; the tab computes again when opened
        and shows it. Returns the started thread."""
        def work() -> None:
            started = time.perf_counter()
            try:
                ratings.warm_up()
                self.arena.prepare()
                self.leaderboard("people", bootstrap=bootstrap)
                self.agreement(None)
                self.flags()
            except Exception as exc:  # noqa: BLE001 (a thread has no caller: log it, the tab will show it)
                log.warning("leaderboard warm-up failed (the tab will try again when opened): %s", exc)
                return
            log.info("leaderboard warmed up in %.2f s", time.perf_counter() - started)

        thread = threading.Thread(target=work, name="leaderboard-warm-up", daemon=True)
        thread.start()
        return thread

    def _keep(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()``, or what it gave last time for ``key`` when no vote, correction or judge
        vote has been added since (arena.version): opening or refreshing the leaderboard with
        nothing new costs three max() queries."""
        now = arena.version(self.store)
        with self._kept_lock:
            kept = self._kept.get(key)
            if kept is not None and kept[0] == now:
                return kept[1]
        result = compute()
        with self._kept_lock:
            self._kept[key] = (now, result)
        return result

    def forget(self) -> None:
        """Drop what is kept (``_keep``): a gold mark changes the flags, and the leaderboards
        without the flagged, though no vote was added (``Admin.add_gold``)."""
        with self._kept_lock:
            self._kept.clear()

    def leaderboard(self, source: str = "people", task_set: str | None = None, *, bootstrap: int = 100,
                    seed: int = 0, leave_out_flagged: bool = False, campaign: str | None = None) -> Leaderboard:
        """TrueSkill and Bradley–Terry rows of ``source``'s votes, best first; with
        ``leave_out_flagged``, without the votes of the annotators ``flags`` names; with
        ``campaign``, of the votes cast in that campaign only.
        Raises ValueError for an unknown source, ArenaError for an unknown task set or campaign
        (or the judge's votes asked by campaign), StoreError."""
        self.check_task_set(task_set)
        self._check_campaign(source, campaign)
        return self._keep(("leaderboard", source, task_set, bootstrap, seed, leave_out_flagged, campaign),
                          lambda: self._leaderboard(source, task_set, bootstrap, seed, leave_out_flagged, campaign))

    def _check_campaign(self, source: str, campaign: str | None) -> None:
        """Raises ArenaError for an unknown ``campaign``, or one asked of the judge's votes."""
        if campaign is None:
            return
        self.campaigns.get(campaign)
        if source != "people":
            raise ArenaError("The judge's votes belong to no campaign: read them by task set (--task-set), or "
                             "read people's votes by campaign.")

    def _leaderboard(self, source: str, task_set: str | None, bootstrap: int, seed: int,
                     leave_out_flagged: bool, campaign: str | None = None) -> Leaderboard:
        flagged = self.flags() if leave_out_flagged and source == "people" else {}
        if flagged or campaign is not None:
            t = ratings.tally(arena.vote_rows(self.store, source, task_set, leave_out=flagged, campaign=campaign))
        else:
            t = self.tally(source, task_set)
        return Leaderboard(source, task_set, t, ratings.rows(t, bootstrap=bootstrap, seed=seed), campaign)

    def style_board(self, source: str = "people", task_set: str | None = None, *,
                    leave_out_flagged: bool = False, campaign: str | None = None) -> style_control.StyleBoard:
        """The style-controlled ranking of ``source``'s votes (``annotation.results.style``): Bradley–Terry
        with the length, citations, headings, list items and opening chatter of the two outputs
        shown as covariates, over the votes whose texts are known; kept until a vote arrives, like
        ``leaderboard``. Raises ValueError for an unknown source, ArenaError for an unknown task
        set, StoreError."""
        self.check_task_set(task_set)
        self._check_campaign(source, campaign)
        return self._keep(("style", source, task_set, leave_out_flagged, campaign),
                          lambda: self._style_board(source, task_set, leave_out_flagged, campaign))

    def _style_board(self, source: str, task_set: str | None, leave_out_flagged: bool,
                     campaign: str | None = None, criterion: str | None = None) -> style_control.StyleBoard:
        flagged = self.flags() if leave_out_flagged and source == "people" else {}
        if criterion is None:
            votes = arena.vote_rows(self.store, source, task_set, leave_out=flagged, campaign=campaign)
        else:
            votes = arena.criterion_vote_rows(self.store, criterion, task_set, leave_out=flagged, campaign=campaign)
        shown = arena.vote_outputs(self.store, source)
        kept = [v for v in votes if v.id in shown]
        # each vote's style measured on the texts as its annotator saw them: its campaign's style
        styles = {c.name: c.style for c in self.campaigns.list()}
        table = np.zeros((2 * len(kept), len(style_control.FEATURES)))
        for style in {styles.get(shown[v.id][2], self.arena.style) for v in kept}:
            rows = [k for k, v in enumerate(kept) if styles.get(shown[v.id][2], self.arena.style) == style]
            ids = [o for k in rows for o in shown[kept[k].id][:2]]  # A, B, A, B, ...
            cache = self._style_features.setdefault(style, style_control.FeatureCache(style))
            found = cache.table(ids, lambda missing: arena.output_texts(self.store, missing))
            table[[2 * k for k in rows]], table[[2 * k + 1 for k in rows]] = found[0::2], found[1::2]
        return style_control.board(kept, table[0::2], table[1::2], left_out=len(votes) - len(kept))

    # -- votes by criterion ---------------------------------------------------------------------
    def criteria(self, campaign: str | None = None) -> list[str]:
        """The criteria that have a leaderboard: ``campaign``'s own (in its order) and any other its
        votes answered (it asked others before a change); without a campaign, every criterion
        people's votes answered. Raises ArenaError for an unknown campaign, StoreError."""
        asked = list(self.campaigns.get(campaign).criteria) if campaign is not None else []
        return list(dict.fromkeys([*asked, *arena.criteria_answered(self.store, campaign)]))

    def criterion_board(self, criterion: str, source: str = "people", task_set: str | None = None, *,
                        bootstrap: int = 100, seed: int = 0, leave_out_flagged: bool = False,
                        campaign: str | None = None) -> Leaderboard:
        """``leaderboard`` of the choices people made on ``criterion`` (each vote's A/B/tie on it,
        rated as votes are), kept until a vote arrives. Raises ArenaError for the judge's votes
        (they answer no criterion), an unknown task set or campaign, StoreError."""
        self._check_criterion(source, task_set, campaign)
        return self._keep(("criterion", criterion, task_set, bootstrap, seed, leave_out_flagged, campaign),
                          lambda: self._criterion_board(criterion, task_set, bootstrap, seed, leave_out_flagged,
                                                        campaign))

    def _criterion_board(self, criterion: str, task_set: str | None, bootstrap: int, seed: int,
                         leave_out_flagged: bool, campaign: str | None) -> Leaderboard:
        flagged = self.flags() if leave_out_flagged else {}
        t = ratings.tally(arena.criterion_vote_rows(self.store, criterion, task_set, leave_out=flagged,
                                                    campaign=campaign))
        return Leaderboard("people", task_set, t, ratings.rows(t, bootstrap=bootstrap, seed=seed), campaign, criterion)

    def criterion_boards(self, source: str = "people", task_set: str | None = None, *, bootstrap: int = 100,
                         seed: int = 0, leave_out_flagged: bool = False,
                         campaign: str | None = None) -> list[Leaderboard]:
        """``criterion_board`` of each of ``criteria(campaign)``, in that order (empty: no criterion,
        or the judge's votes). Raises ArenaError for an unknown task set or campaign, StoreError."""
        if source != "people":
            return []
        return [self.criterion_board(c, source, task_set, bootstrap=bootstrap, seed=seed,
                                     leave_out_flagged=leave_out_flagged, campaign=campaign)
                for c in self.criteria(campaign)]

    def criterion_style_board(self, criterion: str, source: str = "people", task_set: str | None = None, *,
                              leave_out_flagged: bool = False,
                              campaign: str | None = None) -> style_control.StyleBoard:
        """``style_board`` of the choices people made on ``criterion``: style control per criterion,
        by the same fit. Raises as ``criterion_board``."""
        self._check_criterion(source, task_set, campaign)
        return self._keep(("criterion-style", criterion, task_set, leave_out_flagged, campaign),
                          lambda: self._style_board("people", task_set, leave_out_flagged, campaign, criterion))

    def _check_criterion(self, source: str, task_set: str | None, campaign: str | None) -> None:
        if source != "people":
            raise ArenaError("The judge's votes answer no criterion: read criteria of people's votes.")
        self.check_task_set(task_set)
        self._check_campaign(source, campaign)

    def flags(self) -> dict[str, str]:
        """Annotators whose votes look unread, with why: a median under TOO_FAST_SECONDS from
        seeing a pair to voting, or the same side in SAME_SIDE_SHARE of their votes (each over at
        least FLAG_MIN_VOTES votes), or votes that go against the other annotators' on the same
        method pairs (``annotation.results.outliers``), or more than GOLD_MISS_SHARE of the gold pairs
        they voted on missed (at least GOLD_MIN_SEEN); several reasons are joined. Raises StoreError."""
        return dict(self._keep(("flags",), self._flags))

    def _flags(self) -> dict[str, str]:
        flagged = {}
        for r in self.boards.voters():
            if r.votes < FLAG_MIN_VOTES:
                continue
            why = []
            if r.median_seconds is not None and r.median_seconds < TOO_FAST_SECONDS:
                why.append(f"votes in {r.median_seconds:.1f} s (median)")
            side = max(r.a, r.b)
            if side >= SAME_SIDE_SHARE * r.votes:
                why.append(f"chose {'A' if r.a >= r.b else 'B'} in {side} of {r.votes} votes")
            if why:
                flagged[r.annotator] = "; ".join(why)
        for name, why in self._suspects():
            flagged[name] = f"{flagged[name]}; {why}" if name in flagged else why
        return flagged

    def _suspects(self) -> list[tuple[str, str]]:
        """(annotator, why) of the outlier test (``annotation.results.outliers``) and of the gold pairs
        missed, kept until a correction or a gold mark is added or the votes grow by
        SUSPECTS_REFRESH. Raises StoreError."""
        votes, corrected, _ = arena.version(self.store)
        gold = max((g.id for g in arena.gold_pairs(self.store)), default=0)
        kept = self._suspects_kept
        if (kept is None or kept[0][1:] != (corrected, gold)
                or votes - kept[0][0] >= max(1.0, SUSPECTS_REFRESH * kept[0][0])):
            missed = [(g.annotator, f"missed {g.missed} of {g.seen} gold pairs") for g in arena.gold_results(self.store)
                      if g.seen >= GOLD_MIN_SEEN and g.missed > GOLD_MISS_SHARE * g.seen]
            kept = self._suspects_kept = ((votes, corrected, gold),
                                          [*outliers.flags(arena.annotated_votes(self.store)).items(), *missed])
        return kept[1]

    def agreement(self, task_set: str | None = None) -> ratings.Agreement:
        """How often people's votes agree with the judge's verdict on the same task and pair."""
        return self._keep(("agreement", task_set), lambda: self.boards.agreement(task_set))

    def people_agreement(self, task_set: str | None = None, campaign: str | None = None) -> agreement.PeopleAgreement:
        """Agreement between annotators on the output pairs several of them voted on
        (``annotation.results.agreement``; of one campaign's votes, when given), kept until a vote or
        correction arrives. Raises StoreError."""
        return self._keep(("people_agreement", task_set, campaign),
                          lambda: agreement.people_agreement(self.store, task_set, campaign))

    def annotators(self, quotas: dict[str, int | None] | None = None) -> list[Annotator]:
        """Every annotator with a people's vote, by name: their progress (``quotas``: each one's
        quota, e.g. from their account), pace and flag, for the study's admin. Raises StoreError."""
        quotas = quotas or {}
        paces = {r.annotator: r.median_seconds for r in self.boards.voters()}
        flags = self.flags()
        return [Annotator(r.annotator, r.counted, r.since, r.last, quotas.get(r.annotator),
                          paces.get(r.annotator), flags.get(r.annotator, ""))
                for r in arena.voter_activity(self.store, self.arena.midnight())]

    def methods(self) -> list[str]:
        """Every method that has an output or a vote, sorted."""
        return arena.methods(self.store)

    def task_sets(self) -> list[str]:
        return arena.task_sets(self.store)

    def check_task_set(self, task_set: str | None) -> None:
        """Raises ArenaError naming the known task sets when ``task_set`` (None: every set) has no task."""
        if task_set is None:
            return
        known = self.task_sets()
        if task_set not in known:
            listed = ", ".join(repr(s) for s in known if s) or "none yet"
            raise ArenaError(f"No task set {task_set!r} in the arena; known task sets: {listed}. "
                             "Leave --task-set out for every task.")
