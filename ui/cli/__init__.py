"""The command line: argparse and printing over the library calls the UI shares.

    build_parser()        every command and flag; each command sets ``func(args, app) -> exit code``
    common_flags(...)     the flags every command takes, made from ``common.settings.SETTINGS``
                          (app.py's ``settings_from`` reads them through the same table)

The commands live by subject: ``ui.cli.runs`` (ui, run, resume, fetch, search, history, show),
``ui.cli.arena`` (votes, outputs, leaderboard, judge), ``ui.cli.methods`` (batch, eval,
procedures), ``ui.cli.share`` (share). Handlers raise our typed errors; ``app.main`` prints them as one line and turns
them into the exit code. A command's run id (``RUN_ID_ARGS``) may be a unique prefix of it: it is
made whole (``Store.resolve_run_id``) before the command sees it.
"""

from __future__ import annotations

import argparse
import functools

from common.settings import SETTINGS
from ui.cli import annotators, arena, campaigns, dataset, methods, runs, share


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
    campaigns.add_commands(sub, common)
    dataset.add_commands(sub, common)
    share.add_commands(sub, common)
    _resolve_run_ids(parser)
    return parser


RUN_ID_ARGS = ("run_id", "run_ids")  # the arguments that name stored runs, in every command


def resolving_run_ids(func):
    """The command ``func(args, app)``, with its ``RUN_ID_ARGS`` made whole ids first (each a
    run's id or a unique prefix of it). Raises RunNotFound, or ConfigError for an ambiguous prefix."""

    @functools.wraps(func)
    def command(args, app) -> int:
        for name in RUN_ID_ARGS:
            given = getattr(args, name, None)
            if isinstance(given, str):
                setattr(args, name, app.store.resolve_run_id(given))
            elif isinstance(given, list):
                setattr(args, name, [app.store.resolve_run_id(g) for g in given])
        return func(args, app)

    return command


def _resolve_run_ids(parser: argparse.ArgumentParser) -> None:
    """Every command under ``parser`` that takes a run id takes a unique prefix of it too."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in dict.fromkeys(action.choices.values()):  # an alias names the same parser
                _resolve_run_ids(command)
    if any(action.dest in RUN_ID_ARGS for action in parser._actions):
        parser.set_defaults(func=resolving_run_ids(parser.get_default("func")))
