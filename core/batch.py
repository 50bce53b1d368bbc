"""Run several methods over a task set, side by side; and score QA runs.

Batch. ``load_tasks`` reads a JSONL task file (one ``{"id", "prompt", "kind", "task_set",
"answers"?}`` object per line) and says which line is wrong and how to fix it. DeepResearch Bench's
task file (``data/prompt_data/query.jsonl`` of Ayanami0730/deep_research_bench: lines
``{"id": 1, "topic": "Finance & Business", "language": "zh", "prompt": "..."}``) is such a file: its
``id`` (a whole number there, kept as written, since the bench's FACT step looks articles up by
it: ``utils/extract.py``'s ``id_to_lang_map``), ``topic`` and ``language`` are kept in the task's
``meta``, and a task's ``language`` is the language its runs write in (the run's language setting,
``core.text.language``) unless ``--language`` names one for all. ``Batch.run``
starts every (task, method) pair through the runner, so each output is an ordinary stored run
(the arena picks finished runs up at once), a few at a time. It is resumable: a pair that already
has a finished run (status "done" for the same prompt, kind, task set and method) is skipped, so
running the same command again after an interruption runs only the rest; an "unsourced" run (no
source found) is run again, in case search works this time. A run that fails is
reported and the batch goes on. Progress goes to a callback (the CLI prints one line that
updates); nothing here prints.

QA evaluation. ``score_qa`` scores the latest finished run of each method on each task of a QA
set against the task's gold answers, with exact match and token F1 after ITRG's normalisation
(003, section 3.3: "we lowercase generated answers and remove articles, punctuation and duplicate
whitespaces"; SQuAD's evaluation script), taking the best over the gold answers. The prediction
is the text after the last "Answer:" line when there is one (every method asks QA tasks for one),
else the whole text. ``recall`` is 003's answer recall (table 4): a gold answer occurs in the
whole output. Unsourced runs are scored, and counted in their own column.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from common.errors import ConfigError, RatStudioError, TaskError
from common.types import KINDS
from core.jsonl import LineId, Record, read_jsonl
from core.methods.helpers import qa_normal_form
from core.text import language

log = logging.getLogger(__name__)

TASKS_DIR = Path(__file__).resolve().parent.parent / "data" / "tasks"
EXAMPLE = '{"id": "w1", "prompt": "Describe Jin Yong\'s life.", "kind": "writing", "task_set": "rat-writing"}'
ALL_RUNS = 10**9  # list_runs limit meaning "all of them"
FINISHED = ("done", "unsourced")


class BatchInputError(TaskError):
    """A task file or a method list cannot be used; the message names the line and the fix."""


# -- tasks -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskSpec:
    id: str
    prompt: str
    kind: str = "writing"
    task_set: str = ""
    answers: tuple[str, ...] = ()
    line: int = 0
    given_id: int | str | None = None  # the line's id as written (None: it gave none)
    topic: str = ""
    language: str = ""  # a language code, "" for the run's setting

    @property
    def meta(self) -> dict:
        """What the task's row keeps besides its text: its id as the file wrote it, its gold
        answers, and its topic and language when the line gave them."""
        meta: dict[str, Any] = {"id": self.id if self.given_id is None else self.given_id,
                                "answers": list(self.answers)}
        meta.update({k: v for k, v in (("topic", self.topic), ("language", self.language)) if v})
        return meta

    def task(self):
        from common.types import Task

        return Task(self.prompt, self.kind, self.task_set)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.prompt, self.kind, self.task_set)


class TaskRecord(Record):
    """One line of a task file."""

    prompt: str = Field(description="a non-empty string (the task)")
    kind: str = "writing"
    task_set: str | None = Field(None, description="a string (the task set's name)")
    answers: tuple[str, ...] = Field((), description='a list of strings such as ["Canberra"]')
    id: LineId = Field(None, description="a string or a whole number")
    topic: str | None = Field(None, description="a string (the task's subject, as DeepResearch Bench gives it)")
    language: str | None = Field(None, description="a language code such as en or zh")

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            return language.check(value.strip())
        except ConfigError:
            raise ValueError(f"is {value!r}; give a language code such as en, zh or fr") from None

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string (the task)")
        return value.strip()

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"is {value!r}; use one of {', '.join(KINDS)}")
        return value

    @field_validator("answers", mode="before")
    @classmethod
    def _answers(cls, value: Any) -> Any:
        """One answer may be given as a string; numbers are read as their text."""
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool)
                                           for a in value):
            return [str(a) for a in value]
        return value


def load_tasks(path: str | Path, *, max_chars: int | None = None) -> list[TaskSpec]:
    """The tasks of a JSONL file. ``prompt`` is required; ``kind`` defaults to "writing",
    ``task_set`` to the file's name without extension, ``id`` to "line N". Raises
    BatchInputError naming the first bad line and the fix (blank lines are skipped; the file is read
    by ``core.jsonl.read_jsonl``: a byte order mark is skipped, a lone surrogate or a control
    character other than tab and line breaks refused)."""
    path = Path(path)
    if not path.exists():
        raise BatchInputError(f"No task file {path}. The bundled sets are in {TASKS_DIR}: "
                              f"{', '.join(sorted(p.name for p in TASKS_DIR.glob('*.jsonl')))}.")
    specs: list[TaskSpec] = []
    ids: dict[str, int] = {}
    for n, record in read_jsonl(path, TaskRecord, EXAMPLE, BatchInputError, what="tasks"):
        where = f"{path} line {n}"
        if max_chars and len(record.prompt) > max_chars:
            raise BatchInputError(f"{where}: the prompt is {len(record.prompt):,} characters; the limit is "
                                  f"{max_chars:,}. Shorten it, or raise the limit with --max-task-chars.")
        task_id = f"line {n}" if record.id is None else str(record.id)
        if task_id in ids:
            raise BatchInputError(f'{where}: the id {task_id!r} is already used on line {ids[task_id]}; '
                                  "give every task its own id.")
        ids[task_id] = n
        task_set = path.stem if record.task_set is None else record.task_set
        specs.append(TaskSpec(task_id, record.prompt, record.kind, task_set, record.answers, n, record.id,
                              (record.topic or "").strip(), record.language or ""))
    return specs


def parse_methods(text: str | Iterable[str]) -> list[str]:
    """A comma-separated method list, checked against the registry. Raises BatchInputError
    naming the unknown ones and the known ones."""
    from core.methods import METHODS

    names = [m.strip() for m in (text.split(",") if isinstance(text, str) else text) if m and m.strip()]
    if not names:
        raise BatchInputError(f"Name at least one method with --methods, e.g. --methods rat,rag-5. "
                              f"Known methods: {', '.join(sorted(METHODS))}.")
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise BatchInputError(f"Unknown method {', '.join(unknown)}. Known methods: {', '.join(sorted(METHODS))}.")
    return list(dict.fromkeys(names))


# -- running -----------------------------------------------------------------------------------
@dataclass
class PairResult:
    task_id: str
    method: str
    status: str  # done | unsourced | failed | skipped | interrupted
    run_id: str = ""
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0


@dataclass
class Progress:
    total: int  # pairs to run in this batch (skipped ones not included)
    done: int = 0
    failed: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def finished(self) -> int:
        return self.done + self.failed

    def eta_seconds(self) -> float | None:
        if not self.finished:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.finished * (self.total - self.finished)

    def line(self) -> str:
        text = f"{self.finished}/{self.total} done, {self.failed} failed"
        if self.skipped:
            text += f", {self.skipped} skipped (already finished)"
        eta = self.eta_seconds()
        if eta is not None and self.finished < self.total:
            text += f", ETA {format_duration(eta)}"
        return text


@dataclass
class BatchReport:
    results: list[PairResult]
    methods: list[str]

    def by_method(self) -> dict[str, dict]:
        table: dict[str, dict] = {}
        for m in self.methods:
            rows = [r for r in self.results if r.method == m]
            ran = [r for r in rows if r.status in ("done", "unsourced", "failed")]
            table[m] = {
                "done": sum(r.status == "done" for r in rows),
                "unsourced": sum(r.status == "unsourced" for r in rows),
                "failed": sum(r.status == "failed" for r in rows),
                "skipped": sum(r.status == "skipped" for r in rows),
                "prompt_tokens": sum(r.prompt_tokens for r in ran),
                "completion_tokens": sum(r.completion_tokens for r in ran),
                "llm_calls": sum(r.llm_calls for r in ran),
                "seconds": round(sum(r.seconds for r in ran), 2),
                "seconds_per_run": round(sum(r.seconds for r in ran) / len(ran), 2) if ran else 0.0,
            }
        return table

    @property
    def failed(self) -> list[PairResult]:
        return [r for r in self.results if r.status == "failed"]


class Batch:
    """Runs (task, method) pairs through ``runner``, ``concurrency`` at a time; ``store`` is
    where the runs are kept. Raises BatchInputError for an unknown method, and ConfigError for a
    ``--param`` that no method of the batch reads or whose value is out of range (before any run)."""

    def __init__(self, runner, store, methods: list[str], *, concurrency: int = 2,
                 on_progress: Callable[[Progress], None] | None = None):
        from core.methods.base import check_params

        self.runner, self.store = runner, store
        self.methods = parse_methods(methods)
        settings = getattr(runner, "settings", None)
        if settings is not None:
            check_params(self.methods, settings.method.params)
        self.concurrency = max(1, concurrency)
        self.on_progress = on_progress or (lambda progress: None)

    def finished_pairs(self) -> set[tuple[str, str, str, str]]:
        """(prompt, kind, task_set, method) of every run with status done."""
        return {(r.task, r.kind, r.task_set, r.method)
                for r in self.store.list_runs(status="done", limit=ALL_RUNS)}

    def plan(self, tasks: list[TaskSpec]) -> tuple[list[tuple[TaskSpec, str]], list[tuple[TaskSpec, str]]]:
        """(pairs to run, pairs already finished), task by task so that a task's outputs from
        every method arrive together (the arena can pair them at once)."""
        finished = self.finished_pairs()
        todo, skipped = [], []
        for spec in tasks:
            for method in self.methods:
                (skipped if (*spec.key, method) in finished else todo).append((spec, method))
        return todo, skipped

    async def run(self, tasks: list[TaskSpec]) -> BatchReport:
        todo, skipped = self.plan(tasks)
        progress = Progress(total=len(todo), skipped=len(skipped))
        results = [PairResult(spec.id, method, "skipped") for spec, method in skipped]
        self.on_progress(progress)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(spec: TaskSpec, method: str) -> PairResult:
            async with gate:
                try:
                    result = await self._run_pair(spec, method)
                except Exception as exc:  # a bug or a broken store: report it, keep the batch going
                    log.exception("batch: %s on %s crashed", method, spec.id)
                    result = PairResult(spec.id, method, "failed",
                                        error=f"internal error ({type(exc).__name__}: {exc})")
            if result.status in ("done", "unsourced"):
                progress.done += 1
            else:
                progress.failed += 1
            self.on_progress(progress)
            return result

        results += await asyncio.gather(*(one(spec, method) for spec, method in todo))
        return BatchReport(results=results, methods=self.methods)

    async def _run_pair(self, spec: TaskSpec, method: str) -> PairResult:
        from common.events import Failed, Final, RunStarted

        store = self.store
        # the task row keeps the id, gold answers, topic and language, for `eval qa`, the arena and
        # `dataset export --format drb`
        store.add_task(spec.prompt, spec.kind, spec.task_set, meta=spec.meta)
        result = PairResult(spec.id, method, "failed")
        own = self._settings_for(spec)
        try:
            async with aclosing(self.runner.start(method, spec.task(), **own)) as events:
                async for event in events:
                    if isinstance(event, RunStarted):
                        result.run_id = event.run_id
                    elif isinstance(event, Final):
                        result.status = "done"
                    elif isinstance(event, Failed):
                        result.error = event.error
        except RatStudioError as exc:  # refused before it started (too long, unknown kind)
            result.error = str(exc)
        if result.run_id:
            run = store.get_run(result.run_id)
            result.prompt_tokens = run.prompt_tokens
            result.completion_tokens = run.completion_tokens
            result.llm_calls = run.llm_calls
            result.seconds = run.wall_seconds
            if result.status == "done":
                result.status = str(run.status)  # done, or unsourced: finished with no source at all
            if result.status not in ("done", "unsourced") and not result.error:
                result.error = run.error or f"the run ended with status {run.status}"
        return result


    def _settings_for(self, spec: TaskSpec) -> dict:
        """``runner.start``'s ``settings`` for a task whose line names its language, when the
        runner's language setting is "auto" (the task's own): the runner's, writing in that
        language. Empty (the runner's settings as they are) otherwise: --language given wins."""
        settings = getattr(self.runner, "settings", None)
        if not spec.language or settings is None or settings.method.language != language.AUTO:
            return {}
        return {"settings": replace(settings, method=replace(settings.method, language=spec.language))}


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m" if minutes >= 10 else f"{minutes}m {seconds}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m"


def format_table(headers: list[str], rows: list[list]) -> str:
    """A plain text table: the first column left-aligned, the others right-aligned."""
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[c]) for r in cells) for c in range(len(headers))]

    def fmt(row: list[str]) -> str:
        return "  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(row, widths, strict=True)))

    return "\n".join([fmt(cells[0]), "  ".join("-" * w for w in widths), *(fmt(r) for r in cells[1:])])


