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
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import aclosing

import gradio as gr

from common.errors import EditConflict, RatStudioError
from common.events import Event, Failed, TokenDelta
from common.settings import Settings
from common.types import Task
from core.article import edits
from core.article.article import Article
from core.article.attribution import Attribution
from core.article.citations import Cited
from core.article.sources import SourceBook
from core.authoring import Authoring, Edit, Shown, attribute
from core.clients import Clients
from core.live import LiveRuns, Timed
from core.methods import METHODS, get_method
from core.runner import Runner
from core.text.prompts import join_steps, split_steps
from core.text.segment import word_count
from data.versions import LATEST, MODEL, VersionRow, Versions
from ui import article_view, export_view, presenting, run_html, runview, step_actions
from ui.controls import control, for_browser
from ui.run_settings import RunSettings
from ui.runs_table import when
from ui.runview import ALL_PANELS, DRAFT, PROGRESS, STEPS, RunView

CHAIN = "__chain__"  # the search choice "every configured provider, in order"
TOKEN_INTERVAL = 0.1  # seconds between renders caused by streamed tokens alone (~10 a second)
STOP_WAIT = 3.0  # seconds Stop waits for the cancelled run to record its status
PRIVATE = {"api_visibility": "private"}
# following a run: not limited by the queue (core.live.LiveRuns bounds the runs themselves)
STREAM = {**PRIVATE, "show_progress": "hidden", "concurrency_limit": None}
OPEN_LATEST = 8  # runs going on or stopped that the Writer offers to open

DRAFT_HELP = ("One step per paragraph: separate steps with a blank line. Edit, reorder, delete or add "
              "steps; Continue revises them in this order.")
RESUME_HELP = ("Continue goes on after the last revised step. If you change the steps, revision starts "
               "over from step 1 with your steps (one per paragraph, separated by a blank line).")
UNDO_HELP = {
    edits.PARAGRAPH: "Each step was revised on its own: undoing a step puts back that paragraph as drafted.",
    edits.CUMULATIVE: ("Each revision rewrote the whole answer so far, and later revisions build on earlier "
                        "ones: undoing step i gives the article as it stood after step i−1, followed by steps "
                        "i…n as drafted (so the steps after i are undone too)."),
    "": "",
}
TAKE_HELP = ("The model's revision of these steps was refused (see why in the step) and the text kept. "
             "Take it anyway to put the model's version in the article.")
STATUS_HINTS = {"draft": DRAFT_HELP, "interrupted": RESUME_HELP, "failed": RESUME_HELP}
EDIT = {**PRIVATE, "queue": False, "show_progress": "hidden", "trigger_mode": "always_last"}  # per keystroke
#: On page load: remember, per article box, the last text the author's own hand put in it (the
#: browser's ``input`` event: a key, Backspace, a paste, a cut, an input method's commit, a drop).
#: Gradio 6's Textbox sends its ``input`` event for printable keys and Enter only, and its
#: ``change`` event for the server's updates too; ``typed_js`` tells the two apart.
TYPED_LISTENER_JS = """() => {
  if (window.ratTyped) return;
  const typed = new Map();
  document.addEventListener("input", (e) => {
    const box = e.target.closest && e.target.closest(".rat-article");
    if (box && box.id) typed.set(box.id, e.target.value);
  }, true);
  window.ratTyped = (id, value) => typed.get(id) === value;
}"""


def typed_js(box_id: str) -> str:
    """The article box's ``change`` event, in the browser: whether its text is the author's
    (what their last keystroke, paste or input method left), not the server's (a version shown)."""
    return (f"(view, text, undone, taken, typed) => [view, text, undone, taken, "
            f"window.ratTyped ? window.ratTyped({json.dumps(box_id)}, text) : true]")
NO_EDIT = Edit()  # a run with no article yet: nothing undone, nothing taken
VIEW_READ, VIEW_EDIT = "Read", "Edit"  # the article's two views: with its marks, or its text to edit
SAVE_AFTER = 1.0  # seconds after the author's last keystroke that the article is saved as a version


# -- helpers (no gradio state) --------------------------------------------------------------------
def search_choices(settings: Settings) -> list[tuple[str, str]]:
    """The configured search providers, each on its own, and (with several) all of them in order."""
    providers = list(settings.search.providers)
    choices = [(p, p) for p in providers]
    if len(providers) > 1:
        choices.insert(0, (f"all, in order: {' → '.join(providers)}", CHAIN))
    return choices


def providers_for(settings: Settings, providers: str | Sequence[str] | None) -> tuple[str, ...]:
    """The search providers of a run: one configured provider, ``CHAIN`` (or None) for all of
    them in order, or the list stored in a run's settings. Providers that are not configured
    are ignored."""
    configured = tuple(settings.search.providers)
    if providers is None or providers == CHAIN:
        wanted: tuple[str, ...] = configured
    else:
        wanted = (providers,) if isinstance(providers, str) else tuple(providers)
    return tuple(p for p in wanted if p in configured) or configured


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


