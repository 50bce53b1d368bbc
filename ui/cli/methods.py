"""Commands that list the methods, run them side by side, and fill AAG's procedure memory:

    python app.py methods [--json]
    python app.py batch TASKS.jsonl --methods rat,rag-5 [--concurrency N]
    python app.py eval qa [--methods direct,rag-5] [--task-set qa] [--tasks FILE] [--run]
    python app.py eval fact [--methods rat,rag-5] [--task-set S] [--limit-pairs N] [--json]
    python app.py eval race --reference FILE [--criteria FILE] [--methods rat,rag-5] [--task-set S] [--json]
    python app.py procedures import FILE.jsonl
    python app.py procedures export FILE.jsonl
    python app.py procedures list [--limit N]
    python app.py procedures add-from-run RUN_ID [RUN_ID ...]

``add_commands(subparsers, parents)`` adds them to the parser of ``ui.cli``; every handler is
``handler(args, app) -> exit code`` over ``core.batch`` and ``core.procedures``. Errors are raised
as our own (app.main prints them); progress goes to standard error, tables and listings to
standard output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from core.batch import TASKS_DIR

#: Batch concurrency when --concurrency is not given. The flag is the common one (it also sizes
#: the UI queue); its environment default, meant for the UI, is not used for batches.
DEFAULT_BATCH_CONCURRENCY = 2


def add_commands(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``methods``, ``batch``, ``eval`` and ``procedures`` to ``subparsers`` (each with
    ``parents``, the flags every command takes)."""
    p = subparsers.add_parser("methods", parents=parents, help="list the methods and their --param keys",
                              description="Every writing method, its paper, and the --param KEY=VALUE keys it "
                                          "reads, with their range and default.")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_methods)

    p = subparsers.add_parser("batch", parents=parents, help="run several methods over a task file (resumable)",
                              description="Run every method on every task of a JSONL file. Finished task/method "
                                          "pairs are skipped, so running the same command again continues an "
                                          "interrupted batch. Parallel runs: --concurrency N (default "
                                          f"{DEFAULT_BATCH_CONCURRENCY}).")
    p.add_argument("tasks", help=f"JSONL task file, one {{\"id\", \"prompt\", \"kind\", \"task_set\"}} per line "
                                 f"(bundled sets: {TASKS_DIR})")
    p.add_argument("--methods", required=True, help="comma-separated methods, e.g. rat,rag-5,direct")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    p.set_defaults(func=cmd_batch)

    p = subparsers.add_parser("eval", parents=parents,
                              help="score stored runs (eval qa: exact match and F1; eval fact: citation accuracy; "
                                   "eval race: quality against a reference)")
    evals = p.add_subparsers(dest="eval_command", metavar="WHAT", required=True)
    q = evals.add_parser("qa", parents=parents, help="exact match and F1 of the runs on a QA task set",
                         description="Score the latest finished run of each method on each task of a QA set "
                                     "against its gold answers: exact match and token F1 after SQuAD/ITRG "
                                     "normalisation, and answer recall (a gold answer occurs in the output).")
    q.add_argument("--methods", help="comma-separated methods (default: every method with runs on the set)")
    q.add_argument("--task-set", default="qa", help="task set to score (default qa)")
    q.add_argument("--tasks", help="task file with the gold answers (default data/tasks/TASK_SET.jsonl)")
    q.add_argument("--run", action="store_true", help="first run the missing task/method pairs (a batch)")
    q.add_argument("--details", action="store_true", help="also list every task's prediction and scores")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_eval_qa)
    f = evals.add_parser("fact", parents=parents, help="citation accuracy of the runs' articles (DeepResearch "
                                                       "Bench's FACT), judged against the stored pages",
                         description="Each sentence with citation marks of the latest version of each method's "
                                     "latest finished run on each task (and of imported outputs) gives one "
                                     "statement-URL pair per cited URL; the judge role (--judge-model) says whether "
                                     "the stored text of the page supports it (nothing is fetched again). Per "
                                     "method: citation accuracy = supported / judged and effective (supported) "
                                     "citations per task, with the counts; pairs whose page is not stored are "
                                     "counted apart, unreadable replies too. Judgments are not stored.")
    f.add_argument("--methods", help="comma-separated methods (default: every method with runs or outputs)")
    f.add_argument("--task-set", help="only tasks of this set (default: all)")
    f.add_argument("--limit-pairs", type=int, metavar="N", help="judge at most N pairs of each output (the first)")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_eval_fact)
    r = evals.add_parser("race", parents=parents, help="article quality against reference articles (DeepResearch "
                                                       "Bench's RACE), scored by the judge on weighted criteria",
                         description="The latest version of each method's latest finished run on each task (and "
                                     "imported outputs) is scored against the reference article with the same "
                                     "prompt: the judge role (--judge-model) scores both 0-10 on each criterion of "
                                     "each of four dimensions (one call per dimension); per task the relative score "
                                     "target / (target + reference) of the weighted totals; per method its mean "
                                     "with a 95% bootstrap interval. Criteria: the bench's criteria.jsonl "
                                     "(--criteria), else written by the judge once per task and kept in a file "
                                     "(--criteria-out; default beside the database). Unreadable replies are named "
                                     "and left out. Scores are not stored.")
    r.add_argument("--reference", required=True, metavar="FILE",
                   help='reference articles in the bench\'s report format, {"id", "prompt", "article"} a line')
    r.add_argument("--criteria", metavar="FILE", help="the bench's criteria.jsonl (matched by prompt, then id); "
                                                      "tasks it lacks are not scored")
    r.add_argument("--criteria-out", metavar="FILE",
                   help="without --criteria: the file the judge's criteria are kept in and read from "
                        "(default: beside the database, DB.race-criteria.jsonl)")
    r.add_argument("--methods", help="comma-separated methods (default: every method with runs or outputs)")
    r.add_argument("--task-set", help="only tasks of this set (default: all)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_eval_race)

    p = subparsers.add_parser("procedures", parents=parents, help="AAG's procedure memory: import, list, add runs")
    procs = p.add_subparsers(dest="procedures_command", metavar="ACTION", required=True)
    a = procs.add_parser("import", parents=parents, help="import procedures from JSONL "
                                                         '({"input", "output", "steps"} per line)')
    a.add_argument("file")
    a.set_defaults(func=cmd_procedures_import)
    a = procs.add_parser("export", parents=parents, help="write every procedure to a JSONL file")
    a.add_argument("file")
    a.set_defaults(func=cmd_procedures_export)
    a = procs.add_parser("list", parents=parents, help="list the newest procedures")
    a.add_argument("--limit", type=int, default=50)
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_procedures_list)
    a = procs.add_parser("add-from-run", parents=parents,
                         help="store finished runs as procedures (input = task, output = text, steps = draft)")
    a.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    a.set_defaults(func=cmd_procedures_add_from_run)


