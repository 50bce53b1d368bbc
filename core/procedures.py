"""AAG's procedural memory (paper 002, section 3.1): a store of procedures, each an input, an
output and a list of steps, searched with BM25.

002 embeds each procedure (input, output and steps together) with a sentence encoder and ranks by
cosine similarity; we rank the same text with the BM25 of ``core.passages.rank_passages`` (no
model to download). A procedure that shares no word with the query scores zero and is not
returned.

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

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core import prompts
from common.errors import StoreError, TaskError
from common.events import DraftReady
from core.passages import count_tokens, rank_passages
from common.types import Passage
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
    def from_row(cls, row: dict) -> "Procedure":
        return cls(id=row["id"], input=row["input"], output=row["output"], steps=tuple(row["steps"]),
                   source=row.get("source", ""), run_id=row.get("run_id"))


class ProcedureMemory:
    """The procedures of one store, searched with BM25. The index is rebuilt when the table
    changes (checked on every search)."""

    def __init__(self, store):
        self.store = store
        self._state: tuple[int, int] | None = None
        self._procedures: list[Procedure] = []

    # -- reading -----------------------------------------------------------------------------
    def count(self) -> int:
        return table.state(self.store)[0]

    def recent(self, *, limit: int = 50, offset: int = 0) -> list[Procedure]:
        """The newest procedures first."""
        return [Procedure.from_row(r) for r in table.list_procedures(self.store, limit=limit, offset=offset)]

    def search(self, query: str, k: int = 3) -> list[Procedure]:
        """The ``k`` procedures most relevant to ``query`` (BM25 over input, output and steps),
        best first, with ``score`` set; those scoring zero are left out."""
        self._refresh()
        if not self._procedures or k <= 0:
            return []
        by_url = {p.url: p for p in self._procedures}
        ranked = rank_passages(query, [Passage(text=p.text(limit=10**9), url=p.url) for p in self._procedures])
        hits = []
        for passage in ranked:
            if passage.score <= 0 or len(hits) >= k:
                break
            proc = by_url[passage.url]
            hits.append(Procedure(proc.id, proc.input, proc.output, proc.steps, proc.source, proc.run_id,
                                  round(passage.score, 4)))
        return hits

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
        if run["status"] != "done" or not (run["final_text"] or "").strip():
            raise TaskError(f"Run {run_id} has not finished (status {run['status']}); only a finished run "
                            "can become a procedure. `python app.py history` lists the runs.")
        steps: list[str] = []
        for event in self.store.events(run_id):
            if isinstance(event, DraftReady):
                steps = list(event.steps)  # a later (edited) draft replaces the first
        if not steps:
            steps = prompts.split_steps(run["final_text"])
        return self.add(run["task"], run["final_text"], steps, source="run", run_id=run_id)

    def import_jsonl(self, path: str | Path) -> tuple[int, int]:
        """Import procedures from a JSONL file; returns (added, already there). The whole file is
        checked before anything is stored. Raises TaskError naming the bad line and the fix, or
        StoreError when the file cannot be read."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"Cannot read {path}: {exc}.") from exc
        records = [(n, parse_procedure(line, where=f"{path} line {n}")) for n, line in enumerate(lines, start=1)
                   if line.strip()]
        if not records:
            raise TaskError(f"{path} has no procedures: write one JSON object per line, e.g. {EXAMPLE}.")
        added = existing = 0
        for _n, (input, output, steps, source) in records:
            _id, new = self.add(input, output, steps, source=source)
            added += new
            existing += not new
        return added, existing

    # -- internals ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        state = table.state(self.store)
        if state != self._state:
            self._procedures = [Procedure.from_row(r) for r in table.all_procedures(self.store)]
            self._state = state


EXAMPLE = '{"input": "flour, eggs, milk", "output": "pancakes", "steps": ["Whisk ...", "Fry ..."]}'


def parse_procedure(line: str, *, where: str) -> tuple[str, str, list[str], str]:
    """One JSONL line as (input, output, steps, source). Raises TaskError naming ``where`` and
    the fix."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TaskError(f"{where}: not valid JSON ({exc.msg}). Write one JSON object per line, e.g. {EXAMPLE}.") from None
    if not isinstance(record, dict):
        raise TaskError(f"{where}: expected a JSON object, got {type(record).__name__}. E.g. {EXAMPLE}.")
    source = "import"
    input = record.get("input")
    if input is None and "prompt" in record:  # a task-set line
        input, source = record.get("prompt"), "task"
    output = record.get("output")
    if output is None and isinstance(record.get("answers"), list) and record["answers"]:
        output = str(record["answers"][0])
    steps = record.get("steps", [])
    if isinstance(steps, str):
        steps = [s for s in steps.splitlines() if s.strip()]
    if not isinstance(input, str) or not input.strip():
        raise TaskError(f'{where}: "input" (or "prompt") must be a non-empty string. E.g. {EXAMPLE}.')
    if output is not None and not isinstance(output, str):
        raise TaskError(f'{where}: "output" must be a string. E.g. {EXAMPLE}.')
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        raise TaskError(f'{where}: "steps" must be a list of strings (or one string, a step per line). E.g. {EXAMPLE}.')
    steps = [s.strip() for s in steps if s.strip()]
    if not steps and not (output or "").strip():
        raise TaskError(f'{where}: a procedure needs "steps" or an "output". E.g. {EXAMPLE}.')
    return input.strip(), (output or "").strip(), steps, source
