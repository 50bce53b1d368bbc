"""Guards on a model's revision, so that no reply can destroy the text it was asked to revise.

Real models, small ones most, answer a revision prompt with a preamble ("Here is the revised
answer:"), a postscript ("Let me know if..."), talk about the task instead of the text ("I have
made the requested changes to answer this question according to the WIKI."), or a fragment of
what they were given. ``guard_revision`` strips the chatter and refuses a reply that is empty, is
talk, keeps less than ``min_keep`` of the text's characters, or keeps almost none of its names,
numbers and terms (it is about something else): the text then stays as it stood
and the refused reply is kept (``Revision.rejected``) so the author can take it by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.text.fencing import echoed_heading
from core.text.prompts import tidy_reply
from core.text.segment import sentences
from core.text.talk import is_talk, kept_topic, shares_topic, topic_words

MIN_KEEP = 0.4  # the default share of characters a revision must keep (--min-keep)
#: A revision keeps the names, numbers and terms of the text it revises and adds to them: one
#: that keeps less than this share of them (of a text with at least MIN_TOPIC_WORDS) replaced the
#: text with something else. SmolLM2 answered a step about Python's first release with talk ("I'm
#: ready to revise the paragraph. ... **Note:** If you have more details ...") that mentioned
#: "Python" once: 4% of the step's words. Its used revisions on record keep 46-100%.
MIN_TOPIC_KEEP = 0.2
MIN_TOPIC_WORDS = 5

_OPENERS = r"(?:sure|certainly|of course|okay|ok|great|absolutely|alright)\b[^\n:]*?[.!,]"
_ANNOUNCE = (r"(?:here(?:'s| is| are)|below is|following is)\b[^\n]*?:"
             r"|(?:the\s+|my\s+)?(?:revised|updated|corrected|edited|final|improved|new)\s+"
             r"(?:answer|text|paragraph|version|response|article|step|content)(?:\s+[^\s:]+){0,3}?\s*:")
#: The same in Chinese and Japanese: "好的，", "以下是修改后的段落：", "はい、", "修正した文章："
_OPENERS_CJK = r"(?:好的|当然|没问题|はい|もちろん|承知しました)[^\n:：]{0,20}?[，,。！!、]"
_ANNOUNCE_CJK = (r"(?:以下是|下面是|这是|以下は)[^\n]{0,40}?[:：]"
                 r"|(?:修改|修订|更新|改写|润色)后的(?:段落|文本|答案|回答|内容|文章|版本)\s*[:：]"
                 r"|(?:修正|改訂|更新)(?:した|後の)(?:段落|文章|回答|テキスト)\s*[:：]")
#: What a reply may begin with before the text itself: "Sure!", "Here is the revised answer:",
#: "**Revised paragraph:**", "### Revised answer", "好的，以下是修改后的段落：", each at most once per pass.
_PREAMBLE = re.compile(rf"^\s*(?:[#>*_]+\s*)*(?:{_OPENERS}|{_ANNOUNCE}|{_OPENERS_CJK}|{_ANNOUNCE_CJK})"
                       r"\s*(?:[*_]+)?\s*", re.I)
_HEADING_ONLY = re.compile(r"^\s*#+\s*(?:revised|updated|final|improved)\s+\w+\s*:?\s*$", re.I)
#: A closing paragraph that talks to the reader rather than continuing the text.
_POSTSCRIPT = re.compile(r"^\s*[(*_]*\s*(?:note\b|i hope|hope this|let me know|feel free|if you (?:need|want|have)"
                         r"|this revision|in this revision|the revised (?:text|answer|version|paragraph)"
                         r"|i (?:have|'ve) (?:revised|updated|made|added|kept|corrected|rewritten)|changes made)",
                         re.I)


@dataclass(frozen=True)
class Revision:
    """What a step's text is after a revision call: ``text``; when the reply was refused,
    ``problem`` says why ("it is empty", ...) and ``rejected`` holds the reply as written."""

    text: str
    problem: str = ""
    rejected: str = ""
    kept: float = 1.0  # of a used revision: the share of the old text's characters it has (below 1: shorter)
    #: of a used revision: its sentences left out because they speak to the author, not of the subject
    #: (``drop_asides``)
    dropped: tuple[str, ...] = ()


#: Headings of our prompts under which a reply that reads the prompt back has the answer itself
#: ("##Answer:\n<text>"); what it repeats under the others (the instruction, the question, the
#: retrieved text, the answer so far) is the prompt, not the revision.
_ANSWER_HEADINGS = frozenset({"answer", "paragraph to revise", "current answer", "refined document"})


def strip_prompt_echo(reply: str) -> str:
    """The reply without the parts of the prompt it repeats: each line that repeats one of our
    prompts' headings is dropped, and so is what follows it up to the next such line, unless the
    heading is one the answer goes under (:data:`_ANSWER_HEADINGS`)."""
    kept, keeping = [], True
    for line in reply.split("\n"):
        label = echoed_heading(line)
        if label is None:
            if keeping:
                kept.append(line)
        else:
            keeping = label in _ANSWER_HEADINGS
    return "\n".join(kept)


#: A line that opens with a citation mark ("[1] 20 Years Ago: ...") reads our prompts' source label
#: back ("[n] Title — URL"): a mark supports what comes before it, and one that opens a line
#: supports nothing, so the mark is taken off (the line's words stay).
_LABEL_MARK = re.compile(r"^(\s*(?:[#>*_-]+\s*)?)\[\d{1,3}\]\s*", re.M)
#: A sentence addressed to the reader or the author: second person, or "please".
_ADDRESSED = re.compile(r"\b(?:you|your|yours|you've|you're|you'll|please)\b", re.I)


def drop_asides(before: str, text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` without the sentences that speak to the author instead of continuing the text,
    and those sentences. One rule: a sentence that was not in ``before``, is addressed to "you"
    (or says "please"), and shares no topical word (``core.text.talk.topic_words``) with
    ``before`` is about the exchange, not the subject ("You can remove the section from the
    answer to show how you've revised the paragraph.", "Please add your response as soon as
    possible after you've edited this paragraph so the next request can be made.", two
    sentences SmolLM2 put inside revised steps). A sentence for the reader about the subject
    ("You can still download Python 1.0 from python.org.") names the subject, and stays."""
    subject = topic_words(before)
    if not subject:
        return text, ()
    dropped: list[str] = []

    def keep(sentence: str) -> bool:
        aside = (_ADDRESSED.search(sentence) is not None and sentence.strip() not in before
                 and not shares_topic(topic_words(sentence), subject))
        if aside:
            dropped.append(sentence.strip())
        return not aside

    lines = []
    for line in text.split("\n"):
        kept = [x for x in sentences(line) if x.strip() and keep(x)]
        if kept or not line.strip():
            lines.append("".join(kept).rstrip())  # as written: a space between sentences where there was one
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), tuple(dropped)


