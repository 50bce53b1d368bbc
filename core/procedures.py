"""AAG's procedural memory (paper 002, section 3.1): a store of procedures, each an input, an
output and a list of steps, searched with BM25.

002 embeds each procedure (input, output and steps together) with a sentence encoder and ranks by
cosine similarity; we rank the same text with BM25 in SQLite FTS5 (``data.procedures.search``, no
model to download, no table loaded into memory). Stopwords are dropped from the query first
(``core.text.tokens.tokenize``); a procedure that shares no other word with it is not returned.

The memory is filled by the user:
- from a finished run (``add_from_run``): input = the task prompt, output = the final text,
  steps = the run's draft steps (its last DraftReady), else the final text's paragraphs;
- from an imported JSONL file (``import_jsonl``), one procedure per line:
  ``{"input": "...", "output": "...", "steps": ["...", "..."]}``; a task-set line
  (``{"prompt": "...", "steps": [...]}``, optional ``"answers"``) is read as a procedure whose
  input is the prompt (source "task");
- by hand (``add``).
No SQL here: the table's queries are in ``data.procedures``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from common.errors import TaskError
from common.events import DraftReady
from common.types import Passage
from core.jsonl import Record, read_jsonl
from core.text import prompts
from core.text.tokens import count_tokens, tokenize
from data import procedures as table

#: A procedure longer than this (an article kept as a run's output) is cut in prompts.
MAX_PROCEDURE_CHARS = 4000
URL_PREFIX = "memory://procedure/"


@dataclass(frozen=True)
class Procedure:
    id: int
    input: str
    output: str
    steps: tuple[str, ...]
    source: str = ""
    run_id: str | None = None
    score: float = 0.0

    @property
    def url(self) -> str:
        """Where a run's sources point for this procedure."""
        return f"{URL_PREFIX}{self.id}"

    @property
    def title(self) -> str:
        head = " ".join((self.input or self.output).split())
        return f"Procedure {self.id}: {head[:80]}" + ("…" if len(head) > 80 else "")

    def text(self, limit: int = MAX_PROCEDURE_CHARS) -> str:
        """The procedure as it is indexed and shown to the model."""
        lines = [f"Input: {self.input}", f"Output: {self.output}", "Steps:"]
        lines += [f"{n}. {step}" for n, step in enumerate(self.steps, start=1)]
        text = "\n".join(lines)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def passage(self) -> Passage:
        text = self.text()
        return Passage(text=text, url=self.url, title=self.title, score=self.score, tokens=count_tokens(text))

    def to_record(self) -> dict:
        return {"input": self.input, "output": self.output, "steps": list(self.steps)}

    @classmethod
    def from_row(cls, row: dict) -> Procedure:
        return cls(id=row["id"], input=row["input"], output=row["output"], steps=tuple(row["steps"]),
                   source=row.get("source", ""), run_id=row.get("run_id"), score=row.get("score", 0.0))


