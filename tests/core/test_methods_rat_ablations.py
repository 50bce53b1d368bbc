"""RAT's ablations (001, tables 3 and 4): non-causal RAT makes every query from the initial
draft before any revision; CoT+RAG retrieves once with the whole draft and revises once. Run in
process (the fake model in process, search and pages over HTTP from the local web)."""

from __future__ import annotations

import pytest

from common.events import DraftReady, Final, QueryMade, SearchDone, StepRevised
from common.types import Task
from core.text import prompts
from tests.fakes.method_scripts import MethodAuthor, method_context, of, run_method
from tests.fakes.model import FakeModel
from tests.fakes.scripts import draft_steps, sections

TASK = Task("Write a short history of Python 3 and its ecosystem.")


@pytest.fixture
def author():
    return MethodAuthor(draft_steps(3))


def run(method, author, web, model=None):
    return run_method(method, TASK, method_context(model or FakeModel(author), web))


async def test_noncausal_makes_all_queries_before_any_revision(author, web):
    events = await run("rat-noncausal", author, web)
    steps = author.steps
    # model calls: the draft, every query, then every revision
    assert author.kinds() == ["draft"] + ["query"] * 3 + ["revise"] * 3
    # events: every query and every search before the first revision
    first_revision = next(n for n, e in enumerate(events) if isinstance(e, StepRevised))
    positions = [n for n, e in enumerate(events) if isinstance(e, (QueryMade, SearchDone))]
    assert len(positions) == 6 and max(positions) < first_revision
    # each query sees the initial draft up to its step, never a revision
    for i, prompt in enumerate(author.of_kind("query"), start=1):
        assert sections(prompt)["Content"] == "\n\n".join(steps[:i])
        assert "[revised]" not in prompt
    revised = of(events, StepRevised)
    assert [e.i for e in revised] == [1, 2, 3] and all(e.sources for e in revised)
    final = events[-1]
    assert isinstance(final, Final) and final.text == "\n\n".join(s + " [revised]" for s in steps)
    assert {n for s in final.sources for n in s.steps} == {1, 2, 3}


async def test_every_rat_method_asks_for_its_query_the_same_way(author, web):
    """From a real rat-noncausal run: its query calls had no cap of their own, ran to the token
    limit (298 tokens) and warned about it, where rat caps them (only the first line is used)."""
    from core.methods.rat import QUERY_MAX_TOKENS

    for method in ("rat", "rat-noncausal"):  # rat-step shares rat's code
        model = FakeModel(MethodAuthor(draft_steps(3)))
        await run(method, None, web, model)
        assert [c.max_tokens for c in model.calls if c.role == "query"] == [QUERY_MAX_TOKENS] * 3, method


async def test_cot_rag_retrieves_once_with_the_whole_draft(author, web):
    events = await run("cot-rag", author, web)
    draft = "\n\n".join(author.steps)
    assert author.kinds() == ["draft", "revise"], "no query-writing call: the draft is the query"
    queries = of(events, QueryMade)
    assert [q.query for q in queries] == [" ".join(draft.split())]
    assert len(of(events, SearchDone)) == 1 and of(events, SearchDone)[0].query == queries[0].query
    assert sections(author.of_kind("revise")[0])["Answer"] == draft
    revised = of(events, StepRevised)
    assert len(revised) == 1 and revised[0].before == draft and revised[0].sources
    assert of(events, DraftReady)[0].steps == tuple(author.steps)
    assert events[-1].text == prompts.tidy_reply(author.default("revise", author.of_kind("revise")[0], 1))


async def test_cot_rag_keeps_the_draft_when_search_fails(author, web):
    web.fail_search_next = 10
    events = await run("cot-rag", author, web)
    assert author.kinds() == ["draft"]
    assert of(events, StepRevised)[0].skipped
    assert events[-1].text == "\n\n".join(author.steps)
