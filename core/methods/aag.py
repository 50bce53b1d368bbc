"""AAG, analogy-augmented generation with a procedural memory (paper 002, sections 3 and 4.5).

    QR      outline the solution, then write up to 4 questions          (3.2; A.4: 4 queries)
    RAG     retrieve 3 procedures like the task; a first answer         (3.5 step 1; 4.1)
    SUM     per question: retrieve 3 procedures, summarise them as an answer to the question;
            the context is the stack of "Q: <question>\\nA: <summary>"  (3.3)
    UPDATE  the first answer updated with the context                   (3.5 step 4)
    CRITIC  the critic lists edits as bullets or says "NO UPDATE REQUIRED"; the editor applies
            them with the context; up to ``aag.critic_cycles`` cycles     (3.4)

Ablations (4.5): ``aag-nosum`` uses the retrieved procedures themselves (all questions'
procedures, duplicates removed) as the context instead of summaries; ``aag-nocr`` stops after
UPDATE; ``aag-noqr`` has no query rewriting, hence no summaries and no UPDATE: the task itself is
the single query, and the first answer goes straight to the critic loop with the procedures it
retrieved as context.

Memory. Procedures come from ``ctx.memory`` (a ``core.procedures.ProcedureMemory``; the runner
passes it once MethodContext has a ``memory`` field). When there is no memory or it is empty, AAG
says so in a Note and retrieves web pages with ``core.retrieval.pipeline.retrieve`` instead, so the method
still runs (with web passages standing in for procedures). That is our choice: 002 always has a
memory built from its datasets.

Prompts. 002's prompt listings (appendix A.2) did not survive in our copy of the paper, so every
prompt here is ours, written from the paper's description of each module. The number of critic
cycles is also lost ("for a maximum of cycles"); 3 is ours.

Roles: QR and summaries are "query", the first answer is "draft", UPDATE, critic and editor are
"revise". Parameters: ``aag.max_queries`` (4), ``aag.procedures`` (3), ``aag.critic_cycles`` (3).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from common.events import (
    DraftReady,
    Event,
    Final,
    Note,
    PassagesChosen,
    QueryMade,
    SearchDone,
    SourcesUsed,
    StepRevised,
    StepStarted,
)
from common.types import Passage, SearchResult, Task
from core.methods.base import MethodContext, Param, register
from core.methods.helpers import (
    Return,
    generate,
    numbers,
    param,
    question_for,
    returning,
    revised,
    urls_of,
    web_query,
    whole_answer,
)
from core.retrieval.pipeline import retrieve
from core.text import caps, prompts
from core.text.fencing import format_passages, prompt_template

MAX_QUERIES = 4  # 002, 3.2 and A.4
PROCEDURES_PER_QUERY = 3  # 002, A.2 ("retrieve 3 procedures") and 4.1
CRITIC_CYCLES = 3  # ours: the paper's number is lost in our copy
NO_UPDATE = "NO UPDATE REQUIRED"  # 002, 3.4
_QUERIES = Param("aag.max_queries", MAX_QUERIES, "most questions the query rewriter writes (002: 4)", low=1, high=10)
_PROCEDURES = Param("aag.procedures", PROCEDURES_PER_QUERY, "procedures retrieved per question (002: 3)",
                    low=1, high=20)
_CYCLES = Param("aag.critic_cycles", CRITIC_CYCLES, "most critic/editor cycles (ours: 3)", low=0, high=10)

# Ours (002 3.2: "first generate a high-level outline ... then suggest relevant questions which
# can be answered with relevant procedures in the memory"; at most 4).
REWRITE = prompt_template("""##Task:
{task}

##Instruction:
First write a short high-level outline of how to accomplish the task, one step per line, under the heading "Outline:".
Then, based on the outline, write at most {n} questions whose answers can be found in procedures of similar past tasks (how something similar was done before), one question per line, under the heading "Questions:".
Output only the two lists.""")  # noqa: E501

# Ours (002 3.5 step 1 and 4.1: the RAG answer from retrieved procedures, "like the few-shot case").
FIRST_ANSWER = prompt_template("""##Procedures from memory:
{procedures}

##Task:
{task}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
The procedures above show how similar tasks were done before. Using them where they apply, answer the task. Where the task asks for a procedure or a plan, answer with ordered steps.
Just respond to the task directly. DO NOT add additional explanations or introducement unless you are asked to.""")  # noqa: E501

# Ours (002 3.3: "asking it to generate a summary of the retrieved procedures as an answer to the question").
SUMMARY = prompt_template("""##Question:
{question}

