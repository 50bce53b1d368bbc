"""The tiny model's greedy answers, each asked of it once per test session: an HTTP proxy in front
of its server (``ReplyCache``) that forwards every request, and answers a chat request it has
already seen with temperature 0 (the same body, byte for byte) with the bytes the model sent for it
the first time (its event stream, as it came).

Why: the real-model tests run every method on the same two tasks, and methods that begin alike
(rat and rat-noncausal, the four AAGs) send the model the same first requests: 32 of a session's
91 calls were such repeats, 143 of its 585 seconds of model time (two cores). Greedy decoding gives
the same answer to the same request, so the answer sent again is the model's own. Anything that is
not a greedy chat request (another temperature, /v1/models) goes to the model every time.

The cache lives in a folder of the session (the test workers share it) and goes with it: a later
session asks the model again. A request being asked of the model is claimed (a lock file beside
its answer), so the same request from another worker waits for that answer instead of asking too.
"""

from __future__ import annotations

import fcntl
import hashlib
import http.client
import json
import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

CHUNK = 64 * 1024
DROPPED = {"host", "connection", "accept-encoding", "content-length", "transfer-encoding", "keep-alive"}


def greedy_chat(path: str, body: bytes) -> dict | None:
    """The request, when it is one whose answer may be sent again (a chat completion at
    temperature 0), else None."""
    if not path.rstrip("/").endswith("/chat/completions"):
        return None
    try:
        asked = json.loads(body)
    except ValueError:
        return None
    return asked if isinstance(asked, dict) and asked.get("temperature") == 0 else None


def whole(asked: dict, answer: bytes) -> bool:
    """Whether the answer to ``asked`` came whole: a stream's ends with its ``[DONE]`` (a server
    that stopped part-way sent less), any other is whole when it reads as JSON."""
    if asked.get("stream"):
        return answer.rstrip().endswith(b"data: [DONE]")
    try:
        json.loads(answer)
    except ValueError:
        return False
    return True


class ReplyCache:
    """A proxy on 127.0.0.1 in front of ``upstream`` (an OpenAI-compatible base URL, e.g.
    ``http://127.0.0.1:PORT/v1``) that keeps greedy chat answers in ``folder``. ``base_url`` is
    the proxy's, with the same path. ``hits`` and ``misses`` count the greedy chat requests."""

    def __init__(self, upstream: str, folder: Path) -> None:
        parts = urlsplit(upstream)
        self.host, self.port, self.prefix = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the openai SDK's client expects
            disable_nagle_algorithm = True  # a stream's small pieces go out as they come

            def do_GET(self) -> None:
                owner._answer(self)

            def do_POST(self) -> None:
                owner._answer(self)

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def __enter__(self) -> ReplyCache:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- inside -----------------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        size = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(size) if size else b""
        asked = greedy_chat(handler.path, body)
        if not asked:
            self._forward(handler, body, None, None)
            return
        kept = self.folder / hashlib.sha256(handler.path.encode() + b"\0" + body).hexdigest()
        # One asker at a time per request, across the workers: the same request from another
        # worker (methods that begin alike run side by side) waits for this answer and is sent it.
        with open(kept.with_suffix(".lock"), "a+b") as claim:
            fcntl.flock(claim, fcntl.LOCK_EX)
            if kept.exists():
                with self._lock:
                    self.hits += 1
                head, _, data = kept.read_bytes().partition(b"\n")
                meta = json.loads(head)
                handler.send_response(meta["status"])
                handler.send_header("Content-Type", meta["type"])
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)
                return
            with self._lock:
                self.misses += 1
            self._forward(handler, body, kept, asked)

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes, kept: Path | None, asked: dict | None) -> None:
        """The model's answer, passed on as it comes (a stream stays a stream), and kept at ``kept``
        (the answer to the greedy request ``asked``) when it is whole and a success."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in DROPPED}
            connection.request(handler.command, handler.path, body=body or None, headers=headers)
            answer = connection.getresponse()
            handler.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in DROPPED:
                    handler.send_header(name, value)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            data = bytearray()
            while chunk := answer.read1(CHUNK):
                data += chunk
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            if kept is not None and asked is not None and answer.status == 200 and whole(asked, bytes(data)):
                meta = {"status": answer.status, "type": answer.getheader("Content-Type") or "application/json"}
                self._keep(kept, json.dumps(meta).encode() + b"\n" + bytes(data))
        finally:
            connection.close()

    def _keep(self, path: Path, data: bytes) -> None:
        """Written whole or not at all (another worker may read it at once)."""
        handle, name = tempfile.mkstemp(dir=self.folder, prefix=".part-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(name, path)
