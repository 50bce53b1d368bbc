"""The annotator's side of the arena: the next pair for an annotator, their vote and its reveal,
undo, and their progress. What the votes say is ``annotation.results``; admin work (corrections,
gold pairs, the judge, imports and exports) is ``annotation.admin``, which this room never imports.

Blind by construction: ``next_pair`` returns a ``Shown`` — the battle id, the task and the two
texts, never a method name; only ``vote`` returns the methods (a ``Reveal``), after the vote is
stored (both, and ``Progress``, are ``annotation.voting.shown``). Front ends call this, never
``data.arena``.

An annotator's own pace: a pair skipped (Next without a vote) comes back later
(``annotation.voting.pairing``); ``undo`` takes back their last vote within UNDO_SECONDS (a
correction voids it; the vote stays as cast) and shows the pair again; ``progress`` counts their
votes.

One ``Arena`` per store, safe to share between Gradio's worker threads; it holds the live tallies
(``annotation.results.board.Boards``) that pairing and the leaderboards both read.

Votes by criterion and sentence flags (issue 40): in a campaign that names criteria, a vote
carries one A/B/tie choice per criterion (``vote`` refuses one with a criterion unanswered, naming
it); any vote may carry sentences of either side flagged as unsupported or wrong. Both are stored
with the vote and undone with it; what a vote must pass first is ``annotation.voting.checks``.

Who voted: the front end names the annotator (the logged-in user with --auth, else the typed
name with the browser session's id) and the client's address. Votes are rate-limited per
annotator and per address (``annotation.voting.limits.VoteLimits``); with ``VoteLimits.per_day`` (--votes-per-day) an
annotator's votes a day are capped.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial

from annotation.campaigns import Campaign, Campaigns
from annotation.errors import ArenaError, NoPairLeft
from annotation.outputs import article_renderer
from annotation.present import SOURCES as SOURCES_STYLE
from annotation.present import STYLES
from annotation.results.board import Boards
from annotation.voting import checks, pairing
from annotation.voting.limits import VoteLimits
from annotation.voting.pairing import (
    PairSpace,
    arena_pairs_left,
    campaign_outputs,
    campaign_pairs_left,
    next_battle,
    next_campaign_battle,
    pair_space,
)
from annotation.voting.shown import Progress, Reveal, Shown
from core.article.citations import CITE_THRESHOLD
from data import arena
from data.store import Store

log = logging.getLogger(__name__)

SOURCES = arena.SOURCES
CHOICES = arena.CHOICES
FLAGS = arena.FLAGS
CRITERION_CHOICES = arena.CRITERION_CHOICES
SENTENCE_FLAGS = arena.SENTENCE_FLAGS
MAX_COMMENT = arena.MAX_COMMENT
VOID = arena.VOID  # a correction's choice for a vote that should not count

#: An annotator may undo their last vote this many seconds after casting it (then an admin corrects it).
UNDO_SECONDS = 30


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
        self._outputs_lock = threading.Lock()
        self.rng = rng
        self.limits = limits or VoteLimits()
        self.clock: Callable[[], float] = time.time  # wall-clock seconds (the undo window); tests replace it
        self._shown: dict[str, dict[int, tuple[int, int]]] = {}  # annotator -> battle -> (newest vote, seq)
        self._shown_seq = itertools.count(1)
        self._shown_lock = threading.Lock()
        self._undo_lock = threading.Lock()
        # (task set, text) -> (newest output id, the outputs, their pair space)
        self._outputs_kept: dict[tuple, tuple[int, list[arena.OutputRow], PairSpace]] = {}
        self.campaigns = Campaigns(store, clock=lambda: self.clock())
        self._campaign_now: dict[str, str | None] = {}  # annotator -> the campaign of the battle last shown

    # -- annotators -------------------------------------------------------------------------

    def next_pair(self, annotator: str, task_set: str | None = None) -> Shown:
        """The next battle for ``annotator``: a pair they skipped that is due again (the same
        battle, A and B as before), else a new battle of the pair that teaches the leaderboard
        most (see ``annotation.voting.pairing``). Raises NoPairLeft when there is nothing (left) to
        show, StoreError."""
        with self._shown_lock:
            shown = dict(self._shown.get(annotator, {}))
        mine = self.campaigns.for_annotator(annotator) if task_set is None else []
        if mine:
            return self._show(annotator, self._next_in_campaigns(annotator, mine, shown))
        # (wait=False: annotators asking at once do not queue for the tally; ``Boards.tally``)
        battle_id = next_battle(self.store, annotator, self.boards.tally("people", wait=False), rng=self.rng,
                                task_set=task_set, counts=self.boards.battle_counts(), text=self.text, shown=shown,
                                render=self.render, outputs_of=self.outputs)
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
                        held=self.campaigns.held(campaign.name), outputs=self.outputs(campaign.task_set,
                                                                                       methods=campaign.methods),
                        voted=self.campaigns.votes_of(campaign.name, annotator), rng=self.rng,
                        counts=self.boards.battle_counts(), shown=shown)
                except NoPairLeft as exc:
                    done.append(exc)
        if len(done) == 1:
            raise done[0]
        names = ", ".join(f"“{c.name}”" for c in mine)
        raise NoPairLeft(f"You have done your part of campaigns {names} — thank you!", judged_all=True)

    def outputs(self, task_set: str | None, *, space: bool = False,
                 methods: Sequence[str] | None = None) -> list[arena.OutputRow] | PairSpace:
        """``arena.arena_outputs`` of ``task_set`` (``space``: their candidate pairs counted,
        ``pairing.pair_space``; ``methods``: a campaign's, ``pairing.campaign_outputs``), read again
        only when an output was added since (outputs are append-only: the newest id names them);
        every next pair and progress line asks for them."""
        key = (task_set, self.text, tuple(methods) if methods is not None else None)
        newest = arena.newest_output_id(self.store)
        with self._outputs_lock:
            kept = self._outputs_kept.get(key)
        if kept is None or kept[0] != newest:
            rows = arena.arena_outputs(self.store, task_set, self.text)
            if methods is not None:
                rows = campaign_outputs(rows, methods)
            kept = (newest, rows, pair_space(rows))
            with self._outputs_lock:
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
        campaign = self.campaigns.get(battle.campaign) if battle.campaign else None
        style = campaign.style if campaign else self.style
        return Shown(battle_id, battle.prompt, battle.text_a or "", battle.text_b or "", style, battle.campaign,
                     campaign.criteria if campaign else ())

    def vote(self, battle_id: int, annotator: str, choice: str, *, address: str | None = None, comment: str = "",
             flag: str | None = None, criteria: Mapping[str, str | None] | None = None,
             sentences: Sequence[tuple[str, str, str]] | None = None) -> Reveal:
        """Store ``annotator``'s vote on a battle shown to them, with their optional ``comment``
        (at most MAX_COMMENT characters) and ``flag`` (one of FLAGS: an output broken, empty or
        off-task), and its ``criteria`` (criterion -> one of CRITERION_CHOICES: every criterion
        of the battle's campaign, none other; stored with the vote) and flagged ``sentences``
        ((side a or b, the sentence as marked, one of SENTENCE_FLAGS) each; the sentence must be of
        that side's text: ``checks.flagged``), and reveal its methods;
        ``address`` is the client's (for the rate limit).
        Raises ValueError for a choice not in CHOICES; ArenaError for a bad flag or comment, a
        criterion unanswered (naming it), unknown or badly answered, or over the rate limit or
        the daily cap; StoreError when the battle is unknown, was shown to someone else, or
        already has a vote."""
        battle = checks.battle_to_vote(self.store, battle_id, annotator, comment, flag)
        answered = checks.criteria_of(self.campaigns, battle.campaign, criteria)
        flagged = checks.flagged(self.campaigns, self.style, battle, sentences)
        # no second tab or process passes the same quota or limit: what is checked is this
        # annotator's votes (and this address's, when it has a limit), held for the check and the vote
        with self.store.exclusive("record the vote", keys=self.limits.lock_keys(annotator, address)):
            checks.check_day(self.store, annotator, self.limits.per_day, self.midnight)
            checks.check_quota(self.campaigns, battle.campaign, annotator)
            self.limits.take(annotator, address, stored=partial(checks.stored_votes, self.store))
            arena.record_vote(self.store, battle_id, annotator, choice, comment=comment, flag=flag, address=address,
                              last=True, criteria=answered, sentences=flagged)  # (committed with the vote)
        return Reveal(battle_id, battle.method_a, battle.method_b, choice)

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
        today = self.midnight()
        if left is None:
            left = arena_pairs_left(self.store, annotator, task_set=task_set, text=self.text,
                                    outputs=self.outputs(task_set, space=True))
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
            left = campaign_pairs_left(self.outputs(campaign.task_set, space=True, methods=campaign.methods),
                                       self.campaigns.held(campaign.name), campaign.overlap,
                                       arena.seen_output_pairs(self.store, annotator), unvoted)
        quota = min((q for q in (campaign.quota, quota) if q is not None), default=None)  # one quota: the smaller
        if quota is not None:
            left = min(left, max(0, quota - total))
        return Progress(today, total, left, quota, campaign.name)

    def midnight(self) -> str:
        """The server's last midnight, as votes store their time (the start of "today")."""
        midnight = datetime.fromtimestamp(self.clock()).replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight.astimezone(UTC).isoformat(timespec="milliseconds")

    def prepare(self) -> None:
        """Read and group the outputs the first pair is chosen from (``Results.warm_up`` calls it
        at the server's start). Raises StoreError."""
        arena.sync_run_outputs(self.store, self.text, self.render)
        pairing.prepare(self.outputs(None))
