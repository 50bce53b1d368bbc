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

Reasoning models: a ``FakeReply`` with ``thinking`` (``tests.fakes.llm_server.with_thinking``
gives a whole script's replies the same) streams as the client streams what such a server sends:
its content and reasoning field go through the client's own ``core.llm.ThinkSplitter``, so the
thinking comes as ``Thinking`` items and in the Completion's ``thinking``, never in its text.
``refuse`` (e.g. ``{"temperature"}``): parameters the "server" refuses; like the client, the fake
leaves them out of every call and yields one ``Dropped`` the first time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from core.llm import REFUSABLE, Completion, Dropped, Reset, Thinking, ThinkSplitter, as_messages
from tests.fakes.llm_server import FakeReply, chunks_of, count_tokens, message_text, refusal

Script = Callable[[dict], str]
Queued = str | FakeReply | Callable[[str], str] | BaseException


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
        self.refuse: set[str] = set()
        self._said: set[str] = set()

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
                     max_tokens: int | None = None) -> AsyncIterator[str | Thinking | Reset | Dropped | Completion]:
        """The reply in word-sized chunks (its thinking apart), then a Completion. Raises what
        the queue holds."""
        listed = as_messages(messages)
        body: dict[str, Any] = {"model": self.model, "messages": listed, "stream": True}
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        dropped = self._refused(body)
        for drop in dropped:
            if drop.param not in self._said:
                self._said.add(drop.param)
                yield drop
        prompt = "\n".join(message_text(m) for m in listed if m.get("role") == "user")
        self.calls.append(Call(prompt, listed, role, body.get("temperature"),
                               body.get("max_tokens", body.get("max_completion_tokens"))))
        self.requests.append(body)
        answer = self._answer(prompt, body)
        reply = answer if isinstance(answer, FakeReply) else FakeReply(text=answer)
        split = ThinkSplitter()
        field = reply.reasoning()
        for piece in chunks_of(field[1]) if field else ():
            for item in split.feed(None, piece):
                yield item
        for piece in chunks_of(reply.content()):
            for item in split.feed(piece):
                yield item
        for item in split.close():
            yield item
        thinking_tokens = count_tokens(reply.thinking) if reply.thinking else 0
        yield Completion(text=split.answer, role=role, model=self.model,
                         prompt_tokens=sum(count_tokens(message_text(m)) for m in listed),
                         completion_tokens=count_tokens(split.answer) + thinking_tokens, seconds=0.0,
                         estimated=False, finish_reason=reply.finish(), thinking=split.thinking,
                         thinking_tokens=thinking_tokens, dropped=tuple(dropped))

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
    def _refused(self, body: dict) -> list[Dropped]:
        """Take the refused parameters out of ``body``, as the client does after the 400."""
        dropped = []
        while (refused := refusal(body, self.refuse)) is not None:
            value = body.pop(refused.param)
            other = REFUSABLE.get(refused.param, "")
            replacement = other if other and other in refused.message else ""
            if replacement:
                body[replacement] = value
            dropped.append(Dropped(param=refused.param, value=value, model=self.model, reason=refused.message,
                                   replacement=replacement))
        return dropped

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
