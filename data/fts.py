"""What the SQLite FTS5 indexes share (the local corpus, ``data.corpus``, and the procedure
memory, ``data.procedures``): turning free user text into a query FTS5 cannot misread."""

from __future__ import annotations

import re

#: Words of a query beyond this many are dropped (a pasted paragraph stays a fast query).
MAX_QUERY_TOKENS = 32

_TOKEN = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: every word is quoted (so ``C++ "foo`` or
    ``NEAR(`` cannot be read as FTS syntax) and the words are OR-ed, so BM25 ranks rows by
    how many of the words they hold and how rare those are. A word is kept once, whatever its
    case. Returns "" when there is no word."""
    tokens: list[str] = []
    seen: set[str] = set()
    for token in _TOKEN.findall(text):
        if token.lower() not in seen:
            seen.add(token.lower())
            tokens.append(token)
    return " OR ".join(f'"{t}"' for t in tokens[:MAX_QUERY_TOKENS])
