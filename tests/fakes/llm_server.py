"""A fake OpenAI-compatible server on 127.0.0.1, speaking real HTTP the way the openai SDK does.

Routes
  POST /v1/chat/completions  a ``chat.completion`` JSON object, or with ``"stream": true`` an SSE
                             stream of ``chat.completion.chunk`` objects ending in ``data: [DONE]``
                             (plus a usage chunk with ``choices: []`` when
                             ``stream_options.include_usage`` is true and ``send_usage`` is on)
  GET  /v1/models            the served models

Use::

    with FakeLLM() as llm:
        llm.queue("first answer", FakeReply.fail(429, retry_after=2))
        client = LLMClient(LLMSettings(base_url=llm.base_url, model="fake-model"))
        ...
        assert len(llm.requests) == 2

Replies are taken from ``queue(...)`` first (FIFO), then from the function given to ``reply(fn)``,
else a deterministic echo of the last user message. Each is a str or a :class:`FakeReply`.

Knobs (attributes, safe to set from the test thread): ``down`` (every request answers 503),
``fail_next(n, status)``, ``models`` (others answer 404 ``model_not_found``), ``api_key`` (another
Bearer key answers 401), ``send_usage`` (False: never send usage, like some local servers),
``latency`` (seconds before the first byte) and ``tokens_per_second`` (pace of the streamed chunks;
a non-stream answer waits the same total time), ``hold_after_first()`` (every stream sends its
first content chunk, then waits for the returned event before the rest), ``chunk_chars`` (stream
content and thinking in pieces of that many characters, so a ``<think>`` tag comes split across
deltas) and ``refuse`` (parameters, e.g. ``{"temperature"}``, that every request holding them is
refused for with a 400 in OpenAI's words, as OpenAI's reasoning models refuse them).

Thinking: a reply's ``thinking`` is sent the way ``think`` says, as the servers of reasoning models
send it (see ``THINK_STYLES``); :func:`with_thinking` gives every answer of a script the same.

Records: ``requests``, ``paths``, and ``streams_done`` (streams whose every chunk was sent, counted
before the end marker goes out), so a test can check what the client saw before a stream ended
without a stopwatch.

Tokens are counted the simple way: every run of word characters and every punctuation mark is one
token (``count_tokens``). Streamed chunks are whole words with their trailing whitespace.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN = re.compile(r"\w+|[^\w\s]")
WAIT_LIMIT = 10.0  # seconds a held stream waits at most, so a broken client cannot hang a test
_ERROR_KINDS = {  # status -> (type, code), as OpenAI sends them
    400: ("invalid_request_error", "context_length_exceeded"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


#: How a reply's thinking is sent: "inline" in the content as <think>...</think> before the answer
#: (DeepSeek-R1 distills, Qwen3 on llama.cpp); "opened" the same, but the block was opened by the
#: chat template so the content starts inside it and only </think> comes (DeepSeek-R1's template);
#: "unclosed" a <think> block the token limit cut, no answer (finish_reason "length");
#: "reasoning_content" in the delta field of that name (vLLM, llama.cpp --reasoning-format,
#: DeepSeek's API); "reasoning" in the field Ollama's and OpenRouter's endpoints use.
THINK_STYLES = ("inline", "opened", "unclosed", "reasoning_content", "reasoning")
FIELD_STYLES = ("reasoning_content", "reasoning")
#: A thought to scan for: distinctive, and shaped to do harm if it leaked (a blank line would
#: split a draft, its lines could pass for a query).
THOUGHT = ("PONDERING-XYZ Okay, the user wants an answer. Let me think about what to search.\n\n"
           "PONDERING-XYZ Maybe search for the release dates first.")
#: OpenAI's words when a model refuses a parameter: (code, message); {value} is the value sent.
REFUSALS = {
    "temperature": ("unsupported_value", "Unsupported value: 'temperature' does not support {value} with this "
                                         "model. Only the default (1) value is supported."),
    "top_p": ("unsupported_value", "Unsupported value: 'top_p' does not support {value} with this model. "
                                   "Only the default (1) value is supported."),
    "max_tokens": ("unsupported_parameter", "Unsupported parameter: 'max_tokens' is not supported with this "
                                            "model. Use 'max_completion_tokens' instead."),
}


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def chunks_of(text: str) -> list[str]:
    """Whole-word chunks: each word with its trailing whitespace (the first keeps any leading)."""
    return [part for part in re.split(r"(?<=\s)(?=\S)", text) if part]


def message_text(message: dict) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


@dataclass
class FakeReply:
    """One scripted answer. ``status`` != 200 answers with OpenAI's error JSON shape.
    ``cut_after``: stream that many content chunks, then drop the connection (non-stream: drop it
    before answering). ``delay`` is added to the server's ``latency``."""

    text: str = ""
    status: int = 200
    message: str = ""
    code: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    cut_after: int | None = None
    finish_reason: str = "stop"
    thinking: str = ""  # the model's thinking, sent as ``think`` says (THINK_STYLES)
    think: str = "inline"
    param: str | None = None  # an error's "param", as OpenAI names the refused parameter

    def content(self) -> str:
        """The content as the server sends it: the answer, with the thinking in it when inline."""
        if not self.thinking or self.think in FIELD_STYLES:
            return self.text
        if self.think == "unclosed":
            return f"<think>{self.thinking}"
        opening = "" if self.think == "opened" else "<think>"
        return f"{opening}{self.thinking}</think>\n\n{self.text}"

    def reasoning(self) -> tuple[str, str] | None:
        """(field, thinking) when the thinking is sent in a delta field of its own."""
        return (self.think, self.thinking) if self.thinking and self.think in FIELD_STYLES else None

    def finish(self) -> str:
        return "length" if self.thinking and self.think == "unclosed" else self.finish_reason

    @classmethod
    def fail(cls, status: int, message: str = "", *, code: str | None = None,
             retry_after: float | None = None, delay: float = 0.0) -> FakeReply:
        return cls(status=status, message=message or f"fake error {status}", code=code,
                   retry_after=retry_after, delay=delay)


