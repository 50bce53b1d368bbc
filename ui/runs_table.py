"""Stored runs as the History table shows them: one row per run."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from core.text.oneline import short

if TYPE_CHECKING:  # pragma: no cover
    from data.store import RunRow


HISTORY_HEADERS = ["run", "task", "method", "date", "status", "sourced", "cited", "tokens", "time"]


def history_rows(runs: Iterable[RunRow]) -> list[list]:
    """One row per run for the History table; "sourced" is the steps checked against retrieved
    text out of the steps, with the revisions the guards refused; "cited" the finished article's
    sentences a source supports out of its sentences, with the model's marks removed."""
    return [[r.id, short(r.task, 80), r.method, when(r.created), str(r.status), _sourced(r), cited_cell(r),
             f"{r.tokens:,}", f"{r.wall_seconds or 0:.1f} s"] for r in runs]


def history_text(runs: Iterable[RunRow]) -> str:
    """The History table as plain text for a terminal (``python app.py history``): a header line
    (``HISTORY_HEADERS``), then ``history_rows``, in aligned columns; tokens and time right-aligned."""
    table = [HISTORY_HEADERS, *([str(cell) for cell in row] for row in history_rows(runs))]
    widths = [max(len(row[i]) for row in table) for i in range(len(HISTORY_HEADERS))]
    right = {HISTORY_HEADERS.index("tokens"), HISTORY_HEADERS.index("time")}
    return "\n".join("  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                                for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                      for row in table)


def cited_cell(run: RunRow) -> str:
    """'7/9' (sentences cited / sentences), with ', 1 mark removed'; empty for a run that has not
    finished, or was stored before citations were counted."""
    if not run.sentences:
        return ""
    removed = run.marks_removed
    extra = f", {removed} mark{'s' if removed != 1 else ''} removed" if removed else ""
    return f"{run.sentences_cited}/{run.sentences}{extra}"


def _sourced(run: RunRow) -> str:
    if not run.steps_total:
        return ""
    refused = f", {run.steps_guarded} refused" if run.steps_guarded else ""
    return f"{run.steps_sourced}/{run.steps_total}{refused}"


def when(stamp: str) -> str:
    """An ISO time stamp as local "YYYY-MM-DD HH:MM"."""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return stamp or ""
