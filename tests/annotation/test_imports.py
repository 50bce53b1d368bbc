"""Imports that cannot double, lose or mislabel: an empty file is an error, a byte order mark is
fine, importing a file twice adds nothing, votes on a task set's prompts join that set, an unknown
task set is named with the known ones, and an output has a size cap."""

from __future__ import annotations

import json

import pytest

from annotation.admin.records import MAX_TEXT_CHARS
from annotation.errors import ArenaError, ImportFormatError
from data import arena
from tests.annotation.test_cli import run, write_jsonl

VOTES = [  # no "created": re-importing must still add nothing
    {"task": "Describe owls", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ana"},
    {"task": "Describe owls", "method_a": "cot", "method_b": "direct", "winner": "tie", "annotator": "bob"},
]


def test_an_empty_file_is_an_error(local_app, tmp_path):
    for command in ("votes", "outputs"):
        path = tmp_path / f"{command}.jsonl"
        path.write_text("\n  \n", encoding="utf-8")
        with pytest.raises(ImportFormatError, match="has no records"):
            run(local_app, command, "import", str(path))


def test_a_byte_order_mark_is_accepted(local_app, tmp_path, capsys):
    path = tmp_path / "bom.jsonl"
    path.write_text("\ufeff" + "".join(json.dumps(v) + "\n" for v in VOTES), encoding="utf-8")
    assert run(local_app, "votes", "import", str(path)) == 0
    assert "Imported 2 vote(s)" in capsys.readouterr().out


def test_importing_the_same_votes_twice_adds_nothing(local_app, tmp_path, capsys):
    path = write_jsonl(tmp_path / "v.jsonl", VOTES)
    run(local_app, "votes", "import", path)
    run(local_app, "votes", "import", path)
    assert "2 already present" in capsys.readouterr().out
    assert len(arena.vote_rows(local_app.store)) == 2


def test_votes_join_the_task_set_of_their_prompt(local_app, tmp_path, capsys):
    store = local_app.store
    bundled = store.add_task("Describe owls", "writing", "rat-writing")
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", VOTES))
    assert {store.get_task(v.task_id).id for v in arena.vote_rows(store)} == {bundled}
    assert [r[0] for r in store.db.execute("select id from tasks where prompt = 'Describe owls'")] == [bundled]
    capsys.readouterr()
    assert run(local_app, "leaderboard", "--task-set", "rat-writing", "--bootstrap", "5") == 0
    assert "2 people vote(s)" in capsys.readouterr().out


def test_a_line_that_names_its_task_set_keeps_it(local_app, tmp_path):
    store = local_app.store
    store.add_task("Describe owls", "writing", "rat-writing")
    line = {**VOTES[0], "task_set": "mine"}
    run(local_app, "votes", "import", write_jsonl(tmp_path / "v.jsonl", [line]))
    (vote,) = arena.vote_rows(store)
    assert store.get_task(vote.task_id).task_set == "mine"


def test_an_unknown_task_set_is_named_with_the_known_ones(local_app, tmp_path):
    local_app.store.add_task("Describe owls", "writing", "rat-writing")
    with pytest.raises(ArenaError, match=r"No task set 'rat-writting'.*'rat-writing'"):
        run(local_app, "leaderboard", "--task-set", "rat-writting")


def test_an_output_over_the_size_cap_is_refused(local_app, tmp_path):
    huge = {"task": "Describe owls", "method": "rat", "text": "owl " * (MAX_TEXT_CHARS // 4 + 1)}
    with pytest.raises(ImportFormatError, match=r'line 1: "text" is .* characters long; the limit is'):
        run(local_app, "outputs", "import", write_jsonl(tmp_path / "o.jsonl", [huge]))
    assert arena.output_count(local_app.store) == 0


def test_a_control_character_in_a_line_is_refused_with_its_field(local_app, tmp_path):
    line = {"task": "Describe owls", "method": "rat", "text": "Owls\u0000 are birds."}
    with pytest.raises(ImportFormatError, match=r'line 1: "text" holds a control character \(U\+0000\)'):
        run(local_app, "outputs", "import", write_jsonl(tmp_path / "o.jsonl", [line]))
