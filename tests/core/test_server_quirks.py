"""Servers that refuse a parameter for a model (issue 25, item 2), as OpenAI's reasoning models
refuse ``temperature`` and ``max_tokens``: the 400 is retried once without it (or with
``max_completion_tokens``), remembered for that server and model, and said once; a run that
depends on the parameter says what it could not apply; other 400s are not retried."""

from __future__ import annotations

import pytest

from annotation.admin import judge
from common.errors import LLMBadRequest
from common.events import Final, Note
from common.settings import LLMSettings
from common.types import Task
from core.llm import Completion, Dropped, LLMClient
from core.methods import METHODS
from core.server_notes import ServerNotes
from tests.annotation.conftest import seed_outputs
from tests.fakes.llm_server import REFUSALS, FakeReply
from tests.fakes.method_scripts import MethodAuthor, every_method_author, method_context, run_method
from tests.fakes.model import FakeModel
from tests.helpers import collect, of

TASK = Task("When was Python 3.6.0 released?", "qa")


def client_for(llm, notes: ServerNotes | None = None, **changes) -> LLMClient:
    """A client of its own; with ``notes``, one that shares them (as ``Clients`` makes each run's)."""
    return LLMClient(LLMSettings(**{"base_url": llm.base_url, "model": "fake-model", "timeout": 5.0,
                                    "max_retries": 2, "backoff": 0.01, **changes}), notes=notes)


async def items_of(client: LLMClient, **kwargs) -> list:
    return [item async for item in client.stream("q", role="draft", **kwargs)]


async def test_a_refused_temperature_is_retried_without_it_remembered_and_said_once_per_client(llm):
    llm.refuse = {"temperature"}
    async with client_for(llm) as client:
        first = await items_of(client, temperature=0.7)
        second = await items_of(client, temperature=0.2)
    (said,) = [i for i in first if isinstance(i, Dropped)]
    assert (said.param, said.value, said.model, said.replacement) == ("temperature", 0.7, "fake-model", "")
    assert said.reason == REFUSALS["temperature"][1].format(value=0.7), "the server's own words"
    assert "temperature 0.7 is not applied" in said.message and "server's default" in said.message
    assert isinstance(first[-1], Completion) and first[-1].dropped == (said,)
    assert not [i for i in second if isinstance(i, Dropped)], "said once"
    assert second[-1].dropped[0].value == 0.2, "the call still knows what it went without"
    assert ["temperature" in body for body in llm.requests] == [True, False, False], "one 400, then never again"
    async with client_for(llm, notes=client.notes) as another:  # another run: no 400 again, but it says so too
        third = await items_of(another, temperature=0.7)
    assert len(llm.requests) == 4 and "temperature" not in llm.requests[-1]
    assert [i.param for i in third if isinstance(i, Dropped)] == ["temperature"]
    async with client_for(llm) as alone:  # a client with notes of its own learnt nothing from the others
        await items_of(alone, temperature=0.7)
    assert ["temperature" in body for body in llm.requests[4:]] == [True, False], "its own 400"


async def test_what_one_model_refused_is_not_left_out_for_another(llm):
    llm.refuse = {"temperature"}
    async with client_for(llm, role_models={"judge": "fake-judge"}) as client:
        await items_of(client, temperature=0.7)
        llm.refuse = set()
        await client.complete("q", role="judge", temperature=0.7)
    assert llm.requests[-1]["model"] == "fake-judge" and llm.requests[-1]["temperature"] == 0.7


async def test_a_refused_max_tokens_is_sent_as_max_completion_tokens(llm):
    llm.refuse = {"max_tokens"}
    async with client_for(llm) as client:
        items = await items_of(client, max_tokens=50)
    (said,) = [i for i in items if isinstance(i, Dropped)]
    assert said.replacement == "max_completion_tokens" and "sent as max_completion_tokens" in said.message
    assert llm.requests[-1]["max_completion_tokens"] == 50 and "max_tokens" not in llm.requests[-1]


async def test_two_refused_parameters_are_each_left_out_once(llm):
    llm.refuse = {"temperature", "max_tokens"}
    async with client_for(llm) as client:
        items = await items_of(client, temperature=0.3, max_tokens=50)
    assert sorted(i.param for i in items if isinstance(i, Dropped)) == ["max_tokens", "temperature"]
    assert len(llm.requests) == 3 and isinstance(items[-1], Completion)


@pytest.mark.parametrize("message", [
    "Unsupported parameter: 'logit_bias' is not supported with this model.",  # not one we send
    "This model's maximum context length is 8192 tokens; max_tokens is too large.",  # a long prompt
    "Invalid value for temperature: must be between 0 and 2.",  # a value out of range, not a refusal
])
async def test_other_400s_are_not_retried(llm, message):
    llm.queue(FakeReply.fail(400, message))
    async with client_for(llm) as client:
        with pytest.raises(LLMBadRequest):
            await items_of(client, temperature=0.7, max_tokens=50)
    assert len(llm.requests) == 1 and not client.notes.quirks


