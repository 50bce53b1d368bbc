"""The arena's commands for ``app.py``: votes import/export, outputs import, leaderboard, judge.

``add_commands(subparsers, parents)`` adds them; each parser sets ``func=handler`` with
``handler(args, services) -> int``. Handlers raise our typed errors (ImportFormatError,
StoreError, LLM errors), which ``app.py`` prints as one line and turns into a non-zero exit.

JSONL formats (one JSON object a line; blank lines are skipped):

- ``votes import``: ``task`` (the task's text, or the id of a task in this database), optional
  ``prompt`` (the task's text, when ``task`` is only a name), ``method_a``, ``method_b``,
  ``winner`` (a, b, tie or both_bad), ``annotator``; optional ``output_a``/``output_b`` (the two
  texts), ``kind``, ``task_set``, ``created``. ``votes export`` writes the same fields.
- ``outputs import``: ``task``, ``method``, ``text``; optional ``task_set``, ``kind``.

A file is checked whole before anything is written and then written in one transaction: a bad
line imports nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path

from annotation import judge as judge_mod
from core.jsonl import read_objects
from common.types import KINDS
from annotation.errors import ArenaError, ImportFormatError
from annotation.ratings import agreement, leaderboard
from data import arena

VOTE_EXAMPLE = '{"task": "...", "method_a": "rat", "method_b": "cot", "winner": "a", "annotator": "ann"}'
OUTPUT_EXAMPLE = '{"task": "...", "method": "rat", "text": "..."}'


# -- reading JSONL ----------------------------------------------------------------------------


def read_jsonl(lines: Iterable[str], name: str, example: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line. Raises ImportFormatError for a line that
    is not a JSON object."""
    return read_objects(lines, name, example, ImportFormatError)


