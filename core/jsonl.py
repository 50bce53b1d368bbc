"""Reading JSONL files of tasks, outputs, votes and procedures: one JSON object a line, each
checked by a pydantic model.

``read_records`` parses the lines and validates each object with the caller's model;
``line_error`` is the one adapter that turns what went wrong (a ``json.JSONDecodeError``, a line
that is not an object, a pydantic ``ValidationError``) into one line for the user:

    tasks.jsonl line 2: "kind" must be one of writing, plan, qa, not 'essay'; e.g. {"prompt": ...}

A field error reads ``"field" problem``: the model's validators raise ``ValueError`` with the
problem ("must be one of ..."); for pydantic's own errors (a missing key, a wrong type) the
problem is ``must be`` + the field's ``description`` (what the field holds), else pydantic's
message. A model-level validator's message is used as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from common.errors import RatStudioError

M = TypeVar("M", bound=BaseModel)


class Record(BaseModel):
    """Base of the JSONL line models: keys we do not know are ignored, fields are not coerced
    across types (a number is not a string)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def read_records(lines: Iterable[str], name: str, model: type[M], example: str,
                 error: type[RatStudioError]) -> Iterator[tuple[int, M]]:
    """(line number, validated record) of each non-blank line. Raises ``error`` with the message
    of ``line_error`` at the first bad line."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise TypeError(type(obj).__name__)
            record = model.model_validate(obj)
        except (json.JSONDecodeError, TypeError, ValidationError) as exc:
            raise error(line_error(name, n, exc, example, model)) from exc
        yield n, record


def line_error(name: str, n: int, exc: Exception, example: str, model: type[BaseModel] | None = None) -> str:
    """One line naming the file, the line, the field and the problem, and an example of a good
    line: "FILE line N: "field" problem; e.g. EXAMPLE". ``exc`` is a JSONDecodeError, a
    TypeError (the line is valid JSON but not an object; its message is the type's name) or
    a pydantic ValidationError (its first error is named)."""
    where = f"{name} line {n}"
    if isinstance(exc, json.JSONDecodeError):
        return (f"{where}: not valid JSON ({exc.msg}, column {exc.colno}); write one JSON object per line, "
                f"e.g. {example}")
    if isinstance(exc, TypeError):
        return f"{where}: expected a JSON object, got {exc}; e.g. {example}"
    if isinstance(exc, ValidationError):
        return f"{where}: {_problem(exc.errors(include_url=False)[0], model)}; e.g. {example}"
    return f"{where}: {exc}; e.g. {example}"


def _problem(err: dict, model: type[BaseModel] | None) -> str:
    """What one pydantic error says, in our words."""
    field = next((str(part) for part in err["loc"] if isinstance(part, str)), None)
    own = err["type"] == "value_error"
    text = str(err["ctx"]["error"]) if own else err["msg"][:1].lower() + err["msg"][1:]
    if field is None:
        return text
    if not own and model is not None and field in model.model_fields:
        described = model.model_fields[field].description
        if described:
            text = f"must be {described}"
    return f'"{field}" {text}'
