"""Honest endings (issue 9): a refused revision keeps the text and says so; a run whose steps were
never checked against retrieved text ends "unsourced" (in the store, History, the CLI's exit code
and Markdown), is left out of the arena, and says why and what to do. End to end: the openai SDK
over HTTP to the fake model, SearXNG search and page fetching over HTTP, a real SQLite file."""

from __future__ import annotations

import re

from app import build
from common.events import Failed, Final, Note, StepRevised
from common.types import RunStatus, Task
from core.article.article import Article, unsourced_cause
from core.article.markdown import to_markdown
from core.authoring import Edit
from data import arena
from tests.conftest import make_settings
from tests.fakes.scripts import RatAuthor, draft_steps, kind_of
from tests.helpers import collect, of
from tests.test_app import cli

TASK = Task("Write a short history of Python 3 and its ecosystem.")
TALK = "I have made the requested changes to answer this question according to the WIKI."


class TalkingAuthor(RatAuthor):
    """A RatAuthor whose revisions of the steps in ``talk_on`` are talk about the task (the
    real reply of issue 9), counting revisions from 1."""

    def __init__(self, steps: list[str], talk_on: set[int]):
        super().__init__(steps)
        self.talk_on, self.revisions = talk_on, 0

    def __call__(self, body: dict) -> str:
        reply = super().__call__(body)
        if kind_of(self.calls[-1][1]).startswith("revise"):
            self.revisions += 1
            if self.revisions in self.talk_on:
                return TALK
        return reply


async def test_a_revision_that_talks_is_refused_and_the_run_says_which_step(app, llm):
    author = TalkingAuthor(draft_steps(3), talk_on={2})
    llm.reply(author)
    events = await collect(app.runner.start("rat-step", TASK))
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.DONE, "two of three steps were checked"
    revs = of(events, StepRevised)
    assert [bool(r.guarded) for r in revs] == [False, True, False]
    assert revs[1].after == revs[1].before == author.steps[1] and revs[1].rejected == TALK and revs[1].sources == ()
    (note,) = [n for n in of(events, Note) if n.i == 2 and n.level == "warning"]
    assert "revision of step 2 was not used" in note.text and "talks about the task" in note.text
    final = events[-1]
    assert isinstance(final, Final) and author.steps[1] in final.text, "the step's text is not lost"
    assert final.unchecked == (f"step 2: the model's revision was refused (it {revs[1].guarded}); kept as it stood",)
    assert all(2 not in s.steps for s in final.sources)
    assert (run.steps_sourced, run.steps_guarded, run.steps_total) == (2, 1, 3)
    article = Article(run.task, final.text, final.sources, unchecked=final.unchecked)
    assert "Not checked" not in to_markdown(article), "run notes are left out of the reader's document"
    md = to_markdown(article, notes=True)
    assert "## Not checked against a source\n\n- Step 2: the model's revision was refused" in md
    stored = [e for e in app.store.events(run.id) if isinstance(e, StepRevised)]
    assert stored[1].rejected == TALK, "the refused reply is stored with the event"


async def test_when_every_revision_is_refused_the_run_is_unsourced_and_keeps_the_draft(app, llm):
    author = TalkingAuthor(draft_steps(3), talk_on={1, 2, 3})
    llm.reply(author)
    events = await collect(app.runner.start("rat", TASK))
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.UNSOURCED
    assert events[-1].text == "\n\n".join(author.steps), "the draft, whole"
    assert events[-1].sources == () and len(events[-1].unchecked) == 3
    assert (run.steps_sourced, run.steps_guarded) == (0, 3)
    cause = unsourced_cause(app.store.events(run.id))
    assert cause.startswith("the model's revisions were refused at 3 step(s)") and "try a larger model" in cause
    assert "--min-keep" not in cause, "a lower --min-keep would not take a reply that is talk about the task"
    assert arena.sync_run_outputs(app.store) == 0, "an unsourced RAT output is not rated as RAT"


def test_the_unsourced_cause_names_min_keep_only_where_it_refused_a_revision():
    cut = StepRevised(1, "Step one.", "Step one.", guarded="was cut short at the token limit (raise --max-tokens)")
    short = StepRevised(2, "Step two.", "Step two.", guarded="keeps 30% of the text it replaces (lower --min-keep "
                                                              "to take it)")
    assert "--min-keep" not in unsourced_cause([cut])
    assert unsourced_cause([short, cut]).endswith("try a larger model, or lower --min-keep")


async def test_unreachable_search_ends_unsourced_with_the_cause(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(2)))
    settings = make_settings(tmp_path, llm, web)
    settings = settings.with_(search=settings.search.__class__(providers=("searxng",), retries=1, backoff=0.01,
                                                               searxng_url="http://127.0.0.1:9/"))
    app = build(settings)
    events = await collect(app.runner.start("rat", TASK))
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.UNSOURCED and run.steps_sourced == 0
    assert [r.skipped for r in of(events, StepRevised)] == ["no retrieved text for this step; kept as drafted"] * 2
    cause = unsourced_cause(app.store.events(run.id))
    assert cause.startswith("search failed for every step: ")
    assert "Error(" not in cause, "a sentence, not an exception's repr"


async def test_a_method_that_does_not_search_is_done_without_sources(app, llm):
    llm.reply(RatAuthor(draft_steps(2)))
    events = await collect(app.runner.start("cot", TASK))
    assert app.store.get_run(events[0].run_id).status == RunStatus.DONE
    assert events[-1].sources == () and events[-1].unchecked == ()


