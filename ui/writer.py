"""The Writer tab: a task, a method and a search provider; the run shown live as it happens (the
draft on the left, each step's query, pages, passages and revision on the right); the author
edits the draft's steps before revision ("Draft only", then Continue), undoes revisions, edits the
article, sees each sentence's sources (a [n] opens on the passage that supports it; a sentence no
source supports is underlined) and exports it as Markdown or Word with its marks and sources.

``RunPanel`` is the view of one run and what an author does with it. The History tab uses the
same panel for stored and replayed runs, so every run is shown by the same code. Rendering is
done by the pure functions of ``ui.run_html`` and ``ui.article_view`` over a ``ui.runview.RunView``;
the handlers here only read inputs, call core and hand the panel's components their new values.
Per-browser state is the panel's ``gr.State`` (a ``RunView``); nothing about a run is kept in
module globals.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import aclosing

import gradio as gr
from gradio.context import Context

from common.errors import EditConflict, RatStudioError
from common.events import Event, Failed, TokenDelta
from common.settings import Settings
from common.types import Task
from core.article.attribution import Attribution
from core.article.sources import SourceBook
from core.authoring import NO_EDIT, Authoring, Edit, Shown
from core.budget import run_cost
from core.clients import Clients
from core.live import CaughtUp, LiveRuns, Timed
from core.methods import METHODS, get_method
from core.methods.base import AUTHOR_INSTRUCTION_CHARS
from core.runner import Runner
from data.store import RunRow
from data.versions import LATEST, MODEL, Versions
from ui import presenting, run_html, runview, share_view, step_actions
from ui.article_panel import ArticlePanel
from ui.controls import control, for_browser
from ui.draft_editor import DraftEditor
from ui.listeners import PRIVATE, SETTLE, STREAM
from ui.run_inputs import CHAIN, llm_check, providers_for, require_llm, search_choices
from ui.run_settings import RunSettings
from ui.runview import ALL_PANELS, DRAFT, PROGRESS, STEPS, RunView
from ui.step_acting import StepActing

TOKEN_INTERVAL = 0.1  # seconds between renders caused by streamed tokens alone (~10 a second)
#: How the draft and the steps are drawn: their value is a list of fragments (``run_html.draft_parts``,
#: ``steps_parts``), joined in the browser. A stream's outputs go as edits of the last value sent
#: (``gradio.utils.diff``): of a list, the items that changed; of a fragment that grew, what it gained.
JOINED = "${Array.isArray(value) ? value.join('') : (value ?? '')}"
STOP_WAIT = 3.0  # seconds Stop waits for the cancelled run to record its status
OPEN_LATEST = 8  # runs going on or stopped that the Writer offers to open


# -- helpers (no gradio state) --------------------------------------------------------------------
class Hold:
    """A stream's hold on a page's panel (``RunPanel.shows``): taken as it starts, lost when a
    newer one takes the panel. The view the stream shows carries it (``RunView.hold``), so the
    settling event after the stream can tell that it came too late."""

    def __init__(self, holders: dict | None, key: object) -> None:
        """``holders`` None: a page of its own (a handler called directly), held for good."""
        self.holders, self.key, self.token = holders, key, object()
        if holders is not None:
            holders[key] = self.token

    def __bool__(self) -> bool:
        return self.holders is None or self.holders.get(self.key) is self.token

    def check(self) -> None:
        """Raises an error the page does not show (and that starts no settling event) once a newer
        stream has the panel."""
        if not self:
            raise gr.Error("A newer stream shows in this panel.", visible=False, print_exception=False)


SERVED_SHOWN = 6  # served models named in the model line
DEFAULT_METHOD = "rat-step"  # the Writer's first choice: made for long articles (DEFAULT_WHY)
DEFAULT_WHY = ("rat-step is the default for long articles: it revises one paragraph at a time, so long articles "
               "stay fast; rat rewrites the whole answer at each step.")
SHORT = {  # a method's few words in the Method list (its description is shown under the list)
    "rat": "rewrites the whole answer each step",
    "rat-step": "one paragraph at a time, for long articles",
    "direct": "answers with no retrieval",
    "cot": "chain of thought, no retrieval",
    "rag-1": "answers from the top result",
    "rag-5": "answers from the top 5 results",
    "rat-noncausal": "every query from the first draft",
    "cot-rag": "one search for the whole draft",
    "itrg-refine": "rounds of search, refining the answer",
    "itrg-refresh": "rounds of search, writing anew",
    "aag": "outline, procedures, critic loop",
    "aag-nosum": "AAG without summaries",
    "aag-nocr": "AAG without the critic loop",
    "aag-noqr": "AAG without query rewriting",
    "furepa": "voted plans, scored queries",
}
SHORT_CHARS = 38  # a description cut to a few words, for a method SHORT does not name


def short_description(name: str, description: str) -> str:
    """A method's few words: SHORT's, else the first clause of its description after "NAME: "."""
    if name in SHORT:
        return SHORT[name]
    head, sep, rest = description.partition(": ")
    text = re.split(r"[,;(]", rest if sep else description)[0].strip()
    return text if len(text) <= SHORT_CHARS else text[:SHORT_CHARS].rsplit(" ", 1)[0] + "…"


def default_method() -> str | None:
    return DEFAULT_METHOD if DEFAULT_METHOD in METHODS else next(iter(METHODS), None)


def method_choices() -> list[tuple[str, str]]:
    """("name — a few words", name) for each method: short enough for the list's width."""
    return [(f"{m.name} — {short_description(m.name, m.description)}", m.name) for m in METHODS.values()]


