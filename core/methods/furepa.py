"""FuRePA, furthest reasoning with plan assessment (paper 004, in Vietnamese; arXiv 2309.12767).

Furthest reasoning (004, 3.1). Each iteration t < T (T = 6) sees only the question Q and the
evidence E_t gathered so far: earlier reasoning and earlier queries are masked, so the model
reasons from scratch every time. It samples n = 5 plans, each "[Analysis] r [Search] q" or
"[Analysis] r [Answer] a". The first iteration (E_0 empty) has its own prompt that only asks
what to search first (appendix A.1); the later ones use appendix A.2.

Plan assessment (004, 3.2).
- Plan decision (eq. 5): when t > 0 and the share of answer plans is at least θ = 0.6, the run
  ends with the majority answer (answers compared after SQuAD normalisation; ties go to the
  earliest plan).
- Query filter (3.2.2): the candidate queries, with the queries already run, are clustered with
  DBSCAN (eps = 2, min_samples = 1) over their bag of words; clusters that hold a query already
  run are dropped, and each other cluster gives its central query (its medoid). When nothing is
  left, the iteration ends and the temperature is raised by Δtp.
- Query scorer (3.2.3). THE PAPER'S SCORER IS A TRAINED ROBERTA-LARGE MODEL that estimates the
  MRR of a query over the corpus; we have no training data, so OUR SCORER STANDS IN FOR IT: each
  remaining candidate is run, and scored by what its retrieval returns: the BM25 relevance to the
  question of its best passage not already in the evidence (BM25 over all passages the candidates
  found this iteration), times that passage's novelty (the share of its distinct words not
  already in the evidence). The best candidate's top new passage is added to the evidence
  (eq. 3). A candidate that finds nothing new scores zero.
- After T iterations without an answer, an answer is forced (our prompt: A.2's, plus "answer
  now").

Temperature. 004 samples at tp0 (0.2; 004 also reports 1.0) and raises it by Δtp (0.8; also 0.5)
"when Q̂_t is empty" (3.2.2), i.e. when every candidate repeats an executed query; we also raise
it when no candidate finds a new passage. With ``furepa.temperature_schedule = "per-iteration"``
the temperature is tp0 + t·Δtp instead. Either way it is capped at 2.0, the API's maximum.

Prompts: appendix A's, translated back to English from our Vietnamese copy (the few-shot
questions, searches and answers are the paper's English; the analyses are translated). The
forced-answer prompt is ours. Every plan and the forced answer use the role "draft".
Parameters: ``furepa.n`` (5), ``furepa.theta`` (0.6), ``furepa.iterations`` (6), ``furepa.tp0``
(0.2), ``furepa.dtp`` (0.8), ``furepa.eps`` (2.0), ``furepa.temperature_schedule``
("on-repeat" | "per-iteration").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from common.errors import TaskError
from common.events import Event, Final, LLMCalled, Note, QueryMade, StepRevised, StepStarted
from common.types import Passage, Task
from core.methods.base import MethodContext, Param, register
from core.methods.helpers import Return, cut_advice, generate, param, qa_normal_form, returning, web_query
from core.retrieval.passages import rank_passages
from core.retrieval.pipeline import retrieve
from core.text import caps
from core.text.fencing import format_passages, prompt_template
from core.text.prompts import PASSAGES_ARE_DATA
from core.text.tokens import tokenize

N_PLANS = 5  # n (004, 4.1)
THETA = 0.6  # θ (004, 4.1)
ITERATIONS = 6  # T (004, 4.1)
TP0 = 0.2  # tp0 (004, 4.1: "0.2/1.0")
DTP = 0.8  # Δtp (004, 4.1: "0.8/0.5")
EPS = 2.0  # DBSCAN eps over bag of words (004, 4.1)
MAX_TEMPERATURE = 2.0  # the OpenAI API's upper bound
SCHEDULES = ("on-repeat", "per-iteration")
PARAMS = (
    Param("furepa.n", N_PLANS, "plans sampled per iteration (004: 5)", low=1, high=10),
    Param("furepa.theta", THETA, "share of answer plans that ends the run (004: 0.6)", low=0, high=1),
    Param("furepa.iterations", ITERATIONS, "T, the most iterations before a forced answer (004: 6)", low=1, high=20),
    Param("furepa.tp0", TP0, "first sampling temperature (004: 0.2)", low=0, high=MAX_TEMPERATURE),
    Param("furepa.dtp", DTP, "temperature raise (004: 0.8)", low=0, high=MAX_TEMPERATURE),
    Param("furepa.eps", EPS, "DBSCAN eps of the query filter, over bags of words (004: 2)", low=0.01, high=100),
    Param("furepa.temperature_schedule", SCHEDULES[0], "when the temperature goes up", choices=SCHEDULES),
)

# Appendix A.1: the first iteration, which only asks what to search first.
FIRST_SYSTEM = ("You are given problems that require multi-hop searching and reasoning. "
                "You should follow the examples and tell me what information to search first accurately.")
FIRST_USER = ("To solve this multi-hop problem: {question} What specific information should I search from wiki "
              "at the first step? Search one target at the first step.")
FIRST_SHOTS = (
    ("What was the name of the Infantry that was commanded by a Senator who was know as Jim Lane?",
     "[Search] the Senator who was known as Jim Lane"),
    ("Which person born on March 23, 1902 did George Roby Dempster have political battles with?",
     "[Search] the person George Roby Dempster have political battles with"),
    ("Do director of film Swami Dada and director of film Common Clay (1930 Film) have the same nationality?",
     "[Search] the nationality of director of film Swami Dada"),
    ("How many square miles is the state that houses the university that Joseph L. Badaracco attended?",
     "[Search] the university Joseph L. Badaracco attended"),
    ("The Tudor-style Norfolk Hotel, now run by the Fairmont group, is a landmark in the capital city of which "
     "west African country?",
     "[Search] the Tudor-style Norfolk Hotel, now run by the Fairmont group, is a landmark in what city"),
)

# Appendix A.2: the later iterations.
SYSTEM = ("You are given problems that require multi-hop searching and reasoning with related contexts. "
          "You should tell me the answer if all needed information is provided in the context, otherwise tell me "
          "what specific information to search next. Do not answer with uncertainty. "
          "Lines only start with '[Analysis]' or '[Answer]' or '[Search]'.")
USER = prompt_template("Context:\n{context}\nQuestion:\n{question}")
# (In the first example our copy says Saint Motel has 3 members; its context lists four.)
SHOTS = (
    ("Saint Motel: The band consists of A/J Jackson (lead vocals, guitar, piano), Aaron Sharp (lead guitar), "
     "Dak Lerdamornpong (bass), and Greg Erwin (drums). Curve Lake First Nation: The Curve Lake First Nation "
     "registered a population on these three reserves of 741, with an additional 1,050 registered band members "
     "living off-reserve.",
     "Which band has more members, Saint Motel or Curve?",
     "[Analysis] According to the context, we now know Saint Motel has four members. The context gives information "
     "about Curve Lake First Nation, not the band. We still need information about the band Curve.\n"
     "[Search] the number of members in the band Curve"),
    ("Dhyanchand Stadium is a cricket ground in Jhansi, India. The stadium is named after Major Dhyan Chand who "
     "lived in Jhansi. Dhyan Chand: He is known for his extraordinary goal-scoring feats, in addition to earning "
     "three Olympic gold medals (1928, 1932, and 1936) in field hockey, during an era where India was the most "
     "dominant team in Hockey.",
     "Where is the stadium located which is named after the man who won three Olympic gold medals in 1928, 1932, "
     "and 1936?",
     "[Analysis] The man who won three Olympic gold medals in 1928, 1932 and 1936 is Dhyan Chand. The stadium named "
     "after him is Dhyanchand Stadium. Dhyanchand Stadium is in Jhansi, India. Then we have the answer to the "
     "question.\n[Answer] Jhansi, India"),
    ("Matthias W. Day (August 8, 1853 – September 12, 1927) was a career American army officer who received the "
     "Medal of Honor, the United States' highest military decoration, for his actions during the American Indian "
     "Wars in the latter half of the 19th century. Day was a longtime officer with the African-American 9th Cavalry "
     "Regiment, seeing action during the Apache Wars against the Apache leaders Victorio and Geronimo.",
     "In 2010, who controlled the Senate and the body who presides over any impeachment trial of the president of "
     "the country Matthias W. Day holds citizenship in",
     "[Analysis] Matthias W. Day holds citizenship in the United States. Then we need to know which body presides "
     "over any impeachment trial of the president of the United States.\n"
     "[Search] Who presides over any impeachment trial of the president of the United States"),
    ("The Oberoi family is an Indian family that is famous for its involvement in hotels, namely through The Oberoi "
     "Group.",
     "The Oberoi family is part of a hotel company that has a head office in what city?",
     "[Analysis] The Oberoi family is part of a hotel company called The Oberoi Group. Then we need to know in which "
     "city The Oberoi Group has its head office.\n[Search] the Oberoi Group has a head office in what city"),
    ("\"Human Error\" is the twenty-fourth episode and season finale of the third season of \"House\" and the "
     "seventieth episode overall. House (also called House, M.D.) is an American television medical drama that "
     "originally ran on the Fox network for eight seasons, from November 16, 2004 to May 21, 2012.",
     "\"Human Error\" is the season finale of the third season of a tv show that aired on what network?",
     "[Analysis] \"Human Error\" is the season finale of the third season of \"House\". The TV show \"House\" aired "
     "on the Fox network. Then we have the answer.\n[Answer] Fox network"),
)
# Ours: 004 forces an answer after the last round but gives no prompt for it. A.2's own words
# stay as the paper's (the fence around the evidence only); this addition says the evidence is data.
FORCE = ("\n\nThe search budget is spent: answer now, from the context and what you know. "
         "Reply with one [Analysis] line and one [Answer] line. " + PASSAGES_ARE_DATA)


@dataclass(frozen=True)
class Plan:
    kind: str  # "search", "answer", or "" when the reply follows neither form
    analysis: str
    text: str  # the query or the answer


@dataclass(frozen=True)
class _Config:
    """A run's parameters (``furepa.*``), the paper's values unless set."""

    n: int
    theta: float
    iterations: int
    tp0: float
    dtp: float
    eps: float
    schedule: str

    @classmethod
    def of(cls, ctx: MethodContext) -> _Config:
        """Raises TaskError for a parameter that is not a number, or an unknown schedule."""
        config = cls(n=param(ctx, "furepa.n"), theta=param(ctx, "furepa.theta"),
                     iterations=param(ctx, "furepa.iterations"), tp0=param(ctx, "furepa.tp0"),
                     dtp=param(ctx, "furepa.dtp"), eps=param(ctx, "furepa.eps"),
                     schedule=param(ctx, "furepa.temperature_schedule"))
        if config.schedule not in SCHEDULES:
            raise TaskError(f"furepa.temperature_schedule={config.schedule!r} is not known: "
                            f"use one of {', '.join(SCHEDULES)}.")
        return config

    def temperature(self, t: int, raises: int) -> float:
        """Iteration t's sampling temperature, after ``raises`` raises (on-repeat schedule)."""
        steps = t if self.schedule == "per-iteration" else raises
        return round(min(MAX_TEMPERATURE, self.tp0 + steps * self.dtp), 4)


