"""What a run is started and continued with, as the server is set up: the search providers it may
use (one, or every configured one in order) and whether the model server answers. Read by the
Writer's Run and by every panel's Continue (``ui.draft_editor``)."""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr

from common.errors import RatStudioError
from common.settings import Settings
from core.clients import Clients
from ui.controls import for_browser

CHAIN = "__chain__"  # the search choice "every configured provider, in order"


def search_choices(settings: Settings) -> list[tuple[str, str]]:
    """The configured search providers, each on its own, and (with several) all of them in order."""
    providers = list(settings.search.providers)
    choices = [(p, p) for p in providers]
    if len(providers) > 1:
        choices.insert(0, (f"all, in order: {' → '.join(providers)}", CHAIN))
    return choices


def providers_for(settings: Settings, providers: str | Sequence[str] | None) -> tuple[str, ...]:
    """The search providers of a run: one configured provider, ``CHAIN`` (or None) for all of
    them in order, or the list stored in a run's settings. Providers that are not configured
    are ignored."""
    configured = tuple(settings.search.providers)
    if providers is None or providers == CHAIN:
        wanted: tuple[str, ...] = configured
    else:
        wanted = (providers,) if isinstance(providers, str) else tuple(providers)
    return tuple(p for p in wanted if p in configured) or configured


async def llm_check(clients: Clients) -> tuple[str, list[str]]:
    """('' and the served models) when the model server answers, else (what to fix, [])."""
    try:
        llm = clients.llm()
    except RatStudioError as exc:
        return str(exc), []
    try:
        return "", await llm.check()
    except RatStudioError as exc:
        return str(exc), []
    finally:
        await llm.aclose()


async def require_llm(clients: Clients) -> None:
    """Raises gr.Error naming what to set when the model server cannot be used."""
    problem, _ = await llm_check(clients)
    if problem:
        raise gr.Error(for_browser(problem), title="The model server is not ready")
