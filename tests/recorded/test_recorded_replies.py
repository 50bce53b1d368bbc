"""The guards on replies a real model wrote: SmolLM2-135M-Instruct's answers to RAT's prompts
B.1-B.3, recorded once through the app (``python -m tests.recorded.record``, which says how) and
kept in smollm2.json. No model runs here: each recorded reply goes through the same functions a
run uses, and what they make of it must keep the rules of issue 9 whatever the model wrote:

- a draft splits into steps without losing or reordering a word, none too short to search;
- a query reply becomes a query a search engine can use, or the step's own words with a reason;
  a reply that is not about the task falls back, one that is about it never falls back for being
  off the task (issue 25; smollm2_queries.json adds 74 B.2 replies over 28 tasks of data/tasks,
  each marked ``about_task`` by reading it: SmolLM2 on llama.cpp, greedy decoding, B.1 drafts of
  at most 300 tokens, B.2 for the first three of their ``draft_steps`` with rat's query cap);
- a revision is used only if it is text (not talk about the task, not empty, not cut short) and
  keeps enough of what it replaces; otherwise the text stays exactly as it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.text.guards import MIN_KEEP, guard_revision, is_talk
from core.text.prompts import MAX_QUERY_WORDS, choose_query, clean_query, draft_steps, off_topic, split_steps

RECORDED = json.loads(Path(__file__).with_name("smollm2.json").read_text(encoding="utf-8"))
QUERIES = json.loads(Path(__file__).with_name("smollm2_queries.json").read_text(encoding="utf-8"))
#: How the B.2 replies of smollm2.json a reader judged not about the task begin (the others are
#: about it, though most are no query: a copy of the question, a paragraph of the draft).
NOT_ABOUT_THE_TASK = ("This article originally appeared on VICE US.", "This answer contains a step-by-step thought",
                      "This is a short summary of the content.", "This is a summary of the content.")
_LABEL = re.compile(r"^\s*(#+|(?:\*\*)?(question|instruction|content|query|answer)(?:\*\*)?\s*:)", re.I)


def of(role: str) -> list[dict]:
    return [r for r in RECORDED if r["role"] == role]


def ids(records: list[dict]) -> list[str]:
    return [f"{r['role']}-{k}" for k, r in enumerate(records)]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_the_recording_holds_every_role_and_the_shapes_that_broke_rat():
    assert {r["role"] for r in RECORDED} == {"draft", "query", "revise"}
    assert len(of("draft")) >= 3 and len(of("query")) >= 6 and len(of("revise")) >= 6
    drafts = [r["reply"] for r in of("draft")]
    assert any(len(split_steps(d)) < 3 <= len(draft_steps(d)) for d in drafts), (
        "a draft that blank lines alone leave as one or two steps (the shape of issue 9)")
    revisions = [guard_revision(r["before"], r["reply"], cut=r["finish_reason"] == "length") for r in of("revise")]
    assert any(rev.problem for rev in revisions), "a revision the guards refuse"


@pytest.mark.parametrize("record", of("draft"), ids=ids(of("draft")))
def test_a_recorded_draft_keeps_every_word_in_searchable_steps(record):
    steps = draft_steps(record["reply"])
    assert steps, "a draft with text gives at least one step"
    assert words("\n".join(steps)) == words(record["reply"].replace("/n/n", "\n")), "no word lost or reordered"
    if len(steps) > 1:
        assert all(len(re.findall(r"[^\W\d_]{2,}", s)) >= 4 for s in steps), steps


def step_of(record: dict) -> str:
    """The step a recorded B.2 reply searches for: the last paragraph of its content."""
    content = record["before"]
    return content.split("\n\n")[-1] if content else record["task"]


def judged() -> list[tuple[dict, str, bool]]:
    """Every recorded B.2 reply with its step and whether a reader judged it about the task."""
    return ([(r, step_of(r), not clean_query(r["reply"]).startswith(NOT_ABOUT_THE_TASK)) for r in of("query")]
            + [(r, r["step"], r["about_task"]) for r in QUERIES])


def test_no_recorded_query_about_the_task_is_called_off_it():
    calls = [(about, off_topic(clean_query(r["reply"]), question=r["task"], step=step)) for r, step, about in judged()]
    false = [r["reply"] for (r, _, _), (about, off) in zip(judged(), calls, strict=True) if about and off]
    assert not false, "a reply about the task fell back as off the task"
    caught = sum(off for about, off in calls if not about)
    assert caught >= sum(not about for about, _ in calls) / 2, "most replies about something else fall back"


@pytest.mark.parametrize("record", of("query") + [dict(r, before=r["content"]) for r in QUERIES],
                         ids=ids(of("query")) + [f"query-more-{k}" for k in range(len(QUERIES))])
def test_a_recorded_query_reply_becomes_a_usable_query(record):
    content = record["before"]
    step = record.get("step") or step_of(record)
    query, problem = choose_query(record["reply"], step, question=record["task"], content=content)
    assert query.strip(), "something is always searched"
    assert not _LABEL.match(query), f"a prompt label is never searched: {query!r}"
    assert "```" not in query
    if problem:  # the model's reply was not a query: the step's own words are searched
        assert len(query.split()) <= 20 or query == record["task"][:300]
    else:
        assert len(query.split()) <= MAX_QUERY_WORDS and query.lower() != record["task"].lower()


@pytest.mark.parametrize("record", of("revise"), ids=ids(of("revise")))
def test_a_recorded_revision_never_destroys_the_text(record):
    before, reply = record["before"], record["reply"]
    rev = guard_revision(before, reply, cut=record["finish_reason"] == "length")
    if not before.strip():
        assert rev.text.strip() == " ".join(reply.split()) or rev.text.strip()
        return
    if rev.problem:
        assert rev.text == before, "a refused revision keeps the text exactly as it stood"
        assert rev.rejected == reply.strip(), "and keeps the reply, to be taken by hand"
    else:
        assert rev.text.strip() and not is_talk(rev.text)
        assert len(rev.text) >= MIN_KEEP * len(before.strip()), "a used revision keeps enough of the text"
        assert record["finish_reason"] != "length", "a reply cut at the token limit is never used"
