"""Reasoning models' thinking kept apart (issue 25): inline <think> blocks (split across deltas,
opened by the chat template, cut by the token limit) and the reasoning_content / reasoning fields
never become answer text; their tokens are counted apart; every method run against each of these
stand-ins stores no thinking in any draft, query, revision, article or note."""

from __future__ import annotations

import dataclasses

import pytest

from common.errors import LLMError
from common.events import Failed, Final, LLMCalled, Note, ThinkingDelta, TokenDelta, event_from_dict
from common.settings import LLMSettings
from common.types import Task
from core import llm as llm_module
from core.llm import Completion, LLMClient, Reset, Thinking, ThinkSplitter
from core.methods import METHODS
from core.methods.helpers import generate, write_draft
from core.server_notes import ServerNotes
from core.text.tokens import count_tokens as estimate
from tests.fakes.llm_server import THINK_STYLES, THOUGHT, FakeReply, count_tokens, with_thinking
from tests.fakes.method_scripts import every_method_author, method_context
from tests.fakes.model import FakeModel
from tests.helpers import collect, of

MARK = "PONDERING-XYZ"  # in every line of THOUGHT
TASK = Task("Write a short history of Python 3 and its ecosystem.")
ANSWER = "The answer <b>uses</b> a < b and ends here."


def answer_of(items: list) -> str:
    """The answer text as a consumer builds it: str deltas, dropped at each Reset."""
    text = ""
    for item in items:
        text = "" if isinstance(item, Reset) else text + item if isinstance(item, str) else text
    return text


def client_for(llm, notes: ServerNotes | None = None, **changes) -> LLMClient:
    """A client of its own; with ``notes``, one that shares them (as ``Clients`` makes each run's)."""
    return LLMClient(LLMSettings(**{"base_url": llm.base_url, "model": "fake-model", "timeout": 5.0,
                                    "max_retries": 1, "backoff": 0.01, **changes}), notes=notes)


async def stream_items(llm, prompt="q", **kwargs) -> list:
    async with client_for(llm) as client:
        return [item async for item in client.stream(prompt, role="draft", **kwargs)]


# -- the splitter --------------------------------------------------------------------------


def split(pieces: list[str]) -> tuple[str, str, list]:
    splitter = ThinkSplitter()
    items = [item for piece in pieces for item in splitter.feed(piece)] + splitter.close()
    return splitter.answer, splitter.thinking, items


@pytest.mark.parametrize("content, answer, thinking", [
    ("<think>I ponder.</think>\n\nThe answer.", "The answer.", "I ponder."),
    ("Before. <think>I ponder.</think> After.", "Before.  After.", "I ponder."),
    ("I ponder.</think>\n\nThe answer.", "The answer.", "I ponder."),  # the template opened the block
    ("<think>I ponder and the limit cuts", "", "I ponder and the limit cuts"),
    ("<THINK>Loud.</THINK>Quiet.", "Quiet.", "Loud."),
    ("No thinking: a < b, <b>bold</b>, ends with <th", "No thinking: a < b, <b>bold</b>, ends with <th", ""),
    ("<think>a</think>Answer, then a stray </think> stays.", "Answer, then a stray </think> stays.", "a"),
])
def test_every_way_of_cutting_the_content_into_deltas_splits_it_alike(content, answer, thinking):
    for size in range(1, len(content) + 1):
        pieces = [content[n:n + size] for n in range(0, len(content), size)]
        got_answer, got_thinking, items = split(pieces)
        assert (got_answer, got_thinking) == (answer, thinking), size
        assert answer_of(items) == answer, size
        assert "".join(i.text for i in items if isinstance(i, Thinking)).strip() == thinking, size


def test_a_late_close_tag_resets_the_answer_already_passed_on():
    answer, thinking, items = split(["I ponder", " more.", "</think>", "The answer."])
    assert items[:2] == ["I ponder", " more."] and isinstance(items[2], Reset)
    assert items[3] == Thinking("I ponder more.") and items[-1] == "The answer."
    assert (answer, thinking) == ("The answer.", "I ponder more.")