def method_info(name: str) -> str:
    """The method's description and paper, shown under the Method list (and, for rat and the
    default, why the default is what it is)."""
    try:
        info = get_method(name)
    except RatStudioError:
        return ""
    search = "" if info.uses_search else " Does not search."
    why = f"<br>{html.escape(DEFAULT_WHY)}" if name in ("rat", DEFAULT_METHOD) else ""
    return (f"<div class='rat-note'>{html.escape(info.description)}. Paper: {html.escape(info.paper)}.{search}"
            f"{why}</div>")


def model_html(settings: Settings, problem: str | None = None, served: Sequence[str] = ()) -> str:
    llm = settings.llm
    roles = ", ".join(f"{r}: {m}" for r, m in llm.role_models.items())
    where = llm.base_url or "https://api.openai.com/v1"
    head = (f"<b>Model:</b> <code>{html.escape(llm.model)}</code>" + (f" ({html.escape(roles)})" if roles else "")
            + f" at <code>{html.escape(where)}</code>")
    if problem is None:
        state = "<span class='rat-note'>checking the model server…</span>"
    elif problem:
        state = f"<span class='rat-error'>⚠ {html.escape(problem)}</span>"
    elif served and llm.model not in served:
        listed = ", ".join(served[:SERVED_SHOWN]) + (", …" if len(served) > SERVED_SHOWN else "")
        state = (f"<span class='rat-note rat-warning'>The server answers but does not list "
                 f"{html.escape(llm.model)} (it may still accept it); it lists {html.escape(listed)}: pick one "
                 f"under {html.escape(control('--model'))}.</span>")
    else:
        state = "<span class='rat-note'>✓ the model server answers</span>"
    return f"<div class='rat-model'>{head}<br>{state}</div>"


# -- the run panel --------------------------------------------------------------------------------
def whole(panels: dict, out: dict) -> dict:
    """A stream's update ``out`` with every panel of ``panels`` (the last sent of each, kept up to
    date here): Gradio sends an output as edits of the last value it sent, and one left out of an
    update counts as a value, so the next update of it went whole (the steps panel, every token)."""
    panels.update((c, out[c]) for c in panels if c in out)
    return {**out, **panels}


