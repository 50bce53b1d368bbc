"""Prompts. B.1-B.3 are RAT's, from appendix B of paper 001, word for word except for the
placeholders (the paper writes "/n/n" for a blank line; we keep its text and also split on
"/n/n" in case a model copies it literally). Prompts that are ours say so.

Retrieved text is data: it goes into a fenced block labelled with its source (see
core.passages.format_passages), never into the instruction part of a prompt.
"""

from __future__ import annotations

import re

from common.types import Task

# Prompt B.1 (001, appendix B): initial step-by-step answer.
DRAFT = """##Question:
{question}

##Instruction:
Try to answer this question/instruction with step-by-step thoughts and make the answer more structural.
Use /n/n to split the answer into several paragraphs.
Just respond to the instruction directly. DO NOT add additional explanations or introducement in the answer unless you are asked to."""

# Prompt B.2 (001, appendix B): open-search query from the question and the draft so far.
QUERY = """##Question:
{question}

##Content:
{answer}

##Instruction:
I want to verify the content correctness of the given question, especially the last sentences.
Please summarize the content with the corresponding question.
This summarization will be used as a query to search with Bing search engine.
The query should be short but need to be specific to promise Bing can find related knowledge or pages.
You can also use search syntax to make the query short and clear enough for the search engine to find relevant language data.
Try to make the query as relevant as possible to the last few sentences in the content.
IMPORTANT
Just output the query directly. DO NOT add additional explanations or introducement in the answer unless you are asked to."""

# Prompt B.3 (001, appendix B): revise the answer so far against retrieved text.
REVISE = """##Existing Text in Wiki Web:
{content}

##Question:
{question}

##Answer:
{answer}

##Instruction:
I want to revise the answer according to retrieved related text of the question in WIKI pages.
You need to check whether the answer is correct.
If you find some errors in the answer, revise the answer to make it better.
If you find some necessary details are ignored, add it to make the answer more plausible according to the related text.
If you find the answer is right and do not need to add more details, just output the original answer directly.
**IMPORTANT**
Try to keep the structure (multiple paragraphs with its subtitles) in the revised answer and make it more structural for understanding.
Split the paragraphs with /n/n characters.
Just output the revised answer directly. DO NOT add additional explanations or announcement in the revised answer unless you are asked to."""

# Ours (RAT step-scope, DESIGN.md): B.3 narrowed to one step. The steps already revised are
# shown as read-only context so the model keeps continuity, but it rewrites only the current
# step, so output tokens grow with the article instead of with its square.
REVISE_STEP = """##Existing Text in Wiki Web:
{content}

##Question:
{question}

##Answer so far (already revised, read-only):
{context}

##Paragraph to revise:
{step}

##Instruction:
I want to revise the paragraph above according to retrieved related text of the question in WIKI pages.
You need to check whether the paragraph is correct, given the question and the answer so far.
If you find some errors in the paragraph, revise it to make it better.
If you find some necessary details are ignored, add them to make the paragraph more plausible according to the related text.
If you find the paragraph is right and does not need more details, just output it unchanged.
**IMPORTANT**
Output only the revised paragraph (it may keep its subtitle), not the answer so far.
Do not repeat what the answer so far already says.
Just output the revised paragraph directly. DO NOT add additional explanations or announcement unless you are asked to."""


# Ours: QA tasks (kind "qa") are scored by exact match and F1 on a short answer (core.batch),
# so every method asks for one on its last line, as ITRG's answer step does (003, 3.3: a short
# answer generated after the document).
QA_INSTRUCTION = (
    "This question has a short answer (a name, a date, a number or a few words). "
    'End your reply with a last line of the form "Answer: <the short answer>".'
)

def question_for(task: Task) -> str:
    """The task prompt as the methods put it in their prompts: QA tasks get the short-answer
    instruction appended."""
    if task.kind == "qa":
        return f"{task.prompt}\n\n{QA_INSTRUCTION}"
    return task.prompt


_SPLIT = re.compile(r"(?:\r?\n[ \t]*){2,}|(?:\s*/n/n\s*)+")


def split_steps(text: str) -> list[str]:
    """Split a draft into steps on blank lines (and on a literal "/n/n", which prompt B.1
    invites a model to copy)."""
    return [part.strip() for part in _SPLIT.split(text) if part and part.strip()]


def join_steps(steps: list[str]) -> str:
    return "\n\n".join(s.strip() for s in steps if s.strip())


def normalise_answer(text: str) -> str:
    """A revision as the model wrote it, with literal "/n/n" turned into blank lines."""
    return join_steps(split_steps(text))


_QUERY_LABEL = re.compile(r"^\s*(?:\*\*)?(?:search\s+)?query(?:\*\*)?\s*[:\-]\s*", re.I)


def clean_query(text: str, limit: int = 300) -> str:
    """The first non-empty line of a model's query, without a "Query:" label or quotes."""
    for line in text.strip().splitlines():
        line = _QUERY_LABEL.sub("", line).strip().strip('`"\'“”').strip()
        if line:
            return line[:limit]
    return ""
