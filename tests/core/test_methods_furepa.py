"""FuRePA (004): masked iterations (the question and the evidence only), n sampled plans, an
answer when at least θ of them answer, else DBSCAN-filtered queries scored by what their
retrieval returns, the top new passage added to the evidence, a forced answer after T rounds.
Run in process (the fake model in process, search and pages over HTTP from the local web)."""

from __future__ import annotations

import json

import pytest

from common.events import Final, Note, QueryMade, StepRevised
from common.types import Passage, Task
from core.methods.furepa import filter_queries, parse_plan, score_queries
from tests.fakes.llm_server import FakeReply
from tests.fakes.method_scripts import MethodAuthor, collect, method_context, of, run_method, runner_with
from tests.fakes.model import FakeModel

QUESTION = "When was Python 3.6.0 released?"


def first(prompt, body, n):
    return f"[Search] Python 3.6.0 release qf{n}"


def plans(per_iteration: list[int], search: str = "Mercurial Python 3 support", n_plans: int = 5):
    """Plan replies: in iteration j (1-based, after the first), the first ``per_iteration[j-1]``
    of the n plans answer; every reply carries a unique analysis marker."""
    def reply(prompt, body, n):
        iteration, k = divmod(n - 1, n_plans)
        answers = per_iteration[min(iteration, len(per_iteration) - 1)]
        if k < answers:
            return f"[Analysis] reasoning-marker-{n} the context says December 2016.\n[Answer] December 2016"
        return f"[Analysis] reasoning-marker-{n} we need more.\n[Search] {search} qs{n}"
    return reply


def run(author, web, task=None, **params):
    return run_method("furepa", task or Task(QUESTION), method_context(FakeModel(author), web, params=params))


async def test_answers_when_at_least_theta_of_the_plans_answer(web):
    author = MethodAuthor(handlers={"furepa-first": first, "furepa-plan": plans([3])})
    events = await run(author, web)
    assert author.kinds() == ["furepa-first"] * 5 + ["furepa-plan"] * 5
    notes = [n.text for n in of(events, Note)]
    assert any(t.startswith("FuRePA: 0/5 plans answer") for t in notes)
    assert any(t.startswith("FuRePA: 3/5 plans answer (≥ θ = 0.6)") for t in notes)
    # the five first-round candidates are near-duplicates: DBSCAN keeps one, which is run
    assert [q.query for q in of(events, QueryMade)] == ["Python 3.6.0 release qf1"]
    evidence = of(events, StepRevised)
    assert len(evidence) == 1 and evidence[0].sources
    final = events[-1]
    assert isinstance(final, Final) and final.text == "December 2016"
    assert [s.url for s in final.sources] == list(evidence[0].sources)


async def test_searches_again_below_theta_and_masks_earlier_reasoning_and_queries(web):
    sent: list[tuple[str, str]] = []  # (request body, reply), in call order

    def logged(fn):
        def handler(prompt, body, n):
            reply = fn(prompt, body, n)
            sent.append((json.dumps(body, ensure_ascii=False), reply))
            return reply
        return handler

    author = MethodAuthor(handlers={"furepa-first": logged(first), "furepa-plan": logged(plans([2, 4]))})
    events = await run(author, web, Task(QUESTION, "qa"))
    notes = [n.text for n in of(events, Note)]
    assert any(t.startswith("FuRePA: 2/5 plans answer (θ = 0.6): searching") for t in notes)
    assert any(t.startswith("FuRePA: 4/5 plans answer") for t in notes)
    queries = [q.query for q in of(events, QueryMade)]
    assert queries[0] == "Python 3.6.0 release qf1" and len(queries) >= 2
    assert all(q.startswith("Mercurial Python 3 support qs") for q in queries[1:])
    assert len(of(events, StepRevised)) == 2, "one new piece of evidence per searching round"
    assert events[-1].text.endswith("Answer: December 2016")
    # masking: no prompt holds an earlier reply's reasoning or any query already made
    analyses = [reply.split("[Analysis]")[1].split("[")[0].strip() for _, reply in sent if "[Analysis]" in reply]
    assert len(analyses) == 10
    for c, (body, _) in enumerate(sent):
        for _, earlier in sent[:c]:
            if "[Analysis]" in earlier:
                assert earlier.split("[Analysis]")[1].split("[")[0].strip() not in body
        for query in queries:
            assert query not in body
    # the evidence, and only it, grows between rounds
    plan_prompts = author.of_kind("furepa-plan")
    assert plan_prompts[0].count("<passage>") == 1 and plan_prompts[-1].count("<passage>") == 2
    assert all(QUESTION in p for p in plan_prompts)


async def test_a_forced_answer_after_the_last_round(web):
    topics = ["Mercurial Python 3 support", "JSON parsing simdjson speed", "Managing Python environments"]
    author = MethodAuthor(handlers={
        "furepa-first": first,
        "furepa-plan": lambda prompt, body, n: f"[Analysis] not yet.\n[Search] {topics[(n - 1) // 5 % 3]}",
    })
    events = await run(author, web, **{"furepa.iterations": 2})
    assert author.kinds() == ["furepa-first"] * 5 + ["furepa-plan"] * 5 + ["furepa-forced"]
    forced = author.of_kind("furepa-forced")[0]
    assert "The search budget is spent" in forced and forced.count("<passage>") == 2
    assert any("forced answer" in n.text for n in of(events, Note))
    assert events[-1].text == "December 2016"


