"""A local web server over ../shared/fixtures/web, with a SearXNG-style JSON search endpoint and
routes that misbehave on purpose.

Routes
  /pages/<file>              a fixture page (text/html)
  /search?q=..&format=json   SearXNG JSON: {"query", "results": [{"url","title","content","engine"}]}
                             ranked by word overlap with each page's title, snippet and text
  /status/<code>             answers with that status
  /slow/<seconds>            waits, then a small HTML page
  /huge                      a 6 MB HTML page
  /binary                    application/octet-stream
  /image                     image/png
  /redirect-loop             redirects to itself
  /redirect/<n>              a chain of n redirects ending on a small page
  /redirect-to?url=..        one redirect to the given URL (e.g. a private address)
  /custom/<name>             a page registered with add_page()

Knobs (attributes, thread-safe enough for tests): ``page_delay`` (seconds added to every
/pages request, or a dict file -> seconds), ``search_delay``, ``rate_limit_next`` (the next N
searches answer 429), ``fail_search_next`` (the next N answer 500), ``extra_results`` (SearXNG
result dicts put first in every answer, e.g. links to the misbehaving routes), ``gather`` (hold each
/pages request until that many are being answered at once, at most ``WAIT_LIMIT`` seconds) and
``hold(file)`` (answer /pages/<file> only once the returned event is set). ``reset()`` puts them back.

Records: ``requests`` (every request path), ``search_count``, and ``in_flight`` / ``max_in_flight``
(/pages requests being answered now, and the most at once): concurrency is proven by counting,
not by a stopwatch.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "web"

_WORD = re.compile(r"[a-z0-9]+")
WAIT_LIMIT = 10.0  # seconds a gathered or held request waits at most, so a broken client cannot hang a test


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@functools.cache
def _page_words(path: Path, mtime_ns: int) -> frozenset[str]:
    """The words of a page's text, read once per process and version of the file: a test
    session starts hundreds of servers over the same 27 pages (57 of the quick loop's CPU-s were
    spent reading them again)."""
    body = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(_words(re.sub(r"<[^>]+>", " ", body)))


def load_manifest(folder: Path = FIXTURES) -> list[dict]:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client that hung up is not news
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class FakeWeb:
    """Start with ``with FakeWeb() as web:``; ``web.url("/pages/x.html")`` builds URLs."""

    def __init__(self, folder: Path = FIXTURES, port: int = 0):
        self.folder = folder
        self.manifest = load_manifest(folder)
        self._index = []
        for entry in self.manifest:
            path = folder / entry["file"]
            self._index.append((entry, _words(entry["title"] + " " + entry["snippet"]),
                                _page_words(path, path.stat().st_mtime_ns)))
        self.custom: dict[str, tuple[bytes, str]] = {}
        self.requests: list[str] = []
        self.page_delay: float | dict[str, float] = 0.0
        self.search_delay = 0.0
        self.rate_limit_next = 0
        self.fail_search_next = 0
        self.search_count = 0
        self.extra_results: list[dict] = []  # put before every search's ranked results
        self.gather = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._epoch = 0  # bumped by reset(): requests from before it are no longer counted
        self._held: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._server = _QuietServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeWeb:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeWeb:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def page_url(self, file: str) -> str:
        return self.url("/pages/" + quote(file))

    @property
    def searxng_url(self) -> str:
        return self.base

    def hold(self, file: str) -> threading.Event:
        """Answer /pages/<file> only once the returned event is set (or ``WAIT_LIMIT`` passes)."""
        event = threading.Event()
        self._held[file] = event
        return event

    def reset(self) -> None:
        """Knobs back to their defaults, records emptied, held pages released (for a server
        shared between tests). Requests still being answered are no longer counted."""
        for event in self._held.values():
            event.set()
        with self._changed:
            self._held = {}
            self.requests.clear()
            self.custom.clear()
            self.page_delay, self.search_delay, self.gather = 0.0, 0.0, 0
            self.rate_limit_next = self.fail_search_next = self.search_count = 0
            self.extra_results = []
            self.in_flight = self.max_in_flight = 0
            self._epoch += 1
            self._changed.notify_all()

    @contextmanager
    def _answering_page(self, name: str) -> Iterator[None]:
        """Count a /pages request in flight while it is answered; wait for ``gather`` and ``hold``."""
        with self._changed:
            epoch = self._epoch
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.max_in_flight >= self.gather or self._epoch != epoch,
                                   timeout=WAIT_LIMIT)
            held = self._held.get(name)
        try:
            if held is not None:
                held.wait(WAIT_LIMIT)
            yield
        finally:
            with self._changed:
                if self._epoch == epoch:
                    self.in_flight -= 1

    def add_page(self, name: str, body: str | bytes, content_type: str = "text/html; charset=utf-8") -> str:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.custom[name] = (data, content_type)
        return self.url("/custom/" + name)

    # -- search ----------------------------------------------------------------------------
    def rank(self, query: str, k: int = 10) -> list[dict]:
        q = _words(query)
        scored = []
        for entry, head, body in self._index:
            score = 3 * len(q & head) + len(q & body)
            if score:
                scored.append((score, entry))
        scored.sort(key=lambda pair: (-pair[0], pair[1]["file"]))
        return [
            {
                "url": self.page_url(entry["file"]),
                "title": entry["title"],
                "content": entry["snippet"],
                "engine": "fake",
                "score": float(score),
            }
            for score, entry in scored[:k]
        ]

    # -- handler ---------------------------------------------------------------------------
    def _handler(self):
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
                      headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    try:
                        self.wfile.write(body)
                    except (BrokenPipeError, ConnectionResetError):
                        pass

            def _redirect(self, location: str, status: int = 302) -> None:
                self._send(status, b"", headers={"Location": location})

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):  # noqa: C901 - a router
                parsed = urlparse(self.path)
                path, query = parsed.path, parse_qs(parsed.query)
                with web._lock:
                    web.requests.append(self.path)
                if path.startswith("/pages/"):
                    name = path[len("/pages/"):]
                    with web._answering_page(name):
                        return self._page(name)
                if path == "/search":
                    return self._search(query)
                if path.startswith("/status/"):
                    code = int(path.rsplit("/", 1)[1])
                    return self._send(code, f"<h1>status {code}</h1>".encode())
                if path.startswith("/slow/"):
                    time.sleep(float(path.rsplit("/", 1)[1]))
                    return self._send(200, b"<html><head><title>Slow</title></head><body><p>finally</p></body></html>")
                if path == "/huge":
                    para = "<p>" + "All work and no play makes a very large page. " * 40 + "</p>\n"
                    body = ("<html><head><title>Huge</title></head><body>" + para * 3000 + "</body></html>").encode()
                    return self._send(200, body)
                if path == "/binary":
                    return self._send(200, bytes(range(256)) * 16, "application/octet-stream")
                if path == "/image":
                    return self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 512, "image/png")
                if path == "/redirect-loop":
                    return self._redirect("/redirect-loop")
                if path.startswith("/redirect/"):
                    n = int(path.rsplit("/", 1)[1])
                    if n <= 0:
                        return self._send(200, b"<html><head><title>Arrived</title></head>"
                                               b"<body><p>You made it through the redirects.</p></body></html>")
                    return self._redirect(f"/redirect/{n - 1}")
                if path == "/redirect-to":
                    return self._redirect(query.get("url", ["/"])[0])
                if path.startswith("/custom/"):
                    name = path[len("/custom/"):]
                    if name not in web.custom:
                        return self._send(404, b"<h1>Not found</h1>")
                    body, ctype = web.custom[name]
                    return self._send(200, body, ctype)
                return self._send(404, b"<h1>Not found</h1>")

            def _page(self, name: str) -> None:
                delay = web.page_delay.get(name, 0.0) if isinstance(web.page_delay, dict) else web.page_delay
                if delay:
                    time.sleep(delay)
                file = web.folder / name
                if "/" in name or not file.is_file():
                    return self._send(404, b"<h1>Not found</h1>")
                return self._send(200, file.read_bytes())

            def _search(self, query: dict) -> None:
                with web._lock:
                    web.search_count += 1
                    limited = web.rate_limit_next > 0
                    if limited:
                        web.rate_limit_next -= 1
                    failing = not limited and web.fail_search_next > 0
                    if failing:
                        web.fail_search_next -= 1
                if web.search_delay:
                    time.sleep(web.search_delay)
                if limited:
                    return self._send(429, b'{"error": "too many requests"}', "application/json")
                if failing:
                    return self._send(500, b'{"error": "boom"}', "application/json")
                if query.get("format", [""])[0] != "json":
                    return self._send(403, b"<h1>format not allowed</h1>")
                q = query.get("q", [""])[0]
                results = list(web.extra_results) + web.rank(q)
                body = json.dumps({"query": q, "number_of_results": len(results), "results": results})
                return self._send(200, body.encode(), "application/json")

        return Handler


if __name__ == "__main__":  # serve the fixtures by hand: python -m tests.fakes.web_server
    with FakeWeb(port=8765) as web:
        print("serving", web.base, "- Ctrl-C to stop")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
