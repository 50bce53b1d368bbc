"""``python app.py campaign create/set/close/open/list/show``, ``leaderboard --campaign`` and
``dataset export --campaign`` through ``app.main`` on a tmp database seeded with outputs of three
methods; votes are cast through ``Arena.next_pair``/``vote`` as the arena casts them."""

from __future__ import annotations

import json
import random

import pytest
import yaml

import app as app_module
from annotation.admin import dataset
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from data.store import Store
from tests.annotation.conftest import seed_outputs

SETTINGS = ["--task-set", "animals", "--methods", "rat,cot", "--overlap", "2", "--voters", "ana.quill,study:pilot",
            "--by", "lee"]


@pytest.fixture
def db(tmp_path):
    """Two tasks of set "animals" and one of "plans", each written by rat, cot and plain."""
    path = tmp_path / "x.db"
    store = Store(path)
    seed_outputs(store, {"Describe owls": {"rat": "Owls hunt.", "cot": "Owls hoot.", "plain": "Owls."},
                         "Describe bats": {"rat": "Bats fly.", "cot": "Bats see by ear.", "plain": "Bats."}}, "animals")
    seed_outputs(store, {"Plan a trip": {"rat": "Go north.", "cot": "Go south.", "plain": "Go."}}, "plans")
    store.close()
    return path


def vote(db, annotator: str, times: int) -> list[str | None]:
    """``annotator`` votes "a" on their next ``times`` pairs; the campaign of each (None: the open arena)."""
    store = Store(db)
    try:
        arena = Arena(store, rng=random.Random(5), limits=VoteLimits(per_annotator=1_000, per_address=0))
        campaigns = []
        for _ in range(times):
            shown = arena.next_pair(annotator)
            arena.vote(shown.battle_id, annotator, "a")
            campaigns.append(shown.campaign)
        return campaigns
    finally:
        store.close()


def test_create_then_list_and_show_say_its_settings_and_who_gets_its_pairs(cli):
    code, out, _ = cli("campaign", "create", "pilot", *SETTINGS)
    assert code == 0
    settings = ("task set 'animals' · methods rat, cot · shown plain · 2 annotators per pair · no quota · "
                "voters ana.quill, study:pilot")
    assert out.splitlines() == [f"Created campaign 'pilot' (open): {settings}.",
                                "Annotators ana.quill, every account of study pilot get its pairs at their next pair "
                                "(after any older open campaign that admits them)."]
    code, out, _ = cli("campaign", "list")
    head, row = out.splitlines()
    assert code == 0 and head.split() == ["name", "status", "votes", "annotators", "settings"]
    assert row.split(None, 5) == ["pilot", "open", "0/4", "(0%)", "0", settings], "2 pairs (rat-cot), 2 votes each"
    code, out, _ = cli("campaign", "show", "pilot")
    assert code == 0 and out.startswith("Campaign 'pilot' (open; started ") and settings in out
    history = out.split("History:\n")[1].splitlines()
    assert history[0].split() == ["when", "by", "what", "changed"]
    assert history[1].split(None, 3)[2:] == ["lee", "created (open): " + settings]
    assert "Progress: 2 pair(s); 0 complete (with all 2 vote(s)), 0 started; 0 of 4 votes needed (0%)" in out


