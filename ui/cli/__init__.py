"""The command line: argparse and printing over the library calls the UI shares.

    build_parser()        every command and flag; each command sets ``func(args, app) -> exit code``
    common_flags(...)     the flags every command takes, made from ``common.settings.SETTINGS``
                          (app.py's ``settings_from`` reads them through the same table)

The commands live by subject: ``ui.cli.runs`` (ui, run, resume, fetch, search, history, show),
``ui.cli.arena`` (votes, outputs, leaderboard, judge), ``ui.cli.methods`` (batch, eval,
procedures). Handlers raise our typed errors; ``app.main`` prints them as one line and turns
them into the exit code.
"""

from __future__ import annotations

import argparse

from common.settings import SETTINGS
from ui.cli import annotators, arena, methods, runs


def common_flags(suppress: bool) -> argparse.ArgumentParser:
    """The flags every command takes, one per row of ``common.settings.SETTINGS`` (in its order and
    argument groups; each help ends with "[ENV; default]"). Sub-commands get them with SUPPRESS
    defaults so a flag given before the command name is not overwritten by the sub-command's default."""
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS if suppress else None)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for s in SETTINGS:
        if s.flag is None:  # the environment's only (OPENAI_API_KEY)
            continue
        if s.group not in groups:
            groups[s.group] = p.add_argument_group(s.group)
        options: dict = {"help": s.help_text.replace("%", "%%")}
        if s.type is bool:
            options["action"] = "store_true"
        elif s.type is list:
            options["action"] = "append"
        elif s.type is not str:
            options["type"] = s.type
        if s.metavar:
            options["metavar"] = s.metavar
        groups[s.group].add_argument(s.flag, **options)
    return p


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python app.py``: the common flags, and every command with them."""
    env_only = "; ".join(f"{s.env} ({s.help})" for s in SETTINGS if s.flag is None)
    parser = argparse.ArgumentParser(prog="python app.py", description="RAT Studio: write long, sourced texts "
                                     "with a language model, and judge blind which method writes best.",
                                     epilog=f"Read from the environment only: {env_only}.",
                                     parents=[common_flags(suppress=False)])
    parser.set_defaults(func=runs.cmd_ui)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = [common_flags(suppress=True)]
    runs.add_commands(sub, common)
    arena.add_commands(sub, common)
    methods.add_commands(sub, common)
    annotators.add_commands(sub, common)
    return parser
