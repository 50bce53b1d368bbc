"""``python app.py dataset export/import`` (``annotation.admin.dataset``): the folder loads with the
Hugging Face ``datasets`` library as it is, its card's YAML names the configs, annotators are
pseudonymised unless --names, and export then import into a fresh database gives the same
leaderboards (people's, corrections included, and the LLM judge's, kept in its own config)."""

from __future__ import annotations

import json
import random

import pytest
import yaml

import app as app_module
from annotation.admin import dataset
from annotation.errors import ArenaError, ImportFormatError
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from common.errors import StoreError
from data import arena
from data.store import Store
from data.versions import Versions
from tests.annotation.conftest import admin, finished_run, results, seed_outputs

datasets = pytest.importorskip("datasets")  # requirements-dev.txt pins it; skipped only where it cannot install

NAMES = ("Alice Zed", "Bob Yam")  # annotators whose names must not leak
BOSS = "Boss Person"


@pytest.fixture
def service(tmp_path):
    """An arena with two task sets, finished runs (one with a newer version after the votes),
    votes of two annotators (a comment, a correction, a voided vote) and an imported vote."""
    store = Store(tmp_path / "arena.db")
    seed_outputs(store, {"Describe owls": {"rat": "Owls hunt.", "cot": "Owls hoot.", "plain": "Owls."},
                         "Describe bats": {"rat": "Bats fly.", "cot": "Bats see by ear.", "plain": "Bats."}}, "animals")
    seed_outputs(store, {"Plan a trip": {"rat": "Go north.", "cot": "Go south.", "plain": "Go."}}, "plans")
    mole = finished_run(store, "Describe moles", "rat", "Moles dig.")
    finished_run(store, "Describe moles", "cot", "Moles are small.")
    arena.sync_run_outputs(store)
    svc = Arena(store, rng=random.Random(3), limits=VoteLimits(per_annotator=1_000, per_address=0))
    for n in range(8):
        for who in NAMES:
            shown = svc.next_pair(who)
            svc.vote(shown.battle_id, who, "ab"[n % 3 == 0] if who == NAMES[0] else "a",
                     comment="B stops early." if n == 1 else "")
    admin(svc).correct(1, "tie", BOSS, "misclick")
    admin(svc).correct(2, arena.VOID, BOSS, "read neither")
    arena.import_votes(store, [{"prompt": "Describe owls", "kind": "writing", "task_set": "animals",
                                "method_a": "rat", "method_b": "cot", "choice": "a", "annotator": "Carol Xu",
                                "created": "2025-01-01T00:00:00+00:00"}])
    Versions(store).add(mole, "Moles dig tunnels.")
    arena.sync_run_outputs(store)
    yield svc
    store.close()


def people(store: Store) -> int:
    return store.db.execute("select count(*) from votes").fetchone()[0]


def load(folder, config, tmp_path):
    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "hf-cache"))