async def llm_check(clients: Clients) -> tuple[str, list[str]]:
    """('' and the served models) when the model server answers, else (what to fix, [])."""
    try:
        llm = clients.llm()
    except RatStudioError as exc:
        return str(exc), []
    try:
        return "", await llm.check()
    except RatStudioError as exc:
        return str(exc), []
    finally:
        await llm.aclose()


async def require_llm(clients: Clients) -> None:
    """Raises gr.Error naming what to set when the model server cannot be used."""
    problem, _ = await llm_check(clients)
    if problem:
        raise gr.Error(for_browser(problem), title="The model server is not ready")


# -- the run panel --------------------------------------------------------------------------------
class RunPanel:
    """The view of one run (live, stored or replayed), the draft editor and Continue, undoing
    revisions, the editable article with its citations, and its export."""

    def __init__(self, runner: Runner, store, clients: Clients, *, live: LiveRuns | None = None, hint: str = ""):
        """``live``: the server's runs, which the panel continues and follows (one for the whole
        app, so --concurrency bounds them all; a panel of its own without it)."""
        self.runner, self.store, self.clients = runner, store, clients
        self.live = live or LiveRuns(runner, limit=runner.settings.concurrency)
        self.versions = Versions(store)
        self.authoring = Authoring(store, runner.settings.method.cite_threshold)  # every version made and read
        # run id -> the pending save of an edit: its timer, and the save itself (``_flush_save``)
        self._saving: dict[str, tuple[asyncio.TimerHandle, Callable[[], None]]] = {}
        self.hint = hint
        self.threshold = runner.settings.method.cite_threshold  # as the runner cites a run's Final
        self._thresholds: dict[str, float] = {}  # run id -> the cite threshold it ran with
        self.act_id = step_actions.panel_id()  # its step actions' hidden components (ui/step_actions.py)
        self._redos: set[asyncio.Task] = set()  # redos whose tab went away, saved as versions when they end
        self._acting: dict[str, asyncio.Lock] = {}  # run id -> its step actions, one at a time (queued)
        self.exports = export_view.ExportFolder()  # the download buttons' files
        self.stop: gr.Button | None = None  # the tab's Stop, when it has one: enabled only while a run goes on

    def layout(self) -> None:
        empty = RunView()
        self.state = gr.State(None)  # this browser's RunView
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
                self.draft = gr.HTML(run_html.draft_html(empty), js_on_load=None, elem_classes="rat-draft-panel")
            with gr.Column(scale=3, min_width=360):
                gr.Markdown("#### Search and revision, step by step")
                self.steps = gr.HTML(run_html.steps_html(empty), js_on_load=None, elem_classes="rat-steps-panel")
        with gr.Group(visible=False, elem_classes="rat-editor-box") as self.editor_box:
            # the draft as step cards, kept in step with the textbox below (ui/step_actions.py)
            self.draft_cards = gr.HTML(step_actions.draft_cards_html([]), js_on_load=step_actions.DRAFT_JS,
                                       elem_classes="rat-draft-cards")
            # right under the cards (the textbox below repeats them as text, for editing as text)
            self.continue_btn = gr.Button("Continue", variant="primary")
            self.editor = gr.Textbox(label="Draft steps", info=DRAFT_HELP, lines=8, max_lines=40,
                                     elem_classes="rat-editor")
        with gr.Column(visible=False) as self.result_box:
            # the step cards' actions (ui/step_actions.py): the query row, and the command the cards send
            self.act_glue = gr.HTML(step_actions.glue_html(self.act_id), js_on_load=step_actions.GLUE_JS,
                                    elem_classes="rat-act-glue")
            self.act_cmd = gr.Textbox(visible="hidden", elem_id=f"{self.act_id}-cmd", label="Step action",
                                      elem_classes="rat-act-hidden")
            self.act_go = gr.Button("Do the step action", visible="hidden", elem_id=f"{self.act_id}-go",
                                    elem_classes="rat-act-hidden")
            gr.Markdown("#### Article")
            self.undo = gr.CheckboxGroup(label="Undo the revision of", choices=[])
            self.take = gr.CheckboxGroup(label="Take the refused revision of", choices=[], info=TAKE_HELP,
                                         visible=False)
            # one article on screen: read it with its marks, or edit its text (the marks follow)
            self.mode = gr.Radio([VIEW_READ, VIEW_EDIT], value=VIEW_READ, show_label=False, container=False,
                                 elem_classes="rat-article-mode")
            self.article = gr.Textbox(label="Article (editable; undoing a step rebuilds it)", lines=12,
                                      max_lines=60, interactive=True, elem_classes="rat-article", visible=False,
                                      elem_id=f"{self.act_id}-article")
            self.typed = gr.Checkbox(visible=False)  # filled in the browser (``typed_js``), never shown
            self.cited = gr.HTML("", js_on_load=None, elem_classes="rat-cited-panel")
            self.reading = gr.HTML("", js_on_load=None, elem_classes="rat-reading-line")
            with gr.Row(equal_height=True):
                self.saved = gr.HTML("", js_on_load=None, elem_classes="rat-saved")
                self.version_pick = gr.Dropdown([], label="Versions (view one; Restore makes it the latest)",
                                                scale=2, elem_classes="rat-versions", visible=False)
                self.restore_btn = gr.Button("Restore", scale=0, min_width=120, visible=False)
            self.saving = gr.Timer(SAVE_AFTER, active=False)
            self.sources = gr.HTML("", js_on_load=None, elem_classes="rat-sources-panel")
            # the article's output (ui/export_view.py): each button holds the shown article, one click
            with gr.Row(elem_classes="rat-export-row"):
                button = {"interactive": False, "scale": 0, "size": "md"}
                self.download = gr.DownloadButton("Download Markdown", variant="primary", min_width=200, **button)
                self.download_docx = gr.DownloadButton("Download Word", min_width=170, **button)
                self.download_pdf = gr.DownloadButton("Download PDF", min_width=150, **button)
                self.download_html = gr.DownloadButton("Download HTML", min_width=160, **button)
                self.copy_md_btn = gr.Button("Copy Markdown", min_width=160, **button)
                self.copy_text_btn = gr.Button("Copy text", min_width=110, **button)
                self.notes = gr.Checkbox(False, label="Include run notes (the steps never checked, as an appendix)",
                                         container=False, scale=0, min_width=260)
                self.copied = gr.HTML("", js_on_load=None, elem_classes="rat-copy-said")
            self.copy_md_value = gr.Textbox(visible=False)  # what the copy buttons copy, in the browser
            self.copy_text_value = gr.Textbox(visible=False)

    def outputs(self) -> list:
        return [self.state, self.progress, self.draft, self.steps, self.editor_box, self.editor,
                self.result_box, self.undo, self.take, self.article, self.cited, *self.downloads(),
                self.saved, self.version_pick, self.restore_btn, self.sources, *self.copy_parts(), self.notes,
                self.draft_cards, *([self.stop] if self.stop is not None else [])]

    def export_parts(self) -> list:
        """What ``export_outputs`` updates: the download buttons and ``copy_parts``."""
        return [*self.downloads(), *self.copy_parts()]

    def downloads(self) -> list:
        """The download buttons: Markdown, Word, PDF, HTML."""
        return [self.download, self.download_docx, self.download_pdf, self.download_html]

    def copy_parts(self) -> list:
        """The copy buttons, what they copy, and the article's length line."""
        return [self.copy_md_btn, self.copy_text_btn, self.copy_md_value, self.copy_text_value, self.reading]

    def wire(self):
        """Bind the panel's own events; returns the Continue event (for a Stop button's cancels)."""
        checked = self.continue_btn.click(self.check_continue, [self.state, self.editor], None, **PRIVATE)
        cont = checked.success(self.on_continue, [self.state, self.editor], self.outputs(), **STREAM)
        for box in (self.undo, self.take):
            box.input(self.on_undo, [self.state, self.undo, self.take],
                      [self.progress, self.undo, self.take, self.article, self.cited, self.sources, self.steps,
                       *self.downloads(), self.saved, self.version_pick, self.restore_btn,
                       *self.copy_parts()],
                      **PRIVATE)
        self.mode.change(self.on_mode, self.mode, [self.article, self.cited], **PRIVATE, queue=False)
        self.saving.tick(self.on_saved, self.state, [self.saved, self.version_pick, self.restore_btn, self.saving,
                                                     *self.export_parts()], **PRIVATE)
        self.version_pick.input(self.on_view_version, [self.state, self.version_pick], self.outputs(), **PRIVATE)
        self.restore_btn.click(self.on_restore, [self.state, self.version_pick], self.outputs(), **PRIVATE)
        edited = [self.state, self.article, self.undo, self.take]
        self.notes.input(self.on_export, [self.state, self.notes, self.article, self.undo, self.take],
                         [self.state, *self.export_parts()], **PRIVATE)
        self.copy_md_btn.click(None, self.copy_md_value, self.copied, js=export_view.copy_js("Markdown"), **PRIVATE)
        self.copy_text_btn.click(None, self.copy_text_value, self.copied, js=export_view.copy_js("text"), **PRIVATE)
        # every change the author makes (typed, deleted, pasted, an input method's text), saved
        self.article.change(self.on_edit, [*edited, self.typed],
                            [self.cited, self.sources, *self.downloads(), self.saved, self.saving,
                             self.copy_md_btn, self.copy_text_btn, self.reading],
                            js=typed_js(f"{self.act_id}-article"), **EDIT)
        gr.on(None, None, js=TYPED_LISTENER_JS, api_visibility="private")  # on page load, in the browser only
        # "multiple": an action asked while another runs is sent, and waits on the server for its turn
        self.act_go.click(self.on_step_action, [self.state, self.act_cmd, self.undo, self.take], self.outputs(),
                          trigger_mode="multiple", **STREAM)
        return cont

    # -- rendering --------------------------------------------------------------------------------
    def render(self, view: RunView, panels: Iterable[str], status: str = "") -> dict:
        panels = set(panels)
        out: dict = {self.state: view}
        if PROGRESS in panels:
            out[self.progress] = run_html.progress_html(view, status)
        if DRAFT in panels:
            out[self.draft] = run_html.draft_html(view)
        if STEPS in panels:
            out[self.steps] = self.steps_out(view)
        return out

    def threshold_of(self, view: RunView) -> float:
        """The cite threshold ``view``'s run was cited with (its Run settings'), else the server's."""
        if not view.run_id:
            return self.threshold
        if view.run_id not in self._thresholds:
            try:
                stored = self.store.get_run(view.run_id).settings.get("cite_threshold")
            except RatStudioError:
                return self.threshold
            self._thresholds[view.run_id] = float(stored) if stored is not None else self.threshold
        return self._thresholds[view.run_id]

    def status(self, view: RunView) -> str:
        if not view.run_id:
            return ""
        try:
            return self.store.get_run(view.run_id).status
        except RatStudioError:
            return ""

    def settle(self, view: RunView, shown_version: int | None = None) -> dict:
        """Every component, for a run that is not streaming: the editor when it can go on, the
        article when it is done."""
        status = self.status(view)
        out = self.render(view, ALL_PANELS, status)
        resumable = bool(view.method) and view.method in METHODS and METHODS[view.method].resumable
        can_continue = resumable and (status in ("draft", "interrupted")
                                      or status == "failed" and (view.failed is None or view.failed.resumable))
        out[self.editor_box] = gr.Group(visible=can_continue)
        out[self.editor] = gr.Textbox(value=join_steps(view.steps), info=STATUS_HINTS.get(status, RESUME_HELP))
        out[self.draft_cards] = step_actions.draft_cards_html(view.steps)
        done = view.final is not None
        out[self.result_box] = gr.Column(visible=done)
        # the author's latest version (``shown_version`` None), the model's text (0), or version N
        shown = None
        if done and view.run_id:
            self._flush_save(view.run_id)
            which = LATEST if shown_version is None else MODEL if shown_version == 0 else shown_version
            shown = self.authoring.shown(view.run_id, which)
        if shown is not None:
            out.update(self.shown_outputs(view, shown))
        else:
            choices = article_view.revert_choices(view)
            out[self.undo] = gr.CheckboxGroup(choices=choices, value=[], info=UNDO_HELP[view.edits.mode],
                                              visible=bool(choices))
            takeable = article_view.take_choices(view)
            out[self.take] = gr.CheckboxGroup(choices=takeable, value=[], visible=bool(takeable))
            out[self.article] = ""
            out.update({self.cited: "", self.sources: ""})
            out.update(self.version_outputs(view, None))
            out.update(self.export_outputs(view, NO_EDIT))
        out[self.notes] = view.export_notes
        if self.stop is not None:  # Stop is for a run going on (another tab's, or this one's after a reload)
            out[self.stop] = gr.Button(interactive=bool(view.run_id) and self.live.is_live(view.run_id))
        return out

    def shown_outputs(self, view: RunView, shown: Shown) -> dict:
        """The article part of the panel for a stored version (or the model's text) as it reads:
        its undo and take boxes, text, marks, sources, step cards, versions list and exports."""
        choices = article_view.revert_choices(view)
        takeable = article_view.take_choices(view)
        return {self.progress: run_html.progress_html(view, self.status(view), shown=shown.cited,
                                                      unchecked=shown.article.unchecked),
                self.undo: gr.CheckboxGroup(choices=choices, value=list(shown.undone),
                                            info=UNDO_HELP[view.edits.mode], visible=bool(choices)),
                self.take: gr.CheckboxGroup(choices=takeable, value=list(shown.taken), visible=bool(takeable)),
                self.article: shown.text,
                self.cited: article_view.cited_html(shown.cited),
                self.sources: article_view.sources_html(shown.article),
                self.steps: self.steps_out(view, shown.edit, shown),
                **self.version_outputs(view, shown.version),
                **self.export_outputs(view, shown.edit, article=shown.article)}

    def export_outputs(self, view: RunView, edit: Edit, *, article: Article | None = None) -> dict:
        """The download buttons holding the shown article's files (Markdown, Word, PDF, HTML: the
        author's ``edit``, with the run notes when the author asked for them), the texts the copy
        buttons copy, and its length line; the buttons are disabled while there is nothing to export;
        ``article``: the article as a stored version reads (None: ``edit`` as the author has it
        now, attributed as it would be saved). Files that cannot be written are named in a warning
        (the buttons stay disabled), and so is a PDF that cannot be drawn (its button stays disabled)."""
        text = edit.text
        off = {**{b: gr.DownloadButton(value=None, interactive=False, visible=True) for b in self.downloads()},
               self.copy_md_btn: gr.Button(interactive=False), self.copy_text_btn: gr.Button(interactive=False),
               self.copy_md_value: "", self.copy_text_value: "",
               self.reading: export_view.reading_html(text) if view.final is not None else ""}
        if view.final is None or not text.strip():
            return off
        try:
            article = article or self.live_article(view, edit)[1]
            files = self.exports.output(view, edit, threshold=self.threshold_of(view), notes=view.export_notes,
                                        article=article, formats=export_view.FORMATS)
        except OSError as exc:
            gr.Warning(f"The article's files could not be written to the temporary folder ({exc}): free some "
                       "disk space, then pick the version again.", title="Download")
            return off
        notes = " + run notes" if view.export_notes else ""  # the label says what the files hold
        if files.pdf_error:  # a letter no font here has: the other files are made, the warning says why no PDF is
            gr.Warning(files.pdf_error, title="PDF")
        made = ((self.download, "Markdown", files.markdown), (self.download_docx, "Word", files.docx),
                (self.download_pdf, "PDF", files.pdf), (self.download_html, "HTML", files.html))
        return {**off, **{button: gr.DownloadButton(f"Download {name}{notes}", value=str(path), interactive=True,
                                                    visible=True) for button, name, path in made if path is not None},
                self.copy_md_btn: gr.Button(interactive=True), self.copy_text_btn: gr.Button(interactive=True),
                self.copy_md_value: files.markdown_text, self.copy_text_value: files.plain_text}

    def article_html(self, view: RunView, edit: Edit) -> dict:
        """The article as edited with its [n] marks, and under it its numbered sources (each [n]
        leads to its entry), numbered as its export numbers them."""
        cited, article = self.live_article(view, edit)
        return {self.cited: article_view.cited_html(cited), self.sources: article_view.sources_html(article)}

    def live_article(self, view: RunView, edit: Edit) -> tuple[Cited, Article]:
        """``edit`` as the author has it now, attributed as saving it would attribute it (the marks
        of sentences the latest version held carried over: ``core.authoring.attribute``)."""
        undone, taken = view.edits.chosen(edit.undone, edit.taken)
        previous = self.authoring.previous(view.run_id, events=view.events) if view.run_id else None
        attribution = attribute(view.edits, edit.text, undone, taken, threshold=self.threshold_of(view),
                                previous=previous)
        return attribution.numbered(), Article.attributed(view.task, edit.text, attribution)

    def frame(self, view: RunView) -> dict:
        """The run as far as ``view`` goes, with no editor and no article: a run being followed, or
        a replay's frame (paused, stepped, sought)."""
        out = self.render(view, ALL_PANELS)
        out.update({self.editor_box: gr.Group(visible=False), self.result_box: gr.Column(visible=False),
                    **{button: gr.DownloadButton(visible=False) for button in self.downloads()}})
        if self.stop is not None:
            out[self.stop] = gr.Button(interactive=True)
        return out

    async def follow(self, events: AsyncIterator[Event | Timed], view: RunView, *,
                     live: bool = True) -> AsyncIterator[dict]:
        """Render a stream of events into this panel as they arrive: streamed tokens at most
        every TOKEN_INTERVAL seconds, anything else at once; then the settled panel. A live
        run's failure is also shown as a warning."""
        yield self.frame(view)
        dirty: set[str] = set()
        last = 0.0
        try:
            async with aclosing(events):
                async for item in events:  # (a run joined late comes Timed: its times are its own)
                    event, at = (item.item, item.at) if isinstance(item, Timed) else (item, None)
                    dirty |= view.apply(event, at)
                    if live and isinstance(event, Failed):
                        gr.Warning(for_browser(f"The run stopped: {event.error}"), title="Run failed")
                    now = time.monotonic()
                    if dirty and (not isinstance(event, TokenDelta) or now - last >= TOKEN_INTERVAL):
                        yield self.render(view, dirty)
                        dirty, last = set(), now
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        yield self.settle(view)

    # -- handlers ---------------------------------------------------------------------------------
    async def check_continue(self, view: RunView | None, text: str) -> None:
        """Raises gr.Error for what the author must fix before a run can go on (no outputs,
        so the panel is left as it is)."""
        if view is None or not view.run_id:
            raise gr.Error("There is no run to continue: start one in the Writer or open one in History.")
        if view.steps and not split_steps(text or ""):
            raise gr.Error("The draft has no steps left: add at least one step (separate steps with a blank line).")
        try:
            self.store.get_run(view.run_id)
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        await require_llm(self.clients)

    async def on_continue(self, view: RunView, text: str):
        steps = split_steps(text or "")
        draft = steps if steps and steps != view.steps else None  # None: go on as stored
        if draft is not None:  # the author's draft is their work: kept as a version before it is revised
            self.versions.add(view.run_id, join_steps(draft), action="draft")
        run = self.store.get_run(view.run_id)
        providers = providers_for(self.runner.settings, run.settings.get("search"))
        events = self.live.resume(view.run_id, draft=draft, providers=providers, timed=True)
        async for update in self.follow(events, view):
            yield update

    async def open(self, run_id: str, view: RunView | None = None):
        """Show a run: live when it is going on (what it did so far, then each event as it
        happens), else as stored."""
        if self.live.is_live(run_id):
            async for update in self.follow(self.live.follow(run_id, timed=True), RunView()):
                yield update
        else:
            yield self.settle(view or runview.fold(self.store.events(run_id)))

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
        return self.settle(runview.fold(self.store.events(view.run_id)))

    def steps_out(self, view: RunView, edit: Edit = NO_EDIT, shown: Shown | None = None) -> str:
        """The step cards, with the actions of a finished rat or rat-step run (``ui.step_actions``);
        with the version ``shown``, the marks in their revisions numbered as that article numbers
        the pages (a presenter's card said [9] of the page the article calls [4])."""
        actions = step_actions.card_actions(view, edit.undone, edit.taken, panel=self.act_id)
        marks = None
        if shown is not None:
            order = Attribution(shown.cited).order()
            labels = SourceBook.from_events(view.events).numbers()  # what the model was shown: its marks' meaning
            marks = {label: order[url] for url, label in labels.items() if url in order}
        return run_html.steps_html(view, edit.undone, edit.taken, actions=actions, marks=marks)

    async def on_step_action(self, view: RunView | None, command: str, undone: list[int] | None,
                             taken: list[int] | None):
        """A step card's button (``ui.step_actions``): Undo / Put back and Take / Drop change the
        article as the boxes above it do; Regenerate, Search again and ✕ (exclude a source) have
        the run do the step again (``LiveRuns.redo``), followed here, and the new text is saved as a
        version. Raises gr.Error for a command that does not fit the run."""
        if view is None or not view.run_id or view.final is None and not self._finished_once(view.run_id):
            raise gr.Error("Open a finished run first: the step actions work on a run's finished article.")
        try:
            cmd = step_actions.parse_command(command)
        except ValueError as exc:
            raise gr.Error(str(exc)) from exc
        lock = self._acting.setdefault(view.run_id, asyncio.Lock())
        if lock.locked():  # one action at a time on a run: this one waits for the one before, then runs
            yield {self.progress: "<div class='rat-progress'>Queued: this step action starts when the one "
                                  "before it has finished and been saved.</div>"}
        async with lock, aclosing(self._step_action(view, cmd, undone, taken)) as updates:
            async for update in updates:
                yield update

    def _finished_once(self, run_id: str) -> bool:
        """Whether the run has a finished article (a step of it may be being done again now: the
        next action waits for it)."""
        return bool(self.store.get_run(run_id).final_text)  # (the model's text, kept through every redo)

    async def _step_action(self, view: RunView, cmd, undone: list[int] | None, taken: list[int] | None):
        """:meth:`on_step_action` once the run is this action's: only what the step does again is
        streamed (the run so far is shown as it stands, not replayed), and its text saved."""
        if view.final is None:  # asked while the action before ran: the run as that one left it
            view = runview.fold(self.store.events(view.run_id))
        if cmd.action in step_actions.EDITS:
            chosen = {"undo": set(undone or []), "take": set(taken or [])}
            chosen[cmd.action] ^= {cmd.i}
            yield await self.on_undo(view, sorted(chosen["undo"]), sorted(chosen["take"]))
            return
        redo = METHODS[view.method].redo if view.method in METHODS else None
        if redo is None:
            raise gr.Error(f"The method {view.method!r} cannot redo a step: start a new run instead.")
        stored = self.store.events(view.run_id)  # the run as it stands now (an action before may have changed it)
        try:  # refused before anything is shown or stored
            redo(stored, cmd.i, action=cmd.action, query=cmd.query, exclude=[cmd.url])
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        self._flush_save(view.run_id)  # the author's last typing is saved first, as its own version
        try:  # a hand edit the redo would rewrite: refused before anything runs
            self.authoring.check_redo(view.run_id, cmd.i)
        except EditConflict as exc:
            raise gr.Error(str(exc), title="Your edit is kept") from exc
        events = self.live.redo(view.run_id, cmd.i, action=cmd.action, query=cmd.query,
                                exclude=[cmd.url] if cmd.url else (), timed=True)
        redone, saved = runview.fold(stored), False
        try:
            async for update in self.follow(_after(events, len(stored)), redone):
                yield update
            saved = self._save_redo(view.run_id, cmd.action)
        finally:
            if not saved and len(redone.events) > len(stored):  # the tab went away mid-redo: saved when the
                # run ends, on the server
                task = asyncio.get_running_loop().create_task(self._save_when_done(view.run_id, cmd.action))
                self._redos.add(task)
                task.add_done_callback(self._redos.discard)
                await asyncio.shield(task)  # (the next action on the run waits for this save)
        if saved:
            yield self.settle(redone)

    def _save_redo(self, run_id: str, action: str) -> bool:
        """Save a finished redo's text as a version (``action``); False when the run did not end
        with a new Final after the author's request (it failed, or was stopped)."""
        return self.authoring.redone(run_id, action) is not None

    async def _save_when_done(self, run_id: str, action: str) -> None:
        """Follow a redo no tab follows any more to its end, then :meth:`_save_redo`."""
        async with aclosing(self.live.follow(run_id)) as events:
            async for _ in events:
                pass
        self._save_redo(run_id, action)

    async def on_undo(self, view: RunView | None, chosen: list[int], taken: list[int] | None = None) -> dict:
        """Undo or take revisions: the article is rebuilt, and the boxes show what the mode's
        rules made of the choice (in cumulative mode, everything after the first step chosen)."""
        if view is None or view.final is None:  # a box ticked as the run ends: no version to make yet
            gr.Warning("The run is still finishing: tick the box again once it says Done.")
            return {self.undo: gr.CheckboxGroup(value=[]), self.take: gr.CheckboxGroup(value=[])}
        self._flush_save(view.run_id)  # the text being typed is kept first, as its own version
        try:
            version = self.authoring.choose(view.run_id, chosen or [], taken or [])
        except EditConflict as exc:  # nothing changed: the boxes go back to the latest version
            gr.Warning(for_browser(str(exc)), title="Your edit is kept")
            version = None
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        shown = self.authoring.shown(view.run_id, version.n if version else LATEST)
        out = self.shown_outputs(view, shown)
        out[self.undo] = gr.CheckboxGroup(value=list(shown.undone))
        out[self.take] = gr.CheckboxGroup(value=list(shown.taken))
        return out

    async def on_edit(self, view: RunView | None, text: str, chosen: list[int], taken: list[int] | None = None,
                      typed: bool = True) -> dict:
        """The author typed in the article: its citations and length follow; the download and copy
        buttons wait for the save (``on_saved`` gives them the saved text: no files per keystroke).
        Not ``typed``: the server put the text there (a version shown), nothing to do."""
        if not typed:
            return gr.skip()
        stale = {**{button: gr.DownloadButton(interactive=False) for button in self.downloads()},
                 self.copy_md_btn: gr.Button(interactive=False), self.copy_text_btn: gr.Button(interactive=False)}
        if view is None or view.final is None:
            return stale
        edit = Edit.of(text, chosen, taken)
        self._save_later(view.run_id, edit)
        return {**self.article_html(view, edit), **stale, self.reading: export_view.reading_html(edit.text),
                self.saved: "<span class='rat-note'>Saving…</span>", self.saving: gr.Timer(active=True)}

    def on_mode(self, mode: str) -> dict:
        """Read (the article with its [n] marks) or Edit (its text): one of them on screen."""
        editing = mode == VIEW_EDIT
        return {self.article: gr.Textbox(visible=editing), self.cited: gr.HTML(visible=not editing)}

    # -- versions -----------------------------------------------------------------------------------
    def _save_later(self, run_id: str, edit: Edit) -> None:
        """Save the article as a version SAVE_AFTER seconds after the last keystroke (each
        keystroke puts the save off again), on the server: a closed tab does not lose it."""
        self._cancel_save(run_id)
        loop = asyncio.get_running_loop()

        def save() -> None:
            self._saving.pop(run_id, None)
            self.authoring.edit(run_id, edit.text, edit.undone, edit.taken)

        self._saving[run_id] = (loop.call_later(SAVE_AFTER, save), save)

    def _cancel_save(self, run_id: str) -> None:
        pending = self._saving.pop(run_id, None)
        if pending is not None:
            pending[0].cancel()

    def _flush_save(self, run_id: str) -> None:
        """Save the author's pending edit of ``run_id`` now: the run is being shown again (a reload,
        another tab) and must show what was typed, not the version before it."""
        pending = self._saving.get(run_id)
        if pending is not None:
            pending[0].cancel()
            pending[1]()  # (takes it out of ``_saving`` itself)

    def version_outputs(self, view: RunView, shown: VersionRow | None) -> dict:
        """The saved line and the versions list: which version is shown, and every one to pick."""
        rows = self.versions.list(view.run_id) if view.run_id and view.final is not None else []
        choices = [("the model's text", 0)] + [(version_label(v), v.n) for v in reversed(rows)]
        if shown is None:
            line = "The model's text: your edits, undos and restores are saved as versions." if view.final else ""
        else:
            newest = rows[-1].n
            latest = "" if shown.n == newest else f" (the latest is {newest}: Restore makes this one the latest)"
            line = f"Version {shown.n}, saved {when(shown.created)}{latest}."
        return {self.saved: f"<span class='rat-note'>{html.escape(line)}</span>" if line else "",
                self.version_pick: gr.Dropdown(choices=choices, value=shown.n if shown else 0,
                                               visible=bool(rows)),
                self.restore_btn: gr.Button(visible=bool(rows))}

    def on_saved(self, view: RunView | None) -> dict:
        """The timer after an edit: once the pending save is done, say so, give the download and
        copy buttons the saved article, and stop ticking."""
        if view is None or not view.run_id or view.run_id in self._saving:
            return gr.skip()  # still waiting for the save
        shown = self.authoring.shown(view.run_id, LATEST)
        return {**self.version_outputs(view, shown.version), self.saving: gr.Timer(active=False),
                **self.export_outputs(view, shown.edit, article=shown.article)}

    def on_view_version(self, view: RunView | None, n) -> dict:
        """Show an earlier version (or, for 0, the model's text) without changing anything."""
        if view is None or view.final is None:
            return {}
        return self.settle(view, shown_version=int(n or 0))

    async def on_restore(self, view: RunView | None, n) -> dict:
        """Make the version picked (or the model's text) the latest, as a new version."""
        if view is None or view.final is None:
            raise gr.Error("Open a finished run first.")
        self._flush_save(view.run_id)  # the text being typed is kept first, as its own version
        try:
            self.authoring.restore(view.run_id, int(n) if n else MODEL)
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        return self.settle(view)

    def on_export(self, view: RunView | None, notes: bool, text: str, chosen: list[int],
                  taken: list[int] | None = None) -> dict:
        """"Include run notes" ticked or not: the download and copy buttons get the shown article
        (``text``, with the ``chosen`` and ``taken`` steps) with or without them."""
        if view is None or view.final is None:
            return gr.skip()
        view.export_notes = bool(notes)
        return {self.state: view, **self.export_outputs(view, Edit.of(text, chosen, taken))}