def format_report(report: BatchReport) -> str:
    rows = []
    for method, s in report.by_method().items():
        rows.append([method, s["done"], s["unsourced"], s["failed"], s["skipped"], f"{s['prompt_tokens']:,}",
                     f"{s['completion_tokens']:,}", s["llm_calls"], f"{s['seconds']:.1f}",
                     f"{s['seconds_per_run']:.1f}"])
    return format_table(["method", "done", "unsourced", "failed", "skipped", "prompt tok", "completion tok", "calls",
                         "seconds", "s/run"], rows)


# -- QA evaluation -----------------------------------------------------------------------------
def extract_answer(text: str) -> str:
    """The short answer in an output: after its last "Answer:" line, else the whole text."""
    found = None
    for line in text.splitlines():
        stripped = line.strip().lstrip("#*> ").strip()
        lower = stripped.lower()
        for label in ("final answer:", "answer:"):
            if lower.startswith(label):
                found = stripped[len(label):].strip().strip("*").strip()
                break
    return found if found is not None else text.strip()


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    pred = qa_normal_form(prediction)
    return float(any(pred == qa_normal_form(g) for g in golds))


def f1_score(prediction: str, golds: Iterable[str]) -> float:
    """SQuAD token F1, the best over the gold answers."""
    pred = qa_normal_form(prediction).split()
    best = 0.0
    for gold in golds:
        ref = qa_normal_form(gold).split()
        if not pred or not ref:
            best = max(best, float(pred == ref))
            continue
        common = sum((Counter(pred) & Counter(ref)).values())
        if common:
            precision, recall = common / len(pred), common / len(ref)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def answer_recall(text: str, golds: Iterable[str]) -> float:
    """003's answer recall: 1 when a (normalised) gold answer occurs in the (normalised) text."""
    whole = f" {qa_normal_form(text)} "
    return float(any(f" {qa_normal_form(g)} " in whole for g in golds if qa_normal_form(g)))


