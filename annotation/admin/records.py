"""The JSONL lines the arena imports, as pydantic models (errors through ``core.jsonl``'s one
adapter), and the reading of a whole file.

- ``votes import``: ``task`` (the task's text, or the id of a task in this database), optional
  ``prompt`` (the task's text, when ``task`` is only a name), ``method_a``, ``method_b``,
  ``winner`` (a, b, tie or both_bad; case, spaces and dashes forgiven), ``annotator``; optional
  ``output_a``/``output_b`` (the two texts), ``kind``, ``task_set``, ``created``, ``comment`` (the
  annotator's, at most 1,000 characters) and ``flag`` (a_broken, a_empty, a_off_task, b_broken,
  b_empty or b_off_task); ``created`` is an ISO date-time (as ``votes export`` writes it), kept as
  it is written. Optional ``correction``: the vote's newest correction, ``{"choice": a, b, tie,
  both_bad or void, "by": who, "why": why, "created": when}``, imported as a correction row of the
  imported vote (votes stay as cast).
  ``votes export`` writes the same fields, so export then import gives the same leaderboard.
- ``outputs import``: ``task``, ``method``, ``text``; optional ``task_set``, ``kind``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from annotation.errors import ImportFormatError
from common.types import KINDS, text_problem
from core.jsonl import Record, read_jsonl
from data import arena

VOTE_EXAMPLE = '{"task": "...", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ann"}'
OUTPUT_EXAMPLE = '{"task": "...", "method": "rat", "text": "..."}'
NON_EMPTY = "a non-empty string; add it to the line"
MAX_TEXT_CHARS = 500_000  # an output's text (about 100,000 words)
MAX_NAME_CHARS = 200  # a method's or an annotator's name


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError(f"must be {NON_EMPTY}")
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _capped(limit: int):
    def check(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"is {len(value):,} characters long; the limit is {limit:,}: shorten it")
        return value

    return check


def _iso_time(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"must be an ISO date-time such as 2025-01-31T09:30:00+00:00, not {value!r}") from None
    return value


Text = Annotated[str, AfterValidator(_non_empty), AfterValidator(_capped(MAX_TEXT_CHARS))]
Name = Annotated[str, AfterValidator(_non_empty), AfterValidator(_capped(MAX_NAME_CHARS))]
Time = Annotated[str, AfterValidator(_iso_time)]
ISO_TIME = "an ISO date-time such as 2025-01-31T09:30:00+00:00"


def _text_field(default: Any = ...) -> Any:
    return Field(default, description=NON_EMPTY)


class _TaskLine(Record):
    """The task fields of a line: its text (``prompt``, else ``task``), kind and task set."""

    kind: str | None = None
    task_set: str | None = Field(None, description="a string")

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str | None) -> str | None:
        if value and value not in KINDS:
            raise ValueError(f"must be one of {', '.join(KINDS)}, not {value!r}")
        return value

    def task_fields(self, prompt: str | None, task_id: int | None = None) -> dict:
        """``kind`` and ``task_set`` stay None when the line does not give them: the record then
        joins a task already stored with the same text, whatever its set (see data.arena)."""
        return {"prompt": prompt, "task_id": task_id, "kind": self.kind, "task_set": self.task_set}


class CorrectionLine(Record):
    """A vote's ``correction`` as ``votes export`` writes it."""

    choice: str = Field(description=f"one of {', '.join((*arena.CHOICES, arena.VOID))}")
    by: Name = _text_field()
    why: Annotated[str, AfterValidator(_non_empty)] = _text_field()
    created: Time | None = Field(None, description=ISO_TIME)

    @field_validator("choice")
    @classmethod
    def _choice(cls, value: str) -> str:
        if value not in (*arena.CHOICES, arena.VOID):
            raise ValueError(f"must be one of {', '.join((*arena.CHOICES, arena.VOID))}, not {value!r}")
        return value

    def to_record(self) -> dict:
        """The correction as ``data.arena.import_votes`` takes it."""
        return {"choice": self.choice, "by": self.by, "why": self.why, "created": self.created}


