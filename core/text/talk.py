"""Talk about the task instead of the text: "I have made the requested changes", "I will
summarize the content". Real models, small ones most, answer with it; a revision that is talk is
refused (``core.text.guards``) and so is a search query (``core.text.prompts.query_problem``).

What a text is about is read from its topical words (:func:`topic_words`): the words left when
function words, words about asking and answering ("describe", "answer", "question", "note") and
markup or chat-template tokens ("<b>", "[/INST]", "<|im_end|>") are taken out, each reduced to a
light stem so that "printing", "printed" and "prints" are one word. A reply that shares none of
them with what it answers is not about it, whatever its shape."""

from __future__ import annotations

import re

from core.text import segment
from core.text.tokens import STOPWORDS

#: A sentence about the task rather than about the subject.
_TALK = re.compile(
    r"\b(?:i (?:have|'ve|had|will|'ll|would|made|revised|updated|added|changed|corrected|rewrote|removed|kept"
    r"|cannot|can't|can not|am unable|apologi[sz]e)"
    r"|as an ai|language model|the requested changes?|(?:your|the) (?:question|instruction|request)s?\b"
    r"|(?:revised|updated|original|given|provided|existing) (?:answer|text|paragraph|version|response|content)"
    r"|according to the (?:wiki|instructions?|content|passages?|text))"
    # the same in Chinese and Japanese, where no space marks a word's start
    r"|我(?:已经?|将|会|无法|不能)(?:修改|修订|更新|删除|添加|改写|重写|调整|保留|回答|总结)"
    r"|作为(?:一个)?(?:AI|人工智能|语言模型)|[您你]的(?:问题|要求|指示|请求)"
    r"|(?:修改|修订|更新|原始|给定|提供)(?:后)?的(?:段落|文本|答案|回答|版本|内容)"
    r"|(?:修正|変更|追加|削除|更新)しました|AIとして|ご(?:質問|要望|指示)", re.I)


def is_talk(text: str, *, about: str = "") -> bool:
    """True when at least half of the text's sentences talk about the task ("I have made the
    requested changes...") rather than about its subject; or, given ``about`` (the text a
    revision replaces), when one sentence does and the text shares no topical word with
    ``about`` ("I have revised the paragraph to make it more concise. The paragraphs remain
    unchanged. Output only response. Nothing else was needed.", one talk sentence in four): a
    revision of a text keeps some of its words, so one that keeps none and says what it did is
    about itself."""
    sentences = [s for line in text.split("\n") for s in segment.sentences(line) if re.search(r"\w", s)]
    if not sentences:
        return False
    talk = sum(bool(_TALK.search(s)) for s in sentences)
    if talk * 2 >= len(sentences):
        return True
    subject = topic_words(about)
    return bool(talk and subject) and not shares_topic(topic_words(text), subject)


#: Function words: they say nothing of a subject: BM25's stopwords (core.text.tokens) and more
#: of their kind, with greetings and pleasantries. With :data:`TASK_WORDS`, the words
#: :func:`topic_words` leaves out.
FUNCTION_WORDS = STOPWORDS | frozenset("""
    above after again against all also am any back because been before being below between both can
    cannot certainly could did do does doing done down during each either else even ever every feel few
    free further get gets glad got had happy having hello here hers herself hey hi him himself hope how
    however itself just kindly least less let lets like made make may me might more most much must my
    myself neither no nor not now off often ok okay once one only onto other others otherwise ours
    ourselves out over own per please quite rather really same shall should since some sorry still such
    sure thank thanks theirs themselves therefore those though through thus too under until up upon us
    very via way well whatever whenever whether while whoever whom whose within without yes yet yours
    yourself yourselves
""".split())

#: Words about asking and answering rather than about a subject: the verbs of a task ("describe
#: the life of ..."), the parts of a prompt and of a reply ("question", "answer", "note"). A task's
#: topic is what is left ("life", "Jin", "Yong"). Compared by :func:`stem`, so "describing" and
#: "notes" are left out too.
TASK_WORDS = frozenset("""
    answer ask assist brief clarify clear concise content describe description detail discuss example explain
    explanation following instruction mention note output paragraph provide question query regarding relevant
    reply respond response revise revision sentence specific statement step summarization summarize summary text
    topic write
""".split())

#: Markup and chat-template tokens: HTML/XML tags ("<b>", "</u>"), special tokens ("<|im_end|>",
#: "<s>", "<<SYS>>") and bracketed template tags ("[INST]", "[/INST]"). They hold no words.
_MARKUP = re.compile(r"<\|[^<>|]{0,40}\|>|<<\s*/?\w{1,20}\s*>>|</?[A-Za-z][^<>]{0,60}>|\[/?[A-Z_]{2,20}\]")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|\d{2,}")
#: Scripts written without spaces between words: each character is a word of its own.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f]")
STEM_CHARS = 7  # a stem's most characters: "generation" and "generative" are one word
_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("s", ""))


def stem(word: str) -> str:
    """A light stem of a lowercase word: one inflection taken off ("-ies", "-ied", "-ing", "-ed",
    a plural "-s" but not "-ss", "-us" or "-is") and everything past STEM_CHARS cut off.
    Only the words of a reply and of what it answers are compared, so a stem need not be a word."""
    for suffix, instead in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            word = word[: len(word) - len(suffix)] + instead
            break
    return word[:STEM_CHARS]


_TASK_STEMS = frozenset(stem(word) for word in TASK_WORDS)


def topic_words(text: str, *, also_ignore: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The stems of ``text``'s topical words: its words (numbers of two digits or more count;
    each character of a script written without spaces is a word) less single letters, markup
    and template tokens, :data:`FUNCTION_WORDS`, :data:`TASK_WORDS` and the stems in
    ``also_ignore``."""
    found: set[str] = set()
    for word in _WORD.findall(_MARKUP.sub(" ", text).lower()):
        if _UNSPACED.search(word):
            found.update(ch for ch in word if _UNSPACED.match(ch))
            continue
        base, _, ending = word.replace("’", "'").partition("'")
        if ending and ending != "s":  # "don't", "I'm", "we'll", "you've": a function word's contraction
            continue
        if len(base) > 1 and base not in FUNCTION_WORDS:
            found.add(stem(base))
    return found - _TASK_STEMS - also_ignore


def _same(a: str, b: str) -> bool:
    """Two stems of :func:`topic_words` are one word: equal, or one of four characters or more
    begins the other ("print" and "printer")."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return short == long or len(short) >= 4 and long.startswith(short)


def shares_topic(words: set[str], subject: set[str]) -> bool:
    """Whether two sets of :func:`topic_words` share a word (:func:`_same`)."""
    return bool(words & subject) or any(_same(a, b) for a in words for b in subject)


def kept_topic(before: str, after: str) -> float:
    """The share of ``before``'s topical words (its names, numbers and terms) that ``after``
    still holds (1.0 when ``before`` has none)."""
    subject, words = topic_words(before), topic_words(after)
    if not subject:
        return 1.0
    return sum(w in words or any(_same(w, x) for x in words) for w in subject) / len(subject)
