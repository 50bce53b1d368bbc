"""The Leaderboard tab: TrueSkill and Bradley–Terry ratings of the methods from people's votes or
the LLM judge's (kept apart), the win-rate and battle-count matrices, the agreement between the
judge and people, a rating per criterion where votes answered criteria (a campaign's, issue 40),
and a button that runs the LLM judge."""

from __future__ import annotations

import gradio as gr

from annotation.accounts import Accounts
from annotation.admin import judge
from annotation.errors import ArenaError
from annotation.results import plots, ratings
from annotation.rooms import ArenaRooms
from common.errors import RatStudioError
from core.clients import Clients
from ui.listeners import PRIVATE
from ui.render_arena import (
    ANNOTATOR_HEADERS,
    CAMPAIGN_ANNOTATOR_HEADERS,
    CAMPAIGN_HEADERS,
    CAMPAIGN_HOW,
    CAMPAIGN_WIDTHS,
    CRITERION_HEADERS,
    CRITERION_STYLE_HEADERS,
    HEADERS,
    STYLE_HEADERS,
    agreement_text,
    annotator_rows,
    campaign_annotator_rows,
    campaign_rows,
    campaign_text,
    criterion_rows,
    criterion_style_rows,
    criterion_text,
    flags_text,
    judge_log,
    safe_markdown,
    style_rows,
    style_text,
    table_rows,
)

ALL = "__all__"  # the "every task set" choice
EVERY = ""  # the "every vote" campaign choice (a campaign's name is never empty)
SOURCE_CHOICES = [("People", "people"), ("LLM judge", "judge")]
BOOTSTRAP = 100

EXPLAIN = """TrueSkill (mu 25, sigma 25/3, tau 0) updates the ratings vote by vote in the order they were
cast; *Tie* and *Both are bad* count as draws, and the draw probability is the observed draw rate.
The order matters to TrueSkill, so the Bradley–Terry column fits all votes at once (ties as half
a win) on the Elo scale, with a 95% bootstrap interval. Win rate counts a draw as half a win."""

JUDGE_HELP = f"""The judge compares the newest outputs of two methods on every task they share,
{judge.N_CALLS} calls per pair by default, half with each output first, at temperature
{judge.TEMPERATURE}; the majority wins, and a verdict that follows the order rather than the
outputs counts as a tie. Pairs this model has judged already are skipped. Leave both methods
empty to judge every pair of methods."""


