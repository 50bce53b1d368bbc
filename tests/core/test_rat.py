"""RAT and RAT step-scope. The method's logic runs in process (the fake model in process,
SearXNG search and page fetching over HTTP to the local web, trafilatura on the real fixture
pages); storage, resuming, retries and failures run end to end: the openai SDK over HTTP to the
fake server and a real SQLite file."""

from __future__ import annotations

import pytest

from common.errors import TaskError
from common.events import (
    DraftReady,
    Failed,
    Final,
    LLMCalled,
    Note,
    PageRead,
    PassagesChosen,
    QueryMade,
    RunStarted,
    SearchDone,
    StepRevised,
    StepStarted,
    TokenDelta,
)
from common.types import Task
from tests.fakes.method_scripts import method_context, run_method
from tests.fakes.model import FakeModel
from tests.fakes.scripts import RatAuthor, draft_steps, sections
from tests.helpers import collect, of

TASK = Task("Write a short history of Python 3 and its ecosystem.")



pytestmark = pytest.mark.both_databases


@pytest.fixture
def author(llm):
    a = RatAuthor(draft_steps(4))
    llm.reply(a)
    return a


@pytest.fixture
def in_process(web):
    """Run a RAT method in process with a RatAuthor of 4 steps: (author, run(method))."""
    a = RatAuthor(draft_steps(4))

    def run(method):
        return run_method(method, TASK, method_context(FakeModel(a), web))

    return a, run


async def test_rat_queries_are_causal(in_process):
    author, run = in_process
    events = await run("rat")
    steps = author.steps
    queries = author.of_kind("query")
    assert len(queries) == len(steps)
    for i, prompt in enumerate(queries, start=1):
        content = sections(prompt)["Content"]
        paragraphs = content.split("\n\n")
        assert len(paragraphs) == i
        # revised steps before i, then draft step i, and no later step
        for j in range(1, i):
            assert paragraphs[j - 1] == steps[j - 1] + " [revised]"
        assert paragraphs[-1] == steps[i - 1]
        for later in steps[i:]:
            assert later not in prompt
    assert isinstance(events[-1], Final)


async def test_rat_revises_each_step_once_and_keeps_sources(in_process):
    author, run = in_process
    events = await run("rat")
    revised = of(events, StepRevised)
    assert [e.i for e in revised] == [1, 2, 3, 4]
    assert len(author.of_kind("revise")) == 4
    assert all(e.sources for e in revised), "each step used at least one source"
    final = events[-1]
    assert final.text.count("[revised]") == 4
    for step in author.steps:
        assert step + " [revised]" in final.text
    used = {n for s in final.sources for n in s.steps}
    assert used == {1, 2, 3, 4}
    urls = {u for e in revised for u in e.sources}
    assert {s.url for s in final.sources} == urls
    # the revise prompt fences the passages it was shown, labelled with their URLs
    first_revise = author.of_kind("revise")[0]
    assert revised[0].sources[0] in first_revise


async def test_rat_continues_from_prior_events_and_numbers_sources_as_the_live_run(in_process, web):
    author, run = in_process
    live = await run("rat")
    cut = [n for n, e in enumerate(live) if isinstance(e, StepRevised)][1]
    prior = [e for e in live[: cut + 1] if not isinstance(e, TokenDelta)]
    calls_before = len(author.calls)
    resumed = await run_method("rat", TASK, method_context(FakeModel(author), web, prior=prior))
    assert [k for k, _ in author.calls[calls_before:]] == ["query", "revise", "query", "revise"]
    assert [e.i for e in of(resumed, StepRevised)] == [3, 4]
    assert resumed[-1].text == live[-1].text
    assert resumed[-1].sources == live[-1].sources, "sources from before the stop keep their numbers"


