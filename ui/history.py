"""The History tab: past runs (task, method, date, status, tokens, time); opening one shows it
with the Writer's own panel, from its stored events: its article with its [n] marks (each opens on
the passage that supports its sentence) and sentences no source supports underlined, the counts
("7 of 9 sentences cited", from the stored ``Final``; nothing for runs stored before citations)
in its status line, and Markdown and .docx exports. Replay plays those events again at a chosen
speed, for a live demo, with pause, step back and forward (between the draft and each step's
revision) and a position to seek (``ui.presenting``; in presentation mode Space, ← and → press
them); a run that stopped (draft only, interrupted, failed) continues from here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from functools import partial

import gradio as gr

from common.errors import RatStudioError
from common.events import Event
from core.clients import Clients
from core.live import LiveRuns
from core.runner import Runner
from ui import presenting, runs_table, runview
from ui.listeners import PRIVATE, STREAM
from ui.runview import RunView
from ui.writer import RunPanel, stop_running

LIMIT = 300  # runs listed
MAX_GAP = 2.0  # longest pause of a replay at 1x, in seconds
NO_RUNS = ("No runs yet: start one in the **Writer** tab (or from the command line: `python app.py run \"TASK\"`); "
           "it is listed here as it goes.")
REPLAY = {**PRIVATE, "show_progress": "hidden"}
NO_REPLAY = "Press Replay first: Step back, Step forward and the Replay position move through the run replayed."


async def timed(schedule: Sequence[tuple[float, Event]]) -> AsyncIterator[Event]:
    """The events of a replay schedule, each after its wait."""
    for delay, event in schedule:
        if delay > 0:
            await asyncio.sleep(delay)
        yield event


class HistoryTab:
    def __init__(self, runner: Runner, live: LiveRuns, store, clients: Clients):
        self.store = store
        self.panel = RunPanel(runner, store, clients, live=live,
                              hint="Pick a run in the table above to see it, replay it or continue it.")

    def layout(self) -> None:
        with gr.Row(equal_height=True):
            self.run_id = gr.Textbox(label="Run", placeholder="click a run in the table, or paste its id", scale=3,
                                     max_length=64, elem_classes="rat-run-id")
            self.open_btn = gr.Button("Open", scale=0)
            self.refresh_btn = gr.Button("Refresh list", scale=0)
        self.table = gr.Dataframe(headers=runs_table.HISTORY_HEADERS, interactive=False, wrap=True, max_height=320,
                                  elem_classes="rat-history")
        self.empty = gr.Markdown(NO_RUNS, visible=False, elem_classes="rat-note")
        with gr.Row(equal_height=True):
            self.speed = gr.Slider(0.5, 10, value=2, step=0.5, label="Replay speed (×)", scale=3,
                                   elem_classes="rat-replay-speed",
                                   info=f"Pauses longer than {MAX_GAP:g} s are shortened to {MAX_GAP:g} s.")
            self.replay_btn = gr.Button("Replay", variant="primary", scale=1)
            self.stop_btn = gr.Button("Stop", variant="stop", scale=1)
        self.replaying = gr.State("")  # the run whose replay the controls move through
        with gr.Row(equal_height=True, elem_classes=presenting.CONTROLS_CLASS):
            self.back_btn = gr.Button("◀ Step back", scale=0, min_width=150, elem_id=presenting.BACK_ID)
            self.play_btn = gr.Button("▶ Play", scale=0, min_width=110, elem_id=presenting.PLAY_ID)
            self.pause_btn = gr.Button("⏸ Pause", scale=0, min_width=110, visible=False, elem_id=presenting.PAUSE_ID)
            self.forward_btn = gr.Button("Step forward ▶", scale=0, min_width=180, elem_id=presenting.FORWARD_ID)
            self.position = gr.Slider(0, 1, value=0, step=1, label="Replay position (events shown)", scale=4,
                                      elem_classes="rat-replay-position")
        self.panel.layout()

    def wire(self) -> None:
        panel = self.panel
        gr.on(None, self.rows, inputs=None, outputs=[self.table, self.empty], **PRIVATE)
        self.refresh_btn.click(self.rows, None, [self.table, self.empty], **PRIVATE)
        streamed = panel.stream_outputs()  # (what a stream names: RunPanel.stream_outputs)
        panel.settles(self.table.select(self.on_select, None, [self.run_id, *streamed], **STREAM))
        panel.settles(gr.on([self.open_btn.click, self.run_id.submit], self.on_open, self.run_id, streamed,
                            **STREAM))
        shown = [*panel.outputs(), *self.controls()]
        replay = self.replay_btn.click(self.on_replay, [self.run_id, self.speed], [*streamed, *self.controls()],
                                       **REPLAY)
        play = self.play_btn.click(self.on_play, [self.run_id, self.replaying, self.position, self.speed],
                                   [*streamed, *self.controls()], **REPLAY)
        playing = [replay, play]
        for played in playing:  # played to its end: the whole run, with its article
            panel.settles(played, inputs=self.replaying, outputs=shown, fn=self.played)
        at = [self.replaying, self.position]
        # each cancels the replay playing now (its own listener, bound first: see stop_running)
        moves = ((self.pause_btn.click, self.frame_at), (self.position.input, self.seek),
                 (self.back_btn.click, partial(self.on_step, -1)), (self.forward_btn.click, partial(self.on_step, 1)))
        for trigger, handler in moves:
            trigger(None, None, None, cancels=playing, **PRIVATE)
            # a position typed digit by digit: each seek runs after the one before, the last typed last
            last = {"trigger_mode": "always_last"} if handler == self.seek else {}
            trigger(handler, at, shown, **last, **REPLAY)
        cont = panel.wire()
        stop_running(self.stop_btn, panel, [*playing, cont])

    def refresh_on(self, trigger) -> None:
        """Also refresh the list on ``trigger`` (e.g. the tab's select event)."""
        trigger(self.rows, None, [self.table, self.empty], **PRIVATE)

    # -- handlers ---------------------------------------------------------------------------------
    def rows(self) -> dict:
        """The runs, newest first; with none, the line that says where runs come from."""
        self.store.interrupt_orphans()  # a run whose process died shows as interrupted, with Continue
        runs = self.store.list_runs(limit=LIMIT)
        return {self.table: {"headers": runs_table.HISTORY_HEADERS, "data": runs_table.history_rows(runs)},
                self.empty: gr.Markdown(visible=not runs)}

    def view_of(self, run_id: str) -> RunView:
        """A stored run's view. Raises gr.Error for an unknown id."""
        run_id = (run_id or "").strip()
        if not run_id:
            raise gr.Error("Pick a run in the table first.")
        try:
            run_id = self.store.resolve_run_id(run_id)  # a unique prefix of its id will do
            run = self.store.get_run(run_id)
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        view = runview.fold(self.store.events(run_id))
        view.run_id, view.method, view.task = run_id, run.method, run.task
        return view

    async def on_open(self, run_id: str, page: gr.Request | None = None):
        """The run as stored, or live when it is going on."""
        view = self.view_of(run_id)
        async for update in self.panel.open(view.run_id, view, page):
            yield update

    async def on_select(self, evt: gr.SelectData, page: gr.Request | None = None):
        row = evt.row_value or []
        if not row:
            yield {self.run_id: gr.skip()}  # yielding nothing would blank the panel; {} is read as a value
            return
        run_id = str(row[0])
        async for update in self.on_open(run_id, page):
            yield {self.run_id: run_id, **update}

    # -- replay -----------------------------------------------------------------------------------
    def controls(self) -> list:
        return [self.replaying, self.position, self.play_btn, self.pause_btn]

    def control_values(self, run_id: str, position: int, total: int, *, playing: bool) -> dict:
        return {self.replaying: run_id, self.position: gr.Slider(maximum=max(total, 1), value=position),
                self.play_btn: gr.Button(visible=not playing), self.pause_btn: gr.Button(visible=playing)}

    async def on_replay(self, run_id: str, speed: float, page: gr.Request | None = None):
        """Replay the run from its start."""
        view = self.view_of(run_id)  # checks the id
        async for update in self.play(view.run_id, 0, speed, page):
            yield update

    async def on_play(self, run_id: str, replaying: str, position: float, speed: float,
                      page: gr.Request | None = None):
        """Play on from where the replay stands (from the start for another run, or at its end)."""
        view = self.view_of(run_id or replaying)  # checks the id
        start = int(position or 0) if view.run_id == replaying else 0
        async for update in self.play(view.run_id, start, speed, page):
            yield update

    async def play(self, run_id: str, start: int, speed: float, page: gr.Request | None = None):
        """The run's events from ``start`` on, paced as they happened (``runview.replay_schedule``),
        after the run as it stood at ``start``; the position moves with them."""
        store = self.store
        events = store.events(run_id)
        start = 0 if start >= len(events) else max(start, 0)
        stamps = [row.ts for row in store.event_rows(run_id)]
        schedule = runview.replay_schedule(events[start:], stamps[start:], speed=float(speed or 1), max_gap=MAX_GAP)
        view = runview.fold(events[:start])
        view.replayed = True
        yield self.control_values(run_id, start, len(events), playing=True)
        async for update in self.panel.follow(timed(schedule), view, live=False, page=page):
            yield {**update, self.position: len(view.events)}

    def played(self, run_id: str) -> dict:
        """A replay played to its end (``RunPanel.settles``): the run as stored, its article shown,
        the position at the end."""
        view = self.view_of(run_id)
        total = len(view.events)
        return {**self.panel.settle(view), **self.control_values(run_id, total, total, playing=False)}

    def frame_at(self, run_id: str, position: float) -> dict:
        """The replayed run as it stood after its first ``position`` events, shown at once
        (the whole run, with its article, at the end): pause and seek. Raises gr.Error when
        there is no replay."""
        if not run_id:
            raise gr.Error(NO_REPLAY)
        events = self.store.events(run_id)
        position = min(max(int(position or 0), 0), len(events))
        view = runview.fold(events[:position])
        view.replayed = True
        shown = self.panel.settle(self.view_of(run_id)) if position == len(events) else self.panel.frame(view)
        return {**shown, **self.control_values(run_id, position, len(events), playing=False)}

    def seek(self, run_id: str, position: float) -> dict:
        """``frame_at`` for a position the user moves or types: the position box keeps what they
        typed (writing back the seek of "3" while they typed "35" undid their typing)."""
        shown = self.frame_at(run_id, position)
        total = len(self.store.events(run_id))
        return {**shown, self.position: gr.Slider(maximum=max(total, 1))}

    def on_step(self, direction: int, run_id: str, position: float) -> dict:
        """To the previous (``direction`` -1) or next (+1) stop: the draft, each step's revision."""
        if not run_id:
            raise gr.Error(NO_REPLAY)
        stops = presenting.marks(self.store.events(run_id))
        return self.frame_at(run_id, presenting.step(stops, int(position or 0), direction))


def build(runner: Runner, live: LiveRuns, store, clients: Clients) -> HistoryTab:
    """Create the History tab's components inside the caller's ``gr.Tab``/``gr.Blocks`` context."""
    tab = HistoryTab(runner, live, store, clients)
    tab.layout()
    tab.wire()
    return tab