@dataclass
class _State:
    """What the iterations carry: the question, the evidence E_t, the queries already run
    (never shown to the model: only the query filter reads them), the temperature raises."""

    question: str
    evidence: list[Passage] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    raises: int = 0


@register("furepa", "FuRePA: each round plans from the question and evidence only (earlier reasoning masked), "
                    "5 sampled plans, answer at ≥60% agreement, else DBSCAN-filtered queries scored by what their "
                    "retrieval returns (a stand-in for the paper's trained RoBERTa scorer)",
          "004 (FuRePA), sections 3.1-3.2 and appendix A", params=PARAMS)
async def furepa(task: Task, ctx: MethodContext) -> AsyncIterator[Event]:
    config = _Config.of(ctx)
    state = _State(question=task.prompt)
    answer: Plan | None = None
    for t in range(config.iterations):
        iteration = _iteration(ctx, config, state, t)
        async for ev in iteration:
            yield ev
        answer = iteration.result
        if answer is not None:
            break
    if answer is None:
        forced = _forced_answer(ctx, config, state)
        async for ev in forced:
            yield ev
        answer = forced.result
    if task.kind == "qa":
        text = f"{answer.analysis}\n\nAnswer: {answer.text}" if answer.analysis else answer.text
    else:
        text = answer.text
    yield Final(text=text.strip())


