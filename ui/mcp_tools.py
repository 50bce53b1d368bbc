"""The MCP tools: what an MCP client (Claude Desktop, an agent, the official ``mcp`` client) may do
with the server, over Gradio's MCP transport at ``/gradio_api/mcp/`` (streamable HTTP; SSE at
``/gradio_api/mcp/sse``).

    build(runner, live, store, results)   inside the whole app's Blocks: the four tools, each a
                                          ``gr.api`` endpoint, which Gradio serves as an MCP tool

The tools, each a typed method whose docstring is what the client shows:

- ``write_article(task, method, kind)``: runs a method on a task (one of the server's runs, as the
  Writer's: --concurrency bounds them together, and History shows it), returns its id and article;
- ``list_runs(limit)``: the newest runs, as ``python app.py history`` shows them;
- ``show_article(run_id)``: a run's article at its latest version, with its sources;
- ``leaderboard(source, task_set)``: the methods' ratings from people's votes or the LLM judge's.

Errors are mapped at the boundary: what the caller can fix (an unknown method or run id, an empty
task, a run that failed) is a ``ToolError`` (a ``gr.Error``) whose message names the fix, which the
client gets as a tool error with that text; never a traceback.

Who is served: only the whole app's Blocks has the tools (``ui.app.build_app``), and
``ui.server`` turns Gradio's MCP server on for that app alone, never with --arena-only; its
``Guard`` lets a request reach the endpoint only as it lets one reach the whole app (an admin's
session, or anyone when nobody logs in). The app's own events stay private, so they are no tools.
"""

from __future__ import annotations

from contextlib import aclosing

import gradio as gr

from annotation.errors import ArenaError
from annotation.results.results import Results
from annotation.voting.arena import SOURCES
from common.errors import RatStudioError, RunNotFound
from common.events import Failed, Final, RunStarted
from common.types import KINDS, RunStatus, Task
from core.article.markdown import to_markdown
from core.authoring import Authoring
from core.live import LiveRuns
from core.methods import METHODS
from core.runner import FINISHED, Runner
from data.versions import LATEST, MODEL
from ui.cli.arena import format_table
from ui.runs_table import history_text

#: The tools, by name: each is a method of ``McpTools`` and the name of its endpoint.
TOOLS = ("write_article", "list_runs", "show_article", "leaderboard")
#: The most runs ``list_runs`` gives at once.
MAX_LISTED = 200
#: What every refusal of an unknown run id says to do.
LIST_RUNS_HINT = "call list_runs for the ids of the stored runs (the first 8 characters of an id are enough)"


class ToolError(gr.Error):
    """What the caller can fix, as a tool error: Gradio shows it as any ``gr.Error``, and the MCP
    client gets its message as it is (``gr.Error``'s own ``str`` is its message quoted, as repr)."""

    def __init__(self, message: str):
        super().__init__(message, print_exception=False)

    def __str__(self) -> str:
        return self.message


