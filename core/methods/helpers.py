"""What the methods share, in one place: a streamed LLM call as events (:func:`generate`), the
step-by-step draft of prompt B.1 (:func:`write_draft`), method parameters (:func:`param`),
web-sized queries (:func:`web_query`), and small text helpers.

A helper that yields events and also hands back a result (``generate``, ``write_draft``,
``core.retrieval.pipeline.retrieve``, the phases of AAG and FuRePA) is written with
``core.returning``: it ends with ``yield Return(value)``, and its caller passes its events on,
then reads ``.result``::

    text = generate(ctx, prompt, role="draft")
    async for ev in text:
        yield ev
    answer = text.result

Parameters: every method reads its own overrides from ``ctx.settings.params``
(``--param KEY=VALUE`` on the command line), a dict such as ``{"itrg.iterations": 3,
"aag.critic_cycles": 2}``; a key that is absent keeps the default declared with the method
(``register(..., params=...)``, the paper's value). :func:`param` reads the declared type and
checks the range; ``core.methods.base.check_params`` checks every key before a run starts.

Sources: methods keep no list of sources. They say which URLs each step used
(``StepRevised.sources``, or a ``SourcesUsed`` event) and the runner numbers the article's
sources from the events (``core.article.sources``).
"""

from __future__ import annotations

import re
import string
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from common.errors import LLMError, TaskError
from common.events import DraftReady, Event, LLMCalled, Note, StepRevised, ThinkingDelta, TokenDelta
from common.settings import DEFAULT_CONTEXT_TOKENS
from common.types import Passage, Task
from core.article.sources import cut_ending
from core.methods.base import MethodContext, Param, declared_param
from core.returning import Return, Returning, returning  # noqa: F401  (the helpers' idiom, above)
from core.text import caps, prompts
from core.text.caps import NO_THINKING
from core.text.fencing import format_passages
from core.text.guards import Revision, guard_revision
from core.text.prompts import QA_INSTRUCTION, question_for  # noqa: F401  (shared by the methods)
from core.text.tokens import count_tokens

#: Longest query sent to a search engine. Methods whose query is a whole text (CoT+RAG's draft,
#: ITRG's question + last output) are cut at a word boundary, and the cut is shown in a Note:
#: web search engines refuse or truncate very long queries (the papers used dense retrievers,
#: which take whole passages).
MAX_QUERY_CHARS = 1000


class Answer(str):
    """A model's answer (a ``str``, its thinking never part of it) that knows whether the token
    limit cut it short: ``cut`` (finish_reason "length"); and ``all_thinking``: the model thought
    and the limit cut it before it answered anything. A cut revision is refused (:func:`revised`):
    its end is missing."""

    cut: bool = False
    all_thinking: bool = False

    def __new__(cls, text: str, *, cut: bool = False, all_thinking: bool = False) -> Answer:
        answer = super().__new__(cls, text)
        answer.cut = cut
        answer.all_thinking = all_thinking
        return answer