async def test_a_run_whose_answer_holds_no_text_fails_instead_of_being_done(app, llm):
    llm.reply(lambda body: " \n\n ")
    events = await collect(app.runner.start("direct", TASK))
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.FAILED and not of(events, Final)
    assert isinstance(events[-1], Failed) and "ended with no text" in events[-1].error and "--model" in events[-1].error


async def test_a_text_that_ends_where_the_token_limit_cut_the_answer_says_so(app, llm):
    """From a real itrg-refine run: its first round's answer, cut at the token limit, was the
    article ("... **3) 20"), and the run, its Markdown and the CLI said nothing of it."""
    from tests.fakes.llm_server import FakeReply
    from ui.article_view import export_markdown
    from ui.cli.progress import progress_line
    from ui.run_html import progress_text
    from ui.runview import fold

    cut_answer = "Python 3.0 came out in 2008.\n\n**3) 20"
    llm.queue(FakeReply(cut_answer, finish_reason="length"), "Python 3.0 came out in 2008.")
    cut_run, whole_run = [await collect(app.runner.start("direct", TASK)) for _ in range(2)]
    final = cut_run[-1]
    assert isinstance(final, Final) and final.cut and final.text.endswith("**3) 20")
    assert not whole_run[-1].cut, "an answer that ended on its own is not cut"
    stored = [e for e in app.store.events(cut_run[0].run_id) if isinstance(e, Final)]
    assert stored[-1].cut, "kept with the run: History, replay and exports read it"
    assert "cut at the token limit" in progress_line(final) and "--max-tokens" in progress_line(final)
    md = to_markdown(Article(TASK.prompt, final.text, final.sources, cut=final.cut))
    assert "**3) 20\n\n> **Cut short**: the text ends where the model's answer was cut" in md
    import io

    from docx import Document

    from core.article.docx import to_docx
    document = Document(io.BytesIO(to_docx(Article(TASK.prompt, final.text, (), cut=True))))
    paragraphs = [p.text for p in document.paragraphs]
    assert any(p.startswith("Cut short: the text ends where") for p in paragraphs)
    view = fold(app.store.events(cut_run[0].run_id))
    assert "cut at the token limit" in progress_text(view, "done")
    assert "Cut short" in export_markdown(view, Edit.of(final.text))
    ended = final.text.replace("**3) 20", "**3) 2010s: Python 3 won.**")
    assert "Cut short" not in export_markdown(view, Edit.of(ended)), "an author who wrote the end is not told so"


async def test_an_edited_draft_drops_the_sources_of_the_old_revisions(app, llm):
    llm.reply(RatAuthor(draft_steps(2)))
    first = await collect(app.runner.start("rat-step", TASK))
    assert first[-1].sources
    run_id = first[0].run_id
    # a finished run is never resumed (issue 36): stored as a run stopped after its revisions is
    app.store.update_run(run_id, status=RunStatus.INTERRUPTED)
    llm.reply(TalkingAuthor(draft_steps(2), talk_on={1, 2}))
    again = await collect(app.runner.resume(run_id, draft=["Step A: my own first step.", "Step B: mine too."]))
    assert again[-1].sources == (), "the revisions that used them are gone with the old draft"
    run = app.store.get_run(run_id)
    assert run.status == RunStatus.UNSOURCED and (run.steps_sourced, run.steps_guarded) == (0, 2)


def test_the_cli_exits_3_on_an_unsourced_run_and_the_markdown_says_so(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(2)))
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
           "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": "http://127.0.0.1:9/",
           "RAT_STUDIO_DB": str(tmp_path / "cli.db")}
    out = tmp_path / "a.md"
    proc = cli("run", TASK.prompt, "--out", str(out), env_extra=env)
    assert proc.returncode == 3, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: unsourced")]
    assert len(warnings) == 1 and "search failed for every step" in warnings[0]
    article = out.read_text()
    assert "> **Unsourced**: no part of this text was checked against retrieved text" in article
    assert draft_steps(2)[0] in article and draft_steps(2)[1] in article
    run_id = re.search(r"run id: ([0-9a-f]{12})", proc.stderr).group(1)
    shown = cli("show", run_id, env_extra=env)
    assert shown.returncode == 0 and "**Unsourced**" in shown.stdout
    history = cli("history", env_extra=env)
    assert re.search(rf"{run_id} .* unsourced ", history.stdout)


async def test_a_batch_counts_unsourced_runs_apart_and_runs_them_again(tmp_path, llm, web):
    from core.batch import Batch, TaskSpec, format_report

    llm.reply(RatAuthor(draft_steps(2)))
    settings = make_settings(tmp_path, llm, web)
    offline = settings.with_(search=settings.search.__class__(providers=("searxng",), retries=1, backoff=0.01,
                                                              searxng_url="http://127.0.0.1:9/"))
    app = build(offline)
    spec = TaskSpec("t1", TASK.prompt)
    report = await Batch(app.runner, app.store, ["rat", "cot"]).run([spec])
    assert {r.method: r.status for r in report.results} == {"rat": "unsourced", "cot": "done"}
    assert re.search(r"^rat\s+0\s+1\s+0\s+0\s", format_report(report), re.M), format_report(report)
    todo, skipped = Batch(app.runner, app.store, ["rat", "cot"]).plan([spec])
    assert [m for _, m in todo] == ["rat"] and [m for _, m in skipped] == ["cot"], "an unsourced pair is run again"
