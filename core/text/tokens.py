"""Token counts and the words text is compared by: one estimate of a text's tokens for every
budget (prompts, passages, usage a server did not report) and one tokenizer for BM25, citations
and procedures. No tokenizer model is loaded."""

from __future__ import annotations

import math
import re

CHARS_PER_TOKEN = 4  # the usual rule of thumb for English text

#: A word: a run of letters and digits.
WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """a about an and are as at be but by for from has have he her his i if in into is it its
    of on or our she so than that the their them then there these they this to was we were what
    when where which who why will with would you your""".split()
)


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text``: one token per 4 characters, rounded up.

    The usual rule of thumb for GPT-style tokenizers on English (about 1.3 tokens per word);
    it counts a little high for plain English prose, which is the safe side for a budget, and
    does not fall apart on URLs, code or languages with long words."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def tokenize(text: str) -> list[str]:
    """The words BM25 compares: lowercase runs of letters and digits, stopwords removed."""
    return [word for word in WORD.findall(text.lower()) if word not in STOPWORDS]
