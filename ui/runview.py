"""A run as the Writer shows it: ``RunView.apply`` folds events (stored ones, plus the live
``TokenDelta``s) into a small view model, the same for a live, a stored and a replayed run;
``replay_schedule`` paces a stored run's events for a replay. Rendering it is ``ui.run_html``'s;
what the author's edits do to the article is ``core.article.edits``'."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from common.events import (
    ADD,
    EVERY,
    DraftReady,
    Event,
    Failed,
    Final,
    LLMCalled,
    Note,
    PageRead,
    PassagesChosen,
    QueryMade,
    RunStarted,
    SearchDone,
    StepRedone,
    StepRevised,
    StepStarted,
    ThinkingDelta,
    TokenDelta,
)
from common.types import Passage
from core.article.edits import Revisions
from core.live import CaughtUp, Queued
from core.text.prompts import join_steps

DRAFT, STEPS, PROGRESS = "draft", "steps", "progress"  # the panels an event can change
ALL_PANELS = frozenset({DRAFT, STEPS, PROGRESS})


@dataclass(frozen=True)
class Thought:
    """What a reasoning model thought in one call before it answered (``LLMCalled.thinking``):
    shown folded under its step, never part of the text."""

    role: str
    text: str
    tokens: int = 0


@dataclass
class StepCard:
    """What one step (or one iteration of a method without steps) did."""

    i: int
    thought: str = ""
    query: str = ""
    live: dict[str, str] = field(default_factory=dict)  # role -> text being streamed now
    searches: list[SearchDone] = field(default_factory=list)
    pages: list[PageRead] = field(default_factory=list)
    passages: tuple[Passage, ...] = ()
    revised: StepRevised | None = None
    notes: list[Note] = field(default_factory=list)
    thinking: list[Thought] = field(default_factory=list)  # each finished call's thinking, in order
    thinking_live: dict[str, str] = field(default_factory=dict)  # role -> thinking being streamed now
    redone: list[StepRedone] = field(default_factory=list)  # what the author had done again, in order

    @property
    def phase(self) -> str:
        if self.revised is not None:
            if self.revised.guarded:
                return "revision refused"
            return "kept as drafted" if self.revised.skipped else "revised"
        if "revise" in self.live or self.passages:
            return "revising"
        if self.pages or self.searches:
            return "reading pages"
        if self.query:
            return "searching"
        return "writing the query"


@dataclass
class RunView:
    """A run as the Writer shows it, folded from its events (``fold``) or built up live
    (``apply``). ``events`` keeps the stored kind only (no TokenDelta)."""

    run_id: str = ""
    method: str = ""
    task: str = ""
    events: list[Event] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    draft_ready: bool = False
    draft_live: str = ""
    live: dict[str, str] = field(default_factory=dict)  # role -> streamed text of calls outside any step
    cards: dict[int, StepCard] = field(default_factory=dict)
    current: int = 0
    n: int = 0
    final: Final | None = None
    failed: Failed | None = None
    notes: list[Note] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    budget_tokens: int | None = None  # the run's token budget (its latest RunStarted's); None: no cap
    queued: Queued | None = None  # the run waits for a place (core.live): not yet started
    thinking: list[Thought] = field(default_factory=list)  # thinking of calls outside any step (the draft's)
    thinking_live: dict[str, str] = field(default_factory=dict)
    started: float = 0.0  # when RunStarted was folded in (``apply``'s ``at``): the run's elapsed time counts from it
    step_times: dict[int, tuple[float, float]] = field(default_factory=dict)  # step -> (started, revised; 0 until then)
    replayed: bool = False  # a replay (History): the watcher's clock is not the run's, so no elapsed time or ETA
    export_notes: bool = False  # the author's choice: this run's exports end with its run notes (ui.export_view)
    _edits: tuple[int, Revisions] | None = field(default=None, repr=False, compare=False)
    # the page's hold on its panel of the stream that shows this view (ui.writer.Hold); None: none
    hold: object | None = field(default=None, repr=False, compare=False)

    @property
    def shown_here(self) -> bool:
        """Whether this view is still what its page's panel shows (True without a hold)."""
        return self.hold is None or bool(self.hold)

    def card(self, i: int) -> StepCard:
        if i not in self.cards:
            self.cards[i] = StepCard(i)
        return self.cards[i]

    def apply(self, e: Event, at: float | None = None) -> set[str]:
        """Fold one event in; returns the panels it changed (``DRAFT``, ``STEPS``, ``PROGRESS``).
        ``at``: when it happened (``time.time()``, the default: now), for the run's and steps' times.
        A ``CaughtUp`` (the end of what a follower was given of the past) changes nothing."""
        if isinstance(e, CaughtUp):
            return set()
        if e.persist:
            self.events.append(e)
        match e:
            case TokenDelta(role=role, text=text, i=i, reset=reset):
                if reset:  # a retry starts the call over, its thinking too
                    (self.card(i).thinking_live if i else self.thinking_live).pop(role, None)
                if role == "draft" and i == 0:
                    self.draft_live = ("" if reset else self.draft_live) + text
                    return {DRAFT}
                live = self.card(i).live if i else self.live
                live[role] = ("" if reset else live.get(role, "")) + text
                return {STEPS}
            case ThinkingDelta(role=role, text=text, i=i):
                live = self.card(i).thinking_live if i else self.thinking_live
                live[role] = live.get(role, "") + text
                return {DRAFT} if role == "draft" and i == 0 else {STEPS}
            case Queued():
                self.queued = e
                return {PROGRESS}
            case RunStarted(run_id=run_id, method=method, task=task, budget_tokens=budget):
                self.run_id, self.method, self.task, self.budget_tokens = run_id, method, task, budget
                self.started = time.time() if at is None else at
                self.failed, self.queued = None, None
                return {PROGRESS}
            case DraftReady(steps=steps):  # an edited draft replaces the first: revision starts over
                self.steps, self.draft_ready, self.draft_live = list(steps), True, ""
                self.cards, self.current, self.n, self.final = {}, 0, len(steps), None
                return set(ALL_PANELS)
            case StepStarted(i=i, thought=thought, n=n):
                self.card(i).thought = thought
                self.step_times[i] = (time.time() if at is None else at, 0.0)
                self.current, self.n = i, n or self.n or len(self.steps)
                return set(ALL_PANELS)
            case QueryMade(i=i, query=query):
                card = self.card(i)
                card.query = query
                card.live.pop("query", None)
                return {STEPS, PROGRESS}
            case SearchDone(i=i):
                self.card(i).searches.append(e)
                return {STEPS, PROGRESS}
            case PageRead(i=i):
                self.card(i).pages.append(e)
                return {STEPS}
            case PassagesChosen(i=i, passages=passages):
                self.card(i).passages = passages
                return {STEPS, PROGRESS}
            case StepRedone(i=i, action=action) if action == ADD:  # a new step at i: the steps from i on move
                self.steps.insert(i - 1, e.instruction)  # down (the events before it: ``renumbered``)
                self.cards = {j + (j >= i): card for j, card in sorted(self.cards.items())}
                for j, card in self.cards.items():
                    card.i = j
                self.step_times = {j + (j >= i): t for j, t in self.step_times.items()}
                self.n, self.final = len(self.steps), None
                card = self.card(i)
                card.thought = e.instruction
                card.redone.append(e)
                return set(ALL_PANELS)
            case StepRedone(action=action) if action == EVERY:  # every step revised again, with its passages
                for card in self.cards.values():
                    if card.revised is not None:
                        card.redone.append(e)
                        card.revised = None
                self.final = None
                return set(ALL_PANELS)
            case StepRedone(i=i, action=action):  # the step's new retrieval and revision replace the old
                card = self.card(i)
                card.redone.append(e)
                if action != "regenerate":
                    card.query, card.searches, card.pages, card.passages = "", [], [], ()
                card.revised, self.final = None, None
                return set(ALL_PANELS)
            case StepRevised(i=i):
                card = self.card(i)
                card.revised = e
                if i in self.step_times:
                    self.step_times[i] = (self.step_times[i][0], time.time() if at is None else at)
                card.live.pop("revise", None)
                return set(ALL_PANELS)
            case LLMCalled(prompt_tokens=p, completion_tokens=c, role=role, i=i):
                self.llm_calls += 1
                self.prompt_tokens += p
                self.completion_tokens += c
                holder = self.cards.get(i) if i else self
                if holder is not None:
                    holder.thinking_live.pop(role, None)
                if not e.thinking:
                    return {PROGRESS}
                holder = self.card(i) if i else self
                holder.thinking.append(Thought(role, e.thinking, e.thinking_tokens))
                return {PROGRESS, DRAFT if role == "draft" and i == 0 else STEPS}
            case Note(i=i):
                (self.card(i).notes if i else self.notes).append(e)
                return {STEPS}
            case Final():
                self.final, self.current, self.live = e, 0, {}
                return set(ALL_PANELS)
            case Failed():
                self.failed = e
                return {PROGRESS, STEPS}
        return set()

    @property
    def edits(self) -> Revisions:
        """The run's revisions as the author can edit them (undo, take): ``core.article.edits``.
        Built once for the events folded so far (they are only ever appended to)."""
        if self._edits is None or self._edits[0] != len(self.events):
            self._edits = (len(self.events), Revisions.from_events(self.events))
        return self._edits[1]

    @property
    def revisions(self) -> dict[int, StepRevised]:
        return {i: c.revised for i, c in sorted(self.cards.items()) if c.revised is not None}


