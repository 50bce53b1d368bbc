"""The factories of a run's network clients.

Network clients (the openai SDK's, httpx's) belong to the event loop that first uses them, and
Gradio, the CLI and tests each run their own loops, so a client is made when it is needed and
closed by whoever asked for it (``await client.aclose()``). ``Clients`` holds only what the
clients are made from: the settings, the store that caches searches and pages, what model servers
taught its LLM clients (``ServerNotes``: each run's client starts from what earlier runs learnt),
and the TLS contexts its clients share (``core.tls.TLS``: made once, not once per client).
``app.py`` builds one and hands it to the runner, the judge and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.settings import Settings
from core.server_notes import ServerNotes
from core.tls import TLS

if TYPE_CHECKING:  # pragma: no cover
    from core.budget import TokenBudget
    from core.llm import LLMClient
    from core.retrieval.fetch import Fetcher
    from core.retrieval.search import SearchChain


@dataclass(frozen=True)
class Clients:
    settings: Settings
    cache: Any = None  # data.store.Store or anything with get/put_page and get/put_search
    corpus_db: Path | None = None  # where the local corpus keeps its index
    notes: ServerNotes = field(default_factory=ServerNotes, compare=False)  # what servers taught its LLM clients
    tls: TLS = field(default_factory=TLS, compare=False, repr=False)  # the TLS contexts its clients share

    def llm(self, *, system: str = "", budget: TokenBudget | None = None) -> LLMClient:
        """A new LLM client; ``system``: a system message its every request begins with ("" for
        none); ``budget``: a run's token budget, which refuses a call that would pass it (None: no
        cap). Raises LLMAuthError when no key is set for a server that needs one."""
        from core.llm import LLMClient  # the openai SDK is imported when a model is first called

        return LLMClient(self.settings.llm, system=system, notes=self.notes, budget=budget, tls=self.tls)

    def search(self, providers: tuple[str, ...] | None = None) -> SearchChain:
        """The search providers of the settings (or ``providers``, for one run), in order,
        cached in the store. Raises ConfigError for a provider that lacks its setting."""
        from core.retrieval.search import SearchChain, build_providers

        s = self.settings.search
        if providers:
            s = replace(s, providers=tuple(providers))
        return SearchChain(build_providers(s, corpus_db_path=self.corpus_db, tls=self.tls), retries=s.retries,
                           backoff=s.backoff, cache=self.cache)

    def check_search(self, providers: tuple[str, ...] | None = None) -> None:
        """Raise the ConfigError :meth:`search` would raise for ``providers`` (a provider that lacks
        its setting: "add --corpus DIR", "add --searxng-url ..."), and nothing else: for a run to be
        refused before anything of it is stored, not stored and then failed. Building the providers
        opens no connection and writes nothing (their clients and indexes are made on first use)."""
        from core.retrieval.search import build_providers

        s = self.settings.search
        if providers:
            s = replace(s, providers=tuple(providers))
        build_providers(s, corpus_db_path=self.corpus_db)

    def fetcher(self, *, metadata: bool = False) -> Fetcher:
        """The page reader, caching in the store; ``metadata``: also the pages' author, date, site
        and description (``fetch`` shows them; a run shows only titles, and its search results
        name the pages), at about twice the extraction work."""
        from core.retrieval.extract import warm_up
        from core.retrieval.fetch import Fetcher  # httpx and the extractor are imported when a page is first read

        warm_up()  # the extraction workers start while the model drafts, not when the first page arrives
        return Fetcher(self.settings.fetch, cache=self.cache, metadata=metadata, tls=self.tls)
