"""The language model client: chat completions over the openai SDK, streamed, retried, and with
every lower-layer failure mapped to one of ``common.errors`` whose message names the fix.

One class, :class:`LLMClient`. Methods call ``llm.stream(messages, role=...)`` and get text deltas
as they arrive, :class:`Thinking` deltas apart from them, a :class:`Reset` when a retry restarts an
answer that had already begun, and exactly one :class:`Completion` last; ``llm.complete(...)``
returns only the Completion.

Reasoning models think out loud, and servers hand the thinking over in three ways: inline in the
content as a ``<think>...</think>`` block (DeepSeek-R1 distills, Qwen3 on llama.cpp or older
Ollama), in a ``reasoning_content`` field of the delta (vLLM's reasoning parser, llama.cpp's
``--reasoning-format``, DeepSeek's API) or in a ``reasoning`` field (Ollama's and OpenRouter's
OpenAI endpoints). :class:`ThinkSplitter` keeps all three apart from the answer, so no draft,
query, revision or verdict is ever made of thinking. Thinking counts against max_tokens, and the
roles' caps are sized for answers: a model seen thinking gets THINKING_ROOM more on each capped
call, and a capped call that thinking used up before any answer is tried once more with it.

Some servers refuse a parameter for some models (OpenAI's reasoning models refuse
``temperature`` other than 1 and ``max_tokens``). Such a 400 is retried once without the parameter
(or with ``max_completion_tokens`` for ``max_tokens``), remembered for that server and model for
the rest of the process, and said once per client as a :class:`Dropped` item.

Nothing here reads the environment: ``app.py`` builds :class:`~common.settings.LLMSettings` and we
always pass the SDK explicit values (the SDK would otherwise read ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` itself). The SDK's own retries are off; we count and pace them here, with an
injectable ``sleep`` so tests need not wait.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import openai

from common.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMContextExceeded,
    LLMError,
    LLMModelNotFound,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
)
from common.settings import LLMSettings
from core.budget import TokenBudget
from core.server_notes import ServerNotes
from core.text.tokens import count_tokens
from core.tls import TLS

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Sent as the key to servers other than OpenAI's when none is set: Ollama, LM Studio, vLLM and
#: llama.cpp ignore it, but the SDK refuses to start without one.
LOCAL_PLACEHOLDER_KEY = "not-needed"
CONNECT_TIMEOUT = 10.0  # seconds; a dead host should not cost the whole call timeout per attempt
MAX_WAIT = 60.0  # seconds; caps both the exponential backoff and a server's Retry-After

Messages = list[dict[str, Any]] | str


@dataclass(frozen=True)
class Reset:
    """Yielded by :meth:`LLMClient.stream` when a retry restarts an answer that had already begun:
    drop what was shown. It carries nothing; test for it with ``isinstance(item, Reset)``."""


@dataclass(frozen=True)
class Retry:
    """Yielded by :meth:`LLMClient.stream` before it waits to try again, so the person watching
    sees why the answer is late."""

    attempt: int  # 1 for the first retry
    of: int  # settings.max_retries
    wait: float  # seconds until the retry
    reason: str  # the error's message


@dataclass(frozen=True)
class Thinking:
    """Yielded by :meth:`LLMClient.stream` for a piece of the model's thinking: shown apart,
    never part of the answer's text."""

    text: str


@dataclass(frozen=True)
class Dropped:
    """Yielded by :meth:`LLMClient.stream` the first time a client leaves out a parameter the
    server refused for this model: the answer came without it, so what the caller asked for
    (a temperature, a token cap) did not apply, or applied under ``replacement``'s name."""

    param: str  # "temperature", "max_tokens", "top_p"
    value: Any  # what the call asked for
    model: str
    reason: str  # the server's own words
    replacement: str = ""  # the name the value is sent under instead ("max_completion_tokens"), if any

    @property
    def message(self) -> str:
        """One sentence for the person watching: what was not applied, why, and what applies."""
        refused = f"The LLM server refused {self.param} {self.value} for model '{self.model}' ({self.reason})"
        if self.replacement:
            return f"{refused}; it is sent as {self.replacement} instead."
        return (f"{refused}; calls to it go without {self.param}, so {self.param} {self.value} is not "
                f"applied and the server's default is used.")