class ProcedureMemory:
    """The procedures of one store, searched with BM25 (the FTS5 index follows the table)."""

    def __init__(self, store):
        self.store = store

    # -- reading -----------------------------------------------------------------------------
    def count(self) -> int:
        return table.count(self.store)

    def recent(self, *, limit: int = 50, offset: int = 0) -> list[Procedure]:
        """The newest procedures first."""
        return [Procedure.from_row(r) for r in table.list_procedures(self.store, limit=limit, offset=offset)]

    def search(self, query: str, k: int = 3) -> list[Procedure]:
        """The ``k`` procedures most relevant to ``query`` (BM25 over input, output and steps),
        best first, with ``score`` set; those sharing no word but stopwords with it are left
        out. Raises StoreError when the memory cannot be read."""
        rows = table.search(self.store, " ".join(tokenize(query)), k)
        return [Procedure.from_row(row) for row in rows]

    def export_records(self) -> Iterator[dict]:
        """Every procedure as an importable JSONL record, oldest first."""
        for row in table.all_procedures(self.store):
            yield Procedure.from_row(row).to_record()

    # -- filling -----------------------------------------------------------------------------
    def add(self, input: str, output: str, steps: Iterable[str], *, source: str = "manual",
            run_id: str | None = None) -> tuple[int, bool]:
        """Store a procedure; returns (id, new). Raises TaskError when it has neither an
        output nor steps."""
        clean = [s.strip() for s in steps if s and s.strip()]
        if not (input or "").strip():
            raise TaskError("A procedure needs an input (the task or resources it starts from).")
        if not clean and not (output or "").strip():
            raise TaskError("A procedure needs steps or an output.")
        return table.add(self.store, input.strip(), (output or "").strip(), clean, source=source, run_id=run_id)

    def add_from_run(self, run_id: str) -> tuple[int, bool]:
        """A finished run as a procedure: input = task prompt, output = final text, steps = its
        draft steps, else its final text's paragraphs. Raises RunNotFound, or TaskError when
        the run has not finished."""
        run = self.store.get_run(run_id)
        if run.status != "done" or not run.final_text.strip():
            raise TaskError(f"Run {run_id} has not finished (status {run.status}); only a finished run "
                            "can become a procedure. `python app.py history` lists the runs.")
        steps: list[str] = []
        for event in self.store.events(run_id):
            if isinstance(event, DraftReady):
                steps = list(event.steps)  # a later (edited) draft replaces the first
        if not steps:
            steps = prompts.split_steps(run.final_text)
        return self.add(run.task, run.final_text, steps, source="run", run_id=run_id)

    def import_jsonl(self, path: str | Path) -> tuple[int, int]:
        """Import procedures from a JSONL file (read by ``core.jsonl.read_jsonl``: a byte order mark
        is skipped; a lone surrogate or a control character other than tab and line breaks is
        refused); returns (added, already there). The whole file is checked before anything is
        stored. Raises TaskError naming the bad line, the field and the fix, or the file that cannot
        be read or holds no procedure."""
        records = [record for _n, record in read_jsonl(path, ProcedureLine, EXAMPLE, TaskError, what="procedures")]
        added = existing = 0
        for r in records:
            _id, new = self.add(r.task_input, r.task_output, r.steps, source=r.source)
            added += new
            existing += not new
        return added, existing

EXAMPLE = '{"input": "flour, eggs, milk", "output": "pancakes", "steps": ["Whisk ...", "Fry ..."]}'
#: A procedure's input, output or step at most (a page of instructions, not a book), and its steps:
#: an import has no size cap else (issue 38, F33), and each procedure goes into prompts whole
MAX_PROCEDURE_CHARS = 20_000
MAX_PROCEDURE_STEPS = 200


class ProcedureLine(Record):
    """One line of a procedures file: ``input``, ``output``, ``steps`` (a list, or one string with
    a step per line); or a task-set line, whose ``prompt`` is the input and first ``answers``
    item the output (source "task")."""

    input: str | None = Field(None, description='a non-empty string (or give "prompt")')
    prompt: str | None = Field(None, description="a non-empty string")
    output: str | None = Field(None, description="a string")
    answers: Any = None
    steps: list[str] = Field([], description="a list of strings (or one string, a step per line)")

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        return [s for s in value.splitlines() if s.strip()] if isinstance(value, str) else value

    @field_validator("input", "prompt", "output")
    @classmethod
    def _capped(cls, value: str | None) -> str | None:
        if value is not None and len(value) > MAX_PROCEDURE_CHARS:
            raise ValueError(f"is {len(value):,} characters long; the limit is {MAX_PROCEDURE_CHARS:,}")
        return value

    @field_validator("steps")
    @classmethod
    def _steps_capped(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_PROCEDURE_STEPS:
            raise ValueError(f"has {len(value):,} steps; the limit is {MAX_PROCEDURE_STEPS:,}")
        long = next((k for k, s in enumerate(value, 1) if len(s) > MAX_PROCEDURE_CHARS), None)
        if long is not None:
            raise ValueError(f"item {long} is {len(value[long - 1]):,} characters long; the limit is "
                             f"{MAX_PROCEDURE_CHARS:,}")
        return value

    @model_validator(mode="after")
    def _complete(self) -> ProcedureLine:
        if not (self.task_input or "").strip():
            raise ValueError('"input" (or "prompt") must be a non-empty string')
        if not any(s.strip() for s in self.steps) and not (self.task_output or "").strip():
            raise ValueError('a procedure needs "steps" or an "output"')
        return self

    @property
    def source(self) -> str:
        return "import" if self.input is not None else "task"

    @property
    def task_input(self) -> str | None:
        return self.input if self.input is not None else self.prompt

    @property
    def task_output(self) -> str:
        if self.output is None and isinstance(self.answers, list) and self.answers:
            return str(self.answers[0])
        return self.output or ""
