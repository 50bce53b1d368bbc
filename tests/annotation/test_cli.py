"""The arena's commands (ui.cli.arena over annotation.voting.arena): the handlers called in-process,
as app.py calls them."""

from __future__ import annotations

import json

import pytest

from annotation.errors import ArenaError, ImportFormatError
from data import arena
from ui.cli import build_parser


def run(app, *argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return args.func(args, app)


def write_jsonl(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


VOTES = [
    {"task": "Describe owls", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ana",
     "output_a": "Owls are birds.", "output_b": "Owls."},
    {"task": "Describe owls", "method_a": "cot", "method_b": "direct", "winner": "Both bad", "annotator": "bob"},
    {"task": "owls-1", "prompt": "Describe bats", "method_a": "rat", "method_b": "direct", "winner": "tie",
     "annotator": "ana", "task_set": "animals"},
]


def test_votes_import_export_round_trip(local_app, tmp_path, capsys):
    assert run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES)) == 0
    assert "Imported 3 vote(s)" in capsys.readouterr().out
    out = tmp_path / "export.jsonl"
    assert run(local_app, "votes", "export", "--out", str(out)) == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["task"], e["method_a"], e["method_b"], e["winner"], e["annotator"]) for e in exported] == [
        ("Describe owls", "rat", "cot", "a", "ana"),
        ("Describe owls", "cot", "direct", "both_bad", "bob"),
        ("Describe bats", "rat", "direct", "tie", "ana"),
    ]
    assert exported[0]["output_a"] == "Owls are birds." and exported[2]["task_set"] == "animals"

    # into a fresh database: the same votes; and a second import of the export adds nothing
    import app as app_module
    from common.settings import Settings

    other = app_module.build(Settings(db_path=tmp_path / "b.db"))
    run(other, "votes", "import", str(out))
    run(other, "votes", "import", str(out))
    assert "3 already present" in capsys.readouterr().out
    def cast(store):
        return [(r.method_a, r.method_b, r.choice) for r in arena.vote_rows(store)]

    assert cast(other.store) == cast(local_app.store)


def test_votes_export_to_stdout(local_app, tmp_path, capsys):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES[:1]))
    capsys.readouterr()
    run(local_app, "votes", "export")
    assert json.loads(capsys.readouterr().out)["winner"] == "a"


@pytest.mark.parametrize("bad, message", [
    ("{not json", r"line 2: not valid JSON"),
    ('["a list"]', r"line 2: expected a JSON object"),
    (json.dumps({**VOTES[0], "winner": "A wins"}), r'line 2: "winner" must be one of a, b, tie, both_bad'),
    (json.dumps({**VOTES[0], "method_b": "rat"}), r"line 2: method_a and method_b are both"),
    (json.dumps({k: v for k, v in VOTES[0].items() if k != "annotator"}), r'line 2: "annotator" must be'),
])
def test_a_bad_vote_line_names_the_line_and_imports_nothing(local_app, tmp_path, bad, message):
    path = write_jsonl(tmp_path / "v.jsonl", [VOTES[0], bad, VOTES[1]])
    with pytest.raises(ImportFormatError, match=message):
        run(local_app, "votes", "import", path)
    assert arena.vote_rows(local_app.store) == []


def test_a_missing_file_is_a_clear_error(local_app, tmp_path):
    with pytest.raises(ImportFormatError, match="Cannot read"):
        run(local_app, "votes", "import", str(tmp_path / "nope.jsonl"))


def test_outputs_import(local_app, tmp_path, capsys):
    rows = [{"task": "Describe owls", "method": "gpt-x", "text": "Owls!"},
            {"task": "Describe owls", "method": "rat", "text": "Owls are birds.", "task_set": "", "kind": "writing"}]
    path = write_jsonl(tmp_path / "o.jsonl", rows)
    assert run(local_app, "outputs", "import", path) == 0
    run(local_app, "outputs", "import", path)
    assert "2 already present" in capsys.readouterr().out
    assert sorted(o.method for o in arena.arena_outputs(local_app.store)) == ["gpt-x", "rat"]


def test_a_bad_output_line(local_app, tmp_path):
    path = write_jsonl(tmp_path / "o.jsonl", [{"task": "t", "method": "m", "text": "x"}, {"task": "t", "method": "m"}])
    with pytest.raises(ImportFormatError, match=r'line 2: "text" must be'):
        run(local_app, "outputs", "import", path)
    assert arena.output_count(local_app.store) == 0


def test_leaderboard_json_shape(local_app, tmp_path, capsys):
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES))
    capsys.readouterr()
    assert run(local_app, "leaderboard", "--json", "--bootstrap", "10") == 0
    table = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in table} == {"rat", "cot", "direct"}
    for row in table:
        assert {"method", "mu", "sigma", "conservative", "win_rate", "battles", "bt", "bt_low", "bt_high",
                "wins", "ties", "losses"} <= set(row)
    assert sum(r["battles"] for r in table) == 6
    run(local_app, "leaderboard", "--json", "--task-set", "animals")
    assert {r["method"] for r in json.loads(capsys.readouterr().out)} == {"rat", "direct"}


def test_leaderboard_as_text(local_app, tmp_path, capsys):
    run(local_app, "leaderboard", "--source", "judge")
    assert "No judge votes yet" in capsys.readouterr().out
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES))
    run(local_app, "leaderboard")
    assert "rat" in capsys.readouterr().out


def test_judge_needs_two_methods(local_app):
    with pytest.raises(ArenaError, match="at least two"):
        run(local_app, "judge", "--methods", "rat")


def test_judge_command_over_http(app, llm, capsys):
    from tests.annotation.conftest import seed_outputs

    llm.reply(lambda body: "Verdict: A")
    seed_outputs(app.store, {"Describe owls": {"rat": "x", "cot": "y", "direct": "z"}})
    assert run(app, "judge", "--methods", "rat, cot", "--n", "2") == 0
    captured = capsys.readouterr()
    assert "Judged 1 pair(s)" in captured.out and "[1/1] task" in captured.err
    assert len(llm.requests) == 2
    assert run(app, "leaderboard", "--source", "judge", "--json") == 0
    assert {r["method"] for r in json.loads(capsys.readouterr().out)} == {"rat", "cot"}