@dataclass(frozen=True)
class Completion:
    """One finished answer. ``text`` is the answer only; ``thinking`` is what the model thought
    before (or while) answering, kept apart. ``completion_tokens`` counts every token the model
    wrote, thinking included (what the server spent and a paid API bills); ``thinking_tokens`` is
    the thinking's part of it (the server's ``reasoning_tokens`` when it reports them, else
    estimated), so :attr:`answer_tokens` is the answer's own. ``seconds`` is the whole call as the
    user waited for it, retries included. ``estimated`` is True when the server sent no usage and
    the token counts are ``ceil(characters / 4)``. ``model`` is the model we asked for (servers
    may report a dated alias instead). ``dropped``: the parameters this call went without,
    because the server refuses them for this model."""

    text: str
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    estimated: bool
    finish_reason: str = ""  # "stop", or "length" when max_tokens cut the answer short
    thinking: str = ""
    thinking_tokens: int = 0
    dropped: tuple[Dropped, ...] = ()

    @property
    def answer_tokens(self) -> int:
        return max(self.completion_tokens - self.thinking_tokens, 0)


class ThinkSplitter:
    """Splits one streamed answer into answer text and thinking, by one rule: text inside
    ``<think>...</think>`` is thinking, and so is everything before a ``</think>`` that closes
    no block we saw (chat templates that open the block in the prompt, as DeepSeek-R1's do);
    the delta fields ``reasoning_content`` and ``reasoning`` are thinking as they are. A tag may
    come split across deltas: the text that could be the start of one is held back until the
    next delta says. A block the token limit cut before its ``</think>`` is thinking to its end.

    ``feed(content, reasoning)`` and ``close()`` return what to pass on, in order: ``str``
    answer pieces, :class:`Thinking` pieces, and a :class:`Reset` when a late ``</think>`` turns
    answer text already passed on into thinking (what follows it is the whole answer).

    ``opened``: the model is known to start inside a block its template opened (a late
    ``</think>`` was seen from it before): its content passes on as thinking from the start, so
    none flashes as answer text; should no tag come at all, the stream's end passes a Reset and
    the whole text as the answer (no text is lost either way)."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self, *, opened: bool = False) -> None:
        self._answer: list[str] = []
        self._thinking: list[str] = []
        self._held = ""  # content not yet passed on: the possible start of a tag
        self._inside = opened
        self._assumed = opened  # inside by what the model did before, no tag seen yet
        self._closed_any = False

    @property
    def late_closed(self) -> bool:
        """True once a ``</think>`` closed a block this stream never opened (the template did)."""
        return self._closed_any and not self._assumed and self._late

    @property
    def answer(self) -> str:
        return "".join(self._answer)

    @property
    def started(self) -> bool:
        """True once anything was passed on (answer or thinking)."""
        return bool(self._answer or self._thinking)

    @property
    def thinking(self) -> str:
        return "".join(self._thinking).strip()

    def feed(self, content: str | None, reasoning: str | None = None) -> list[str | Thinking | Reset]:
        out: list[str | Thinking | Reset] = []
        if reasoning:
            self._think(reasoning, out)
        if content:
            self._content(self._held + content, out)
        return out

    def close(self) -> list[str | Thinking | Reset]:
        """What was held back, at the end of the stream: thinking inside an unclosed block; or,
        when the block was only assumed open (``opened``) and no tag came, the whole text as the
        answer, after a Reset that takes back what passed on as thinking."""
        out: list[str | Thinking | Reset] = []
        held, self._held = self._held, ""
        self._emit(held, out)
        if self._assumed and self._thinking:
            text, self._thinking, self._inside, self._assumed = "".join(self._thinking), [], False, False
            out.append(Reset())
            self._emit(text, out)
        return out

    _late = False

    def _content(self, text: str, out: list) -> None:
        if self._assumed:  # a model assumed to start inside that opens a block itself after all
            lowered = text.lower()
            opens, closes = lowered.find(self.OPEN), lowered.find(self.CLOSE)
            if opens >= 0 and (closes < 0 or opens < closes):
                self._assumed = self._inside = False
        while True:
            lowered = text.lower()
            tag = self.CLOSE if self._inside else self.OPEN
            at = lowered.find(tag)
            if at >= 0:
                self._late = self._late or (self._assumed and tag == self.CLOSE)
                self._assumed = False
            late = -1 if self._inside or self._closed_any else lowered.find(self.CLOSE)
            if late >= 0 and (at < 0 or late < at):
                self._late_close(text[:late], out)
                text = text[late + len(self.CLOSE):]
                continue
            if at < 0:
                keep = _partial_tag(lowered, (self.OPEN, self.CLOSE))
                self._held = text[len(text) - keep:]
                self._emit(text[:len(text) - keep], out)
                return
            self._emit(text[:at], out)
            text = text[at + len(tag):]
            self._closed_any = self._closed_any or self._inside
            self._inside = not self._inside

    def _late_close(self, before: str, out: list) -> None:
        """A ``</think>`` with no ``<think>`` before it: all the content so far was thinking."""
        self._late = True
        shown = self.answer
        if shown:
            out.append(Reset())
        self._answer = []
        self._closed_any = True
        self._think(shown + before, out)

    def _emit(self, text: str, out: list) -> None:
        if self._inside:
            self._think(text, out)
        else:
            if not self._answer and self._thinking:  # the answer starts after its thinking's blank lines
                text = text.lstrip()
            if text:
                self._answer.append(text)
                out.append(text)

    def _think(self, text: str, out: list) -> None:
        if text:
            self._thinking.append(text)
            out.append(Thinking(text))


def _partial_tag(lowered: str, tags: tuple[str, ...]) -> int:
    """How many characters at the end of ``lowered`` could begin one of ``tags`` (0: none)."""
    for n in range(min(len(lowered), max(map(len, tags)) - 1), 0, -1):
        if any(tag.startswith(lowered[-n:]) for tag in tags):
            return n
    return 0


def _reasoning(delta: Any) -> str | None:
    """The thinking a delta carries in a field of its own: ``reasoning_content`` (vLLM,
    llama.cpp, DeepSeek) or ``reasoning`` (Ollama, OpenRouter). The SDK keeps fields it does not
    know in ``model_extra``."""
    extra = getattr(delta, "model_extra", None) or {}
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None) or extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def as_messages(messages: Messages) -> list[dict[str, Any]]:
    """A str is one user message; a list of ``{"role", "content"}`` dicts is used as it is."""
    return [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)


def _message_chars(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


#: Parameters a server may refuse for a model, and the name the same value may go under instead
#: when the server's message names it (OpenAI: "Use 'max_completion_tokens' instead.").
REFUSABLE = {"temperature": "", "top_p": "", "max_tokens": "max_completion_tokens",
             "max_completion_tokens": "max_tokens"}
#: Tokens added to a call's own cap (a role's, ``core.text.caps``) for a model seen thinking: the
#: caps are sized for the answer, and thinking counts against max_tokens too. --max-tokens still
#: bounds the whole.
THINKING_ROOM = 4096
WINDOW_TTL = 600.0  # seconds a server's reported context window is trusted


class LLMClient:
    """Chat completions for the roles of a run (``draft``, ``query``, ``revise``, ``judge``), each
    role with its own model (``settings.model_for(role)``).

    ``settings.timeout`` bounds the wait for the first byte of an answer and every pause in it
    (connecting: at most ``CONNECT_TIMEOUT``); a long answer that keeps streaming is not cut.
    Failures on 429, 5xx, timeouts and connection errors are retried ``settings.max_retries``
    times, waiting ``backoff, 2*backoff, 4*backoff...`` seconds, or what the server's
    ``Retry-After`` asks, both capped at ``MAX_WAIT``.

    Building the client never raises and opens nothing; the SDK client is made on first use, in
    the running event loop. Use one client per event loop; ``aclose()`` it (or ``async with``).
    """

    def __init__(self, settings: LLMSettings, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 system: str = "", notes: ServerNotes | None = None, budget: TokenBudget | None = None,
                 tls: TLS | None = None):
        self.settings = settings
        self.tls = tls  # the TLS context its owner shares (``Clients``); None: the SDK makes its own
        self.budget = budget  # a run's token budget: asked before each call, told what each took
        #: what servers taught the clients of this client's owner (``Clients``; its own without one)
        self.notes = notes if notes is not None else ServerNotes()
        self.system = system  # a system message every request begins with (the run's language)
        self.base_url = (settings.base_url or OPENAI_BASE_URL).rstrip("/")
        self._sleep = sleep
        self._client: openai.AsyncOpenAI | None = None
        self._is_openai = urlsplit(self.base_url).hostname == "api.openai.com"
        self._said: set[tuple[str, str]] = set()  # (model, parameter) this client said it left out

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- public ------------------------------------------------------------------------------
    async def stream(self, messages: Messages, *, role: str, temperature: float | None = None,
                     max_tokens: int | None = None
                     ) -> AsyncIterator[str | Thinking | Reset | Retry | Dropped | Completion]:
        """Ask the model for ``role`` and yield the answer as it streams: ``str`` deltas of the
        answer, :class:`Thinking` deltas of the model's thinking (never part of the answer),
        :class:`Reset` if what was yielded is to be dropped (a retry restarts an answer, or a late
        ``</think>`` showed that the text so far was thinking; the items after it are the whole
        new answer), a :class:`Retry` before each wait to try again, a :class:`Dropped` the
        first time this client leaves out a parameter the server refuses for the model, and
        one :class:`Completion` last.

        ``temperature``: this call's, else ``settings.temperature``, else the server's default.

        Raises BudgetExceeded, before the call is made, when the client's ``budget`` would be
        passed (``core.budget``); and (after retries, for the retryable ones): LLMAuthError (no key for OpenAI, or the
        key was refused), LLMConnectionError (base URL unreachable, or the connection dropped),
        LLMModelNotFound, LLMRateLimited, LLMTimeout, LLMServerError, LLMBadRequest (often: the
        prompt is too long for the model), LLMError (any other refusal, or an empty stream).
        """
        model = self.settings.model_for(role)
        key = (self.base_url, model)
        roomy = max_tokens is not None and key in self.notes.thinkers
        messages = as_messages(messages)
        if self.system:
            messages = [{"role": "system", "content": self.system}, *messages]
        request = self._request(messages, model, temperature,
                                max_tokens + THINKING_ROOM if roomy and max_tokens is not None else max_tokens)
        if self.budget is not None:  # before anything is sent: a refused call costs nothing
            self.budget.check("".join(_message_chars(m) for m in messages), role=role,
                              max_tokens=request.get("max_tokens", request.get("max_completion_tokens")))
        refused = self.notes.refusals(key)
        dropped = [_leave_out(request, param, model, *how) for param, how in refused.items() if param in request]
        for drop in dropped:
            if self._first_time(drop):
                yield drop
        sdk = self._sdk()
        started = time.monotonic()
        attempt = 0
        while True:
            split = ThinkSplitter(opened=key in self.notes.opened)
            usage = None
            finish = ""
            received = False
            refusal = None
            try:
                chunks = await sdk.chat.completions.create(
                    **request, stream=True, stream_options={"include_usage": True})
                async with chunks:
                    async for chunk in chunks:
                        received = True
                        if chunk.usage is not None:
                            usage = chunk.usage
                        for choice in chunk.choices:
                            finish = choice.finish_reason or finish
                            if choice.delta:
                                for item in split.feed(choice.delta.content, _reasoning(choice.delta)):
                                    yield item
                for item in split.close():
                    yield item
                break
            except openai.APIError as exc:  # transport errors mid-stream arrive wrapped, too
                refusal = _refusal(exc, request)
                if refusal is None:
                    attempt += 1
                    error = await self._map_error(exc, model=model, role=role, attempts=attempt)
                    if not error.retryable or attempt > self.settings.max_retries:
                        raise error from exc
                    wait = self._wait(attempt, exc)
                    log.debug("%s Retrying in %.1f s (retry %d of %d).", error, wait, attempt,
                              self.settings.max_retries)
            if refusal is not None:  # a 400 before any answer: at once, without the parameter
                param, *how = refusal
                self.notes.refused(key, param, tuple(how))
                dropped.append(_leave_out(request, param, model, *how))
                if self._first_time(dropped[-1]):
                    yield dropped[-1]
                continue
            if split.started:
                yield Reset()
            yield Retry(attempt=attempt, of=self.settings.max_retries, wait=wait, reason=str(error))
            await self._sleep(wait)

        if not received:
            raise LLMError(
                f"The LLM server at {self.base_url} answered with an empty stream for model "
                f"'{model}': check that OPENAI_BASE_URL (--base-url) points at an OpenAI-compatible "
                "API (it usually ends in /v1).")
        done = self._completion(request, split, usage, role=role, model=model, finish=finish,
                                seconds=time.monotonic() - started, dropped=tuple(dropped))
        if self.budget is not None:
            self.budget.spend(role, done.prompt_tokens, done.completion_tokens)
        if done.thinking:
            self.notes.thinkers.add(key)
        if split.late_closed:
            self.notes.opened.add(key)
        if done.finish_reason == "length" and done.thinking and not done.text.strip() and max_tokens is not None \
                and not roomy:  # a cap sized for the answer, used up by thinking: once more, with room to think
            yield Reset()
            async for item in self.stream(messages, role=role, temperature=temperature, max_tokens=max_tokens):
                if isinstance(item, Completion):  # the first try's tokens were spent too
                    item = replace(item, prompt_tokens=item.prompt_tokens + done.prompt_tokens,
                                   completion_tokens=item.completion_tokens + done.completion_tokens,
                                   thinking_tokens=item.thinking_tokens + done.thinking_tokens,
                                   seconds=item.seconds + done.seconds)
                yield item
            return
        yield done

    async def complete(self, messages: Messages, *, role: str, temperature: float | None = None,
                       max_tokens: int | None = None) -> Completion:
        """The whole answer at once (the same streamed call, consumed). Raises as :meth:`stream`."""
        completion = None
        async for item in self.stream(messages, role=role, temperature=temperature, max_tokens=max_tokens):
            if isinstance(item, Completion):
                completion = item
        assert completion is not None, "stream() always ends with a Completion"
        return completion

    async def check(self) -> list[str]:
        """The ids of the models the server serves, sorted; one attempt, no retries. The UI and
        the CLI call this to say "LLM ok". It does not fail when ``settings.model`` is missing
        from the list (some servers accept names they do not list); compare if you need to.

        Raises LLMAuthError, LLMConnectionError, LLMTimeout, LLMRateLimited, LLMServerError, or
        LLMError (e.g. 404: the base URL is no OpenAI-compatible API)."""
        try:
            return sorted([m.id async for m in self._sdk().models.list()])
        except openai.APIError as exc:
            raise await self._map_error(exc, model=None, role=None, attempts=1) from exc

    async def aclose(self) -> None:
        """Close the connections. The client can still be used afterwards (it reopens)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # -- helpers -----------------------------------------------------------------------------
    def _sdk(self) -> openai.AsyncOpenAI:
        """The SDK client, made on first use. Raises LLMAuthError when OpenAI needs a key."""
        if self._client is None:
            key = self.settings.api_key
            if not key:
                if self._is_openai:
                    raise LLMAuthError(
                        f"No API key for {self.base_url}: set OPENAI_API_KEY or pass --base-url "
                        "for a local server (Ollama, LM Studio, vLLM).")
                key = LOCAL_PLACEHOLDER_KEY
            timeout = self.settings.timeout
            http = openai.DefaultAsyncHttpxClient(verify=self.tls.model()) if self.tls is not None else None
            self._client = openai.AsyncOpenAI(
                api_key=key, base_url=self.base_url, max_retries=0, http_client=http,
                timeout=openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)))
        return self._client

    def _request(self, messages: list[dict[str, Any]], model: str, temperature: float | None,
                 max_tokens: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": model, "messages": messages}
        caps = [cap for cap in (max_tokens, self.settings.max_tokens) if cap is not None]
        max_tokens = min(caps) if caps else None
        temperature = temperature if temperature is not None else self.settings.temperature
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            # OpenAI's newer models refuse max_tokens; local servers may not know the new name.
            request["max_completion_tokens" if self._is_openai else "max_tokens"] = max_tokens
        return request

    def _first_time(self, drop: Dropped) -> bool:
        """True the first time this client leaves ``drop.param`` out for ``drop.model``: a
        client serves one run (or one judge session), and each says so once."""
        key = (drop.model, drop.param)
        if key in self._said:
            return False
        self._said.add(key)
        return True

    @staticmethod
    def _completion(request: dict[str, Any], split: ThinkSplitter, usage: Any, *, role: str, model: str,
                    finish: str, seconds: float, dropped: tuple[Dropped, ...]) -> Completion:
        """The Completion of a finished stream, its tokens as the server counted them, else
        estimated; the thinking's part is the server's ``reasoning_tokens``, else estimated."""
        text, thinking = split.answer, split.thinking
        if usage is not None:
            prompt_tokens, completion_tokens, estimated = usage.prompt_tokens, usage.completion_tokens, False
            reported = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
            thinking_tokens = reported or min(count_tokens(thinking) if thinking else 0, completion_tokens)
        else:
            prompt_chars = "".join(_message_chars(m) for m in request["messages"])
            thinking_tokens = count_tokens(thinking) if thinking else 0
            prompt_tokens, estimated = count_tokens(prompt_chars), True
            completion_tokens = count_tokens(text) + thinking_tokens
        return Completion(text=text, role=role, model=model, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens, seconds=seconds, estimated=estimated,
                          finish_reason=finish, thinking=thinking, thinking_tokens=thinking_tokens,
                          dropped=dropped)

    def _wait(self, attempt: int, exc: Exception) -> float:
        """Seconds before retry ``attempt`` (1-based): the server's Retry-After if it sent one,
        else exponential backoff; capped at MAX_WAIT."""
        asked = _retry_after(exc)
        wait = asked if asked is not None else self.settings.backoff * 2 ** (attempt - 1)
        return min(max(wait, 0.0), MAX_WAIT)

    async def _map_error(self, exc: openai.APIError, *, model: str | None, role: str | None,
                         attempts: int) -> LLMError:
        """Our error for an SDK or transport failure, its message naming the fix."""
        server = f"The LLM server at {self.base_url}"
        tries = f" (tried {attempts} times)" if attempts > 1 else ""
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeout(
                f"{server} did not answer within {self.settings.timeout:g} s{tries}: try again, "
                "pick a smaller or faster model, or raise --llm-timeout.")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return LLMConnectionError(
                f"Could not reach the LLM server at {self.base_url}{tries} ({cause}): check "
                "OPENAI_BASE_URL (--base-url) and that the server is running.")
        if not isinstance(exc, openai.APIStatusError):  # an error event inside the stream, or bad data
            return LLMServerError(f"{server} reported an error{tries}: {_detail(exc)}. Try again later.")
        status, detail = exc.status_code, _detail(exc)
        if status in (401, 403):
            return LLMAuthError(f"{server} refused the API key ({status}: {detail}): check OPENAI_API_KEY.")
        if status == 404:
            return await self._not_found(model, role, detail)
        if status == 429:  # the first one is said as it is: a retry note must not say "kept answering"
            said = "kept answering" if attempts > 1 else "answered"
            return LLMRateLimited(
                f"{server} {said} 429 Too Many Requests{tries} ({detail}): wait a minute "
                "and try again, or check your plan's rate limits.")
        if status == 408:
            return LLMTimeout(f"{server} timed out the request{tries} ({detail}): try again.")
        if status >= 500:
            return LLMServerError(f"{server} failed with {status}{tries} ({detail}): try again later, "
                                  "or look at the server's log.")
        if status in (400, 413, 422) and _CONTEXT_ERROR.search(detail):
            return LLMContextExceeded(
                f"{server} refused a prompt longer than model '{model}' can read ({status}: {detail}). "
                "Set --context-tokens (RAT_STUDIO_CONTEXT_TOKENS) to the model's context window so "
                "prompts are fitted to it, lower --passage-tokens, or use rat-step, whose prompts "
                "do not grow with the article. With Ollama, raise the window itself: OLLAMA_CONTEXT_LENGTH "
                "or a Modelfile's num_ctx.")
        if status in (400, 413, 422):
            return LLMBadRequest(
                f"{server} refused the request for model '{model}' ({status}: {detail}). The prompt "
                "may be too long for the model's context window: lower --passage-tokens, or pick a "
                "model with a longer context.")
        return LLMError(f"{server} answered {status}: {detail}")

    async def _not_found(self, model: str | None, role: str | None, detail: str) -> LLMError:
        if model is None or "model" not in detail.lower():
            return LLMError(
                f"{self.base_url} answered 404 ({detail}): check OPENAI_BASE_URL (--base-url); for "
                "OpenAI-compatible servers it usually ends in /v1.")
        served = await self._served_models()
        choice = f": {', '.join(served[:30])}" if served else ""
        how = "--model or RAT_STUDIO_MODEL"
        if role and self.settings.role_models.get(role):
            how = f"--{role}-model or RAT_STUDIO_{role.upper()}_MODEL"
        return LLMModelNotFound(
            f"The LLM server at {self.base_url} does not serve the model '{model}' ({detail}). "
            f"Pick one it serves with {how}{choice}.")

    async def context_window(self, model: str | None = None) -> int | None:
        """The context window the server reports for ``model`` in its model list (vLLM's
        ``max_model_len``, LM Studio's and llama.cpp's ``context_length``, ``n_ctx`` in ``meta``),
        or None when it reports none or the list cannot be read. Best effort: never raises.
        An answer is kept for WINDOW_TTL seconds per server and model, so a run does not wait
        for the model list before its first call when an earlier run already read it."""
        model = model or self.settings.model
        key = (self.base_url, model)
        kept = self.notes.windows.get(key)
        if kept is not None and time.monotonic() - kept[0] < WINDOW_TTL:
            return kept[1]
        window = await self._read_window(model)
        self.notes.windows[key] = (time.monotonic(), window)
        return window

    async def _read_window(self, model: str) -> int | None:
        try:
            page = self._sdk().models.list(timeout=min(self.settings.timeout, 5.0))
            async for entry in page:
                if entry.id != model:
                    continue
                data = entry.model_dump() if hasattr(entry, "model_dump") else dict(entry)
                for where in (data, data.get("meta") or {}):
                    for key in ("max_model_len", "context_length", "max_context_length", "n_ctx", "n_ctx_train"):
                        value = where.get(key)
                        if isinstance(value, int) and value > 0:
                            return value
        except (openai.APIError, TypeError, ValueError) as exc:
            log.debug("reading the context window failed: %s", exc)
        return None

    async def _served_models(self) -> list[str]:
        """Best effort, for an error message: the served model ids, or [] if listing fails."""
        try:
            page = self._sdk().models.list(timeout=min(self.settings.timeout, 5.0))
            return sorted([m.id async for m in page])
        except openai.APIError as exc:
            log.debug("listing models failed: %s", exc)
            return []


#: What servers say when a prompt is longer than the model's context: OpenAI
#: (context_length_exceeded, "maximum context length"), vLLM, llama.cpp ("exceed context window",
#: "the request exceeds the available context size"), LM Studio, TGI ("input validation error:
#: inputs tokens + max_new_tokens must be <=").
_CONTEXT_ERROR = re.compile(r"context[_ ](?:length|window|size)|maximum context|too many tokens|"
                            r"prompt is too long|inputs? tokens|exceeds? (?:the )?(?:available )?context", re.I)


#: How servers say a parameter is not for this model: OpenAI ("Unsupported parameter: 'max_tokens'
#: is not supported with this model.", "Unsupported value: 'temperature' does not support 0.7 with
#: this model."), and the words of other OpenAI-compatible APIs for a field they do not take.
_UNSUPPORTED = re.compile(r"unsupported|not supported|does not support|not allowed|not permitted|"
                          r"unrecognized|unknown (?:parameter|field|argument)", re.I)


def _refusal(exc: openai.APIError, request: dict[str, Any]) -> tuple[str, str, str] | None:
    """(parameter, replacement, the server's words) when ``exc`` is a 400 refusing one of the
    REFUSABLE parameters the request holds, else None. The parameter is the one the error's
    ``param`` names, else the first one its message names; the replacement is REFUSABLE's
    other name for it when the message names that too."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return None
    detail = _detail(exc)
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body["error"] if isinstance(body.get("error"), dict) else body  # the SDK may have unwrapped it
    if _CONTEXT_ERROR.search(detail) or not (_UNSUPPORTED.search(detail)
                                             or str(error.get("code") or "").startswith("unsupported")):
        return None
    named = sorted((m.start(), p) for p in REFUSABLE if p in request for m in [re.search(rf"\b{p}\b", detail)] if m)
    param = error.get("param") if error.get("param") in REFUSABLE else None
    param = param if param in request else (named[0][1] if named else None)
    if param is None:
        return None
    other = REFUSABLE[param]
    return param, other if other and re.search(rf"\b{other}\b", detail) else "", detail


def _leave_out(request: dict[str, Any], param: str, model: str, replacement: str, reason: str) -> Dropped:
    """Take ``param`` out of ``request`` (sending its value as ``replacement`` when there is
    one) and say so."""
    value = request.pop(param)
    if replacement:
        request[replacement] = value
    return Dropped(param=param, value=value, model=model, reason=reason, replacement=replacement)


def _detail(exc: openai.APIError) -> str:
    """The server's own words: the ``error.message`` of its JSON body if any, shortened."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    else:
        message = None
    text = str(message or getattr(exc, "message", None) or exc).strip()
    return text if len(text) <= 300 else text[:297] + "..."


def _retry_after(exc: Exception) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if sent."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            pass
        try:
            return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            pass
    return None
