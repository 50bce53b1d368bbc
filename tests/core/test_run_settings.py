"""A run's own settings (the Writer's Run settings): ``Runner.start(..., settings=...)`` runs with
them, stores them with the run, and a resume uses them again. End to end: the openai SDK over
HTTP to the fake server (where --max-tokens and the model of each role are applied, in
``core.llm.LLMClient``; the in-process ``tests.fakes.model.FakeModel`` stands in for that client,
so it would not see them), the local web's SearXNG, and a real SQLite file."""

from __future__ import annotations

from dataclasses import replace

from common.events import PageRead, SearchDone
from common.types import Task
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, of

TASK = Task("Write a short history of Python 3 and its ecosystem.")


def run_settings(app, *, k: int | None = None, max_tokens: int | None = None, model: str | None = None,
                 role_models: dict | None = None):
    """The app's settings with a run's own choices."""
    s = app.settings
    llm = replace(s.llm, model=model or s.llm.model, max_tokens=max_tokens,
                  role_models=dict(s.llm.role_models if role_models is None else role_models))
    return replace(s, llm=llm, method=replace(s.method, k=k or s.method.k))


def results_read(events) -> list[int]:
    """How many results each search of a run returned, and how many pages each step read."""
    pages: dict[int, int] = {}
    for e in of(events, PageRead):
        pages[e.i] = pages.get(e.i, 0) + 1
    return [len(e.results) for e in of(events, SearchDone)] + list(pages.values())


async def test_a_run_with_its_own_k_and_max_tokens_uses_and_stores_them(app, llm):
    llm.reply(RatAuthor(draft_steps(2)))
    default = await collect(app.runner.start("rat-step", TASK))
    assert max(results_read(default)) > 2, "the server's k reads more than 2: the check below can fail"
    assert all(r.get("max_tokens", 10_000) > 50 for r in llm.requests)
    llm.requests.clear()

    events = await collect(app.runner.start("rat-step", TASK, settings=run_settings(app, k=2, max_tokens=50)))
    assert of(events, SearchDone) and max(results_read(events)) <= 2
    assert llm.requests and all(0 < r["max_tokens"] <= 50 for r in llm.requests), \
        [r.get("max_tokens") for r in llm.requests]
    stored = app.store.get_run(events[0].run_id).settings
    assert (stored["k"], stored["max_tokens"]) == (2, 50)
    assert set(stored["chosen"]) == {"k", "max_tokens"}, "what the run set for itself, apart from the server's"
    assert app.runner.settings.method.k == app.settings.method.k == 5, "the server's settings are untouched"
    assert app.store.get_run(default[0].run_id).settings["chosen"] == []


async def test_a_model_override_reaches_the_requests_per_role(app, llm):
    llm.reply(RatAuthor(draft_steps(2)))
    settings = run_settings(app, model="fake-draft", role_models={"revise": "fake-judge"})
    events = await collect(app.runner.start("rat-step", TASK, settings=settings))
    models = {r["model"] for r in llm.requests}
    assert models == {"fake-draft", "fake-judge"}, models
    stored = app.store.get_run(events[0].run_id).settings
    assert stored["model"] == "fake-draft" and stored["role_models"] == {"revise": "fake-judge"}
    llm.requests.clear()
    await collect(app.runner.start("direct", Task("Who wrote Hamlet?")))
    assert {r["model"] for r in llm.requests} == {app.settings.llm.model}, "the next run has the server's model"


async def test_a_resumed_run_uses_the_settings_it_started_with(app, llm):
    llm.reply(RatAuthor(draft_steps(2)))
    settings = run_settings(app, k=2, max_tokens=50, model="fake-draft")
    drafted = await collect(app.runner.start("rat-step", TASK, draft_only=True, settings=settings))
    llm.requests.clear()
    resumed = await collect(app.runner.resume(drafted[0].run_id))
    assert of(resumed, SearchDone) and max(results_read(resumed)) <= 2
    assert llm.requests and all(r["max_tokens"] <= 50 and r["model"] == "fake-draft" for r in llm.requests)
