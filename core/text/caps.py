"""Token caps by role: the most tokens one answer may take, derived from what it answers.

Without a cap a model that rambles writes until its context window is full: a base model's
revision of one step ran 5,864 tokens (minutes on a CPU, money on a paid API). Each call of a
method therefore asks for at most what its role can need, here, in one place:

- a revision (:func:`revise`): a few times the text it revises, plus room for citation marks;
- a draft or a whole answer (:func:`draft`): a step's worth of tokens per --max-steps, by task kind
  (a QA answer's reasoning steps are short, an article's paragraphs are not);
- a search query (:data:`QUERY_TOKENS`), a plan of FuRePA (:data:`PLAN_TOKENS`), a short QA answer
  (:data:`SHORT_ANSWER_TOKENS`) and the judge's verdict (:data:`VERDICT_TOKENS`): small, fixed;
  AAG's outline (:func:`outline`) and summaries (:func:`summary`).

A cap is an upper bound for a well-behaved answer, never a target: it is well above what the
prompt asks for, so only a rambling answer reaches it. The LLM client sends the lower of a call's
cap and --max-tokens (``core.llm.LLMClient``), so the user's setting always wins when lower.
:func:`fit` leaves a cap out when it would not fit beside the prompt in the context window (the
window ends the answer first, and some servers refuse a request whose prompt and cap exceed it);
``core.methods.helpers.generate`` applies it to every call, so a method passes its role's cap as it is.
:func:`cut_advice` says which limit cut an answer, so that a cut by a cap of ours is never
blamed on --max-tokens.
"""

from __future__ import annotations

from common.types import KINDS
from core.text.prompts import MAX_QUERY_WORDS
from core.text.tokens import count_tokens

#: A revision may add the details the passages hold (B.3: "add them to make the paragraph more
#: plausible"): three times the text leaves room for that, where a revision that runs past it is
#: rambling.
REVISE_TIMES = 3
#: Tokens of "[n]" marks a revision may add per passage it was given (a mark after each sentence
#: that uses one, a few sentences per passage).
CITATION_TOKENS = 16
#: The least room for a revision: a step that is one short sentence or a heading may grow into a
#: paragraph.
REVISE_FLOOR = 256

#: Tokens of one step of a draft, by task kind: an article's paragraph, a plan's step, a QA
#: answer's reasoning step (001's B.1 asks every kind for step-by-step paragraphs).
STEP_TOKENS = {"writing": 200, "plan": 120, "qa": 80}
#: The least room for a draft, whatever --max-steps: a few steps and, for QA, the "Answer:" line.
DRAFT_FLOOR = 512

#: A search query: a query longer than MAX_QUERY_WORDS words is refused anyway
#: (core.text.prompts.query_problem), so the model is not left to write more than that.
QUERY_TOKENS = 2 * MAX_QUERY_WORDS + 16
#: A FuRePA plan: "[Analysis] ... [Search] ..." or "[Answer] ...", two or three sentences in 004's
#: examples (under 100 tokens); a plan cut at this has not ended its analysis.
PLAN_TOKENS = 320
#: The short answer of a QA task written from a document (ITRG's read step): 003 generates
#: 15-token answers; a sentence of reasoning and the "Answer:" line fit in this.
SHORT_ANSWER_TOKENS = 160
#: AAG's query rewrite: an outline of up to OUTLINE_LINES lines and the questions, each a line of
#: at most LINE_TOKENS.
OUTLINE_LINES = 12
LINE_TOKENS = 40
#: AAG's summary of retrieved procedures: at most half of what it summarises, never below this.
SUMMARY_FLOOR = 128
#: The judge's verdict (annotation.admin.judge): "Explain briefly, then end with one line 'Verdict: A'":
#: a short paragraph and the verdict line. A verdict cut before its last line cannot be read.
VERDICT_TOKENS = 400


class Cap(int):
    """A cap of this module (an ``int``, sent as the call's max_tokens) that says how it was
    sized (``why``) and which setting raises it (``flag``, "" when none does), for the note on
    an answer it cut (:func:`cut_advice`)."""

    why: str = ""
    flag: str = ""

    def __new__(cls, tokens: int, why: str = "", flag: str = "") -> Cap:
        cap = super().__new__(cls, tokens)
        cap.why, cap.flag = why, flag
        return cap


#: How to stop a model from thinking, for the messages on answers its thinking used up.
NO_THINKING = ("turn the model's thinking off (Qwen3: /no_think in the prompt; Ollama: think false; "
               "llama.cpp: --reasoning-budget 0)")


