"""Runs checked only against search snippets (issue 21, item 7): when no page of a run could be
read and every source is a search snippet, the run is not sourced. It ends "unsourced" (History,
the CLI's exit code 3 with the cause, the arena leaves it out), and a step counts as sourced only
when it was checked against a page that was read. End to end: the fake model and the local web
over HTTP, a real SQLite file."""

from __future__ import annotations

from dataclasses import replace

import app as app_module
from common.events import DraftReady, Final, PassagesChosen, StepRevised
from common.types import Passage, RunStatus, Task
from core.article.article import unsourced_cause
from core.runner import _Tally
from data import arena
from tests.conftest import make_settings
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, of
from tests.test_app import cli

TASK = Task("Write a short history of Python 3 and its ecosystem.")


def _no_page_readable(tmp_path, llm, web):
    """The app with private addresses refused: the local web's pages cannot be read, but its
    search answers, so every step gets only the results' snippets."""
    settings = make_settings(tmp_path, llm, web)
    return app_module.build(replace(settings, fetch=replace(settings.fetch, allow_private_urls=False)))


async def test_a_run_with_only_snippets_is_unsourced_with_the_cause(tmp_path, llm, web):
    app = _no_page_readable(tmp_path, llm, web)
    llm.reply(RatAuthor(draft_steps(2)))
    events = await collect(app.runner.start("rat-step", TASK))
    final = events[-1]
    assert isinstance(final, Final) and final.sources, "the snippets are listed as sources"
    assert not any(s.read for s in final.sources)
    assert all(r.checked for r in of(events, StepRevised)), "each step was revised against its snippets"
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.UNSOURCED
    assert (run.steps_sourced, run.steps_done) == (0, 2), "a step checked against snippets is not sourced"
    cause = unsourced_cause(app.store.events(run.id))
    assert cause.startswith("only search snippets were used: no page could be read ("), cause
    assert "tried; last: " in cause and "--corpus" in cause, cause
    assert arena.sync_run_outputs(app.store) == 0, "an output checked against snippets only is not rated as RAT"


async def test_a_run_with_one_page_read_is_done_and_counts_only_that_step(tmp_path, llm, web):
    """Step 2's only result is a dead page (its snippet is used); steps 1 and 3 read pages."""

    class DeadSecondResult(RatAuthor):
        def __call__(self, body: dict) -> str:
            reply = super().__call__(body)
            queries = sum(kind == "query" for kind, _ in self.calls)
            dead = {"url": web.url("/status/404"), "title": "Dead", "content": "Python 3 was released in 2008."}
            web.extra_results = [dead] if queries == 2 and self.calls[-1][0] == "query" else []
            return reply

    app = app_module.build(make_settings(tmp_path, llm, web, k=1))
    llm.reply(DeadSecondResult(draft_steps(3)))
    events = await collect(app.runner.start("rat-step", TASK))
    chosen = of(events, PassagesChosen)
    assert [all(p.snippet for p in c.passages) for c in chosen] == [False, True, False], chosen
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.DONE
    assert run.steps_sourced == 2, "the step checked against a snippet is not counted"
    assert arena.sync_run_outputs(app.store) == 1


def test_the_tally_counts_a_step_read_before_a_resume():
    """A resumed run counts a step as sourced from the pages its stored events say were read."""
    read = PassagesChosen(1, (Passage("text", "https://a.example/"),))
    snip = PassagesChosen(2, (Passage("snip", "https://b.example/", snippet=True),))
    tally = _Tally(None, prior=[DraftReady(("one", "two", "three")), read, snip])
    tally.see(DraftReady(("one", "two", "three")))
    tally.see(StepRevised(1, "one", "one.", sources=("https://a.example/",)))
    tally.see(StepRevised(2, "two", "two.", sources=("https://b.example/",)))
    tally.see(PassagesChosen(3, (Passage("text", "https://c.example/"),)))
    tally.see(StepRevised(3, "three", "three.", sources=("https://c.example/",)))
    assert tally.fields(0.0)["steps_sourced"] == 2


def test_the_cause_says_snippets_only_where_the_final_had_no_page_read():
    from common.events import PageRead
    from common.types import Source

    dead = PageRead(1, "https://b.example/", "", "error", error="HTTP 404")
    snippet_only = Final("text", sources=(Source(1, "https://b.example/", "B", (1,), read=False, why="HTTP 404"),))
    cause = unsourced_cause([DraftReady(("one",)), dead, snippet_only])
    assert cause == ("only search snippets were used: no page could be read (1 tried; last: HTTP 404): "
                     "try another search provider, or --corpus with local files")
    assert unsourced_cause([DraftReady(("one",)), dead, Final("text")]).startswith("no page could be read (1 tried")


def test_run_exits_3_with_the_cause_when_only_snippets_were_used(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(2)))
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
           "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
           "RAT_STUDIO_DB": str(tmp_path / "cli.db")}  # private addresses refused: no page is read
    proc = cli("run", TASK.prompt, "--method", "rat-step", env_extra=env)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "warning: unsourced" in proc.stderr and "only search snippets were used: no page could be read (" \
        in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "## Search snippets only (page not read)" in proc.stdout
