"""Text on one line, cut to a width: for titles, labels and progress lines."""

from __future__ import annotations


def short(text: str, width: int = 90) -> str:
    """``text`` with its whitespace collapsed to single spaces, cut to ``width`` characters with
    an ellipsis when longer."""
    one = " ".join((text or "").split())
    return one if len(one) <= width else one[: width - 1] + "…"