def revise(text: str, passages: int = 0) -> Cap:
    """The cap of a revision of ``text`` with ``passages`` passages in its prompt:
    REVISE_TIMES times the text's tokens plus CITATION_TOKENS per passage, at least
    REVISE_FLOOR."""
    size = count_tokens(text.strip())
    return Cap(max(REVISE_FLOOR, REVISE_TIMES * size + CITATION_TOKENS * passages),
               f"{REVISE_TIMES} times the {size:,} tokens it revises, plus room for citations")


def draft(kind: str, max_steps: int) -> Cap:
    """The cap of a draft or a whole answer to a task of ``kind`` ("writing", "plan", "qa"):
    STEP_TOKENS of the kind per step of --max-steps, at least DRAFT_FLOOR. A draft may have more
    steps than --max-steps (neighbours are merged, nothing is dropped), so the cap is per step
    of the run's, not a count of the model's."""
    per_step = STEP_TOKENS.get(kind, STEP_TOKENS[KINDS[0]])
    return Cap(max(DRAFT_FLOOR, max_steps * per_step), f"{per_step} tokens a step for --max-steps {max_steps}",
               "--max-steps")


def query() -> Cap:
    """The cap of a search query (RAT's B.2): QUERY_TOKENS."""
    return Cap(QUERY_TOKENS, f"a query has at most {MAX_QUERY_WORDS} words")


def plan() -> Cap:
    """The cap of one FuRePA plan: PLAN_TOKENS."""
    return Cap(PLAN_TOKENS, "a plan is an analysis of a few sentences and one search or answer")


def short_answer() -> Cap:
    """The cap of a QA task's short answer read from a document: SHORT_ANSWER_TOKENS."""
    return Cap(SHORT_ANSWER_TOKENS, "a short answer and a sentence of reasoning")


def outline(questions: int) -> Cap:
    """The cap of AAG's query rewrite: an outline of OUTLINE_LINES lines and ``questions``
    questions, each at most LINE_TOKENS."""
    return Cap((OUTLINE_LINES + questions) * LINE_TOKENS,
               f"{OUTLINE_LINES} outline lines and {questions} questions of {LINE_TOKENS} tokens")


def summary(source: str) -> Cap:
    """The cap of a summary of ``source``: half its tokens, at least SUMMARY_FLOOR."""
    return Cap(max(SUMMARY_FLOOR, count_tokens(source) // 2), "half of what it summarises")


def fit(cap: int, prompt: str | list[dict], window: int) -> int | None:
    """``cap``, or None when it does not fit beside ``prompt`` in a context window of ``window``
    tokens: the window then ends the answer before the cap could, and a server such as vLLM
    refuses a request whose prompt and max_tokens together exceed it (with no cap the server
    gives the answer what is left, as it did before caps)."""
    text = prompt if isinstance(prompt, str) else "".join(str(m.get("content", "")) for m in prompt)
    return cap if count_tokens(text) + cap <= window else None


#: Share of the context window a prompt and its answer must fill for the window to be what cut
#: the answer: token counts are often estimates (servers that stream no usage), so "filled" is
#: "nearly filled".
WINDOW_FULL = 0.9


def cut_advice(completion_tokens: int, cap: int | None, max_tokens: int | None, window: int | None = None,
               prompt_tokens: int | None = None) -> str:
    """Which limit cut an answer of ``completion_tokens`` tokens short, and the fix, as the end
    of the sentence "The revise answer ... was cut short: ...". With a limit sent (the call's
    ``cap``, --max-tokens ``max_tokens``), the lower of them cut it, unless the prompt
    (``prompt_tokens``) and the answer nearly filled the context window (``window``) before the
    answer reached it: --max-tokens when that was the lower, else the call's cap (a :class:`Cap`
    says how it was sized and what raises it). With no limit sent, or the window full first, the
    context window (or the server's own limit) cut it. Counts are compared loosely: a server
    that streams no usage leaves them estimated (an answer cut at 256 tokens counted as 253)."""
    limits = [limit for limit in (cap, max_tokens) if limit is not None]
    full = (window is not None and prompt_tokens is not None
            and prompt_tokens + completion_tokens >= WINDOW_FULL * window)
    if not limits or full and completion_tokens < WINDOW_FULL * min(limits):
        shown = f" (--context-tokens {window:,})" if window else ""
        return (f"the prompt and the answer filled the model's context window{shown} or the server's own limit: "
                "lower --passage-tokens, or give the server a larger context")
    if max_tokens is not None and max_tokens <= min(limits):
        return f"raise --max-tokens ({max_tokens:,}), or use a model that answers more briefly."
    why = getattr(cap, "why", "")
    flag = getattr(cap, "flag", "")
    sized = f" ({why})" if why else ""
    raise_it = f"raise {flag}, or " if flag else ""
    return (f"that is its role's cap of {cap:,} tokens{sized}, which an answer to the prompt stays within; "
            f"{raise_it}use a model that follows the instruction more closely.")
