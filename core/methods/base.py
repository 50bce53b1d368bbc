"""What every method shares: the task, the context a method receives, the registry, and the
one helper that turns a streamed LLM call into events.

A method never touches openai, httpx or SQLite: it gets ``ctx.llm``, ``ctx.search``,
``ctx.fetch`` and ``ctx.settings``, and yields events (common.events). To resume an interrupted
run it reads ``ctx.prior``, the events the run stored before it stopped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from core import prompts
from common.errors import LLMError, TaskError
from common.types import Task
from common.events import DraftReady, Event, LLMCalled, Note, TokenDelta
from common.settings import MethodSettings

T = TypeVar("T")


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


class Out(Generic[T]):
    """Where an event-yielding helper leaves its result (an async generator cannot return)."""

    value: T

    def __init__(self, value: Any = None):
        self.value = value


async def generate(ctx: MethodContext, prompt: str | list[dict], *, role: str, out: Out[str],
                   i: int = 0, temperature: float | None = None,
                   max_tokens: int | None = None) -> AsyncIterator[Event]:
    """Stream one LLM call as TokenDelta events (a Note for each retry), then an LLMCalled
    event; the text is left in ``out.value``. LLM errors propagate (the runner turns them into a resumable Failed)."""
    from core.llm import Completion, Reset, Retry  # local: keeps methods importable without openai

    async for item in ctx.llm.stream(prompt, role=role, temperature=temperature, max_tokens=max_tokens):
        if isinstance(item, str):
            if item:
                yield TokenDelta(role=role, text=item, i=i)
        elif isinstance(item, Reset):
            yield TokenDelta(role=role, text="", i=i, reset=True)
        elif isinstance(item, Retry):
            yield Note(i=i, level="warning", text=f"The {role} call failed: {item.reason} "
                                                  f"Retrying in {item.wait:.0f} s ({item.attempt} of {item.of}).")
        elif isinstance(item, Completion):
            out.value = item.text
            yield LLMCalled(role=role, model=item.model, i=i, prompt_tokens=item.prompt_tokens,
                            completion_tokens=item.completion_tokens, seconds=round(item.seconds, 4),
                            estimated=item.estimated)


async def write_draft(ctx: MethodContext, task: Task, out: Out[list[str]], *,
                      cap: bool = True) -> AsyncIterator[Event]:
    """Prompt B.1 of 001: the step-by-step draft, split on blank lines, then DraftReady; the
    steps are left in ``out.value``. With ``cap``, a draft longer than ``max_steps`` is cut (and
    a Note says so). Raises LLMError when the model returns no text."""
    text: Out[str] = Out("")
    async for ev in generate(ctx, prompts.DRAFT.format(question=prompts.question_for(task)), role="draft", out=text):
        yield ev
    steps = prompts.split_steps(text.value)
    if not steps:
        raise LLMError("The model returned an empty draft. Try again, or pick a stronger model with --model.")
    if cap and len(steps) > ctx.settings.max_steps:
        yield Note(text=f"The draft has {len(steps)} steps; only the first {ctx.settings.max_steps} "
                        "are revised (raise --max-steps to revise more).", level="warning")
        steps = steps[: ctx.settings.max_steps]
    out.value = steps
    yield DraftReady(steps=tuple(steps))
