"""The services a front end (CLI or UI) works with. Built once by app.py; passed to every
ui tab's ``build(services)`` and every CLI handler.

Network clients (the openai SDK's, httpx's) belong to the event loop that first uses them, and
Gradio, the CLI and tests each run their own loops, so ``Services`` hands out *new* clients on
request: whoever asks closes them (``await client.aclose()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from core.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from core.fetch import Fetcher
    from core.llm import LLMClient
    from core.runner import Runner
    from core.search import SearchChain
    from data.store import Store


@dataclass
class Services:
    settings: Settings
    store: "Store"

    @cached_property
    def runner(self) -> "Runner":
        from core.runner import Runner

        return Runner(self)

    def new_llm(self) -> "LLMClient":
        """A new LLM client. Raises LLMAuthError when no key is set for a server that needs one."""
        from core.llm import LLMClient

        return LLMClient(self.settings.llm)

    def new_search(self) -> "SearchChain":
        """The search providers of the settings, in order, cached in the store.
        Raises ConfigError for a provider that lacks its setting."""
        from core.search import SearchChain, build_providers

        s = self.settings.search
        providers = build_providers(s, corpus_db_path=self.store.path.with_name(self.store.path.stem + ".corpus.db"))
        return SearchChain(providers, retries=s.retries, backoff=s.backoff, cache=self.store)

    def new_fetcher(self) -> "Fetcher":
        from core.fetch import Fetcher

        return Fetcher(self.settings.fetch, cache=self.store)
