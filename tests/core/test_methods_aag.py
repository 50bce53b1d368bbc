"""AAG (002) and its ablations: query rewriting, retrieval per question from the procedure
memory, summaries "Q: .. A: ..", a first answer updated with them, and a critic loop that stops
at "NO UPDATE REQUIRED" or at the cycle limit."""

from __future__ import annotations

import pytest

from common.events import DraftReady, Final, Note, PageRead, PassagesChosen, QueryMade, SearchDone, StepRevised
from common.types import Task
from core.methods.aag import CRITIC_CYCLES, parse_rewrite
from core.procedures import ProcedureMemory
from tests.fakes.method_scripts import MethodAuthor, collect, of, patch_context

TASK = Task("Set up a tested Django application with its Python packages.")


@pytest.fixture
def memory(services):
    m = ProcedureMemory(services.store)
    m.add("a fresh computer", "install Python packages", ["Create a virtualenv", "pip install the packages"])
    m.add("a Django project", "test a Django application", ["Write tests with the test client", "Run manage.py test"])
    m.add("flour, eggs, milk", "pancakes", ["Whisk", "Fry"])
    return m


def _critic(*replies):
    return lambda prompt, body, n: replies[min(n, len(replies)) - 1]


async def test_aag_pipeline_and_critic_stops_at_no_update_required(services, llm, memory, monkeypatch):
    author = MethodAuthor(handlers={"aag-critic": _critic("- Add a step that runs the tests.", "NO UPDATE REQUIRED")})
    llm.reply(author)
    patch_context(monkeypatch, services, memory=memory)
    events = await collect(services.runner.start("aag", TASK))
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
                                         "1. Updated first step.\n\n2. Updated second step.", "Edited answer 1."]
    final = events[-1]
    assert isinstance(final, Final) and final.text == "Edited answer 1."
    assert {"memory://procedure/1", "memory://procedure/2"} <= {s.url for s in final.sources}


async def test_aag_critic_stops_at_the_cycle_limit(services, llm, memory, monkeypatch):
    author = MethodAuthor(handlers={"aag-critic": lambda prompt, body, n: f"- Edit number {n}."})
    llm.reply(author)
    patch_context(monkeypatch, services, memory=memory, params={"aag.critic_cycles": 2})
    events = await collect(services.runner.start("aag", TASK))
    assert author.kinds()[-4:] == ["aag-critic", "aag-edit", "aag-critic", "aag-edit"]
    assert author.kinds().count("aag-critic") == 2
    assert "Edited answer 1." in author.of_kind("aag-critic")[1], "the critic reviews the edited answer"
    assert any("stopped after 2 cycles" in n.text for n in of(events, Note))
    assert events[-1].text == "Edited answer 2."


async def test_aag_default_cycle_limit(services, llm, memory, monkeypatch):
    llm.reply(MethodAuthor(handlers={"aag-critic": lambda prompt, body, n: "- Change something."}))
    patch_context(monkeypatch, services, memory=memory)
    events = await collect(services.runner.start("aag-noqr", TASK))
    assert len([n for n in of(events, Note) if n.text.startswith("critic: - ")]) == CRITIC_CYCLES


async def test_aag_nosum_uses_the_procedures_themselves(services, llm, memory, monkeypatch):
    author = MethodAuthor()
    llm.reply(author)
    patch_context(monkeypatch, services, memory=memory)
    events = await collect(services.runner.start("aag-nosum", TASK))
    assert "aag-summary" not in author.kinds()
    update = author.of_kind("aag-update")[0]
    assert "Create a virtualenv" in update and "Run manage.py test" in update
    assert update.count("memory://procedure/1") == 1, "duplicates are removed"
    assert isinstance(events[-1], Final)


async def test_aag_nocr_ends_with_the_updated_answer(services, llm, memory, monkeypatch):
    author = MethodAuthor()
    llm.reply(author)
    patch_context(monkeypatch, services, memory=memory)
    events = await collect(services.runner.start("aag-nocr", TASK))
    assert "aag-critic" not in author.kinds() and author.kinds()[-1] == "aag-update"
    assert events[-1].text == "1. Updated first step.\n\n2. Updated second step."


async def test_aag_noqr_has_the_task_as_its_single_query(services, llm, memory, monkeypatch):
    author = MethodAuthor(handlers={"aag-critic": _critic("- Mention the test client.", "NO UPDATE REQUIRED")})
    llm.reply(author)
    patch_context(monkeypatch, services, memory=memory)
    events = await collect(services.runner.start("aag-noqr", TASK))
    assert author.kinds() == ["aag-first", "aag-critic", "aag-edit", "aag-critic"]
    assert [q.query for q in of(events, QueryMade)] == [TASK.prompt]
    assert "Write tests with the test client" in author.of_kind("aag-critic")[0], "the procedures are the context"
    assert events[-1].text == "Edited answer 1."


async def test_aag_with_an_empty_memory_says_so_and_searches_the_web(services, llm, monkeypatch):
    author = MethodAuthor()
    llm.reply(author)
    patch_context(monkeypatch, services, memory=ProcedureMemory(services.store))
    events = await collect(services.runner.start("aag-nocr", TASK))
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