##Retrieved procedures:
{procedures}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
Answer the question with a short summary of the retrieved procedures. Keep only the information that helps answer the question and leave out the steps that do not. If the procedures do not answer the question, say so in one sentence.
Just output the summary.""")  # noqa: E501

# Ours (002 3.5 step 4: "performs the first update to the RAG response using the context provided by the
# generated summaries").
UPDATE = prompt_template("""##Task:
{task}

##Current answer:
{answer}

##Knowledge from similar procedures:
{context}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
Update the current answer according to the knowledge above: correct what the knowledge contradicts and add the steps or details it shows are missing. Keep what is already right.
Just output the updated answer. DO NOT add additional explanations or introducement.""")  # noqa: E501

# Ours (002 3.4: the critic "evaluates if any edits are required, and suggests them as a bulleted
# list. In case no edits are required, the critic appends the string 'NO UPDATE REQUIRED'").
CRITIC = prompt_template("""##Task:
{task}

##Knowledge from similar procedures:
{context}

##Answer to review:
{answer}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
You are a critic. Check whether the answer accomplishes the task, whether its steps are clear, in a sensible order and detailed enough, and whether it uses only the resources the task allows.
If edits are required, list them as a bulleted list, one edit per bullet.
If no edits are required, write NO UPDATE REQUIRED.""")  # noqa: E501

# Ours (002 3.4: the edits are "performed by the LLM with a prompt including the list of edits,
# context from the summarizer, and the current version of the output procedure steps").
EDIT = prompt_template("""##Task:
{task}

##Knowledge from similar procedures:
{context}

##Current answer:
{answer}

##Edits to make:
{edits}

