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

from core import prompts
from common.events import Event, Final, Note, QueryMade, StepRevised, StepStarted
from common.types import Task
from core.methods.base import MethodContext, Out, generate, register, write_draft
from core.methods.baselines import question_for, urls_of, web_query
from core.methods.rat import MAX_RETRIEVALS_PER_STEP
from core.passages import format_passages
from core.retrieval import retrieve
from core.sources import SourceBook
from common.types import Passage


@register("rat-noncausal", "RAT non-causal: every query made from the initial draft before any revision, then one revision pass",
          "001 (RAT), ablation of section 4.3, table 4")
async def rat_noncausal(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    book = SourceBook()
    question = question_for(task)
    steps: Out[list[str]] = Out([])
    async for ev in write_draft(ctx, task, steps):
        yield ev
    draft = steps.value
    n = len(draft)

    queries: list[str] = []
    for i, step in enumerate(draft, start=1):
        yield StepStarted(i=i, thought=step, n=n)
        q: Out[str] = Out("")
        # the unrevised draft up to step i: no revision exists yet
        async for ev in generate(ctx, prompts.QUERY.format(question=task.prompt, answer=prompts.join_steps(draft[:i])),
                                 role="query", out=q, i=i):
            yield ev
        query = prompts.clean_query(q.value) or prompts.clean_query(step) or task.prompt[:300]
        queries.append(query)
        yield QueryMade(i=i, query=query)

    retrieved: list[list[Passage]] = []
    k = min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP)
    for i, query in enumerate(queries, start=1):
        found: Out[list[Passage]] = Out([])
        async for ev in retrieve(ctx, i, query, found, k=k):
            book.see(ev)
            yield ev
        retrieved.append(found.value)

    article = ""
    for i, (step, passages) in enumerate(zip(draft, retrieved), start=1):
        so_far = prompts.join_steps([article, step])
        if passages:
            rev: Out[str] = Out("")
            prompt = prompts.REVISE.format(content=format_passages(passages), question=question, answer=so_far)
            async for ev in generate(ctx, prompt, role="revise", out=rev, i=i):
                yield ev
            article = prompts.normalise_answer(rev.value) or so_far
            revised = StepRevised(i=i, before=so_far, after=article, sources=urls_of(passages), article=article)
        else:
            article = so_far
            revised = StepRevised(i=i, before=so_far, after=so_far, article=article,
                                  skipped="no retrieved text for this step; kept as drafted")
        book.see(revised)
        yield revised
    yield Final(text=article, sources=book.sources())


@register("cot-rag", "CoT+RAG: the whole chain-of-thought draft is one search query; one revision of the whole draft",
          "001 (RAT), ablation of section 4.3, table 3")
async def cot_rag(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    book = SourceBook()
    question = question_for(task)
    steps: Out[list[str]] = Out([])
    async for ev in write_draft(ctx, task, steps):
        yield ev
    draft = prompts.join_steps(steps.value)

    yield StepStarted(i=1, thought="Search with the whole draft as one query", n=1)
    query, cut = web_query(draft)
    if cut:
        yield Note(i=1, text=f"The draft is long; the search uses its first {len(query)} characters.")
    yield QueryMade(i=1, query=query)
    found: Out[list[Passage]] = Out([])
    async for ev in retrieve(ctx, 1, query, found, k=min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP)):
        book.see(ev)
        yield ev
    passages = found.value
    if passages:
        rev: Out[str] = Out("")
        prompt = prompts.REVISE.format(content=format_passages(passages), question=question, answer=draft)
        async for ev in generate(ctx, prompt, role="revise", out=rev, i=1):
            yield ev
        after = prompts.normalise_answer(rev.value) or draft
        revised = StepRevised(i=1, before=draft, after=after, sources=urls_of(passages), article=after)
    else:
        after = draft
        revised = StepRevised(i=1, before=draft, after=draft, article=draft,
                              skipped="nothing retrieved for the draft; kept as drafted")
    book.see(revised)
    yield revised
    yield Final(text=after, sources=book.sources())