def test_set_changes_only_what_is_given_and_show_lists_each_change(cli):
    cli("campaign", "create", "pilot", *SETTINGS)
    code, out, _ = cli("campaign", "set", "pilot", "--quota", "5", "--anyone", "--by", "kim")
    assert code == 0
    assert out.splitlines()[0] == ("Changed campaign 'pilot': quota: none -> 5; voters: ana.quill, study:pilot -> "
                                   "anyone.")
    assert "Anyone who opens the arena gets its pairs" in out
    assert cli("campaign", "close", "pilot", "--by", "kim")[0] == 0
    code, out, _ = cli("campaign", "list")
    assert out.splitlines()[1].split()[1] == "closed"
    code, out, _ = cli("campaign", "open", "pilot")
    assert code == 0 and out.startswith("Opened campaign 'pilot': task set 'animals'")
    code, out, _ = cli("campaign", "show", "pilot", "--json")
    shown = json.loads(out)
    assert (shown["quota"], shown["voters"], shown["status"], shown["methods"]) == (5, [], "open", ["rat", "cot"])
    assert [(h["changed_by"], h["quota"], h["status"]) for h in shown["history"]] \
        == [("lee", None, "open"), ("kim", 5, "open"), ("kim", 5, "closed"), ("admin", 5, "open")]
    _, out, _ = cli("campaign", "show", "pilot")
    changed = [line.split(None, 3)[3] for line in out.split("History:\n")[1].splitlines()[1:5]]
    assert changed[1:] == ["quota: none -> 5; voters: ana.quill, study:pilot -> anyone", "status: open -> closed",
                           "status: closed -> open"]


@pytest.mark.parametrize(("argv", "named"), [
    (["create", "p2", "--methods", "rat,nope"], "nope"),
    (["create", "p2", "--methods", "rat,nope"], "--methods"),
    (["create", "p2", "--overlap", "0"], "--overlap"),
    (["create", "p2", "--quota", "0"], "--quota"),
    (["create", "p2", "--task-set", "plan"], "--task-set"),
    (["create", "pilot"], "campaign set pilot"),
    (["set", "pilot"], "--quota"),
    (["set", "pilot", "--quota", "3", "--no-quota"], "--no-quota"),
    (["set", "nobody", "--quota", "3"], "'pilot'"),
    (["show", "nobody"], "campaign create NAME"),
])
def test_a_bad_input_exits_1_with_one_line_naming_the_fix(cli, argv, named):
    cli("campaign", "create", "pilot", *SETTINGS)
    code, out, err = cli("campaign", *argv)
    assert code == 1 and out == "" and err.startswith("error: ") and named in err and err.count("\n") == 1
    _, listed, _ = cli("campaign", "list")
    assert len(listed.splitlines()) == 2 and "no quota" in listed, "nothing was made or changed"


def test_list_without_campaigns_says_how_to_make_one(cli):
    code, out, _ = cli("campaign", "list")
    assert code == 0 and "campaign create NAME" in out
    assert json.loads(cli("campaign", "list", "--json")[1]) == []


def test_votes_in_the_campaign_show_in_its_progress_and_leaderboard_and_no_others(cli, db):
    cli("campaign", "create", "pilot", *SETTINGS)
    assert vote(db, "ana.quill", 2) == ["pilot", "pilot"]
    assert vote(db, "bob", 1) == [None], "bob is not admitted: the open arena"
    code, out, _ = cli("campaign", "show", "pilot")
    assert code == 0
    assert "Progress: 2 pair(s); 0 complete (with all 2 vote(s)), 2 started; 2 of 4 votes needed (50%)" in out
    table = out.split("Progress:")[1].splitlines()[1:]
    assert table[0].split() == ["annotator", "votes", "today", "quota", "done", "last", "vote"]
    assert [r.split()[:5] for r in table[1:]] == [["ana.quill", "2", "2", "-", "-"]]
    _, out, _ = cli("campaign", "list", "--json")
    assert [(c["name"], c["votes"], c["votes_needed"], c["started_pairs"]) for c in json.loads(out)] \
        == [("pilot", 2, 4, 2)]

    code, out, _ = cli("leaderboard", "--campaign", "pilot", "--json", "--bootstrap", "5")
    board = json.loads(out)
    assert code == 0 and board["campaign"] == "pilot"
    assert sorted(r["method"] for r in board["rows"]) == ["cot", "rat"]
    assert sum(r["battles"] for r in board["rows"]) == 4, "ana.quill's two votes, each a battle of two methods"
    everyone = json.loads(cli("leaderboard", "--json", "--bootstrap", "5")[1])
    assert sum(r["battles"] for r in everyone) == 6, "bob's vote counts on the open leaderboard"
    code, out, _ = cli("leaderboard", "--campaign", "pilot", "--style", "--agreement", "--json", "--bootstrap", "5")
    assert code == 0 and json.loads(out)["campaign"] == "pilot" and "agreement_people" in json.loads(out)
    code, out, _ = cli("leaderboard", "--campaign", "pilot", "--bootstrap", "5")
    assert code == 0 and out.startswith("Campaign 'pilot': task set 'animals'") and "2 people vote(s)" in out
    code, _, err = cli("leaderboard", "--campaign", "nobody")
    assert code == 1 and "No campaign 'nobody'" in err


