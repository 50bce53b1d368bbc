"""Text that no task should hold is refused at the boundary with one line that says what to fix:
bytes of invalid UTF-8 on the command line, a lone surrogate from the browser, NUL and other
control characters."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import TaskError
from common.types import Task

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("prompt, problem", [
    ("Describe owls\x00", "control character (U+0000)"),
    ("Describe \x1b[31mowls", "control character (U+001B)"),
    ("Describe owls \udcff", "not valid UTF-8"),  # what Python makes of the byte 0xff in argv
])
def test_a_task_with_bad_characters_is_refused(prompt, problem):
    with pytest.raises(TaskError, match=re.escape(problem)):
        Task(prompt).validated(1000)


def test_tabs_and_line_breaks_are_fine():
    assert Task("Describe owls:\n\tat night\r\n").validated(1000).prompt == "Describe owls:\n\tat night"


def test_invalid_utf8_on_the_command_line_is_one_line_not_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, "app.py", "--db", str(tmp_path / "x.db"), "run", b"Describe \xff owls"],
                          cwd=ROOT, capture_output=True, env={**os.environ, "OPENAI_API_KEY": "sk-none"},
                          timeout=120)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode != 0
    assert "not valid UTF-8" in err and "Traceback" not in err, err


NESTED = "[" * 100_000 + "]" * 100_000  # deeper than Python's JSON parser goes


@pytest.mark.parametrize("argv", [("votes", "import"), ("outputs", "import"), ("procedures", "import"),
                                  ("batch", "--methods", "cot"), ("dataset", "import")], ids=lambda a: " ".join(a[:2]))
def test_a_deeply_nested_line_is_one_line_naming_it_in_every_importer(cli, tmp_path, argv):
    """Issue 38 (F32): a deeply nested JSON line crashed every importer with a traceback."""
    file = tmp_path / "in.jsonl"
    file.write_text("\n{\"prompt\": " + NESTED + "}\n", encoding="utf-8")
    target = file
    if argv[0] == "dataset":  # a folder as `dataset export` writes it: one config a folder
        target = tmp_path / "ds"
        (target / "votes").mkdir(parents=True)
        (target / "votes" / "train.jsonl").write_text(file.read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = cli(*argv, str(target))
    assert code == 1 and "Traceback" not in err and "RecursionError" not in err, err[-500:]
    assert "line 2" in err and "nested too deeply" in err and len(err.strip().splitlines()) == 1, err