@returning
async def generate(ctx: MethodContext, prompt: str | list[dict], *, role: str, i: int = 0,
                   temperature: float | None = None, max_tokens: int | None = None,
                   note_cut: bool = True) -> AsyncIterator[Event | Return[str]]:
    """Stream one LLM call as TokenDelta events (a reasoning model's thinking as ThinkingDelta
    events, apart), a Note for each retry and for a parameter the server refuses (said once a
    run: what the method asked for and could not apply), then an LLMCalled event (with the
    call's thinking), and a warning Note when the token limit cut the answer short (unless
    ``note_cut`` is False: a cap of the method's own, where a cut answer is expected; an answer
    the limit cut while the model was still thinking is always said, with advice of its own);
    returns the text as an :class:`Answer`. LLM errors propagate (the runner turns them into a
    resumable Failed); raises LLMError when the model thought and then answered nothing."""
    from core.llm import Completion, Dropped, Reset, Retry, Thinking  # local: keeps methods importable without openai

    size = count_tokens(prompt if isinstance(prompt, str) else "".join(str(m.get("content", "")) for m in prompt))
    if max_tokens is not None:  # a cap that does not fit beside the prompt is left out: the window ends the answer
        max_tokens = caps.fit(max_tokens, prompt, context_tokens(ctx))
    if size > prompt_room(ctx):
        yield Note(i=i, level="warning",
                   text=f"The {role} prompt is about {size:,} tokens, more than the {prompt_room(ctx):,} that "
                        f"--context-tokens {context_tokens(ctx):,} leaves beside the answer: the server may cut "
                        "it or refuse it.")
    async for item in ctx.llm.stream(prompt, role=role, temperature=temperature, max_tokens=max_tokens):
        if isinstance(item, str):
            if item:
                yield TokenDelta(role=role, text=item, i=i)
        elif isinstance(item, Thinking):
            yield ThinkingDelta(role=role, text=item.text, i=i)
        elif isinstance(item, Reset):
            yield TokenDelta(role=role, text="", i=i, reset=True)
        elif isinstance(item, Retry):
            yield Note(i=i, level="warning", text=f"The {role} call failed: {item.reason} "
                                                  f"Retrying in {item.wait:.0f} s ({item.attempt} of {item.of}).")
        elif isinstance(item, Dropped):
            yield Note(i=i, level="info" if item.replacement else "warning", text=item.message)
        elif isinstance(item, Completion):
            cut = item.finish_reason == "length"
            yield LLMCalled(role=role, model=item.model, i=i, prompt_tokens=item.prompt_tokens,
                            completion_tokens=item.completion_tokens, seconds=round(item.seconds, 4),
                            estimated=item.estimated, cut_ending=cut_ending(item.text) if cut else "",
                            thinking=item.thinking, thinking_tokens=item.thinking_tokens)
            all_thinking = bool(item.thinking or item.thinking_tokens) and not item.text.strip()
            if all_thinking and not cut:
                raise LLMError(_thought_only(role, item.thinking_tokens))
            if all_thinking:
                yield Note(i=i, level="warning", text=_thinking_cut(role, item.completion_tokens, max_tokens))
            elif cut and note_cut:
                advice = cut_advice(ctx, item.completion_tokens, max_tokens, item.prompt_tokens)
                yield Note(i=i, level="warning",
                           text=f"The {role} answer reached the token limit ({item.completion_tokens:,} tokens) and "
                                f"was cut short: {advice}")
            yield Return(Answer(item.text, cut=cut, all_thinking=all_thinking))




def _thinking_cut(role: str, tokens: int, cap: int | None) -> str:
    """The warning on an answer the token limit cut while the model was still thinking."""
    own = f" (this call's own cap is {cap:,})" if cap is not None else ""
    return (f"The {role} answer is empty: the model's thinking used all {tokens:,} tokens it was allowed{own} "
            f"before it wrote an answer. Raise --max-tokens or leave it out, {NO_THINKING}, or pick a model "
            f"that does not think with --{role}-model.")


def _thought_only(role: str, tokens: int) -> str:
    """The error for a model that thought, was not cut, and answered nothing."""
    return (f"The model thought ({tokens:,} tokens) but gave no {role} answer: its whole reply was thinking. "
            f"Pick a model that does not think with --{role}-model (or --model), or {NO_THINKING}; if the "
            "server splits thinking off (vLLM --reasoning-parser, llama.cpp --reasoning-format), check that "
            "it matches the model.")


@returning
async def write_draft(ctx: MethodContext, task: Task, *, cap: bool = True) -> AsyncIterator[Event | Return[list[str]]]:
    """Prompt B.1 of 001: the step-by-step draft, split into steps (``prompts.draft_steps``:
    blank lines, else the Markdown structure real models write), then DraftReady; returns the
    steps. With ``cap``, a draft of more than ``max_steps`` steps has neighbours merged (and a
    Note says so): no text is dropped. Raises LLMError when the model returns no text."""
    prompt = prompts.DRAFT.format(question=prompts.question_for(task))
    text = generate(ctx, prompt, role="draft", max_tokens=whole_answer(ctx, task))
    async for ev in text:
        yield ev
    steps = prompts.draft_steps(text.result)
    if not steps and text.result.all_thinking:
        raise LLMError("The model returned no draft: its thinking used all the tokens it was allowed. Raise "
                       f"--max-tokens or leave it out, {NO_THINKING}, or pick a model that does not think with "
                       "--draft-model.")
    if not steps:
        raise LLMError("The model returned an empty draft. Try again, or pick a stronger model with --model.")
    if cap and len(steps) > ctx.settings.max_steps:
        yield Note(text=f"The draft has {len(steps)} steps; neighbours are merged into {ctx.settings.max_steps} "
                        "so that none is lost (raise --max-steps to revise each on its own).", level="warning")
        steps = prompts.merge_steps(steps, ctx.settings.max_steps)
    yield DraftReady(steps=tuple(steps))
    yield Return(steps)