async def _after(events: AsyncIterator, skip: int) -> AsyncIterator:
    """``events`` without the first ``skip`` (a followed run's stored events, already shown)."""
    async with aclosing(events):
        async for item in events:
            if skip > 0:
                skip -= 1
                continue
            yield item


def version_label(version: VersionRow) -> str:
    """'3 · 14:02:11 · edit · 812 words' (and 'from 1' for a restore), for the versions list."""
    restored = f" from {version.restored_from}" if version.restored_from else ""
    return f"{version.n} · {when(version.created)} · {version.action}{restored} · {word_count(version.text):,} words"


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
        reopened = gr.on(None, self.on_reload, inputs=self.last_run, outputs=[*self.run_inputs(), *panel.outputs()],
                         **STREAM)
        listed = [self.others, self.other_runs]
        gr.on([self.other_runs.focus], self.other_choices, None, listed, **PRIVATE)
        gr.on(None, self.other_choices, None, listed, **PRIVATE)
        opened = self.open_btn.click(self.on_open, self.other_runs, [self.last_run, *self.run_inputs(),
                                                                    *panel.outputs()], **STREAM)

        self.method.change(method_info, self.method, self.method_info, **PRIVATE)
        self.run_settings.wire(self.method)
        chosen = self.run_settings.components()
        checked = self.run_btn.click(self.check_run, [self.task, self.method, *chosen], None, **PRIVATE)
        run = checked.success(self.on_run, [self.task, self.method, self.search, self.draft_only, *chosen],
                              [self.last_run, *panel.outputs()], **STREAM)
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

    async def on_run(self, prompt: str, method: str, search: str, draft_only: bool, *chosen):
        """Start a run with the Run settings (``chosen``, as ``check_run`` checked them) and follow it."""
        events = self.live.start(method, Task(prompt), draft_only=bool(draft_only),
                                 providers=providers_for(self.settings, search),
                                 settings=self.run_settings.build(method, chosen), timed=True)
        view, remembered = RunView(), False
        async for update in self.panel.follow(events, view):
            if view.run_id and not remembered:  # a reload comes back to this run
                update, remembered = {self.last_run: view.run_id, **update}, True
            yield update

    async def on_reload(self, last_run: str):
        """The page (re)opened: the run this browser last started or opened, live when it is
        still going on (the run is the server's: a reload never stopped it)."""
        try:
            known = bool(last_run) and self.store.get_run(last_run) is not None
        except RatStudioError:
            known = False
        if not known:  # nothing to show: leave the panel as it is (yielding nothing would blank it, and
            yield {self.panel.state: gr.skip()}  # an empty dict is read as one value, not as no update)
            return
        first = True
        async for update in self.panel.open(last_run):
            yield {**self.run_as_it_ran(last_run), **update} if first else update
            first = False

    async def on_open(self, run_id: str):
        if not run_id:
            raise gr.Error("Pick a run in the list first.")
        first = True
        async for update in self.panel.open(run_id):
            yield {self.last_run: run_id, **(self.run_as_it_ran(run_id) if first else {}), **update}
            first = False

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
        stopped = [r.id for r in self.store.list_runs(limit=50) if str(r.status) in ("interrupted", "failed")]
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