async def test_rat_event_order_and_storage(app, author):
    events = await collect(app.runner.start("rat", TASK))
    assert isinstance(events[0], RunStarted)
    run_id = events[0].run_id
    stored = app.store.events(run_id)
    assert stored == [e for e in events if not isinstance(e, TokenDelta)]
    assert any(isinstance(e, TokenDelta) for e in events), "tokens are streamed live"
    # per step: started, query, search, pages, passages, revised - in that order
    kinds = [type(e) for e in stored if getattr(e, "i", 0) == 2 and not isinstance(e, LLMCalled)]
    assert kinds[0] is StepStarted and kinds[1] is QueryMade and kinds[2] is SearchDone
    assert kinds[-1] is StepRevised and kinds[-2] is PassagesChosen
    assert set(kinds[3:-2]) == {PageRead}
    seqs = [r.seq for r in app.store.event_rows(run_id)]
    assert seqs == list(range(1, len(stored) + 1))
    run = app.store.get_run(run_id)
    assert run.status == "done" and run.steps_done == 4 and run.steps_total == 4
    assert run.llm_calls == 1 + 4 + 4
    assert run.completion_tokens > 0 and set(run.tokens_by_role) == {"draft", "query", "revise"}


async def test_rat_step_scope_rewrites_only_its_step(in_process):
    author, run = in_process
    events = await run("rat-step")
    prompts = author.of_kind("revise-step")
    assert len(prompts) == 4 and not author.of_kind("revise")
    for i, prompt in enumerate(prompts, start=1):
        parts = sections(prompt)
        assert parts["Paragraph to revise"] == author.steps[i - 1]
        for later in author.steps[i:]:
            assert later not in prompt
        if i > 1:
            assert author.steps[i - 2] + " [revised]" in parts["Answer so far (already revised, read-only)"]
    final = events[-1]
    assert final.text == "\n\n".join(s + " [revised]" for s in author.steps)


async def test_resume_after_interruption_continues_from_last_step(app, author, llm):
    events = await collect(app.runner.start("rat", TASK),
                           stop_after=lambda ev: len(of(ev, StepRevised)) == 2)
    run_id = events[0].run_id
    assert app.store.get_run(run_id).status == "interrupted"
    calls_before = len(author.calls)
    resumed = await collect(app.runner.resume(run_id))
    new_calls = author.calls[calls_before:]
    assert [k for k, _ in new_calls].count("draft") == 0, "the draft is not written again"
    assert [k for k, _ in new_calls].count("query") == 2, "only steps 3 and 4 are queried"
    assert [e.i for e in of(resumed, StepRevised)] == [3, 4]
    final = resumed[-1]
    assert isinstance(final, Final) and final.text.count("[revised]") == 4
    assert {n for s in final.sources for n in s.steps} == {1, 2, 3, 4}
    run = app.store.get_run(run_id)
    assert run.status == "done" and run.llm_calls == 9


async def test_llm_that_stays_down_fails_resumable_then_resumes(app, author, llm):
    state = {"n": 0}

    def flaky(body):
        state["n"] += 1
        if state["n"] > 4:  # draft, query 1, revise 1, query 2 ... then down
            from tests.fakes.llm_server import FakeReply
            return FakeReply.fail(503, "overloaded")
        return author(body)

    llm.reply(flaky)
    events = await collect(app.runner.start("rat", TASK))
    failed = events[-1]
    assert isinstance(failed, Failed) and failed.resumable
    assert "503" in failed.error or "server" in failed.error.lower()
    run_id = events[0].run_id
    assert app.store.get_run(run_id).status == "failed"
    assert app.store.events(run_id)[-1] == failed
    llm.reply(author)
    resumed = await collect(app.runner.resume(run_id))
    assert isinstance(resumed[-1], Final)
    assert [e.i for e in of(resumed, StepRevised)] == [2, 3, 4]


async def test_llm_429_is_retried_and_run_succeeds(app, author, llm):
    llm.fail_next(1, status=429)
    events = await collect(app.runner.start("rat", TASK))
    assert isinstance(events[-1], Final)
    notes = [e.text for e in of(events, Note)]
    assert len(notes) == 1 and "draft call failed" in notes[0] and "Retrying" in notes[0]
    assert app.store.events(events[0].run_id).count(of(events, Note)[0]) == 1, "the retry is stored"
    assert len(llm.requests) == 1 + 1 + 4 + 4


