"""Reading JSONL files of tasks, outputs, votes and procedures: one JSON object a line, each
checked by a pydantic model.

``read_records`` parses the lines and validates each object with the caller's model;
``line_error`` is the one adapter that turns what went wrong (a ``json.JSONDecodeError``, a line
that is not an object, a pydantic ``ValidationError``) into one line for the user:

    tasks.jsonl line 2: "kind" must be one of writing, plan, qa, not 'essay'; e.g. {"prompt": ...}

A field error reads ``"field" problem``: the model's validators raise ``ValueError`` with the
problem ("must be one of ..."); for pydantic's own errors (a missing key, a wrong type) the
problem is ``must be`` + the field's ``description`` (what the field holds), else pydantic's
message. A model-level validator's message is used as it is. A field of a nested model is named
with a dot: ``"correction.choice"``.

Before any model sees a line, every string in it is checked (``common.types.text_problem``): a
lone surrogate (a JSON-escaped ``"\ud800"``, which no UTF-8 file or database can hold) or a
control character other than tab and line breaks (``"\u0000"``, ``"\u0007"``) is refused for
every file alike, naming the field (and the item of a list):

    procedures.jsonl line 3: "steps" item 2 holds a control character (U+0000) at character 4; remove it.

``read_jsonl`` reads a whole file for the commands that import one (votes, outputs, procedures,
batch tasks): UTF-8 with or without a byte order mark, lines split at line breaks only.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from common.errors import RatStudioError
from common.types import text_problem

M = TypeVar("M", bound=BaseModel)


class Record(BaseModel):
    """Base of the JSONL line models: keys we do not know are ignored, fields are not coerced
    across types (a number is not a string)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def _text_or_whole(value: Any) -> Any:
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"must be a string or a whole number, not {json.dumps(value)}")


#: A line's own id, as a bench or a task file writes it: a string or a whole number (None: none
#: given); a float, a bool, a list or an object is refused with that message.
LineId = Annotated[Any, AfterValidator(_text_or_whole)]


def read_records(lines: Iterable[str], name: str, model: type[M], example: str,
                 error: type[RatStudioError]) -> Iterator[tuple[int, M]]:
    """(line number, validated record) of each non-blank line, its strings checked first
    (``check_text``). Raises ``error`` with the message of ``line_error`` at the first bad line."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise TypeError(type(obj).__name__)
            check_text(obj)
            record = model.model_validate(obj)
        except (json.JSONDecodeError, TypeError, ValidationError, BadText) as exc:
            raise error(line_error(name, n, exc, example, model)) from exc
        except RecursionError:  # "[[[[...]]]]" deeper than Python's parser goes: one line, not a traceback
            raise error(f"{name} line {n}: nested too deeply to read (a line is one flat JSON object); "
                        f"e.g. {example}") from None
        yield n, record


def line_error(name: str, n: int, exc: Exception, example: str, model: type[BaseModel] | None = None) -> str:
    """One line naming the file, the line, the field and the problem, and an example of a good
    line: "FILE line N: "field" problem; e.g. EXAMPLE". ``exc`` is a JSONDecodeError, a
    TypeError (the line is valid JSON but not an object; its message is the type's name),
    a BadText (its message names the field and says the fix: no example follows) or a pydantic
    ValidationError (its first error is named)."""
    where = f"{name} line {n}"
    if isinstance(exc, json.JSONDecodeError):
        return (f"{where}: not valid JSON ({exc.msg}, column {exc.colno}); write one JSON object per line, "
                f"e.g. {example}")
    if isinstance(exc, BadText):
        return f"{where}: {exc}"
    if isinstance(exc, TypeError):
        return f"{where}: expected a JSON object, got {exc}; e.g. {example}"
    if isinstance(exc, ValidationError):
        return f"{where}: {_problem(exc.errors(include_url=False)[0], model)}; e.g. {example}"
    return f"{where}: {exc}; e.g. {example}"


def _problem(err: dict, model: type[BaseModel] | None) -> str:
    """What one pydantic error says, in our words."""
    names, info = _field(err["loc"], model)
    own = err["type"] == "value_error"
    text = str(err["ctx"]["error"]) if own else err["msg"][:1].lower() + err["msg"][1:]
    if not names:
        return text
    if not own and info is not None and info.description:
        text = f"must be {info.description}"
    return f'"{".".join(names)}" {text}'


def _field(loc: tuple, model: type[BaseModel] | None) -> tuple[list[str], Any]:
    """The field names along a pydantic error's ``loc`` (descending into nested models; list
    indices and union members left out) and the innermost field's FieldInfo; without a model,
    the first name and None."""
    if model is None:
        return [str(part) for part in loc if isinstance(part, str)][:1], None
    names: list[str] = []
    info = None
    for part in loc:
        if model is not None and isinstance(part, str) and part in model.model_fields:
            names.append(part)
            info = model.model_fields[part]
            model = _nested_model(info.annotation)
    return names, info


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``Model`` or ``Model | None``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        return next((m for m in map(_nested_model, get_args(annotation)) if m is not None), None)
    return None


# -- the text every line may hold --------------------------------------------------------------
#: What ``text_problem`` refuses; searched first (in C) so that long texts cost little.
_SUSPECT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class BadText(ValueError):
    """A string in a line holds a lone surrogate or a control character; the message names the
    field: ``"steps" item 2 holds a control character (U+0000) ...``."""


def check_text(obj: dict) -> None:
    """Check every string value of a parsed line, at any depth. Raises BadText for the first
    that ``common.types.text_problem`` refuses (tab, line feed and carriage return pass)."""
    for key, value in obj.items():
        found = _bad_string(value)
        if found is not None:
            path, problem = found
            items = "".join(f" item {i + 1}" if isinstance(i, int) else f".{i}" for i in path)
            raise BadText(f'"{key}"{items} {problem}')


def _bad_string(value: Any, path: tuple = ()) -> tuple[tuple, str] | None:
    """(where below the field, the problem) of the first bad string in ``value``, or None."""
    if isinstance(value, str):
        problem = text_problem(value) if _SUSPECT.search(value) else None
        return (path, problem) if problem else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _bad_string(item, (*path, key))
        if found is not None:
            return found
    return None


# -- whole files -------------------------------------------------------------------------------
def read_jsonl(path: str | Path, model: type[M], example: str, error: type[RatStudioError], *,
               what: str = "records", unreadable: str = "Give the path of a JSONL file.") -> list[tuple[int, M]]:
    """(line number, validated record) of every line of the JSONL file ``path``: UTF-8, a byte
    order mark skipped, lines split at line breaks only (a U+2028 inside a string stays there).
    Raises ``error``: for a file that cannot be read ("Cannot read PATH: why." + ``unreadable``),
    one that is not UTF-8, a bad line (see ``read_records``), or a file without a record (it has
    no ``what``)."""
    try:
        with open(path, encoding="utf-8-sig", newline=None) as fh:
            records = list(read_records(fh, str(path), model, example, error))
    except OSError as exc:
        raise error(f"Cannot read {path}: {exc.strerror or exc}. {unreadable}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not UTF-8 text; save it as UTF-8 JSONL.") from exc
    if not records:
        raise error(f"{path} has no {what}: write one JSON object per line, e.g. {example}")
    return records
