"""Round trips that hold (issue 24, item 6), through ``app.main`` as ``python app.py`` calls it on
a real SQLite file: votes exported with their corrections and imported into a fresh database give
the same leaderboard; and the JSONL files of votes, outputs, procedures and batch tasks are read
alike: a UTF-8 byte order mark is skipped, a lone surrogate or a control character is refused
with one line naming the file, the line and the field, ``created`` must be an ISO date-time and a
task's ``id`` a string or a whole number."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import app as app_module

VOTES = [
    {"task": "Describe owls", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ana",
     "output_a": "Owls are birds.", "output_b": "Owls.", "created": "2025-01-02T10:00:00.000+00:00"},
    {"task": "Describe owls", "method_a": "cot", "method_b": "direct", "winner": "b", "annotator": "bob"},
    {"task": "Describe bats", "method_a": "rat", "method_b": "direct", "winner": "a", "annotator": "ana"},
    {"task": "Describe bats", "method_a": "cot", "method_b": "rat", "winner": "b", "annotator": "cy"},
    {"task": "Describe cats", "method_a": "direct", "method_b": "rat", "winner": "tie", "annotator": "bob"},
    {"task": "Describe cats", "method_a": "direct", "method_b": "cot", "winner": "a", "annotator": "cy"},
]


@pytest.fixture
def cli(capsys, tmp_path):
    """``python app.py ARGS`` in-process on database ``DB`` (a file in tmp_path); returns
    (exit code, stdout, stderr)."""

    def run(*argv: str, db: str = "a.db") -> tuple[int, str, str]:
        capsys.readouterr()
        code = app_module.main(list(argv), env={"RAT_STUDIO_DB": str(tmp_path / db)})
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write(path: Path, lines: list, *, bom: bool = False) -> str:
    """Write JSONL lines (dicts are dumped, strings written as they are)."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(("\ufeff" if bom else "") + text, encoding="utf-8")
    return str(path)


def leaderboard(cli, db: str) -> list[dict]:
    code, out, err = cli("leaderboard", "--json", "--bootstrap", "20", db=db)
    assert code == 0, err
    board = json.loads(out)
    return board["rows"] if isinstance(board, dict) else board


# -- votes export -> import ----------------------------------------------------------------------
def test_export_then_import_into_a_fresh_database_gives_the_same_leaderboard(cli, tmp_path):
    assert cli("votes", "import", write(tmp_path / "v.jsonl", VOTES))[0] == 0
    assert cli("votes", "correct", "1", "--choice", "b", "--by", "admin", "--why", "misclick")[0] == 0
    assert cli("votes", "correct", "3", "--choice", "void", "--by", "admin", "--why", "spam")[0] == 0
    assert cli("votes", "correct", "3", "--choice", "tie", "--by", "lead", "--why", "second look")[0] == 0
    before = leaderboard(cli, "a.db")
    exported = tmp_path / "export.jsonl"
    assert cli("votes", "export", "--out", str(exported))[0] == 0

    assert cli("votes", "import", str(exported), db="b.db")[0] == 0
    assert leaderboard(cli, "b.db") == before
    again = tmp_path / "again.jsonl"
    cli("votes", "export", "--out", str(again), db="b.db")
    assert again.read_text(encoding="utf-8") == exported.read_text(encoding="utf-8")
    corrections = cli("votes", "corrections", db="b.db")[1]
    assert "vote 1: a -> b\tby admin: misclick" in corrections
    assert "vote 3: a -> tie\tby lead: second look" in corrections


def test_a_second_import_adds_no_correction(cli, tmp_path):
    cli("votes", "import", write(tmp_path / "v.jsonl", VOTES))
    cli("votes", "correct", "2", "--choice", "void", "--by", "admin", "--why", "spam")
    exported = tmp_path / "export.jsonl"
    cli("votes", "export", "--out", str(exported))
    for _ in range(2):
        code, out, err = cli("votes", "import", str(exported), db="b.db")
        assert code == 0, err
    assert "6 already present" in out
    assert cli("votes", "corrections", db="b.db")[1].count("by admin: spam") == 1


def test_a_later_export_adds_only_the_corrections_made_since(cli, tmp_path):
    """B was restored from an export of A; a vote corrected in A since comes over as a correction."""
    cli("votes", "import", write(tmp_path / "v.jsonl", VOTES))
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    cli("votes", "export", "--out", str(first))
    cli("votes", "import", str(first), db="b.db")
    cli("votes", "correct", "4", "--choice", "a", "--by", "admin", "--why", "swapped")
    cli("votes", "export", "--out", str(second))
    code, out, err = cli("votes", "import", str(second), db="b.db")
    assert code == 0 and "Imported 0 vote(s)" in out and "6 already present" in out, err
    assert leaderboard(cli, "b.db") == leaderboard(cli, "a.db")
    assert "vote 4: b -> a\tby admin: swapped" in cli("votes", "corrections", db="b.db")[1]


@pytest.mark.parametrize("correction, message", [
    ({"choice": "maybe", "by": "admin", "why": "x"}, '"correction.choice" must be one of a, b, tie, both_bad, void'),
    ({"choice": "a", "by": " ", "why": "x"}, '"correction.by" must be a non-empty string'),
    ({"choice": "a", "by": "admin"}, '"correction.why" must be a non-empty string'),
    ({"choice": "a", "by": "admin", "why": "x", "created": "soon"}, '"correction.created" must be an ISO date-time'),
    ("b", '"correction" must be'),
])
def test_a_bad_correction_names_the_line_and_imports_nothing(cli, tmp_path, correction, message):
    path = write(tmp_path / "v.jsonl", [VOTES[0], {**VOTES[1], "correction": correction}])
    code, _out, err = cli("votes", "import", path)
    assert code == 1
    assert err.startswith(f"error: {path} line 2: ")
    assert re.search(message, err), err
    assert cli("votes", "export")[1] == ""


