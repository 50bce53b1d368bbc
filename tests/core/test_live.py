"""Runs that belong to the server (core.live.LiveRuns): a follower that leaves does not stop the
run, a new follower gets what happened so far and then the rest live, Stop stops the run itself,
--concurrency bounds runs at once and a run beyond it says it is queued. Over the fakes' real HTTP
and a real SQLite file."""

from __future__ import annotations

import asyncio
import time

import pytest

from common.errors import TaskError
from common.events import DraftReady, Final, RunStarted, StepRevised, TokenDelta
from common.types import RunStatus, Task
from core.live import LiveRuns, Queued, Timed
from tests.fakes.scripts import Gate

TASK = Task("Write a short history of Python 3 and its ecosystem.")
WAIT = 20  # seconds: a bound on each wait, never a measurement


def stored(events) -> list:
    return [e for e in events if not isinstance(e, (TokenDelta, Queued))]


async def wait_for(predicate, what: str) -> None:
    for _ in range(WAIT * 20):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


async def first(events, kind):
    """Read ``events`` until one of ``kind``; returns what was read."""
    seen = []
    async for e in events:
        seen.append(e)
        if isinstance(e, kind):
            return seen
    raise AssertionError(f"the run ended before a {kind.__name__}")


async def test_a_follower_that_leaves_leaves_the_run_going_and_a_new_one_sees_it_all(app, llm):
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner)
    following = live.start("rat", TASK)
    seen = await first(following, DraftReady)
    run_id = seen[0].run_id
    await following.aclose()  # the tab reloads
    await wait_for(gate.held.is_set, "the first revision")
    assert live.running() == [run_id] and app.store.get_run(run_id).status == RunStatus.RUNNING

    again = live.follow(run_id)  # the reopened Writer
    replayed = await first(again, DraftReady)
    assert isinstance(replayed[0], RunStarted) and replayed[0].run_id == run_id
    gate.open.set()
    rest = [e async for e in again]
    assert isinstance(rest[-1], Final) and sum(isinstance(e, StepRevised) for e in rest) == 3
    assert app.store.get_run(run_id).status == RunStatus.DONE
    assert stored(replayed + rest) == app.store.events(run_id), "everything, once, in order"
    assert live.running() == [] and [e async for e in live.follow(run_id)] == []


async def held_at_the_first_revision(app, llm):
    """A rat run started on a fresh LiveRuns and held at its first revision: (the gate, the
    LiveRuns, the starting follower, the run's id)."""
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner)
    following = live.start("rat", TASK)
    run_id = (await first(following, RunStarted))[0].run_id
    await wait_for(gate.held.is_set, "the first revision")
    return gate, live, following, run_id


async def test_stop_stops_the_run_itself_and_it_can_be_continued(app, llm):
    gate, live, following, run_id = await held_at_the_first_revision(app, llm)
    assert live.stop(run_id) and not live.stop("not-a-run")
    rest = [e async for e in following]  # the follower ends with the run
    assert not any(isinstance(e, Final) for e in rest)
    await wait_for(lambda: app.store.get_run(run_id).status == RunStatus.INTERRUPTED, "the interrupted status")
    gate.open.set()
    resumed = [e async for e in live.resume(run_id)]
    assert isinstance(resumed[-1], Final) and app.store.get_run(run_id).status == RunStatus.DONE
    assert isinstance(resumed[0], RunStarted) and not resumed[0].resumed, "the stored events come first"


async def test_a_follower_joining_late_gets_each_event_with_when_it_happened(app, llm):
    """A reopened Writer times the run from when it started, not from when it joined (before, a
    reload said "0:03 elapsed" of a run going for minutes, and guessed the time left from steps
    replayed in no time)."""
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner)
    following = live.start("rat", TASK)
    began = time.time()
    run_id = (await first(following, RunStarted))[0].run_id
    await wait_for(gate.held.is_set, "the first revision")
    await asyncio.sleep(0.5)
    joined = time.time()
    again = live.follow(run_id, timed=True)
    replayed = [t async for t in _until(again, DraftReady)]
    assert all(isinstance(t, Timed) for t in replayed)
    assert isinstance(replayed[0].item, RunStarted) and began <= replayed[0].at <= joined - 0.5
    assert all(t.at <= joined - 0.5 for t in replayed), "what happened before the join keeps its time"
    gate.open.set()
    rest = [t async for t in again]
    assert isinstance(rest[-1].item, Final) and all(t.at >= joined for t in rest if isinstance(t.item, StepRevised))
    await following.aclose()


