"""The draft of a run that can go on (drafted only, stopped, failed, stopped at its budget): its
steps as cards and as text, which the author edits, and Continue, which goes on with the run (with
the author's draft, kept as a version first, when they changed it), followed in its run panel
(``ui.writer.RunPanel``). A run stopped part-way through a step action finishes it, and its text is
saved as the step action saves it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr

from common.errors import RatStudioError
from core.methods import METHODS
from core.runner import FINISHED
from core.text.prompts import join_steps, split_steps
from ui import step_actions
from ui.controls import for_browser
from ui.listeners import PRIVATE, STREAM
from ui.run_inputs import providers_for, require_llm
from ui.runview import RunView

if TYPE_CHECKING:
    from ui.writer import RunPanel

DRAFT_HELP = ("One step per paragraph: separate steps with a blank line. Edit, reorder, delete or add "
              "steps; Continue revises them in this order.")
RESUME_HELP = ("Continue goes on after the last revised step. If you change the steps, revision starts "
               "over from step 1 with your steps (one per paragraph, separated by a blank line).")
FINISHED_SINCE = ("Run {run} has finished since this page showed it (in another tab, or from the command line): "
                  "Continue would replace its article, so nothing was changed. Open it again to read its article "
                  "and change a step with the step's buttons, or start a new run.")
STATUS_HINTS = {"draft": DRAFT_HELP, "interrupted": RESUME_HELP, "failed": RESUME_HELP, "budget": RESUME_HELP}


class DraftEditor:
    """The draft editor of one run panel (``panel``: the run it continues, and where it follows it)."""

    def __init__(self, panel: RunPanel) -> None:
        self.panel = panel

    def layout(self) -> None:
        with gr.Group(visible=False, elem_classes="rat-editor-box") as self.box:
            # the draft as step cards, kept in step with the textbox below (ui/step_actions.py)
            self.cards = gr.HTML(step_actions.draft_cards_html([]), js_on_load=step_actions.DRAFT_JS,
                                 elem_classes="rat-draft-cards")
            # right under the cards (the textbox below repeats them as text, for editing as text)
            self.continue_btn = gr.Button("Continue", variant="primary")
            self.text = gr.Textbox(label="Draft steps", info=DRAFT_HELP, lines=8, max_lines=40,
                                   elem_classes="rat-editor")

    def parts(self) -> list:
        return [self.box, self.text, self.cards]

    def wire(self):
        """Bind Continue; returns its event (for a Stop button's cancels)."""
        panel = self.panel
        checked = self.continue_btn.click(self.check, [panel.state, self.text], None, **PRIVATE)
        budget = [panel.budget] if panel.budget is not None else []
        cont = checked.success(self.on_continue, [panel.state, self.text, *budget], panel.stream_outputs(),
                               **STREAM)
        panel.settles(cont)
        return cont

    def settled(self, view: RunView, status: str) -> dict:
        """The editor of a run that is not streaming, whose stored status is ``status``: shown
        with the run's steps when the run can go on, else hidden."""
        resumable = bool(view.method) and view.method in METHODS and METHODS[view.method].resumable
        can_continue = resumable and (status in ("draft", "interrupted", "budget")
                                      or status == "failed" and (view.failed is None or view.failed.resumable))
        return {self.box: gr.Group(visible=can_continue),
                self.text: gr.Textbox(value=join_steps(view.steps), info=STATUS_HINTS.get(status, RESUME_HELP)),
                self.cards: step_actions.draft_cards_html(view.steps)}

    async def check(self, view: RunView | None, text: str) -> None:
        """Raises gr.Error for what the author must fix before a run can go on (no outputs,
        so the panel is left as it is)."""
        panel = self.panel
        if view is None or not view.run_id:
            raise gr.Error("There is no run to continue: start one in the Writer or open one in History.")
        if view.steps and not split_steps(text or ""):
            raise gr.Error("The draft has no steps left: add at least one step (separate steps with a blank line).")
        try:  # what resume refuses, before on_continue keeps the author's edited draft as a version
            run = panel.store.get_run(view.run_id)
            if run.status in FINISHED:
                raise gr.Error(FINISHED_SINCE.format(run=run.id))
            providers = providers_for(panel.runner.settings, run.settings.get("search"))
            panel.runner.check_resume(run.id, providers=providers)
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        await require_llm(panel.clients)

    async def on_continue(self, view: RunView, text: str, page: gr.Request | None = None,
                          budget: float | None = None):
        """Go on with the run (with the author's edited draft when changed); ``budget``: the Token
        budget's value, the run's new budget (0 or empty: the run keeps its own). A run stopped
        part-way through a step action (a redo) finishes it, and its new text is saved as a
        version as the step action saves it (``Authoring.pending_redo``)."""
        panel = self.panel
        steps = split_steps(text or "")
        draft = steps if steps and steps != view.steps else None  # None: go on as stored
        if draft is not None:  # the author's draft is their work: kept as a version before it is revised
            panel.versions.add(view.run_id, join_steps(draft), action="draft")
        run = panel.store.get_run(view.run_id)
        providers = providers_for(panel.runner.settings, run.settings.get("search"))
        pending, stored = panel.authoring.pending_redo(view.run_id), len(view.events)
        events = panel.live.resume(view.run_id, draft=draft, providers=providers,
                                   budget_tokens=int(budget) if budget and budget > 0 else None, timed=True)
        if pending is None:
            async for update in panel.follow(events, view, page=page):
                yield update
            return
        saved = False
        try:
            async for update in panel.follow(events, view, page=page):
                yield update
            saved = panel.acting.save_redo(view.run_id, pending.action)
        finally:  # the tab went away with the resume going on under it: saved when the run ends, on the server
            if not saved and len(view.events) > stored:
                await panel.acting.save_later(view.run_id, pending.action)