class LeaderboardTab:
    """``clients`` None: no LLM judge (an annotators' --arena-only deployment serves nothing that
    spends the model: neither the button nor the event behind it exists)."""

    def __init__(self, rooms: ArenaRooms, clients: Clients | None, accounts: Accounts | None = None):
        self.results, self.admin, self.clients, self.accounts = rooms.results, rooms.admin, clients, accounts

    # -- handlers -------------------------------------------------------------------------------
    def choices(self) -> dict:
        sets = [("every task set", ALL)] + [(s or "(no set)", s) for s in self.results.task_sets()]
        campaigns = [("every vote", EVERY)] + [(n, n) for n in self.results.campaigns.names()]
        picked = {self.task_set: gr.update(choices=sets), self.campaign: gr.update(choices=campaigns)}
        if self.clients is None:
            return picked
        methods = self.results.methods()
        return {**picked, self.method_a: gr.update(choices=methods), self.method_b: gr.update(choices=methods)}

    def show(self, source: str, task_set: str, leave_out: bool = False, plots_open: bool = False,
             campaign: str | None = EVERY) -> dict:
        """The summary and the table, and the plots when their accordion is open (``plots_open``):
        a closed accordion costs no figure; of one ``campaign``'s votes when one is chosen (the
        judge's votes have none: the summary says so). The service keeps the leaderboard until a
        vote arrives."""
        chosen = None if task_set in (None, ALL) else task_set
        empty = {self.table: [], self.ratings_plot: None, self.winrate_plot: None, self.battles_plot: None,
                 self.criteria_note: "", self.criteria_table: gr.update(value=[], visible=False)}
        try:
            board = self.results.leaderboard(source, chosen, bootstrap=BOOTSTRAP, leave_out_flagged=bool(leave_out),
                                           campaign=campaign or None)
            by_criterion = self.results.criterion_boards(source, chosen, bootstrap=BOOTSTRAP,
                                                         leave_out_flagged=bool(leave_out), campaign=campaign or None)
        except ArenaError as exc:  # a set that is gone since the page loaded, the judge by campaign: say so
            return {self.summary: safe_markdown(str(exc)), **empty}
        t, rows = board.tally, board.rows
        if not rows:
            hint = ("vote in the Arena tab" if source == "people" else
                    "run the LLM judge below" if self.clients else "run `python app.py judge`")
            return {self.summary: f"No {source} votes yet: {hint}.", **empty}
        # (the judge's votes belong to no campaign: no agreement with them is read by campaign)
        within = f" in campaign “{safe_markdown(campaign)}”" if campaign else ""
        agreed = "" if campaign else agreement_text(self.results.agreement(chosen))
        summary = (f"**{board.votes}** {source} votes{within} over **{len(board.methods)}** methods; draw probability "
                   f"{t.p_draw:.2f}. {agreed}")
        if source == "people":
            summary += flags_text(self.results.flags(), left_out=bool(leave_out))
        shown = {self.summary: summary, self.table: table_rows(rows), self.criteria_note: criterion_text(by_criterion),
                 self.criteria_table: gr.update(value=criterion_rows(by_criterion), visible=bool(by_criterion))}
        return {**shown, **(self.figures(board) if plots_open else {})}

    def figures(self, board) -> dict:
        t, rows, methods = board.tally, board.rows, board.methods
        return {
            self.ratings_plot: plots.ratings_figure(rows),
            self.winrate_plot: plots.matrix_figure(ratings.win_rate_matrix(t, methods), methods,
                                                   "Win rate (row against column)", percent=True),
            self.battles_plot: plots.matrix_figure(ratings.battle_matrix(t, methods), methods,
                                                   "Battles", percent=False),
        }

    def draw(self, source: str, task_set: str, leave_out: bool = False, campaign: str | None = EVERY) -> dict:
        """The plots, when their accordion is opened."""
        chosen = None if task_set in (None, ALL) else task_set
        try:
            board = self.results.leaderboard(source, chosen, bootstrap=BOOTSTRAP, leave_out_flagged=bool(leave_out),
                                           campaign=campaign or None)
        except ArenaError:
            board = None
        if board is None or not board.rows:
            return {self.ratings_plot: None, self.winrate_plot: None, self.battles_plot: None}
        return self.figures(board)

    def styled(self, source: str, task_set: str, leave_out: bool = False, is_open: bool = True,
               campaign: str | None = EVERY) -> dict:
        """The style-controlled ranking and what each style feature is worth, when its accordion
        is open (``is_open``; closed: nothing is fitted, nothing changes), of one ``campaign``'s
        votes when one is chosen."""
        if not is_open:
            return {self.style_note: gr.update(), self.style_table: gr.update(), self.criteria_style: gr.update()}
        chosen = None if task_set in (None, ALL) else task_set
        try:
            styled = self.results.style_board(source, chosen, leave_out_flagged=bool(leave_out),
                                            campaign=campaign or None)
            by_criterion = {c: self.results.criterion_style_board(c, source, chosen, leave_out_flagged=bool(leave_out),
                                                                  campaign=campaign or None)
                            for c in (self.results.criteria(campaign or None) if source == "people" else [])}
        except ArenaError as exc:
            return {self.style_note: str(exc), self.style_table: [],
                    self.criteria_style: gr.update(value=[], visible=False)}
        return {self.style_note: style_text(styled), self.style_table: style_rows(styled),
                self.criteria_style: gr.update(value=criterion_style_rows(by_criterion), visible=bool(by_criterion))}

    def people(self) -> dict:
        """The annotators' table (progress against their accounts' quotas, pace, flags), read when
        its accordion is opened or refreshed."""
        try:
            quotas = {a.name: a.quota for a in self.accounts.list()} if self.accounts is not None else {}
            agreed = self.results.people_agreement()
            rows = annotator_rows(self.results.annotators(quotas), agreed)
        except RatStudioError as exc:
            return {self.people_note: f"Annotators unavailable: {exc}", self.people_table: []}
        note = f"**{len(rows)}** annotator(s) with votes. {agreed.summary()}" if rows else "No people's votes yet."
        return {self.people_note: note, self.people_table: rows}

    def campaign_view(self, campaign: str | None = EVERY, is_open: bool = True) -> dict:
        """Every campaign's progress, and the annotators of the ``campaign`` chosen (with their
        agreement on its pairs), when the accordion is open (``is_open``; closed: nothing is read)."""
        if not is_open:
            return dict.fromkeys(self.campaign_outputs, gr.update())
        try:
            rows = campaign_rows([self.admin.campaign_progress(n) for n in self.results.campaigns.names()])
            chosen = self.admin.campaign_progress(campaign) if campaign else None
            agreed = self.results.people_agreement(campaign=campaign) if campaign else None
        except RatStudioError as exc:  # e.g. a campaign unknown to this store: say so, show no table
            return {self.campaigns_note: f"Campaigns unavailable: {safe_markdown(str(exc))}",
                    self.campaigns_table: [], self.campaign_note: "", self.campaign_people: []}
        note = f"**{len(rows)}** campaign(s)." if rows else "No campaign yet."
        pick = ("Choose a campaign above (*Campaign*) to see its annotators." if rows else "")
        return {self.campaigns_note: note, self.campaigns_table: rows,
                self.campaign_note: campaign_text(chosen, agreed) if chosen else pick,
                self.campaign_people: campaign_annotator_rows(chosen, agreed) if chosen else []}

    async def run_judge(self, method_a: str | None, method_b: str | None, n: float | None,
                        progress=gr.Progress()) -> str:  # noqa: B008 (Gradio injects it)
        picked = [m for m in (method_a, method_b) if m]
        if len(picked) == 1 or (len(picked) == 2 and method_a == method_b):
            raise gr.Error("Choose two different methods, or leave both empty to judge every pair.")
        calls = int(n or judge.N_CALLS)
        if calls < 1:
            raise gr.Error("The number of calls per pair must be at least 1.")

        def on_progress(done: int, total: int, line: str) -> None:
            progress((done, total), desc=line)

        try:
            report = await self.admin.judge(self.clients.llm, self.clients.settings.llm.model_for("judge"),
                                            methods=picked or None, n=calls, on_progress=on_progress)
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        return judge_log(report.summary(), report.lines)

    # -- layout ---------------------------------------------------------------------------------
    def layout(self) -> None:
        with gr.Row(equal_height=True):
            self.source = gr.Radio(SOURCE_CHOICES, value="people", label="Votes of")
            self.task_set = gr.Dropdown([("every task set", ALL)], value=ALL, label="Task set")
            self.campaign = gr.Dropdown([("every vote", EVERY)], value=EVERY, label="Campaign",
                                        elem_id="rat-campaign-pick")
            self.leave_out = gr.Checkbox(label="Leave out flagged voters", value=False,
                                         info="too fast to have read both answers, or always the same side")
            self.refresh = gr.Button("Refresh", scale=0)
        self.summary = gr.Markdown()
        self.table = gr.Dataframe(headers=HEADERS, interactive=False, wrap=True)
        self.criteria_note = gr.Markdown(elem_id="rat-criteria-note")
        self.criteria_table = gr.Dataframe(headers=CRITERION_HEADERS, interactive=False, wrap=True, visible=False,
                                           elem_id="rat-criteria-board")
        gr.Markdown(EXPLAIN)
        self.plots_open = gr.State(False)
        with gr.Accordion("Plots: ratings, win rates, battles", open=False) as self.plots:
            self.ratings_plot = gr.Plot(label="Ratings")
            with gr.Row():
                self.winrate_plot = gr.Plot(label="Win rate")
                self.battles_plot = gr.Plot(label="Battles")
        self.style_open = gr.State(False)
        with gr.Accordion("Style control: the ranking at equal length, citations, headings and lists",
                          open=False) as self.style_box:
            self.style_note = gr.Markdown()
            self.style_table = gr.Dataframe(headers=STYLE_HEADERS, interactive=False, wrap=True, elem_id="rat-style")
            self.criteria_style = gr.Dataframe(headers=CRITERION_STYLE_HEADERS, interactive=False, wrap=True,
                                               label="Style control per criterion", visible=False,
                                               elem_id="rat-criteria-style")
        with gr.Accordion("Annotators: progress, pace and flags", open=False) as self.people_box:
            self.people_note = gr.Markdown()
            self.people_table = gr.Dataframe(headers=ANNOTATOR_HEADERS, interactive=False, wrap=True,
                                             elem_id="rat-annotators")
        self.campaigns_open = gr.State(False)
        with gr.Accordion("Campaigns: progress and annotators", open=False) as self.campaigns_box:
            self.campaigns_note = gr.Markdown()
            self.campaigns_table = gr.Dataframe(headers=CAMPAIGN_HEADERS, interactive=False, wrap=True,
                                                column_widths=CAMPAIGN_WIDTHS, elem_id="rat-campaigns")
            self.campaign_note = gr.Markdown()
            self.campaign_people = gr.Dataframe(headers=CAMPAIGN_ANNOTATOR_HEADERS, interactive=False, wrap=True,
                                                elem_id="rat-campaign-annotators")
            gr.Markdown(CAMPAIGN_HOW)
        self.campaign_outputs = [self.campaigns_note, self.campaigns_table, self.campaign_note, self.campaign_people]
        if self.clients is None:
            return
        with gr.Accordion("LLM judge", open=False):
            gr.Markdown(JUDGE_HELP)
            with gr.Row():
                self.method_a = gr.Dropdown([], label="Method", value=None)
                self.method_b = gr.Dropdown([], label="against", value=None)
                self.n = gr.Number(judge.N_CALLS, label="Calls per pair", precision=0, minimum=1, maximum=50)
            self.judge_btn = gr.Button("Run LLM judge", variant="primary")
            self.judge_log = gr.Markdown()

    def _choice_outputs(self) -> list:
        return [self.task_set, self.campaign, *([self.method_a, self.method_b] if self.clients else [])]

    def wire(self) -> None:
        private = PRIVATE
        view = [self.summary, self.table, self.ratings_plot, self.winrate_plot, self.battles_plot, self.criteria_note,
                self.criteria_table]
        filters = [self.source, self.task_set, self.leave_out]
        changed = [self.refresh.click, self.source.change, self.task_set.change, self.leave_out.change,
                   self.campaign.change]
        gr.on(changed, self.show, inputs=[*filters, self.plots_open, self.campaign], outputs=view, **private)
        self.plots.expand(lambda: True, outputs=self.plots_open, **private).then(
            self.draw, inputs=[*filters, self.campaign], outputs=view[2:5], **private)
        self.plots.collapse(lambda: False, outputs=self.plots_open, **private)
        self.refresh.click(self.choices, outputs=self._choice_outputs(), **private)
        styled = [self.style_note, self.style_table, self.criteria_style]
        self.style_box.expand(lambda: True, outputs=self.style_open, **private).then(
            self.styled, inputs=[*filters, self.style_open, self.campaign], outputs=styled, **private)
        self.style_box.collapse(lambda: False, outputs=self.style_open, **private)
        gr.on(changed, self.styled, inputs=[*filters, self.style_open, self.campaign], outputs=styled, **private)
        people = [self.people_note, self.people_table]
        gr.on([self.people_box.expand, self.refresh.click], self.people, outputs=people, **private)
        self.campaigns_box.expand(lambda: True, outputs=self.campaigns_open, **private).then(
            self.campaign_view, inputs=[self.campaign, self.campaigns_open], outputs=self.campaign_outputs, **private)
        self.campaigns_box.collapse(lambda: False, outputs=self.campaigns_open, **private)
        gr.on([self.refresh.click, self.campaign.change], self.campaign_view,
              inputs=[self.campaign, self.campaigns_open], outputs=self.campaign_outputs, **private)
        if self.clients is None:
            return
        judged = self.judge_btn.click(self.run_judge, inputs=[self.method_a, self.method_b, self.n],
                                      outputs=self.judge_log, **private)
        judged.then(self.show, inputs=[*filters, self.plots_open], outputs=view, **private)


    def load_on(self, trigger) -> None:
        """Fill the tab on ``trigger`` (the tab's select event): nothing is computed when a page
        loads, so an annotator's arena page costs no leaderboard."""
        private = PRIVATE
        opened = trigger(self.choices, inputs=None, outputs=self._choice_outputs(), **private)
        opened.then(self.show, inputs=[self.source, self.task_set, self.leave_out, self.plots_open, self.campaign],
                    outputs=[self.summary, self.table, self.ratings_plot, self.winrate_plot, self.battles_plot,
                             self.criteria_note, self.criteria_table], **private)


def build(rooms: ArenaRooms, clients: Clients | None, accounts: Accounts | None = None) -> LeaderboardTab:
    """Create the Leaderboard tab's components inside the caller's ``gr.Tab``/``gr.Blocks`` context;
    with ``clients`` None, without the LLM judge; ``accounts``: for the annotators' quotas."""
    tab = LeaderboardTab(rooms, clients, accounts)
    tab.layout()
    tab.wire()
    return tab
