"""What model servers taught this process's LLM clients, kept by whoever owns them (``Clients``,
one per app) and handed to each client it makes (``core.llm.LLMClient(notes=...)``): a later
run leaves out at once what a server refused, gives a thinking model room, and does not read
the model list again. A client made on its own gets notes of its own, so nothing one test or
caller learns changes another's calls."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

Key = tuple[str, str]  # (the server's base URL, the model)


@dataclass
class ServerNotes:
    #: (base URL, model) -> {parameter: (replacement, the server's words)}: what the server
    #: refused, so that later calls leave it out at once.
    quirks: dict[Key, dict[str, tuple[str, str]]] = field(default_factory=dict)
    #: (base URL, model) seen thinking: their capped calls get ``core.llm.THINKING_ROOM`` more.
    thinkers: set[Key] = field(default_factory=set)
    #: (base URL, model) seen answering inside a think block its chat template opened (only the
    #: ``</think>`` comes): their next streams start as thinking.
    opened: set[Key] = field(default_factory=set)
    #: (base URL, model) -> (when read, on the monotonic clock; the context window it reported)
    windows: dict[Key, tuple[float, int | None]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def refused(self, key: Key, param: str, how: tuple[str, str]) -> None:
        with self.lock:
            self.quirks.setdefault(key, {})[param] = how

    def refusals(self, key: Key) -> dict[str, tuple[str, str]]:
        with self.lock:
            return dict(self.quirks.get(key, {}))
