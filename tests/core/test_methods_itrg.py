"""ITRG (003): the query is the question, then question + last output; refine rewrites the last
output with only the newly retrieved documents and skips a round with none; refresh writes anew
from the question and the documents and never sees its last output. Run in process (the fake
model in process, search and pages over HTTP from the local web)."""

from __future__ import annotations

import pytest

from common.events import Final, Note, PassagesChosen, QueryMade, StepRevised
from common.types import Task
from core.text.fencing import neutralise_fences
from tests.fakes.method_scripts import MethodAuthor, method_context, of, run_method
from tests.fakes.model import FakeModel

QUESTION = "When was Python 3.6.0 released and what did it bring?"


@pytest.fixture
def author():
    return MethodAuthor()


def run(method, task, author, web, **params):
    return run_method(method, task, method_context(FakeModel(author), web, params=params))


def _same_pages(web, n=5):
    """n pages that every search returns first, one short passage each, all about the question."""
    web.extra_results = []
    for j in range(1, n + 1):
        url = web.add_page(f"release-{j}", f"<html><head><title>Release note {j}</title></head><body>"
                                            f"<p>Python 3.6.0 release note number {j}: it was released in December "
                                            f"2016 with new features.</p></body></html>")
        web.extra_results.append({"url": url, "title": f"Release note {j}", "content": "Python 3.6.0 released"})


async def test_refine_skips_a_round_when_nothing_new_is_retrieved(author, web):
    _same_pages(web)
    events = await run("itrg-refine", Task(QUESTION), author, web, **{"itrg.iterations": 3})
    revised = of(events, StepRevised)
    assert [e.i for e in revised] == [1, 2, 3]
    assert not revised[0].skipped and revised[0].sources
    assert all(e.skipped and e.after == e.before == revised[0].after for e in revised[1:])
    # one document written (round 1, from R_1); no refine call at all
    assert author.kinds() == ["itrg-refresh"]
    assert len(of(events, QueryMade)) == 3, "every round still searches"
    assert len([n for n in of(events, Note) if "Nothing new" in n.text]) == 2
    assert events[-1].text == "Document 1 about Python releases and Mercurial."


async def test_refine_rewrites_the_last_output_with_only_new_documents(web):
    topics = ["Mercurial journey to Python 3 porting", "JSON parsing simdjson speed",
              "Managing Python environments virtualenv"]
    author = MethodAuthor(handlers={
        "itrg-refresh": lambda prompt, body, n: f"Draft one: {topics[0]}.",
        "itrg-refine": lambda prompt, body, n: f"Draft {n + 1}: {topics[n % len(topics)]}.",
    })
    events = await run("itrg-refine", Task("Python 3 history"), author, web, **{"itrg.iterations": 3})
    queries = [q.query for q in of(events, QueryMade)]
    assert queries[0] == "Python 3 history"
    assert queries[1] == "Python 3 history Draft one: " + topics[0] + "."
    chosen = {e.i: e.passages for e in of(events, PassagesChosen)}
    refines = author.of_kind("itrg-refine")
    assert refines, "at least one round retrieved something new"
    done = 0
    for t in (2, 3):
        step = of(events, StepRevised)[t - 1]
        if step.skipped:
            continue
        prompt = refines[done]
        done += 1
        before = {(p.url, p.text) for p in chosen[t - 1]}
        new = [p for p in chosen[t] if (p.url, p.text) not in before]
        old = [p for p in chosen[t] if (p.url, p.text) in before]
        assert new and all(neutralise_fences(p.text).strip() in prompt for p in new)
        assert all(neutralise_fences(p.text).strip() not in prompt for p in old)
        assert step.before in prompt, "refine sees its last output"
        assert set(step.sources) == {p.url for p in new}
    assert isinstance(events[-1], Final)


async def test_refresh_never_sees_its_last_output(author, web):
    events = await run("itrg-refresh", Task(QUESTION), author, web, **{"itrg.iterations": 4})
    refreshes = author.of_kind("itrg-refresh")
    assert len(refreshes) == 4 and author.kinds() == ["itrg-refresh"] * 4
    outputs = [e.after for e in of(events, StepRevised)]
    assert outputs == [f"Document {n} about Python releases and Mercurial." for n in range(1, 5)]
    for t, prompt in enumerate(refreshes, start=1):
        assert prompt.startswith("In the following task, you should write a document that contains the answer")
        assert QUESTION in prompt
        for earlier in outputs[: t - 1]:
            assert earlier not in prompt
    queries = [q.query for q in of(events, QueryMade)]
    assert queries[0] == QUESTION
    for t in range(2, 5):
        assert queries[t - 1] == f"{QUESTION} {outputs[t - 2]}", "the last output expands the query only"
    assert events[-1].text == outputs[-1]


async def test_qa_tasks_end_with_a_short_answer_from_the_last_document(author, web):
    events = await run("itrg-refresh", Task(QUESTION, "qa"), author, web, **{"itrg.iterations": 1})
    assert author.kinds() == ["itrg-refresh", "itrg-answer"]
    assert "Document 1 about Python releases" in author.of_kind("itrg-answer")[0]
    assert events[-1].text.endswith("Answer: December 2016")
