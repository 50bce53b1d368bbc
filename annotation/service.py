"""The arena as one service, shared by the Arena and Leaderboard tabs and the command line:
the next pair for an annotator, a vote and its reveal, the leaderboards (people's and the LLM
judge's, kept apart), the agreement between the two, the judge, imports and exports.

Blind by construction: ``next_pair`` returns a ``Shown`` — the battle id, the task and the two
texts, never a method name; only ``vote`` returns the methods (a ``Reveal``), after the vote is
stored. Front ends call this, never ``data.arena``.

An annotator's own pace: a pair skipped (Next without a vote) comes back later
(``annotation.pairing``); ``undo`` takes back their last vote within UNDO_SECONDS (a correction
voids it; the vote stays as cast) and shows the pair again; ``progress`` counts their votes.

One ``Arena`` per store; it keeps the leaderboards' tallies up to date as votes arrive
(``annotation.board.Boards``) and is safe to share between Gradio's worker threads.

Who voted: the front end names the annotator (the logged-in user with --auth, else the typed
name with the browser session's id) and the client's address. Votes are rate-limited per
annotator and per address (``VoteLimits``), and ``flags`` points out voters whose votes look like
no reading happened (too fast, or always the same side) or that go against the other annotators'
(``annotation.outliers``); ``leaderboard(leave_out_flagged=True)`` rates without them. With
``VoteLimits.per_day`` (--votes-per-day) an annotator's votes a day are capped.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from annotation import agreement, outliers, pairing, ratings
from annotation import judge as judge_mod
from annotation import style as style_control
from annotation.board import Boards
from annotation.campaigns import Campaign, CampaignProgress, Campaigns
from annotation.errors import ArenaError, NoPairLeft
from annotation.outputs import article_renderer
from annotation.pairing import (
    PairSpace,
    arena_pairs_left,
    campaign_outputs,
    campaign_pairs_left,
    next_battle,
    next_campaign_battle,
    pair_space,
)
from annotation.present import SOURCES as SOURCES_STYLE
from annotation.present import STYLES
from annotation.records import read_outputs, read_votes
from common.errors import StoreError
from core.article.citations import CITE_THRESHOLD
from data import arena
from data.store import Store

log = logging.getLogger(__name__)

SOURCES = arena.SOURCES
CHOICES = arena.CHOICES
FLAGS = arena.FLAGS
MAX_COMMENT = arena.MAX_COMMENT
VOID = arena.VOID  # a correction's choice for a vote that should not count

#: An annotator may undo their last vote this many seconds after casting it (then an admin corrects it).
UNDO_SECONDS = 30

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


class VoteLimits:
    """At most ``per_annotator`` votes a minute from one annotator and ``per_address`` from one
    client address (a script casting votes under many names still comes from one address; 0: no
    limit by address, for a lab behind one NAT), and ``per_day`` votes a day from one annotator
    (0: no cap; ``Arena.vote`` counts the day's stored votes). Counted here, or (``stored``) from
    the votes the database holds, so the limits hold across every process on it. Thread-safe;
    the clock (seconds since the epoch) is injectable for tests."""

    def __init__(self, per_annotator: int = 10, per_address: int = 60, window: float = 60.0,
                 clock: Callable[[], float] = time.time, per_day: int = 0):
        self.limits = {"annotator": per_annotator, "address": per_address}
        self.per_day = per_day
        self.window = window
        self.clock = clock
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def keys(self, annotator: str, address: str | None) -> list[tuple[str, str]]:
        """What a vote counts against: its annotator, and its address where that has a limit."""
        by_address = address and self.limits["address"] > 0
        return [("annotator", annotator)] + ([("address", address)] if by_address else [])

    def lock_keys(self, annotator: str, address: str | None) -> list[str]:
        """``keys`` as the keys of a write transaction (``Store.exclusive``)."""
        return [f"{kind}:{key}" for kind, key in self.keys(annotator, address)]

    def take(self, annotator: str, address: str | None,
             stored: Callable[[str, str, float], list[float]] | None = None) -> None:
        """Count one vote. ``stored(kind, key, since)``: the times of the stored votes of that
        annotator or address since ``since``; the vote counts once it is stored (the caller stores
        it in the same transaction). Raises ArenaError saying how long to wait when a limit is
        reached."""
        now = self.clock()
        keys = self.keys(annotator, address)
        # (counted from the database: the caller's transaction holds these keys, ``lock_keys``)
        with self._lock if stored is None else contextlib.nullcontext():
            for kind, key in keys:
                if stored is not None:
                    times = deque(stored(kind, key, now - self.window))
                else:
                    times = self._seen.setdefault((kind, key), deque())
                    while times and now - times[0] >= self.window:
                        times.popleft()
                if len(times) >= self.limits[kind]:
                    wait = self.window - (now - times[0]) if times else self.window
                    raise ArenaError(f"Too many votes from this {kind} in a minute (the limit is "
                                     f"{self.limits[kind]}): read both answers, then vote again in {wait:.0f} s.")
            if stored is None:
                for kind, key in keys:
                    self._seen[(kind, key)].append(now)


@dataclass(frozen=True)
class Shown:
    """What an annotator may see of a battle before voting: no method names; how both texts are
    to be shown (``style``: its campaign's, else the arena's ``--arena-style``), and the campaign
    it belongs to (None: the open arena)."""

    battle_id: int
    task: str
    text_a: str
    text_b: str
    style: str = SOURCES_STYLE
    campaign: str | None = None


@dataclass(frozen=True)
class Reveal:
    """Who wrote A and B, and the vote cast: only returned once the vote is stored."""

    battle_id: int
    method_a: str
    method_b: str
    choice: str


@dataclass(frozen=True)
class Progress:
    """An annotator's votes that count (undone ones do not): cast ``today`` (since the server's
    midnight) and in all (``total``); about how many pairs are ``left`` for them (fresh pairs they
    were never shown, and the ones they skipped); their ``quota`` of votes, when they have one."""

    today: int
    total: int
    left: int
    quota: int | None = None
    campaign: str | None = None  # the campaign these count in (None: the open arena, all votes)


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

    @property
    def votes(self) -> int:
        return self.tally.total

    @property
    def methods(self) -> list[str]:
        """The methods, best first."""
        return [r.method for r in self.rows]


class Arena:
    def __init__(self, store: Store, *, rng: random.Random | None = None, limits: VoteLimits | None = None,
                 text: str = arena.LATEST, style: str = SOURCES_STYLE, cite_threshold: float = CITE_THRESHOLD):
        """``text``: which text of a finished run annotators and the judge see (``--arena-text``):
        the author's latest version of its article (``arena.LATEST``) or the method's own, stored
        as its article with its sources (``annotation.outputs``; an author's version cited at
        ``cite_threshold``, ``--cite-threshold``, as the export cites it); ``style``: how both
        sides are shown to annotators and the judge (``--arena-style``, one of
        ``annotation.present.STYLES``). Raises ArenaError for an unknown style."""
        if style not in STYLES:
            raise ArenaError(f"Unknown arena style {style!r}: use one of {', '.join(STYLES)} (--arena-style).")
        self.store = store
        self.text = text
        self.style = style
        self.render = article_renderer(store, threshold=cite_threshold)
        self.boards = Boards(store)
        self._kept: dict[tuple, tuple[tuple[int, int, int], Any]] = {}  # what -> (arena.version, result)
        self._kept_lock = threading.Lock()
        self.rng = rng
        self.limits = limits or VoteLimits()
        self.clock: Callable[[], float] = time.time  # wall-clock seconds (the undo window); tests replace it
        self._shown: dict[str, dict[int, tuple[int, int]]] = {}  # annotator -> battle -> (newest vote, seq)
        self._shown_seq = itertools.count(1)
        self._shown_lock = threading.Lock()
        self._undo_lock = threading.Lock()
        # (task set, text) -> (newest output id, the outputs, their pair space)
        self._outputs_kept: dict[tuple, tuple[int, list[arena.OutputRow], PairSpace]] = {}
        self._suspects_kept: tuple[tuple[int, int, int], list[tuple[str, str]]] | None = None
        # each shown output's style, once per way of showing it (the arena's, a campaign's)
        self._style_features: dict[str, style_control.FeatureCache] = {style: style_control.FeatureCache(style)}
        self.campaigns = Campaigns(store, clock=lambda: self.clock())
        self._campaign_now: dict[str, str | None] = {}  # annotator -> the campaign of the battle last shown

    # -- annotators -------------------------------------------------------------------------
    def next_pair(self, annotator: str, task_set: str | None = None) -> Shown:
        """The next battle for ``annotator``: a pair they skipped that is due again (the same
        battle, A and B as before), else a new battle of the pair that teaches the leaderboard
        most (see ``annotation.pairing``). Raises NoPairLeft when there is nothing (left) to
        show, StoreError."""
        with self._shown_lock:
            shown = dict(self._shown.get(annotator, {}))
        mine = self.campaigns.for_annotator(annotator) if task_set is None else []
        if mine:
            return self._show(annotator, self._next_in_campaigns(annotator, mine, shown))
        # (wait=False: annotators asking at once do not queue for the tally; ``Boards.tally``)
        battle_id = next_battle(self.store, annotator, self.boards.tally("people", wait=False), rng=self.rng,
                                task_set=task_set, counts=self.boards.battle_counts(), text=self.text, shown=shown,
                                render=self.render, outputs_of=self._outputs)
        return self._show(annotator, battle_id)

    def _next_in_campaigns(self, annotator: str, mine: Sequence[Campaign],
                           shown: dict[int, tuple[int, int]]) -> int:
        """The next battle of the first of ``mine`` (open campaigns that admit ``annotator``) with
        work left for them. Raises NoPairLeft (``judged_all``) when none has, StoreError."""
        arena.sync_run_outputs(self.store, self.text, self.render)
        done: list[NoPairLeft] = []
        for campaign in mine:
            # who holds each pair is read and a pair taken as one step, in every process
            with self.store.exclusive(f"choose a pair of campaign {campaign.name}"):
                try:
                    return next_campaign_battle(
                        self.store, annotator, self.boards.tally("people", wait=False), campaign,
                        held=self.campaigns.held(campaign.name), outputs=self._outputs(campaign.task_set,
                                                                                       methods=campaign.methods),
                        voted=self.campaigns.votes_of(campaign.name, annotator), rng=self.rng,
                        counts=self.boards.battle_counts(), shown=shown)
                except NoPairLeft as exc:
                    done.append(exc)
        if len(done) == 1:
            raise done[0]
        names = ", ".join(f"“{c.name}”" for c in mine)
        raise NoPairLeft(f"You have done your part of campaigns {names} — thank you!", judged_all=True)

    def _outputs(self, task_set: str | None, *, space: bool = False,
                 methods: Sequence[str] | None = None) -> list[arena.OutputRow] | PairSpace:
        """``arena.arena_outputs`` of ``task_set`` (``space``: their candidate pairs counted,
        ``pairing.pair_space``; ``methods``: a campaign's, ``pairing.campaign_outputs``), read again
        only when an output was added since (outputs are append-only: the newest id names them);
        every next pair and progress line asks for them."""
        key = (task_set, self.text, tuple(methods) if methods is not None else None)
        newest = arena.newest_output_id(self.store)
        with self._kept_lock:
            kept = self._outputs_kept.get(key)
        if kept is None or kept[0] != newest:
            rows = arena.arena_outputs(self.store, task_set, self.text)
            if methods is not None:
                rows = campaign_outputs(rows, methods)
            kept = (newest, rows, pair_space(rows))
            with self._kept_lock:
                self._outputs_kept[key] = kept
        return kept[2] if space else kept[1]

    def _show(self, annotator: str, battle_id: int) -> Shown:
        """The battle as the annotator sees it, remembered as shown now (a skipped pair's wait for
        its return starts again)."""
        battle = arena.get_battle(self.store, battle_id)
        newest_vote = arena.version(self.store)[0]
        with self._shown_lock:
            mine = self._shown.setdefault(annotator, {})
            if len(mine) > 1_000:  # forget the oldest: pairing then counts from when they were started
                for old in sorted(mine)[:500]:
                    del mine[old]
            mine[battle_id] = (newest_vote, next(self._shown_seq))
            self._campaign_now[annotator] = battle.campaign
        style = self.campaigns.get(battle.campaign).style if battle.campaign else self.style
        return Shown(battle_id, battle.prompt, battle.text_a or "", battle.text_b or "", style, battle.campaign)

    def vote(self, battle_id: int, annotator: str, choice: str, *, address: str | None = None, comment: str = "",
             flag: str | None = None) -> Reveal:
        """Store ``annotator``'s vote on a battle shown to them, with their optional ``comment``
        (at most MAX_COMMENT characters) and ``flag`` (one of FLAGS: an output broken, empty or
        off-task), and reveal its methods; ``address`` is the client's (for the rate limit).
        Raises ValueError for a choice not in CHOICES; ArenaError for a bad flag or comment, or
        over the rate limit or the daily cap; StoreError when the battle is unknown, was shown to
        someone else, or already has a vote."""
        try:
            arena.vote_note(comment, flag)
        except ValueError as exc:
            raise ArenaError(f"Cannot record the vote: {exc}.") from None
        # the battle read once (a battle never changes; its vote is checked again by the database):
        # whose it is, its campaign, and the methods revealed after the vote
        battle = arena.find_battle(self.store, battle_id)
        if battle is None:
            raise StoreError(arena.NO_BATTLE.format(battle_id=battle_id))
        if battle.annotator != annotator:
            raise StoreError(arena.NOT_YOURS)
        if battle.choice is not None:
            raise StoreError(arena.VOTED_ALREADY)
        # no second tab or process passes the same quota or limit: what is checked is this
        # annotator's votes (and this address's, when it has a limit), held for the check and the vote
        with self.store.exclusive("record the vote", keys=self.limits.lock_keys(annotator, address)):
            self._check_day(annotator)
            self._check_quota(battle.campaign, annotator)
            self.limits.take(annotator, address, stored=self._stored_votes)
            arena.record_vote(self.store, battle_id, annotator, choice, comment=comment, flag=flag, address=address,
                              last=True)  # (committed with the vote: one round trip)
        return Reveal(battle_id, battle.method_a, battle.method_b, choice)

    def _stored_votes(self, kind: str, key: str, since: float) -> list[float]:
        """The times (epoch seconds) of the stored votes of an annotator or from an address since
        ``since``: what VoteLimits counts in every process on the database."""
        stamp = datetime.fromtimestamp(since, UTC).isoformat(timespec="milliseconds")
        return [datetime.fromisoformat(t).timestamp() for t in arena.vote_times(self.store, stamp, **{kind: key})]

    def _check_quota(self, campaign_name: str | None, annotator: str) -> None:
        """Raises ArenaError when the battle is of campaign ``campaign_name`` (None: the open arena)
        and ``annotator`` has cast its quota already (e.g. from a second tab), StoreError."""
        campaign = self.campaigns.get(campaign_name) if campaign_name else None
        quota = campaign.quota if campaign else None
        if quota is not None and self.campaigns.votes_of(campaign.name, annotator) >= quota:
            raise ArenaError(f"You have cast your {quota} votes in campaign “{campaign.name}”: this one is not "
                             "counted. Thank you!")

    def _check_day(self, annotator: str) -> None:
        """Raises ArenaError when ``annotator`` has cast ``limits.per_day`` votes that count since
        the server's midnight (no cap at 0), StoreError."""
        cap = self.limits.per_day
        if cap and sum(v.created >= self._midnight() for v in arena.counted_votes(self.store, annotator)) >= cap:
            raise ArenaError(f"You have cast {cap} votes today, as many as one annotator may in a day "
                             "(--votes-per-day): thank you! Vote again tomorrow.")

    def undo(self, annotator: str, battle_id: int | None = None) -> Shown:
        """Take back ``annotator``'s last vote (the one on ``battle_id``, when given) within
        UNDO_SECONDS of casting it: a correction voids it (votes are append-only; the vote stays
        as cast), and the same two outputs, in the same A/B order, are shown again as a new
        battle to vote on, in the same campaign (its style, its count of votes). Raises ArenaError
        naming why it cannot be undone (no vote, not their last, already undone, too late),
        StoreError."""
        why = f"undone by the annotator within {UNDO_SECONDS} s"
        with self._undo_lock:  # one undo at a time: a double click voids once
            last = arena.last_vote(self.store, annotator)
            if last is None:
                raise ArenaError("You have no vote to undo.")
            if battle_id is not None and last.battle_id != battle_id:
                raise ArenaError("Only your last vote can be undone, and you have voted on another pair since.")
            if last.choice == arena.VOID:
                raise ArenaError("Your last vote is already undone: press Next for a pair.")
            age = self.clock() - datetime.fromisoformat(last.created).timestamp()
            if age > UNDO_SECONDS:
                raise ArenaError(f"A vote can be undone within {UNDO_SECONDS} s of casting it; yours was cast "
                                 f"{age:.0f} s ago. If it was a mistake, ask the study's admin to correct it.")
            arena.correct_vote(self.store, last.id, arena.VOID, annotator, why)
            battle = arena.get_battle(self.store, last.battle_id)
            again = arena.create_battle(self.store, battle.output_a, battle.output_b, annotator, battle.campaign)
        return self._show(annotator, again)

    def progress(self, annotator: str, quota: int | None = None, *, task_set: str | None = None,
                 left: int | None = None) -> Progress:
        """``annotator``'s votes that count, today (since the server's midnight) and in all, and
        about how many pairs are left for them (of ``task_set``; None: every set; ``left``: the
        caller knows, e.g. one fewer than when the pair just voted on was shown), with their
        ``quota`` as given. Raises StoreError."""
        campaign = self._campaign_of(annotator)
        if campaign is not None:
            return self._campaign_progress_of(annotator, campaign, quota, left)
        times = [v.created for v in arena.counted_votes(self.store, annotator)]
        today = self._midnight()
        if left is None:
            left = arena_pairs_left(self.store, annotator, task_set=task_set, text=self.text,
                                    outputs=self._outputs(task_set, space=True))
        return Progress(sum(t >= today for t in times), len(times), left, quota)

    def _campaign_of(self, annotator: str) -> Campaign | None:
        """The campaign ``annotator`` votes in: that of the battle last shown to them (None: the
        open arena), else (a restarted server) the first open campaign that admits them."""
        with self._shown_lock:
            known, name = annotator in self._campaign_now, self._campaign_now.get(annotator)
        if known:
            return self.campaigns.get(name) if name else None
        mine = self.campaigns.for_annotator(annotator)
        return mine[0] if mine else None

    def _campaign_progress_of(self, annotator: str, campaign: Campaign, quota: int | None,
                              left: int | None) -> Progress:
        """``progress`` in a campaign: the votes cast in it, one quota (the smaller of the campaign's
        and the account's ``quota``, where both are set) and the pairs of it left for ``annotator``
        (none once that quota is cast)."""
        mine = self.campaigns.annotator_progress(campaign.name, annotator)
        total, today = mine.votes, mine.today
        if left is None:
            unvoted = len(arena.unvoted_battles(self.store, annotator, campaign=campaign.name))
            left = campaign_pairs_left(self._outputs(campaign.task_set, space=True, methods=campaign.methods),
                                       self.campaigns.held(campaign.name), campaign.overlap,
                                       arena.seen_output_pairs(self.store, annotator), unvoted)
        quota = min((q for q in (campaign.quota, quota) if q is not None), default=None)  # one quota: the smaller
        if quota is not None:
            left = min(left, max(0, quota - total))
        return Progress(today, total, left, quota, campaign.name)

    def campaign_shortfall(self, name: str) -> str:
        """Why campaign ``name`` can never get all the votes it needs, with the numbers ("" when it
        can, or when who may vote is not known in advance: anyone, or a study's link). Raises
        ArenaError for an unknown one, StoreError."""
        campaign = self.campaigns.get(name)
        arena.sync_run_outputs(self.store, self.text, self.render)
        return campaign.shortfall(self._outputs(campaign.task_set, space=True, methods=campaign.methods).total)

    def campaign_progress(self, name: str) -> CampaignProgress:
        """How far campaign ``name`` is (``Campaigns.progress``), its candidate pairs counted from
        the outputs of its task set and methods. Raises ArenaError for an unknown one, StoreError."""
        campaign = self.campaigns.get(name)
        arena.sync_run_outputs(self.store, self.text, self.render)
        space = self._outputs(campaign.task_set, space=True, methods=campaign.methods)
        return self.campaigns.progress(name, space.total)

    def people_agreement(self, task_set: str | None = None, campaign: str | None = None) -> agreement.PeopleAgreement:
        """Agreement between annotators on the output pairs several of them voted on
        (``annotation.agreement``; of one campaign's votes, when given), kept until a vote or
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
                for r in arena.voter_activity(self.store, self._midnight())]

    def _midnight(self) -> str:
        """The server's last midnight, as votes store their time (the start of "today")."""
        midnight = datetime.fromtimestamp(self.clock()).replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight.astimezone(UTC).isoformat(timespec="milliseconds")

    def correct(self, vote_id: int, choice: str, corrected_by: str, why: str) -> arena.CorrectionRow:
        """Supersede a people's vote with a correction (the vote stays as it was cast): ``choice``
        counts from now on (``void``: not at all). Returns the stored correction.
        Raises ArenaError for an unknown choice or a missing name or reason, StoreError for an
        unknown vote."""
        try:
            correction_id = arena.correct_vote(self.store, vote_id, choice, corrected_by, why)
        except ValueError as exc:
            raise ArenaError(f"Cannot correct vote {vote_id}: {exc}.") from None
        return next(c for c in arena.vote_corrections(self.store) if c.id == correction_id)

    def add_gold(self, output_a: int, output_b: int, better: str, added_by: str) -> arena.GoldPair:
        """Mark the better of two outputs of one task (``better``: a, the first, or b): a gold
        pair, shown to annotators now and then (``annotation.pairing.GOLD_SHARE``); annotators
        who miss too many are flagged. Returns it. Raises ArenaError for a bad side, name or pair
        of outputs, StoreError."""
        try:
            gold_id = arena.add_gold_pair(self.store, output_a, output_b, better, added_by)
        except ValueError as exc:
            raise ArenaError(f"Cannot add the gold pair: {exc}.") from None
        with self._kept_lock:  # the flags, and the leaderboards without the flagged, change now
            self._kept.clear()
        return next(g for g in arena.gold_pairs(self.store) if g.id == gold_id)

    def gold_pairs(self) -> list[arena.GoldPair]:
        """Every gold pair as its newest mark says, oldest first. Raises StoreError."""
        return arena.gold_pairs(self.store)

    def listed_outputs(self) -> list[arena.OutputText]:
        """The outputs annotators are shown (each task's and method's newest, of ``text``) with
        their ids, tasks and texts, for an admin choosing gold pairs. Raises StoreError."""
        arena.sync_run_outputs(self.store, self.text, self.render)
        return arena.latest_outputs(self.store, text=self.text)

    def corrections(self) -> list[arena.CorrectionRow]:
        """Every correction of a vote, oldest first."""
        return arena.vote_corrections(self.store)

    # -- leaderboards -----------------------------------------------------------------------
    def tally(self, source: str = "people", task_set: str | None = None) -> ratings.Tally:
        """The up-to-date tally (a private copy). Raises ValueError for an unknown source, StoreError."""
        return self.boards.tally(source, task_set)

    def warm_up(self, bootstrap: int = 100) -> threading.Thread:
        """Bring the outputs annotators are paired from, people's leaderboard over every task set
        (with ``bootstrap`` rounds, as the tab asks for it), the agreement and the voter flags up
        to date in a background thread, and
        import scikit-learn there: the server's start pays for reading every vote, not the first
        annotator's pair or the first opening of the Leaderboard tab. A failure is logged; the
        tab computes again when opened and shows it. Returns the started thread."""
        def work() -> None:
            started = time.perf_counter()
            try:
                ratings.warm_up()
                arena.sync_run_outputs(self.store, self.text, self.render)
                pairing.prepare(self._outputs(None))  # the first pair's outputs, read and grouped
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
        """The style-controlled ranking of ``source``'s votes (``annotation.style``): Bradley–Terry
        with the length, citations, headings, list items and opening chatter of the two outputs
        shown as covariates, over the votes whose texts are known; kept until a vote arrives, like
        ``leaderboard``. Raises ValueError for an unknown source, ArenaError for an unknown task
        set, StoreError."""
        self.check_task_set(task_set)
        self._check_campaign(source, campaign)
        return self._keep(("style", source, task_set, leave_out_flagged, campaign),
                          lambda: self._style_board(source, task_set, leave_out_flagged, campaign))

    def _style_board(self, source: str, task_set: str | None, leave_out_flagged: bool,
                     campaign: str | None = None) -> style_control.StyleBoard:
        flagged = self.flags() if leave_out_flagged and source == "people" else {}
        votes = arena.vote_rows(self.store, source, task_set, leave_out=flagged, campaign=campaign)
        shown = arena.vote_outputs(self.store, source)
        kept = [v for v in votes if v.id in shown]
        # each vote's style measured on the texts as its annotator saw them: its campaign's style
        styles = {c.name: c.style for c in self.campaigns.list()}
        table = np.zeros((2 * len(kept), len(style_control.FEATURES)))
        for style in {styles.get(shown[v.id][2], self.style) for v in kept}:
            rows = [k for k, v in enumerate(kept) if styles.get(shown[v.id][2], self.style) == style]
            ids = [o for k in rows for o in shown[kept[k].id][:2]]  # A, B, A, B, ...
            cache = self._style_features.setdefault(style, style_control.FeatureCache(style))
            found = cache.table(ids, lambda missing: arena.output_texts(self.store, missing))
            table[[2 * k for k in rows]], table[[2 * k + 1 for k in rows]] = found[0::2], found[1::2]
        return style_control.board(kept, table[0::2], table[1::2], left_out=len(votes) - len(kept))

    def flags(self) -> dict[str, str]:
        """Annotators whose votes look unread, with why: a median under TOO_FAST_SECONDS from
        seeing a pair to voting, or the same side in SAME_SIDE_SHARE of their votes (each over at
        least FLAG_MIN_VOTES votes), or votes that go against the other annotators' on the same
        method pairs (``annotation.outliers``), or more than GOLD_MISS_SHARE of the gold pairs
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
        """(annotator, why) of the outlier test (``annotation.outliers``) and of the gold pairs
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

    # -- the LLM judge ----------------------------------------------------------------------
    async def judge(self, new_llm: Callable[[], Any], model: str, *, methods: Sequence[str] | None = None,
                    n: int = judge_mod.N_CALLS,
                    on_progress: Callable[[int, int, str], None] | None = None) -> judge_mod.Report:
        """Let the LLM judge compare the pairs ``model`` has not judged yet (see
        ``annotation.judge.judge_store``), shown as annotators see them (``style``). Raises the
        fatal LLM errors, StoreError."""
        return await judge_mod.judge_store(self.store, new_llm, model, methods=methods, n=n, on_progress=on_progress,
                                           text=self.text, style=self.style, render=self.render)

    # -- imports and exports ----------------------------------------------------------------
    def import_votes(self, path: str) -> arena.VotesImported:
        """Add the votes of a JSONL file (checked whole first, then written in batches); returns
        VotesImported(added, already present, corrections appended).
        Raises ImportFormatError naming the bad line (nothing is imported), StoreError."""
        return arena.import_votes(self.store, read_votes(path))

    def import_outputs(self, path: str) -> tuple[int, int]:
        """Add the outputs of a JSONL file in one transaction; returns (added, already present).
        Raises ImportFormatError naming the bad line (nothing is imported), StoreError."""
        return arena.import_outputs(self.store, read_outputs(path))

    def export_votes(self) -> Iterator[dict]:
        """People's votes in the order they were recorded, as ``import_votes`` reads them."""
        return arena.export_votes(self.store)
