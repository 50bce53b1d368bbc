"""The registry of methods and the context a method receives. The helpers the methods share
(a streamed LLM call as events, the B.1 draft, parameters) are in ``core.methods.helpers``.

A method never touches openai, httpx or SQLite: it gets ``ctx.llm``, ``ctx.search``,
``ctx.fetch`` and ``ctx.settings``, and yields events (common.events). To resume an interrupted
run it reads ``ctx.prior``, the events the run stored before it stopped. It ends with
``Final(text=...)``; the runner fills in the sources, from the events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from common.errors import TaskError
from common.events import Event
from common.settings import MethodSettings
from common.types import Task


@dataclass
class MethodContext:
    llm: Any  # core.llm.LLMClient or anything with the same stream()/complete()
    search: Any  # core.search.SearchChain
    fetch: Any  # core.fetch.Fetcher
    settings: MethodSettings = field(default_factory=MethodSettings)
    prior: list[Event] = field(default_factory=list)  # events stored before a resume
    read_local: Callable[[str], tuple[str, str] | None] | None = None  # file:// corpus reader
    memory: Any = None  # core.procedures.ProcedureMemory: AAG's procedural memory


MethodFn = Callable[[Task, MethodContext], AsyncIterator[Event]]


@dataclass(frozen=True)
class MethodInfo:
    name: str
    description: str
    paper: str
    run: MethodFn
    resumable: bool = False
    uses_search: bool = True


METHODS: dict[str, MethodInfo] = {}


def register(name: str, description: str, paper: str, *, resumable: bool = False,
             uses_search: bool = True) -> Callable[[MethodFn], MethodFn]:
    def deco(fn: MethodFn) -> MethodFn:
        METHODS[name] = MethodInfo(name, description, paper, fn, resumable, uses_search)
        return fn

    return deco


def get_method(name: str) -> MethodInfo:
    """Raises TaskError naming the known methods."""
    try:
        return METHODS[name]
    except KeyError:
        raise TaskError(f"Unknown method {name!r}. Known methods: {', '.join(sorted(METHODS))}.") from None