def strip_chatter(reply: str) -> str:
    """The reply without the prompt it repeats (:func:`strip_prompt_echo`), an announcing
    preamble or a closing postscript. Never returns less than nothing: a reply that is all
    chatter comes back empty."""
    text = strip_prompt_echo(reply).strip()
    for _ in range(3):  # "Sure! Here is the revised answer:" is two openers
        lines = text.split("\n", 1)
        if _HEADING_ONLY.match(lines[0]):
            text = lines[1].strip() if len(lines) > 1 else ""
            continue
        stripped = _PREAMBLE.sub("", text, count=1).strip()
        if stripped == text:
            break
        text = stripped
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    while len(paragraphs) > 1 and _POSTSCRIPT.match(paragraphs[-1]):
        paragraphs.pop()
    return _LABEL_MARK.sub(r"\1", "\n\n".join(p.strip() for p in paragraphs))


def _below(share: float, limit: float) -> str:
    """``share`` as a percentage precise enough to read as below ``limit`` (39.6%, not 40%)."""
    for digits in range(4):
        shown = f"{share:.{digits}%}"
        if float(shown.rstrip("%")) < limit * 100:
            return shown
    return f"{share:.4%}"


def guard_revision(before: str, reply: str, *, min_keep: float = MIN_KEEP, cut: bool = False,
                   fresh: bool = False) -> Revision:
    """The text after a revision of ``before`` that the model answered with ``reply``: the
    reply without chatter, or ``before`` itself (with the problem and the refused reply) when
    the reply is empty, talks about the task, keeps less than ``min_keep`` of the characters
    of ``before``, was ``cut`` short by the token limit (its end is missing), or keeps less than
    MIN_TOPIC_KEEP of its names, numbers and terms (unless ``fresh``: a text written anew from
    the question, as ITRG's refresh writes each round, need not keep the last one's). With nothing
    before (a first answer), the reply is used as it is. A used revision's ``kept`` is the share
    of ``before``'s characters it has (capped at 1), for the note that it is shorter."""
    text = tidy_reply(strip_chatter(reply))
    if not before.strip():  # writing from nothing: there is no text to protect
        return Revision(text=text or tidy_reply(reply))
    said, (text, dropped) = text, drop_asides(before, text)
    problem = ""
    if not said:
        problem = "is empty" if not reply.strip() else "holds nothing but a preamble"
    elif not text or is_talk(text, about=before):
        problem = "talks about the task instead of revising the text"
    elif cut:
        problem = "was cut short at the token limit, so its end is missing (raise --max-tokens)"
    elif not fresh and len(topic_words(before)) >= MIN_TOPIC_WORDS and kept_topic(before, text) < MIN_TOPIC_KEEP:
        problem = (f"keeps {kept_topic(before, text):.0%} of the names, numbers and terms of the text it replaces "
                   f"(a revision keeps at least {MIN_TOPIC_KEEP:.0%}): it is about something else")
    had = len(before.strip())
    share = len(text) / had
    if not problem and share < min_keep:
        problem = (f"keeps {_below(share, min_keep)} of the text it replaces ({len(text):,} of {had:,} "
                   f"characters; a revision must keep at least {min_keep:.0%}, see --min-keep)")
    if problem:
        return Revision(text=before, problem=problem, rejected=reply.strip())
    return Revision(text=text, kept=min(share, 1.0), dropped=dropped)