def test_fields_are_thinking_as_they_are():
    splitter = ThinkSplitter()
    items = splitter.feed(None, "Hmm.") + splitter.feed("\n\nAnswer.", None) + splitter.close()
    assert items == [Thinking("Hmm."), "Answer."] and splitter.thinking == "Hmm."


# -- the client over HTTP, each protocol -----------------------------------------------------


@pytest.mark.parametrize("chunk_chars", [1, 3, 7, None])
async def test_inline_think_never_reaches_the_answer_even_with_split_tags(llm, chunk_chars):
    llm.chunk_chars = chunk_chars
    llm.queue(FakeReply(ANSWER, thinking=THOUGHT, think="inline"))
    *items, done = await stream_items(llm)
    assert isinstance(done, Completion)
    assert not any(MARK in item for item in items if isinstance(item, str))
    assert answer_of(items) == done.text == ANSWER
    assert "".join(i.text for i in items if isinstance(i, Thinking)).strip() == done.thinking == THOUGHT
    assert done.completion_tokens == count_tokens(f"<think>{THOUGHT}</think>\n\n{ANSWER}"), "the server's count"
    assert done.thinking_tokens == estimate(THOUGHT), "no reasoning_tokens reported: estimated"
    assert done.answer_tokens == done.completion_tokens - done.thinking_tokens


async def test_a_block_opened_by_the_chat_template_is_thinking(llm):
    llm.queue(FakeReply(ANSWER, thinking=THOUGHT, think="opened"))
    *items, done = await stream_items(llm)
    assert answer_of(items) == done.text == ANSWER and done.thinking == THOUGHT
    assert any(isinstance(i, Reset) for i in items), "what was shown as answer is taken back"


async def test_a_model_seen_opening_inside_thinking_streams_its_next_thinking_as_thinking(llm):
    """Issue 25: the "opened" style showed its thinking as answer text until the </think> came, on
    every call; once the model is seen doing it, its calls start as thinking: nothing flashes."""
    llm.queue(*[FakeReply(ANSWER, thinking=THOUGHT, think="opened")] * 2)
    async with client_for(llm) as client:
        first = [item async for item in client.stream("q", role="draft")]
        second = [item async for item in client.stream("q", role="draft")]
    assert any(isinstance(i, Reset) for i in first)  # the first call could not know
    *items, done = second
    assert not any(isinstance(i, Reset) for i in items)
    assert not any(MARK in i for i in items if isinstance(i, str)), "no thinking shown as answer"
    assert answer_of(items) == done.text == ANSWER and done.thinking == THOUGHT


@pytest.mark.parametrize("content, answer, thinking", [
    ("I ponder.</think>\n\nThe answer.", "The answer.", "I ponder."),
    ("<think>I ponder.</think>\n\nThe answer.", "The answer.", "I ponder."),  # it opens one itself after all
    ("A plain answer, no tag at all.", "A plain answer, no tag at all.", ""),  # all of it, after a Reset
])
def test_a_splitter_started_inside_loses_no_text_whatever_comes(content, answer, thinking):
    for size in range(1, len(content) + 1):
        splitter = ThinkSplitter(opened=True)
        items = [i for n in range(0, len(content), size) for i in splitter.feed(content[n:n + size])]
        items += splitter.close()
        assert (splitter.answer, splitter.thinking) == (answer, thinking), size
        assert answer_of(items) == answer, size
        assert not any(isinstance(i, str) and "ponder" in i for i in items), size


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_thinking_in_a_field_is_kept_apart_and_counted_as_the_server_says(llm, field):
    llm.queue(FakeReply(ANSWER, thinking=THOUGHT, think=field))
    *items, done = await stream_items(llm)
    assert not any(MARK in item for item in items if isinstance(item, str))
    assert isinstance(items[1], Thinking) and done.text == ANSWER and done.thinking == THOUGHT
    assert done.thinking_tokens == count_tokens(THOUGHT), "the server's reasoning_tokens"
    assert done.completion_tokens == count_tokens(ANSWER) + count_tokens(THOUGHT)
    assert done.answer_tokens == count_tokens(ANSWER)


