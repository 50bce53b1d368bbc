"""AAG (002) and its ablations: query rewriting, retrieval per question from the procedure
memory, summaries "Q: .. A: ..", a first answer updated with them, and a critic loop that stops
at "NO UPDATE REQUIRED" or at the cycle limit. Run in process (the fake model in process, the
procedure memory on a SQLite file, web search over HTTP to the local web)."""

from __future__ import annotations

import pytest

from common.events import DraftReady, Final, Note, PageRead, PassagesChosen, QueryMade, SearchDone, StepRevised
from common.types import Task
from core.methods.aag import CRITIC_CYCLES, parse_rewrite
from core.procedures import ProcedureMemory
from data.store import Store
from tests.fakes.method_scripts import MethodAuthor, method_context, of, run_method
from tests.fakes.model import FakeModel

TASK = Task("Set up a tested Django application with its Python packages.")

EDITED = "Edited answer {} keeps the first step and the second step, as the critic asked."


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "memory.db")
    yield s
    s.close()


@pytest.fixture
def memory(store):
    m = ProcedureMemory(store)
    m.add("a fresh computer", "install Python packages", ["Create a virtualenv", "pip install the packages"])
    m.add("a Django project", "test a Django application", ["Write tests with the test client", "Run manage.py test"])
    m.add("flour, eggs, milk", "pancakes", ["Whisk", "Fry"])
    return m


def _critic(*replies):
    return lambda prompt, body, n: replies[min(n, len(replies)) - 1]


def run(method, author, memory, web=None, **params):
    return run_method(method, TASK, method_context(FakeModel(author), web, params=params, memory=memory))


async def test_aag_pipeline_and_critic_stops_at_no_update_required(memory):
    author = MethodAuthor(handlers={"aag-critic": _critic("- Add a step that runs the tests.", "NO UPDATE REQUIRED")})
    events = await run("aag", author, memory)
    assert author.kinds() == ["aag-rewrite", "aag-first", "aag-summary", "aag-summary", "aag-update",
                              "aag-critic", "aag-edit", "aag-critic"]
    assert of(events, DraftReady)[0].steps == ("Install the tools", "Write the code")
    queries = [q.query for q in of(events, QueryMade)]
    assert queries == [TASK.prompt, "How to install Python packages?", "How to test a Django application?"]
    # retrieval is from the memory, not the web
    searches = of(events, SearchDone)
    assert searches and all(s.provider == "memory" for s in searches) and not of(events, PageRead)
    assert searches[1].results[0].url == "memory://procedure/1"
    assert searches[2].results[0].url == "memory://procedure/2"
    # one summary per question, stacked as "Q: .. A: .." into the update prompt
    summaries = [n.text for n in of(events, Note) if n.text.startswith("Q: ")]
    assert summaries == ["Q: How to install Python packages?\nA: Summary 1 of the procedures.",
                         "Q: How to test a Django application?\nA: Summary 2 of the procedures."]
    assert "Create a virtualenv" in author.of_kind("aag-summary")[0]
    update = author.of_kind("aag-update")[0]
    assert all(s in update for s in summaries) and "1. First step of the first answer." in update
    edit = author.of_kind("aag-edit")[0]
    assert "- Add a step that runs the tests." in edit and summaries[0] in edit
    assert any(n.text == "critic: NO UPDATE REQUIRED" for n in of(events, Note))
    revised = of(events, StepRevised)
    assert [r.after for r in revised] == ["1. First step of the first answer.\n\n2. Second step of the first answer.",
                                         "1. Updated first step.\n\n2. Updated second step.", EDITED.format(1)]
    final = events[-1]
    assert isinstance(final, Final) and final.text == EDITED.format(1)
    assert {"memory://procedure/1", "memory://procedure/2"} <= {s.url for s in final.sources}


async def test_aag_critic_stops_at_the_cycle_limit(memory):
    author = MethodAuthor(handlers={"aag-critic": lambda prompt, body, n: f"- Edit number {n}."})
    events = await run("aag", author, memory, **{"aag.critic_cycles": 2})
    assert author.kinds()[-4:] == ["aag-critic", "aag-edit", "aag-critic", "aag-edit"]
    assert author.kinds().count("aag-critic") == 2
    assert EDITED.format(1) in author.of_kind("aag-critic")[1], "the critic reviews the edited answer"
    assert any("stopped after 2 cycles" in n.text for n in of(events, Note))
    assert events[-1].text == EDITED.format(2)