@returning
async def _iteration(ctx: MethodContext, config: _Config, state: _State,
                     t: int) -> AsyncIterator[Event | Return[Plan | None]]:
    """Iteration t (step t + 1): sample plans, assess them (3.2.1), and unless they answer,
    filter the candidate queries (3.2.2), run them and keep the best one's new passage (3.2.3).
    Returns the answer plan, or None to go on."""
    i = t + 1
    temperature = config.temperature(t, state.raises)
    yield StepStarted(i=i, n=config.iterations,
                      thought=f"Plan from the question and {len(state.evidence)} piece(s) of evidence "
                              f"({config.n} plans at temperature {temperature:g})")
    sampled = _sample_plans(ctx, config, state, i, temperature)
    async for ev in sampled:
        yield ev
    plans = sampled.result
    answer, note = assess_plans(plans, config.theta, may_answer=t > 0 and bool(state.evidence), i=i)
    yield note
    if answer is None:
        async for ev in _search(ctx, config, state, plans, i):
            yield ev
    yield Return(answer)


@returning
async def _sample_plans(ctx: MethodContext, config: _Config, state: _State, i: int,
                        temperature: float) -> AsyncIterator[Event | Return[list[Plan]]]:
    """Furthest reasoning (3.1): n plans from the question and the evidence only."""
    messages = plan_messages(state.question, state.evidence)
    cap = caps.plan()
    plans: list[Plan] = []
    cut, longest = 0, 0
    for _ in range(config.n):
        reply = generate(ctx, messages, role="draft", i=i, temperature=temperature, max_tokens=cap, note_cut=False)
        tokens = 0
        async for ev in reply:
            tokens = ev.completion_tokens if isinstance(ev, LLMCalled) else tokens
            yield ev
        if reply.result.cut:
            cut, longest = cut + 1, max(longest, tokens)
        plans.append(parse_plan(reply.result, first=not state.evidence))
    if cut:  # one Note for the round, not one per plan
        were = "was" if cut == 1 else "were"
        yield Note(i=i, level="warning", text=f"{cut} of {config.n} plans {were} cut short at the token limit (a "
                                              "cut plan may have lost its [Search] or [Answer]): "
                                              + cut_advice(ctx, longest, cap))
    yield Return(plans)


