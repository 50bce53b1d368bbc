"""RAT Studio: the one place that reads settings (flags and environment), builds the store, clients and runner
and wires them; then runs the command the flags name (``ui.cli`` parses them and holds the commands).

    python app.py                      the browser UI on http://127.0.0.1:7860
    python app.py run "TASK"           write an article from the command line
    python app.py resume RUN_ID        continue an interrupted run
    python app.py fetch URL            a page's extracted text and metadata
    python app.py search "QUERY"       search results
    python app.py history              past runs

Every flag works with every command, before or after its name. `python app.py --help` and
README.md list them with their environment variables.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from common.errors import ConfigError, RatStudioError
from common.settings import (
    ROLES,
    SEARCH_PROVIDERS,
    FetchSettings,
    LLMSettings,
    MethodSettings,
    SearchSettings,
    Settings,
)
from ui.cli import build_parser

if TYPE_CHECKING:  # pragma: no cover
    from core.clients import Clients
    from core.runner import Runner
    from data.store import Store

TRUE = {"1", "true", "yes", "on"}
MIN_PASSWORD = 8  # characters of an --auth password
MIN_CONTEXT_TOKENS = 1024  # the smallest --context-tokens that leaves room for a prompt and its answer


# -- settings -------------------------------------------------------------------------------------
def settings_from(args: argparse.Namespace, env: dict[str, str]) -> Settings:
    """Flags first, then environment, then defaults. Raises ConfigError for invalid values."""

    def pick(flag: str, var: str | None, default=None, cast: Callable = str):
        value = getattr(args, flag, None)
        if value is None and var and env.get(var, "") != "":
            try:
                value = cast(env[var])
            except ValueError as exc:
                raise ConfigError(f"{var}={env[var]!r} is not valid: {exc}") from exc
        return default if value is None else value

    def flag_on(flag: str, var: str) -> bool:
        return bool(getattr(args, flag, None)) or env.get(var, "").strip().lower() in TRUE

    def share_of(key: str, var: str, default: float) -> float:
        value = pick(key, var, default, float)
        if not 0 <= value <= 1:
            raise ConfigError(f"--{key.replace('_', '-')} must be a share between 0 and 1 (e.g. 0.4 for 40%), "
                              f"not {value}.")
        return value

    context_tokens = pick("context_tokens", "RAT_STUDIO_CONTEXT_TOKENS", None, int)
    if context_tokens is not None and context_tokens < MIN_CONTEXT_TOKENS:
        raise ConfigError(f"--context-tokens {context_tokens} is too small for any of the prompts: give the "
                          f"model's context window, at least {MIN_CONTEXT_TOKENS} (e.g. 8192).")

    providers = tuple(p.strip() for p in pick("search", "RAT_STUDIO_SEARCH", "ddg").split(",") if p.strip())
    unknown = [p for p in providers if p not in SEARCH_PROVIDERS]
    if unknown or not providers:
        raise ConfigError(f"Unknown search provider {', '.join(unknown) or '(none)'}: use a comma list of "
                          f"{', '.join(SEARCH_PROVIDERS)}, e.g. --search ddg,searxng.")
    corpus = pick("corpus", "RAT_STUDIO_CORPUS")
    db = pick("db", "RAT_STUDIO_DB") or str(default_db_path(env))
    auth = pick("auth", "RAT_STUDIO_AUTH")
    if auth is not None:
        user, sep, password = auth.partition(":")
        if not sep or not user.strip() or len(password) < MIN_PASSWORD:
            raise ConfigError(f"--auth must be USER:PASSWORD with a user name and a password of at least "
                              f"{MIN_PASSWORD} characters, e.g. --auth ana:correct-horse.")
    share = flag_on("share", "RAT_STUDIO_SHARE")
    if share and not auth:
        raise ConfigError("--share makes the UI public: also pass --auth USER:PASSWORD.")
    max_tokens = pick("max_tokens", "RAT_STUDIO_MAX_TOKENS", None, int)
    if max_tokens is not None and max_tokens < 1:
        raise ConfigError(f"--max-tokens must be at least 1 (e.g. 1024), not {max_tokens}; leave it out for the "
                          "server's own limit.")
    role_models = {r: m for r in ROLES if (m := pick(f"{r}_model", f"RAT_STUDIO_{r.upper()}_MODEL"))}
    base_url = pick("base_url", "OPENAI_BASE_URL")
    return Settings(
        llm=LLMSettings(
            base_url=base_url, api_key=env.get("OPENAI_API_KEY") or None,
            model=pick("model", "RAT_STUDIO_MODEL", LLMSettings.model), role_models=role_models,
            timeout=pick("llm_timeout", "RAT_STUDIO_LLM_TIMEOUT", LLMSettings.timeout, float),
            max_retries=pick("max_retries", "RAT_STUDIO_MAX_RETRIES", LLMSettings.max_retries, int),
            max_tokens=max_tokens,
        ),
        search=SearchSettings(
            providers=providers, searxng_url=pick("searxng_url", "RAT_STUDIO_SEARXNG_URL"),
            corpus_dir=Path(corpus).expanduser() if corpus else None,
        ),
        fetch=FetchSettings(allow_private_urls=flag_on("allow_private_urls", "RAT_STUDIO_ALLOW_PRIVATE_URLS")),
        method=MethodSettings(
            k=pick("k", "RAT_STUDIO_K", MethodSettings.k, int),
            passage_tokens=pick("passage_tokens", "RAT_STUDIO_PASSAGE_TOKENS", MethodSettings.passage_tokens, int),
            max_steps=pick("max_steps", "RAT_STUDIO_MAX_STEPS", MethodSettings.max_steps, int),
            context_tokens=context_tokens,
            min_keep=share_of("min_keep", "RAT_STUDIO_MIN_KEEP", MethodSettings.min_keep),
            cite_threshold=share_of("cite_threshold", "RAT_STUDIO_CITE_THRESHOLD", MethodSettings.cite_threshold),
            max_task_chars=pick("max_task_chars", "RAT_STUDIO_MAX_TASK_CHARS", MethodSettings.max_task_chars, int),
            params=command_params(args, env),
        ),
        db_path=Path(db).expanduser(),
        host=pick("host", "RAT_STUDIO_HOST", "127.0.0.1"),
        port=pick("port", "RAT_STUDIO_PORT", 7860, int),
        concurrency=pick("concurrency", "RAT_STUDIO_CONCURRENCY", 4, int),
        share=share,
        auth=tuple(auth.split(":", 1)) if auth else None,
        arena_only=flag_on("arena_only", "RAT_STUDIO_ARENA_ONLY"),
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
    params = method_params(flags or [p for p in env.get("RAT_STUDIO_PARAMS", "").split(",") if p.strip()])
    named = getattr(args, "methods", None) or ""
    named = [getattr(args, "method", None) or "", *(named.split(",") if isinstance(named, str) else named)]
    methods = [m.strip() for m in named if m and m.strip() in METHODS]
    check_params(methods or list(METHODS), params, strict=bool(flags and methods))
    return params


def default_db_path(env: dict[str, str]) -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("rat-studio", appauthor=False)) / "rat_studio.db"


@dataclass(frozen=True)
class App:
    """What app.py builds from the settings; each front end takes the parts it uses."""

    settings: Settings
    store: Store
    clients: Clients
    runner: Runner


def build(settings: Settings) -> App:
    """The composition root: the store, the client factories and the runner, each handed what
    it uses. Raises StoreError when the database cannot be opened."""
    from core.clients import Clients
    from core.procedures import ProcedureMemory
    from core.runner import Runner
    from data.store import Store

    store = Store(settings.db_path)
    store.interrupt_orphans()  # runs whose process died become "interrupted", ready to continue
    clients = Clients(settings, cache=store,
                      corpus_db=store.path.with_name(store.path.stem + ".corpus.db"))
    runner = Runner(store, clients, settings, memory=ProcedureMemory(store))
    return App(settings=settings, store=store, clients=clients, runner=runner)


# -- entry point ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    """Parse the flags (``ui.cli.build_parser``), read the settings, build the app and run the
    command: ``args.func(args, app)``. Our errors become one line on standard error and exit
    code 2 (a setting) or 1; Ctrl-C exits with 130."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from(args, dict(os.environ) if env is None else env)
        return args.func(args, build(settings))
    except RatStudioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
