"""LLMClient against the fake OpenAI-compatible server, over real HTTP (no mocks of openai)."""

from __future__ import annotations

import math

import openai
import pytest

from common.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMModelNotFound,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
)
from common.settings import LLMSettings
from core.llm import LOCAL_PLACEHOLDER_KEY, MAX_WAIT, Completion, LLMClient, Reset, Retry
from tests.fakes.llm_server import FakeReply, count_tokens
from tests.helpers import Sleeps, free_port


@pytest.fixture
def sleeps():
    return Sleeps()


@pytest.fixture
def make_client(llm, sleeps):
    """LLMClient for the fake server, with short timeouts and recorded sleeps; use ``async with``."""

    def make(**changes) -> LLMClient:
        options = dict(base_url=llm.base_url, model="fake-model", timeout=2.0, max_retries=2, backoff=0.5)
        return LLMClient(LLMSettings(**{**options, **changes}), sleep=sleeps)

    return make


async def collect(client: LLMClient, messages, **kwargs) -> list:
    return [item async for item in client.stream(messages, **kwargs)]


# -- the happy path ---------------------------------------------------------------------------


async def test_stream_yields_deltas_then_one_completion_with_server_usage(llm, make_client):
    llm.queue("The Eiffel Tower was finished in 1889.")
    async with make_client() as client:
        items = await collect(client, "When was the Eiffel Tower finished?", role="draft")
    *deltas, done = items
    assert len(deltas) > 1 and all(isinstance(d, str) for d in deltas)
    assert isinstance(done, Completion)
    assert "".join(deltas) == done.text == "The Eiffel Tower was finished in 1889."
    assert (done.role, done.model, done.estimated, done.finish_reason) == ("draft", "fake-model", False, "stop")
    assert done.prompt_tokens == count_tokens("When was the Eiffel Tower finished?")
    assert done.completion_tokens == count_tokens(done.text)
    assert done.seconds >= 0
    body = llm.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "When was the Eiffel Tower finished?"}]
    assert "temperature" not in body and "max_tokens" not in body