def no_query_reason(plans: list[Plan], candidates: int) -> str:
    """Why a searching round has no query left to run: every candidate repeats one already run,
    or no plan gave a query at all (and what the plans were instead)."""
    if candidates:
        return f"Every candidate query repeats one already run ({candidates} candidates)"
    untagged = sum(not p.kind or not p.text for p in plans)
    answers = sum(p.kind == "answer" and bool(p.text) for p in plans)
    said = [f"{untagged} had neither [Search] nor [Answer] with text after it" if untagged else "",
            f"{answers} answered (too few to end the run)" if answers else ""]
    return f"No plan gave a query to search ({'; '.join(x for x in said if x)})"


def assess_plans(plans: list[Plan], theta: float, *, may_answer: bool, i: int) -> tuple[Plan | None, Note]:
    """Plan decision (eq. 5): the majority answer when answering is allowed (t > 0, some
    evidence) and at least θ of the plans answer, else None; and the Note that says which."""
    answers = [p for p in plans if p.kind == "answer" and p.text]
    share = len(answers) / len(plans)
    if may_answer and share >= theta:
        answer = majority(answers)
        return answer, Note(i=i, text=f"FuRePA: {len(answers)}/{len(plans)} plans answer (≥ θ = {theta:g}): "
                                      f"the majority answer is {answer.text!r}.")
    return None, Note(i=i, text=f"FuRePA: {len(answers)}/{len(plans)} plans answer (θ = {theta:g}): searching.")


