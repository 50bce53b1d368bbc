"""Queries about the task (issue 25, item 4): a search query that shares no topical word with the
task or its step (markup, chat-template tokens, pleasantries, the instruction's own words) gives
way to the step's words, by one rule (core.text.prompts.off_topic over core.text.talk.topic_words);
a query that says the same as the task in other forms of its words is kept. And a revision that
talks about itself and keeps no word of the text it replaces is talk (core.text.talk.is_talk)."""

from __future__ import annotations

import pytest

from common.events import Note, QueryMade
from common.types import Task
from core.text.prompts import choose_query, off_topic, query_problem, step_query
from core.text.talk import is_talk, shares_topic, stem, topic_words
from tests.fakes.method_scripts import method_context, run_method
from tests.fakes.model import FakeModel

OFF_TOPIC = "shares no word with the task or the step"
#: What a base model (not instruction-tuned) searched in a real run of issue 25.
BASE_MODEL_QUERIES = [
    "[/INST]",
    "<b><i><u>Answer</u></i></b>",
    "Note: You are not required to describe any specific content in the answer.",
    "If you have any questions, please reply back!",
]
TASKS = [  # (task, step)
    ("Describe Jin Yong's life.", "Jin Yong co-founded the newspaper Ming Pao in Hong Kong in 1959."),
    ("Write a short history of Python 3 and its ecosystem.",
     "Python 3.0 was released in December 2008 and broke compatibility with Python 2."),
    ("Which version of Mercurial was the first to support Python 3?",
     "Mercurial 5.2 was the first release that could run on Python 3."),
]


@pytest.mark.parametrize("task, step", TASKS)
@pytest.mark.parametrize("reply", BASE_MODEL_QUERIES)
def test_the_base_models_queries_fall_back_to_the_steps_words(reply, task, step):
    query, why = choose_query(reply, step, question=task, content=step)
    assert why == OFF_TOPIC
    assert query == step_query(step)


@pytest.mark.parametrize("query, task, step", [
    # each shares with the task or the step no word as written, only another form of one
    ("who printed the first Bibles in Mainz", "Describe the invention of the printing press.",
     "Johannes Gutenberg's workshop made books with movable type."),
    ("what did Gutenberg invent", "Describe the invention of the printing press.",
     "The workshop in Mainz made books with movable type."),
    ("generative systems", "Write a survey paper to summarize the Retrieval-augmented Generation methods for Large "
     "Language Models.", ""),
    ("Confederate armies", "Summarize the American Civil War according to the timeline.",
     "Lee's army surrendered at Appomattox in 1865."),
    ("studies of radioactive elements", "Describe Marie Curie's life.", "She studied radioactivity in Paris."),
])
def test_a_query_in_other_words_of_the_task_or_step_is_kept(query, task, step):
    assert choose_query(query, step, question=task, content=step) == (query, "")


def test_the_words_of_the_step_count_as_well_as_the_tasks():
    task, step = "Describe Jin Yong's life.", "He co-founded the newspaper Ming Pao in Hong Kong in 1959."
    assert not off_topic("Ming Pao newspaper founding", question=task, step=step)
    assert off_topic("Ming Pao newspaper founding", question=task, step="")


def test_instruction_words_count_only_where_the_task_uses_them():
    step = "Jin Yong co-founded the newspaper Ming Pao."
    said = "The query should be short and clear enough for the search engine to find relevant language data."
    assert off_topic(said, question="Describe Jin Yong's life.", step=step), "B.2's own words read back"
    assert not off_topic("search engine ranking", question="Describe how a web search engine ranks pages.",
                         step=""), "a task about search engines"


def test_markup_and_template_tokens_hold_no_words():
    for token in ("[INST]", "[/INST]", "<|im_end|>", "<|eot_id|>", "<s>", "</s>", "<<SYS>>", "<b><i><u></u></i></b>"):
        assert topic_words(token) == set(), token
    assert topic_words("<b>Ming Pao</b>") == {"ming", "pao"}


def test_a_task_without_topical_words_never_makes_a_query_off_the_task():
    assert not off_topic("anything at all", question="Answer the question.", step="")


def test_scripts_without_spaces_are_compared_by_character():
    assert not off_topic("金庸 武侠小说", question="描述金庸的一生。", step="")
    assert off_topic("[/INST]", question="描述金庸的一生。", step="")


@pytest.mark.parametrize("a, b", [("printing", "printed"), ("print", "prints"), ("studies", "studied"),
                                  ("generation", "generative"), ("nation", "national"), ("press", "presses")])
def test_light_stemming_joins_the_forms_of_a_word(a, b):
    assert shares_topic({stem(a)}, {stem(b)})


@pytest.mark.parametrize("a, b", [("war", "warm"), ("art", "article"), ("life", "light")])
def test_short_or_different_words_stay_apart(a, b):
    assert not shares_topic({stem(a)}, {stem(b)})


def test_the_old_reasons_come_first():
    assert query_problem("", question="Describe Jin Yong's life.", content="", step="") != OFF_TOPIC
    assert query_problem("I will summarize the content with short yet clear sentences.",
                         question="Describe Jin Yong's life.", content="", step="") == "talks about the task"


async def test_rat_says_why_it_searched_the_steps_words(web):
    task = Task("Describe Jin Yong's life.")
    step = "Jin Yong co-founded the newspaper Ming Pao in Hong Kong in 1959."
    model = FakeModel().queue(step + "\n\nHe wrote fifteen wuxia novels between 1955 and 1972.",
                              "If you have any questions, please reply back!")
    model.reply(lambda body: "Jin Yong wuxia novels")  # step 2's query, the revisions
    events = await run_method("rat", task, method_context(model, web, k=1))
    queries = [e.query for e in events if isinstance(e, QueryMade)]
    assert queries == [step_query(step), "Jin Yong wuxia novels"]
    notes = [e.text for e in events if isinstance(e, Note) and e.i == 1 and "query" in e.text]
    assert len(notes) == 1 and OFF_TOPIC in notes[0] and "step's own words" in notes[0]


# -- a revision that talks about itself -------------------------------------------------------
STEP = "Jin Yong co-founded the newspaper Ming Pao in Hong Kong in 1959 and wrote its editorials."
#: From a real run: one of its four sentences matches the talk pattern, so the share rule let it pass.
SELF_TALK = ("I have revised the paragraph to make it more concise. The paragraphs remain unchanged. "
             "Output only response. Nothing else was needed.")


def test_a_revision_that_talks_about_itself_and_keeps_no_word_of_the_text_is_talk():
    assert not is_talk(SELF_TALK), "one talk sentence in four: the share rule alone lets it pass"
    assert is_talk(SELF_TALK, about=STEP)


@pytest.mark.parametrize("text, about", [
    ("The answer is Paris.", "The capital of France is Paris."),
    ("I have kept the dates. Ming Pao was founded in 1959 by Jin Yong. It printed his novels.", STEP),
    ("He said in 1999 that he had revised the novels. Readers noticed. Critics compared them.", STEP),
    (STEP + " He retired in 1993.", STEP),
])
def test_a_revision_about_the_text_is_not_talk(text, about):
    assert not is_talk(text, about=about)
