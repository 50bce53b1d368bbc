"""The two ablations of RAT in paper 001 (section 4.3, tables 3 and 4), with RAT's own prompts
B.1 (draft, role "draft"), B.2 (query, role "query") and B.3 (revise, role "revise").

``rat-noncausal`` (table 4, "non-causal"): "leverages the initial reasoning thought to directly
retrieve all necessary steps and generate the final answer". Every query is made from the
*initial* draft before anything is revised: Q_i = B.2(question, T_1..T_i) with the unrevised
steps. Then every retrieval runs, and then one pass of revisions (step by step, B.3, as RAT) uses
what was retrieved for each step. Only the causality of the queries differs from RAT.

    T   <- B.1(question), split on blank lines
    Q_i <- B.2(question, T_1..T_i)           for i = 1..n   all queries first
    R_i <- retrieve(Q_i)                     for i = 1..n   then all retrievals
    T*  <- B.3(R_i, question, T*_1..T*_(i-1), T_i)  for i = 1..n   then one revision pass

``cot-rag`` (table 3, "CoT+RAG"): "utilizing the entirety of the reasoning thoughts output by the
language model as the query": the whole draft is the one query, and B.3 revises the whole draft
once with what it retrieved.

Neither resumes (an interrupted run starts again).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from common.events import Event, Final, Note, QueryMade, StepRevised, StepStarted
from common.types import Passage, Task
from core.methods.base import MethodContext, register
from core.methods.helpers import (
    Return,
    fit_passages,
    generate,
    numbers,
    question_for,
    returning,
    revised,
    web_query,
    write_draft,
)
from core.methods.rat import MAX_RETRIEVALS_PER_STEP, make_query
from core.retrieval.pipeline import retrieve
from core.text import caps, prompts
from core.text.fencing import format_passages


@register("rat-noncausal", "RAT non-causal: every query made from the initial draft before any revision, "
                           "then one revision pass",
          "001 (RAT), ablation of section 4.3, table 4")
async def rat_noncausal(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    steps = write_draft(ctx, task)
    async for ev in steps:
        yield ev
    draft = steps.result

    queries = _queries_from_the_draft(task, ctx, draft)
    async for ev in queries:
        yield ev

    retrieved: list[list[Passage]] = []
    k = min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP)
    for i, query in enumerate(queries.result, start=1):
        found = retrieve(ctx, i, query, k=k)
        async for ev in found:
            yield ev
        retrieved.append(found.result)

    article = ""
    for i, (step, passages) in enumerate(zip(draft, retrieved, strict=True), start=1):
        revised = _revise(task, ctx, i, prompts.join_steps([article, step]), passages,
                          skipped="no retrieved text for this step; kept as drafted")
        async for ev in revised:
            yield ev
        article = revised.result
    yield Final(text=article)


@returning
async def _queries_from_the_draft(task: Task, ctx: MethodContext,
                                  draft: list[str]) -> AsyncIterator[Event | Return[list[str]]]:
    """B.2 for every step, each from the unrevised draft up to it (no revision exists yet)."""
    queries: list[str] = []
    for i, step in enumerate(draft, start=1):
        yield StepStarted(i=i, thought=step, n=len(draft))
        q = make_query(ctx, task, i, step, prompts.join_steps(draft[:i]))
        async for ev in q:
            yield ev
        queries.append(q.result)
    yield Return(queries)


@returning
async def _revise(task: Task, ctx: MethodContext, i: int, text: str, passages: list[Passage], *,
                  skipped: str) -> AsyncIterator[Event | Return[str]]:
    """B.3 on ``text`` with the passages, then StepRevised; without passages the text is kept
    (a StepRevised that says ``skipped``). Returns the text after the step."""
    if not passages:
        yield StepRevised(i=i, before=text, after=text, article=text, skipped=skipped)
        yield Return(text)
        return
    fitted, notes = fit_passages(ctx, i, passages, prompts.REVISE.format(content="", question=question_for(task),
                                                                         answer=text))
    for ev in notes:
        yield ev
    if not fitted:
        yield StepRevised(i=i, before=text, after=text, article=text,
                          skipped="no retrieved text fits beside the text in the model's context; kept as it stood")
        yield Return(text)
        return
    shown = format_passages(fitted, numbers(ctx))
    prompt = prompts.REVISE.format(content=shown, question=question_for(task), answer=text)
    rev = generate(ctx, prompt, role="revise", i=i, max_tokens=caps.revise(text, len(fitted)))
    async for ev in rev:
        yield ev
    events = revised(ctx, i, text, rev.result, fitted)
    for ev in events:
        yield ev
    yield Return(events[-1].after)


@register("cot-rag", "CoT+RAG: the whole chain-of-thought draft is one search query; one revision of the whole draft",
          "001 (RAT), ablation of section 4.3, table 3")
async def cot_rag(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    steps = write_draft(ctx, task)
    async for ev in steps:
        yield ev
    draft = prompts.join_steps(steps.result)

    yield StepStarted(i=1, thought="Search with the whole draft as one query", n=1)
    query, cut = web_query(draft)
    if cut:
        yield Note(i=1, text=f"The draft is long; the search uses its first {len(query)} characters.")
    yield QueryMade(i=1, query=query)
    found = retrieve(ctx, 1, query, k=min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP))
    async for ev in found:
        yield ev
    revised = _revise(task, ctx, 1, draft, found.result, skipped="nothing retrieved for the draft; kept as drafted")
    async for ev in revised:
        yield ev
    yield Final(text=revised.result)
