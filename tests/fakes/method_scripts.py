"""A scripted "model" for the fake LLM server that answers the prompts of every method of the
papers (baselines, RAT ablations, ITRG, AAG, FuRePA), the way a cooperative model would. Each
prompt is recognised by a phrase of its instruction; a test overrides the answer for a kind with
``handlers={kind: fn(prompt, body, n) -> str}`` (``n`` counts the calls of that kind, from 1)
and inspects ``calls`` afterwards."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tests.fakes.llm_server import message_text
from tests.fakes.scripts import draft_steps, rat_reply
from tests.fakes.scripts import kind_of as prompt_kind

MARKERS = (  # (kind, phrase of the prompt), tried in order
    ("draft", "Try to answer this question/instruction with step-by-step thoughts"),
    ("query", "This summarization will be used as a query"),
    ("rag", "##Retrieved Text:"),
    ("itrg-refresh", "you should write a document that contains the answer"),
    ("itrg-refine", "you should refine the document"),
    ("itrg-answer", "Read the document and answer the question."),
    ("aag-rewrite", 'under the heading "Outline:"'),
    ("aag-first", "##Procedures from memory:"),
    ("aag-summary", "Answer the question with a short summary of the retrieved procedures"),
    ("aag-update", "Update the current answer according to the knowledge"),
    ("aag-critic", "You are a critic."),
    ("aag-edit", "Apply the edits above"),
)

Handler = Callable[[str, dict, int], str]


def kind_of(body: dict) -> str:
    messages = body.get("messages", [])
    system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
    last = last_user(body)
    if "tell me what information to search first" in system:
        return "furepa-first"
    if "Lines only start with '[Analysis]'" in system:
        return "furepa-forced" if "The search budget is spent" in last else "furepa-plan"
    if last.startswith("##Existing Text in Wiki Web:"):
        return "revise"
    for kind, phrase in MARKERS:
        if phrase in last:
            return kind
    return "direct"


def last_user(body: dict) -> str:
    return next((message_text(m) for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")


class MethodAuthor:
    """Answers every method's prompts; records ``calls`` as (kind, last user message, body)."""

    def __init__(self, steps: list[str] | None = None, handlers: dict[str, Handler] | None = None):
        self.steps = steps if steps is not None else draft_steps(3)
        self.handlers = dict(handlers or {})
        self.calls: list[tuple[str, str, dict]] = []
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        kind = kind_of(body)
        prompt = last_user(body)
        with self._lock:
            self.calls.append((kind, prompt, body))
            self.counts[kind] = n = self.counts.get(kind, 0) + 1
        if kind in self.handlers:
            return self.handlers[kind](prompt, body, n)
        return self.default(kind, prompt, n)

    def default(self, kind: str, prompt: str, n: int) -> str:
        if kind in ("draft", "query", "revise"):
            return rat_reply(kind, prompt, self.steps)
        if kind == "rag":
            return "An answer written with the retrieved text."
        if kind in ("itrg-refresh", "itrg-refine"):
            return f"Document {n} about Python releases and Mercurial."
        if kind == "itrg-answer":
            return "Answer: December 2016"
        if kind == "aag-rewrite":
            return ("Outline:\n1. Install the tools\n2. Write the code\n"
                    "Questions:\n1. How to install Python packages?\n2. How to test a Django application?")
        if kind == "aag-first":
            return "1. First step of the first answer.\n\n2. Second step of the first answer."
        if kind == "aag-summary":
            return f"Summary {n} of the procedures."
        if kind == "aag-update":
            return "1. Updated first step.\n\n2. Updated second step."
        if kind == "aag-critic":
            return "NO UPDATE REQUIRED"
        if kind == "aag-edit":
            return f"Edited answer {n} keeps the first step and the second step, as the critic asked."
        if kind == "furepa-first":
            return "[Search] Python 3.6.0 release"
        if kind == "furepa-plan":
            return "[Analysis] The context says when Python 3.6.0 was released.\n[Answer] December 2016"
        if kind == "furepa-forced":
            return "[Analysis] Forced to answer.\n[Answer] December 2016"
        return "A direct answer."

    def of_kind(self, kind: str) -> list[str]:
        return [p for k, p, _ in self.calls if k == kind]

    def bodies(self, kind: str) -> list[dict]:
        return [b for k, _, b in self.calls if k == kind]

    def kinds(self) -> list[str]:
        return [k for k, _, _ in self.calls]