class VoteLine(_TaskLine):
    """One line of ``votes import``."""

    prompt: Text | None = _text_field(None)
    task: Any = Field(None, validate_default=True)
    method_a: Name = _text_field()
    method_b: Name = _text_field()
    winner: Any = Field(None, validate_default=True)
    annotator: Name = _text_field()
    output_a: Text | None = _text_field(None)
    output_b: Text | None = _text_field(None)
    created: Time | None = Field(None, description=ISO_TIME)
    correction: CorrectionLine | None = Field(None, description='an object: {"choice": ..., "by": ..., "why": ...}')
    comment: Annotated[str, AfterValidator(_capped(arena.MAX_COMMENT))] | None = Field(None, description="a string")
    flag: str | None = Field(None, description="a string")

    @field_validator("comment")
    @classmethod
    def _comment(cls, value: str | None) -> str | None:
        problem = text_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value or None

    @field_validator("flag")
    @classmethod
    def _flag(cls, value: str | None) -> str | None:
        if value and value not in arena.FLAGS:
            raise ValueError(f"must be one of {', '.join(arena.FLAGS)}, not {value!r}")
        return value or None

    @field_validator("task")
    @classmethod
    def _task(cls, value: Any, info) -> Any:
        """A task id (a whole number), or the task's text unless ``prompt`` gives it."""
        if info.data.get("prompt") is not None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"must be {NON_EMPTY}")
        return value

    @field_validator("winner")
    @classmethod
    def _winner(cls, value: Any) -> str:
        return parse_winner(value)

    @model_validator(mode="after")
    def _two_methods(self) -> VoteLine:
        if self.method_a == self.method_b:
            raise ValueError(f"method_a and method_b are both {self.method_a!r}; a vote compares two methods")
        return self

    def to_record(self, line: int) -> dict:
        """The record ``data.arena.import_votes`` takes."""
        if self.prompt is not None:
            fields = self.task_fields(self.prompt)
        elif isinstance(self.task, int):
            fields = self.task_fields(None, self.task)
        else:
            fields = self.task_fields(self.task)
        return {**fields, "line": line, "method_a": self.method_a, "method_b": self.method_b,
                "choice": self.winner, "annotator": self.annotator, "output_a": self.output_a,
                "output_b": self.output_b, "created": self.created, "comment": self.comment, "flag": self.flag,
                "correction": self.correction.to_record() if self.correction else None}


class OutputLine(_TaskLine):
    """One line of ``outputs import``."""

    task: Text = _text_field()
    method: Name = _text_field()
    text: Text = _text_field()

    def to_record(self, line: int) -> dict:
        """The record ``data.arena.import_outputs`` takes."""
        return {**self.task_fields(self.task), "method": self.method, "text": self.text}


def parse_winner(value: Any) -> str:
    """a, b, tie or both_bad (case, spaces and dashes forgiven). Raises ValueError."""
    choice = str(value).strip().lower().replace("-", "_").replace(" ", "_") if value is not None else ""
    if choice not in arena.CHOICES:
        raise ValueError(f"must be one of a, b, tie, both_bad, not {value!r}")
    return choice


def read_votes(path: str) -> list[dict]:
    """Every vote of a ``votes import`` file as ``data.arena.import_votes`` records.
    Raises ImportFormatError naming the line and the fix (also for an unreadable file)."""
    return _read(path, VoteLine, VOTE_EXAMPLE)


def read_outputs(path: str) -> list[dict]:
    """Every output of an ``outputs import`` file as ``data.arena.import_outputs`` records.
    Raises ImportFormatError naming the line and the fix (also for an unreadable file)."""
    return _read(path, OutputLine, OUTPUT_EXAMPLE)


def _read(path: str, model: type[VoteLine] | type[OutputLine], example: str) -> list[dict]:
    """The file's records (read by ``core.jsonl.read_jsonl``: a byte order mark is skipped).
    Raises ImportFormatError for an unreadable file, a bad line, or a file with no record at all."""
    return [record.to_record(n) for n, record in read_jsonl(path, model, example, ImportFormatError)]
