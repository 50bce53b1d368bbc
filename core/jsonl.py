"""Reading JSONL files of tasks, outputs, votes and procedures: one JSON object a line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from common.errors import RatStudioError


def read_objects(lines: Iterable[str], name: str, example: str,
                 error: type[RatStudioError]) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line. Raises ``error`` naming the file, the line
    and an example of a good one when a line is not a JSON object."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{name} line {n}: not valid JSON ({exc.msg}, column {exc.colno}); write one JSON "
                        f"object per line, e.g. {example}") from exc
        if not isinstance(obj, dict):
            raise error(f"{name} line {n}: expected a JSON object, got {type(obj).__name__}; e.g. {example}")
        yield n, obj