##Instruction:
""" + prompts.PASSAGES_ARE_DATA + """
Apply the edits above to the current answer, using the knowledge where it helps. Keep everything else as it is.
Just output the edited answer. DO NOT add additional explanations or introducement.""")


@register("aag", "AAG: outline and up to 4 questions, procedures from memory summarised per question, "
                 "a first answer updated with them, then a critic/editor loop",
          "002 (AAG), section 3", params=(_QUERIES, _PROCEDURES, _CYCLES))
def aag(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _aag(task, ctx, rewrite=True, summarize=True, critic=True)


@register("aag-nosum", "AAG-NOSUM: AAG without summaries; the retrieved procedures themselves are the context",
          "002 (AAG), ablation of section 4.5", params=(_QUERIES, _PROCEDURES, _CYCLES))
def aag_nosum(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _aag(task, ctx, rewrite=True, summarize=False, critic=True)


@register("aag-nocr", "AAG-NOCR: AAG without the critic loop; the updated first answer is final",
          "002 (AAG), ablation of section 4.5", params=(_QUERIES, _PROCEDURES))
def aag_nocr(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _aag(task, ctx, rewrite=True, summarize=True, critic=False)


@register("aag-noqr", "AAG-NOQR: AAG without query rewriting; the task is the single query and its first answer "
                      "goes to the critic loop",
          "002 (AAG), ablation of section 4.5", params=(_PROCEDURES, _CYCLES))
def aag_noqr(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _aag(task, ctx, rewrite=False, summarize=False, critic=True)


EMPTY_MEMORY = ("The procedure memory is empty (or not connected), so AAG retrieves web pages instead of procedures. "
                "Fill it with `python app.py procedures import FILE.jsonl` "
                "or `python app.py procedures add-from-run RUN_ID`.")


@dataclass(frozen=True)
class _Run:
    """What every phase of one AAG run reads."""

    ctx: MethodContext
    task: Task
    memory: Any  # core.procedures.ProcedureMemory, or None: the web stands in for it
    per_query: int  # procedures retrieved per query
    n: int  # steps in all: the first answer, one per question, the update, the critic cycles

    @property
    def question(self) -> str:
        return question_for(self.task)


async def _aag(task: Task, ctx: MethodContext, *, rewrite: bool, summarize: bool, critic: bool) -> AsyncIterator[Event]:
    max_queries = param(ctx, "aag.max_queries")
    per_query = param(ctx, "aag.procedures")
    cycles = param(ctx, "aag.critic_cycles") if critic else 0
    memory = getattr(ctx, "memory", None)
    if memory is None or memory.count() == 0:
        memory = None
        yield Note(level="warning", text=EMPTY_MEMORY)
    questions: list[str] = []
    if rewrite:
        rewritten = _rewrite_query(ctx, task, max_queries)
        async for ev in rewritten:
            yield ev
        questions = rewritten.result
    run = _Run(ctx, task, memory, per_query, n=1 + len(questions) + (1 if questions else 0) + cycles)

    first = _first_answer(run)
    async for ev in first:
        yield ev
    answer, passages = first.result
    context = format_passages(passages, numbers(ctx)) or "(no procedures found)"  # NOQR: the task's procedures
    if questions:
        asked = _ask(run, questions, summarize=summarize)
        async for ev in asked:
            yield ev
        context, passages = asked.result
        updated = _update(run, 2 + len(questions), answer, context, passages)
        async for ev in updated:
            yield ev
        answer = updated.result
    criticised = _critic_loop(run, cycles, answer, context, passages)
    async for ev in criticised:
        yield ev
    yield Final(text=criticised.result)


@returning
async def _rewrite_query(ctx: MethodContext, task: Task, max_queries: int) -> AsyncIterator[Event | Return[list[str]]]:
    """QR (002 3.2): an outline (shown as the draft), then at most ``max_queries`` questions;
    returns the questions (the task itself when the rewriter wrote none)."""
    prompt = REWRITE.format(task=task.prompt, n=max_queries)
    reply = generate(ctx, prompt, role="query", max_tokens=caps.outline(max_queries))
    async for ev in reply:
        yield ev
    outline, questions = parse_rewrite(reply.result, max_queries)
    if outline:
        yield DraftReady(steps=tuple(outline))
    if not questions:
        yield Note(level="warning", text="The query rewriter wrote no questions; the task itself is the one question.")
        questions = [task.prompt]
    yield Return(questions)


@returning
async def _first_answer(run: _Run) -> AsyncIterator[Event | Return[tuple[str, list[Passage]]]]:
    """RAG (002 3.5 step 1): procedures like the task, and a first answer from them (step 1);
    returns the answer and the procedures."""
    yield StepStarted(i=1, thought="Retrieve procedures like the task and write a first answer", n=run.n)
    query = web_query(run.task.prompt)[0]
    yield QueryMade(i=1, query=query)
    found = _recall(run, 1, query)
    async for ev in found:
        yield ev
    procedures = format_passages(found.result, numbers(run.ctx)) or "(none found)"
    prompt = FIRST_ANSWER.format(procedures=procedures, task=run.question)
    text = generate(run.ctx, prompt, role="draft", i=1, max_tokens=whole_answer(run.ctx, run.task))
    async for ev in text:
        yield ev
    answer = prompts.tidy_reply(text.result) or text.result.strip()
    yield StepRevised(i=1, before="", after=answer, sources=urls_of(found.result), article=answer)
    yield Return((answer, found.result))


@returning
async def _ask(run: _Run, questions: list[str], *,
               summarize: bool) -> AsyncIterator[Event | Return[tuple[str, list[Passage]]]]:
    """Per question (steps 2..): retrieve, then summarise (SUM, 002 3.3). Returns the context
    (the stacked summaries, or with NOSUM the procedures themselves) and the procedures found,
    duplicates removed."""
    summaries: list[str] = []
    gathered: list[Passage] = []
    for j, question in enumerate(questions, start=1):
        one = _ask_one(run, 1 + j, question, summarize=summarize)
        async for ev in one:
            yield ev
        found, summary = one.result
        gathered += found
        summaries.append(summary)
    unique = list({(p.url, p.text): p for p in gathered}.values())
    context = ("\n\n".join(summaries) if summarize
               else format_passages(unique, numbers(run.ctx)) or "(no procedures found)")
    yield Return((context, unique))


@returning
async def _ask_one(run: _Run, i: int, question: str, *,
                   summarize: bool) -> AsyncIterator[Event | Return[tuple[list[Passage], str]]]:
    """Step i: retrieve procedures for one question and (unless NOSUM) summarise them as its
    answer; returns the procedures and "Q: <question>\\nA: <summary>" ("" without summary)."""
    yield StepStarted(i=i, thought=question, n=run.n)
    query = web_query(question)[0]
    yield QueryMade(i=i, query=query)
    found = _recall(run, i, query)
    async for ev in found:
        yield ev
    if not summarize:
        yield Return((found.result, ""))
        return
    procedures = format_passages(found.result, numbers(run.ctx)) or "(none found)"
    prompt = SUMMARY.format(question=question, procedures=procedures)
    reply = generate(run.ctx, prompt, role="query", i=i, max_tokens=caps.summary(procedures))
    async for ev in reply:
        yield ev
    summary = f"Q: {question}\nA: {' '.join(reply.result.split())}"
    if found.result:
        yield SourcesUsed(i=i, urls=urls_of(found.result))
    yield Note(i=i, text=summary)
    yield Return((found.result, summary))


@returning
async def _update(run: _Run, i: int, answer: str, context: str,
                  passages: list[Passage]) -> AsyncIterator[Event | Return[str]]:
    """UPDATE (002 3.5 step 4), step i: the first answer updated with the context; returns it."""
    yield StepStarted(i=i, thought="Update the first answer with what the questions found", n=run.n)
    prompt = UPDATE.format(task=run.question, answer=answer, context=context)
    cap = caps.revise(answer, len(passages))
    reply = generate(run.ctx, prompt, role="revise", i=i, max_tokens=cap)
    async for ev in reply:
        yield ev
    events = revised(run.ctx, i, answer, reply.result, passages)
    for ev in events:
        yield ev
    yield Return(events[-1].after)


@returning
async def _critic_loop(run: _Run, cycles: int, answer: str, context: str,
                       passages: list[Passage]) -> AsyncIterator[Event | Return[str]]:
    """CRITIC (002 3.4), the last ``cycles`` steps: critic and editor until the critic says
    NO UPDATE REQUIRED or the cycles run out; returns the answer."""
    start = run.n - cycles
    for c in range(1, cycles + 1):
        cycle = _critic_cycle(run, start + c, f"Critic, cycle {c} of {cycles}", answer, context, passages)
        async for ev in cycle:
            yield ev
        if cycle.result is None:
            break
        answer = cycle.result
    else:
        if cycles:
            yield Note(text=f"critic: stopped after {cycles} cycles (the limit; raise aag.critic_cycles for more).")
    yield Return(answer)


@returning
async def _critic_cycle(run: _Run, i: int, thought: str, answer: str, context: str,
                        passages: list[Passage]) -> AsyncIterator[Event | Return[str | None]]:
    """One critic cycle, step i: the critic's edits, applied by the editor; returns the edited
    answer, or None when the critic requires no update."""
    yield StepStarted(i=i, thought=thought, n=run.n)
    prompt = CRITIC.format(task=run.question, context=context, answer=answer)
    critique = generate(run.ctx, prompt, role="revise", i=i, max_tokens=caps.revise(answer))
    async for ev in critique:
        yield ev
    if NO_UPDATE.lower() in critique.result.lower():
        yield Note(i=i, text=f"critic: {NO_UPDATE}")
        yield Return(None)
        return
    edits = critique.result.strip()
    yield Note(i=i, text=f"critic: {edits}")
    prompt = EDIT.format(task=run.question, context=context, answer=answer, edits=edits)
    edited = generate(run.ctx, prompt, role="revise", i=i,
                      max_tokens=caps.revise(answer, len(passages)))
    async for ev in edited:
        yield ev
    events = revised(run.ctx, i, answer, edited.result, passages)
    for ev in events:
        yield ev
    yield Return(events[-1].after)


@returning
async def _recall(run: _Run, i: int, query: str) -> AsyncIterator[Event | Return[list[Passage]]]:
    """Procedures from memory as SearchDone and PassagesChosen events (provider "memory"); the
    web through ``retrieve`` when there is no memory. Returns the passages."""
    if run.memory is None:
        found = retrieve(run.ctx, i, query, k=run.per_query)
        async for ev in found:
            yield ev
        yield Return(found.result)
        return
    started = time.perf_counter()
    hits = run.memory.search(query, run.per_query)
    results = tuple(SearchResult(url=p.url, title=p.title, snippet=" ".join(p.text(300).split()), provider="memory")
                    for p in hits)
    yield SearchDone(i=i, query=query, results=results, provider="memory",
                     seconds=round(time.perf_counter() - started, 4))
    passages = [p.passage() for p in hits]
    yield PassagesChosen(i=i, passages=tuple(passages))
    yield Return(passages)


_HEADING = re.compile(r"^\W*(outline|questions?)\W*$", re.I)
_HEADING_INLINE = re.compile(r"^\W*(outline|questions?)\s*\**\s*:\s*\**\s*(.+)$", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.)]|Q\d+[:.)])\s*", re.I)


def parse_rewrite(text: str, limit: int) -> tuple[list[str], list[str]]:
    """The outline steps and (at most ``limit``) questions of a query-rewriting answer. Without
    a "Questions:" heading, the lines that end with "?" are the questions."""
    outline: list[str] = []
    questions: list[str] = []
    section = ""
    for raw in text.replace("/n", "\n").splitlines():
        line = raw.strip()
        if not line:
            continue
        head = _HEADING.match(line)
        inline = _HEADING_INLINE.match(line)
        if head or inline:
            section = "questions" if (head or inline).group(1).lower().startswith("question") else "outline"
            if inline:
                line = inline.group(2)
            else:
                continue
        item = _BULLET.sub("", line).strip().strip("*").strip()
        if not item:
            continue
        if section == "questions":
            questions.append(item)
        elif section == "outline":
            outline.append(item)
        elif item.endswith("?"):
            questions.append(item)
        else:
            outline.append(item)
    if not questions:  # no heading at all: questions are the lines that ask
        questions = [o for o in outline if o.endswith("?")]
        outline = [o for o in outline if not o.endswith("?")]
    return outline, list(dict.fromkeys(questions))[:limit]