def _text(obj: dict, key: str, where: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ImportFormatError(f'{where}: "{key}" must be a non-empty string; add it to the line.')
    return value


def _task_fields(obj: dict, where: str) -> dict:
    """prompt/task_id, kind and task_set of a line. Raises ImportFormatError."""
    task, prompt = obj.get("task"), obj.get("prompt")
    kind = obj.get("kind") or "writing"
    if kind not in KINDS:
        raise ImportFormatError(f'{where}: "kind" must be one of {", ".join(KINDS)}, not {kind!r}.')
    task_set = obj.get("task_set") or ""
    if not isinstance(task_set, str):
        raise ImportFormatError(f'{where}: "task_set" must be a string.')
    fields = {"kind": kind, "task_set": task_set, "task_id": None, "prompt": None}
    if prompt is not None:
        fields["prompt"] = _text(obj, "prompt", where)
    elif isinstance(task, int) and not isinstance(task, bool):
        fields["task_id"] = task
    else:
        fields["prompt"] = _text(obj, "task", where)
    return fields


def parse_winner(value, where: str) -> str:
    """a, b, tie or both_bad (case, spaces and dashes forgiven). Raises ImportFormatError."""
    choice = str(value).strip().lower().replace("-", "_").replace(" ", "_") if value is not None else ""
    if choice not in arena.CHOICES:
        raise ImportFormatError(f'{where}: "winner" must be one of a, b, tie, both_bad, not {value!r}.')
    return choice


def parse_vote(n: int, obj: dict, name: str = "input") -> dict:
    """One line of ``votes import`` as the record ``data.arena.import_votes`` takes.
    Raises ImportFormatError naming the line and the fix."""
    where = f"{name} line {n}"
    record = _task_fields(obj, where)
    record.update(
        line=n, method_a=_text(obj, "method_a", where), method_b=_text(obj, "method_b", where),
        choice=parse_winner(obj.get("winner"), where), annotator=_text(obj, "annotator", where),
        output_a=_text(obj, "output_a", where, required=False), output_b=_text(obj, "output_b", where, required=False),
        created=_text(obj, "created", where, required=False),
    )
    if record["method_a"] == record["method_b"]:
        raise ImportFormatError(
            f"{where}: method_a and method_b are both {record['method_a']!r}; a vote compares two methods."
        )
    return record


def parse_output(n: int, obj: dict, name: str = "input") -> dict:
    """One line of ``outputs import``. Raises ImportFormatError naming the line and the fix."""
    where = f"{name} line {n}"
    record = _task_fields({**obj, "task": _text(obj, "task", where)}, where)
    record.update(method=_text(obj, "method", where), text=_text(obj, "text", where))
    return record


def _read_file(path: str, parse, example: str) -> list[dict]:
    """Every record of a JSONL file. Raises ImportFormatError (also for an unreadable file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [parse(n, obj, path) for n, obj in read_jsonl(fh, path, example)]
    except OSError as exc:
        raise ImportFormatError(f"Cannot read {path}: {exc.strerror}. Give the path of a JSONL file.") from exc
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not UTF-8 text; save it as UTF-8 JSONL.") from exc


# -- handlers ---------------------------------------------------------------------------------


def cmd_votes_import(args, services) -> int:
    records = _read_file(args.file, parse_vote, VOTE_EXAMPLE)
    added, skipped = arena.import_votes(services.store, records)
    print(f"Imported {added} vote(s) from {args.file}" + (f"; {skipped} already present" if skipped else "") + ".")
    return 0


def cmd_votes_export(args, services) -> int:
    lines = (json.dumps(v, ensure_ascii=False) + "\n" for v in arena.export_votes(services.store))
    if args.out:
        count = _write_lines(Path(args.out), lines)
        print(f"Wrote {count} vote(s) to {args.out}.", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    return 0


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line)
            count += 1
    return count


def cmd_outputs_import(args, services) -> int:
    records = _read_file(args.file, parse_output, OUTPUT_EXAMPLE)
    added, present = arena.import_outputs(services.store, records)
    print(f"Imported {added} output(s) from {args.file}" + (f"; {present} already present" if present else "") + ".")
    return 0


def cmd_leaderboard(args, services) -> int:
    votes = [r[1:] for r in arena.vote_rows(services.store, args.source, args.task_set)]
    table = leaderboard(votes, bootstrap=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps([asdict(r) for r in table], indent=2))
        return 0
    print(format_table(table, args.source, len(votes)))
    shared = agreement(*(
        [r[1:] for r in arena.vote_rows(services.store, s, args.task_set)] for s in ("people", "judge")
    ))
    if shared.compared:
        print(f"Judge and people agree on {shared.agreed} of {shared.compared} people's votes ({shared.rate:.0%}).")
    return 0


def format_table(table, source: str, n_votes: int) -> str:
    """The leaderboard as aligned text."""
    if not table:
        return f"No {source} votes yet." + (" Vote in the arena, or `python app.py votes import FILE.jsonl`."
                                            if source == "people" else " Run `python app.py judge`.")
    head = (f"{'method':<20} {'mu':>6} {'sigma':>6} {'mu-3s':>6} {'win%':>6} {'battles':>7} {'W/T/L':>12} "
            f"{'BT (95% CI)':>22}")
    body = [
        f"{r.method[:20]:<20} {r.mu:6.2f} {r.sigma:6.2f} {r.conservative:6.2f} {r.win_rate:6.1%} {r.battles:7d} "
        f"{f'{r.wins}/{r.ties}/{r.losses}':>12} {f'{r.bt:.0f} ({r.bt_low:.0f}-{r.bt_high:.0f})':>22}"
        for r in table
    ]
    return "\n".join([f"{n_votes} {source} vote(s)", head, *body])


def cmd_judge(args, services) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    if methods is not None and len(set(methods)) < 2:
        raise ArenaError("--methods needs at least two method names, comma separated, e.g. --methods rat,cot")
    if args.n < 1:
        raise ArenaError("--n must be at least 1 (the paper's choice is 10: five calls in each order).")

    def progress(done: int, total: int, line: str) -> None:
        print(f"[{done}/{total}] {line}", file=sys.stderr)

    report = asyncio.run(judge_mod.judge_store(services.store, services.clients.llm, services.settings.llm.model_for("judge"), methods=methods, n=args.n, on_progress=progress))
    print(report.summary())
    return 0


def add_commands(subparsers, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``votes``, ``outputs``, ``leaderboard`` and ``judge`` to ``app.py``'s sub-commands.
    The common flags (``parents``) go on every leaf command."""
    votes = subparsers.add_parser("votes", help="import or export people's arena votes (JSONL)")
    vsub = votes.add_subparsers(dest="votes_command", metavar="ACTION", required=True)
    p = vsub.add_parser("import", parents=parents, help="add votes from a JSONL file (one transaction)")
    p.add_argument("file", help=f"JSONL, one vote a line: {VOTE_EXAMPLE}")
    p.set_defaults(func=cmd_votes_import)
    p = vsub.add_parser("export", parents=parents, help="write every vote as JSONL")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_votes_export)

    outputs = subparsers.add_parser("outputs", help="add outputs of any system to the arena")
    osub = outputs.add_subparsers(dest="outputs_command", metavar="ACTION", required=True)
    p = osub.add_parser("import", parents=parents, help="add outputs from a JSONL file (one transaction)")
    p.add_argument("file", help=f"JSONL, one output a line: {OUTPUT_EXAMPLE}; optional task_set, kind")
    p.set_defaults(func=cmd_outputs_import)

    p = subparsers.add_parser("leaderboard", parents=parents, help="TrueSkill and Bradley–Terry ratings of the methods")
    p.add_argument("--json", action="store_true", help="a JSON list of rows")
    p.add_argument("--source", choices=arena.SOURCES, default="people", help="whose votes (default people)")
    p.add_argument("--task-set", help="only tasks of this set")
    p.add_argument("--bootstrap", type=int, default=100, help="Bradley–Terry bootstrap rounds (default 100)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.set_defaults(func=cmd_leaderboard)

    p = subparsers.add_parser("judge", parents=parents, help="let the LLM judge compare the methods' outputs")
    p.add_argument("--methods", help="only pairs of these methods, comma separated (default: all)")
    p.add_argument("--n", type=int, default=judge_mod.N_CALLS, help="calls per pair, half in each order (default 10)")
    p.set_defaults(func=cmd_judge)