class RunPanel:
    """The view of one run (live, stored or replayed): its progress, draft and step cards, and
    Stop, each followed as the run goes on (``follow``) and settled after; the draft of a run that
    can go on, and Continue (``DraftEditor``); the step actions done in it (``StepActing``); and,
    once it is done, its article (``ArticlePanel``: boxes, text, sources, versions, output)."""

    def __init__(self, runner: Runner, store, clients: Clients, *, live: LiveRuns | None = None, hint: str = ""):
        """``live``: the server's runs, which the panel continues and follows (one for the whole
        app, so --concurrency bounds them all; a panel of its own without it)."""
        self.runner, self.store, self.clients = runner, store, clients
        self.live = live or LiveRuns(runner, limit=runner.settings.concurrency)
        self.versions = Versions(store)
        self.authoring = Authoring(store, runner.settings.method.cite_threshold)  # every version made and read
        self.hint = hint
        self.act_id = step_actions.panel_id()  # its step actions' hidden components (ui/step_actions.py)
        # the article, once the run is done; cited as the runner cites a run's Final
        self.text = ArticlePanel(store, self.authoring, runner.settings.method.cite_threshold,
                                 box_id=f"{self.act_id}-article")
        self.acting = StepActing(self)  # the step actions: done again, one at a time, each saved as a version
        self.drafting = DraftEditor(self)  # the draft of a run that can go on, and Continue
        self._shown: dict[str, object] = {}  # page -> the stream its panel shows now (``shows``; until it goes)
        self.stop: gr.Button | None = None  # the tab's Stop, when it has one: enabled only while a run goes on
        self.budget: gr.Number | None = None  # the tab's Token budget, when it has one: Continue's new budget

    def layout(self) -> None:
        empty = RunView()
        self.state = gr.State(None)  # this browser's RunView
        Context.root_block.unload(self.page_gone)
        first = run_html.progress_html(empty)
        if self.hint:
            first = f"<div class='rat-progress'>{html.escape(self.hint)}</div>"
        self.progress = gr.HTML(first, js_on_load=None)
        # the work in view (ui/presenting.py): following the active step, and presentation mode
        with gr.Row(equal_height=True, elem_classes="rat-view-bar"):
            self.follow_box = gr.Checkbox(True, label="Follow the active step", container=False, scale=0,
                                          interactive=True, min_width=230, elem_classes=presenting.FOLLOW_CLASS)
            self.present_btn = gr.Button("Present", size="sm", scale=0, min_width=110,
                                         elem_classes=presenting.PRESENT_CLASS)
        gr.on(None, None, js=presenting.PANEL_JS, **PRIVATE)  # on page load, in the browser only (once a page)
        with gr.Row(equal_height=False):
            with gr.Column(scale=2, min_width=300):
                gr.Markdown("#### Draft")
                self.draft = gr.HTML(run_html.draft_parts(empty), html_template=JOINED, js_on_load=None,
                                     elem_classes="rat-draft-panel")
            with gr.Column(scale=3, min_width=360):
                gr.Markdown("#### Search and revision, step by step")
                self.steps = gr.HTML(run_html.steps_parts(empty), html_template=JOINED, js_on_load=None,
                                     elem_classes="rat-steps-panel")
        self.drafting.layout()
        # the command the step cards send (ui/step_actions.py), outside the result box: a stream hides
        # that box, and a second action asked while the first one's stream began found no box to send by
        self.act_cmd = gr.Textbox(visible="hidden", elem_id=f"{self.act_id}-cmd", label="Step action",
                                  elem_classes="rat-act-hidden")
        self.act_go = gr.Button("Do the step action", visible="hidden", elem_id=f"{self.act_id}-go",
                                elem_classes="rat-act-hidden")
        with gr.Column(visible=False) as self.result_box:
            # the step cards' actions: the row that asks for the author's query, and what they do
            self.act_glue = gr.HTML(step_actions.glue_html(self.act_id), js_on_load=step_actions.GLUE_JS,
                                    elem_classes="rat-act-glue")
            gr.Markdown("#### Article")
            # the author's one instruction for every step (rat, rat-step: ``step_actions.offered``)
            with gr.Row(equal_height=True, visible=False, elem_classes="rat-revise-all") as self.all_row:
                self.all_text = gr.Textbox(label="Revise the whole article as I say", scale=4,
                                           placeholder="more formal, and one sentence shorter each",
                                           max_length=AUTHOR_INSTRUCTION_CHARS,
                                           info="Every step is revised again with this, beside its own passages; "
                                                "the article is saved as a new version.")
                self.all_btn = gr.Button("Revise the whole article", scale=1)
            self.text.layout()
            self.share = share_view.ShareBox(self.store, self.authoring)  # a read-only link (ui/share_view.py)
            self.share.layout()
            self.share.wire(self.state, self.text.version_pick)

    def outputs(self) -> list:
        return [self.state, self.progress, self.draft, self.steps, *self.drafting.parts(),
                self.result_box, self.all_row, *self.text.parts(),
                *([self.stop] if self.stop is not None else [])]

    def stream_outputs(self) -> list:
        """What a stream that follows a run updates (``follow``): the view and its three panels,
        the editor's and the article's boxes (hidden while it goes on) and Stop; the rest is set
        as it settles (``settles``). Each output an update leaves out costs Gradio a component
        built anew (its gr.skip() is read as a change of none of its props): with the panel's 27
        outputs a render took 7.4 ms of the server's CPU, with these 7 under 1 ms (issue 41)."""
        return [self.state, self.progress, self.draft, self.steps, self.drafting.box, self.result_box,
                *([self.stop] if self.stop is not None else [])]

    def wire(self):
        """Bind the panel's own events; returns the Continue event (for a Stop button's cancels)."""
        cont = self.drafting.wire()
        a = self.text
        for box in (a.undo, a.take):  # the article and the step cards
            box.input(self.on_undo, [self.state, a.undo, a.take], [self.progress, self.steps, *a.parts()], **PRIVATE)
        a.version_pick.input(self.on_view_version, [self.state, a.version_pick], self.outputs(), **PRIVATE)
        a.restore_btn.click(self.on_restore, [self.state, a.version_pick], self.outputs(), **PRIVATE)
        a.wire(self.state)
        # "multiple": an action asked while another runs is sent, and waits on the server for its turn
        acted = self.act_go.click(self.acting.on_step_action, [self.state, self.act_cmd, a.undo, a.take],
                                  self.stream_outputs(), trigger_mode="multiple", **STREAM)
        self.settles(acted)
        asked = gr.on([self.all_btn.click, self.all_text.submit], self.acting.on_revise_all,
                      [self.state, self.all_text, a.undo, a.take], self.stream_outputs(), trigger_mode="multiple",
                      **STREAM)
        self.settles(asked)
        return cont

    # -- rendering --------------------------------------------------------------------------------
    def render(self, view: RunView, panels: Iterable[str], status: str = "", *, state: bool = True,
               cost: float | None = None) -> dict:
        """``panels`` of ``view``, and (``state``) the view as the page's state; ``cost``: the
        run's, in dollars (``cost``), for its progress line."""
        panels = set(panels)
        out: dict = {self.state: view} if state else {}
        if PROGRESS in panels:
            out[self.progress] = run_html.progress_html(view, status, cost=cost)
        if DRAFT in panels:
            out[self.draft] = run_html.draft_parts(view)
        if STEPS in panels:  # (no step actions on a frame: their buttons work once the panel settles)
            out[self.steps] = self.steps_out(view, actions=False)
        return out

    def row(self, view: RunView) -> RunRow | None:
        """The run's stored row (None for a page with no run, or a run not stored)."""
        if not view.run_id:
            return None
        try:
            return self.store.get_run(view.run_id)
        except RatStudioError:
            return None

    def status(self, view: RunView) -> str:
        row = self.row(view)
        return row.status if row is not None else ""

    def cost(self, row: RunRow | None) -> float | None:
        """The run's cost in dollars so far, by the server's --prices (None without them, or for a
        model they do not price)."""
        prices = self.runner.settings.prices
        return run_cost(prices, row.tokens_by_role, row.settings) if prices and row is not None else None

    def settle(self, view: RunView, shown_version: int | None = None) -> dict:
        """Every component, for a run that is not streaming: the editor when it can go on, the
        article when it is done."""
        row = self.row(view)
        status = row.status if row is not None else ""
        out = self.render(view, ALL_PANELS, status, state=False,  # (the state is set by the streams only)
                          cost=self.cost(row))
        out.update(self.drafting.settled(view, status))
        done = view.final is not None
        out[self.result_box] = gr.Column(visible=done)
        out[self.all_row] = gr.Row(visible=step_actions.offered(view))
        # the author's latest version (``shown_version`` None), the model's text (0), or version N
        shown = None
        if done and view.run_id:
            self.text.flush_save(view.run_id)
            which = LATEST if shown_version is None else MODEL if shown_version == 0 else shown_version
            shown = self.authoring.shown(view.run_id, which)
        if shown is not None:
            out.update(self.shown_outputs(view, shown, row))
        else:
            out.update(self.text.unfinished(view))
        out[self.text.notes] = view.export_notes
        if self.stop is not None:  # Stop is for a run going on (another tab's, or this one's after a reload)
            out[self.stop] = gr.Button(interactive=bool(view.run_id) and self.live.is_live(view.run_id))
        return out

    def shown_outputs(self, view: RunView, shown: Shown, row: RunRow | None = None) -> dict:
        """A stored version (or the model's text) as it reads: the article, and the progress line
        and step cards that go with it (its marks numbered as the article numbers them); ``row``:
        the run's, when the caller has read it."""
        row = row or self.row(view)
        return {self.progress: run_html.progress_html(view, row.status if row is not None else "", shown=shown.cited,
                                                      unchecked=shown.article.unchecked, cost=self.cost(row)),
                self.steps: self.steps_out(view, shown.edit, shown), **self.text.shown(view, shown)}

    def frame(self, view: RunView, *, downloads: bool = True) -> dict:
        """The run as far as ``view`` goes, with no editor and no article: a run being followed
        (``downloads`` False: of ``stream_outputs`` only), or a replay's frame (paused, stepped,
        sought)."""
        out = self.render(view, ALL_PANELS)
        out.update({self.drafting.box: gr.Group(visible=False), self.result_box: gr.Column(visible=False),
                    **(self.text._downloads_off(visible=False) if downloads else {})})
        if self.stop is not None:
            out[self.stop] = gr.Button(interactive=True)
        return out

    def shows(self, page: gr.Request | None, view: RunView) -> Hold:
        """``view`` is now what ``page``'s panel shows: one panel, one run, the one asked for last
        (a stream, or a stored run opened). A stream a newer one replaced went on yielding into the
        same panel before, and its settling event, finished late, put its run back: a run continued
        in History, then another opened, and the first one's view came back over the second's (its
        Continue gone). ``page`` None (a handler called directly): a page of its own."""
        key = page.session_hash if page is not None else None
        view.hold = Hold(self._shown if key else None, key)
        return view.hold

    def page_gone(self, page: gr.Request) -> None:
        """The page was closed: no stream shows in it any more."""
        self._shown.pop(page.session_hash, None)

    async def follow(self, events: AsyncIterator[Event | Timed], view: RunView, *,
                     live: bool = True, page: gr.Request | None = None) -> AsyncIterator[dict]:
        """Render a stream of events into this panel as they arrive: streamed tokens at most
        every TOKEN_INTERVAL seconds, anything else at once (the settled panel comes after, from
        ``settles``). A live run's failure is also shown as a warning. ``live``: a run's own
        events (``LiveRuns``, timed), which begin with what it did before this page joined it:
        folded in as one rendering at its ``CaughtUp`` (a reload of a long run rendered each of its
        events in turn, and warned again of failures long resumed). Events that were already
        waiting when one came (``Timed.more``: this page fell behind the run) are shown with the
        last of them, in one rendering: under load the batches grow, not the backlog.

        The view is the page's state from the first update on (the later ones change it in place
        and leave the state out; nothing else sets it), and the stream stops once a newer one has
        the panel (``shows``): it ends in an error no one sees, so no settling event follows it;
        the run goes on, on the server."""
        hold = self.shows(page, view)
        try:
            first = self.frame(view, downloads=False)
            panels = {c: first[c] for c in (self.progress, self.draft, self.steps)}
            yield first
            dirty: set[str] = set()
            last, urgent = 0.0, False  # urgent: an event other than a streamed token waits to be shown
            catching_up = live
            async with aclosing(events):
                async for item in events:  # (a run joined late comes Timed: its times are its own)
                    event, at = (item.item, item.at) if isinstance(item, Timed) else (item, None)
                    dirty |= view.apply(event, at)
                    urgent = urgent or not isinstance(event, TokenDelta)
                    catching_up = catching_up and not isinstance(event, CaughtUp)
                    hold.check()
                    if catching_up:
                        continue
                    if live and isinstance(event, Failed):
                        gr.Warning(for_browser(f"The run stopped: {event.error}"), title="Run failed")
                    if isinstance(item, Timed) and item.more:  # fallen behind the run: shown with what waits
                        continue
                    now = time.monotonic()
                    if dirty and (urgent or now - last >= TOKEN_INTERVAL):
                        yield whole(panels, self.render(view, dirty, state=False))
                        dirty, last, urgent = set(), now, False
                    elif not dirty:  # nothing of it shows
                        urgent = False
            hold.check()
            if dirty:
                yield whole(panels, self.render(view, dirty, state=False))
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc

    def settles(self, stream, *, inputs=None, outputs=None, fn=None):
        """After ``stream`` (an event that follows a run) ends, the settled panel, as an event of
        its own (``on_settled``, or ``fn``). A stream's last update must hold nothing a person
        edits: when a stream ends, Gradio sends its last update again, whole, and under load that
        came after the author had acted (a typed edit, a ticked box) and put the old value back.
        So the streams here yield the run's frames and the view, and the values an author edits
        (the article, the boxes, the draft) come from this event, which only starts once the
        stream's end has reached the page."""
        return stream.success(fn or self.on_settled, inputs if inputs is not None else self.state,
                              outputs if outputs is not None else self.outputs(), **SETTLE)

    def on_settled(self, view: RunView | None) -> dict:
        """The settled panel of the run a stream followed; nothing for a page with no run, or once
        a newer stream shows in the panel (it settles in its turn: asked again after the settle is
        made, which may have taken a while)."""
        if view is None or not view.run_id or not view.shown_here:
            return {self.state: gr.skip()}
        out = self.settle(view)
        return out if view.shown_here else {self.state: gr.skip()}

    # -- handlers ---------------------------------------------------------------------------------
    async def open(self, run_id: str, view: RunView | None = None, page: gr.Request | None = None):
        """Show a run in ``page``'s panel: live when it is going on (what it did so far, then each
        event as it happens), else as stored."""
        if self.live.is_live(run_id):
            async for update in self.follow(self.live.follow(run_id, timed=True), RunView(), page=page):
                yield update
        else:  # shown whole by the settling event after the stream (``settles``)
            view = view or runview.fold(self.store.events(run_id))
            self.shows(page, view)  # (a stream that showed another run stops)
            yield {self.state: view}

    async def on_stop(self, view: RunView | None) -> dict:
        """Stop the run (it goes on on the server until then, whoever follows it), then show it
        as stored (the runner records "interrupted" as it stops)."""
        if view is not None and not view.run_id and view.queued is not None:  # it was waiting for a place
            started = self.live.stop_launched(view.queued.ticket)
            if not started:  # it never starts; nothing was stored
                return {self.progress: "<div class='rat-progress'>Stopped before it started: nothing was stored.</div>"}
            view = RunView(run_id=started)
        if view is None or not view.run_id:
            return {self.progress: gr.skip()}
        self.live.stop(view.run_id)
        deadline = time.monotonic() + STOP_WAIT
        while self.status(view) == "running" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stored = runview.fold(self.store.events(view.run_id))
        stored.hold = view.hold
        return {self.state: stored, **self.settle(stored)}

    def steps_out(self, view: RunView, edit: Edit = NO_EDIT, shown: Shown | None = None, *,
                  actions: bool = True) -> list[str]:
        """The step cards (as fragments: ``JOINED``), with the actions of a finished rat or rat-step
        run (``ui.step_actions``); with the version ``shown``, the marks in their revisions numbered
        as that article numbers the pages (a presenter's card said [9] of the page the article
        calls [4])."""
        buttons = step_actions.card_actions(view, edit, panel=self.act_id) if actions else None
        marks = None
        if shown is not None:
            order = Attribution(shown.cited).order()
            labels = SourceBook.from_events(view.events).numbers()  # what the model was shown: its marks' meaning
            marks = {label: order[url] for url, label in labels.items() if url in order}
        return run_html.steps_parts(view, edit, actions=buttons, marks=marks)

    async def on_undo(self, view: RunView | None, chosen: list[int], taken: list[int] | None = None) -> dict:
        """Undo or take revisions: the article is rebuilt, and the boxes show what the mode's
        rules made of the choice (in cumulative mode, everything after the first step chosen)."""
        if view is not None and view.run_id and view.final is None:  # a box ticked as the run's end was
            view = runview.fold(self.store.events(view.run_id))       # shown: the state may not have it yet
        if view is None or view.final is None:  # no version to make yet
            gr.Warning("The run is still finishing: tick the box again once it says Done.")
            return {self.text.undo: gr.CheckboxGroup(value=[]), self.text.take: gr.CheckboxGroup(value=[])}
        self.text.flush_save(view.run_id)  # the text being typed is kept first, as its own version
        try:
            version = self.authoring.choose(view.run_id, chosen or [], taken or [])
        except EditConflict as exc:  # nothing changed: the boxes go back to the latest version
            gr.Warning(for_browser(str(exc)), title="Your edit is kept")
            version = None
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        shown = self.authoring.shown(view.run_id, version.n if version else LATEST)
        out = self.shown_outputs(view, shown)
        out[self.text.undo] = gr.CheckboxGroup(value=list(shown.undone))
        out[self.text.take] = gr.CheckboxGroup(value=list(shown.taken))
        return out

    # -- versions -----------------------------------------------------------------------------------
    def on_view_version(self, view: RunView | None, n) -> dict:
        """Show an earlier version (or, for 0, the model's text) without changing anything."""
        if view is None or view.final is None:
            return {}
        return self.settle(view, shown_version=int(n or 0))

    async def on_restore(self, view: RunView | None, n) -> dict:
        """Make the version picked (or the model's text) the latest, as a new version."""
        if view is None or view.final is None:
            raise gr.Error("Open a finished run first.")
        self.text.flush_save(view.run_id)  # the text being typed is kept first, as its own version
        try:
            self.authoring.restore(view.run_id, int(n) if n else MODEL)
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        return self.settle(view)