Reply = str | FakeReply


def with_thinking(script: Callable[[dict], Reply], think: str, thought: str = THOUGHT) -> Callable[[dict], FakeReply]:
    """``script`` (a request body -> reply function, such as a MethodAuthor) as a reasoning model
    would answer it: every reply thinks ``thought`` first, sent as ``think`` says (THINK_STYLES);
    with "unclosed" the thinking used up the tokens and no answer comes."""
    assert think in THINK_STYLES, think

    def answer(body: dict) -> FakeReply:
        reply = script(body)
        reply = FakeReply(text=reply) if isinstance(reply, str) else reply
        if reply.status != 200:
            return reply
        return FakeReply(text="" if think == "unclosed" else reply.text, finish_reason=reply.finish_reason,
                         thinking=thought, think=think)

    return answer


def refusal(body: dict, refused: set[str]) -> FakeReply | None:
    """The 400 OpenAI answers when the request holds a parameter of ``refused``, else None."""
    for name in sorted(refused):
        if name in body:
            code, message = REFUSALS.get(name, ("unsupported_parameter",
                                                f"Unsupported parameter: '{name}' is not supported with this model."))
            return FakeReply(status=400, message=message.format(value=body[name]), code=code, param=name)
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout test) is normal here: no traceback for it."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class FakeLLM:
    def __init__(self, models: set[str] | None = None, port: int = 0):
        self.models: set[str] = set(models or {"fake-model", "fake-draft", "fake-judge"})
        self.api_key: str | None = None
        self.down = False
        self.send_usage = True
        self.context_length: int | None = None  # reported in /v1/models as vLLM does (max_model_len)
        self.latency = 0.0
        self.tokens_per_second: float | None = None
        self.chunk_chars: int | None = None  # stream in pieces of this many characters (tags split)
        self.refuse: set[str] = set()  # request parameters refused with a 400, as OpenAI's reasoning models do
        self.requests: list[dict] = []  # JSON bodies of every chat request, in arrival order
        self.arrivals: list[float] = []  # time.perf_counter() when each chat request arrived
        self.first_chunks: list[float] = []  # time.time() when each stream's first content chunk was sent
        self.paths: list[str] = []  # "METHOD /path" of every request, models included
        self.streams_done = 0
        self._after_first: threading.Event | None = None
        self._queue: list[Reply] = []
        self._fn: Callable[[dict], Reply] | None = None
        self._fail_next: list[int] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), self._handler())
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------------------------
    def reply(self, fn: Callable[[dict], Reply]) -> None:
        """Answer every request (after the queue is empty) with ``fn(request_body)``."""
        self._fn = fn

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def fail_next(self, n: int, status: int = 429) -> None:
        with self._lock:
            self._fail_next.extend([status] * n)

    def hold_after_first(self) -> threading.Event:
        """From now on, streams pause after their first content chunk until the returned event is
        set (or ``WAIT_LIMIT`` passes)."""
        self._after_first = threading.Event()
        return self._after_first

    def prompts(self, role: str | None = None) -> list[str]:
        """Per chat request, the texts of its messages (of ``role`` only, if given), joined."""
        with self._lock:
            bodies = list(self.requests)
        return ["\n".join(message_text(m) for m in body.get("messages", [])
                          if role is None or m.get("role") == role) for body in bodies]

    def _next_reply(self, body: dict) -> FakeReply:
        with self._lock:
            failing = self._fail_next.pop(0) if self._fail_next else None
            queued = self._queue.pop(0) if self._queue and failing is None else None
        if failing is not None:
            reply: Reply = FakeReply.fail(failing)
        elif queued is not None:
            reply = queued
        elif self._fn is not None:
            reply = self._fn(body)
        else:
            users = [m for m in body.get("messages", []) if m.get("role") == "user"]
            reply = f"Echo from {body.get('model')}: {message_text(users[-1]) if users else ''}"
        return FakeReply(text=reply) if isinstance(reply, str) else reply

    # -- HTTP --------------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, and chunked bodies for SSE
            disable_nagle_algorithm = True  # small SSE writes go out at once

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with fake._lock:
                    fake.paths.append(f"GET {self.path}")
                if not self._authorized():
                    return
                if fake.down:
                    return self._error(FakeReply.fail(503, "the fake server is down"))
                if self.path.rstrip("/") != "/v1/models":
                    return self._error(FakeReply.fail(404, f"no route {self.path}", code="not_found"))
                extra = {"max_model_len": fake.context_length} if fake.context_length else {}
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake", **extra}
                        for m in sorted(fake.models)]
                self._json(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                with fake._lock:
                    fake.paths.append(f"POST {self.path}")
                    fake.requests.append(body)
                    fake.arrivals.append(time.perf_counter())
                if not self._authorized():
                    return
                if fake.down:
                    return self._error(FakeReply.fail(503, "the fake server is down"))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._error(FakeReply.fail(404, f"no route {self.path}", code="not_found"))
                model = body.get("model")
                if model not in fake.models:
                    return self._error(FakeReply.fail(
                        404, f"The model `{model}` does not exist or you do not have access to it."))
                refused = refusal(body, fake.refuse)
                if refused is not None:
                    return self._error(refused)
                reply = fake._next_reply(body)
                time.sleep(fake.latency + reply.delay)
                if reply.status != 200:
                    return self._error(reply)
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._complete(body, reply)

            def _authorized(self) -> bool:
                if fake.api_key is None or self.headers.get("Authorization") == f"Bearer {fake.api_key}":
                    return True
                self._error(FakeReply.fail(401, "Incorrect API key provided."))
                return False

            def _usage(self, body: dict, reply: FakeReply) -> dict:
                """Usage as servers report it: the thinking's tokens are part of the completion's;
                with thinking in a field of its own, also reported apart (``reasoning_tokens``)."""
                prompt = sum(count_tokens(message_text(m)) for m in body.get("messages", []))
                done = count_tokens(reply.content()) + (count_tokens(reply.thinking) if reply.reasoning() else 0)
                usage = {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}
                if reply.reasoning():
                    usage["completion_tokens_details"] = {"reasoning_tokens": count_tokens(reply.thinking)}
                return usage

            def _pieces(self, text: str) -> list[str]:
                if fake.chunk_chars:
                    return [text[n:n + fake.chunk_chars] for n in range(0, len(text), fake.chunk_chars)]
                return chunks_of(text)

            def _complete(self, body: dict, reply: FakeReply) -> None:
                if reply.cut_after is not None:
                    self.close_connection = True
                    return
                if fake.tokens_per_second:
                    time.sleep(count_tokens(reply.content()) / fake.tokens_per_second)
                message = {"role": "assistant", "content": reply.content()}
                if reply.reasoning():
                    field, thought = reply.reasoning()
                    message[field] = thought
                answer: dict[str, Any] = {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": reply.finish(), "logprobs": None,
                                 "message": message}],
                }
                if fake.send_usage:
                    answer["usage"] = self._usage(body, reply)
                self._json(200, answer)

            def _stream(self, body: dict, reply: FakeReply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def chunk(delta: dict, finish: str | None = None, **extra: Any) -> dict:
                    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                            "created": int(time.time()), "model": body["model"],
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                         "logprobs": None}], **extra}

                self._event(chunk({"role": "assistant", "content": ""}))
                if reply.reasoning():  # thinking first, in its field, with no content (as vLLM sends it)
                    field, thought = reply.reasoning()
                    for piece in self._pieces(thought):
                        self._event(chunk({field: piece}))
                # paced against a schedule (token n is due at start + n / rate), so the small
                # overshoot of each sleep does not add up over a long answer
                start, due = time.monotonic(), 0.0
                for n, piece in enumerate(self._pieces(reply.content())):
                    if reply.cut_after is not None and n >= reply.cut_after:
                        self.close_connection = True  # no terminating chunk: a broken body
                        return
                    if fake.tokens_per_second:
                        due += count_tokens(piece) / fake.tokens_per_second
                        time.sleep(max(0.0, start + due - time.monotonic()))
                    self._event(chunk({"content": piece}))
                    if n == 0:
                        with fake._lock:
                            fake.first_chunks.append(time.time())
                    if n == 0 and fake._after_first is not None:
                        fake._after_first.wait(WAIT_LIMIT)
                self._event(chunk({}, reply.finish()))
                if fake.send_usage and (body.get("stream_options") or {}).get("include_usage"):
                    usage = chunk({}, usage=self._usage(body, reply))
                    usage["choices"] = []
                    self._event(usage)
                with fake._lock:  # counted before the end is sent: a client that saw the end sees the count
                    fake.streams_done += 1
                self._write_chunk(b"data: [DONE]\n\n")
                self._write_chunk(b"")

            def _event(self, data: dict) -> None:
                self._write_chunk(b"data: " + json.dumps(data).encode() + b"\n\n")

            def _write_chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _error(self, reply: FakeReply) -> None:
                kind, code = _ERROR_KINDS.get(reply.status, ("server_error", None))
                payload = {"error": {"message": reply.message, "type": kind,
                                     "param": reply.param, "code": reply.code or code}}
                headers = {} if reply.retry_after is None else {"Retry-After": f"{reply.retry_after:g}"}
                self._json(reply.status, payload, headers)

            def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


__all__ = ["FakeLLM", "FakeReply", "THINK_STYLES", "THOUGHT", "count_tokens", "chunks_of", "refusal", "with_thinking"]