def header(folder) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def test_dataset_export_of_a_campaign_holds_its_votes_and_its_card_its_settings(cli, db, tmp_path, monkeypatch):
    cli("campaign", "create", "pilot", *SETTINGS)
    vote(db, "ana.quill", 2)
    vote(db, "bob", 1)
    folder = tmp_path / "ds"
    code, out, _ = cli("dataset", "export", str(folder), "--campaign", "pilot", "--format", "jsonl")
    assert code == 0 and "Wrote 2 vote(s) and 4 output(s) of campaign 'pilot'" in out
    datasets = pytest.importorskip("datasets")  # requirements-dev.txt pins it; skipped only where it cannot install
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    votes = datasets.load_dataset(str(folder), "votes", split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert votes.num_rows == 2 and set(votes["campaign"]) == {"pilot"}
    assert set(votes["annotator"]) == {dataset.pseudonym("ana.quill")}
    outputs = [json.loads(line) for line in (folder / "outputs" / "train.jsonl").read_text().splitlines()]
    assert sorted({(o["task_set"], o["method"]) for o in outputs}) == [("animals", "cot"), ("animals", "rat")]
    meta = header(folder)["campaign"]
    assert {k: meta[k] for k in ("name", "overlap", "quota", "pairs", "complete_pairs", "votes", "votes_needed")} \
        == {"name": "pilot", "overlap": 2, "quota": None, "pairs": 2, "complete_pairs": 0, "votes": 2,
            "votes_needed": 4}
    assert meta["voters"] == [dataset.pseudonym("ana.quill"), "study:pilot"], "account names are pseudonymised"
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "ana.quill" not in card
    assert ("Campaign `pilot` (open, started " in card and "methods rat, cot · shown plain · 2 annotators per pair"
            in card and "2 pair(s) of outputs to vote on, 0 complete" in card)


def test_export_without_a_campaign_marks_each_votes_campaign_and_imports_again(cli, db, tmp_path):
    cli("campaign", "create", "pilot", *SETTINGS)
    vote(db, "ana.quill", 1)
    vote(db, "bob", 1)
    folder = tmp_path / "all"
    assert cli("dataset", "export", str(folder), "--format", "jsonl")[0] == 0
    rows = [json.loads(line) for line in (folder / "votes" / "train.jsonl").read_text().splitlines()]
    assert [r["campaign"] for r in rows] == ["pilot", None]
    assert "campaign" not in header(folder) and "no campaign" in (folder / "README.md").read_text()
    code = app_module.main(["dataset", "import", str(folder)], env={"RAT_STUDIO_DB": str(tmp_path / "fresh.db")})
    assert code == 0


def test_dataset_export_refuses_a_campaign_with_a_task_set_naming_both_flags(cli, tmp_path):
    cli("campaign", "create", "pilot", *SETTINGS)
    code, _, err = cli("dataset", "export", str(tmp_path / "ds"), "--campaign", "pilot", "--task-set", "animals")
    assert code == 1 and "--campaign" in err and "--task-set" in err and err.count("\n") == 1
    assert not (tmp_path / "ds").exists()
