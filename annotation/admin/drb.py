"""DeepResearch Bench's report format, both ways (Ayanami0730/deep_research_bench).

A system's reports are one JSONL file, ``data/test_data/raw_data/<model>.jsonl``, one line a task:
``{"id": 1, "prompt": "...", "article": "..."}``. The bench finds a report by ``id`` for FACT (the
citation check: ``utils/extract.py`` maps each id to its task's language from
``data/prompt_data/query.jsonl``, and skips a line without one) and by ``prompt`` for RACE
(``deepresearch_bench_race.py`` keys the target articles by prompt). ``article`` is Markdown with
[n] marks and a reference list, "[n] URL - title" lines under "References" or "参考文献："
(``core.article.markdown.bench_article``).

- :func:`export_lines`: the newest finished run of a method on each task, as such lines
  (``dataset export FILE --format drb --method M``); the id is the bench's, kept by ``batch``
  in the task's meta, else the task's own.
- :func:`read_reports`: such a file as ``data.arena.import_outputs`` records of one method
  (``outputs import FILE --format drb --method NAME``), each joined to the task with its prompt
  (created when missing), with ``outputs import``'s checks and one-line errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from annotation.admin.records import MAX_NAME_CHARS, NON_EMPTY, Text
from annotation.errors import ArenaError, ImportFormatError
from core.article.markdown import bench_article
from core.batch import ALL_RUNS, FINISHED
from core.jsonl import LineId, Record, read_jsonl
from core.text import language
from data.versions import LATEST

FORMAT = "drb"
EXAMPLE = '{"id": 1, "prompt": "...", "article": "... [1]\\n\\nReferences\\n[1] https://... - title"}'


class ReportLine(Record):
    """One line of a bench report file (``raw_data/<model>.jsonl``)."""

    id: LineId = Field(None, description="a string or a whole number (the bench's task id)")
    prompt: Text = Field(description=NON_EMPTY)
    article: Text = Field(description=NON_EMPTY)


def read_reports(path: str | Path, method: str) -> list[dict]:
    """Every report of the bench file ``path`` as an output of ``method`` (records for
    ``data.arena.import_outputs``): its task is the stored one with the same prompt, whatever its
    set (created when none has it). Raises ImportFormatError naming the line and the fix (also for
    an unreadable file or one without a report), ArenaError for a bad ``--method``."""
    method = check_method(method)
    return [{"prompt": r.prompt.strip(), "kind": None, "task_set": None, "method": method, "text": r.article}
            for _, r in read_jsonl(path, ReportLine, EXAMPLE, ImportFormatError, what="reports")]


def check_method(method: str | None) -> str:
    """``method`` stripped. Raises ArenaError naming --method when it is empty or too long."""
    name = (method or "").strip()
    if not name:
        raise ArenaError("--format drb needs --method NAME: the method (system) the reports are outputs of.")
    if len(name) > MAX_NAME_CHARS:
        raise ArenaError(f"--method is {len(name):,} characters long; the limit is {MAX_NAME_CHARS:,}.")
    return name


def export_lines(store, authoring, method: str, *, task_set: str | None = None) -> Iterator[dict]:
    """One bench line per task (oldest task first) that has a finished run of ``method`` (of
    ``task_set``, if given): the newest such run's article (the author's latest version, read
    through ``authoring.article``: core.authoring, the one door) as ``bench_article`` writes it,
    its reference heading in the task's language (its meta's, else detected)."""
    newest: dict[int, Any] = {}
    for run in store.list_runs(method=method, limit=ALL_RUNS):  # newest first
        if run.status in FINISHED and (task_set is None or run.task_set == task_set):
            newest.setdefault(run.task_id, run)
    for task_id in sorted(newest):
        run = newest[task_id]
        meta = dict(store.get_task(task_id).meta or {})
        lang = meta.get("language") or language.detect(run.task) or language.ENGLISH
        bench_id = meta.get("id")
        yield {"id": task_id if bench_id is None else bench_id, "prompt": run.task,
               "article": bench_article(authoring.article(run.id, LATEST), lang)}


def write_lines(lines: Iterator[dict], path: str | Path, method: str) -> int:
    """Write ``lines`` to the new file ``path`` as JSONL (UTF-8, non-ASCII as it is, as the bench's
    own files). Returns how many. Raises ArenaError when ``path`` exists, cannot be written, or
    there is nothing to write (no finished run of ``method``)."""
    target = Path(path)
    if target.exists():
        raise ArenaError(f"{target} exists: give `dataset export --format drb` a new file name.")
    rows = list(lines)
    if not rows:
        raise ArenaError(f"Nothing to export: no finished run of method {method!r}. Run it first, e.g. "
                         f"python app.py batch query.jsonl --methods {method}.")
    try:
        with target.open("x", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ArenaError(f"Cannot write {target}: {exc.strerror or exc}. Give a file you may write to.") from exc
    return len(rows)
