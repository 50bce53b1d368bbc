"""The services a front end (CLI or UI) works with. Built once by app.py; passed to every
ui tab's ``build(services)`` and every CLI handler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    llm: "LLMClient"
    search: "SearchChain"
    fetcher: "Fetcher"
    runner: "Runner"
    extra: dict[str, Any] = field(default_factory=dict)
