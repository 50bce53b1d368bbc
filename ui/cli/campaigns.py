"""Annotation campaigns on the command line: ``campaign create/set/close/open/list/show``,
printing over ``Arena.campaigns`` (``annotation.campaigns.Campaigns``) and
``Arena.campaign_progress``. A campaign's pairs go to the annotators it admits at their next
pair; its votes have their own leaderboard (``leaderboard --campaign NAME``) and dataset
(``dataset export DIR --campaign NAME``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from annotation.campaigns import BENCH_CRITERIA, STUDY, Campaign, CampaignProgress
from annotation.errors import ArenaError
from annotation.present import PLAIN, STYLES
from ui.runs_table import when

#: The settings ``campaign set`` may change, in the order a change is told.
SETTINGS = ("task_set", "methods", "style", "overlap", "quota", "voters", "criteria", "status")
BENCH = "bench"  # --criteria's value (and its default) for DeepResearch Bench's four criteria


def add_commands(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``campaign`` with its actions; the common flags (``parents``) go on every one."""
    campaign = subparsers.add_parser("campaign", help="annotation campaigns: which outputs, shown how, to whom, "
                                                      "how many votes; their progress")
    csub = campaign.add_subparsers(dest="campaign_command", metavar="ACTION", required=True)

    p = csub.add_parser("create", parents=parents, help="make an open campaign: its pairs go to the annotators it "
                                                        "admits at their next pair",
                        description="An annotator whom an open campaign admits gets that campaign's pairs (the "
                                    "oldest such campaign first) and no others; the open arena is for the rest.")
    p.add_argument("name", metavar="NAME", help="1 to 64 characters")
    _settings_flags(p, style=PLAIN, overlap=1)
    p.set_defaults(func=cmd_create)

    p = csub.add_parser("set", parents=parents, help="change some settings of a campaign (only those given; the "
                                                     "old settings stay on record)")
    p.add_argument("name", metavar="NAME")
    _settings_flags(p, style=None, overlap=None)
    p.add_argument("--all-task-sets", action="store_true", help="every task set instead of one")
    p.add_argument("--all-methods", action="store_true", help="every method instead of those named")
    p.add_argument("--no-quota", action="store_true", help="no quota: annotators vote as long as pairs are left")
    p.add_argument("--anyone", action="store_true", help="anyone who can open the arena may vote")
    p.add_argument("--no-criteria", action="store_true", help="the overall vote only: no criterion asked")
    p.set_defaults(func=cmd_set)

    for action, about, func in (("close", "no new pairs from it (its votes, progress and leaderboard stay)",
                                 cmd_close),
                                ("open", "open a closed campaign again", cmd_open)):
        p = csub.add_parser(action, parents=parents, help=about)
        p.add_argument("name", metavar="NAME")
        p.add_argument("--by", default="admin", metavar="NAME", help="who makes the change (default admin)")
        p.set_defaults(func=func)

    p = csub.add_parser("list", parents=parents, help="every campaign: status, votes of those needed, annotators, "
                                                      "settings")
    p.add_argument("--json", action="store_true", help="a JSON list, one object per campaign")
    p.set_defaults(func=cmd_list)

    p = csub.add_parser("show", parents=parents, help="a campaign's settings, their history and its progress, "
                                                      "per annotator")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--json", action="store_true", help="one JSON object, with history")
    p.set_defaults(func=cmd_show)