EXPECTED_ERRORS = {
    "/status/404": "404",
    "/status/500": "500",
    "/slow/5": "within 1 s",
    "/huge": "larger",
    "/binary": "application/octet-stream",
    "/image": "image/png",
    "/redirect-loop": "redirect",
}


@pytest.mark.parametrize("routes", [
    ["/status/404", "/status/500", "/slow/5", "/huge", "/binary"],
    ["/image", "/redirect-loop", "/redirect/2"],
])
async def test_bad_pages_become_page_errors_and_the_run_completes(tmp_path, llm, web, routes):
    from dataclasses import replace

    import app as app_module
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm, web, k=5)
    settings = replace(settings, fetch=replace(settings.fetch, timeout=1.0, max_bytes=1_000_000))
    app = app_module.build(settings)
    web.extra_results = [{"url": web.url(r), "title": f"bad {r}", "content": "a snippet"} for r in routes]
    llm.reply(RatAuthor(draft_steps(2)))
    events = await collect(app.runner.start("rat", TASK))
    assert isinstance(events[-1], Final)
    pages = of(events, PageRead)
    assert len(pages) == 2 * 5, "RAT reads at most 5 results per step"
    status = {p.url.replace(web.base, ""): (p.status, p.error) for p in pages}
    for route in routes:
        if route in EXPECTED_ERRORS:
            assert status[route][0] == "error"
            assert EXPECTED_ERRORS[route] in status[route][1].lower(), status[route][1]
        else:
            assert status[route][0] == "ok"
    assert len(of(events, StepRevised)) == 2


async def test_private_addresses_are_refused_without_the_setting(tmp_path, llm, web):
    from dataclasses import replace

    import app as app_module
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm, web)
    settings = replace(settings, fetch=replace(settings.fetch, allow_private_urls=False))
    app = app_module.build(settings)
    llm.reply(RatAuthor(draft_steps(1)))
    events = await collect(app.runner.start("rat", TASK))
    pages = of(events, PageRead)
    assert pages and all(p.status == "error" for p in pages)
    assert all("allow-private-urls" in p.error for p in pages)
    assert isinstance(events[-1], Final)


@pytest.mark.parametrize("prompt, words", [("", "empty"), ("   \n ", "empty"), ("x" * 20_001, "20,001")])
async def test_empty_or_oversized_task_is_refused(app, prompt, words):
    with pytest.raises(TaskError, match=words):
        await collect(app.runner.start("rat", Task(prompt)))
    assert app.store.list_runs() == []


async def test_unknown_method_is_refused(app):
    with pytest.raises(TaskError, match="Known methods"):
        await collect(app.runner.start("nope", TASK))


async def test_literal_slash_n_draft_is_split(app, llm):
    author = RatAuthor([], draft_text="First part./n/nSecond part.\n\nThird part.")
    llm.reply(author)
    events = await collect(app.runner.start("rat", TASK, draft_only=True))
    assert of(events, DraftReady)[0].steps == ("First part.", "Second part.", "Third part.")
    assert app.store.get_run(events[0].run_id).status == "draft"


async def test_an_edited_draft_is_revised_as_edited(app, author):
    events = await collect(app.runner.start("rat-step", TASK, draft_only=True))
    run_id = events[0].run_id
    assert app.store.get_run(run_id).status == "draft"
    edited = ["Step A: Python 3.6.0 added formatted string literals.", author.steps[2]]
    resumed = await collect(app.runner.resume(run_id, draft=edited))
    assert isinstance(resumed[0], RunStarted) and resumed[1] == DraftReady(steps=tuple(edited))
    assert [sections(p)["Paragraph to revise"] for p in author.of_kind("revise-step")] == edited
    assert resumed[-1].text == "\n\n".join(s + " [revised]" for s in edited)
    stored = app.store.events(run_id)
    assert [e for e in stored if isinstance(e, DraftReady)][-1].steps == tuple(edited)
    assert app.store.get_run(run_id).steps_total == 2