async def _search(ctx: MethodContext, config: _Config, state: _State, plans: list[Plan],
                  i: int) -> AsyncIterator[Event]:
    """The searching half of an iteration: filter the plans' queries, run those left, and add
    the best one's top new passage to the evidence; raise the temperature when nothing is
    left or nothing new is found."""
    candidates = list(dict.fromkeys(web_query(p.text)[0] for p in plans if p.kind == "search" and p.text))
    kept = filter_queries(candidates, state.executed, config.eps)
    if not kept:
        state.raises += 1
        yield Note(i=i, level="info" if candidates else "warning",
                   text=f"{no_query_reason(plans, len(candidates))}; the temperature goes up by {config.dtp:g}.")
        return
    if len(kept) < len(candidates):
        yield Note(i=i, text=f"Query filter: {len(candidates)} candidates, {len(kept)} after DBSCAN "
                             "(repeats of earlier queries and near-duplicates removed).")
    found = _run_queries(ctx, state, kept, i)
    async for ev in found:
        yield ev
    async for ev in _keep_the_best(config, state, kept, found.result, i):
        yield ev


@returning
async def _run_queries(ctx: MethodContext, state: _State, queries: list[str],
                       i: int) -> AsyncIterator[Event | Return[dict[str, list[Passage]]]]:
    """Retrieve for each query (each now counts as executed); returns its passages per query."""
    found: dict[str, list[Passage]] = {}
    for q in queries:
        yield QueryMade(i=i, query=q)
        passages = retrieve(ctx, i, q, k=ctx.settings.k)
        async for ev in passages:
            yield ev
        found[q] = passages.result
        state.executed.append(q)
    yield Return(found)


async def _keep_the_best(config: _Config, state: _State, kept: list[str], found: dict[str, list[Passage]],
                         i: int) -> AsyncIterator[Event]:
    """Query scorer (3.2.3, our stand-in): the best query's top new passage joins the evidence
    (a StepRevised), or, when no query found anything new, the temperature goes up."""
    scores, tops = score_queries(state.question, found, state.evidence)
    shown = ", ".join(f"{q!r}: {s:.2f}" for q, s in scores.items())
    best = max(kept, key=lambda q: (tops[q] is not None, scores[q]))  # max() keeps the first of equals
    top = tops[best]
    if top is None:
        state.raises += 1
        yield Note(i=i, text=f"No candidate query found a new passage ({shown}); "
                             f"the temperature goes up by {config.dtp:g}.")
        return
    yield Note(i=i, text=f"Query scores (retrieval-based stand-in for the paper's trained scorer): {shown}. "
                         f"Best: {best!r}.")
    state.evidence.append(top)
    yield StepRevised(i=i, before="", after=top.text, sources=(top.url,), article=format_passages(state.evidence))


@returning
async def _forced_answer(ctx: MethodContext, config: _Config, state: _State) -> AsyncIterator[Event | Return[Plan]]:
    """After T iterations without an answer: one more call that must answer (our prompt)."""
    i = config.iterations + 1
    yield StepStarted(i=i, n=i, thought="No answer after the last round: the answer is forced")
    messages = plan_messages(state.question, state.evidence)
    messages[-1] = {"role": "user", "content": messages[-1]["content"] + FORCE}
    cap = caps.plan()
    reply = generate(ctx, messages, role="draft", i=i, temperature=config.tp0, max_tokens=cap)
    async for ev in reply:
        yield ev
    plan = parse_plan(reply.result, first=False)
    if plan.kind == "answer" and plan.text:
        yield Note(i=i, text=f"FuRePA: forced answer {plan.text!r}.")
    else:
        lines = [line.strip() for line in reply.result.splitlines() if line.strip()]
        plan = Plan("answer", plan.analysis, re.sub(r"^\[\w+\]\s*", "", lines[-1]) if lines else "")
        cut = " and was cut at the token limit" if reply.result.cut else ""
        yield Note(i=i, level="warning", text=f"FuRePA: the forced reply has no [Answer]{cut}; its last line "
                                              f"is taken as the answer: {plan.text!r}.")
    yield Return(plan)


