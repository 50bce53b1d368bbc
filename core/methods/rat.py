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

Both redo a step the author asks for (a stored ``StepRedone``, ``core.runner.Runner.redo``):
"regenerate" revises step i again with its stored query and passages, "search" retrieves for the
author's own query, "exclude" retrieves for the step's query with the excluded pages left out,
then revises. rat-step's other paragraphs stay as they are (the article is theirs with step i
replaced); in rat each revision rewrote the answer so far, so steps i+1..n are revised again on
top of the new text (with the passages they were shown). A later revision of a step replaces
its earlier one; the earlier stays in the events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from common.errors import TaskError
from common.events import (
    ADD,
    EVERY,
    DraftReady,
    Event,
    Final,
    Note,
    PassagesChosen,
    QueryMade,
    StepRedone,
    StepRevised,
    StepStarted,
    renumbered,
)
from common.types import Passage, Task
from core.methods.base import AUTHOR_INSTRUCTION_CHARS, AUTHOR_QUERY_CHARS, MethodContext, Param, register
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
          "001 (RAT), Algorithm 1, prompts B.1-B.3", resumable=True,
          redo=lambda events, i, **asked: redo_request(events, i, **asked))
def rat(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    return _rat(task, ctx, step_scope=False)


@register("rat-step", "RAT step-scope (ours): each revision rewrites only its own step, with earlier steps as context",
          "001 (RAT), with a narrower revision prompt", resumable=True, params=(_STEP_CONTEXT,),
          redo=lambda events, i, **asked: redo_request(events, i, **asked))
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
    if state.redo is not None:
        async for ev in _redo(task, ctx, state, state.redo, step_scope=step_scope):
            yield ev
    for i in range(state.done + 1, len(steps) + 1):
        yield StepStarted(i=i, thought=steps[i - 1], n=len(steps))
        async for ev in _step(task, ctx, state, i, step_scope=step_scope):
            yield ev
    yield Final(text=state.article)




def redo_request(events: list[Event], i: int, *, action: str, query: str = "",
                 exclude: Iterable[str] = (), instruction: str = "") -> StepRedone:
    """The author's request to do step ``i`` of a run (its ``events``) again, checked. Raises
    TaskError naming the fix for an unknown action, a step that is not there or not yet revised,
    an empty or overlong query (search; instruct takes one too), no page to exclude (exclude), or
    an empty or overlong instruction (instruct)."""
    if action not in REDO_NOTES:
        raise TaskError(f"Unknown step action {action!r}: use one of {', '.join(REDO_NOTES)}.")
    state = _State.from_prior(events)
    n = len(state.steps or ())
    if action == EVERY:  # the whole article: every step, once all of them are revised
        i, query, exclude = 1, "", ()
        if n and state.done < n:
            raise TaskError("The run has steps not yet revised: press Continue to finish it before revising the "
                            "whole article.")
    if action == ADD and n and state.done >= n and not 1 <= i <= n + 1:
        raise TaskError(f"A section can go after step 0 to {n} (--add-after K): the run has {n} steps, "
                        f"not {i - 1}.")
    if action == ADD and n and state.done < n:
        raise TaskError("The run has steps not yet revised: press Continue to finish it before adding a section.")
    if not state.steps or not 1 <= i <= n + (action == ADD):
        raise TaskError(f"The run has no step {i}: pick one of its {n} steps." if n else
                        "The run has no draft yet: continue it first.")
    if i > state.done + (action == ADD):
        raise TaskError(f"Step {i} has not been revised yet: press Continue to revise it first.")
    query = " ".join(query.split())
    if action == "search" and not query:
        raise TaskError("Type your own query for the step first (the Search again box).")
    if len(query) > AUTHOR_QUERY_CHARS:
        raise TaskError(f"The query is {len(query):,} characters long: shorten it to at most {AUTHOR_QUERY_CHARS}.")
    exclude = tuple(dict.fromkeys(u.strip() for u in exclude if u and u.strip()))
    if action == "exclude" and not exclude:
        raise TaskError("Pick a page to exclude: press ✕ beside it in the step's card.")
    instruction = " ".join(instruction.split())
    if action in ("instruct", EVERY) and not instruction:
        raise TaskError("Type what the revision should do first (--instruction TEXT): the instruction is empty.")
    if action == ADD and not instruction:
        raise TaskError("Say in one line what the new section should cover first (--instruction TEXT): it is empty.")
    if len(instruction) > AUTHOR_INSTRUCTION_CHARS:
        raise TaskError(f"The instruction is {len(instruction):,} characters long: shorten it to at most "
                        f"{AUTHOR_INSTRUCTION_CHARS} (--instruction).")
    return StepRedone(i=i, action=action, query=query if action in ("search", "instruct", ADD) else "",
                      exclude=exclude if action == "exclude" else (),
                      instruction=instruction if action in ("instruct", ADD, EVERY) else "")


REDO_NOTES = {
    "regenerate": "Revised again at the author's request, with the same query and passages.",
    "search": "Searched again with the author's own query: {query}",
    "exclude": "Left out at the author's request: {pages}. Searched again with the step's query and revised.",
    "instruct": "Revised at the author's instruction: {instruction}",
    ADD: "Added by the author: {instruction}",
    EVERY: "Revised with the whole article at the author's instruction: {instruction}",
}


async def _redo(task: Task, ctx: MethodContext, state: _State, redo: StepRedone, *,
                step_scope: bool) -> AsyncIterator[Event]:
    """The author's redo of step ``redo.i``: that step as asked, then (rat) every later revised
    step revised again on top of it, with its own stored passages. A redo that stopped half-way
    goes on after the last step it revised (``state.redone``)."""
    every = redo.action == EVERY  # each step as the author's instruction asks, not only the first
    last = state.done if not step_scope or every else redo.i
    for j in range(redo.i, last + 1):
        if j in state.redone:
            continue
        if not step_scope:  # the answer so far: as it stood after step j-1 (already redone, for j > i)
            state.article = state.articles.get(j - 1, "")
        yield StepStarted(i=j, thought=state.steps[j - 1], n=len(state.steps))
        if j == redo.i or every:
            pages = ", ".join(redo.exclude)
            yield Note(i=j, text=REDO_NOTES[redo.action].format(query=redo.query, pages=pages,
                                                                instruction=redo.instruction))
        else:
            yield Note(i=j, text=f"Revised again on top of step {redo.i}'s new revision, with the passages "
                                 "it was shown before.")
        async for ev in _step(task, ctx, state, j, step_scope=step_scope,
                              redo="instruct" if every else redo.action if j == redo.i else "regenerate"):
            yield ev


async def _step(task: Task, ctx: MethodContext, state: _State, i: int, *, step_scope: bool,
                redo: str = "") -> AsyncIterator[Event]:
    """Step i: the query (B.2), the retrieval, the revision (B.3); ``state`` moves on past i.
    ``redo`` (a ``StepRedone`` action): "regenerate" revises with the step's stored passages,
    "search" retrieves for the author's query (the pending redo's), "exclude" for the step's stored
    query; both leave out the pages the author excluded from this step. "instruct" revises with
    the author's instruction in the prompt (``prompts.instructed``), beside the step's stored
    passages, or beside the pages of the author's query when the request has one (a new search)."""
    step = state.steps[i - 1]
    asked = state.redo if redo in ("search", "instruct", ADD) and state.redo is not None else None
    instruction = asked.instruction if asked is not None and redo in ("instruct", ADD) else ""
    if redo == "instruct" and not (asked and asked.query):
        redo = "regenerate"  # the same passages, and the author's instruction
    # B.2 sees the revised steps before i and draft step i, never a later one: all of them for
    # rat, the bounded context of step_context for rat-step.
    before = (step_context(state.revised[: i - 1], param(ctx, "rat.step_context_tokens")) if step_scope
              else state.article)
    so_far = prompts.join_steps([before, step]) if before else step
    if redo == "regenerate":
        passages = list(state.passages.get(i, ()))
    else:
        query = (asked.query if asked is not None
                 else state.queries.get(i, "") if redo == "exclude" else "")
        if query:
            yield QueryMade(i=i, query=query)
        else:
            q = make_query(ctx, task, i, step, so_far)
            async for ev in q:
                yield ev
            query = q.result
        found = retrieve(ctx, i, query, k=min(ctx.settings.k, MAX_RETRIEVALS_PER_STEP),
                         exclude=state.excluded.get(i, ()))
        async for ev in found:
            yield ev
        passages = found.result
    kept = step if step_scope else so_far

    def article_of(text: str) -> str:  # the whole text after step i (rat-step: the others' as they stand)
        if not step_scope:
            return text
        return prompts.join_steps([*state.revised[: i - 1], text, *state.revised[i:]])

    def prompt(content: str) -> str:  # B.3, or our step-scope revision
        question = prompts.question_for(task)  # QA tasks also ask for a short "Answer:" line
        if step_scope:
            return prompts.instructed(prompts.REVISE_STEP.format(
                content=content, question=question, step=step,
                context=before or "(nothing yet: this is the first paragraph)"), instruction)
        return prompts.instructed(prompts.REVISE.format(content=content, question=question, answer=so_far),
                                  instruction)

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
    after the last revised step, (for rat-step's context) each revised step's own text, the whole
    text after each step (``articles``), each step's latest query and passages, the pages the
    author excluded from each step, and the author's redo not yet finished (``redo``, with the
    steps revised since it was asked, ``redone``)."""

    def __init__(self, steps: list[str] | None = None) -> None:
        self.steps = steps
        self.article = ""
        self.revised: list[str] = []
        self.done = 0
        self.articles: dict[int, str] = {}
        self.queries: dict[int, str] = {}
        self.passages: dict[int, tuple[Passage, ...]] = {}
        self.excluded: dict[int, tuple[str, ...]] = {}
        self.redo: StepRedone | None = None
        self.redone: set[int] = set()

    def moved_on(self, e: StepRevised) -> None:
        """Step ``e.i`` is revised: a later revision of an earlier step (a redo) replaces that
        step's text and leaves the others as they are."""
        self.article, self.done = e.article, max(self.done, e.i)
        if len(self.revised) < e.i - 1:  # a step added later (``renumbered``) reads as drafted until revised
            self.revised += (self.steps or [])[len(self.revised): e.i - 1]
        self.revised = [*self.revised[: e.i - 1], e.after, *self.revised[e.i:]]
        self.articles[e.i] = e.article
        if self.redo is not None:
            self.redone.add(e.i)

    def see(self, e: Event) -> None:
        if isinstance(e, StepRevised):
            self.moved_on(e)
        elif isinstance(e, QueryMade):
            self.queries[e.i] = e.query
        elif isinstance(e, PassagesChosen):
            self.passages[e.i] = e.passages
        elif isinstance(e, StepRedone):
            self.redo, self.redone = e, set()
            self.excluded[e.i] = tuple(dict.fromkeys([*self.excluded.get(e.i, ()), *e.exclude]))
        elif isinstance(e, Final):
            self.redo = None

    @classmethod
    def from_prior(cls, events: list[Event]) -> _State:
        """The state after ``events``, their steps numbered as the run reads now (a step the
        author added is in the draft, revised when its redo revises it)."""
        state = cls()
        for e in renumbered(events):
            if isinstance(e, DraftReady):  # a later (edited) draft replaces the first
                state = cls(list(e.steps))
            else:
                state.see(e)
        return state