async def test_aag_default_cycle_limit(memory):
    events = await run("aag-noqr", MethodAuthor(handlers={"aag-critic": lambda prompt, body, n: "- Change something."}),
                       memory)
    assert len([n for n in of(events, Note) if n.text.startswith("critic: - ")]) == CRITIC_CYCLES


async def test_aag_nosum_uses_the_procedures_themselves(memory):
    author = MethodAuthor()
    events = await run("aag-nosum", author, memory)
    assert "aag-summary" not in author.kinds()
    update = author.of_kind("aag-update")[0]
    assert "Create a virtualenv" in update and "Run manage.py test" in update
    assert update.count("memory://procedure/1") == 1, "duplicates are removed"
    assert isinstance(events[-1], Final)


async def test_aag_nocr_ends_with_the_updated_answer(memory):
    author = MethodAuthor()
    events = await run("aag-nocr", author, memory)
    assert "aag-critic" not in author.kinds() and author.kinds()[-1] == "aag-update"
    assert events[-1].text == "1. Updated first step.\n\n2. Updated second step."


async def test_aag_noqr_has_the_task_as_its_single_query(memory):
    author = MethodAuthor(handlers={"aag-critic": _critic("- Mention the test client.", "NO UPDATE REQUIRED")})
    events = await run("aag-noqr", author, memory)
    assert author.kinds() == ["aag-first", "aag-critic", "aag-edit", "aag-critic"]
    assert [q.query for q in of(events, QueryMade)] == [TASK.prompt]
    assert "Write tests with the test client" in author.of_kind("aag-critic")[0], "the procedures are the context"
    assert events[-1].text == EDITED.format(1)


async def test_aag_with_an_empty_memory_says_so_and_searches_the_web(store, web):
    author = MethodAuthor()
    events = await run("aag-nocr", author, ProcedureMemory(store), web)
    assert "procedure memory is empty" in of(events, Note)[0].text
    assert of(events, PageRead) and all(s.provider != "memory" for s in of(events, SearchDone))
    assert of(events, PassagesChosen)[0].passages
    assert isinstance(events[-1], Final)


@pytest.mark.parametrize("text, outline, questions", [
    ("Outline:\n1. A\n2. B\nQuestions:\n1. How to a?\n- How to b?", ["A", "B"], ["How to a?", "How to b?"]),
    ("**Outline:**\n- A\n\n**Questions:**\nQ1: How?\nQ2: Why?\nQ3: What?\nQ4: Who?\nQ5: Where?",
     ["A"], ["How?", "Why?", "What?", "Who?"]),
    ("1. Do A\n2. How to do B?\n3. How to do C?", ["Do A"], ["How to do B?", "How to do C?"]),
    ("Outline: A then B\nQuestions: How to A?", ["A then B"], ["How to A?"]),
])
def test_parse_rewrite(text, outline, questions):
    assert parse_rewrite(text, 4) == (outline, questions)


async def test_aag_end_to_end_stores_the_sources_its_summaries_used(app, llm):
    """Through the runner (HTTP, SQLite): the runner's memory reaches AAG, the summaries' sources
    are stored as SourcesUsed events, and the final sources are numbered from the events."""
    from common.events import SourcesUsed, TokenDelta
    from tests.fakes.method_scripts import collect, runner_with

    memory = ProcedureMemory(app.store)
    memory.add("a fresh computer", "install Python packages", ["Create a virtualenv", "pip install the packages"])
    memory.add("a Django project", "test a Django application",
               ["Write tests with the test client", "Run manage.py test"])
    llm.reply(MethodAuthor())
    runner = runner_with(app, memory=memory)
    events = await collect(runner.start("aag-nocr", TASK))
    used = of(events, SourcesUsed)
    assert [u.i for u in used] == [2, 3] and all(u.urls for u in used)
    assert app.store.events(events[0].run_id) == [e for e in events if not isinstance(e, TokenDelta)]
    final = events[-1]
    assert isinstance(final, Final) and final.sources
    assert {u for e in used for u in e.urls} <= {s.url for s in final.sources}
    stored = app.store.get_run(events[0].run_id)
    assert [s["url"] for s in stored.sources] == [s.url for s in final.sources]