async def test_plans_without_a_query_and_a_forced_reply_without_answer_say_so(web):
    """From a real SmolLM2 run: its plans were prose cut at the token limit (one warning per
    plan, 'The draft answer reached the token limit'), the round said 'Every candidate query
    repeats one already run (0 candidates)', and the forced reply's last line, a question, was
    called the forced answer."""
    prose = "Python was created by Guido van Rossum and it has a long history that"
    author = MethodAuthor(handlers={
        "furepa-first": first,
        "furepa-plan": lambda prompt, body, n: FakeReply(prose, finish_reason="length") if n % 5 < 3 else prose,
        "furepa-forced": lambda prompt, body, n: "Let me think.\nWhat are the main differences between Python 2 and 3?",
    })
    events = await run(author, web, **{"furepa.iterations": 2})
    notes = [n for n in of(events, Note) if n.i == 2]
    cut = [n for n in notes if "token limit" in n.text]
    assert len(cut) == 1, "one Note a round"
    assert cut[0].text.startswith("3 of 5 plans were cut short at the token limit")
    assert not any("repeats one already run" in n.text for n in notes)
    (none,) = [n for n in notes if n.text.startswith("No plan gave a query")]
    assert none.level == "warning" and "5 had neither [Search] nor [Answer]" in none.text
    (forced,) = [n for n in of(events, Note) if n.i == 3]
    assert forced.level == "warning" and "has no [Answer]" in forced.text and "last line" in forced.text
    assert events[-1].text == "What are the main differences between Python 2 and 3?"


async def test_temperature_rises_when_every_candidate_repeats_a_run_query(web):
    author = MethodAuthor(handlers={
        "furepa-first": lambda prompt, body, n: "[Search] Python 3.6.0 release",
        "furepa-plan": lambda prompt, body, n: ("[Analysis] again.\n[Search] the Python 3.6.0 release" if n <= 5
                                                else "[Analysis] done.\n[Answer] December 2016"),
    })
    events = await run(author, web)
    temperatures = [b["temperature"] for b in author.bodies("furepa-first") + author.bodies("furepa-plan")]
    assert temperatures == [0.2] * 10 + [1.0] * 5
    assert any("repeats one already run" in n.text for n in of(events, Note))
    assert events[-1].text == "December 2016"


def test_filter_drops_repeats_and_keeps_one_query_per_cluster():
    assert filter_queries([], ["x"]) == []
    kept = filter_queries(["python release date", "python release date", "the python release date",
                           "mercurial python 3 port history timeline"], [])
    assert kept == ["python release date", "mercurial python 3 port history timeline"]
    assert filter_queries(["python release date", "json parser speed benchmarks numbers"],
                          ["When was the python release date"]) == ["json parser speed benchmarks numbers"]
    assert filter_queries(["python release"], ["python release"]) == []


def test_scorer_prefers_relevant_new_passages():
    question = "When was Python 3.6.0 released?"
    old = Passage(text="Python 3.6.0 was released in December 2016.", url="u1")
    found = {
        "q-old": [old],
        "q-new": [Passage(text="Python 3.6.0 brought f-strings; released December 2016 by the PSF.", url="u2")],
        "q-off": [Passage(text="Goats ate the island bare.", url="u3")],
    }
    scores, tops = score_queries(question, found, [old])
    assert tops["q-old"] is None and scores["q-old"] == 0
    assert scores["q-new"] > scores["q-off"] >= 0
    assert tops["q-new"].url == "u2"


@pytest.mark.parametrize("text, first_round, kind, body", [
    ("[Analysis] r\n[Search] who is it", False, "search", "who is it"),
    ("[Analysis] r [Answer] Jhansi, India", False, "answer", "Jhansi, India"),
    ("just a query", True, "search", "just a query"),
    ("just rambling", False, "", ""),
])
def test_parse_plan(text, first_round, kind, body):
    plan = parse_plan(text, first=first_round)
    assert (plan.kind, plan.text) == (kind, body)


async def test_per_iteration_temperature_schedule(web):
    author = MethodAuthor(handlers={"furepa-first": first, "furepa-plan": plans([3])})
    events = await run(author, web, **{"furepa.temperature_schedule": "per-iteration", "furepa.tp0": 0.5,
                                       "furepa.dtp": 0.25})
    temperatures = [b["temperature"] for b in author.bodies("furepa-first") + author.bodies("furepa-plan")]
    assert temperatures == [0.5] * 5 + [0.75] * 5
    assert events[-1].text == "December 2016"


async def test_an_unknown_schedule_is_refused_with_the_fix_before_a_run_is_created(app, llm):
    """End to end: the runner checks the declared choices before it stores anything (no failed
    run is left in History)."""
    from common.errors import ConfigError

    llm.reply(MethodAuthor())
    runner = runner_with(app, params={"furepa.temperature_schedule": "sometimes"})
    with pytest.raises(ConfigError, match="on-repeat, per-iteration"):
        await collect(runner.start("furepa", Task(QUESTION)))
    assert app.store.list_runs() == [] and llm.requests == []