async def test_an_unclosed_block_cut_by_the_limit_is_an_empty_cut_answer(llm):
    llm.queue(FakeReply(thinking=THOUGHT, think="unclosed"))
    *items, done = await stream_items(llm)  # no cap of the call's own: nothing to make room in
    assert done.text == "" and done.thinking == THOUGHT and done.finish_reason == "length"
    assert not [i for i in items if isinstance(i, str)]


async def test_without_usage_the_thinking_is_estimated_apart(llm):
    llm.send_usage = False
    llm.queue(FakeReply(ANSWER, thinking=THOUGHT, think="reasoning_content"))
    *_, done = await stream_items(llm)
    assert done.estimated and done.thinking_tokens == estimate(THOUGHT)
    assert done.completion_tokens == estimate(ANSWER) + estimate(THOUGHT)


async def test_a_retry_after_thinking_began_resets_it(llm):
    llm.queue(FakeReply("one two three", thinking=THOUGHT, think="reasoning_content", cut_after=1), "whole answer")
    *items, done = await stream_items(llm)
    first_reset = next(n for n, i in enumerate(items) if isinstance(i, Reset))
    assert any(isinstance(i, Thinking) for i in items[:first_reset])
    assert done.text == "whole answer" and done.thinking == ""


# -- generate: events, and an answer that is all thinking -----------------------------------------


@pytest.mark.parametrize("think", ["inline", "reasoning_content", "reasoning", "opened"])
async def test_generate_streams_thinking_apart_and_stores_it_on_the_call(think):
    model = FakeModel().queue(FakeReply(ANSWER, thinking=THOUGHT, think=think))
    events = await collect(generate(method_context(model), "q", role="revise", i=2))
    deltas = of(events, TokenDelta)
    shown = deltas[max((n for n, e in enumerate(deltas) if e.reset), default=-1) + 1:]  # after the last reset
    assert "".join(e.text for e in shown) == ANSWER
    assert any(e.reset for e in deltas) == (think == "opened"), "only a late </think> takes shown text back"
    assert "".join(e.text for e in of(events, ThinkingDelta)).strip() == THOUGHT
    assert {(e.role, e.i) for e in of(events, ThinkingDelta)} == {("revise", 2)}
    (called,) = of(events, LLMCalled)
    assert called.thinking == THOUGHT and called.thinking_tokens == count_tokens(THOUGHT)
    assert not of(events, Note)


async def test_an_answer_cut_while_thinking_is_said_with_advice_that_fits():
    model = FakeModel().queue(FakeReply(thinking=THOUGHT, think="unclosed"))
    call = generate(method_context(model), "q", role="query", max_tokens=40, note_cut=False)
    events = await collect(call)
    answer = call.result
    assert answer == "" and answer.cut and answer.all_thinking
    (note,) = of(events, Note)
    assert note.level == "warning" and "thinking used all" in note.text
    assert "--max-tokens" in note.text and "--query-model" in note.text and "own cap is 40" in note.text
    assert MARK not in note.text


async def test_an_empty_answer_after_thinking_fails_at_once_naming_the_fix():
    model = FakeModel().queue(FakeReply("", thinking=THOUGHT, think="reasoning_content"))
    with pytest.raises(LLMError) as info:
        await collect(generate(method_context(model), "q", role="revise"))
    assert len(model.calls) == 1, "at once: the model is not asked again (no retry, no wait)"
    assert "--revise-model" in str(info.value) and "thinking off" in str(info.value) and MARK not in str(info.value)


async def test_a_draft_that_was_all_thinking_fails_with_the_thinking_advice():
    model = FakeModel().queue(FakeReply(thinking=THOUGHT, think="unclosed"))
    with pytest.raises(LLMError, match="thinking used all the tokens.*--max-tokens.*--draft-model"):
        await collect(write_draft(method_context(model), TASK))


def test_stored_calls_from_before_thinking_still_load():
    old = {"role": "draft", "model": "m", "i": 0, "prompt_tokens": 3, "completion_tokens": 4}
    called = event_from_dict("LLMCalled", old)
    assert (called.thinking, called.thinking_tokens) == ("", 0)
    new = LLMCalled(role="draft", model="m", thinking="hmm", thinking_tokens=1)
    assert event_from_dict("LLMCalled", new.to_dict()) == new
    assert not ThinkingDelta.persist


