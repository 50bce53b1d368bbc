"""Token counts and the words text is compared by: one estimate of a text's tokens for every
budget (prompts, passages, usage a server did not report) and one tokenizer for BM25, citations
and procedures, in any script (words: ``core.text.segment``). No tokenizer model is loaded."""

from __future__ import annotations

import math

from core.text.segment import words

CHARS_PER_TOKEN = 4  # the usual rule of thumb for English text
BYTES_PER_TOKEN = 3  # and for the rest: a Chinese character (3 bytes of UTF-8) is about a token

STOPWORDS = frozenset(
    """a about an and are as at be but by for from has have he her his i if in into is it its
    of on or our she so than that the their them then there these they this to was we were what
    when where which who why will with would you your""".split()
)


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text``: one token per 4 ASCII characters and per 3 bytes of UTF-8
    of the others, rounded up.

    The usual rule of thumb for GPT-style tokenizers on English (about 1.3 tokens per word);
    it counts a little high for plain English prose, which is the safe side for a budget, and
    does not fall apart on URLs, code or languages with long words. Other scripts take more
    tokens per character: a Chinese or Japanese character (3 bytes) about one, a Cyrillic or
    Greek letter (2 bytes) a half or less; counting their bytes keeps them on the safe side too
    (4 characters of Chinese were one token)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_chars
    return math.ceil(ascii_chars / CHARS_PER_TOKEN + other_bytes / BYTES_PER_TOKEN)


def tokenize(text: str) -> list[str]:
    """The words BM25 compares: the lowercase words of ``text`` (``core.text.segment.words``:
    runs of letters and digits, cut into words in scripts written without spaces), stopwords
    removed."""
    return [word for word in words(text.lower()) if word not in STOPWORDS]
