"""The arena's commands: votes import/export/correct/corrections, outputs import, leaderboard, judge; printing over
``annotation.admin.admin.Admin`` and ``annotation.results.results.Results``, the ones app.py builds
(``app.admin``, ``app.results``). JSONL formats: ``annotation.admin.records`` (DeepResearch Bench's:
``annotation.admin.drb``).
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

from annotation.admin import drb
from annotation.admin.judge import N_CALLS
from annotation.admin.records import OUTPUT_EXAMPLE, VOTE_EXAMPLE
from annotation.errors import ArenaError
from annotation.results.agreement import people_agreement
from annotation.results.results import Leaderboard
from annotation.results.style import StyleBoard
from annotation.voting.arena import CHOICES, SOURCES, VOID
from core.text.oneline import short
from ui.render_arena import interval


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
    _add_gold_commands(vsub, parents)

    outputs = subparsers.add_parser("outputs", help="add outputs of any system to the arena")
    osub = outputs.add_subparsers(dest="outputs_command", metavar="ACTION", required=True)
    p = osub.add_parser("import", parents=parents, help="add outputs from a JSONL file (one transaction)")
    p.add_argument("file", help=f"JSONL, one output a line: {OUTPUT_EXAMPLE}; optional task_set, kind")
    p.add_argument("--format", choices=("studio", drb.FORMAT), default="studio",
                   help="studio (default): the lines above; drb: DeepResearch Bench reports, "
                        '{"id", "prompt", "article"} a line, as outputs of --method, each joined to the task '
                        "with its prompt (created when missing)")
    p.add_argument("--method", help="with --format drb: the method (system) the reports are outputs of")
    p.set_defaults(func=cmd_outputs_import)

    p = subparsers.add_parser("leaderboard", parents=parents, help="TrueSkill and Bradley–Terry ratings of the methods")
    p.add_argument("--json", action="store_true", help="a JSON list of rows")
    p.add_argument("--source", choices=SOURCES, default="people", help="whose votes (default people)")
    p.add_argument("--task-set", help="only tasks of this set")
    p.add_argument("--bootstrap", type=int, default=100, help="Bradley–Terry bootstrap rounds (default 100)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--leave-out-flagged", action="store_true",
                   help="rate without the flagged voters: too fast, always one side, against the others' votes, or "
                        "missing gold pairs (listed below the table)")
    p.add_argument("--style", action="store_true",
                   help="also the style-controlled ranking: Bradley–Terry at equal length, citations, headings and "
                        "lists, with what each is worth (with --json: an object with rows, style_controlled, style)")
    p.add_argument("--agreement", action="store_true",
                   help="with --json: an object with rows, agreement_people (Krippendorff's alpha between "
                        "annotators on the same output pairs, and each one's agreement with the others' majority) "
                        "and agreement_judge (people's votes that name the judge's winner, in all and per method "
                        "pair)")
    p.add_argument("--campaign", metavar="NAME",
                   help="only the people's votes cast in this campaign (`campaign list` names them; with --json: "
                        "an object with rows and campaign)")
    p.set_defaults(func=cmd_leaderboard)
    p.epilog = ("People's votes that answered criteria (a campaign's --criteria) get a leaderboard per criterion "
                "below the overall one (with --style, style control per criterion too); with --json, an object "
                "with rows and criteria (a list: criterion, votes, rows, and with --style its style_controlled and "
                "style).")

    p = subparsers.add_parser("judge", parents=parents, help="let the LLM judge compare the methods' outputs")
    p.add_argument("--methods", help="only pairs of these methods, comma separated (default: all)")
    p.add_argument("--n", type=int, default=N_CALLS, help="calls per pair, half in each order (default 10)")
    p.set_defaults(func=cmd_judge)


def _add_gold_commands(vsub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """``votes gold add|list|outputs``: gold (attention-check) pairs."""
    gold = vsub.add_parser("gold", help="gold pairs: two outputs whose better side an admin set (attention checks)")
    gsub = gold.add_subparsers(dest="gold_command", metavar="ACTION", required=True)
    p = gsub.add_parser("add", parents=parents, help="mark the better of two outputs of one task",
                        description="The arena shows gold pairs to annotators now and then (about 1 new pair in "
                                    "10); an annotator who misses too many is flagged. Gold marks are append-only: "
                                    "a newer mark of the same two outputs supersedes the older.")
    p.add_argument("output_a", type=int, metavar="OUTPUT_A", help="an output's id (`votes gold outputs` lists them)")
    p.add_argument("output_b", type=int, metavar="OUTPUT_B", help="another output of the same task")
    p.add_argument("--better", required=True, choices=["a", "b"], help="a: OUTPUT_A is better; b: OUTPUT_B")
    p.add_argument("--by", default="admin", help="who marks the pair (default admin)")
    p.set_defaults(func=cmd_gold_add)
    p = gsub.add_parser("list", parents=parents, help="list the gold pairs")
    p.set_defaults(func=cmd_gold_list)
    p = gsub.add_parser("outputs", parents=parents, help="list the arena's outputs with their ids, by task")
    p.set_defaults(func=cmd_gold_outputs)


def cmd_gold_add(args, app) -> int:
    g = app.admin.add_gold(args.output_a, args.output_b, args.better, args.by)
    print(f"Gold pair {g.id}: output {g.output_a if g.better == 'a' else g.output_b} "
          f"({g.method_a if g.better == 'a' else g.method_b}) is the better, by {g.added_by}.")
    return 0


def cmd_gold_list(args, app) -> int:
    rows = app.admin.gold_pairs()
    if not rows:
        print("No gold pair yet: `python app.py votes gold add OUTPUT_A OUTPUT_B --better a|b`.")
    for g in rows:
        print(f"{g.id}\ttask {g.task_id}\toutput {g.output_a} ({g.method_a}) vs {g.output_b} ({g.method_b})\t"
              f"better: {g.better.upper()}\tby {g.added_by}, {g.created}")
    return 0


def cmd_gold_outputs(args, app) -> int:
    rows = app.admin.listed_outputs()
    if not rows:
        print("No output in the arena yet: `python app.py outputs import FILE.jsonl`, or run methods.")
    for o in rows:
        print(f"{o.id}\ttask {o.task_id}: {short(o.prompt, 50)}\t{o.method}\t{short(o.text, 70)}")
    return 0


def cmd_votes_import(args, app) -> int:
    r = app.admin.import_votes(args.file)
    print(f"Imported {r.added} vote(s) from {args.file}" + (f"; {r.present} already present" if r.present else "")
          + f"; {r.corrections} correction(s) added.")
    return 0


def cmd_votes_correct(args, app) -> int:
    c = app.admin.correct(args.vote_id, args.choice, args.by, args.why)
    print(f"Vote {c.vote_id} (cast: {c.cast}) now counts as {c.choice}; correction {c.id} by {c.corrected_by}: "
          f"{c.why}")
    return 0


def cmd_votes_corrections(args, app) -> int:
    rows = app.admin.corrections()
    if not rows:
        print("No vote has been corrected.")
    for c in rows:
        print(f"{c.id}\t{c.created}\tvote {c.vote_id}: {c.cast} -> {c.choice}\tby {c.corrected_by}: {c.why}")
    return 0


def cmd_votes_export(args, app) -> int:
    lines = (json.dumps(v, ensure_ascii=False) + "\n" for v in app.admin.export_votes())
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
    if args.format == drb.FORMAT:
        added, present = app.admin.import_reports(args.file, args.method)
    elif args.method:
        raise ArenaError("--method goes with --format drb; each line of this format names its own method.")
    else:
        added, present = app.admin.import_outputs(args.file)
    print(f"Imported {added} output(s) from {args.file}" + (f"; {present} already present" if present else "") + ".")
    return 0


def cmd_leaderboard(args, app) -> int:
    service = app.results
    board = service.leaderboard(args.source, args.task_set, bootstrap=args.bootstrap, seed=args.seed,
                                leave_out_flagged=args.leave_out_flagged, campaign=args.campaign)
    styled = (service.style_board(args.source, args.task_set, leave_out_flagged=args.leave_out_flagged,
                                  campaign=args.campaign) if args.style else None)
    by_criterion = service.criterion_boards(args.source, args.task_set, bootstrap=args.bootstrap, seed=args.seed,
                                            leave_out_flagged=args.leave_out_flagged, campaign=args.campaign)
    styled_by = {b.criterion: service.criterion_style_board(b.criterion, args.source, args.task_set,
                                                            leave_out_flagged=args.leave_out_flagged,
                                                            campaign=args.campaign)
                 for b in by_criterion} if args.style else {}
    if args.json:
        rows = [asdict(r) for r in board.rows]
        criteria = [{"criterion": b.criterion, "votes": b.votes, "rows": [asdict(r) for r in b.rows],
                     **(styled_by[b.criterion].as_json() if b.criterion in styled_by else {})} for b in by_criterion]
        extra = {**({"campaign": args.campaign} if args.campaign else {}), **(styled.as_json() if styled else {}),
                 **({"criteria": criteria} if criteria else {}),
                 **({"agreement_people": people_agreement(service.store, args.task_set, args.campaign).as_json()}
                    if args.agreement else {}),
                 **({"agreement_judge": service.agreement(args.task_set).as_json()}
                    if args.agreement and not args.campaign else {})}
        print(json.dumps({"rows": rows, **extra} if extra else rows, indent=2))
        return 0
    if args.campaign:
        print(f"Campaign {args.campaign!r}: {service.campaigns.get(args.campaign).settings()}")
    print(format_table(board))
    if styled is not None:
        print(format_style(styled))
    for b in by_criterion:
        print(f"\nCriterion “{b.criterion}”: " + format_table(b))
        if b.criterion in styled_by:
            print(format_style(styled_by[b.criterion]))
    shared = service.agreement(args.task_set)
    if shared.compared and not args.campaign:  # the judge's votes belong to no campaign
        print(f"Judge and people agree on {shared.agreed} of {shared.compared} people's votes ({shared.rate:.0%}).")
        for (a, b), (n, k) in shared.by_pair.items() if len(shared.by_pair) > 1 else ():
            print(f"  {a} vs {b}: {k} of {n} ({k / n:.0%})")
    between = (people_agreement(service.store, args.task_set, args.campaign).summary() if args.source == "people"
               else "")
    if between:
        print(between)
    flags = service.flags() if args.source == "people" else {}
    if flags:
        state = "left out" if args.leave_out_flagged else "counted; --leave-out-flagged rates without them"
        print(f"{len(flags)} flagged voter{'s' if len(flags) != 1 else ''}, {state}:")
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


def format_style(styled: StyleBoard) -> str:
    """The style-controlled ranking (``annotation.results.style.StyleBoard``) as aligned text, then what
    each style feature is worth, in words."""
    if not styled.rows:
        return "\nStyle control: no vote with both texts known (votes imported without their texts have no style)."
    left = f"; {styled.left_out} without their texts left out" if styled.left_out else ""
    head = f"{'method':<20} {'BT style-controlled':>19} {'95% interval':>13} {'rank':>5} {'BT raw':>7} {'rank':>5}"
    body = [f"{r.method[:20]:<20} {r.bt:19.0f} {interval(r.bt_low, r.bt_high):>13} {r.rank:5d} {r.bt_raw:7.0f} "
            f"{r.rank_raw:5d}" for r in styled.rows]
    return "\n".join([f"\nStyle-controlled ranking ({styled.votes} vote(s){left})", head, *body, "",
                      *(e.sentence() for e in styled.effects)])


def cmd_judge(args, app) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    if methods is not None and len(set(methods)) < 2:
        raise ArenaError("--methods needs at least two method names, comma separated, e.g. --methods rat,cot")
    if args.n < 1:
        raise ArenaError("--n must be at least 1 (the paper's choice is 10: five calls in each order).")

    def progress(done: int, total: int, line: str) -> None:
        print(f"[{done}/{total}] {line}", file=sys.stderr)

    report = asyncio.run(app.admin.judge(app.clients.llm, app.settings.llm.model_for("judge"),
                                                methods=methods, n=args.n, on_progress=progress))
    print(report.summary())
    return 0
