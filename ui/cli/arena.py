"""The arena's commands: votes import/export/correct/corrections, outputs import, leaderboard, judge; printing over
``annotation.service.Arena``, the one that app.py builds (``app.arena``). JSONL formats: ``annotation.records``.
A file is checked whole before anything is written: a bad line imports nothing. Votes are written in batches
(votes keep coming in meanwhile), and importing a file again adds only what is not there yet."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from annotation.errors import ArenaError
from annotation.judge import N_CALLS
from annotation.records import OUTPUT_EXAMPLE, VOTE_EXAMPLE
from annotation.service import SOURCES, Leaderboard
from data.arena import CHOICES, VOID


def add_commands(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``votes``, ``outputs``, ``leaderboard`` and ``judge``. The common flags (``parents``)
    go on every leaf command."""
    votes = subparsers.add_parser("votes", help="import or export people's arena votes (JSONL)")
    vsub = votes.add_subparsers(dest="votes_command", metavar="ACTION", required=True)
    p = vsub.add_parser("import", parents=parents,
                        help="add votes from a JSONL file (checked whole first; a second import adds nothing)")
    p.add_argument("file", help=f"JSONL, one vote a line: {VOTE_EXAMPLE}")
    p.set_defaults(func=cmd_votes_import)
    p = vsub.add_parser("correct", parents=parents,
                        help="supersede a vote with a correction (the vote itself stays as cast)",
                        description="Votes are append-only: a correction is a new row, with who made it and why, "
                                    "and the leaderboard counts a vote's newest correction. VOTE_ID is the "
                                    "vote_id of `votes export`.")
    p.add_argument("vote_id", type=int, metavar="VOTE_ID")
    p.add_argument("--choice", required=True, choices=[*CHOICES, VOID],
                   help="what counts from now on; void: the vote does not count at all")
    p.add_argument("--by", required=True, help="who decided the correction")
    p.add_argument("--why", required=True, help="why the vote is corrected")
    p.set_defaults(func=cmd_votes_correct)
    p = vsub.add_parser("corrections", parents=parents, help="list the corrections of votes")
    p.set_defaults(func=cmd_votes_corrections)
    p = vsub.add_parser("export", parents=parents,
                        help="write every vote as JSONL (with its comment, flag and correction, if any)")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_votes_export)

    outputs = subparsers.add_parser("outputs", help="add outputs of any system to the arena")
    osub = outputs.add_subparsers(dest="outputs_command", metavar="ACTION", required=True)
    p = osub.add_parser("import", parents=parents, help="add outputs from a JSONL file (one transaction)")
    p.add_argument("file", help=f"JSONL, one output a line: {OUTPUT_EXAMPLE}; optional task_set, kind")
    p.set_defaults(func=cmd_outputs_import)

    p = subparsers.add_parser("leaderboard", parents=parents, help="TrueSkill and Bradley–Terry ratings of the methods")
    p.add_argument("--json", action="store_true", help="a JSON list of rows")
    p.add_argument("--source", choices=SOURCES, default="people", help="whose votes (default people)")
    p.add_argument("--task-set", help="only tasks of this set")
    p.add_argument("--bootstrap", type=int, default=100, help="Bradley–Terry bootstrap rounds (default 100)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--leave-out-flagged", action="store_true",
                   help="rate without the voters flagged as too fast or always on one side (listed below the table)")
    p.set_defaults(func=cmd_leaderboard)

    p = subparsers.add_parser("judge", parents=parents, help="let the LLM judge compare the methods' outputs")
    p.add_argument("--methods", help="only pairs of these methods, comma separated (default: all)")
    p.add_argument("--n", type=int, default=N_CALLS, help="calls per pair, half in each order (default 10)")
    p.set_defaults(func=cmd_judge)


def cmd_votes_import(args, app) -> int:
    added, skipped = app.arena.import_votes(args.file)
    print(f"Imported {added} vote(s) from {args.file}" + (f"; {skipped} already present" if skipped else "") + ".")
    return 0


def cmd_votes_correct(args, app) -> int:
    c = app.arena.correct(args.vote_id, args.choice, args.by, args.why)
    print(f"Vote {c.vote_id} (cast: {c.cast}) now counts as {c.choice}; correction {c.id} by {c.corrected_by}: "
          f"{c.why}")
    return 0


def cmd_votes_corrections(args, app) -> int:
    rows = app.arena.corrections()
    if not rows:
        print("No vote has been corrected.")
    for c in rows:
        print(f"{c.id}\t{c.created}\tvote {c.vote_id}: {c.cast} -> {c.choice}\tby {c.corrected_by}: {c.why}")
    return 0


def cmd_votes_export(args, app) -> int:
    lines = (json.dumps(v, ensure_ascii=False) + "\n" for v in app.arena.export_votes())
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


def cmd_outputs_import(args, app) -> int:
    added, present = app.arena.import_outputs(args.file)
    print(f"Imported {added} output(s) from {args.file}" + (f"; {present} already present" if present else "") + ".")
    return 0


def cmd_leaderboard(args, app) -> int:
    service = app.arena
    board = service.leaderboard(args.source, args.task_set, bootstrap=args.bootstrap, seed=args.seed,
                                leave_out_flagged=args.leave_out_flagged)
    if args.json:
        print(json.dumps([asdict(r) for r in board.rows], indent=2))
        return 0
    print(format_table(board))
    shared = service.agreement(args.task_set)
    if shared.compared:
        print(f"Judge and people agree on {shared.agreed} of {shared.compared} people's votes ({shared.rate:.0%}).")
    flags = service.flags() if args.source == "people" else {}
    if flags:
        state = "left out" if args.leave_out_flagged else "counted; --leave-out-flagged rates without them"
        print(f"{len(flags)} flagged voter(s), {state}:")
        for name, why in sorted(flags.items()):
            print(f"  {name}: {why}")
    return 0


def format_table(board: Leaderboard) -> str:
    """The leaderboard as aligned text."""
    source = board.source
    if not board.rows:
        return f"No {source} votes yet." + (" Vote in the arena, or `python app.py votes import FILE.jsonl`."
                                            if source == "people" else " Run `python app.py judge`.")
    head = (f"{'method':<20} {'mu':>6} {'sigma':>6} {'mu-3s':>6} {'win%':>6} {'battles':>7} {'W/T/L':>12} "
            f"{'BT (95% CI)':>22}")
    body = [
        f"{r.method[:20]:<20} {r.mu:6.2f} {r.sigma:6.2f} {r.conservative:6.2f} {r.win_rate:6.1%} {r.battles:7d} "
        f"{f'{r.wins}/{r.ties}/{r.losses}':>12} {f'{r.bt:.0f} ({r.bt_low:.0f}-{r.bt_high:.0f})':>22}"
        for r in board.rows
    ]
    return "\n".join([f"{board.votes} {source} vote(s)", head, *body])


def cmd_judge(args, app) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    if methods is not None and len(set(methods)) < 2:
        raise ArenaError("--methods needs at least two method names, comma separated, e.g. --methods rat,cot")
    if args.n < 1:
        raise ArenaError("--n must be at least 1 (the paper's choice is 10: five calls in each order).")

    def progress(done: int, total: int, line: str) -> None:
        print(f"[{done}/{total}] {line}", file=sys.stderr)

    report = asyncio.run(app.arena.judge(app.clients.llm, app.settings.llm.model_for("judge"),
                                                methods=methods, n=args.n, on_progress=progress))
    print(report.summary())
    return 0
