"""RAT, Retrieval Augmented Thoughts (paper 001, Algorithm 1 and section 3.2, prompts B.1-B.3).

    T = T_1..T_n  <- draft with B.1, split on blank lines
    T* <- T_1
    for i = 1..n:
        Q_i  <- B.2(question, T*)                 T* = T*_1..T*_(i-1), T_i: never a later step
        R_i  <- retrieve(Q_i)                      at most k = 5 results read (appendix E)
        T*   <- B.3(R_i, question, T*)             one revision, one retrieved content
        T*   <- T* + T_(i+1)

``rat-step`` (ours, DESIGN.md) runs the same loop but its revision rewrites only T_i, with
T*_1..T*_(i-1) as read-only context, so output tokens grow linearly with the article.

Both resume: a run's stored DraftReady and StepRevised events are its state, so an interrupted
run continues after its last revised step, and an edited draft (a later DraftReady) is used as
it stands.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from core import prompts
from common.events import DraftReady, Event, Final, QueryMade, StepRevised, StepStarted
from common.types import Task
from core.methods.base import MethodContext, Out, generate, register, write_draft
from core.passages import format_passages
from core.retrieval import retrieve
from core.sources import SourceBook
from common.types import Passage

MAX_RETRIEVALS_PER_STEP = 5  # 001, appendix E


@register("rat", "RAT: draft step by step, then revise the answer so far against a search for each step",
          "001 (RAT), Algorithm 1, prompts B.1-B.3", resumable=True)
def rat(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rat(task, ctx, step_scope=False)


@register("rat-step", "RAT step-scope (ours): each revision rewrites only its own step, with earlier steps as context",
          "001 (RAT), with a narrower revision prompt", resumable=True)
def rat_step(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rat(task, ctx, step_scope=True)


async def _rat(task: Task, ctx: MethodContext, *, step_scope: bool) -> AsyncIterator[Event]:
    question = prompts.question_for(task)  # QA tasks also ask for a short "Answer:" line
    state = _State.from_prior(ctx.prior)
    book = SourceBook.from_events(ctx.prior)

    if state.steps is None:
        drafted: Out[list[str]] = Out([])
        async for ev in write_draft(ctx, task, drafted):
            yield ev
        state.steps = drafted.value

    steps = state.steps
    n = len(steps)
    k = min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP)
    for i in range(state.done + 1, n + 1):
        step = steps[i - 1]
        yield StepStarted(i=i, thought=step, n=n)
        # B.2 sees the revised steps before i and draft step i, never a later one.
        so_far = prompts.join_steps([state.article, step]) if state.article else step

        q: Out[str] = Out("")
        async for ev in generate(ctx, prompts.QUERY.format(question=task.prompt, answer=so_far),
                                 role="query", out=q, i=i):
            yield ev
        query = prompts.clean_query(q.value) or prompts.clean_query(step) or task.prompt[:300]
        yield QueryMade(i=i, query=query)

        found: Out[list[Passage]] = Out([])
        async for ev in retrieve(ctx, i, query, found, k=k):
            book.see(ev)
            yield ev
        passages = found.value

        if not passages:
            after = step if step_scope else so_far
            skipped, urls = "no retrieved text for this step; kept as drafted", ()
        else:
            content = format_passages(passages)
            urls = tuple(dict.fromkeys(p.url for p in passages))
            skipped = ""
            rev: Out[str] = Out("")
            if step_scope:
                prompt = prompts.REVISE_STEP.format(content=content, question=question,
                                                    context=state.article or "(nothing yet: this is the first paragraph)",
                                                    step=step)
            else:
                prompt = prompts.REVISE.format(content=content, question=question, answer=so_far)
            async for ev in generate(ctx, prompt, role="revise", out=rev, i=i):
                yield ev
            after = prompts.normalise_answer(rev.value) or (step if step_scope else so_far)

        if step_scope:
            before = step
            state.article = prompts.join_steps([state.article, after]) if state.article else after
        else:
            before = so_far
            state.article = after
        revised = StepRevised(i=i, before=before, after=after, sources=urls, article=state.article,
                              skipped=skipped)
        book.see(revised)
        yield revised
        state.done = i

    yield Final(text=state.article, sources=book.sources())


class _State:
    """What a RAT run has done so far, rebuilt from its events."""

    def __init__(self) -> None:
        self.steps: list[str] | None = None
        self.article = ""
        self.done = 0

    @classmethod
    def from_prior(cls, events: list[Event]) -> "_State":
        state = cls()
        for e in events:
            if isinstance(e, DraftReady):  # a later (edited) draft replaces the first
                state.steps, state.article, state.done = list(e.steps), "", 0
            elif isinstance(e, StepRevised):
                state.article, state.done = e.article, e.i
        return state