@dataclass
class QAScore:
    method: str
    n: int = 0  # tasks scored
    em: float = 0.0  # mean, in percent
    f1: float = 0.0
    recall: float = 0.0
    missing: int = 0  # tasks with gold answers but no finished run of this method
    unsourced: int = 0  # of the tasks scored, those whose run used no source at all
    details: list[dict] = field(default_factory=list)


def load_answers(path: str | Path) -> dict[tuple[str, str], tuple[str, ...]]:
    """Gold answers of a task file, keyed by (prompt, task_set)."""
    return {(s.prompt, s.task_set): s.answers for s in load_tasks(path) if s.answers}


def latest_finished(store, *, methods: Iterable[str] | None = None,
                    task_set: str | None = None) -> dict[tuple[str, str], Any]:
    """The latest finished run of each (task, method), newest first; ``methods`` and ``task_set``
    (None: any) narrow it. The runs the QA scores, FActScore and RACE read."""
    wanted = set(methods or ())
    latest: dict[tuple[str, str], Any] = {}
    for run in store.list_runs(limit=ALL_RUNS):  # newest first
        if run.status not in FINISHED or (wanted and run.method not in wanted):
            continue
        if task_set is None or run.task_set == task_set:
            latest.setdefault((run.task, run.method), run)
    return latest