class McpTools:
    """The tools over the app's services: ``runner`` and ``live`` (the server's runs, shared with the
    Writer), ``store`` (runs, read through its methods), ``results`` (the leaderboard's cache)."""

    def __init__(self, runner: Runner, live: LiveRuns, store, results: Results):
        self.runner, self.live, self.store, self.results = runner, live, store, results
        self.authoring = Authoring(store, runner.settings.method.cite_threshold)

    async def write_article(self, task: str, method: str = "rat", kind: str = "writing") -> str:
        """Write a long, sourced article with a language model and web search, by one of RAT Studio's
        methods, and store it as a run; takes from seconds to several minutes. The methods: rat (Retrieval
        Augmented Thoughts: draft, then check and revise each step against web pages), rat-step, rat-noncausal,
        cot-rag, rag-1, rag-5, cot, direct, itrg-refine, itrg-refresh, furepa, aag (and its ablations
        aag-nosum, aag-nocr, aag-noqr).

        Args:
            task: What the article is about, in the language to write it in, e.g. "The life of Jin Yong".
            method: The writing method, one of those above. Default rat.
            kind: The task's kind: writing, plan or qa. Default writing.
        Returns:
            The run's id, then the article in Markdown: its text with [n] marks and its numbered sources.
        """
        if method not in METHODS:
            raise ToolError(f"Unknown method {method!r}: give one of {', '.join(sorted(METHODS))} (rat if unsure).")
        if kind not in KINDS:
            raise ToolError(f"Unknown kind {kind!r}: give one of {', '.join(KINDS)}.")
        run_id, final, failed = "", None, None
        try:
            async with aclosing(self.live.start(method, Task(task, kind=kind))) as events:
                async for event in events:
                    if isinstance(event, RunStarted):
                        run_id = event.run_id
                    elif isinstance(event, Failed):
                        failed = event
                    elif isinstance(event, Final):
                        final = event
        except RatStudioError as exc:  # refused before the run existed: an empty or oversized task, a bad setting
            raise ToolError(str(exc)) from exc
        if final is None:  # failed (a budget stop says how to go on), stopped in the Writer, or the server stops
            if not run_id:
                raise ToolError("The run was stopped before it started: call write_article again.")
            raise ToolError(no_article(self.store.get_run(run_id), failed))
        return self._article(run_id, MODEL)  # the model's own text, as `python app.py run` prints it

    def list_runs(self, limit: int = 20) -> str:
        """List the stored runs, newest first: id, task, method, date, status, how many steps were checked
        against sources, how many sentences are cited, tokens and time.

        Args:
            limit: How many runs to list, newest first (1 to 200). Default 20.
        Returns:
            A text table, one run a line; its first column is the run id that show_article takes.
        """
        if not 1 <= limit <= MAX_LISTED:
            raise ToolError(f"limit {limit} is out of range: give 1 to {MAX_LISTED}.")
        runs = self.store.list_runs(limit=limit)
        if not runs:
            return "No runs yet: call write_article to write one."
        return history_text(runs)

    def show_article(self, run_id: str) -> str:
        """Show a stored run's article at its latest version (the author's newest edit, else the model's
        text), with its sources.

        Args:
            run_id: The run's id, as write_article or list_runs gives it (its first 8 characters are enough).
        Returns:
            The run's id, then the article in Markdown: its text with [n] marks and its numbered sources.
        """
        try:
            run = self.store.get_run(self.store.resolve_run_id(run_id))
        except RunNotFound as exc:
            raise ToolError(f"No run {run_id!r}: {LIST_RUNS_HINT}.") from exc
        except RatStudioError as exc:  # a prefix of several runs' ids
            raise ToolError(str(exc)) from exc
        if run.status not in FINISHED:
            raise ToolError(no_article(run))
        return self._article(run.id, LATEST)

    def leaderboard(self, source: str = "people", task_set: str = "") -> str:
        """The arena's leaderboard: the writing methods ranked by TrueSkill (mu, sigma, the conservative
        score mu - 3 sigma), with win rate, battles, wins/ties/losses and a Bradley-Terry rating with its
        95% interval.

        Args:
            source: Whose votes: people (the annotators' blind votes) or judge (the LLM judge's). Default people.
            task_set: Only the votes on the tasks of this task set; empty for every task. Default empty.
        Returns:
            A text table, best method first, under the number of votes it counts.
        """
        if source not in SOURCES:
            raise ToolError(f"Unknown source {source!r}: give one of {', '.join(SOURCES)}.")
        try:
            board = self.results.leaderboard(source, task_set.strip() or None)
        except ArenaError as exc:  # an unknown task set, named with the known ones
            raise ToolError(str(exc)) from exc
        return format_table(board)

    def _article(self, run_id: str, which: str) -> str:
        article = self.authoring.article(run_id, which)
        return f"Run id: {run_id}\n\n{to_markdown(article)}"


def no_article(run, failed: Failed | None = None) -> str:
    """Why ``run`` (a ``data.store.RunRow``, not finished) has no article, and what an MCP client's
    user can do: wait for it, continue it (the app's History, or ``python app.py resume``) or write
    again. ``failed``: the run's Failed event, when the caller has it (else the run's stored error)."""
    if run.status == RunStatus.RUNNING:
        return f"Run {run.id} is still running: call show_article again once it has finished."
    error = " ".join((failed.error if failed is not None else run.error or "").split()).rstrip(".")
    why = {RunStatus.DRAFT: "stopped after its draft", RunStatus.INTERRUPTED: "was stopped",
           RunStatus.BUDGET: "stopped at its token budget"}.get(run.status, "failed")
    said = f"Run {run.id} {why}" + (f": {error}." if error else ".")
    if run.status == RunStatus.BUDGET:  # its error says how to go on: with a larger --budget-tokens
        return said
    info = METHODS.get(run.method)
    if (failed is not None and not failed.resumable) or info is None or not info.resumable:
        return f"{said} It has no article; call write_article again."
    return (f"{said} What was done is kept: continue it in the app's History, or with "
            f"`python app.py resume {run.id}`.")


def build(runner: Runner, live: LiveRuns, store, results: Results) -> McpTools:
    """Add the tools to the Blocks being built (inside its ``with``): each a public ``gr.api``
    endpoint, named as its method, which Gradio's MCP server lists as a tool. Not queued: an MCP
    call goes straight to the method (Gradio's queue would call it back over HTTP, through the login);
    ``write_article``'s runs wait for their place among the server's runs (``live``) instead."""
    tools = McpTools(runner, live, store, results)
    for name in TOOLS:
        gr.api(getattr(tools, name), api_name=name, queue=False)
    return tools
