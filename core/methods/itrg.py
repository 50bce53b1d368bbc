"""ITRG / Iter-RetGen, iterative retrieval-generation synergy (paper 003, section 2).

For t = 1..T (T = 5, top-k = 5 documents: 003, section 3.3):

    GAR   q_t = q                    at t = 1
          q_t = [q ; y_(t-1)]        at t > 1   (question + last output)
          R_t = retrieve(q_t)                    top-5
    RAG   refine   y_t = M(prompt(y_(t-1), q, R_update)),  R_update = R_t - R_(t-1)   (eq. 1-2)
                   "If R_update is an empty set, we do not regenerate a new document and set
                   y_t = y_(t-1)": the round is skipped (a StepRevised with ``skipped``).
          refresh  y_t = M(prompt(q, R_t))                                              (eq. 3)
                   the last output never enters the generation prompt; it only expands the
                   search query.

Choices of ours, where 003 is silent:
- A "document" is a retrieved passage (003 retrieves Wikipedia paragraphs); two are the same
  when their URL and text are. R_update subtracts the previous iteration's set, as eq. 1 does
  (not every set before it).
- Refine at t = 1 has no y_0 to refine, so it writes the first document with the refresh prompt
  from R_1 (= R_1 - R_0).
- A round after the first that retrieves nothing at all (a failed search) keeps the last output,
  in refresh too: writing from no documents would throw away what earlier rounds found.
- 003 gives only the refresh prompt ("write a document that contains the answer"); the refine
  prompt below is ours, written from its description (eq. 2).
- The query [q ; y_(t-1)] is cut to ``MAX_QUERY_CHARS`` for a web search engine (003 used a
  dense retriever), with a Note.
- QA tasks end, as in 003's evaluation, with a short answer generated from the last document
  and the question (003 generates 200-token documents, then 15-token answers); our prompt.

Roles: documents are "draft" (refresh, and refine's first) or "revise" (refine's later rounds);
the short answer is "draft". Parameters: ``itrg.iterations`` (5), ``itrg.top_k`` (5).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from common.events import Event, Final, Note, QueryMade, StepRevised, StepStarted
from common.types import Passage, Task
from core.methods.base import MethodContext, Param, register
from core.methods.helpers import (
    QA_INSTRUCTION,
    Return,
    fit_passages,
    generate,
    numbers,
    param,
    returning,
    revised,
    web_query,
    whole_answer,
)
from core.retrieval.pipeline import retrieve
from core.text import caps
from core.text.fencing import format_passages, prompt_template
from core.text.prompts import PASSAGES_ARE_DATA

ITERATIONS = 5  # T (003, section 3.3)
TOP_K = 5  # top-5 paragraphs per query (003, section 3.3)
PARAMS = (
    Param("itrg.iterations", ITERATIONS, "T, the rounds of retrieval and generation (003: 5)", low=1, high=10),
    Param("itrg.top_k", TOP_K, "documents retrieved per round (003: top-5)", low=1, high=20),
)

# 003, section 2.3.2: "Prompt for refresh with all documents", word for word (the fence around
# the passages only, as with RAT's B.3).
REFRESH = prompt_template("""In the following task, you should write a document that contains the answer to the question.

Passage: {passages}

Question: {question}

Document:""")  # noqa: E501

# Ours: 003 describes refine (eq. 2: prompt(y_(t-1), q, R_update)) but gives no prompt for it.
REFINE = prompt_template("""In the following task, you should refine the document so that it answers the question better, using the new passages. Keep what the passages do not contradict, correct what they contradict, and add what they add. Output only the refined document. """ + PASSAGES_ARE_DATA + """

Passage: {passages}

Question: {question}

Document: {document}

Refined document:""")  # noqa: E501

# Ours: the read step of 003's QA evaluation (a short answer from the generated document).
ANSWER = prompt_template("""Read the document and answer the question.

Document: {document}

Question: {question}