_DECLARED: Any = object()  # param()'s default: the declared one


def param(ctx: MethodContext, key: str, default: Any = _DECLARED) -> Any:
    """The method parameter ``key`` (e.g. ``"itrg.iterations"``) from ``ctx.settings.params``
    (``--param KEY=VALUE``) when set there, else its default: the one declared with the method
    (``core.methods.base.Param``), or ``default`` when given. The value is read as the declared
    type (or ``default``'s, for an undeclared key) and checked against the declared range or
    choices. Raises TaskError naming the key and what it accepts; ``check_params`` refuses such
    a value before a run is created, so a run only meets this when a method is driven directly."""
    declared = declared_param(key)
    if declared is None:
        if default is _DECLARED:
            raise TaskError(f"--param {key} is not declared by any method: declare it with register(..., params=...).")
        declared = Param(key, default)
    elif default is not _DECLARED:
        declared = replace(declared, default=default)
    value = ctx.settings.params.get(key)
    if value is None:
        return declared.default
    try:
        return declared.parse(value)
    except ValueError as exc:
        raise TaskError(str(exc)) from None


def web_query(text: str, limit: int = MAX_QUERY_CHARS) -> tuple[str, bool]:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters; and
    whether it was cut."""
    one = " ".join(text.split())
    if len(one) <= limit:
        return one, False
    cut = one[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut), True


def numbers(ctx: MethodContext) -> dict[str, int]:
    """The article's sources so far and their numbers (``MethodContext.numbers``; none when the
    method is driven without a runner): what ``format_passages`` labels passages with."""
    return ctx.numbers() if ctx.numbers is not None else {}


def urls_of(passages: list[Passage]) -> tuple[str, ...]:
    """The passages' URLs, each once, in order."""
    return tuple(dict.fromkeys(p.url for p in passages))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def qa_normal_form(text: str) -> str:
    """An answer reduced for comparison, never for display: SQuAD's answer normalisation, as 003
    describes it (section 3.3): lowercase, remove punctuation, the articles a/an/the and extra
    whitespace. Exact match, F1 and answer recall (core.batch) and FuRePA's vote among answers
    compare these forms. Unlike ``core.text.prompts.tidy_reply``, which only tidies a reply's
    paragraphs for showing, this changes the words."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def query_note(i: int, model_text: str, problem: str) -> Note:
    """The warning on step i that the model's query was not used, and why."""
    shown = " ".join(model_text.split())
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return Note(i=i, level="warning", text=f"The model's query {shown!r} {problem}; the step's own words "
                                           "were searched instead.")


def revised(ctx: MethodContext, i: int, before: str, reply: str, passages: list[Passage], *,
            article_of: Callable[[str], str] | None = None, fresh: bool = False) -> list[Event]:
    """The events of a revision of ``before`` that the model answered with ``reply``, after
    the guards (core.text.guards): a StepRevised with the reply's text and the passages' URLs, or,
    when the reply is refused, a warning Note that says why and a StepRevised that keeps
    ``before`` (no sources; the reply in ``rejected``). ``article_of`` gives the whole text
    after the step from the step's text (default: the step's text is the whole text); ``fresh``:
    the reply was written anew, not as a revision of ``before`` (``core.text.guards``)."""
    rev = guard_revision(before, reply, min_keep=ctx.settings.min_keep, cut=getattr(reply, "cut", False),
                         fresh=fresh)
    article = article_of or (lambda text: text)
    if not rev.problem:
        step = StepRevised(i=i, before=before, after=rev.text, sources=urls_of(passages), article=article(rev.text))
        notes = [shrink_note(i, before, rev)] if rev.kept < 1 else []
        return [*notes, *([asides_note(i, rev)] if rev.dropped else []), step]
    note = Note(i=i, level="warning", text=f"The model's revision of step {i} was not used: it {rev.problem}. "
                                           "The text is kept as it stood; the refused revision is shown with "
                                           "the step and can be taken by hand.")
    return [note, StepRevised(i=i, before=before, after=before, article=article(before),
                              guarded=rev.problem, rejected=rev.rejected)]