def _settings_flags(p: argparse.ArgumentParser, *, style: str | None, overlap: int | None) -> None:
    """The flags of a campaign's settings (``create``'s defaults given; ``set``'s are None: not given)."""
    p.add_argument("--task-set", metavar="S", help="only the tasks of this set (default: every task set)")
    p.add_argument("--methods", metavar="A,B,...", help="the methods compared, comma separated: two or more "
                                                        "(default: every method)")
    p.add_argument("--style", choices=STYLES, default=style,
                   help="how both outputs are shown: plain (citation marks and source lists taken away) or "
                        "sources (in one house style)" + (f" (default {style})" if style else ""))
    p.add_argument("--overlap", type=int, default=overlap, metavar="K",
                   help="annotators who vote on each pair" + (f" (default {overlap})" if overlap else ""))
    p.add_argument("--quota", type=int, metavar="N", help="votes per annotator (default: none)")
    p.add_argument("--voters", metavar="A,B,...",
                   help=f"who may vote, comma separated: account names, or {STUDY}NAME for every account of an "
                        "invite study (default: anyone)")
    p.add_argument("--criteria", nargs="?", const=BENCH, metavar="A,B,...",
                   help="besides the overall vote, one A/B/tie choice per criterion, comma separated; alone (or "
                        f"'{BENCH}'): DeepResearch Bench's four, {', '.join(BENCH_CRITERIA)} (default: none)")
    p.add_argument("--by", default="admin", metavar="NAME", help="who makes the change (default admin)")


def criteria_of(text: str | None) -> list[str] | None:
    """``--criteria``'s names: the bench's four for 'bench' (or the flag alone); None: not given."""
    if text is None:
        return None
    return list(BENCH_CRITERIA) if text.strip().lower() == BENCH else split(text)


def split(text: str | None) -> list[str]:
    """A comma-separated flag's names, blanks left out (None: none)."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def cmd_create(args, app) -> int:
    c = app.arena.campaigns.create(args.name, task_set=args.task_set, methods=split(args.methods), style=args.style,
                                   overlap=args.overlap, quota=args.quota, voters=split(args.voters), by=args.by,
                                   criteria=criteria_of(args.criteria) or ())
    print(f"Created campaign {c.name!r} (open): {c.settings()}.")
    print(who_line(c))
    _warn_shortfall(app, c.name)
    return 0


def _warn_shortfall(app, name: str) -> None:
    """A warning on standard error, with the numbers, for a campaign that can never finish."""
    short = app.admin.campaign_shortfall(name)
    if short:
        print(f"warning: campaign {name!r}: {short} (`python app.py campaign set {name} ...`).", file=sys.stderr)


def cmd_set(args, app) -> int:
    changes = given_changes(args)
    if not changes:
        raise ArenaError("Nothing to change: give a setting (--task-set, --all-task-sets, --methods, --all-methods, "
                         "--style, --overlap, --quota, --no-quota, --voters, --anyone, --criteria or --no-criteria).")
    old = app.arena.campaigns.get(args.name)
    new = app.arena.campaigns.change(args.name, by=args.by, **changes)
    print(f"Changed campaign {new.name!r}: {difference(old, new)}.")
    print(f"Now: {new.settings()}.")
    print(who_line(new))
    _warn_shortfall(app, new.name)
    return 0


def given_changes(args) -> dict:
    """The settings ``campaign set`` was given, as ``Campaigns.change`` takes them. Raises
    ArenaError for a flag given with its opposite (e.g. --quota and --no-quota)."""
    pairs = (("task_set", "--task-set", args.task_set, "--all-task-sets", args.all_task_sets, None),
             ("methods", "--methods", _names(args.methods), "--all-methods", args.all_methods, ()),
             ("quota", "--quota", args.quota, "--no-quota", args.no_quota, None),
             ("voters", "--voters", _names(args.voters), "--anyone", args.anyone, ()),
             ("criteria", "--criteria", criteria_of(args.criteria), "--no-criteria", args.no_criteria, ()))
    changes: dict = {}
    for setting, flag, value, opposite, cleared, none in pairs:
        if value is not None and cleared:
            raise ArenaError(f"Give {flag} or {opposite}, not both.")
        if value is not None or cleared:
            changes[setting] = none if cleared else value
    changes.update({k: getattr(args, k) for k in ("style", "overlap") if getattr(args, k) is not None})
    return changes


def _names(text: str | None) -> list[str] | None:
    return None if text is None else split(text)


def cmd_close(args, app) -> int:
    c = app.arena.campaigns.close(args.name, by=args.by)
    print(f"Closed campaign {c.name!r}: no annotator gets its pairs now; its votes, progress and leaderboard stay "
          f"(`python app.py campaign open {c.name}` opens it again).")
    return 0


def cmd_open(args, app) -> int:
    c = app.arena.campaigns.reopen(args.name, by=args.by)
    print(f"Opened campaign {c.name!r}: {c.settings()}.")
    print(who_line(c))
    return 0


def who_line(c: Campaign) -> str:
    """Who gets the campaign's pairs, and when, in words."""
    if not c.is_open:
        return f"It is closed: nobody gets its pairs until `python app.py campaign open {c.name}`."
    if not c.voters:
        who = "Anyone who opens the arena gets"
    else:
        names = [f"every account of study {v.removeprefix(STUDY)}" if v.startswith(STUDY) else v for v in c.voters]
        who = f"Annotator{'s' * (len(names) > 1)} {', '.join(names)} get{'s' * (len(names) == 1)}"
    return f"{who} its pairs at their next pair (after any older open campaign that admits them)."