# -- loading with datasets --------------------------------------------------------------------
@pytest.mark.parametrize("fmt", dataset.FORMATS)
def test_datasets_load_dataset_reads_votes_and_outputs_as_exported(service, tmp_path, fmt, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    folder = tmp_path / "ds"
    summary = dataset.export_dataset(admin(service), folder, fmt=fmt)
    votes = load(folder, "votes", tmp_path)
    assert votes.column_names == [c.name for c in dataset.VOTE_COLUMNS]
    assert votes.num_rows == summary.votes == people(service.store) == 17
    stored = service.store.db.execute("select v.id, b.method_a, b.method_b, v.choice from votes v "
                                      "join battles b on b.id = v.battle_id order by v.id").fetchall()
    assert list(zip(votes["vote_id"], votes["method_a"], votes["method_b"], votes["winner"], strict=True)) \
        == [tuple(r) for r in stored]
    assert votes["counts_as"][:2] == ["tie", arena.VOID] and votes["correction"][2] is None
    assert votes["corrected_by"][0] == dataset.pseudonym(BOSS)
    shown = next(r for r in votes if r["output_a"] is not None)
    assert shown["output_a"] == arena.get_battle(service.store, shown["battle_id"]).text_a
    outputs = load(folder, "outputs", tmp_path)
    assert outputs.num_rows == summary.outputs == arena.output_count(service.store) == 12
    assert outputs.column_names == [c.name for c in dataset.OUTPUT_COLUMNS]
    moles = [r["current"] for r in outputs if r["prompt"] == "Describe moles" and r["method"] == "rat"]
    assert moles == [False, True], "a run's older text is kept, marked as no longer paired"


# -- the card ---------------------------------------------------------------------------------
def header(folder) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_the_card_yaml_names_the_configs_and_the_prose_says_what_was_exported(service, tmp_path):
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, task_set="animals", fmt="jsonl")
    meta = header(folder)
    assert [c["config_name"] for c in meta["configs"]] == ["votes", "outputs"]
    for c in meta["configs"]:
        assert [f["split"] for f in c["data_files"]] == ["train"]
        assert (folder / c["data_files"][0]["path"]).is_file()
    assert meta["license"] == dataset.LICENSE_PLACEHOLDER and meta["task_categories"] == ["text-generation"]
    prose = (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    votes = [json.loads(line) for line in (folder / "votes" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert votes and {v["task_set"] for v in votes} == {"animals"}
    assert f"{len(votes)} vote(s) by 3 annotator(s)" in prose
    assert "task set `animals`" in prose and "`--arena-style sources`" in prose and "`--arena-text latest`" in prose
    assert "Methods: `cot`, `plain`, `rat`." in prose and "Set `license:`" in prose


def test_a_table_without_rows_is_left_out_of_the_configs(tmp_path):
    store = Store(tmp_path / "a.db")
    try:
        seed_outputs(store, {"Describe owls": {"rat": "r", "cot": "c"}})
        dataset.export_dataset(admin(Arena(store)), tmp_path / "ds")
        assert [c["config_name"] for c in header(tmp_path / "ds")["configs"]] == ["outputs"]
        assert not (tmp_path / "ds" / "votes").exists()
    finally:
        store.close()


# -- pseudonyms -------------------------------------------------------------------------------
def every_file(folder) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.jsonl")))


def test_annotators_are_stable_pseudonyms_unless_names(service, tmp_path):
    for name in ("one", "two"):
        dataset.export_dataset(admin(service), tmp_path / name, fmt="jsonl")
    dataset.export_dataset(admin(service), tmp_path / "salted", fmt="jsonl", salt="s3cret")
    dataset.export_dataset(admin(service), tmp_path / "named", fmt="jsonl", names=True)
    one, two, salted, named = (every_file(tmp_path / n) for n in ("one", "two", "salted", "named"))
    assert one == two, "the same pseudonyms in every export"
    for real in (*NAMES, BOSS, "Carol Xu"):
        assert real not in one and real not in salted and real in named
        assert dataset.pseudonym(real) in one and dataset.pseudonym(real, "s3cret") in salted
    assert len({dataset.pseudonym(n) for n in NAMES}) == 2 and dataset.pseudonym(NAMES[0]) not in salted


# -- import -----------------------------------------------------------------------------------
def rows(svc: Arena, task_set=None):
    return results(svc).leaderboard("people", task_set, bootstrap=20).rows


@pytest.mark.parametrize("fmt", dataset.FORMATS)
def test_export_then_import_into_a_fresh_database_gives_the_same_leaderboard(service, tmp_path, fmt):
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, fmt=fmt)
    fresh = Store(tmp_path / "fresh.db")
    try:
        restored = Arena(fresh)
        result = dataset.import_dataset(admin(restored), folder)
        assert (result.votes_added, result.votes_present, result.corrections_added) == (17, 0, 2)
        assert result.outputs_added == 11, "every output the arena pairs now (a run's older text comes with its votes)"
        assert rows(restored) == rows(service) and rows(restored, "animals") == rows(service, "animals")
        assert [(c.vote_id, c.choice, c.cast) for c in admin(restored).corrections()] \
            == [(c.vote_id, c.choice, c.cast) for c in admin(service).corrections()]
        again = dataset.import_dataset(admin(restored), folder)
        assert (again.votes_added, again.outputs_added, again.corrections_added) == (0, 0, 0)
        assert len(admin(restored).corrections()) == 2
    finally:
        fresh.close()


def test_a_bad_row_names_the_file_and_row_and_imports_nothing(service, tmp_path):
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, fmt="jsonl")
    path = folder / "votes" / "train.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({**json.loads(lines[2]), "winner": "left"})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fresh = Store(tmp_path / "fresh.db")
    try:
        with pytest.raises(ImportFormatError, match=r'train\.jsonl line 3: "winner" must be one of a, b'):
            dataset.import_dataset(admin(Arena(fresh)), folder)
        assert people(fresh) == 0 and arena.output_count(fresh) == 0
    finally:
        fresh.close()


# -- refusals and the command line ------------------------------------------------------------
def test_export_refuses_a_folder_with_files_and_an_unknown_task_set(service, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ArenaError, match="not an empty folder"):
        dataset.export_dataset(admin(service), tmp_path / "full")
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["notes.txt"]
    with pytest.raises(ArenaError, match="known task sets: 'animals', 'plans'"):
        dataset.export_dataset(admin(service), tmp_path / "new", task_set="animal")
    assert not (tmp_path / "new").exists()
    with pytest.raises(ImportFormatError, match="no votes/, outputs/ or judge_votes/ data files"):
        dataset.import_dataset(admin(service), tmp_path / "full")


def test_the_cli_exports_and_imports(service, tmp_path, capsys):
    service.store.close()
    folder = tmp_path / "ds"
    code = app_module.main(["dataset", "export", str(folder), "--task-set", "plans"],
                           env={"RAT_STUDIO_DB": str(tmp_path / "arena.db")})
    out = capsys.readouterr().out
    assert code == 0 and "to " + str(folder) in out and "set `license:`" in out
    assert (folder / "votes" / "train.parquet").is_file()
    code = app_module.main(["dataset", "import", str(folder)], env={"RAT_STUDIO_DB": str(tmp_path / "fresh.db")})
    out = capsys.readouterr().out
    fresh = Store(tmp_path / "fresh.db")
    try:
        corrected = len(admin(Arena(fresh)).corrections())
        assert code == 0 and (f"Imported 3 output(s) (0 already present), {people(fresh)} vote(s) (0 already "
                              f"present; {corrected} correction(s) added) and 0 judge's vote(s)") in out
        assert people(fresh) > 0 and arena.task_sets(fresh) == ["plans"]
    finally:
        fresh.close()
    code = app_module.main(["dataset", "export", str(folder)], env={"RAT_STUDIO_DB": str(tmp_path / "arena.db")})
    assert code == 1 and "not an empty folder" in capsys.readouterr().err


# -- the LLM judge's votes --------------------------------------------------------------------
JUDGES = ("judge-x", "judge-y")


def judge(store: Store) -> int:
    """The judge's votes on every pair of the arena's outputs of a task (choices and models in
    turn); returns how many."""
    outs = arena.latest_outputs(store)
    pairs = [(a, b) for a in outs for b in outs if a.task_id == b.task_id and a.method < b.method]
    for n, (a, b) in enumerate(pairs):
        arena.add_judge_vote(store, task_id=a.task_id, output_a=a.id, output_b=b.id, method_a=a.method,
                             method_b=b.method, choice=arena.JUDGE_CHOICES[n % 3], n=3,
                             detail={"answers": ["a", "b", "tie"], "n": n}, model=JUDGES[n % 2])
    return len(pairs)


def judge_board(svc: Arena, task_set=None):
    return results(svc).leaderboard("judge", task_set, bootstrap=20).rows


def prose(folder) -> str:
    return (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]


@pytest.mark.parametrize("fmt", dataset.FORMATS)
def test_the_judges_votes_load_as_their_own_config_and_import_to_the_same_judge_leaderboard(service, tmp_path,
                                                                                            fmt, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    judged = judge(service.store)
    folder = tmp_path / "ds"
    summary = dataset.export_dataset(admin(service), folder, fmt=fmt)
    assert summary.judge_votes == judged == 10 and summary.judge_models == list(JUDGES)
    table = load(folder, "judge_votes", tmp_path)
    assert table.column_names == [c.name for c in dataset.JUDGE_COLUMNS] and table.num_rows == judged
    stored = service.store.db.execute("select id, method_a, method_b, choice, model, detail from judge_votes "
                                      "order by id").fetchall()
    assert list(zip(table["judge_vote_id"], table["method_a"], table["method_b"], table["choice"], table["model"],
                    table["detail"], strict=True)) == [tuple(r) for r in stored]
    assert json.loads(table["detail"][1]) == {"answers": ["a", "b", "tie"], "n": 1}
    first = table[0]
    assert first["output_a"] == arena.output_texts(service.store, [first["output_a_id"]])[first["output_a_id"]]
    assert load(folder, "votes", tmp_path).num_rows == people(service.store), "people's votes stay apart"
    fresh = Store(tmp_path / "fresh.db")
    try:
        restored = Arena(fresh)
        result = dataset.import_dataset(admin(restored), folder)
        assert (result.judge_added, result.judge_present) == (judged, 0)
        assert judge_board(restored) and judge_board(restored) == judge_board(service)
        assert judge_board(restored, "plans") == judge_board(service, "plans")
        assert rows(restored) == rows(service), "people's leaderboard is not touched by the judge's votes"
        again = dataset.import_dataset(admin(restored), folder)
        assert (again.judge_added, again.judge_present) == (0, judged)
        assert fresh.db.execute("select count(*) from judge_votes").fetchone()[0] == judged
    finally:
        fresh.close()


def test_the_card_counts_the_judges_votes_names_its_models_and_keeps_them_apart(service, tmp_path):
    judge(service.store)
    dataset.export_dataset(admin(service), tmp_path / "all", fmt="jsonl")
    assert [c["config_name"] for c in header(tmp_path / "all")["configs"]] == ["votes", "outputs", "judge_votes"]
    assert ("- 10 LLM judge's vote(s), by judge model(s) `judge-x`, `judge-y`: kept apart from people's votes, in "
            "their own config `judge_votes`") in prose(tmp_path / "all")
    assert "## Columns of `judge_votes`" in prose(tmp_path / "all")
    summary = dataset.export_dataset(admin(service), tmp_path / "plans", task_set="plans", fmt="jsonl")
    lines = (tmp_path / "plans" / "judge_votes" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert summary.judge_votes == len(lines) == 3 and {json.loads(line)["task_set"] for line in lines} == {"plans"}
    plans = prose(tmp_path / "plans")
    assert "- 3 LLM judge's vote(s)" in plans and "judge has no campaign" not in plans


def test_a_campaign_export_holds_the_judges_votes_on_its_task_set_and_methods(service, tmp_path):
    judge(service.store)
    service.campaigns.create("pilot", task_set="animals", methods=("rat", "cot"))
    summary = dataset.export_dataset(admin(service), tmp_path / "ds", campaign="pilot", fmt="jsonl")
    lines = [json.loads(line) for line in
             (tmp_path / "ds" / "judge_votes" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(r["task_set"], r["method_a"], r["method_b"]) for r in lines} == {("animals", "cot", "rat")}
    assert summary.judge_votes == len(lines) == 2, "owls and bats, rat against cot"
    assert "The judge has no campaign: these are its votes on the campaign's task set and methods." \
        in prose(tmp_path / "ds")


def test_a_bad_judge_row_names_the_file_and_row_and_imports_nothing(service, tmp_path):
    judge(service.store)
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, fmt="jsonl")
    path = folder / "judge_votes" / "train.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "choice": "both_bad"})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fresh = Store(tmp_path / "fresh.db")
    try:
        with pytest.raises(ImportFormatError, match=r'train\.jsonl line 2: "choice" must be one of a, b, tie'):
            dataset.import_dataset(admin(Arena(fresh)), folder)
        assert people(fresh) == 0 and fresh.db.execute("select count(*) from judge_votes").fetchone()[0] == 0
    finally:
        fresh.close()


def test_votes_import_says_how_many_corrections_it_added(service, tmp_path, capsys):
    service.store.close()
    file = tmp_path / "votes.jsonl"
    assert app_module.main(["votes", "export", "--out", str(file)], env={"RAT_STUDIO_DB": str(tmp_path / "arena.db")}) \
        == 0
    capsys.readouterr()
    fresh = {"RAT_STUDIO_DB": str(tmp_path / "fresh.db")}
    assert app_module.main(["votes", "import", str(file)], env=fresh) == 0
    assert f"Imported 17 vote(s) from {file}; 2 correction(s) added." in capsys.readouterr().out
    assert app_module.main(["votes", "import", str(file)], env=fresh) == 0
    assert f"Imported 0 vote(s) from {file}; 17 already present; 0 correction(s) added." in capsys.readouterr().out


# -- campaigns (issue 38, F34) ----------------------------------------------------------------
PANEL = ("Dana Qi", "Evan Ro")  # a campaign's annotators


def campaign_votes(svc: Arena) -> None:
    """Campaign "pilot" on the animals: two annotators vote in it; then it is changed and closed."""
    svc.campaigns.create("pilot", task_set="animals", methods=("rat", "cot"), voters=[*PANEL, "study:wave1"], by=BOSS)
    for who in PANEL:
        shown = svc.next_pair(who)
        svc.vote(shown.battle_id, who, "b")
    svc.campaigns.change("pilot", by=BOSS, overlap=2)
    svc.campaigns.close("pilot", by=BOSS)


@pytest.mark.parametrize("fmt", dataset.FORMATS)
def test_export_then_import_keeps_each_votes_campaign_and_the_campaigns_history(service, tmp_path, fmt, capsys):
    """Before, `dataset export` then `import` dropped each vote's campaign: `leaderboard --campaign`
    failed after a restore. Now the campaigns' rows travel in their own config, first."""
    campaign_votes(service)
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, fmt=fmt)
    table = load(folder, "campaigns", tmp_path) if fmt == "parquet" else None
    assert table is None or [r["status"] for r in table] == ["open", "open", "closed"]
    assert not any(name in every_file(folder) for name in (BOSS, *PANEL)), "pseudonyms, as in votes"
    fresh = Store(tmp_path / "fresh.db")
    try:
        restored = Arena(fresh)
        result = dataset.import_dataset(admin(restored), folder)
        assert (result.campaigns_added, result.campaigns_present) == (3, 0)
        before, after = service.campaigns.history("pilot"), restored.campaigns.history("pilot")
        assert [(c.status, c.overlap, c.methods, c.task_set, c.created, c.started) for c in after] \
            == [(c.status, c.overlap, c.methods, c.task_set, c.created, c.started) for c in before]
        assert "study:wave1" in after[-1].voters and len(after[-1].voters) == 3
        board = results(restored).leaderboard(campaign="pilot", bootstrap=20)
        assert board.rows == results(service).leaderboard(campaign="pilot", bootstrap=20).rows and board.rows
        progress = (admin(restored).campaign_progress("pilot"), admin(service).campaign_progress("pilot"))
        assert (progress[0].votes, progress[0].started, progress[0].complete) \
            == (progress[1].votes, progress[1].started, progress[1].complete) and progress[0].votes == 2
        assert rows(restored) == rows(service), "the open arena's leaderboard as before"
        again = dataset.import_dataset(admin(restored), folder)
        assert (again.campaigns_added, again.campaigns_present, again.votes_added) == (0, 3, 0)
    finally:
        fresh.close()
    service.store.close()
    env = {"RAT_STUDIO_DB": str(tmp_path / "fresh.db")}
    assert app_module.main(["leaderboard", "--campaign", "pilot"], env=env) == 0
    assert "rat" in capsys.readouterr().out


def test_a_campaign_here_with_another_history_or_a_vote_naming_none_imports_nothing(service, tmp_path):
    campaign_votes(service)
    folder = tmp_path / "ds"
    dataset.export_dataset(admin(service), folder, fmt="jsonl")
    fresh = Store(tmp_path / "fresh.db")
    try:
        restored = Arena(fresh)
        restored.campaigns.create("pilot")  # another campaign of the same name
        with pytest.raises(StoreError, match="a campaign .pilot. exists in .* with another history"):
            dataset.import_dataset(admin(restored), folder)
        assert people(fresh) == 0 and len(restored.campaigns.history("pilot")) == 1
    finally:
        fresh.close()
    (folder / "campaigns" / "train.jsonl").unlink()
    (folder / "campaigns").rmdir()
    other = Store(tmp_path / "other.db")
    try:
        with pytest.raises(ImportFormatError, match=r"row \d+: campaign 'pilot' is in neither .* Nothing was imported"):
            dataset.import_dataset(admin(Arena(other)), folder)
        assert people(other) == 0
    finally:
        other.close()
