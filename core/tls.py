"""The TLS contexts of an app's network clients, each made once (``Clients`` owns one ``TLS``).

An ``ssl.SSLContext`` holds the trusted certificates, and making one loads the whole bundle:
44 ms of CPU on a two-core machine. httpx and the openai SDK make a new one for every client, and
a run made three clients (its model's, its page reader's, its SearXNG search's), so each run paid
about 0.13 s of CPU before its first call. A context is made to be shared by many connections and
threads, so the clients of one ``Clients`` share theirs: each is made on first use, the way the
library would have made it (the same defaults; the same environment variables read, or not), so
no client trusts more or less than it did.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Hashable


class TLS:
    """The contexts, made on first use and kept."""

    def __init__(self) -> None:
        self._made: dict[Hashable, ssl.SSLContext] = {}
        self._lock = threading.Lock()  # runs start on several threads: one context per kind, not one each

    def _once(self, kind: Hashable, make: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        with self._lock:
            if kind not in self._made:
                self._made[kind] = make()
            return self._made[kind]

    def model(self) -> ssl.SSLContext:
        """For the openai SDK's client: its HTTP library's default (which honours SSL_CERT_FILE
        and SSL_CERT_DIR, as the SDK's own client does)."""
        import httpx2  # the openai SDK's HTTP library

        return self._once("model", httpx2.create_ssl_context)

    def web(self, *, trust_env: bool) -> ssl.SSLContext:
        """For an httpx client of the web: httpx's default, with (``trust_env``) or without the
        environment's certificate settings, as that client would have read them."""
        import httpx

        return self._once(("web", trust_env), lambda: httpx.create_ssl_context(trust_env=trust_env))