async def test_server_without_usage_gives_estimated_counts(llm, make_client):
    llm.send_usage = False
    llm.queue("twelve chars")
    async with make_client() as client:
        done = await client.complete([{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Say something"}], role="query")
    assert done.estimated is True
    assert done.text == "twelve chars"
    assert done.completion_tokens == 3
    assert done.prompt_tokens == math.ceil(len("Be brief.Say something") / 4)


async def test_each_role_uses_its_model(llm, make_client):
    client = make_client(role_models={"draft": "fake-draft", "judge": "fake-judge"})
    async with client:
        assert (await client.complete("a", role="draft")).model == "fake-draft"
        assert (await client.complete("b", role="revise")).model == "fake-model"
        assert (await client.complete("c", role="judge")).model == "fake-judge"
    assert [body["model"] for body in llm.requests] == ["fake-draft", "fake-model", "fake-judge"]
    assert llm.prompts("user") == ["a", "b", "c"]


async def test_temperature_and_max_tokens(llm, make_client):
    async with make_client(temperature=0.2) as client:
        await client.complete("x", role="draft")
        await client.complete("x", role="draft", temperature=0.9, max_tokens=50)
    assert llm.requests[0]["temperature"] == 0.2
    assert llm.requests[1]["temperature"] == 0.9 and llm.requests[1]["max_tokens"] == 50


async def test_consumer_may_stop_early(llm, make_client):
    llm.queue("many words in this answer", "second call")
    async with make_client() as client:
        stream = client.stream("x", role="draft")
        async for item in stream:
            assert item == "many "
            break
        await stream.aclose()
        assert (await client.complete("y", role="draft")).text == "second call"


async def test_the_first_word_arrives_before_the_stream_ends(llm, make_client):
    # the pace itself (time to first token, tokens per second) is measured by `python -m bench.llm`
    llm.queue("w " * 10)
    rest_of_stream = llm.hold_after_first()  # the server sends one word, then waits for this
    async with make_client() as client:
        stream = client.stream("x", role="draft")
        first = await anext(stream)
        assert llm.streams_done == 0  # the word came through while the server held back the rest
        rest_of_stream.set()
        rest = [item async for item in stream]
    assert first == "w " and len(rest) == 10
    assert llm.streams_done == 1


async def test_check_lists_served_models(llm, make_client):
    async with make_client() as client:
        assert await client.check() == ["fake-draft", "fake-judge", "fake-model"]


# -- retries ----------------------------------------------------------------------------------


async def test_429_is_retried_with_backoff_and_succeeds(llm, make_client, sleeps):
    llm.fail_next(2, status=429)
    llm.queue("finally")
    async with make_client() as client:
        done = await client.complete("hi", role="draft")
    assert done.text == "finally"
    assert len(llm.requests) == 3
    assert sleeps == [0.5, 1.0]


@pytest.mark.parametrize("retry_after, expected", [(3, 3.0), (0.25, 0.25), (999, MAX_WAIT)])
async def test_retry_after_is_honoured_and_capped(llm, make_client, sleeps, retry_after, expected):
    llm.queue(FakeReply.fail(429, retry_after=retry_after), "ok")
    async with make_client() as client:
        assert (await client.complete("hi", role="draft")).text == "ok"
    assert sleeps == [expected]


async def test_429_that_persists_raises_rate_limited(llm, make_client, sleeps):
    llm.fail_next(10, status=429)
    async with make_client() as client:
        with pytest.raises(LLMRateLimited) as info:
            await client.complete("hi", role="draft")
    assert info.value.retryable and "429" in str(info.value)
    assert "kept answering 429" in str(info.value) and "tried 3 times" in str(info.value)
    assert len(llm.requests) == 3 and len(sleeps) == 2


async def test_the_first_retry_note_of_a_429_says_what_happened_not_kept_answering(llm, make_client, sleeps):
    """Issue 38 (F27): the first retry note already said "kept answering 429"."""
    llm.fail_next(1, status=429)
    llm.queue("ok")
    async with make_client() as client:
        items = [item async for item in client.stream("hi", role="draft")]
    (note,) = [item for item in items if isinstance(item, Retry)]
    assert note.attempt == 1 and "answered 429 Too Many Requests" in note.reason
    assert "kept answering" not in note.reason and "tried" not in note.reason


async def test_server_that_stays_down_fails_after_all_attempts(llm, make_client, sleeps):
    llm.down = True
    async with make_client(max_retries=3) as client:
        with pytest.raises(LLMServerError) as info:
            await client.complete("hi", role="draft")
    assert info.value.retryable is True
    assert "503" in str(info.value) and llm.base_url in str(info.value)
    assert len(llm.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]


async def test_500_once_then_success(llm, make_client):
    llm.queue(FakeReply.fail(500), "recovered")
    async with make_client() as client:
        assert (await client.complete("hi", role="draft")).text == "recovered"


async def test_mid_stream_failure_is_retried_and_yields_reset(llm, make_client, sleeps):
    llm.queue(FakeReply(text="one two three four", cut_after=2), "fresh answer")
    async with make_client() as client:
        items = await collect(client, "count", role="revise")
    assert items[:3] == ["one ", "two ", Reset()]
    assert isinstance(items[3], Retry) and items[3].attempt == 1 and "connection" in items[3].reason.lower()
    assert items[4:-1] == ["fresh ", "answer"]
    assert items[-1].text == "fresh answer"
    assert sum(isinstance(item, Reset) for item in items) == 1
    assert len(llm.requests) == 2 and len(sleeps) == 1


async def test_failure_before_any_delta_yields_no_reset(llm, make_client):
    llm.queue(FakeReply.fail(502), "clean")
    async with make_client() as client:
        items = await collect(client, "x", role="draft")
    assert Reset() not in items
    retry, first = items[0], items[1]
    assert isinstance(retry, Retry) and "502" in retry.reason and retry.of == 2
    assert first == "clean"


# -- failures mapped to our errors ------------------------------------------------------------


async def test_unknown_model_names_the_model_and_the_served_ones(llm, make_client, sleeps):
    async with make_client(model="no-such-model") as client:
        with pytest.raises(LLMModelNotFound) as info:
            await client.complete("hi", role="draft")
    message = str(info.value)
    assert "'no-such-model'" in message and "--model" in message and "RAT_STUDIO_MODEL" in message
    assert "fake-model" in message  # the served models are listed
    assert len(llm.requests) == 1 and sleeps == []


async def test_unknown_role_model_names_the_role_flag(llm, make_client):
    async with make_client(role_models={"judge": "gone-judge"}) as client:
        with pytest.raises(LLMModelNotFound, match="'gone-judge'.*--judge-model"):
            await client.complete("hi", role="judge")


async def test_wrong_key_raises_auth_error(llm, make_client, sleeps):
    llm.api_key = "sk-right"
    async with make_client(api_key="sk-wrong") as client:
        with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
            await client.complete("hi", role="draft")
        with pytest.raises(LLMAuthError):
            await client.check()
    assert len(llm.requests) == 1 and sleeps == []


async def test_local_server_without_key_gets_a_placeholder(llm, make_client):
    llm.api_key = LOCAL_PLACEHOLDER_KEY  # accepts only the placeholder
    async with make_client(api_key=None) as client:
        assert (await client.complete("hi", role="draft")).text


async def test_openai_without_key_says_what_to_set(sleeps, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")  # only app.py reads the environment
    client = LLMClient(LLMSettings(base_url=None, api_key=None), sleep=sleeps)  # never raises
    with pytest.raises(LLMAuthError, match="set OPENAI_API_KEY or pass --base-url"):
        await client.complete("hi", role="draft")
    with pytest.raises(LLMAuthError):
        await client.check()
    await client.aclose()


async def test_unreachable_base_url_names_it(sleeps):
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with LLMClient(LLMSettings(base_url=url, timeout=2, max_retries=1, backoff=0.1), sleep=sleeps) as client:
        with pytest.raises(LLMConnectionError) as info:
            await client.complete("hi", role="draft")
        assert url in str(info.value) and "OPENAI_BASE_URL" in str(info.value)
        assert info.value.retryable and sleeps == [0.1]
        with pytest.raises(LLMConnectionError):
            await client.check()


async def test_slow_server_times_out(llm, make_client):
    llm.queue(FakeReply(text="late", delay=1.0))
    async with make_client(timeout=0.2, max_retries=0) as client:
        with pytest.raises(LLMTimeout) as info:
            await client.complete("hi", role="draft")
    assert info.value.retryable and "0.2 s" in str(info.value)


async def test_bad_request_mentions_the_context_window(llm, make_client, sleeps):
    llm.queue(FakeReply.fail(400, "This model's maximum context length is 8192 tokens."))
    async with make_client() as client:
        with pytest.raises(LLMBadRequest) as info:
            await client.complete("hi", role="revise")
    assert "context" in str(info.value) and "8192" in str(info.value)
    assert not info.value.retryable and sleeps == []


async def test_check_on_a_down_server(llm, make_client):
    llm.down = True
    async with make_client() as client:
        with pytest.raises(LLMServerError):
            await client.check()


async def test_fake_server_answers_plain_json_too(llm):
    """The fake speaks the non-streaming protocol as well (other code may use it directly)."""
    llm.queue("a plain answer.")
    async with openai.AsyncOpenAI(base_url=llm.base_url, api_key="x", max_retries=0) as sdk:
        answer = await sdk.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "q"}])
    assert answer.choices[0].message.content == "a plain answer."
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (1, 4)


async def test_the_max_tokens_setting_caps_every_call(llm, make_client):
    async with make_client(max_tokens=30) as client:
        await client.complete("x", role="draft")
        await client.complete("x", role="draft", max_tokens=50)
        await client.complete("x", role="draft", max_tokens=10)
    assert [r["max_tokens"] for r in llm.requests] == [30, 30, 10], "the lower of the call's and the setting's"


@pytest.mark.parametrize("argv, env, expected", [
    ([], {}, None),
    (["--max-tokens", "256"], {"RAT_STUDIO_MAX_TOKENS": "99"}, 256),
    ([], {"RAT_STUDIO_MAX_TOKENS": "99"}, 99),
])
def test_max_tokens_comes_from_the_flag_or_the_environment(argv, env, expected):
    from app import settings_from
    from ui.cli import build_parser

    assert settings_from(build_parser().parse_args(argv), env).llm.max_tokens == expected


def test_max_tokens_below_one_is_refused_with_the_fix():
    from app import settings_from
    from common.errors import ConfigError
    from ui.cli import build_parser

    with pytest.raises(ConfigError, match=r"--max-tokens must be at least 1 .* leave it out"):
        settings_from(build_parser().parse_args(["--max-tokens", "0"]), {})
