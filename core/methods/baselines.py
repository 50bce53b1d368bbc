"""The baselines of paper 001 (RAT, section 4.1 and table 2): DIRECT, zero-shot CoT and RAG with
k = 1 or 5 retrieved pages; and the small helpers the other methods of the papers share
(method parameters, the short-answer instruction of QA tasks, web-sized queries).

    direct   the model answers the prompt as it is                          (role "draft")
    cot      prompt B.1 of 001: step-by-step thoughts, paragraphs split on blank lines
                                                                             (role "draft")
    rag-k    search with the task prompt, read k results, answer with the retrieved text in
             the prompt                                                      (role "draft")

001 gives no prompt for DIRECT or RAG; the RAG prompt below is ours, laid out like B.3.

Parameters: every method reads its own overrides from ``ctx.settings.params``
(``--param KEY=VALUE`` on the command line), a dict such as ``{"itrg.iterations": 3, "aag.critic_cycles": 2}``; a key that
is absent keeps the module default (the paper's value). :func:`param` validates the type.
"""

from __future__ import annotations

import re
import string
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from core import prompts
from common.errors import TaskError
from common.events import Event, Final, Note, QueryMade, StepStarted
from common.types import Task
from core.methods.base import MethodContext, Out, generate, register, write_draft
from core.prompts import QA_INSTRUCTION, question_for  # noqa: F401  (shared by the methods)
from core.passages import format_passages
from core.retrieval import retrieve
from core.sources import SourceBook
from common.types import Passage

V = TypeVar("V")

#: Longest query sent to a search engine. Methods whose query is a whole text (CoT+RAG's draft,
#: ITRG's question + last output) are cut at a word boundary, and the cut is shown in a Note:
#: web search engines refuse or truncate very long queries (the papers used dense retrievers,
#: which take whole passages).
MAX_QUERY_CHARS = 1000

# Ours (001 gives no RAG prompt): the retrieved text first, fenced and labelled, as in B.3.
RAG = """##Retrieved Text:
{content}

##Question:
{question}

##Instruction:
Answer the question/instruction above. Use the retrieved text where it is relevant and correct, and ignore it where it is not.
Just respond to the instruction directly. DO NOT add additional explanations or introducement in the answer unless you are asked to."""


# -- shared helpers ----------------------------------------------------------------------------
def param(ctx: MethodContext, key: str, default: V) -> V:
    """The method parameter ``key`` (e.g. ``"itrg.iterations"``) from ``ctx.settings.params``
    (``--param KEY=VALUE``) when set there, else ``default``. Raises TaskError naming the key
    when the value cannot be read as the default's type."""
    params = ctx.settings.params
    if key not in params or params[key] is None:
        return default
    value: Any = params[key]
    kind = type(default)
    try:
        if kind is bool:
            if isinstance(value, str):
                if value.strip().lower() not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                    raise ValueError(value)
                return value.strip().lower() in {"1", "true", "yes", "on"}  # type: ignore[return-value]
            return bool(value)  # type: ignore[return-value]
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return kind(value)  # type: ignore[call-arg]
    except (TypeError, ValueError):
        raise TaskError(f"The setting {key}={value!r} is not a valid {kind.__name__}; "
                        f"use e.g. {key}={default!r}.") from None


def web_query(text: str, limit: int = MAX_QUERY_CHARS) -> tuple[str, bool]:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters; and
    whether it was cut."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one, False
    cut = one[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut), True


def urls_of(passages: list[Passage]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p.url for p in passages))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation, as 003 describes it (section 3.3): lowercase, remove
    punctuation, the articles a/an/the and extra whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


# -- the methods -------------------------------------------------------------------------------
@register("direct", "DIRECT: the model answers the prompt as it is, with no retrieval",
          "001 (RAT), baselines of section 4.1", uses_search=False)
async def direct(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    text: Out[str] = Out("")
    async for ev in generate(ctx, question_for(task), role="draft", out=text):
        yield ev
    yield Final(text=prompts.normalise_answer(text.value) or text.value.strip())


@register("cot", "CoT: zero-shot chain of thought with prompt B.1, step-by-step paragraphs",
          "001 (RAT), baseline of section 4.1, prompt B.1", uses_search=False)
async def cot(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    steps: Out[list[str]] = Out([])
    async for ev in write_draft(ctx, task, steps, cap=False):
        yield ev
    yield Final(text=prompts.join_steps(steps.value))


@register("rag-1", "RAG-1: search with the task prompt, answer with the top result's text in context",
          "001 (RAT), baseline of section 4.1 (RAG 1 shot)")
def rag_1(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rag(task, ctx, k=1)


@register("rag-5", "RAG-5: search with the task prompt, answer with the top 5 results' text in context",
          "001 (RAT), baseline of section 4.1 (RAG 5 shots)")
def rag_5(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rag(task, ctx, k=5)


async def _rag(task: Task, ctx: MethodContext, *, k: int) -> AsyncIterator[Event]:
    book = SourceBook()
    yield StepStarted(i=1, thought="Search with the task prompt itself", n=1)
    query, cut = web_query(task.prompt)
    if cut:
        yield Note(i=1, text=f"The task is long; the search uses its first {len(query)} characters.")
    yield QueryMade(i=1, query=query)
    found: Out[list[Passage]] = Out([])
    async for ev in retrieve(ctx, 1, query, found, k=k):
        book.see(ev)
        yield ev
    passages = found.value
    if passages:
        prompt = RAG.format(content=format_passages(passages), question=question_for(task))
        book.use(1, urls_of(passages))
    else:
        yield Note(i=1, level="warning", text="Nothing could be retrieved; the model answers without retrieved text.")
        prompt = question_for(task)
    text: Out[str] = Out("")
    async for ev in generate(ctx, prompt, role="draft", out=text, i=1):
        yield ev
    yield Final(text=prompts.normalise_answer(text.value) or text.value.strip(), sources=book.sources())