# -- one reader for every JSONL input ------------------------------------------------------------
PROCEDURE = {"input": "flour, eggs", "output": "pancakes", "steps": ["Whisk", "Fry"]}
OUTPUT = {"task": "Describe owls", "method": "rat", "text": "Owls are birds."}
TASK = {"id": "t1", "prompt": "Describe owls."}


def test_a_byte_order_mark_is_skipped_by_every_reader(cli, tmp_path):
    code, out, err = cli("procedures", "import", write(tmp_path / "p.jsonl", [PROCEDURE], bom=True))
    assert code == 0 and "1 procedures added" in out + err, err
    code, out, err = cli("votes", "import", write(tmp_path / "v.jsonl", VOTES[:1], bom=True))
    assert code == 0 and "Imported 1 vote" in out, err
    code, out, err = cli("outputs", "import", write(tmp_path / "o.jsonl", [OUTPUT], bom=True))
    assert code == 0 and "Imported" in out, err
    from core.batch import load_tasks

    assert [t.prompt for t in load_tasks(write(tmp_path / "t.jsonl", [TASK], bom=True))] == ["Describe owls."]


def _reads(kind: str, path: str, cli) -> tuple[int, str]:
    """Run the command that reads a ``kind`` file; (exit code, standard error)."""
    argv = {"votes": ("votes", "import", path), "outputs": ("outputs", "import", path),
            "procedures": ("procedures", "import", path), "batch": ("batch", path, "--methods", "direct")}[kind]
    code, _out, err = cli(*argv)
    return code, err


GOOD = {"votes": VOTES[0], "outputs": OUTPUT, "procedures": PROCEDURE, "batch": TASK}
#: (kind, field, a JSON text put in that field as it is, the problem the message names)
BAD_TEXT = [
    ("votes", "task", r'"Describe \ud800 owls"', "is not valid UTF-8"),
    ("votes", "annotator", r'"ana\ud800"', "is not valid UTF-8"),
    ("procedures", "input", r'"flour\ud800"', "is not valid UTF-8"),
    ("procedures", "input", r'"flour\u0000"', "holds a control character (U+0000)"),
    ("procedures", "output", r'"pancakes\u0007"', "holds a control character (U+0007)"),
    ("procedures", "steps", r'["Whisk", "Fry\u0000"]', "holds a control character (U+0000)"),
    ("batch", "prompt", r'"\u0000"', "holds a control character (U+0000)"),
    ("batch", "prompt", r'"Describe\ud800"', "is not valid UTF-8"),
    ("outputs", "text", r'"Owls\u001b[31m"', "holds a control character (U+001B)"),
]


@pytest.mark.parametrize("kind, field, value, problem", BAD_TEXT)
def test_bad_text_is_refused_in_one_line_naming_the_file_line_and_field(cli, tmp_path, kind, field, value, problem):
    bad = json.dumps({k: v for k, v in GOOD[kind].items() if k != field})[:-1] + f', "{field}": {value}}}'
    path = write(tmp_path / f"{kind}.jsonl", [GOOD[kind], bad])
    code, err = _reads(kind, path, cli)
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f'error: {path} line 2: "{field}')
    assert problem in err


def test_tab_and_newline_stay_allowed(cli, tmp_path):
    path = write(tmp_path / "p.jsonl", [{**PROCEDURE, "output": "pan\tcakes\nand syrup"}])
    code, out, err = cli("procedures", "import", path)
    assert code == 0, err
    cli("procedures", "export", str(tmp_path / "out.jsonl"))
    assert json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))["output"] == "pan\tcakes\nand syrup"


@pytest.mark.parametrize("created", ["not a date", "2025-13-01", "", "yesterday"])
def test_created_must_be_an_iso_date_time(cli, tmp_path, created):
    path = write(tmp_path / "v.jsonl", [VOTES[0], {**VOTES[1], "created": created}])
    code, _out, err = cli("votes", "import", path)
    assert code == 1
    assert err.startswith(f'error: {path} line 2: "created" must be')
    assert "ISO" in err
    assert cli("votes", "export")[1] == ""


def test_an_iso_created_is_kept(cli, tmp_path):
    cli("votes", "import", write(tmp_path / "v.jsonl", [{**VOTES[1], "created": "2024-05-06T07:08:09+00:00"}]))
    assert json.loads(cli("votes", "export")[1])["created"] == "2024-05-06T07:08:09+00:00"


@pytest.mark.parametrize("task_id", [[1], {"a": 1}, True, 1.5])
def test_a_batch_task_id_must_be_a_string_or_a_whole_number(cli, tmp_path, task_id):
    path = write(tmp_path / "t.jsonl", [TASK, {"id": task_id, "prompt": "Describe bats."}])
    code, err = _reads("batch", path, cli)
    assert code == 1
    assert err.startswith(f'error: {path} line 2: "id" must be a string or a whole number')


def test_batch_ids_may_be_strings_or_whole_numbers(tmp_path):
    from core.batch import load_tasks

    tasks = load_tasks(write(tmp_path / "t.jsonl", [{"id": 7, "prompt": "a"}, {"id": "x", "prompt": "b"}]))
    assert [t.id for t in tasks] == ["7", "x"]
