"""Answers capped by what they answer (issue 25, item 3): every call of every method asks for at
most its role's tokens (core.text.caps), so a model that rambles is stopped at the cap and not at
the end of its context window; a cap that would not fit beside its prompt is left out; and an
answer a cap of ours cut is never blamed on --max-tokens."""

from __future__ import annotations

import pytest

from common.events import Note
from common.types import Task
from core.methods import METHODS
from core.methods.helpers import cut_advice
from core.text import caps
from core.text.fencing import FENCE_OPEN
from core.text.prompts import draft_steps
from core.text.tokens import count_tokens
from tests.fakes.llm_server import FakeReply
from tests.fakes.method_scripts import MethodAuthor, method_context, run_method
from tests.fakes.model import FakeModel
from tests.fakes.scripts import RatAuthor
from tests.fakes.scripts import draft_steps as fake_steps

WRITING = Task("Write a short history of Python 3 and its ecosystem.")
QA = Task("Which version of Mercurial was the first to support Python 3?", "qa")
#: Method parameters that keep every method's run short.
SHORT = {"itrg.iterations": "2", "aag.max_queries": "1", "aag.critic_cycles": "1", "furepa.n": "2",
         "furepa.iterations": "2"}
#: B.1, the step-by-step draft: written by core.methods.helpers.write_draft, whose call gets its cap
#: (core.text.caps.draft) there.
B1 = "Try to answer this question/instruction with step-by-step thoughts"
RAMBLE = " ".join(f"Python {n} grew and grew and its ecosystem kept growing." for n in range(400))


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_every_call_of_every_method_asks_for_at_most_its_roles_tokens(method, web):
    author = RatAuthor(fake_steps(3)) if method == "rat-step" else MethodAuthor()  # MethodAuthor: B.3 only
    model = FakeModel(author)
    await run_method(method, WRITING, method_context(model, web, k=2, params=SHORT))
    assert model.calls, method
    uncapped = [(c.role, c.prompt[:60]) for c in model.calls if c.max_tokens is None and B1 not in c.prompt]
    assert not uncapped, f"{method}: calls sent with no cap of their own"


async def test_a_rambling_model_is_capped_at_each_steps_revision_cap(web):
    steps = ["Python 3.0 was released in December 2008.",
             "Mercurial moved its code base from Python 2 to Python 3 over several years of work, release by "
             "release, until version 5.2 ran on Python 3 by default.",
             "Managing Python environments with virtualenv and pip keeps project dependencies apart."]
    model = FakeModel().queue("\n\n".join(steps))
    model.reply(lambda body: RAMBLE)  # every query and revision rambles
    await run_method("rat-step", WRITING, method_context(model, web, k=2))
    revisions = [c for c in model.calls if c.role == "revise"]
    assert len(revisions) == len(steps)
    for step, call in zip(draft_steps("\n\n".join(steps)), revisions, strict=True):
        passages = call.prompt.count(FENCE_OPEN)
        assert call.max_tokens == caps.revise(step, passages)
        assert caps.REVISE_TIMES * count_tokens(step) <= call.max_tokens < count_tokens(RAMBLE), "a few times the step"
    assert revisions[1].max_tokens > revisions[0].max_tokens, "a longer step may grow more"
    assert {c.max_tokens for c in model.calls if c.role == "query"} == {caps.QUERY_TOKENS}


async def test_a_whole_answer_is_capped_by_max_steps_and_the_task_kind():
    sent = {}
    for task in (WRITING, QA):
        for max_steps in (3, 30):
            model = FakeModel(MethodAuthor())
            await run_method("direct", task, method_context(model, max_steps=max_steps))
            sent[task.kind, max_steps] = model.calls[0].max_tokens
    assert sent["qa", 30] < sent["writing", 30], "a QA answer's steps are short"
    assert sent["writing", 3] < sent["writing", 30], "more steps, more room"
    assert sent["writing", 30] == caps.draft("writing", 30) and sent["qa", 3] == caps.draft("qa", 3)


def test_a_cap_that_does_not_fit_beside_the_prompt_is_left_out():
    prompt = "word " * 3000  # about 3,750 tokens
    room = 4096 - count_tokens(prompt)
    assert caps.fit(caps.Cap(room), prompt, 4096) == room
    assert caps.fit(caps.Cap(room + 1), prompt, 4096) is None, "the server gives it what is left"
    assert caps.fit(caps.Cap(100), [{"role": "user", "content": prompt}], 4096) == 100


async def test_a_revision_cap_left_out_when_the_window_is_full(web):
    step = " ".join(f"Python {n} kept its ecosystem." for n in range(60))  # about 400 tokens
    model = FakeModel().queue(step)
    model.reply(lambda body: "Python ecosystem")
    await run_method("rat-step", WRITING, method_context(model, web, k=1, context_tokens=1536))
    revise = [c for c in model.calls if c.role == "revise"]
    assert revise and revise[0].max_tokens is None, "3 times the step does not fit beside the prompt"


def test_the_advice_on_a_cut_answer_names_the_limit_that_cut_it():
    ours = caps.revise("Python 3.0 was released in December 2008.", 2)
    advice = caps.cut_advice(ours, ours, None)
    assert "--max-tokens" not in advice and f"cap of {ours:,} tokens" in advice and ours.why in advice
    draft = caps.draft("writing", 3)
    assert "raise --max-steps" in caps.cut_advice(draft, draft, None)
    assert "raise --max-tokens (100)" in caps.cut_advice(100, ours, 100), "the setting was the lower limit"
    assert "--max-tokens" not in caps.cut_advice(ours, ours, ours + 50), "the cap was the lower limit"
    assert "context window (--context-tokens 8,192)" in caps.cut_advice(90, ours, None, 8192, 8100), \
        "the prompt and the answer filled the window before the cap was reached"
    assert "context window" in caps.cut_advice(90, None, None), "no limit was sent"
    # a real SmolLM2 revision cut by --max-tokens 256, its tokens estimated by characters (no usage)
    assert "raise --max-tokens (256)" in caps.cut_advice(253, ours, 256, 8192, 2100)
    assert "raise --max-tokens (256)" in caps.cut_advice(253, ours, 256), "the prompt's size unknown: the limit sent"


async def test_furepas_cut_plans_are_not_blamed_on_max_tokens(web):
    long_plan = "[Analysis] " + " ".join(["Python 3 support came late to Mercurial."] * 80)
    model = FakeModel(lambda body: FakeReply(long_plan, finish_reason="length"))
    events = await run_method("furepa", QA, method_context(model, web, k=1, params={"furepa.n": "2",
                                                                                      "furepa.iterations": "1"}))
    notes = [e.text for e in events if isinstance(e, Note) and "plans were cut short" in e.text]
    assert notes and all("--max-tokens" not in n and f"cap of {caps.PLAN_TOKENS:,} tokens" in n for n in notes)
    assert cut_advice(method_context(model), caps.PLAN_TOKENS, caps.plan()) in notes[0]

