"""Leaderboards kept up to date as votes arrive, for the arena and the leaderboard tab: the
tallies, the agreement between people and the judge, and what each voter's votes look like.

A ``Boards`` object holds one ``Tally`` per (source, task set) and, when asked, folds in only
the votes recorded since it last looked. Because the TrueSkill draw probability is the observed
draw rate rounded to 0.01 (see ``annotation.results.ratings``), folding in new votes gives exactly what
a rebuild from scratch gives; when the rounded rate moves, or a vote was corrected since (a
correction changes an old vote's weight), it rebuilds. Safe to share between
Gradio's worker threads (one lock; each thread reads through its own Store connection).
"""

from __future__ import annotations

import threading

from annotation.results.ratings import Agreement, AgreementTally, Tally, draw_probability, outcome, tally
from data import arena
from data.store import Store


class Boards:
    def __init__(self, store: Store):
        self.store = store
        self._tallies: dict[tuple[str, str | None], Tally] = {}
        self._counts: arena.BattleCounts | None = None
        self._corrections: dict[tuple[str, str | None], int] = {}  # the newest correction each tally saw
        self._agreements: dict[str | None, tuple[int, int, AgreementTally]] = {}  # set -> (correction, judge id, ..)
        self._voters: dict[str, arena.AnnotatorRow] = {}
        self._voters_last = 0  # the newest vote _voters has seen
        self._lock = threading.Lock()
        self._published: dict[tuple[str, str | None], Tally] = {}  # the last refreshed tallies, never changed
        self._published_lock = threading.Lock()  # (held only to look one up or replace it)

    def battle_counts(self) -> arena.BattleCounts:
        """How often each method and output pair was shown, up to date: only the battles since
        the last call are read, so choosing a pair costs the same at 200,000 votes as at none.
        (Read without the lock: threads choosing pairs at once do not queue for it; the newest
        counts are kept.)"""
        with self._lock:
            since = self._counts
        counts = arena.battle_counts(self.store, since)  # a new object; ``since`` is left as it was
        with self._lock:
            if self._counts is None or counts.last_id > self._counts.last_id:
                self._counts = counts
            return self._counts

    def tally(self, source: str = "people", task_set: str | None = None, *, wait: bool = True) -> Tally:
        """A private copy of the up-to-date tally of ``source`` ('people' or 'judge') over the
        tasks of ``task_set`` (None: all). ``wait`` False: while another thread brings it up to
        date, the tally of the last time it was (what choosing a pair needs: many annotators ask
        at once, and one vote more or less does not change which pair teaches most). Raises
        ValueError for another source, StoreError."""
        key = (source, task_set)
        if not self._lock.acquire(blocking=wait):
            with self._published_lock:
                last = self._published.get(key)
            if last is not None:
                return last.copy()
            self._lock.acquire()
        try:
            current = self._tallies.get(key)
            corrected = arena.last_correction_id(self.store) if source == "people" else 0
            if current is not None and self._corrections.get(key, 0) != corrected:
                current = None  # a vote was corrected: the old tally counts it as it was cast
            new = arena.vote_rows(self.store, source, task_set, after_id=current.last_id if current else 0)
            if current is None or (new and not _same_draw_rate(current, new)):
                rows = new if current is None else arena.vote_rows(self.store, source, task_set)
                current = self._rebuild(rows)
                if source == "people":
                    self._seed_agreement(task_set, rows, corrected)
            elif new:
                current.add_all(new)
                current.last_id = new[-1].id
            self._tallies[key] = current
            self._corrections[key] = corrected
            published = current.copy()
            with self._published_lock:
                self._published[key] = published
            return published.copy()
        finally:
            self._lock.release()

    def agreement(self, task_set: str | None = None) -> Agreement:
        """People's votes against the judge's verdicts over ``task_set`` (None: all), up to date:
        only people's votes since the last call are read; the judge's verdicts again when the
        judge has voted since, everything again when a vote was corrected. Raises StoreError."""
        with self._lock:
            _, corrected, judged = arena.version(self.store)
            seen_correction, seen_judge, state = self._agreements.get(task_set, (-1, -1, None))
            if state is None or seen_correction != corrected:
                state, seen_judge = AgreementTally(), -1
            _add_people(state, arena.vote_rows(self.store, "people", task_set, after_id=state.last_id))
            if seen_judge != judged:
                state.set_judge(arena.vote_rows(self.store, "judge", task_set))
            self._agreements[task_set] = (corrected, judged, state)
            return state.result()

    def voters(self) -> list[arena.AnnotatorRow]:
        """One row per annotator of people's votes (how many, A and B, median seconds), up to
        date: only the annotators who voted since the last call are read again. Raises StoreError."""
        with self._lock:
            names, last = arena.voters_since(self.store, self._voters_last)
            # the first time, everyone: one scan of the votes is faster than looking each voter up
            for row in arena.annotator_rows(self.store, names if self._voters else None):
                self._voters[row.annotator] = row
            self._voters_last = last
            return list(self._voters.values())

    def _rebuild(self, rows: list[arena.VoteRow]) -> Tally:
        fresh = tally(rows)
        fresh.last_id = rows[-1].id if rows else 0
        return fresh

    def _seed_agreement(self, task_set: str | None, rows: list[arena.VoteRow], corrected: int) -> None:
        """Start the agreement over ``task_set`` from people's votes just read for a rebuild (every
        one, with ``corrected`` the newest correction), unless it is kept and up to date: a cold
        start reads 100,000 votes once, not once for the tally and again for the agreement. The
        judge's verdicts are read when the agreement is asked for."""
        seen_correction, _, state = self._agreements.get(task_set, (-1, -1, None))
        if state is not None and seen_correction == corrected:
            return
        self._agreements[task_set] = (corrected, -1, _add_people(AgreementTally(), rows))


def _add_people(state: AgreementTally, rows: list[arena.VoteRow]) -> AgreementTally:
    """``state`` with people's votes ``rows`` (in id order) folded in and its last id moved on."""
    if rows:
        state.add_people(rows)
        state.last_id = rows[-1].id
    return state


def _same_draw_rate(t: Tally, new: list[arena.VoteRow]) -> bool:
    draws = t.draws + sum(outcome(r.choice) == "draw" for r in new)
    return draw_probability(draws, t.total + len(new)) == t.p_draw
