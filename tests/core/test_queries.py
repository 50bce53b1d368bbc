"""Queries that are queries: the prompt's own labels, code fences and quote marks are dropped; a
query that is empty, a label, too long or a copy of the prompt gives way to one made from the
step, and the step says so."""

from __future__ import annotations

import pytest

from common.events import Note, QueryMade
from common.types import Task
from core.text.prompts import MAX_QUERY_WORDS, choose_query, clean_query, step_query
from tests.fakes.method_scripts import method_context, run_method
from tests.fakes.model import FakeModel

QUESTION = "Describe the life of Jin Yong"
STEP = "### Career\nHe co-founded the newspaper Ming Pao in Hong Kong in 1959."


@pytest.mark.parametrize("reply, expected", [
    ("Jin Yong Ming Pao 1959", "Jin Yong Ming Pao 1959"),
    ('Query: "Jin Yong Ming Pao 1959"', "Jin Yong Ming Pao 1959"),
    ("### Instruction:\nJin Yong Ming Pao 1959", "Jin Yong Ming Pao 1959"),
    ("##Question:\n##Content:\n> Jin Yong Ming Pao 1959", "Jin Yong Ming Pao 1959"),
    ("```\nJin Yong Ming Pao 1959\n```", "Jin Yong Ming Pao 1959"),
    ("###", ""),
    ("## Instruction:", ""),
    ("The content of the question is:\nJin Yong Ming Pao 1959", "Jin Yong Ming Pao 1959"),  # SmolLM2's lead-in
    ("Here is the query:", ""),
    ("Question: Jin Yong Ming Pao 1959", "Jin Yong Ming Pao 1959"),  # an echoed label, recorded from SmolLM2
])
def test_clean_query_drops_labels_fences_and_quotes(reply, expected):
    assert clean_query(reply) == expected


@pytest.mark.parametrize("reply, problem", [
    ("### Instruction:", "echoes the prompt's labels"),
    ("", "is empty"),
    (" ".join(["Jin"] * (MAX_QUERY_WORDS + 1)), "words long"),
    (QUESTION, "copies the prompt"),
    ("He co-founded the newspaper Ming Pao in Hong Kong in 1959.", "copies the prompt"),
    # SmolLM2's queries in a rat-step run (issue 9's review): B.2's instruction read back
    ("This summarization will be used as a query to search with Bing results.", "repeats the prompt's instruction"),
    ("I wanted to verify the content correctness of the given question, especially the final sentences.",
     "repeats the prompt's instruction"),
    ("I will summarize the content with short yet clear sentences.", "talks about the task"),  # SmolLM2's, rat
])
def test_a_query_that_is_not_one_falls_back_to_the_step(reply, problem):
    query, why = choose_query(reply, STEP, question=QUESTION, content=STEP)
    assert problem in why
    assert query == step_query(STEP) == "He co-founded the newspaper Ming Pao in Hong Kong in 1959."


def test_a_good_query_is_kept_as_written():
    assert choose_query("Jin Yong Ming Pao founding", STEP, question=QUESTION, content=STEP) == (
        "Jin Yong Ming Pao founding", "")
    assert choose_query("Jin Yong search engine query", STEP, question=QUESTION, content=STEP) == (
        "Jin Yong search engine query", ""), "words of B.2, not its lines"
    engines = "Describe the history of web search engines."  # a task whose topic is in B.2's words
    query = "history of the search engine Bing and its query syntax"
    assert choose_query(query, "Bing launched in 2009.", question=engines, content="Bing launched in 2009.") == (
        query, ""), "words of B.2, not its lines"


async def test_rat_searches_the_steps_words_and_says_why(web):
    model = FakeModel().queue(
        "Jin Yong was born in Haining in 1924 to a scholarly family.\n\n" + STEP,  # the draft
        "### Instruction:",  # step 1's query: a label
    )
    model.reply(lambda body: "Jin Yong Ming Pao")  # every later call: step 2's query, the revisions
    events = await run_method("rat", Task(QUESTION), method_context(model, web, k=1))
    queries = [e.query for e in events if isinstance(e, QueryMade)]
    assert queries[0] == "Jin Yong was born in Haining in 1924 to a scholarly family."
    assert queries[1] == "Jin Yong Ming Pao"
    notes = [e for e in events if isinstance(e, Note) and e.i == 1 and "query" in e.text]
    assert len(notes) == 1 and "'### Instruction:'" in notes[0].text and "step's own words" in notes[0].text


def test_the_steps_words_leave_out_an_echoed_prompt_label():
    # SmolLM2's draft began "Question: <the task>" (tests/recorded/smollm2_queries.json): the label was searched
    step = "Question: Which version of Mercurial was the first to support Python 3?\nMercurial 5.2 was."
    assert step_query(step) == "Which version of Mercurial was the first to support Python 3?"