async def test_a_continued_runs_stored_events_come_with_their_stored_times(app, llm):
    gate, live, following, run_id = await held_at_the_first_revision(app, llm)
    live.stop(run_id)
    [e async for e in following]
    await wait_for(lambda: app.store.get_run(run_id).status == RunStatus.INTERRUPTED, "the interrupted status")
    stored_before = len(app.store.events(run_id))
    await asyncio.sleep(0.5)
    continued = time.time()
    resuming = live.resume(run_id)
    async for e in resuming:  # the stored events, then the continuation's own start
        if isinstance(e, RunStarted) and e.resumed:
            break
    timed = live.follow(run_id, timed=True)
    seen = [t async for t in _until_resumed(timed)]
    assert len(seen) == stored_before + 1
    assert all(t.at is not None and t.at < continued - 0.4 for t in seen[:stored_before]), "as stored"
    assert seen[-1].at >= continued, "the continuation started after the pause"
    gate.open.set()
    rest = [t async for t in timed]
    assert isinstance(rest[-1].item, Final)
    [e async for e in resuming]


async def _until_resumed(events):
    async for t in events:
        yield t
        if isinstance(t.item, RunStarted) and t.item.resumed:
            return


async def _until(events, kind):
    """Yield ``events`` (Timed) up to and including the first whose item is of ``kind``."""
    async for t in events:
        yield t
        if isinstance(t.item, kind):
            return


async def one_going_one_waiting(live: LiveRuns, llm):
    """A run held at the gate in the one place of ``live`` (limit 1), and a second waiting for it:
    (the gate, the first's follower and id, the second's follower, what it was told so far)."""
    gate = Gate()
    llm.reply(gate)
    one = live.start("rat", TASK)
    first_id = (await first(one, RunStarted))[0].run_id
    two = live.start("rat", Task("A second task about Mercurial and Python 3."))
    return gate, one, first_id, two, await first(two, Queued)


async def test_a_run_beyond_the_limit_waits_and_says_so(app, llm):
    live = LiveRuns(app.runner, limit=1)
    gate, one, first_id, two, waiting = await one_going_one_waiting(live, llm)
    assert waiting == [Queued(ahead=0, limit=1, ticket=2)] and live.running() == [first_id]
    gate.open.set()
    second = await first(two, RunStarted)
    assert second[-1].run_id != first_id
    assert isinstance([e async for e in two][-1], Final) and isinstance([e async for e in one][-1], Final)


async def test_a_run_stopped_while_it_waits_never_starts(app, llm):
    live = LiveRuns(app.runner, limit=1)
    gate, one, first_id, two, waiting = await one_going_one_waiting(live, llm)
    ticket = waiting[0].ticket
    runs_before = len(app.store.list_runs(limit=100))
    assert live.stop_launched(ticket) == ""  # here its task has not even begun: the follower ran first
    assert [e async for e in two] == [], "the follower ends with nothing"
    assert live.stop_launched(ticket) is None, "it is over"
    gate.open.set()
    assert isinstance([e async for e in one][-1], Final)
    assert len(app.store.list_runs(limit=100)) == runs_before and live.running() == []
    assert app.store.get_run(first_id).status == RunStatus.DONE


async def test_a_launched_run_that_started_is_stopped_by_its_ticket(app, llm):
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner, limit=1)
    one = live.start("rat", TASK)
    run_id = (await first(one, RunStarted))[0].run_id
    assert live.stop_launched(1) == run_id
    await wait_for(lambda: app.store.get_run(run_id).status == RunStatus.INTERRUPTED, "the interrupted status")
    gate.open.set()


