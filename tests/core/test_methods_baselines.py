"""DIRECT, CoT and RAG-k (001's baselines), run in process: the fake model in process, SearXNG
search and pages over HTTP from the local web. CoT also runs end to end (HTTP and SQLite)."""

from __future__ import annotations

import pytest

from common.errors import TaskError
from common.events import (
    DraftReady,
    Final,
    LLMCalled,
    PageRead,
    PassagesChosen,
    QueryMade,
    SearchDone,
    StepRevised,
    TokenDelta,
)
from common.settings import MethodSettings
from common.types import Task
from core.methods import METHODS
from core.methods.base import MethodContext
from core.methods.helpers import QA_INSTRUCTION, param, qa_normal_form, web_query
from core.text import prompts
from tests.fakes.method_scripts import MethodAuthor, collect, method_context, of, run_method
from tests.fakes.model import FakeModel

TASK = Task("Write a short history of Python 3 and its ecosystem.")
PAPER_METHODS = {
    "direct": "001", "cot": "001", "rag-1": "001", "rag-5": "001", "rat-noncausal": "001", "cot-rag": "001",
    "itrg-refine": "003", "itrg-refresh": "003", "aag": "002", "aag-nosum": "002", "aag-nocr": "002",
    "aag-noqr": "002", "furepa": "004",
}


def test_every_method_is_registered_with_a_description_and_its_paper():
    for name, paper in PAPER_METHODS.items():
        info = METHODS[name]
        assert info.description and "\n" not in info.description
        assert info.paper.startswith(paper)
    assert "stand-in" in METHODS["furepa"].description and "RoBERTa" in METHODS["furepa"].description


@pytest.fixture
def author():
    return MethodAuthor()


@pytest.fixture
def http_author(llm):
    a = MethodAuthor()
    llm.reply(a)
    return a


async def test_direct_sends_the_prompt_as_it_is(author):
    events = await run_method("direct", TASK, method_context(FakeModel(author)))
    assert author.kinds() == ["direct"]
    assert author.calls[0][1] == TASK.prompt
    assert not of(events, SearchDone) and not of(events, DraftReady)
    assert isinstance(events[-1], Final) and events[-1].text == "A direct answer."
    assert len(of(events, LLMCalled)) == 1 and of(events, TokenDelta)


async def test_direct_asks_qa_tasks_for_a_short_answer_line(author):
    await run_method("direct", Task("What is the capital of Australia?", "qa"), method_context(FakeModel(author)))
    assert author.calls[0][1] == "What is the capital of Australia?\n\n" + QA_INSTRUCTION


async def test_cot_uses_prompt_b1_and_splits_the_draft(app, http_author):
    author = http_author
    events = await collect(app.runner.start("cot", TASK))
    assert author.kinds() == ["draft"]
    assert author.calls[0][1] == prompts.DRAFT.format(question=TASK.prompt)
    assert of(events, DraftReady)[0].steps == tuple(author.steps)
    assert events[-1].text == "\n\n".join(author.steps)
    run = app.store.get_run(events[0].run_id)
    assert run.status == "done" and run.steps_total == len(author.steps)


@pytest.mark.parametrize("method, k", [("rag-1", 1), ("rag-5", 5)])
async def test_rag_k_searches_with_the_task_and_reads_k_results(author, web, method, k):
    events = await run_method(method, TASK, method_context(FakeModel(author), web))
    assert [q.query for q in of(events, QueryMade)] == [TASK.prompt]
    assert len(of(events, SearchDone)) == 1
    pages = of(events, PageRead)
    assert 1 <= len(pages) <= k and (k == 1) == (len(pages) == 1)
    chosen = of(events, PassagesChosen)[0].passages
    assert chosen and {p.url for p in chosen} <= {p.url for p in pages}
    assert author.kinds() == ["rag"]
    prompt = author.calls[0][1]
    assert TASK.prompt in prompt and chosen[0].url in prompt and "<passage>" in prompt
    final = events[-1]
    assert isinstance(final, Final) and final.text == "An answer written with the retrieved text."
    assert {s.url for s in final.sources} == {p.url for p in chosen}
    assert not of(events, StepRevised)


async def test_rag_without_results_answers_without_retrieved_text(author, web):
    web.fail_search_next = 10
    events = await run_method("rag-5", TASK, method_context(FakeModel(author), web))
    assert of(events, SearchDone)[0].error
    assert author.calls[0][1] == TASK.prompt
    assert isinstance(events[-1], Final) and events[-1].sources == ()


def test_param_reads_overrides_and_checks_their_type():
    def ctx(**params):
        return MethodContext(llm=None, search=None, fetch=None, settings=MethodSettings(params=params))

    assert param(ctx(), "itrg.iterations", 5) == 5
    given = ctx(**{"itrg.iterations": "3", "furepa.theta": "0.8", "x.flag": "yes"})
    assert param(given, "itrg.iterations", 5) == 3
    assert param(given, "furepa.theta", 0.6) == 0.8
    assert param(given, "x.flag", False) is True
    with pytest.raises(TaskError, match="itrg.iterations"):
        param(ctx(**{"itrg.iterations": "many"}), "itrg.iterations", 5)


def test_web_query_cuts_long_text_at_a_word():
    assert web_query("a  b\nc") == ("a b c", False)
    query, cut = web_query("word " * 400, limit=100)
    assert cut and len(query) <= 100 and query.endswith("word")


@pytest.mark.parametrize("text, expected", [
    ("The  Eiffel Tower!", "eiffel tower"), ("a cat, an owl", "cat owl"), ("U.S.A.", "usa"), ("  ", ""),
])
def test_qa_normal_form_is_squads(text, expected):
    assert qa_normal_form(text) == expected
