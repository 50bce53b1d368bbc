"""Batches of (task, method) pairs through the runner: resumable, failures reported; the bundled
task sets; QA scoring with exact match and F1 after SQuAD/ITRG normalisation."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from core.batch import (
    TASKS_DIR,
    Batch,
    BatchInputError,
    Progress,
    answer_recall,
    exact_match,
    extract_answer,
    f1_score,
    format_duration,
    latest_finished,
    load_tasks,
    score_qa,
)
from tests.fakes.llm_server import FakeReply
from tests.fakes.method_scripts import MethodAuthor


# -- the bundled task sets ---------------------------------------------------------------------
def test_rat_writing_set_has_the_three_templates_of_a4_three_variants_each():
    tasks = load_tasks(TASKS_DIR / "rat-writing.jsonl")
    assert len(tasks) == 9 and {t.kind for t in tasks} == {"writing"} and {t.task_set for t in tasks} == {"rat-writing"}
    templates = [r"^Write a survey paper to summarize the .+\.$", r"^Describe .+'s life\.$",
                 r"^Summarize the .+ according to the timeline\.$"]
    for pattern in templates:
        assert len([t for t in tasks if re.match(pattern, t.prompt)]) == 3, pattern
    assert any("Retrieval-augmented Generation methods for Large Language Models" in t.prompt for t in tasks)
    assert any("Jin Yong" in t.prompt for t in tasks) and any("American Civil War" in t.prompt for t in tasks)


def test_minecraft_set_uses_the_a3_instruction_over_twenty_items():
    tasks = load_tasks(TASKS_DIR / "minecraft.jsonl")
    pattern = re.compile(r"^Give you nothing in the inventory, generate a step-by-step plan for the task of obtaining "
                         r"an? (.+) in Minecraft survival mode, and describe the object Minecraft item and its number "
                         r"at every step\. For every step, start with 'STEP' as start\.$")
    items = [pattern.match(t.prompt).group(1) for t in tasks]
    assert len(set(items)) == len(items) >= 20
    assert {t.kind for t in tasks} == {"plan"} and {t.task_set for t in tasks} == {"minecraft"}


def test_qa_set_has_thirty_questions_with_gold_answers():
    tasks = load_tasks(TASKS_DIR / "qa.jsonl")
    assert len(tasks) >= 30 and all(t.answers for t in tasks)
    assert {t.kind for t in tasks} == {"qa"} and {t.task_set for t in tasks} == {"qa"}
    assert len({t.prompt for t in tasks}) == len(tasks)


@pytest.mark.parametrize("line, message", [
    ("{oops", "line 2: not valid JSON"),
    ('"just a string"', "line 2: expected a JSON object"),
    ('{"id": "b"}', 'line 2: "prompt" must be a non-empty string'),
    ('{"id": "b", "prompt": "x", "kind": "essay"}', 'line 2: "kind" is \'essay\''),
    ('{"id": "a", "prompt": "x"}', "line 2: the id 'a' is already used on line 1"),
    ('{"id": "b", "prompt": "x", "answers": "Canberra", "task_set": 3}', 'line 2: "task_set" must be a string'),
    ('{"id": 2, "prompt": "x", "language": "klingon"}', 'line 2: "language" is \'klingon\'; give a language code'),
    ('{"id": 2, "prompt": "x", "topic": 3}', 'line 2: "topic" must be a string'),
])
def test_bad_task_lines_are_named_with_the_fix(tmp_path, line, message):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "a", "prompt": "Describe Jin Yong\'s life."}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(BatchInputError, match=re.escape(message)):
        load_tasks(path)


def test_defaults_and_missing_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('\n{"prompt": "  Describe Jin Yong\'s life. "}\n', encoding="utf-8")
    (spec,) = load_tasks(path)
    assert (spec.id, spec.prompt, spec.kind, spec.task_set) == (
        "line 2", "Describe Jin Yong's life.", "writing", "mine")
    with pytest.raises(BatchInputError, match="No task file"):
        load_tasks(tmp_path / "nope.jsonl")


# -- running -----------------------------------------------------------------------------------
def _tasks(tmp_path, n=3, kind="writing"):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{j}", "prompt": f"Write about topic {j}.", "kind": kind,
                                        "task_set": "tiny"}) + "\n" for j in range(1, n + 1)), encoding="utf-8")
    return load_tasks(path)


async def test_batch_runs_every_pair_as_a_stored_run(app, llm, tmp_path):
    llm.reply(MethodAuthor())
    seen = []
    report = await Batch(app.runner, app.store, ["direct", "cot"], concurrency=3,
                         on_progress=lambda p: seen.append(p.line())).run(_tasks(tmp_path))
    assert [(r.task_id, r.method, r.status) for r in report.results] == [
        (t, m, "done") for t in ("t1", "t2", "t3") for m in ("direct", "cot")]
    table = report.by_method()
    assert table["direct"]["done"] == 3 and table["cot"]["done"] == 3
    assert table["direct"]["completion_tokens"] > 0 and table["direct"]["llm_calls"] == 3
    assert seen[0] == "0/6 done, 0 failed" and seen[-1] == "6/6 done, 0 failed"
    runs = app.store.list_runs(status="done")
    assert len(runs) == 6 and {r.task_set for r in runs} == {"tiny"}
    task = app.store.get_task(runs[0].task_id)
    assert task.meta["id"].startswith("t")
    from data.arena import sync_run_outputs

    assert sync_run_outputs(app.store) == 6, "the arena picks the outputs up at once"


async def test_batch_resumes_after_the_model_goes_down(app, llm, tmp_path):
    author = MethodAuthor()
    state = {"n": 0}

    def flaky(body):
        state["n"] += 1
        return author(body) if state["n"] <= 3 else FakeReply.fail(503, "overloaded")

    llm.reply(flaky)
    tasks = _tasks(tmp_path, n=4)
    first = await Batch(app.runner, app.store, ["direct", "cot"], concurrency=1).run(tasks)
    done = [(r.task_id, r.method) for r in first.results if r.status == "done"]
    failed = [(r.task_id, r.method) for r in first.results if r.status == "failed"]
    assert len(done) == 3 and len(failed) == 5
    assert all(r.error and r.run_id for r in first.failed), "failures are reported, with their run"

    llm.reply(author)
    calls_before = len(author.calls)
    second = await Batch(app.runner, app.store, ["direct", "cot"], concurrency=2).run(tasks)
    assert sorted((r.task_id, r.method) for r in second.results if r.status == "skipped") == sorted(done)
    assert sorted((r.task_id, r.method) for r in second.results if r.status == "done") == sorted(failed)
    assert len(author.calls) - calls_before == 5, "only the unfinished pairs run"
    third = await Batch(app.runner, app.store, ["direct", "cot"]).run(tasks)
    assert {r.status for r in third.results} == {"skipped"}


async def test_batch_resumes_after_being_cancelled(app, llm, tmp_path):
    llm.reply(MethodAuthor())
    tasks = _tasks(tmp_path, n=3)
    two_done = asyncio.Event()

    def progress(p: Progress):
        if p.done >= 2:
            two_done.set()

    llm.latency = 0.05
    batch = Batch(app.runner, app.store, ["direct", "cot"], concurrency=1, on_progress=progress)
    job = asyncio.create_task(batch.run(tasks))
    await asyncio.wait_for(two_done.wait(), 20)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    statuses = [r.status for r in app.store.list_runs()]
    finished = statuses.count("done")
    assert 2 <= finished < 6 and "interrupted" in statuses
    llm.latency = 0.0
    report = await Batch(app.runner, app.store, ["direct", "cot"], concurrency=2).run(tasks)
    assert len([r for r in report.results if r.status == "skipped"]) == finished
    assert len([r for r in report.results if r.status == "done"]) == 6 - finished
    assert len(app.store.list_runs(status="done")) == 6


async def test_a_run_refused_before_it_starts_is_reported(app, llm, tmp_path):
    llm.reply(MethodAuthor())
    from core.batch import TaskSpec

    long = TaskSpec("big", "x" * 30_000, "writing", "tiny")
    report = await Batch(app.runner, app.store, ["direct"]).run([long])
    assert report.results[0].status == "failed" and "30,000" in report.results[0].error


def test_unknown_methods_are_refused():
    with pytest.raises(BatchInputError, match="Unknown method nope.*Known methods"):
        Batch(None, None, ["direct", "nope"])


# -- QA scoring --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, answer", [
    ("Canberra", "Canberra"),
    ("Step one.\n\nAnswer: Canberra", "Canberra"),
    ("Answer: first\n**Final answer:** Canberra", "Canberra"),
    ("The capital is Canberra.", "The capital is Canberra."),
])
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_em_f1_and_recall():
    assert exact_match("The Jane Austen!", ["Jane Austen"]) == 1.0
    assert exact_match("Austen", ["Jane Austen"]) == 0.0
    assert f1_score("Albert", ["Albert Einstein"]) == pytest.approx(2 / 3)
    assert f1_score("Einstein", ["Newton", "Albert Einstein"]) == pytest.approx(2 / 3)
    assert f1_score("", [""]) == 1.0 and f1_score("x", [""]) == 0.0
    assert answer_recall("It was written by Jane Austen in 1813.", ["Jane Austen"]) == 1.0
    assert answer_recall("Austenite steel", ["Austen"]) == 0.0


QA = [("What is the capital of Australia?", ["Canberra"], "Answer: Canberra"),
      ("Who wrote Pride and Prejudice?", ["Jane Austen"], "She was English.\nAnswer: the Jane Austen"),
      ("Who developed general relativity?", ["Albert Einstein", "Einstein"], "Answer: Albert"),
      ("What is the chemical symbol for gold?", ["Au"], None)]  # no run for this one


@pytest.fixture
def qa_file(tmp_path):
    path = tmp_path / "tiny-qa.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{j}", "prompt": q, "kind": "qa", "task_set": "tiny-qa", "answers": a})
                            + "\n" for j, (q, a, _) in enumerate(QA, start=1)), encoding="utf-8")
    return path


async def test_eval_qa_scores_em_and_f1(app, llm, qa_file):
    replies = {q: r for q, _, r in QA}
    llm.reply(lambda body: replies[body["messages"][-1]["content"].split("\n\n")[0]])
    tasks = [t for t in load_tasks(qa_file) if replies[t.prompt]]
    await Batch(app.runner, app.store, ["direct"]).run(tasks)
    (score,) = score_qa(app.store, task_set="tiny-qa", methods=["direct"])
    assert score.n == 3 and score.missing == 0, "the gold answers travel with the stored tasks"
    assert score.em == pytest.approx(66.67) and score.f1 == pytest.approx(88.89)
    assert score.recall == pytest.approx(66.67)
    from core.batch import load_answers

    (with_file,) = score_qa(app.store, task_set="tiny-qa", methods=["direct"], answers=load_answers(qa_file))
    assert with_file.n == 3 and with_file.missing == 1


def _cli(app, *argv):
    from ui.cli import build_parser

    args = build_parser().parse_args(list(argv))
    return args.func(args, app)


def test_cli_batch_then_eval_qa(app, llm, qa_file, capsys):
    replies = {q: r or "Answer: Fe" for q, _, r in QA}
    llm.reply(lambda body: replies[body["messages"][-1]["content"].split("\n\n")[0]])
    assert _cli(app, "batch", str(qa_file), "--methods", "direct", "--concurrency", "2") == 0
    captured = capsys.readouterr()
    assert "4/4 done, 0 failed" in captured.err
    assert re.search(r"^direct\s+4\s+0\s+0\s", captured.out, re.M), captured.out
    assert _cli(app, "batch", str(qa_file), "--methods", "direct") == 0
    assert "4 skipped (already finished)" in capsys.readouterr().err
    assert _cli(app, "eval", "qa", "--methods", "direct", "--task-set", "tiny-qa", "--tasks", str(qa_file)) == 0
    out = capsys.readouterr().out
    assert re.search(r"^direct\s+4\s+50\.0\s+66\.7\s+50\.0\s+0\s+0$", out, re.M), out


def test_cli_reports_a_bad_line(app, tmp_path):
    from common.errors import RatStudioError

    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok"}\n{"prompt": ""}\n', encoding="utf-8")
    with pytest.raises(RatStudioError, match=r"bad\.jsonl line 2: \"prompt\" must be a non-empty string"):
        _cli(app, "batch", str(path), "--methods", "direct")


def test_eval_without_runs_says_what_to_do(app, qa_file):
    from common.errors import TaskError

    with pytest.raises(TaskError, match="python app.py batch"):
        _cli(app, "eval", "qa", "--task-set", "tiny-qa", "--tasks", str(qa_file))


def test_progress_line_and_durations():
    p = Progress(total=40, done=11, failed=1, skipped=2)
    p.started -= 60
    assert p.line() == "12/40 done, 1 failed, 2 skipped (already finished), ETA 2m 20s"
    assert Progress(total=3).line() == "0/3 done, 0 failed"
    assert format_duration(45) == "45s" and format_duration(125) == "2m 5s"
    assert format_duration(3 * 3600 + 120) == "3h 2m"


def test_the_latest_finished_run_of_each_task_and_method_is_what_the_scores_read(store):
    """QA scores, FActScore and RACE read ``latest_finished``: a newer finished run hides an older
    one of its task and method, an unfinished one hides nothing, and ``methods`` and ``task_set``
    narrow it (None: every set)."""
    def run(prompt: str, method: str, status: str, task_set: str, created: str) -> str:
        run_id = store.create_run(method, store.add_task(prompt, task_set=task_set), {})
        store.update_run(run_id, status=status, final_text=f"{method} on {prompt}", created=created)
        return run_id

    older = run("Q1", "direct", "done", "qa", "2026-01-01T00:00:00")
    newer = run("Q1", "direct", "unsourced", "qa", "2026-01-02T00:00:00")
    run("Q1", "direct", "failed", "qa", "2026-01-03T00:00:00")
    cot = run("Q1", "cot", "done", "qa", "2026-01-01T00:00:00")
    other_set = run("W1", "direct", "done", "writing", "2026-01-01T00:00:00")
    run("W2", "direct", "interrupted", "writing", "2026-01-04T00:00:00")

    ids = lambda latest: {key: r.id for key, r in latest.items()}  # noqa: E731
    assert ids(latest_finished(store)) == {("Q1", "direct"): newer, ("Q1", "cot"): cot, ("W1", "direct"): other_set}
    assert older not in ids(latest_finished(store)).values(), "a newer finished run hides the older one"
    assert ids(latest_finished(store, task_set="qa")) == {("Q1", "direct"): newer, ("Q1", "cot"): cot}
    assert ids(latest_finished(store, task_set="writing", methods=["direct"])) == {("W1", "direct"): other_set}
    assert ids(latest_finished(store, methods=["cot"])) == {("Q1", "cot"): cot}
    (score,) = score_qa(store, task_set="writing", methods=["direct"], answers={("W1", "writing"): ("direct",)})
    assert [d["run_id"] for d in score.details] == [other_set], "score_qa reads the set it is given, no other"