{instruction}""")


@register("itrg-refine", "ITRG refine: T rounds of search with question + last output; each rewrites the last output "
                         "with only the newly retrieved documents",
          "003 (ITRG / Iter-RetGen), section 2.3.1", params=PARAMS)
def itrg_refine(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _itrg(task, ctx, refine=True)


@register("itrg-refresh", "ITRG refresh: T rounds of search with question + last output; each writes anew from the "
                          "question and the documents retrieved",
          "003 (ITRG / Iter-RetGen), section 2.3.2", params=PARAMS)
def itrg_refresh(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _itrg(task, ctx, refine=False)


def _key(p: Passage) -> tuple[str, str]:
    return (p.url, " ".join(p.text.split()))


async def _itrg(task: Task, ctx: MethodContext, *, refine: bool) -> AsyncIterator[Event]:
    iterations = param(ctx, "itrg.iterations")
    top_k = param(ctx, "itrg.top_k")
    question = task.prompt
    output = ""  # y_(t-1)
    previous: set[tuple[str, str]] = set()  # R_(t-1)

    for t in range(1, iterations + 1):
        thought = "Search with the question" if t == 1 else "Search with the question and the last output"
        yield StepStarted(i=t, n=iterations, thought=thought)
        query, cut = web_query(question if t == 1 else f"{question}\n{output}")
        if cut:
            yield Note(i=t, text=f"The query (question + last output) is long; the search uses its first "
                                 f"{len(query)} characters.")
        yield QueryMade(i=t, query=query)
        found = retrieve(ctx, t, query, k=top_k)
        async for ev in found:
            yield ev
        generated = _generate(ctx, task, t, output, found.result, previous, refine=refine)
        async for ev in generated:
            yield ev
        output = generated.result
        previous = {_key(p) for p in found.result}

    final = output
    if task.kind == "qa":
        prompt = ANSWER.format(document=output, question=question, instruction=QA_INSTRUCTION)
        answer = generate(ctx, prompt, role="draft", i=iterations, max_tokens=caps.short_answer())
        async for ev in answer:
            yield ev
        final = f"{output}\n\n{answer.result.strip()}" if output else answer.result.strip()
    yield Final(text=final)


@returning
async def _generate(ctx: MethodContext, task: Task, t: int, output: str, docs: list[Passage],
                    previous: set[tuple[str, str]], *, refine: bool) -> AsyncIterator[Event | Return[str]]:
    """The generation of round t from its documents ``docs`` (R_t) and the last output: refine
    (eq. 1-2) or refresh (eq. 3), or the round skipped; returns y_t. A refinement is capped as a
    revision of the last output, a document written anew as a whole answer to the task."""
    question = task.prompt
    new = [p for p in docs if _key(p) not in previous]
    if t > 1 and (not docs or (refine and not new)):
        if refine:
            yield Note(i=t, text="Nothing new was retrieved in this round; the last output is kept (003, eq. 2).")
        else:
            yield Note(i=t, level="warning", text="Nothing could be retrieved in this round; the last output is kept.")
        yield StepRevised(i=t, before=output, after=output, article=output,
                          skipped="no newly retrieved documents; kept the last output")
        yield Return(output)
        return
    if refine and t > 1:
        used, notes = fit_passages(ctx, t, new, REFINE.format(passages="", question=question, document=output))
        shown = format_passages(used, numbers(ctx)) or "(none)"
        prompt = REFINE.format(passages=shown, question=question, document=output)
        role, cap = "revise", caps.revise(output, len(used))
    else:
        # refresh, and refine's first round: write from the question and R_t only
        if not docs:
            yield Note(i=t, level="warning",
                       text="Nothing could be retrieved; the document is written from the question alone.")
        used, notes = fit_passages(ctx, t, docs, REFRESH.format(passages="", question=question))
        prompt = REFRESH.format(passages=format_passages(used, numbers(ctx)) or "(none)", question=question)
        role, cap = "draft", whole_answer(ctx, task)
    for ev in notes:
        yield ev
    text = generate(ctx, prompt, role=role, i=t, max_tokens=cap)
    async for ev in text:
        yield ev
    events = revised(ctx, t, output, text.result, used, fresh=role == "draft")
    for ev in events:
        yield ev
    yield Return(events[-1].after)
