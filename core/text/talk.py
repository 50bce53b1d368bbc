"""Talk about the task instead of the text: "I have made the requested changes", "I will
summarize the content". Real models, small ones most, answer with it; a revision that is talk is
refused (``core.text.guards``) and so is a search query (``core.text.prompts.query_problem``)."""

from __future__ import annotations

import re

#: A sentence about the task rather than about the subject.
_TALK = re.compile(
    r"\b(?:i (?:have|'ve|had|will|'ll|would|made|revised|updated|added|changed|corrected|rewrote|removed|kept"
    r"|cannot|can't|can not|am unable|apologi[sz]e)"
    r"|as an ai|language model|the requested changes?|(?:your|the) (?:question|instruction|request)s?\b"
    r"|(?:revised|updated|original|given|provided|existing) (?:answer|text|paragraph|version|response|content)"
    r"|according to the (?:wiki|instructions?|content|passages?|text))", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def is_talk(text: str) -> bool:
    """True when at least half of the text's sentences talk about the task ("I have made the
    requested changes...") rather than about its subject."""
    sentences = [s for s in _SENTENCE.split(text) if re.search(r"\w", s)]
    if not sentences:
        return False
    talk = sum(bool(_TALK.search(s)) for s in sentences)
    return talk * 2 >= len(sentences)