# -- methods -----------------------------------------------------------------------------------
def cmd_methods(args, app) -> int:
    """Each method with its description and paper, then its parameters: ``--param KEY=VALUE``,
    the accepted range or choices, the default, and what it sets."""
    from core.methods import METHODS

    if args.json:
        print(json.dumps([{"name": m.name, "description": m.description, "paper": m.paper, "resumable": m.resumable,
                           "uses_search": m.uses_search,
                           "params": [{"key": p.key, "default": p.default, "accepts": p.accepts(), "help": p.help}
                                      for p in m.params]}
                          for m in METHODS.values()], ensure_ascii=False, indent=2))
        return 0
    for m in METHODS.values():
        print(f"{m.name}  {m.description}")
        print(f"    paper: {m.paper}" + ("; resumable" if m.resumable else ""))
        for p in m.params:
            print(f"    --param {p.describe()}: {p.help}")
    return 0


# -- batch -------------------------------------------------------------------------------------
def cmd_batch(args, app) -> int:
    from core.batch import Batch, format_report, load_tasks

    tasks = load_tasks(args.tasks, max_chars=app.settings.method.max_task_chars)
    batch = Batch(app.runner, app.store, args.methods.split(","), concurrency=_concurrency(args),
                  on_progress=ProgressLine())
    try:
        report = asyncio.run(batch.run(tasks))
    except KeyboardInterrupt:
        print("\ninterrupted: finished runs are kept; run the same command again to continue.", file=sys.stderr)
        return 130
    print(file=sys.stderr)
    if args.json:
        from dataclasses import asdict

        print(json.dumps({"results": [asdict(r) for r in report.results], "methods": report.by_method()},
                         ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    for r in report.failed:
        print(f"failed: {r.method} on {r.task_id}" + (f" (run {r.run_id})" if r.run_id else "") + f": {r.error}",
              file=sys.stderr)
    return 1 if report.failed else 0


def _concurrency(args) -> int:
    if getattr(args, "concurrency", None) is not None:
        return max(1, args.concurrency)
    return DEFAULT_BATCH_CONCURRENCY


class ProgressLine:
    """Prints "12/40 done, 1 failed, ETA 3m" to standard error: rewritten in place on a
    terminal, one line per update otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = 0

    def __call__(self, progress) -> None:
        line = progress.line()
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


# -- eval --------------------------------------------------------------------------------------
def cmd_eval_qa(args, app) -> int:
    from common.errors import TaskError
    from core.batch import Batch, format_qa, load_answers, load_tasks, parse_methods, score_qa

    methods = parse_methods(args.methods) if args.methods else None
    path = Path(args.tasks) if args.tasks else TASKS_DIR / f"{args.task_set}.jsonl"
    answers = load_answers(path) if path.exists() else {}
    if args.run:
        if not methods:
            raise TaskError("--run needs --methods: name the methods to run, e.g. --methods direct,rag-5.")
        tasks = [t for t in load_tasks(path) if t.task_set == args.task_set]
        report = asyncio.run(Batch(app.runner, app.store, methods, concurrency=_concurrency(args),
                                   on_progress=ProgressLine()).run(tasks))
        print(file=sys.stderr)
        for r in report.failed:
            print(f"failed: {r.method} on {r.task_id}: {r.error}", file=sys.stderr)
    scores = score_qa(app.store, task_set=args.task_set, methods=methods, answers=answers)
    if not scores or not any(s.n for s in scores):
        raise TaskError(f"No finished runs to score on the task set {args.task_set!r}. Run some first: "
                        f"python app.py batch {path} --methods direct,rag-5 (or add --run here).")
    if args.json:
        print(json.dumps([s.__dict__ for s in scores], ensure_ascii=False, indent=2))
        return 0
    print(format_qa(scores))
    if args.details:
        for s in scores:
            for d in s.details:
                print(f"{s.method}\tEM {d['em']:.0f}\tF1 {d['f1']:.2f}\t{d['prediction'][:60]!r}\tgold {d['answers']}"
                      f"\t{d['task'][:60]}")
    return 0


def cmd_eval_fact(args, app) -> int:
    from annotation.admin.fact import evaluate, format_report
    from common.errors import TaskError

    if args.limit_pairs is not None and args.limit_pairs < 1:
        raise TaskError("--limit-pairs must be at least 1.")
    # imported outputs' methods (another system's name) are in no registry: names are not checked
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] or None if args.methods else None

    def progress(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"[{done}/{total}] pairs judged", file=sys.stderr)

    report = asyncio.run(evaluate(app.store, app.authoring, app.clients.llm, methods=methods,
                                  task_set=args.task_set, limit_pairs=args.limit_pairs, on_progress=progress))
    if not any(m.outputs for m in report.methods):
        raise TaskError("No finished runs or imported outputs to score"
                        + (f" on the task set {args.task_set!r}" if args.task_set else "")
                        + ". Run some first: python app.py batch TASKS.jsonl --methods rat,rag-5.")
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
        return 0
    print(format_report(report))
    return 0


def cmd_eval_race(args, app) -> int:
    from annotation.admin import race
    from common.errors import TaskError

    methods = [m.strip() for m in args.methods.split(",") if m.strip()] or None if args.methods else None
    references = race.read_references(args.reference)
    out: Path | None = None
    if args.criteria:
        book = race.CriteriaBook(race.read_criteria(args.criteria))
    else:
        if args.criteria_out:
            out = Path(args.criteria_out)
        elif getattr(app.store, "url", None) is None and getattr(app.store, "path", None):
            db = Path(app.store.path)
            out = db.with_name(db.stem + ".race-criteria.jsonl")
        else:
            raise TaskError("The database is a server: give --criteria FILE (the bench's criteria.jsonl) or "
                            "--criteria-out FILE (where the judge's criteria are kept).")
        book = race.CriteriaBook(race.read_criteria(out) if out.exists() and out.stat().st_size else ())

    def keep(criteria) -> None:
        try:
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(race.criteria_line(criteria), ensure_ascii=False) + "\n")
        except OSError as exc:
            raise TaskError(f"Cannot write {out}: {exc.strerror or exc}. Give --criteria-out a file you may "
                            f"write to.") from exc

    def progress(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"[{done}/{total}] judge calls", file=sys.stderr)

    report = asyncio.run(race.evaluate(app.store, app.authoring, app.clients.llm, references, book,
                                       generate=out is not None, on_generated=keep, methods=methods,
                                       task_set=args.task_set, on_progress=progress))
    if not any(m.outputs for m in report.methods):
        raise TaskError("No finished runs or imported outputs to score"
                        + (f" on the task set {args.task_set!r}" if args.task_set else "")
                        + ". Run some first: python app.py batch TASKS.jsonl --methods rat,rag-5.")
    if out is not None and report.generated:
        print(f"the judge's criteria of {len(report.generated)} task(s) kept in {out}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
        return 0
    print(race.format_report(report))
    return 0


# -- procedures --------------------------------------------------------------------------------
def cmd_procedures_import(args, app) -> int:
    from core.procedures import ProcedureMemory

    memory = ProcedureMemory(app.store)
    added, existing = memory.import_jsonl(args.file)
    print(f"{added} procedures added, {existing} already there; {memory.count()} in memory.", file=sys.stderr)
    return 0


def cmd_procedures_export(args, app) -> int:
    from core.procedures import ProcedureMemory

    records = list(ProcedureMemory(app.store).export_records())
    Path(args.file).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    print(f"{len(records)} procedures written to {args.file}", file=sys.stderr)
    return 0


def cmd_procedures_list(args, app) -> int:
    from core.procedures import ProcedureMemory

    memory = ProcedureMemory(app.store)
    items = memory.recent(limit=args.limit)
    if args.json:
        print(json.dumps([{"id": p.id, "source": p.source, "run_id": p.run_id, **p.to_record()} for p in items],
                         ensure_ascii=False, indent=2))
        return 0
    if not items:
        print("The procedure memory is empty: python app.py procedures import FILE.jsonl, or "
              "python app.py procedures add-from-run RUN_ID.", file=sys.stderr)
        return 0
    for p in items:
        head = " ".join(p.input.split())[:70]
        print(f"{p.id:>5}  {p.source:<7} {len(p.steps):>3} steps  {head}")
    print(f"{memory.count()} procedures in memory", file=sys.stderr)
    return 0


def cmd_procedures_add_from_run(args, app) -> int:
    from core.procedures import ProcedureMemory

    memory = ProcedureMemory(app.store)
    for run_id in args.run_ids:
        proc_id, new = memory.add_from_run(run_id)
        print(f"run {run_id}: procedure {proc_id}" + ("" if new else " (already there)"), file=sys.stderr)
    return 0
