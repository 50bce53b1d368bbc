"""DeepResearch Bench's formats both ways (issue 40, item 1): `batch` on the bench's task file keeps
each task's id, topic and language (and runs it in that language); `dataset export --format drb`
writes the bench's report lines; `outputs import --format drb` reads them as one method's outputs.
The shapes are the bench's own (Ayanami0730/deep_research_bench): data/prompt_data/query.jsonl and
data/test_data/raw_data/<model>.jsonl."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import app as app_module
from common.settings import Settings
from data import arena
from tests.fakes.method_scripts import MethodAuthor

#: Two tasks in the shape of the bench's query.jsonl (its ids 1..50 are Chinese, 51..100 English).
QUERY = [
    {"id": 7, "topic": "Science & Technology", "language": "zh", "prompt": "整理Python 3的发展历史及其生态系统。"},
    {"id": 57, "topic": "Software Development", "language": "en",
     "prompt": "Write a short history of Python 3 and its ecosystem."},
]
MARK = re.compile(r"\[(\d+)\]")
REFERENCE = re.compile(r"^\[(\d+)\] (https?://\S+) - (.+)$")


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "drb.db"


@pytest.fixture
def env(db, llm, shared_web) -> dict[str, str]:
    return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": shared_web.searxng_url,
            "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(db)}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def store_of(db: Path):
    return app_module.build(Settings(db_path=db)).store


def system_of(body: dict) -> str:
    return " ".join(m["content"] for m in body["messages"] if m["role"] == "system")


@pytest.fixture
def ran(cli, env, llm, db, tmp_path):
    """The bench's two tasks run by `batch` with rat on the stand-ins; the model's author."""
    author = MethodAuthor()
    llm.reply(author)
    code, out, err = cli("batch", str(write_jsonl(tmp_path / "query.jsonl", QUERY)), "--methods", "rat", env=env)
    assert code == 0, err
    return author


def test_batch_keeps_the_bench_id_topic_and_language_and_writes_in_it(ran, db):
    store = store_of(db)
    try:
        runs = store.list_runs(status="done")
        assert len(runs) == 2
        metas = {r.task: store.get_task(r.task_id).meta for r in runs}
        for q in QUERY:
            meta = metas[q["prompt"]]
            assert (meta["id"], meta["topic"], meta["language"]) == (q["id"], q["topic"], q["language"])
            assert isinstance(meta["id"], int), "the bench's FACT step looks reports up by the id as written"
        chosen = {r.task: r.settings["language"] for r in runs}
        assert chosen == {q["prompt"]: q["language"] for q in QUERY}
    finally:
        store.close()
    systems = {system_of(body) for _, prompt, body in ran.calls}
    assert any("Write in Chinese" in s for s in systems) and any("Write in English" in s for s in systems), systems


def test_export_drb_gives_the_bench_lines_with_marks_and_references(ran, cli, env, tmp_path):
    out = tmp_path / "rat.jsonl"
    code, printed, err = cli("dataset", "export", str(out), "--format", "drb", "--method", "rat", env=env)
    assert code == 0, err
    assert "Wrote 2 report(s) of rat" in printed
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [set(line) for line in lines] == [{"id", "prompt", "article"}] * 2
    assert sorted((line["id"], line["prompt"]) for line in lines) == sorted((q["id"], q["prompt"]) for q in QUERY)
    for line in lines:
        body, heading, refs = split_article(line["article"])
        assert heading == ("参考文献：" if line["id"] == 7 else "References")
        marks = {int(n) for n in MARK.findall(body)}
        assert marks, line["article"]
        numbers = [int(REFERENCE.match(r).group(1)) for r in refs]
        assert marks == set(numbers) and numbers == sorted(numbers), line["article"]

    code, _, err = cli("dataset", "export", str(out), "--format", "drb", "--method", "rat", env=env)
    assert code != 0 and "exists" in err and err.count("\n") == 1
    code, _, err = cli("dataset", "export", str(tmp_path / "x.jsonl"), "--format", "drb", env=env)
    assert code != 0 and "--method" in err
    code, _, err = cli("dataset", "export", str(tmp_path / "y.jsonl"), "--format", "drb", "--method", "cot", env=env)
    assert code != 0 and "no finished run of method 'cot'" in err


def split_article(article: str) -> tuple[str, str, list[str]]:
    """(body, reference heading, reference lines) of an exported article."""
    lines = article.splitlines()
    at = max(i for i, line in enumerate(lines) if line in ("References", "参考文献："))
    return "\n".join(lines[:at]), lines[at], [line for line in lines[at + 1:] if line.strip()]


def test_import_drb_reads_reports_as_outputs_of_the_method(ran, cli, env, db, tmp_path):
    out = tmp_path / "rat.jsonl"
    assert cli("dataset", "export", str(out), "--format", "drb", "--method", "rat", env=env)[0] == 0
    reports = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    new = {"id": 99, "prompt": "A task only the other system ran.", "article": "It ran [1].\n\nReferences\n"
                                                                                 "[1] https://example.org - Example"}
    path = write_jsonl(tmp_path / "claude.jsonl", [*reports, new])
    code, printed, err = cli("outputs", "import", str(path), "--format", "drb", "--method", "claude", env=env)
    assert code == 0, err
    assert "Imported 3 output(s)" in printed
    store = store_of(db)
    try:
        rows = [r for r in arena.latest_outputs(store) if r.method == "claude"]
        by_prompt = {r.prompt: r for r in rows}
        assert set(by_prompt) == {*(q["prompt"] for q in QUERY), new["prompt"]}
        ran_tasks = {r.task: r.task_id for r in store.list_runs(status="done")}
        for q in QUERY:  # joined to the tasks batch made, by prompt
            assert by_prompt[q["prompt"]].task_id == ran_tasks[q["prompt"]]
    finally:
        store.close()
    code, printed, _ = cli("outputs", "import", str(path), "--format", "drb", "--method", "claude", env=env)
    assert code == 0 and "3 already present" in printed


GOOD = {"id": 1, "prompt": "收集整理目前中国9阶层实际收入和财务状况",
        "article": "正文 [1]\n\n参考文献：\n[1] https://example.org - 例"}


@pytest.mark.parametrize("line, message", [
    ("{oops", "line 2: not valid JSON"),
    ('"just a string"', "line 2: expected a JSON object"),
    ('{"id": 2, "article": "x"}', 'line 2: "prompt" must be a non-empty string'),
    ('{"id": 2, "prompt": "x"}', 'line 2: "article" must be a non-empty string'),
    ('{"id": 2, "prompt": "x", "article": "  "}', 'line 2: "article" must be a non-empty string'),
    ('{"id": 2.5, "prompt": "x", "article": "y"}', 'line 2: "id" must be a string or a whole number'),
    (json.dumps({"id": 2, "prompt": "x", "article": "y" * 500_001}), 'line 2: "article" is 500,001 characters long'),
])
def test_bad_report_lines_are_refused_naming_the_line(cli, tmp_path, line, message):
    path = write_jsonl(tmp_path / "bad.jsonl", [GOOD, line])
    code, _, err = cli("outputs", "import", str(path), "--format", "drb", "--method", "claude")
    assert code != 0 and err.count("\n") == 1, err
    assert f"{path} {message}" in err, err


def test_drb_import_needs_a_method_and_the_studio_format_refuses_one(cli, tmp_path):
    path = write_jsonl(tmp_path / "ok.jsonl", [GOOD])
    code, _, err = cli("outputs", "import", str(path), "--format", "drb")
    assert code != 0 and "--method" in err and err.count("\n") == 1
    code, _, err = cli("outputs", "import", str(path), "--method", "claude")
    assert code != 0 and "--format drb" in err
    code, printed, err = cli("outputs", "import", str(path), "--format", "drb", "--method", "claude")
    assert code == 0 and "Imported 1 output(s)" in printed, err