SHRINK_WARNING = 0.9  # an accepted revision keeping less than this share of characters is a warning
SHORTER = "is shorter than the text it replaced"  # in the Note on such a revision


def shrink_note(i: int, before: str, rev: Revision) -> Note:
    """The Note that a revision the guards let through (``rev.kept`` below 1) is shorter than the
    text it replaced, so that no text leaves a run unsaid: a warning below ``SHRINK_WARNING`` of
    the characters, information above it."""
    return Note(i=i, level="warning" if rev.kept < SHRINK_WARNING else "info",
                text=f"The model's revision of step {i} {SHORTER} ({len(rev.text):,} of {len(before.strip()):,} "
                     f"characters, {rev.kept:.0%}); the step's diff shows what it left out.")


def asides_note(i: int, rev: Revision) -> Note:
    """The Note that sentences of a used revision were left out because they speak to the author
    (``core.text.guards.drop_asides``), quoting them: nothing leaves a run unsaid."""
    quoted = " ".join(f"“{s if len(s) <= 120 else s[:117] + '...'}”" for s in rev.dropped)
    return Note(i=i, level="info", text=f"Left out of the model's revision of step {i}: {len(rev.dropped)} "
                                        f"sentence(s) that speak to the author, not of the subject: {quoted}")


ANSWER_ROOM = 1024  # tokens of the context window kept for the answer (a quarter of a small window)


def context_tokens(ctx: MethodContext) -> int:
    return ctx.settings.context_tokens or DEFAULT_CONTEXT_TOKENS


def whole_answer(ctx: MethodContext, task: Task) -> caps.Cap:
    """The cap of a draft or a whole answer to ``task``: by its kind and --max-steps (``core.text.caps``)."""
    return caps.draft(task.kind, ctx.settings.max_steps)


def cut_advice(ctx: MethodContext, completion_tokens: int, cap: int | None, prompt_tokens: int | None = None) -> str:
    """Which limit cut an answer of ``completion_tokens`` tokens that was sent with ``cap`` after
    a prompt of ``prompt_tokens``, and its fix (``core.text.caps.cut_advice``): the call's own
    cap, --max-tokens (the client's setting) or the context window."""
    settings = getattr(ctx.llm, "settings", None)
    return caps.cut_advice(completion_tokens, cap, getattr(settings, "max_tokens", None), context_tokens(ctx),
                           prompt_tokens)


def prompt_room(ctx: MethodContext) -> int:
    """Tokens a prompt may take: the context window less the room kept for the answer."""
    window = context_tokens(ctx)
    return window - min(ANSWER_ROOM, window // 4)


def fit_passages(ctx: MethodContext, i: int, passages: list[Passage],
                 template: str) -> tuple[list[Passage], list[Note]]:
    """The passages, best first, that fit in a prompt whose other text is ``template`` (the
    prompt with its passages left out), and a warning Note when some had to be left out."""
    room = prompt_room(ctx) - count_tokens(template)
    kept: list[Passage] = []
    for passage in passages:
        if count_tokens(format_passages([*kept, passage])) > room:
            break
        kept.append(passage)
    if len(kept) == len(passages):
        return kept, []
    left = len(passages) - len(kept)
    return kept, [Note(i=i, level="warning",
                       text=f"{left} of {len(passages)} retrieved passages were left out of step {i}'s prompt so "
                            f"that it fits the model's context (--context-tokens {context_tokens(ctx):,}).")]