def stop_running(button: gr.Button, panel: RunPanel, events: list) -> None:
    """``button`` cancels ``events`` (streams into ``panel``), then shows the run as stored.
    The cancel is its own listener, bound first: the browser runs a click's listeners in
    order, so a handler bound with ``cancels=`` would run before the cancel is sent."""
    button.click(None, None, None, cancels=events, **PRIVATE)
    button.click(panel.on_stop, panel.state, panel.outputs(), **PRIVATE)


# -- the tab --------------------------------------------------------------------------------------
class WriterTab:
    def __init__(self, runner: Runner, live: LiveRuns, store, clients: Clients):
        self.runner, self.live, self.store, self.clients = runner, live, store, clients
        self.settings = runner.settings
        self.panel = RunPanel(runner, store, clients, live=live)
        self.run_settings = RunSettings(self.settings)  # the run's own model, k, limits, parameters

    def layout(self) -> None:
        s = self.settings
        default = default_method()
        searches = search_choices(s)
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                self.task = gr.Textbox(label="Task", lines=3, max_length=s.method.max_task_chars,
                                       placeholder="e.g. Describe the life of Jin Yong", elem_classes="rat-task")
                with gr.Row():
                    self.method = gr.Dropdown(method_choices(), value=default, label="Method", scale=3)
                    self.search = gr.Dropdown(searches, value=searches[0][1] if searches else None,
                                              label="Search", scale=1)
                self.method_info = gr.HTML(method_info(default or ""), js_on_load=None)
                self.run_settings.layout(default)
                self.panel.budget = self.run_settings.component("--budget-tokens")  # Continue's new budget
                with gr.Row(equal_height=True):
                    self.draft_only = gr.Checkbox(label="Draft only: stop after the draft so I can edit its steps",
                                                  scale=3)
                    self.run_btn = gr.Button("Run", variant="primary", scale=1)
                    # enabled only while a run goes on (the panel turns it on and off)
                    self.stop_btn = gr.Button("Stop", variant="stop", scale=1, interactive=False)
                    self.panel.stop = self.stop_btn
            with gr.Column(scale=2):
                self.model = gr.HTML(model_html(s), js_on_load=None)
                # the run this browser last started or opened: shown again after a reload
                self.last_run = gr.BrowserState("", storage_key="rat-studio-last-run", secret="rat-studio")
                with gr.Row(equal_height=True, visible=False) as self.others:
                    self.other_runs = gr.Dropdown([], label="Runs going on or stopped", scale=3,
                                                  elem_classes="rat-other-runs")
                    self.open_btn = gr.Button("Open", scale=1)
                with gr.Accordion("Settings in force", open=False):
                    gr.Code(json.dumps(s.public_dict(), indent=2), language="json")
        self.panel.layout()

    def wire(self) -> None:
        panel = self.panel
        gr.on(None, self.on_load, inputs=None, outputs=[self.model, *self.run_settings.models.values()], **PRIVATE)
        # a run reopened or opened: its Run inputs first (an event of its own: a stream names only
        # what it streams, RunPanel.stream_outputs), then the run, live or stored, then settled.
        # On page load only: gr.on(None, ...) with inputs also runs on every change of them, and
        # Run's new last_run then had a second stream follow the same run in the same page
        inputs_set = Context.root_block.load(self.inputs_of, self.last_run, self.run_inputs(), **SETTLE)
        reopened = inputs_set.then(self.on_reload, self.last_run, panel.stream_outputs(), **STREAM)
        panel.settles(reopened)
        listed = [self.others, self.other_runs]
        gr.on([self.other_runs.focus], self.other_choices, None, listed, **PRIVATE)
        gr.on(None, self.other_choices, None, listed, **PRIVATE)
        picked = self.open_btn.click(self.on_pick, self.other_runs, [self.last_run, *self.run_inputs()], **SETTLE)
        opened = picked.success(self.on_open, self.other_runs, panel.stream_outputs(), **STREAM)
        panel.settles(opened)

        self.method.change(method_info, self.method, self.method_info, **PRIVATE)
        self.run_settings.wire(self.method)
        chosen = self.run_settings.components()
        checked = self.run_btn.click(self.check_run, [self.task, self.method, *chosen], None, **PRIVATE)
        run = checked.success(self.on_run, [self.task, self.method, self.search, self.draft_only, *chosen],
                              [self.last_run, *panel.stream_outputs()], **STREAM)
        panel.settles(run)
        cont = panel.wire()
        stop_running(self.stop_btn, panel, [run, cont])
        for followed in (reopened, opened, run, cont):  # a run followed to its end is no longer "going on"
            followed.then(self.other_choices, None, listed, **PRIVATE)

    async def on_load(self) -> dict:
        """The model line, and the server's models offered in the Run settings."""
        problem, served = await llm_check(self.clients)
        return {self.model: model_html(self.settings, problem, served), **self.run_settings.served(served)}

    async def check_run(self, prompt: str, method: str, *chosen) -> None:
        """Raises gr.Error for what the author must fix before a run can start: the task, the
        method, a Run setting out of range (naming its control), the model server (no outputs,
        so the last run stays on screen)."""
        try:
            Task(prompt or "").validated(self.settings.method.max_task_chars)
            get_method(method)
            self.run_settings.build(method, chosen)
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        await require_llm(self.clients)

    async def on_run(self, prompt: str, method: str, search: str, draft_only: bool, page: gr.Request | None,
                     *chosen):
        """Start a run with the Run settings (``chosen``, as ``check_run`` checked them) and follow it."""
        events = self.live.start(method, Task(prompt), draft_only=bool(draft_only),
                                 providers=providers_for(self.settings, search),
                                 settings=self.run_settings.build(method, chosen), timed=True)
        view, remembered = RunView(), False
        async for update in self.panel.follow(events, view, page=page):
            if view.run_id and not remembered:  # a reload comes back to this run
                update, remembered = {self.last_run: view.run_id, **update}, True
            yield update

    def known(self, run_id: str) -> bool:
        try:
            return bool(run_id) and self.store.get_run(run_id) is not None
        except RatStudioError:
            return False

    def inputs_of(self, last_run: str) -> dict:
        """The page (re)opened: the Run inputs as the run this browser last started or opened ran."""
        return self.run_as_it_ran(last_run) if self.known(last_run) else {self.task: gr.skip()}

    async def on_reload(self, last_run: str, page: gr.Request | None = None):
        """The page (re)opened: the run this browser last started or opened, live when it is
        still going on (the run is the server's: a reload never stopped it)."""
        if not self.known(last_run):  # nothing to show: leave the panel as it is (yielding nothing would blank
            yield {self.panel.state: gr.skip()}  # it, and an empty dict is read as one value, not as no update)
            return
        async for update in self.panel.open(last_run, page=page):
            yield update

    def on_pick(self, run_id: str) -> dict:
        """Open clicked: the run remembered for a reload, the Run inputs as it ran."""
        if not run_id:
            raise gr.Error("Pick a run in the list first.")
        return {self.last_run: run_id, **self.run_as_it_ran(run_id)}

    async def on_open(self, run_id: str, page: gr.Request | None = None):
        async for update in self.panel.open(run_id, page=page):
            yield update

    def run_inputs(self) -> list:
        """What Run reads: the task, method, search and the Run settings."""
        return [self.task, self.method, self.search, *self.run_settings.components()]

    def run_as_it_ran(self, run_id: str) -> dict:
        """The Run inputs set to the run's own (its task, method, search and Run settings as
        stored), so Run again after a reload or an open runs the same task the same way."""
        try:
            run = self.store.get_run(run_id)
        except RatStudioError:
            return {}
        providers = [p for p in run.settings.get("search") or () if p in self.settings.search.providers]
        search = providers[0] if len(providers) == 1 else CHAIN if len(providers) > 1 else gr.skip()
        out = {self.task: run.task, self.search: search, **self.run_settings.restored(run.settings)}
        if run.method in METHODS:
            out[self.method] = run.method
        return out

    def other_choices(self) -> dict:
        """The runs going on now, then the latest stopped ones (interrupted or failed, e.g. by a
        restart: open one to continue it)."""
        going = self.live.running()
        stopped = [r.id for r in self.store.list_runs(limit=50) if str(r.status) in ("interrupted", "failed", "budget")]
        choices = []
        for run_id in [*going, *stopped][:OPEN_LATEST]:
            run = self.store.get_run(run_id)
            state = "going on" if run_id in going else str(run.status)
            choices.append((f"{run.task[:60]} · {run.method} · {state} · {run_id}", run_id))
        return {self.others: gr.Row(visible=bool(choices)),
                self.other_runs: gr.Dropdown(choices=choices, value=choices[0][1] if choices else None)}




def build(runner: Runner, live: LiveRuns, store, clients: Clients) -> WriterTab:
    """Create the Writer tab's components inside the caller's ``gr.Tab``/``gr.Blocks`` context;
    ``live``: the server's runs (``core.live.LiveRuns``), which the Writer starts and follows."""
    tab = WriterTab(runner, live, store, clients)
    tab.layout()
    tab.wire()
    return tab
