"""The runner: starts a method, stores each event the moment it happens, and passes it on.

Tokens, calls and time are counted here and only here, from the events themselves (LLMCalled,
SearchDone, PageRead), so a live run, a resumed run and a replay agree.

A run ends in one of the states of ``common.types.RunStatus`` (runs.status): done, unsourced
(finished, but a method that searches used no source at all), draft, failed, interrupted, budget
(stopped before the model call that would pass its token budget, ``core.budget``), or running
(still going, or its process died).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from common.errors import BudgetExceeded, LLMError, RatStudioError, TaskError
from common.events import (
    DraftReady,
    Event,
    Failed,
    Final,
    LLMCalled,
    PageRead,
    PassagesChosen,
    RunStarted,
    SearchDone,
    StepRedone,
    StepRevised,
    ThinkingDelta,
    TokenDelta,
    renumbered,
)
from common.settings import DEFAULT_CONTEXT_TOKENS, Settings
from common.types import RunStatus, Task
from core.article.citations import shown_labels
from core.article.edits import latest_revisions
from core.article.sources import SourceBook
from core.budget import TokenBudget, how_to_go_on
from core.clients import Clients
from core.methods import METHODS, MethodContext, get_method, unsourced
from core.methods.base import check_params
from core.text import language

if TYPE_CHECKING:  # pragma: no cover
    from data.store import RunRow

log = logging.getLogger(__name__)


class Runner:
    """Runs methods. ``store`` keeps runs and their events; ``clients`` makes each run's LLM,
    search and fetch clients; ``memory`` is AAG's procedural memory (None: AAG finds none);
    ``heartbeat`` is how many seconds pass between a running run's heartbeats (None:
    ``data.store.HEARTBEAT_SECONDS``, which the store's staleness check is made for).

    The runner knows the runs it drives now, so that a process going down before their tasks can
    end (the server stopped by SIGTERM or Ctrl-C) stores them as interrupted: :meth:`interrupt_live`."""

    def __init__(self, store, clients: Clients, settings: Settings, *, memory: Any = None,
                 heartbeat: float | None = None):
        self.store = store
        self.clients = clients
        self.settings = settings
        self.memory = memory
        self.heartbeat = _heartbeat_seconds() if heartbeat is None else heartbeat
        self._driving: set[str] = set()  # the runs driven now, until their last status is stored
        self._driving_lock = threading.Lock()  # a last status and interrupt_live never cross

    # -- public ----------------------------------------------------------------------------
    async def start(self, method: str, task: Task, *, draft_only: bool = False,
                    providers: Sequence[str] | None = None, settings: Settings | None = None) -> AsyncIterator[Event]:
        """Run ``method`` on ``task``; ``providers`` overrides the settings' search providers
        for this run, ``draft_only`` stops after the draft; ``settings`` (None: the runner's) are
        this run's own (the Writer's Run settings: its model, k, token limits, method parameters),
        stored with the run and used again when it resumes. Raises TaskError (before anything is
        stored) for an empty or oversized task or an unknown method, and ConfigError for a
        ``--param`` that no method declares or whose value is out of range or a search provider
        that lacks its setting (``Clients.check_search``); every later failure is a Failed event."""
        info = get_method(method)
        settings = settings or self.settings
        check_params([info.name], settings.method.params, strict=False)  # shared by the UI's methods
        language.check(settings.method.language)
        task = task.validated(settings.method.max_task_chars)
        providers = tuple(providers or settings.search.providers)
        self.clients.check_search(providers)  # "add --corpus DIR": refused, not stored and then failed
        task_id = self.store.add_task(task.prompt, task.kind, task.task_set)
        owner = _new_owner()
        run_id = self.store.create_run(info.name, task_id, self._run_settings(providers, settings), owner=owner)
        plan = _Plan(run_id, info.name, task, owner, providers, settings, draft_only=draft_only)
        async with aclosing(self._drive(plan)) as events:
            async for event in events:
                yield event

    async def resume(self, run_id: str, *, draft: list[str] | None = None, draft_only: bool = False,
                     providers: Sequence[str] | None = None, budget_tokens: int | None = None
                     ) -> AsyncIterator[Event]:
        """Continue a run from its stored events: after its last revised step, or with an
        edited ``draft`` (stored as a new DraftReady; revision starts over from step 1). The
        run's own search providers are used unless ``providers`` is given, and the settings it
        was started with chose for itself (``start``'s ``settings``) over the runner's; so is its
        token budget, unless ``budget_tokens`` gives it a new one (a run stopped at its budget goes
        on with a larger one), stored as the run's own from then on. Raises RunNotFound,
        TaskError when the run is finished (with an edited draft too: its article is the
        author's, changed step by step) or its method cannot resume, or ConfigError for a bad
        ``--param`` or search provider (:meth:`check_resume`); each before anything is stored."""
        run = self.check_resume(run_id, providers=providers)
        prior = self.store.events(run_id)
        edited = None
        if draft is not None:
            steps = tuple(s.strip() for s in draft if s and s.strip())
            if not steps:
                raise TaskError("The edited draft has no steps left: add at least one step.")
            edited = DraftReady(steps=steps)
            prior.append(edited)
        plan = self._continuing(run, prior, edited, draft_only=draft_only, providers=providers,
                                budget_tokens=budget_tokens)
        async with aclosing(self._drive(plan)) as events:
            async for event in events:
                yield event

    def check_resume(self, run_id: str, *, providers: Sequence[str] | None = None) -> RunRow:
        """What :meth:`resume` checks before it stores anything, for a caller that keeps something
        of its own first (the command line keeps an edited draft as a version): returns the run
        when it can go on with ``providers`` (None: its own). Raises RunNotFound, TaskError when
        the run is finished or its method cannot resume, ConfigError for a bad ``--param`` or a
        search provider that lacks its setting (the message names the flag to add)."""
        run = self.store.get_run(run_id)
        info = get_method(run.method)
        check_params([info.name], self.settings.method.params, strict=False)
        if run.status in FINISHED:
            raise TaskError(finished_refusal(run_id))
        if not info.resumable:
            raise TaskError(f"The method {info.name!r} cannot resume; start a new run instead.")
        self.clients.check_search(self._providers(run, providers))
        return run

    async def redo(self, run_id: str, i: int, *, action: str, query: str = "",
                   exclude: Sequence[str] = (), instruction: str = "",
                   budget_tokens: int | None = None) -> AsyncIterator[Event]:
        """Do step ``i`` of a finished (or stopped) rat or rat-step run again, as its author asks
        (``action``: "regenerate", "search" with the author's ``query``, "exclude" the pages of
        ``exclude``, or "instruct": revise with the author's ``instruction``, and with a new search
        when ``query`` is given too; see ``common.events.StepRedone``): the request is stored as a StepRedone, then
        the method redoes the step (rat: and revises the later steps again) and ends with a new
        Final; the run is running meanwhile, then finished again. Its earlier events stay.
        ``budget_tokens``: as for ``resume``.
        Raises RunNotFound, RunLive when it is going on, TaskError for a method that cannot redo
        a step or a request that does not fit the run (the message names the fix), ConfigError
        for a bad ``--param`` (as ``start``) or for one of the run's search providers that lacks
        its setting here (a corpus run redone without ``--corpus``); each before anything is
        stored, so a refused redo leaves the run as it was."""
        run = self.store.get_run(run_id)
        info = get_method(run.method)
        if info.redo is None:
            able = " and ".join(m.name for m in METHODS.values() if m.redo is not None)
            raise TaskError(f"The method {info.name!r} cannot redo a step (only {able} can): start a new run instead.")
        check_params([info.name], self.settings.method.params, strict=False)
        prior = self.store.events(run_id)
        asked = info.redo(prior, i, action=action, query=query, exclude=exclude, instruction=instruction)
        self.clients.check_search(self._providers(run))  # the run stays finished, not failed at its first search
        asked = replace(asked, at=_now())
        prior.append(asked)
        plan = self._continuing(run, prior, asked, budget_tokens=budget_tokens)
        async with aclosing(self._drive(plan)) as events:
            async for event in events:
                yield event

    def _continuing(self, run: RunRow, prior: list[Event], edited: Event | None, *, draft_only: bool = False,
                    providers: Sequence[str] | None = None, budget_tokens: int | None = None) -> _Plan:
        """The plan that goes on with stored ``run`` (``resume``, ``redo``): its events so far
        (``prior``, ``edited`` last among them), its counters, its own settings and search
        providers (``providers`` over them), and its own token budget unless ``budget_tokens``
        gives a new one (then stored with the run), under a new owner that has claimed it.
        Raises RunLive when another runner still drives it."""
        owner = _new_owner()
        self.store.claim_run(run.id, owner)  # RunLive when another runner still drives it
        settings = self._stored_settings(run.settings)
        if budget_tokens is not None and budget_tokens != run.settings.get("budget_tokens"):
            chosen = [k for k in run.settings.get("chosen") or () if k != "budget_tokens"]
            if budget_tokens != _setting(self.settings, "budget_tokens"):
                chosen.append("budget_tokens")
            self.store.update_run(run.id, settings={**run.settings, "budget_tokens": budget_tokens, "chosen": chosen})
        budget = budget_tokens if budget_tokens is not None else run.settings.get("budget_tokens",
                                                                                  settings.llm.budget_tokens)
        settings = replace(settings, llm=replace(settings.llm, budget_tokens=budget))
        return _Plan(run.id, get_method(run.method).name, Task(run.task, run.kind, run.task_set), owner,
                     self._providers(run, providers), settings, prior=prior, seq=self.store.last_seq(run.id),
                     draft_only=draft_only, resumed=True, counts=run, edited=edited)

    def _providers(self, run: RunRow, providers: Sequence[str] | None = None) -> tuple[str, ...]:
        """The search providers a stored run goes on with: ``providers``, else its own, else the
        runner's."""
        return tuple(providers or run.settings.get("search") or self.settings.search.providers)

    def interrupt_live(self, why: str = "") -> list[str]:
        """Store every run this runner drives now as interrupted (resumable), with ``why`` as its
        error: for a process going down before the runs' tasks can end (their own clean-up would
        do it, but a stopped server's event loop never runs it). A run whose last status is
        already stored is left as it is; one that goes on after this may still store its own.
        Returns the ids of the runs it stopped; a run the store refuses is logged and skipped."""
        why = why or ("The app was stopped (SIGTERM or Ctrl-C) while this run went on; continue it from "
                      "where it stopped.")
        stopped = []
        with self._driving_lock:
            for run_id in sorted(self._driving):
                try:
                    self.store.update_run(run_id, status=RunStatus.INTERRUPTED, error=why)
                    stopped.append(run_id)
                except RatStudioError as exc:
                    log.warning("run %s could not be stored as interrupted: %s", run_id, exc)
            self._driving.clear()
        return stopped

    def _last_status(self, run_id: str, write: Any) -> None:
        """Store a run's last status (``write()``) and forget the run, with no
        :meth:`interrupt_live` in between; nothing when :meth:`interrupt_live` stored it already
        (the process is going down: what fails in the run now fails because of that, issue 38)."""
        with self._driving_lock:
            if run_id not in self._driving:
                return
            try:
                write()
            finally:
                self._driving.discard(run_id)

    def _stopped(self, run_id: str) -> bool:
        """Whether :meth:`interrupt_live` stored the run as interrupted (it is driven no more)."""
        with self._driving_lock:
            return run_id not in self._driving

    # -- the loop --------------------------------------------------------------------------
    async def _drive(self, plan: _Plan) -> AsyncIterator[Event]:
        """Run the plan's method, storing and passing on each event; the method's Final gets its
        sources here, from the events of the run (``prior`` and the new ones). Each event is
        stored with the run's counters (and, at the end, its status) in one transaction, so the
        row never disagrees with the events. ``owner`` (this runner) beats every few seconds
        while the run goes on. ``edited``: an author's edited draft (or request to redo a step),
        stored and passed on right after RunStarted (the method finds it in ``prior``)."""
        run_id, method, task, prior, seq = plan.run_id, plan.method, plan.task, plan.prior, plan.seq
        providers, owner, settings, draft_only = plan.providers, plan.owner, plan.settings, plan.draft_only
        resumed, edited = plan.resumed, plan.edited
        tally = _Tally(plan.counts, prior)
        started = time.perf_counter()
        status = RunStatus.INTERRUPTED
        resumable = get_method(method).resumable

        def store(event: Event, **run: Any) -> None:
            nonlocal seq
            if event.persist:
                seq += 1
                tally.see(event)
                write = partial(self.store.append_event, run_id, seq, event, {**tally.fields(started), **run})
                if "status" in run:
                    self._last_status(run_id, write)
                else:
                    write()

        first = RunStarted(run_id=run_id, method=method, task=task.prompt, resumed=resumed,
                           budget_tokens=settings.llm.budget_tokens)
        store(first)
        ctx = None
        book = SourceBook.from_events(prior, settings.method.cite_threshold)  # Final's sources and marks
        redoing = any(isinstance(e, StepRedone) for e in prior)  # an author's step done again: its Final is a version
        beating = asyncio.get_running_loop().create_task(self._beat(run_id, owner))
        with self._driving_lock:
            self._driving.add(run_id)
        try:  # (from the first yield on: a reader that stops at RunStarted leaves the run interrupted, not running)
            yield first
            if edited is not None:
                store(edited)
                yield edited
            ctx = self._context(prior, providers, book, settings, task,
                                spent=tally.prompt_tokens + tally.completion_tokens)
            if ctx.settings.context_tokens is None:  # what the server reports, else the default
                window = await ctx.llm.context_window() if hasattr(ctx.llm, "context_window") else None
                ctx.settings = replace(ctx.settings, context_tokens=window or DEFAULT_CONTEXT_TOKENS)
            async for event in _closing(get_method(method).run(task, ctx)):
                if isinstance(event, Final) and not event.text.strip():
                    raise LLMError(f"The method {method!r} ended with no text: the model's answers held nothing "
                                   "it could use (the run's notes say why). Try again, or pick a stronger model "
                                   "with --model.")
                if isinstance(event, Final) and redoing:
                    # a redone step's earlier revision no longer counts: the sources of the latest ones
                    events = renumbered([*prior, *tally.seen])  # (a step added: numbered as it reads now)
                    book = SourceBook.from_events(latest_revisions(events), book.threshold)
                    book.labels = shown_labels(events)  # what the model was shown: what its own marks mean
                event = book.sourced(event)
                if isinstance(event, Final):
                    status = RunStatus.UNSOURCED if unsourced(method, event) else RunStatus.DONE
                    if redoing:  # the model's own text stays the run's:
                        store(event, status=status, finished=_now())  # the author's redo is a version
                    else:
                        store(event, status=status, final_text=event.text,
                              sources=[asdict(s) for s in event.sources], sentences=event.sentences,
                              sentences_cited=event.supported, marks_removed=event.marks_removed, finished=_now())
                else:
                    store(event)
                yield event
                if draft_only and isinstance(event, DraftReady):
                    status = RunStatus.DRAFT
                    self._last_status(run_id, partial(self.store.update_run, run_id, status=status,
                                                      **tally.fields(started)))
                    return
            if status not in FINISHED:  # a method that ended without Final
                raise RatStudioError(f"The method {method!r} ended without a result.")
        except (asyncio.CancelledError, GeneratorExit):
            status = RunStatus.INTERRUPTED
            raise
        except Exception as exc:
            if self._stopped(run_id):  # the server stopped under it (closed pools, clients): interrupted
                log.info("run %s ended as the app stopped: %s: %s", run_id, type(exc).__name__, exc)
                status = RunStatus.INTERRUPTED
                return
            status = RunStatus.BUDGET if isinstance(exc, BudgetExceeded) else RunStatus.FAILED
            if isinstance(exc, BudgetExceeded) and not resumable:  # its fix is a new run
                error = str(exc).replace(how_to_go_on(exc.budget, exc.spent, exc.need),
                                         how_to_go_on(exc.budget, exc.spent, exc.need, method=method, resumable=False))
                failed = Failed(error=error, resumable=False, error_type=type(exc).__name__)
            elif isinstance(exc, RatStudioError):
                failed = Failed(error=str(exc), resumable=resumable and _resumable(exc),
                                error_type=type(exc).__name__)
            else:  # a bug: keep what was done, say so, let the run resume
                log.exception("run %s crashed", run_id)
                again = (f"resume with `python app.py resume {run_id}` once fixed" if resumable
                         else "run it again once fixed")
                failed = Failed(error=f"Internal error ({type(exc).__name__}: {exc}). What was done is kept; "
                                f"{again}.", resumable=resumable, error_type=type(exc).__name__)
            store(failed, status=status, error=failed.error)
            yield failed
        finally:
            beating.cancel()
            if status == RunStatus.INTERRUPTED:
                self._last_status(run_id, partial(self.store.update_run, run_id, status=status,
                                                  **tally.fields(started)))
            with self._driving_lock:
                self._driving.discard(run_id)
            if ctx is not None:
                await _close(ctx)

    async def _beat(self, run_id: str, owner: str) -> None:
        """Say every ``self.heartbeat`` seconds that this runner is alive, for as long as it
        drives the run."""
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                self.store.beat(run_id, owner)
            except RatStudioError as exc:  # a busy or broken file: the run itself will say so
                log.debug("heartbeat of run %s failed: %s", run_id, exc)

    def _context(self, prior: list[Event], providers: tuple[str, ...], book: SourceBook,
                 settings: Settings | None = None, task: Task | None = None, *, spent: int = 0) -> MethodContext:
        """The method's context for a run of ``task`` with ``settings`` (None: the runner's): its
        method settings, and an LLM client made from its model settings (its model per role, its
        --max-tokens) whose requests ask for the run's language (``core.text.language``) and, with
        a --budget-tokens, stop at it (``spent``: the run's tokens so far); the runner's clients and
        settings are left as they are."""
        settings = settings or self.settings
        search = self.clients.search(providers)
        clients = self.clients if settings.llm == self.settings.llm else replace(self.clients, settings=settings)
        system = language.instruction(settings.method.language, task.prompt) if task else ""
        limit = settings.llm.budget_tokens
        budget = {"budget": TokenBudget(limit, spent)} if limit is not None else {}  # test clients may take none
        return MethodContext(llm=clients.llm(system=system, **budget), search=search, fetch=self.clients.fetcher(),
                             settings=settings.method, prior=prior,
                             read_local=getattr(search, "read_local", None), memory=self.memory,
                             numbers=book.numbers)

    def _run_settings(self, providers: tuple[str, ...], settings: Settings | None = None) -> dict:
        """What a run stores of its settings: each of ``RUN_SETTINGS`` (and its search
        providers), and under "chosen" the ones it set for itself, unlike the runner's."""
        settings = settings or self.settings
        stored = {key: _setting(settings, key) for key in RUN_SETTINGS}
        chosen = [key for key, value in stored.items() if value != _setting(self.settings, key)]
        return {**stored, "search": list(providers), "chosen": chosen}

    def _stored_settings(self, stored: dict) -> Settings:
        """The runner's settings with those a run chose for itself (``_run_settings``'s
        "chosen") put back from what it stored."""
        settings = self.settings
        for key in stored.get("chosen") or ():
            if key in RUN_SETTINGS and key in stored:
                section, attr = RUN_SETTINGS[key]
                part = getattr(settings, section)
                settings = replace(settings, **{section: replace(part, **{attr: _copy(stored[key])})})
        return settings


#: The settings a run may choose for itself (the Writer's Run settings), as stored with it: key ->
#: (section of Settings, attribute).
RUN_SETTINGS = {
    "model": ("llm", "model"), "role_models": ("llm", "role_models"), "max_tokens": ("llm", "max_tokens"),
    "budget_tokens": ("llm", "budget_tokens"),
    "k": ("method", "k"), "passage_tokens": ("method", "passage_tokens"), "max_steps": ("method", "max_steps"),
    "context_tokens": ("method", "context_tokens"), "min_keep": ("method", "min_keep"),
    "cite_threshold": ("method", "cite_threshold"), "params": ("method", "params"),
    "language": ("method", "language"),
}


def _setting(settings: Settings, key: str) -> Any:
    section, attr = RUN_SETTINGS[key]
    return _copy(getattr(getattr(settings, section), attr))


def _copy(value: Any) -> Any:
    return dict(value) if isinstance(value, dict) else value


@dataclass(frozen=True)
class _Plan:
    """One drive of a run, as ``_drive`` is told it: ``start`` plans a new run's,
    ``_continuing`` a stored run's (``resume``, ``redo``). ``prior``: its events so far;
    ``seq``: the last one's number; ``counts``: its stored counters (None: a new run);
    ``edited``: an author's edited draft or step request, stored right after RunStarted;
    ``settings``: the run's own."""

    run_id: str
    method: str
    task: Task
    owner: str
    providers: tuple[str, ...]
    settings: Settings
    prior: list[Event] = field(default_factory=list)
    seq: int = 0
    draft_only: bool = False
    resumed: bool = False
    counts: RunRow | None = None
    edited: Event | None = None


class _Tally:
    """Tokens, calls and seconds of a run, from its events (added to ``run``'s, on a resume).
    A step counts as sourced (``steps_sourced``) when it was checked against a page that was
    read: a step checked only against search snippets is not (``prior``: the run's stored
    events, which say which pages were read before a resume)."""

    def __init__(self, run: RunRow | None = None, prior: Sequence[Event] = ()):
        self.prompt_tokens = run.prompt_tokens if run else 0
        self.completion_tokens = run.completion_tokens if run else 0
        self.llm_calls = run.llm_calls if run else 0
        self.by_role: dict[str, dict[str, int]] = dict(run.tokens_by_role) if run else {}
        self.llm_seconds = run.llm_seconds if run else 0.0
        self.search_seconds = run.search_seconds if run else 0.0
        self.fetch_seconds = run.fetch_seconds if run else 0.0
        self.steps_done = run.steps_done if run else 0
        self.steps_total = run.steps_total if run else 0
        self.checked: dict[int, bool] = {}  # step -> checked against a read page (this stretch)
        self.sourced_before = run.steps_sourced if run else 0
        self.guarded = run.steps_guarded if run else 0
        self.wall_before = run.wall_seconds if run else 0.0
        self.read: set[str] = set()  # URLs of which a passage of the page itself was chosen
        self.seen: list[Event] = []  # the events counted (this stretch), but streamed tokens
        for e in prior:
            if isinstance(e, PassagesChosen):
                self._chosen(e)
            elif isinstance(e, DraftReady):
                self.checked = {}
            elif isinstance(e, StepRevised):  # a step redone later replaces its count (Runner.redo)
                self.checked[e.i] = e.checked and any(url in self.read for url in e.sources)
        if self.checked:  # counted from the events themselves, not added to the row's
            self.sourced_before = 0

    def _chosen(self, e: PassagesChosen) -> None:
        self.read.update(p.url for p in e.passages if not p.snippet)

    def see(self, e: Event) -> bool:
        """Count the event; True when it changed a step count."""
        if not isinstance(e, TokenDelta | ThinkingDelta):
            self.seen.append(e)
        if isinstance(e, LLMCalled):
            self.prompt_tokens += e.prompt_tokens
            self.completion_tokens += e.completion_tokens
            self.llm_calls += 1
            self.llm_seconds += e.seconds
            role = self.by_role.setdefault(e.role, {"prompt": 0, "completion": 0, "calls": 0})
            role["prompt"] += e.prompt_tokens
            role["completion"] += e.completion_tokens
            role["calls"] += 1
            return False
        if isinstance(e, SearchDone):
            self.search_seconds += e.seconds
            return False
        if isinstance(e, PageRead):
            self.fetch_seconds += e.seconds
            return False
        if isinstance(e, PassagesChosen):
            self._chosen(e)
            return False
        if isinstance(e, DraftReady):
            self.steps_total, self.steps_done = len(e.steps), 0
            self.checked, self.sourced_before = {}, 0
            return True
        if isinstance(e, StepRevised):
            self.steps_done = max(self.steps_done, e.i)  # a redone step leaves the later ones done
            self.checked[e.i] = e.checked and any(url in self.read for url in e.sources)
            self.guarded += bool(e.guarded)
            return True
        return False

    def fields(self, started: float) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "llm_calls": self.llm_calls, "tokens_by_role": self.by_role,
            "llm_seconds": round(self.llm_seconds, 3), "search_seconds": round(self.search_seconds, 3),
            "fetch_seconds": round(self.fetch_seconds, 3), "steps_done": self.steps_done,
            "steps_total": self.steps_total, "steps_guarded": self.guarded,
            "steps_sourced": self.sourced_before + sum(self.checked.values()),
            "wall_seconds": round(self.wall_before + time.perf_counter() - started, 3),
        }


async def _closing(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """Pass events on, and close the source when the consumer stops early, so its own
    clean-up runs now rather than whenever it is garbage-collected."""
    async with aclosing(events):
        async for event in events:
            yield event


FINISHED = (RunStatus.DONE, RunStatus.UNSOURCED)


def _resumable(exc: RatStudioError) -> bool:
    return exc.retryable or isinstance(exc, LLMError | BudgetExceeded)


def _now() -> str:
    from data.store import now

    return now()


def _new_owner() -> str:
    from data.store import new_owner

    return new_owner()


def _heartbeat_seconds() -> float:
    from data.store import HEARTBEAT_SECONDS

    return HEARTBEAT_SECONDS


async def _close(ctx: MethodContext) -> None:
    for client in (ctx.llm, ctx.search, ctx.fetch):
        close = getattr(client, "aclose", None)
        if close is not None:
            try:
                await close()
            except RuntimeError:  # the loop is closing; nothing left to flush
                pass


def finished_refusal(run_id: str) -> str:
    """Why a finished run is not resumed, and what to do instead."""
    return (f"Run {run_id} is finished: resuming it would replace its article, so nothing was changed. Start a new "
            f"run (`python app.py run`), or change one step of it: `python app.py redo {run_id} --step K` (or "
            "the step's buttons in the Writer).")