def plan_messages(question: str, evidence: list[Passage]) -> list[dict]:
    """The chat for one plan: the question and the evidence so far, and nothing else of the run
    (furthest reasoning masks earlier reasoning and queries)."""
    if not evidence:
        messages = [{"role": "system", "content": FIRST_SYSTEM}]
        for q, a in FIRST_SHOTS:
            messages += [{"role": "user", "content": FIRST_USER.format(question=q)},
                         {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": FIRST_USER.format(question=question)})
        return messages
    messages = [{"role": "system", "content": SYSTEM}]
    for context, q, a in SHOTS:
        messages += [{"role": "user", "content": USER.format(context=context, question=q)},
                     {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": USER.format(context=format_passages(evidence), question=question)})
    return messages


_TAG = re.compile(r"\[(analysis|search|answer)\]", re.I)


def parse_plan(text: str, *, first: bool) -> Plan:
    """A reply as a plan. The last [Search] or [Answer] decides the kind; a first-iteration reply
    without a tag is read as a query (its first line)."""
    parts = _TAG.split(text)
    analysis, kind, body = [], "", ""
    for tag, content in zip(parts[1::2], parts[2::2], strict=False):
        tag = tag.lower()
        content = content.strip()
        if tag == "analysis":
            analysis.append(" ".join(content.split()))
        else:
            kind, body = tag, content
    if kind == "search":
        body = body.splitlines()[0].strip() if body else ""
    if not kind and first and text.strip():
        kind, body = "search", text.strip().splitlines()[0].strip()
    return Plan(kind=kind, analysis=" ".join(analysis), text=body.strip().strip('"').strip())


def majority(answers: list[Plan]) -> Plan:
    """The answer most plans give (after SQuAD normalisation); ties go to the earliest."""
    counts = Counter(qa_normal_form(p.text) for p in answers)
    top = max(counts.values())
    return next(p for p in answers if counts[qa_normal_form(p.text)] == top)


def filter_queries(candidates: list[str], executed: list[str], eps: float = EPS) -> list[str]:
    """004's query filter: DBSCAN (``eps``, min_samples 1) over the bag of words of the executed
    and candidate queries; clusters holding an executed query are dropped, every other cluster
    gives its medoid, in the order the candidates came."""
    if not candidates:
        return []
    import numpy as np
    from sklearn.cluster import DBSCAN
    from sklearn.feature_extraction.text import CountVectorizer

    texts = executed + candidates
    try:
        bag = CountVectorizer(analyzer=tokenize).fit_transform(texts).toarray().astype(float)
    except ValueError:  # no word at all (only stopwords): every query is the same bag
        bag = np.zeros((len(texts), 1))
    labels = DBSCAN(eps=eps, min_samples=1).fit(bag).labels_
    spent = set(labels[: len(executed)])
    kept: list[str] = []
    seen: set[int] = set()
    for label in labels[len(executed):]:
        if label in spent or label in seen:
            continue
        seen.add(label)
        members = [m for m, lab in enumerate(labels) if lab == label and m >= len(executed)]
        vectors = bag[members]
        spread = [float(np.linalg.norm(vectors - v, axis=1).sum()) for v in vectors]
        kept.append(texts[members[spread.index(min(spread))]])
    return kept


def score_queries(question: str, found: dict[str, list[Passage]],
                  evidence: list[Passage]) -> tuple[dict[str, float], dict[str, Passage | None]]:
    """Our stand-in for 004's trained query scorer (see the module docstring): per query, BM25 of
    its best new passage against the question (over every passage found this round) times that
    passage's novelty against the evidence; and that passage (None when nothing new was found)."""
    have = {(p.url, p.text) for p in evidence}
    known_words = {w for p in evidence for w in tokenize(p.text)}
    tops: dict[str, Passage | None] = {}
    for q, passages in found.items():
        new = [p for p in passages if (p.url, p.text) not in have]
        tops[q] = new[0] if new else None
    pool = list({(p.url, p.text): p for p in tops.values() if p is not None}.values())
    relevance = {(p.url, p.text): p.score for p in rank_passages(question, pool)}
    scores: dict[str, float] = {}
    for q, top in tops.items():
        if top is None:
            scores[q] = 0.0
            continue
        words = set(tokenize(top.text))
        novelty = len(words - known_words) / len(words) if words else 0.0
        scores[q] = round(relevance[(top.url, top.text)] * novelty, 4)
    return scores, tops
