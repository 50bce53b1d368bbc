"""RAT Studio: the one place that reads settings (flags and environment), builds the store, clients and runner
and wires them; then runs the command the flags name (``ui.cli`` parses them and holds the commands).

    python app.py                      the browser UI on http://127.0.0.1:7860 (also: ui)
    writing      run, resume, redo, undo, show, versions, history, fetch, search, share
    comparing    methods, batch, eval, judge, leaderboard, outputs, votes, procedures
    annotating   campaign, annotators, dataset

Every flag works with every command, before or after its name. `python app.py --help` and
`python app.py COMMAND --help` say what each does; README.md lists them with their environment
variables (tests/test_settings_table.py holds this list to the parser's commands).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common.errors import ConfigError, RatStudioError
from common.settings import (
    ROLES,
    SETTINGS,
    TRUE_WORDS,
    FetchSettings,
    LLMSettings,
    MethodSettings,
    SearchSettings,
    Setting,
    Settings,
    search_providers,
)
from ui.cli import build_parser

if TYPE_CHECKING:  # pragma: no cover
    from annotation.admin.admin import Admin
    from annotation.results.results import Results
    from annotation.rooms import ArenaRooms
    from annotation.voting.arena import Arena
    from core.authoring import Authoring
    from core.clients import Clients
    from core.runner import Runner
    from data.store import Store

PARAM = next(row for row in SETTINGS if row.flag == "--param")  # the one repeatable flag: command_params reads it


# -- settings -------------------------------------------------------------------------------------
def setting_value(row: Setting, args: argparse.Namespace, env: dict[str, str]) -> object:
    """One row of ``SETTINGS``: the flag first, then the environment variable (when set and not
    empty; cast with the row's type), then the row's default; the row's check is applied to any
    value but None. A switch is on when its flag is given or its variable is one of TRUE_WORDS; a
    repeatable flag's values come as a list, the variable's as its comma list. Raises ConfigError."""
    given = getattr(args, row.name, None) if row.flag else None
    raw = env.get(row.env, "")
    if row.type is bool:
        value = True if given else (raw.strip().lower() in TRUE_WORDS if raw.strip() else row.default)
    elif given is not None:
        value = given
    elif raw == "":
        value = row.default
    elif row.type is list:
        value = [p for p in raw.split(",") if p.strip()]
    else:
        try:
            value = row.type(raw)
        except ValueError as exc:
            raise ConfigError(f"{row.env}={raw!r} is not valid: {exc}") from exc
    if value is not None and row.check is not None:
        row.check(value)
    return value


def settings_from(args: argparse.Namespace, env: dict[str, str]) -> Settings:
    """Every row of ``common.settings.SETTINGS`` read with ``setting_value`` (flags first, then
    environment, then defaults), the checks that join two settings, and the Settings built from
    them. Raises ConfigError for invalid values."""
    from core.budget import read_prices

    v = {row.name: setting_value(row, args, env) for row in SETTINGS if row.type is not list}
    if v["share"] and not v["auth"]:
        raise ConfigError("--share makes the UI public: also pass --auth USER:PASSWORD.")
    return Settings(
        llm=LLMSettings(
            base_url=v["base_url"], api_key=v["openai_api_key"], model=v["model"],
            role_models={r: m for r in ROLES if (m := v[f"{r}_model"])},
            timeout=v["llm_timeout"], max_retries=v["max_retries"], max_tokens=v["max_tokens"],
            budget_tokens=v["budget_tokens"],
        ),
        search=SearchSettings(
            providers=search_providers(v["search"]), searxng_url=v["searxng_url"],
            corpus_dir=Path(v["corpus"]).expanduser() if v["corpus"] else None,
        ),
        fetch=FetchSettings(allow_private_urls=v["allow_private_urls"]),
        method=MethodSettings(
            k=v["k"], passage_tokens=v["passage_tokens"], max_steps=v["max_steps"],
            context_tokens=v["context_tokens"], min_keep=v["min_keep"], cite_threshold=v["cite_threshold"],
            max_task_chars=v["max_task_chars"], params=command_params(args, env),
        ),
        db_path=db_setting(v["db"] or default_db_path(env)),
        host=v["host"],
        port=v["port"],
        concurrency=v["concurrency"],
        share=v["share"],
        auth=tuple(v["auth"].split(":", 1)) if v["auth"] else None,
        arena_only=v["arena_only"],
        arena_text=v["arena_text"],
        arena_style=v["arena_style"],
        votes_per_minute=v["votes_per_minute"],
        votes_per_address=v["votes_per_address"],
        votes_per_day=v["votes_per_day"],
        study_accounts_per_address=v["study_accounts_per_address"],
        trusted_proxies=tuple(a.strip() for a in (v["trusted_proxies"] or "").split(",") if a.strip()),
        allowed_hosts=tuple(a.strip().lower() for a in (v["allowed_hosts"] or "").split(",") if a.strip()),
        prices=read_prices(v["prices"]) if v["prices"] else {},
    )


def method_params(pairs: list[str]) -> dict[str, str]:
    """KEY=VALUE pairs as a dict (``command_params`` checks them against the methods' declarations).
    Raises ConfigError for a pair without "="."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {pair!r} is not KEY=VALUE, e.g. --param itrg.iterations=3.")
        params[key.strip()] = value.strip()
    return params


def command_params(args: argparse.Namespace, env: dict[str, str]) -> dict[str, str]:
    """The ``--param`` pairs (else RAT_STUDIO_PARAMS), checked against the methods' declared
    parameters before anything runs: a ``--param`` key must be one that a method the command
    names reads (``run --method``, ``batch``/``eval --methods``); the environment's keys, shared by
    every command (the UI runs any method), need only belong to some method. Raises ConfigError."""
    from core.methods import METHODS
    from core.methods.base import check_params

    flags = getattr(args, "param", None)
    params = method_params(setting_value(PARAM, args, env) or [])
    named = getattr(args, "methods", None) or ""
    named = [getattr(args, "method", None) or "", *(named.split(",") if isinstance(named, str) else named)]
    methods = [m.strip() for m in named if m and m.strip() in METHODS]
    check_params(methods or list(METHODS), params, strict=bool(flags and methods))
    return params


def default_db_path(env: dict[str, str] | None = None) -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("rat-studio", appauthor=False)) / "rat_studio.db"