async def test_what_keeps_a_run_from_starting_reaches_its_follower(app):
    live = LiveRuns(app.runner)
    with pytest.raises(TaskError):
        [e async for e in live.start("rat", Task("   "))]
    assert live.running() == []


async def test_stop_all_leaves_every_run_interrupted(app, llm):
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner, limit=1)
    one, two = live.start("rat", TASK), live.start("rat", Task("Another task about Python 3 and pip."))
    run_id = (await first(one, RunStarted))[0].run_id
    await first(two, Queued)
    await wait_for(gate.held.is_set, "the first revision")
    await live.stop_all()
    gate.open.set()
    assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED
    assert [r.id for r in app.store.list_runs()] == [run_id], "the waiting run never started"


async def test_stop_on_the_page_of_a_queued_run_takes_it_out_of_the_line(app, llm):
    import gradio as gr

    from ui.runview import RunView
    from ui.writer import RunPanel

    live = LiveRuns(app.runner, limit=1)
    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients, live=live)
        panel.layout()
    gate, one, _, two, waiting = await one_going_one_waiting(live, llm)
    view = RunView()
    for event in waiting:
        view.apply(event)
    runs_before = len(app.store.list_runs(limit=100))
    shown = await panel.on_stop(view)
    assert "Stopped before it started" in shown[panel.progress]
    assert [e async for e in two] == [] and len(app.store.list_runs(limit=100)) == runs_before
    gate.open.set()
    assert isinstance([e async for e in one][-1], Final)


async def test_the_starting_follower_and_a_late_one_see_the_same_times_so_their_clocks_agree(app, llm):
    """The Writer that started a run and another that joined it (a reload, Open, Present) time it
    from the same start: their elapsed times agree (one said 0:40, then the other 0:39)."""
    from ui import run_html
    from ui.runview import RunView

    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner)
    starting = live.start("rat", TASK, timed=True)
    first_seen = [t async for t in _until(starting, RunStarted)]
    assert all(isinstance(t, Timed) for t in first_seen)
    run_id = first_seen[-1].item.run_id
    await wait_for(gate.held.is_set, "the first revision")
    late = live.follow(run_id, timed=True)
    late_seen = [t async for t in _until(late, RunStarted)]
    assert late_seen[-1].at == first_seen[-1].at, "one start for every follower"
    views = [RunView(), RunView()]
    for view, seen in zip(views, (first_seen, late_seen), strict=True):
        for t in seen:
            view.apply(t.item, t.at)
    now = first_seen[-1].at + 40.4
    assert run_html.timing(views[0], now=now) == run_html.timing(views[1], now=now) == "0:40 elapsed"
    gate.open.set()
    await starting.aclose()
    await late.aclose()
    await wait_for(lambda: not live.is_live(run_id), "the run's end")


async def _until(events, kind):
    async for t in events:
        yield t
        if isinstance(t.item, kind):
            return


async def test_a_follower_that_fell_behind_is_told_which_events_were_already_waiting(app, llm):
    """Issue 41, item 1: a page busy showing one event finds the next ones waiting; each comes with
    ``more`` while another waits behind it, so the page shows them all in one rendering."""
    gate = Gate()
    llm.reply(gate)
    live = LiveRuns(app.runner)
    following = live.start("rat", TASK, timed=True)
    await anext(following)  # the run has started; this follower reads nothing more for a while
    await wait_for(gate.held.is_set, "the first revision")
    await asyncio.sleep(0.3)
    backlog = []
    while not backlog or backlog[-1].more:
        backlog.append(await asyncio.wait_for(anext(following), WAIT))
    assert len(backlog) >= 3 and all(t.more for t in backlog[:-1]) and not backlog[-1].more
    assert any(isinstance(t.item, DraftReady) for t in backlog), "what the run did while the follower was away"
    gate.open.set()
    rest = [t async for t in following]
    assert isinstance(rest[-1].item, Final) and not rest[-1].more