# -- helpers for method tests ------------------------------------------------------------------
from tests.helpers import collect, of  # noqa: E402,F401  (re-exported for the method tests)


class MemoryCache:
    """The store's page and search caches, in a dict: a run reads a page once, as with the
    store, without SQLite."""

    def __init__(self) -> None:
        self.pages: dict[str, dict] = {}
        self.searches: dict[tuple[str, str, int], list[dict]] = {}

    def get_page(self, url: str) -> dict | None:
        return self.pages.get(url)

    def put_page(self, page: dict) -> None:  # the keys the store keeps
        keys = ("url", "final_url", "title", "text", "content_type", "size", "metadata")
        self.pages[page["url"]] = {k: page.get(k) for k in keys}

    def get_search(self, provider: str, query: str, k: int) -> list[dict] | None:
        return self.searches.get((provider, query, k))

    def put_search(self, provider: str, query: str, k: int, results: list[dict]) -> None:
        self.searches[(provider, query, k)] = results


def method_context(model, web=None, *, params: dict | None = None, memory=None, prior=(), **method):
    """A MethodContext for running a method in process: ``model`` (a FakeModel) as its LLM, and,
    with ``web`` (a FakeWeb), the real SearXNG search and page fetching against it, cached in
    memory as the store caches them (no SQLite). ``method``: MethodSettings fields (k, ...)."""
    from common.settings import FetchSettings, MethodSettings, SearchSettings, Settings
    from core.clients import Clients
    from core.methods import MethodContext

    settings = MethodSettings(params=dict(params or {}), **method)
    if web is None:
        return MethodContext(llm=model, search=None, fetch=None, settings=settings, prior=list(prior), memory=memory)
    clients = Clients(Settings(
        search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url, retries=1, backoff=0.01),
        fetch=FetchSettings(allow_private_urls=True, timeout=5, step_deadline=8),
    ), cache=MemoryCache())
    return MethodContext(llm=model, search=clients.search(), fetch=clients.fetcher(), settings=settings,
                         prior=list(prior), memory=memory)


async def run_method(name: str, task, ctx, *, stop_after=None) -> list:
    """The events of method ``name`` run in process on ``task``, with ``Final.sources`` filled
    from the events as the runner fills them; the context's clients are closed afterwards.
    Errors the method raises propagate (the runner would turn them into a Failed event)."""
    from core.article.sources import SourceBook
    from core.methods import get_method

    book = SourceBook.from_events(ctx.prior)
    try:
        events = await collect(get_method(name).run(task, ctx), stop_after=stop_after)
    finally:
        for client in (ctx.search, ctx.fetch, ctx.llm):
            if client is not None and hasattr(client, "aclose"):
                await client.aclose()
    return [book.sourced(e) for e in events]


def runner_with(app, *, params: dict | None = None, memory=None):
    """A runner like ``app.runner`` (its store, clients and settings) but with method ``params``
    (as ``--param KEY=VALUE`` sets them) and, when given, a procedure ``memory`` other than the
    one app.py gives the runner."""
    from dataclasses import replace

    from core.runner import Runner

    settings = app.runner.settings
    if params:
        settings = replace(settings, method=replace(settings.method, params=dict(params)))
    return Runner(app.store, app.clients, settings, memory=app.runner.memory if memory is None else memory)


def every_method_author() -> MethodAuthor:
    """A MethodAuthor that also answers rat-step's revision prompt ("##Existing Text in Wiki Web:"),
    so that every registered method runs to its end against it."""
    steps = MethodAuthor().steps
    revise = lambda prompt, body, n: rat_reply(prompt_kind(prompt), prompt, steps)  # noqa: E731
    return MethodAuthor(steps, handlers={"revise": revise})