def cmd_list(args, app) -> int:
    progress = [app.admin.campaign_progress(name) for name in app.arena.campaigns.names()]
    if args.json:
        print(json.dumps([p.as_json() for p in progress], indent=2, ensure_ascii=False))
    elif not progress:
        print("No campaign yet: `python app.py campaign create NAME --methods A,B`.")
    else:
        print(aligned([("name", "status", "votes", "annotators", "settings")]
                      + [(p.campaign.name, p.campaign.status, votes_cell(p), str(len(p.annotators)),
                          p.campaign.settings()) for p in progress]))
    return 0


def votes_cell(p: CampaignProgress) -> str:
    """'12/40 (30%)': the votes cast of those needed; '-' without a pair."""
    return f"{p.votes}/{p.needed} ({percent(p.done)})"


def percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def aligned(table: Sequence[Sequence[str]]) -> str:
    """Rows of cells in left-aligned columns, two spaces apart, without trailing blanks."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table)


def cmd_show(args, app) -> int:
    progress = app.admin.campaign_progress(args.name)
    history = app.arena.campaigns.history(args.name)
    if args.json:
        print(json.dumps({**progress.as_json(), "history": [c.as_json() for c in history]}, indent=2,
                         ensure_ascii=False))
        return 0
    c = progress.campaign
    print(f"Campaign {c.name!r} ({c.status}; started {when(c.started)}): {c.settings()}.")
    print(who_line(c))
    print("\nHistory:")
    print(aligned([("when", "by", "what changed")]
                  + [(when(new.created), new.changed_by, difference(old, new))
                     for old, new in zip([None, *history], history, strict=False)]))
    print("\n" + progress_line(progress))
    if progress.annotators:
        print(aligned([("annotator", "votes", "today", "quota", "done", "last vote")]
                      + [(a.name, str(a.votes), str(a.today), str(a.quota or "-"), percent(a.done), when(a.last))
                         for a in progress.annotators]))
    return 0


def progress_line(p: CampaignProgress) -> str:
    """The campaign's progress in one sentence."""
    return (f"Progress: {p.pairs} pair(s); {p.complete} complete (with all {p.campaign.overlap} vote(s)), {p.started} "
            f"started; {p.votes} of {p.needed} votes needed ({percent(p.done)}); {len(p.annotators)} annotator(s).")


def difference(old: Campaign | None, new: Campaign) -> str:
    """What ``new`` changed of ``old``'s settings, in words ("quota: none -> 30"); "created: ..."
    for a campaign's first settings; "no change" when they are the same."""
    if old is None:
        return f"created ({new.status}): {new.settings()}"
    told = [f"{s.replace('_', ' ')}: {_value(s, getattr(old, s))} -> {_value(s, getattr(new, s))}"
            for s in SETTINGS if getattr(old, s) != getattr(new, s)]
    return "; ".join(told) or "no change"


def _value(setting: str, value: object) -> str:
    """A setting's value in words ("every method", "anyone", "none")."""
    if isinstance(value, tuple):
        return ", ".join(value) if value else {"methods": "every method", "voters": "anyone",
                                               "criteria": "none"}[setting]
    if value is None:
        return "every task set" if setting == "task_set" else "none"
    return str(value)
