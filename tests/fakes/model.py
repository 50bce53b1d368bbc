"""An in-process stand-in for ``core.llm.LLMClient``: no server, no HTTP, no SDK.

It has the client's interface as the methods use it: ``stream(prompt, *, role, temperature,
max_tokens)`` yields the reply in word-sized ``str`` chunks, then one ``core.llm.Completion``;
``complete(...)`` returns that Completion; ``aclose()``.

Replies come from the queue first (``queue(...)``: each a str, a callable of the prompt text, or
an exception to raise), then from the script given to ``reply(fn)``, else a deterministic echo.
A script takes the OpenAI-style request body, as ``tests.fakes.llm_server.FakeLLM.reply`` does,
and a reply may be a ``FakeReply`` for its ``finish_reason`` ("length": cut at the token limit),
so the scripted authors (``RatAuthor``, ``MethodAuthor``) answer here unchanged::

    model = FakeModel()
    model.reply(MethodAuthor())
    model.queue("first answer", lambda prompt: prompt.upper())
    ...
    assert model.calls[0].role == "draft" and model.calls[0].temperature is None

Every call is recorded in ``calls`` (prompt text, messages, role, temperature, max_tokens);
``requests`` holds the bodies a server would have received (``temperature`` only when given).
Token counts are :func:`tests.fakes.llm_server.count_tokens` of the messages and the reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from core.llm import Completion, as_messages
from tests.fakes.llm_server import FakeReply, chunks_of, count_tokens, message_text

Script = Callable[[dict], str]
Queued = str | Callable[[str], str] | BaseException


@dataclass(frozen=True)
class Call:
    """One call to the fake model. ``prompt`` is the text of its user messages, joined."""

    prompt: str
    messages: list[dict]
    role: str
    temperature: float | None
    max_tokens: int | None


class FakeModel:
    def __init__(self, script: Script | None = None, *, model: str = "fake-model"):
        self.model = model
        self.calls: list[Call] = []
        self.requests: list[dict] = []
        self.closed = False
        self._queue: list[Queued] = []
        self._script = script

    # -- scripting ---------------------------------------------------------------------------
    def queue(self, *replies: Queued) -> FakeModel:
        """Answer the next calls with these, in order (a callable gets the prompt text; an
        exception is raised by the call)."""
        self._queue.extend(replies)
        return self

    def reply(self, script: Script) -> FakeModel:
        """Answer every call (after the queue is empty) with ``script(request_body)``."""
        self._script = script
        return self

    def prompts(self, role: str | None = None) -> list[str]:
        """The prompt text of every call (of ``role`` only, if given), in order."""
        return [c.prompt for c in self.calls if role is None or c.role == role]

    # -- the LLMClient interface ---------------------------------------------------------------
    async def stream(self, messages: str | list[dict], *, role: str, temperature: float | None = None,
                     max_tokens: int | None = None) -> AsyncIterator[str | Completion]:
        """The reply in word-sized chunks, then a Completion. Raises what the queue holds."""
        listed = as_messages(messages)
        body: dict[str, Any] = {"model": self.model, "messages": listed, "stream": True}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        prompt = "\n".join(message_text(m) for m in listed if m.get("role") == "user")
        self.calls.append(Call(prompt, listed, role, temperature, max_tokens))
        self.requests.append(body)
        answer = self._answer(prompt, body)
        text, finish = (answer.text, answer.finish_reason) if isinstance(answer, FakeReply) else (answer, "stop")
        for piece in chunks_of(text):
            yield piece
        yield Completion(text=text, role=role, model=self.model,
                         prompt_tokens=sum(count_tokens(message_text(m)) for m in listed),
                         completion_tokens=count_tokens(text), seconds=0.0, estimated=False, finish_reason=finish)

    async def complete(self, messages: str | list[dict], *, role: str, temperature: float | None = None,
                       max_tokens: int | None = None) -> Completion:
        completion = None
        async for item in self.stream(messages, role=role, temperature=temperature, max_tokens=max_tokens):
            if isinstance(item, Completion):
                completion = item
        assert completion is not None
        return completion

    async def aclose(self) -> None:
        self.closed = True

    # -- helpers -----------------------------------------------------------------------------
    def _answer(self, prompt: str, body: dict) -> str | FakeReply:
        if self._queue:
            queued = self._queue.pop(0)
            if isinstance(queued, BaseException):
                raise queued
            return queued(prompt) if callable(queued) else queued
        if self._script is not None:
            return self._script(body)
        users = [m for m in body["messages"] if m.get("role") == "user"]
        return f"Echo from {self.model}: {message_text(users[-1]) if users else ''}"
