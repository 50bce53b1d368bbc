"""RAT, Retrieval Augmented Thoughts (paper 001, Algorithm 1 and section 3.2, prompts B.1-B.3).

    T = T_1..T_n  <- draft with B.1, split on blank lines
    T* <- T_1
    for i = 1..n:
        Q_i  <- B.2(question, T*)                 T* = T*_1..T*_(i-1), T_i: never a later step
        R_i  <- retrieve(Q_i)                      at most k = 5 results read (appendix E)
        T*   <- B.3(R_i, question, T*)             one revision, one retrieved content
        T*   <- T* + T_(i+1)

``rat-step`` (ours; README.md, Methods) runs the same loop but its revision rewrites only T_i, so output
tokens grow linearly with the article. Its read-only context is bounded too
(``--param rat.step_context_tokens``, :func:`step_context`): the previous revised step in full and
an outline of the earlier ones, in its query prompt and its revision prompt alike, so prompt
tokens per step stay flat and grow linearly with the article in all.

Both resume: a run's stored DraftReady and StepRevised events are its state, so an interrupted
run continues after its last revised step, and an edited draft (a later DraftReady) is used as
it stands.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from common.events import DraftReady, Event, Final, Note, QueryMade, StepRevised, StepStarted
from common.types import Task
from core.methods.base import MethodContext, Param, register
from core.methods.helpers import (
    Return,
    context_tokens,
    fit_passages,
    generate,
    numbers,
    param,
    query_note,
    returning,
    revised,
    write_draft,
)
from core.retrieval.pipeline import retrieve
from core.text import caps, prompts
from core.text.fencing import format_passages
from core.text.tokens import count_tokens

MAX_RETRIEVALS_PER_STEP = 5  # 001, appendix E
STEP_CONTEXT_TOKENS = 400  # ours: rat-step's read-only context, in tokens
OUTLINE_WORDS = 12  # words of an earlier step in rat-step's outline
#: Most tokens of a B.2 answer (core.text.caps, where every role's cap is sized).
QUERY_MAX_TOKENS = caps.QUERY_TOKENS
_STEP_CONTEXT = Param("rat.step_context_tokens", STEP_CONTEXT_TOKENS,
                      "tokens of read-only context in each step's prompts: the previous revised step, then an "
                      "outline of the earlier ones (ours: 400)", low=50, high=100_000)


@register("rat", "RAT: draft step by step, then revise the answer so far against a search for each step",
          "001 (RAT), Algorithm 1, prompts B.1-B.3", resumable=True)
def rat(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rat(task, ctx, step_scope=False)


@register("rat-step", "RAT step-scope (ours): each revision rewrites only its own step, with earlier steps as context",
          "001 (RAT), with a narrower revision prompt", resumable=True, params=(_STEP_CONTEXT,))
def rat_step(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rat(task, ctx, step_scope=True)


async def _rat(task: Task, ctx: MethodContext, *, step_scope: bool) -> AsyncIterator[Event]:
    state = _State.from_prior(ctx.prior)
    if state.steps is None:
        drafted = write_draft(ctx, task)
        async for ev in drafted:
            yield ev
        state.steps = drafted.result

    steps = state.steps
    for i in range(state.done + 1, len(steps) + 1):
        yield StepStarted(i=i, thought=steps[i - 1], n=len(steps))
        async for ev in _step(task, ctx, state, i, step_scope=step_scope):
            yield ev
    yield Final(text=state.article)


async def _step(task: Task, ctx: MethodContext, state: _State, i: int, *, step_scope: bool) -> AsyncIterator[Event]:
    """Step i: the query (B.2), the retrieval, the revision (B.3); ``state`` moves on past i."""
    step = state.steps[i - 1]
    # B.2 sees the revised steps before i and draft step i, never a later one: all of them for
    # rat, the bounded context of step_context for rat-step.
    before = step_context(state.revised, param(ctx, "rat.step_context_tokens")) if step_scope else state.article
    so_far = prompts.join_steps([before, step]) if before else step
    q = make_query(ctx, task, i, step, so_far)
    async for ev in q:
        yield ev

    found = retrieve(ctx, i, q.result, k=min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP))
    async for ev in found:
        yield ev
    passages = found.result
    kept = step if step_scope else so_far

    def article_of(text: str) -> str:  # the whole text after step i
        return prompts.join_steps([state.article, text]) if step_scope and state.article else text

    def prompt(content: str) -> str:  # B.3, or our step-scope revision
        question = prompts.question_for(task)  # QA tasks also ask for a short "Answer:" line
        if step_scope:
            return prompts.REVISE_STEP.format(content=content, question=question, step=step,
                                              context=before or "(nothing yet: this is the first paragraph)")
        return prompts.REVISE.format(content=content, question=question, answer=so_far)

    fitted, notes = fit_passages(ctx, i, passages, prompt(""))
    for ev in notes:
        yield ev
    if fitted:
        full = prompt(format_passages(fitted, numbers(ctx)))
        reply = generate(ctx, full, role="revise", i=i, max_tokens=caps.revise(kept, len(fitted)))
        async for ev in reply:
            yield ev
        events = revised(ctx, i, kept, reply.result, fitted, article_of=article_of)
    else:
        skipped = "no retrieved text for this step; kept as drafted"
        if passages:
            skipped = "no retrieved text fits beside the text in the model's context; kept as it stood"
            yield Note(i=i, level="warning", text=(
                f"Step {i}: the answer so far (about {count_tokens(so_far):,} tokens) leaves no room for "
                f"retrieved text within --context-tokens {context_tokens(ctx):,}, so it was not revised. "
                "rat-step revises one paragraph at a time and fits; or raise --context-tokens if the "
                "model reads more." if not step_scope else
                f"Step {i}: no retrieved text fits in the model's context (--context-tokens "
                f"{context_tokens(ctx):,}) beside this step; it was not revised."))
        events = [StepRevised(i=i, before=kept, after=kept, article=article_of(kept), skipped=skipped)]
    for ev in events:
        yield ev
    state.moved_on(events[-1])


@returning
async def make_query(ctx: MethodContext, task: Task, i: int, step: str,
                     so_far: str) -> AsyncIterator[Event | Return[str]]:
    """B.2 for step i from ``so_far`` (the text the query is made from, ending with the step):
    the model's first query line, or the step's own words when that is no query (a Note says
    why); then QueryMade. Returns the query."""
    prompt = prompts.QUERY.format(question=task.prompt, answer=so_far)
    q = generate(ctx, prompt, role="query", i=i, max_tokens=caps.query(),
                 note_cut=False)  # only its first query line is used
    async for ev in q:
        yield ev
    query, problem = prompts.choose_query(q.result, step, question=task.prompt, content=so_far)
    if problem:
        yield query_note(i, q.result, problem)
    yield QueryMade(i=i, query=query)
    yield Return(query)


def step_context(revised: list[str], budget: int) -> str:
    """rat-step's read-only context for the next step, within about ``budget`` tokens whatever
    the article's length: the previous revised step in full (its first ``budget`` tokens' worth
    of words when it is longer), then, newest first while they fit, one outline line per earlier
    step (its first OUTLINE_WORDS words), in article order; the steps left out are counted."""
    if not revised:
        return ""
    last = revised[-1].strip()
    if count_tokens(last) > budget:
        words = last.split()
        while words and count_tokens(" ".join(words)) > budget:
            words = words[: max(1, int(len(words) * 0.9))] if len(words) > 1 else []
        last = " ".join(words) + " [...]"
    room = budget - count_tokens(last)
    outline: list[str] = []
    for n in range(len(revised) - 1, 0, -1):  # steps n = len-1 .. 1, newest first
        words = " ".join(revised[n - 1].replace("#", " ").replace("*", " ").split()).split()
        line = f"{n}. " + " ".join(words[:OUTLINE_WORDS]) + (" ..." if len(words) > OUTLINE_WORDS else "")
        if count_tokens(line) + 1 > room:
            break
        outline.insert(0, line)
        room -= count_tokens(line) + 1
    parts = []
    left_out = len(revised) - 1 - len(outline)
    if len(revised) > 1:
        head = f"(earlier paragraphs, as an outline{f'; the first {left_out} left out' if left_out else ''})"
        parts.append("\n".join([head, *outline]))
    parts.append(f"(paragraph {len(revised)}, the one just before)\n{last}" if len(revised) > 1 else last)
    return "\n\n".join(parts)


class _State:
    """What a RAT run has done so far, rebuilt from its events: the draft's steps, the article
    after the last revised step, and (for rat-step's context) each revised step's own text."""

    def __init__(self) -> None:
        self.steps: list[str] | None = None
        self.article = ""
        self.revised: list[str] = []
        self.done = 0

    def moved_on(self, e: StepRevised) -> None:
        self.article, self.done = e.article, e.i
        self.revised = [*self.revised[: e.i - 1], e.after]

    @classmethod
    def from_prior(cls, events: list[Event]) -> _State:
        state = cls()
        for e in events:
            if isinstance(e, DraftReady):  # a later (edited) draft replaces the first
                state.steps, state.article, state.revised, state.done = list(e.steps), "", [], 0
            elif isinstance(e, StepRevised):
                state.moved_on(e)
        return state