# -- every method against every stand-in --------------------------------------------------------


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return []


def leaks(event) -> list[str]:
    """The text fields of a stored event that hold thinking; LLMCalled.thinking is where it belongs."""
    fields = event.to_dict()
    if isinstance(event, LLMCalled):
        fields.pop("thinking")
    return [s for s in strings(fields) if MARK in s]


@pytest.mark.parametrize("think", THINK_STYLES)
async def test_no_method_stores_thinking_in_any_text(app, llm, web, think):
    llm.reply(with_thinking(every_method_author(), think))
    ended = {}
    for name in METHODS:
        events = await collect(app.runner.start(name, TASK))
        run_id = events[0].run_id
        stored = app.store.events(run_id)
        assert stored, name
        assert [(type(e).__name__, s[:80]) for e in stored for s in leaks(e)] == [], name
        assert any(MARK in e.thinking for e in of(stored, LLMCalled)), f"{name}: the thinking is kept apart"
        assert not [s for s in strings(dataclasses.asdict(app.store.get_run(run_id))) if MARK in s], name
        ended[name] = stored
    assert not [r for r in web.requests if MARK.lower() in r.lower()], "no thinking was searched"
    if think == "unclosed":  # no answer ever came: each run says why, in words that name the fix
        for name, stored in ended.items():
            notes = [n.text for n in of(stored, Note)]
            assert any("thinking used all" in n and "--max-tokens" in n for n in notes), name
    else:
        assert {name: type(stored[-1]).__name__ for name, stored in ended.items()} == dict.fromkeys(METHODS, "Final")


# -- issue 25, item 6: a model that answers only in reasoning_content ------------------------------


@pytest.mark.parametrize("method", ["rat", "rat-step"])
@pytest.mark.parametrize("finish", ["stop", "length"])
async def test_rat_ends_promptly_when_the_model_only_thinks(app, llm, method, finish):
    llm.reply(lambda body: FakeReply("", thinking=THOUGHT, think="reasoning_content", finish_reason=finish))
    events = await collect(app.runner.start(method, TASK))
    # at once: the draft's call, and for a cap used up by thinking one more with room; no step
    # goes on to search or revise with nothing written (a clock bound here was flaky; bench/ times)
    assert len(llm.requests) == (2 if finish == "length" else 1), [r.get("max_tokens") for r in llm.requests]
    failed = events[-1]
    assert isinstance(failed, Failed) and MARK not in failed.error
    assert "thinking" in failed.error and "-model" in failed.error
    if finish == "length":
        assert "--max-tokens" in failed.error
    assert not of(events, Final)


async def test_a_cap_used_up_by_thinking_is_tried_once_more_with_room_and_then_given_at_once(llm):
    """A role's cap is sized for the answer; a reasoning model's thinking counts against it too."""
    llm.queue(FakeReply(thinking=THOUGHT, think="unclosed"), FakeReply(ANSWER, thinking=THOUGHT, think="inline"),
              FakeReply(ANSWER, thinking=THOUGHT, think="inline"))
    async with client_for(llm, max_tokens=10_000) as client:
        items = [item async for item in client.stream("q", role="revise", max_tokens=100)]
        done = items[-1]
        assert done.text == ANSWER and answer_of(items[:-1]) == ANSWER
        assert [b["max_tokens"] for b in llm.requests] == [100, 100 + llm_module.THINKING_ROOM]
        first_try = llm.requests[0]
        assert done.completion_tokens > done.answer_tokens > 0 and done.thinking_tokens > 0
        await client.complete("q2", role="revise", max_tokens=100)
        assert llm.requests[-1]["max_tokens"] == 100 + llm_module.THINKING_ROOM, "the model is known to think"
        assert first_try["max_tokens"] == 100
    async with client_for(llm, notes=client.notes, max_tokens=500) as client:  # a later run
        llm.queue(FakeReply(ANSWER))
        await client.complete("q3", role="revise", max_tokens=100)
        assert llm.requests[-1]["max_tokens"] == 500, "--max-tokens still bounds the whole"