def fold(events: Iterable[Event]) -> RunView:
    """The view of a run from its events (stored ones, or a whole live stream)."""
    view = RunView()
    for e in events:
        view.apply(e)
    return view


def _seconds(stamps: Sequence[str]) -> list[float]:
    out, first = [], None
    for s in stamps:
        try:
            t = datetime.fromisoformat(s).timestamp()
        except (TypeError, ValueError):
            t = out[-1] if out else 0.0
        first = t if first is None else first
        out.append(t)
    return out


def _chunks(text: str, parts: int) -> list[str]:
    words = re.findall(r"\S+\s*", text)
    if not words:
        return []
    size = max(1, -(-len(words) // parts))
    return ["".join(words[k:k + size]) for k in range(0, len(words), size)]


def replay_schedule(events: Sequence[Event], stamps: Sequence[str], *, speed: float = 1.0,
                    max_gap: float = 2.0, typing_chunks: int = 24) -> list[tuple[float, Event]]:
    """(seconds to wait, event) pairs that replay a stored run: the gaps between the stored
    events' time stamps, each capped at ``max_gap`` seconds, divided by ``speed``. TokenDeltas
    are not stored, so the text a model call wrote (the draft, a revision) is re-typed over
    that call's own time, in ``typing_chunks`` pieces."""
    speed = max(speed, 0.01)
    times = _seconds(stamps)
    gaps = [0.0] + [max(0.0, min(max_gap, b - a)) / speed for a, b in zip(times, times[1:], strict=False)]
    gaps += [0.0] * (len(events) - len(gaps))
    schedule: list[tuple[float, Event]] = []
    for k, e in enumerate(events):
        nxt = events[k + 1] if k + 1 < len(events) else None
        text = ""
        if isinstance(e, LLMCalled):
            if isinstance(nxt, DraftReady):
                text = join_steps(list(nxt.steps))
            elif isinstance(nxt, StepRevised) and not nxt.skipped and nxt.i == e.i:
                text = nxt.after
        pieces = _chunks(text, typing_chunks)
        if pieces:
            role = "draft" if isinstance(nxt, DraftReady) else e.role
            i = 0 if isinstance(nxt, DraftReady) else e.i
            each = gaps[k] / len(pieces)
            schedule += [(each, TokenDelta(role=role, text=p, i=i)) for p in pieces]
            schedule.append((0.0, e))
        else:
            schedule.append((gaps[k], e))
    return schedule