def db_setting(value: str | Path) -> Path | str:
    """``--db`` as the Store takes it: a PostgreSQL URL as it is, a file path expanded."""
    from data.sql import server_url

    return server_url(str(value)) or Path(value).expanduser()


def corpus_db(store: Store) -> Path:
    """The local corpus's index file: beside the SQLite file, or in the user data folder when
    the database is a server."""
    path = store.path if store.url is None else default_db_path()
    return path.with_name(path.stem + ".corpus.db")


@dataclass(frozen=True)
class App:
    """What app.py builds from the settings; each front end takes the parts it uses. The arena's
    three rooms, one of each per process: ``arena`` (the annotators' side), ``results`` (what the
    votes say, with the leaderboards' cache) and ``admin`` (the study admin's work); the CLI's
    arena commands and the UI's arena tabs use them. ``authoring``: the author's actions on a
    run's article and the one door a stored version is read through (``core.authoring``)."""

    settings: Settings
    store: Store
    clients: Clients
    runner: Runner
    authoring: Authoring
    arena: Arena
    results: Results
    admin: Admin

    @property
    def rooms(self) -> ArenaRooms:
        """The three, as the UI's arena tabs take them."""
        from annotation.rooms import ArenaRooms

        return ArenaRooms(self.arena, self.results, self.admin)


def build(settings: Settings) -> App:
    """The composition root: the store, the client factories, the runner and the arena service,
    each handed what it uses. Raises StoreError when the database cannot be opened."""
    from annotation.rooms import ArenaRooms
    from annotation.voting.arena import Arena
    from annotation.voting.limits import VoteLimits
    from core.authoring import Authoring
    from core.clients import Clients
    from core.procedures import ProcedureMemory
    from core.runner import Runner
    from data.store import Store

    store = Store(settings.db_path)
    store.interrupt_orphans()  # runs whose process died become "interrupted", ready to continue
    clients = Clients(settings, cache=store, corpus_db=corpus_db(store))
    runner = Runner(store, clients, settings, memory=ProcedureMemory(store))
    arena = Arena(store, text=settings.arena_text, style=settings.arena_style,
                  cite_threshold=settings.method.cite_threshold,
                  limits=VoteLimits(settings.votes_per_minute, settings.votes_per_address,
                                    per_day=settings.votes_per_day))
    rooms = ArenaRooms.of(arena)
    return App(settings=settings, store=store, clients=clients, runner=runner,
               authoring=Authoring(store, settings.method.cite_threshold), arena=arena, results=rooms.results,
               admin=rooms.admin)


# -- entry point ----------------------------------------------------------------------------------
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away


def closed_pipe() -> int:
    """Standard output's reader went away (``| head``): stop quietly, with ``EXIT_CLOSED_PIPE``.
    Standard output is pointed at the null device, so that what is still buffered is not written
    to the closed pipe again when Python exits."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # standard output is no file (a test's capture): nothing is left to write
        pass
    return EXIT_CLOSED_PIPE


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    """Parse the flags (``ui.cli.build_parser``), read the settings, build the app and run the
    command: ``args.func(args, app)``. Our errors become one line on standard error and exit
    code 2 (a setting) or 1; Ctrl-C exits with 130; a closed pipe on standard output (``| head``)
    ends it quietly with ``EXIT_CLOSED_PIPE``, in any command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from(args, dict(os.environ) if env is None else env)
        code = args.func(args, build(settings))
        sys.stdout.flush()  # a closed pipe shows here, not as Python exits
        return code
    except BrokenPipeError:
        return closed_pipe()
    except RatStudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