async def test_a_refusal_that_persists_is_not_retried_forever(llm):
    llm.reply(lambda body: FakeReply.fail(400, REFUSALS["temperature"][1].format(value=1)))
    async with client_for(llm) as client:
        with pytest.raises(LLMBadRequest):
            await items_of(client, temperature=0.7)
    assert len(llm.requests) == 2, "once without it, then the 400 is the answer"


# -- runs that depend on the parameter ---------------------------------------------------------


async def test_furepa_on_a_temperature_refusing_server_finishes_with_one_note(app, llm):
    llm.refuse = {"temperature"}
    llm.reply(MethodAuthor())
    events = await collect(app.runner.start("furepa", TASK))
    assert isinstance(events[-1], Final)
    (note,) = [n for n in of(events, Note) if "temperature" in n.text and "refused" in n.text]
    assert note.level == "warning" and "temperature 0.2 is not applied" in note.text, "FuRePA's tp0"
    assert sum("temperature" in body for body in llm.requests) == 1, "refused once, remembered after"
    stored = [n for n in of(app.store.events(events[0].run_id), Note) if "refused" in n.text]
    assert stored == [note]


async def test_the_in_process_stand_in_refuses_as_the_client_reports_it(shared_web):
    model = FakeModel(MethodAuthor())
    model.refuse = {"temperature"}
    events = await run_method("furepa", TASK, method_context(model, shared_web))
    assert isinstance(events[-1], Final)
    assert len([n for n in of(events, Note) if "refused temperature" in n.text]) == 1
    assert {c.temperature for c in model.calls} == {None}


async def test_the_judge_says_it_could_not_sample_at_its_temperature(app, llm):
    llm.refuse = {"temperature"}
    llm.reply(lambda body: "Verdict: A")
    seed_outputs(app.store, {"Describe owls": {"rat": "owls", "cot": "birds"}})
    report = await judge.judge_store(app.store, app.clients.llm, "fake-model", n=4)
    assert report.judged == 1 and report.failed == 0
    assert "temperature 0.7 is not applied" in report.summary()
    assert report.summary().count("refused temperature") == 1


async def test_the_judge_says_why_calls_failed(app, llm):
    llm.reply(lambda body: FakeReply.fail(400, "The prompt is too odd for this model."))
    seed_outputs(app.store, {"Describe owls": {"rat": "owls", "cot": "birds"}})
    report = await judge.judge_store(app.store, app.clients.llm, "fake-model", n=2)
    assert report.failed == 2 and "The prompt is too odd for this model." in report.summary()


async def test_a_judge_reply_that_is_all_thinking_says_so_and_names_the_fix(app, llm):
    """Issue 25: a verdict left empty by thinking was counted "unreadable" with no word of why."""
    from tests.fakes.llm_server import THOUGHT

    llm.reply(lambda body: FakeReply(thinking=THOUGHT, think="unclosed"))
    seed_outputs(app.store, {"Describe owls": {"rat": "owls", "cot": "birds"}})
    report = await judge.judge_store(app.store, app.clients.llm, "fake-model", n=2)
    assert report.no_verdict == 1 and report.unparsed == 2
    summary = report.summary()
    assert summary.count("were all thinking") == 1 and "--judge-model" in summary and "/no_think" in summary
    llm.reply(lambda body: FakeReply(text="I cannot decide.", thinking=THOUGHT, think="reasoning_content"))
    seed_outputs(app.store, {"Describe bats": {"rat": "bats", "cot": "mammals"}})
    other = await judge.judge_store(app.store, app.clients.llm, "fake-model", n=2)
    # (the owls pair, with no verdict stored, is asked again): answers, unreadable, not all thinking
    assert other.unparsed == 4 and "were all thinking" not in other.summary()


# -- every method against each refusing server (issue 25, item 5) ------------------------------


@pytest.mark.parametrize("param", ["temperature", "max_tokens"])
async def test_every_method_finishes_on_a_server_refusing_a_parameter_with_at_most_one_note(app, llm, param):
    """Each method's run ends with its article on a server that refuses ``param`` for the model;
    the refusal is said in at most one Note per run (exactly one where the run sent it), and the
    server sees the refused parameter once in the whole process: what it refused is remembered."""
    llm.refuse = {param}
    llm.reply(every_method_author())
    said = {}
    for name in METHODS:
        events = await collect(app.runner.start(name, TASK))
        assert isinstance(events[-1], Final), (name, [n.text for n in of(events, Note)][-3:])
        notes = [n for n in of(app.store.events(events[0].run_id), Note) if f"refused {param}" in n.text]
        assert len(notes) <= 1, (name, [n.text for n in notes])
        said[name] = len(notes)
    assert sum(param in body for body in llm.requests) == 1, "refused once, then never sent again"
    if param == "max_tokens":  # every method's calls carry a cap: every run says it went under the new name
        assert said == dict.fromkeys(METHODS, 1)
        assert all("max_completion_tokens" in body for body in llm.requests[1:])
    else:
        assert said["furepa"] == 1, said
