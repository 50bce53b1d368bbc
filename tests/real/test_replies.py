"""The real-model tests' reply cache (tests/real/replies.py), in front of the stand-in model: a
greedy chat request asked again is answered with the model's first answer, byte for byte and
without reaching the model; any other request reaches the model every time; an answer that failed
or stopped part-way is never kept."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.fakes.llm_server import FakeLLM, FakeReply
from tests.real.replies import ReplyCache

MESSAGES = [{"role": "user", "content": "Write one sentence about Mercurial."}]


@pytest.fixture
def proxied(tmp_path):
    with FakeLLM() as llm, ReplyCache(llm.base_url, tmp_path / "replies") as cache:
        yield llm, cache, openai.OpenAI(base_url=cache.base_url, api_key="sk-test", max_retries=0)


def streamed(client, temperature: float) -> str:
    chunks = client.chat.completions.create(model="fake-model", messages=MESSAGES, temperature=temperature,
                                            stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_a_greedy_request_asked_again_is_answered_from_the_first_answer(proxied):
    llm, cache, client = proxied
    llm.queue("Mercurial 5.2 ran on Python 3.", "A different answer the model would give the second time.")
    first = streamed(client, 0)
    again = streamed(client, 0)
    assert first == again == "Mercurial 5.2 ran on Python 3."
    assert len(llm.requests) == 1 and (cache.hits, cache.misses) == (1, 1)
    raw = [httpx.post(cache.base_url + "/chat/completions", json={"model": "fake-model", "messages": MESSAGES,
                                                                    "temperature": 0, "stream": True}).content
           for _ in range(2)]
    assert raw[0] == raw[1] and raw[0].rstrip().endswith(b"data: [DONE]"), "the bytes as the model sent them"
    answer = client.chat.completions.create(model="fake-model", messages=MESSAGES, temperature=0)
    assert answer.choices[0].message.content, "a request not streamed is kept apart from the stream"
    assert len(llm.requests) == 3


def test_a_request_that_samples_reaches_the_model_every_time(proxied):
    llm, cache, client = proxied
    llm.queue("One.", "Two.")
    assert [streamed(client, 0.7), streamed(client, 0.7)] == ["One.", "Two."]
    assert len(llm.requests) == 2 and cache.hits == cache.misses == 0
    assert [m.id for m in client.models.list()] and llm.paths.count("GET /v1/models") == 1


@pytest.mark.parametrize("failure", [FakeReply.fail(500), FakeReply(text="Cut off in the middle.", cut_after=2)],
                         ids=["error", "cut"])
def test_an_answer_that_failed_or_stopped_part_way_is_not_kept(proxied, failure):
    llm, cache, client = proxied
    llm.queue(failure, "Whole at last.")
    with pytest.raises((openai.APIError, httpx.HTTPError)):
        streamed(client, 0)
    assert streamed(client, 0) == "Whole at last."
    assert len(llm.requests) == 2 and cache.hits == 0


def test_the_same_request_from_two_workers_at_once_is_asked_of_the_model_once(tmp_path):
    """Two workers' caches on one folder ask the same greedy request side by side: the second
    waits for the first's answer and is sent it."""
    from concurrent.futures import ThreadPoolExecutor

    with FakeLLM() as llm, ReplyCache(llm.base_url, tmp_path / "replies") as one, \
            ReplyCache(llm.base_url, tmp_path / "replies") as two:
        llm.queue("Mercurial 5.2 ran on Python 3.", "A second answer, had the model been asked twice.")
        llm.latency = 0.5  # the first is still being answered when the second asks
        clients = [openai.OpenAI(base_url=cache.base_url, api_key="sk-test", max_retries=0) for cache in (one, two)]
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda client: streamed(client, 0), clients))
        assert answers == ["Mercurial 5.2 ran on Python 3."] * 2
        assert len(llm.requests) == 1
        assert sorted([(one.hits, one.misses), (two.hits, two.misses)]) == [(0, 1), (1, 0)]