def score_qa(store, *, task_set: str = "qa", methods: list[str] | None = None,
             answers: dict[tuple[str, str], tuple[str, ...]] | None = None) -> list[QAScore]:
    """EM, F1 and answer recall per method over the latest finished run of each task of
    ``task_set`` that has gold answers (from the task's stored meta, else ``answers``)."""
    answers = dict(answers or {})
    latest = latest_finished(store, methods=methods, task_set=task_set)
    gold: dict[str, tuple[str, ...]] = {}
    for run in latest.values():  # newest first: a task's gold comes from its newest run
        if run.task not in gold:
            meta = _meta(store, run.task_id)
            gold[run.task] = tuple(str(a) for a in meta.get("answers") or ()) or answers.get((run.task, task_set), ())
    for (prompt, ts), golds in answers.items():
        if ts == task_set and not gold.get(prompt):
            gold[prompt] = golds
    names = methods or sorted({m for _, m in latest})
    scores = []
    for method in names:
        score = QAScore(method)
        for prompt, golds in gold.items():
            if not golds:
                continue
            run = latest.get((prompt, method))
            if run is None:
                score.missing += 1
                continue
            prediction = extract_answer(run.final_text)
            row = {"task": prompt, "run_id": run.id, "prediction": prediction, "answers": list(golds),
                   "em": exact_match(prediction, golds), "f1": f1_score(prediction, golds),
                   "recall": answer_recall(run.final_text, golds), "unsourced": run.status == "unsourced"}
            score.details.append(row)
        score.n = len(score.details)
        score.unsourced = sum(d["unsourced"] for d in score.details)
        if score.n:
            score.em = round(100 * sum(d["em"] for d in score.details) / score.n, 2)
            score.f1 = round(100 * sum(d["f1"] for d in score.details) / score.n, 2)
            score.recall = round(100 * sum(d["recall"] for d in score.details) / score.n, 2)
        scores.append(score)
    return scores


def format_qa(scores: list[QAScore]) -> str:
    rows = [[s.method, s.n, f"{s.em:.1f}", f"{s.f1:.1f}", f"{s.recall:.1f}", s.missing, s.unsourced]
            for s in scores]
    return format_table(["method", "tasks", "EM", "F1", "recall", "missing", "unsourced"], rows)


def _meta(store, task_id: int) -> dict:
    try:
        return dict(store.get_task(task_id).meta)
    except RatStudioError:
        return {}
