"""The baselines of paper 001 (RAT, section 4.1 and table 2): DIRECT, zero-shot CoT and RAG with
k = 1 or 5 retrieved pages.

    direct   the model answers the prompt as it is                          (role "draft")
    cot      prompt B.1 of 001: step-by-step thoughts, paragraphs split on blank lines
                                                                             (role "draft")
    rag-k    search with the task prompt, read k results, answer with the retrieved text in
             the prompt                                                      (role "draft")

001 gives no prompt for DIRECT or RAG; the RAG prompt below is ours, laid out like B.3.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from common.events import Event, Final, Note, QueryMade, SourcesUsed, StepStarted
from common.types import Task
from core.methods.base import MethodContext, register
from core.methods.helpers import generate, numbers, question_for, urls_of, web_query, whole_answer, write_draft
from core.retrieval.pipeline import retrieve
from core.text import prompts
from core.text.fencing import format_passages, prompt_template

# Ours (001 gives no RAG prompt): the retrieved text first, fenced and labelled, as in B.3.
RAG = prompt_template("""##Retrieved Text:
{content}

##Question:
{question}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
Answer the question/instruction above. Use the retrieved text where it is relevant and correct, and ignore it where it is not.
Just respond to the instruction directly. DO NOT add additional explanations or introducement in the answer unless you are asked to.""")  # noqa: E501


# -- the methods -------------------------------------------------------------------------------
@register("direct", "DIRECT: the model answers the prompt as it is, with no retrieval",
          "001 (RAT), baselines of section 4.1", uses_search=False)
async def direct(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    prompt = question_for(task)
    text = generate(ctx, prompt, role="draft", max_tokens=whole_answer(ctx, task))
    async for ev in text:
        yield ev
    yield Final(text=prompts.tidy_reply(text.result) or text.result.strip())


@register("cot", "CoT: zero-shot chain of thought with prompt B.1, step-by-step paragraphs",
          "001 (RAT), baseline of section 4.1, prompt B.1", uses_search=False)
async def cot(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    steps = write_draft(ctx, task, cap=False)
    async for ev in steps:
        yield ev
    yield Final(text=prompts.join_steps(steps.result))


@register("rag-1", "RAG-1: search with the task prompt, answer with the top result's text in context",
          "001 (RAT), baseline of section 4.1 (RAG 1 shot)")
def rag_1(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rag(task, ctx, k=1)


@register("rag-5", "RAG-5: search with the task prompt, answer with the top 5 results' text in context",
          "001 (RAT), baseline of section 4.1 (RAG 5 shots)")
def rag_5(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rag(task, ctx, k=5)


async def _rag(task: Task, ctx: MethodContext, *, k: int) -> AsyncIterator[Event]:
    yield StepStarted(i=1, thought="Search with the task prompt itself", n=1)
    query, cut = web_query(task.prompt)
    if cut:
        yield Note(i=1, text=f"The task is long; the search uses its first {len(query)} characters.")
    yield QueryMade(i=1, query=query)
    found = retrieve(ctx, 1, query, k=k)
    async for ev in found:
        yield ev
    passages = found.result
    if passages:
        prompt = RAG.format(content=format_passages(passages, numbers(ctx)), question=question_for(task))
        yield SourcesUsed(i=1, urls=urls_of(passages))
    else:
        yield Note(i=1, level="warning", text="Nothing could be retrieved; the model answers without retrieved text.")
        prompt = question_for(task)
    text = generate(ctx, prompt, role="draft", i=1, max_tokens=whole_answer(ctx, task))
    async for ev in text:
        yield ev
    yield Final(text=prompts.tidy_reply(text.result) or text.result.strip())

