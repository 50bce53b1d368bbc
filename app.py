"""RAT Studio: the one place that reads settings (flags and environment), builds the store, clients and runner
and wires them; and the command line.

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
import asyncio
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from annotation import cli as annotation_cli
from core import commands as method_commands
from common.errors import ConfigError, RatStudioError
from common.settings import (
    ROLES, SEARCH_PROVIDERS, FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings,
)

if TYPE_CHECKING:  # pragma: no cover
    from core.clients import Clients
    from core.runner import Runner
    from data.store import Store

TRUE = {"1", "true", "yes", "on"}


# -- settings -------------------------------------------------------------------------------------
def _common(suppress: bool) -> argparse.ArgumentParser:
    """The flags every command takes. Sub-commands get them with SUPPRESS defaults so a flag
    given before the command name is not overwritten by the sub-command's default."""
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS if suppress else None)
    g = p.add_argument_group("model (any OpenAI-compatible server)")
    g.add_argument("--base-url", help="server URL, e.g. http://localhost:11434/v1 for Ollama [OPENAI_BASE_URL]")
    g.add_argument("--model", help="model for every role [RAT_STUDIO_MODEL; default gpt-4o-mini]")
    for role in ROLES:
        g.add_argument(f"--{role}-model", help=f"model for the {role} role [RAT_STUDIO_{role.upper()}_MODEL]")
    g.add_argument("--llm-timeout", type=float, help="seconds for one model call [RAT_STUDIO_LLM_TIMEOUT; 120]")
    g.add_argument("--max-retries", type=int, help="retries on 429/5xx/timeouts [RAT_STUDIO_MAX_RETRIES; 4]")
    g = p.add_argument_group("search and pages")
    g.add_argument("--search", help=f"providers tried in order, comma separated: {', '.join(SEARCH_PROVIDERS)} "
                                    "[RAT_STUDIO_SEARCH; default ddg]")
    g.add_argument("--searxng-url", help="SearXNG base URL [RAT_STUDIO_SEARXNG_URL]")
    g.add_argument("--corpus", help="folder of .md/.txt/.html files to search [RAT_STUDIO_CORPUS]")
    g.add_argument("--allow-private-urls", action="store_true",
                   help="let the fetcher read private/loopback hosts [RAT_STUDIO_ALLOW_PRIVATE_URLS; off]")
    g.add_argument("--k", type=int, help="search results read per retrieval [RAT_STUDIO_K; 5]")
    g.add_argument("--passage-tokens", type=int, help="retrieved tokens per revision [RAT_STUDIO_PASSAGE_TOKENS; 1500]")
    g.add_argument("--max-steps", type=int, help="most draft steps revised [RAT_STUDIO_MAX_STEPS; 30]")
    g.add_argument("--max-task-chars", type=int, help="longest task accepted [RAT_STUDIO_MAX_TASK_CHARS; 20000]")
    g.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a method parameter, repeatable, e.g. --param itrg.iterations=3 "
                        "[RAT_STUDIO_PARAMS, comma separated]")
    g = p.add_argument_group("storage and server")
    g.add_argument("--db", help="SQLite file [RAT_STUDIO_DB; default in the user data folder]")
    g.add_argument("--host", help="address the UI listens on [RAT_STUDIO_HOST; 127.0.0.1]")
    g.add_argument("--port", type=int, help="UI port [RAT_STUDIO_PORT; 7860]")
    g.add_argument("--concurrency", type=int, help="runs at once in the UI queue [RAT_STUDIO_CONCURRENCY; 4]")
    g.add_argument("--share", action="store_true", help="public Gradio link; needs --auth [RAT_STUDIO_SHARE]")
    g.add_argument("--auth", help="USER:PASSWORD required to open the UI [RAT_STUDIO_AUTH]")
    g.add_argument("--arena-only", action="store_true",
                   help="serve only the Arena and Leaderboard tabs, for annotators [RAT_STUDIO_ARENA_ONLY]")
    return p


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

    providers = tuple(p.strip() for p in pick("search", "RAT_STUDIO_SEARCH", "ddg").split(",") if p.strip())
    unknown = [p for p in providers if p not in SEARCH_PROVIDERS]
    if unknown or not providers:
        raise ConfigError(f"Unknown search provider {', '.join(unknown) or '(none)'}: use a comma list of "
                          f"{', '.join(SEARCH_PROVIDERS)}, e.g. --search ddg,searxng.")
    corpus = pick("corpus", "RAT_STUDIO_CORPUS")
    db = pick("db", "RAT_STUDIO_DB") or str(default_db_path(env))
    auth = pick("auth", "RAT_STUDIO_AUTH")
    if auth and ":" not in auth:
        raise ConfigError("--auth must be USER:PASSWORD.")
    share = flag_on("share", "RAT_STUDIO_SHARE")
    if share and not auth:
        raise ConfigError("--share makes the UI public: also pass --auth USER:PASSWORD.")
    role_models = {r: m for r in ROLES if (m := pick(f"{r}_model", f"RAT_STUDIO_{r.upper()}_MODEL"))}
    base_url = pick("base_url", "OPENAI_BASE_URL")
    return Settings(
        llm=LLMSettings(
            base_url=base_url, api_key=env.get("OPENAI_API_KEY") or None,
            model=pick("model", "RAT_STUDIO_MODEL", LLMSettings.model), role_models=role_models,
            timeout=pick("llm_timeout", "RAT_STUDIO_LLM_TIMEOUT", LLMSettings.timeout, float),
            max_retries=pick("max_retries", "RAT_STUDIO_MAX_RETRIES", LLMSettings.max_retries, int),
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
            max_task_chars=pick("max_task_chars", "RAT_STUDIO_MAX_TASK_CHARS", MethodSettings.max_task_chars, int),
            params=method_params(getattr(args, "param", None) or
                                 [p for p in env.get("RAT_STUDIO_PARAMS", "").split(",") if p.strip()]),
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
    """KEY=VALUE pairs as a dict; each method checks the types of its own keys.
    Raises ConfigError for a pair without "="."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {pair!r} is not KEY=VALUE, e.g. --param itrg.iterations=3.")
        params[key.strip()] = value.strip()
    return params


def default_db_path(env: dict[str, str]) -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("rat-studio", appauthor=False)) / "rat_studio.db"


@dataclass(frozen=True)
class App:
    """What app.py builds from the settings; each front end takes the parts it uses."""

    settings: Settings
    store: "Store"
    clients: "Clients"
    runner: "Runner"


def build(settings: Settings) -> App:
    """The composition root: the store, the client factories and the runner, each handed what
    it uses. Raises StoreError when the database cannot be opened."""
    from core.clients import Clients
    from core.procedures import ProcedureMemory
    from core.runner import Runner
    from data.store import Store

    store = Store(settings.db_path)
    clients = Clients(settings, cache=store,
                      corpus_db=store.path.with_name(store.path.stem + ".corpus.db"))
    runner = Runner(store, clients, settings, memory=ProcedureMemory(store))
    return App(settings=settings, store=store, clients=clients, runner=runner)


# -- commands -------------------------------------------------------------------------------------
def cmd_ui(args, app) -> int:
    from ui.app import launch

    s = app.settings
    if s.host not in ("127.0.0.1", "localhost", "::1") and not s.auth:
        print(f"warning: listening on {s.host} without --auth: anyone who can reach this machine "
              "can run the model on your key and read your runs. Add --auth USER:PASSWORD.", file=sys.stderr)
    launch(app.settings, app.store, app.clients, app.runner)
    return 0


def cmd_run(args, app) -> int:
    from common.types import Task

    task = Task(args.task, kind=args.kind)
    return asyncio.run(_follow(app.runner.start(args.method, task, draft_only=args.draft_only), args, app))


def cmd_resume(args, app) -> int:
    return asyncio.run(_follow(app.runner.resume(args.run_id, providers=app.settings.search.providers), args, app))


async def _follow(events, args, app) -> int:
    from common.events import Failed, Final, RunStarted
    from core.report import progress_line, to_markdown

    run_id, final, failed = None, None, None
    try:
        async for event in events:
            if isinstance(event, RunStarted):
                run_id = event.run_id
            elif isinstance(event, Final):
                final = event
            elif isinstance(event, Failed):
                failed = event
            line = progress_line(event)
            if line:
                print(line, file=sys.stderr, flush=True)
    finally:
        if run_id:
            print(f"run id: {run_id}", file=sys.stderr)
    if failed:
        hint = f" Resume with: python app.py resume {run_id}" if failed.resumable else ""
        print(f"error: {failed.error}{hint}", file=sys.stderr)
        return 1
    if final is None:  # draft only
        print(f"draft stored; continue with: python app.py resume {run_id}", file=sys.stderr)
        return 0
    run = app.store.get_run(run_id)
    markdown = to_markdown(run["task"], final.text, final.sources)
    if args.out:
        Path(args.out).write_text(markdown, encoding="utf-8")
        print(f"article written to {args.out}", file=sys.stderr)
    else:
        print(markdown)
    return 0


def cmd_fetch(args, app) -> int:
    async def go():
        fetcher = app.clients.fetcher()
        try:
            return await fetcher.fetch(args.url)
        finally:
            await fetcher.aclose()

    page = asyncio.run(go())
    meta = {"url": page.url, "final_url": page.final_url, "title": page.title, "content_type": page.content_type,
            "bytes": page.size, "seconds": round(page.seconds, 3), **(page.metadata or {})}
    if args.json:
        print(json.dumps({**meta, "text": page.text}, ensure_ascii=False, indent=2))
    else:
        for key, value in meta.items():
            if value not in (None, ""):
                print(f"{key}: {value}")
        print()
        print(page.text)
    return 0


def cmd_search(args, app) -> int:
    async def go():
        chain = app.clients.search()
        try:
            return await chain.search(args.query, args.n)
        finally:
            close = getattr(chain, "aclose", None)
            if close:
                await close()

    response = asyncio.run(go())
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(r) for r in response.results], ensure_ascii=False, indent=2))
        return 0
    for w in response.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{len(response.results)} results from {response.provider}" + (" (cached)" if response.cached else ""),
          file=sys.stderr)
    for n, r in enumerate(response.results, start=1):
        print(f"{n}. {r.title}\n   {r.url}\n   {r.snippet}\n")
    return 0


def cmd_history(args, app) -> int:
    runs = app.store.list_runs(limit=args.limit)
    if args.json:
        print(json.dumps(runs, ensure_ascii=False, indent=2, default=str))
        return 0
    for r in runs:
        tokens = r["prompt_tokens"] + r["completion_tokens"]
        print(f"{r['id']}  {r['created'][:19]}  {r['method']:<14} {r['status']:<11} "
              f"{tokens:>7} tok  {r['wall_seconds']:>7.1f} s  {r['task'][:60]}")
    return 0


def cmd_show(args, app) -> int:
    from core.report import to_markdown
    from common.types import Source

    run = app.store.get_run(args.run_id)
    sources = [Source(s["n"], s["url"], s["title"], tuple(s["steps"])) for s in run["sources"]]
    print(to_markdown(run["task"], run["final_text"], sources))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from core.methods import METHODS

    parser = argparse.ArgumentParser(prog="python app.py", description="RAT Studio: write long, sourced texts "
                                     "with a language model, and judge blind which method writes best.",
                                     parents=[_common(suppress=False)])
    parser.set_defaults(func=cmd_ui)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = [_common(suppress=True)]

    p = sub.add_parser("ui", parents=common, help="start the browser UI (the default)")
    p.set_defaults(func=cmd_ui)
    p = sub.add_parser("run", parents=common, help="run a method on a task and print or save the article")
    p.add_argument("task", help="what to write, e.g. \"Describe Jin Yong's life\"")
    p.add_argument("--method", default="rat", choices=sorted(METHODS), help="writing method (default rat)")
    p.add_argument("--kind", default="writing", choices=["writing", "plan", "qa"])
    p.add_argument("--out", help="write the Markdown article to this file (default: standard output)")
    p.add_argument("--draft-only", action="store_true", help="stop after the draft; continue with resume")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("resume", parents=common, help="continue an interrupted or failed run")
    p.add_argument("run_id")
    p.add_argument("--out", help="write the Markdown article to this file")
    p.set_defaults(func=cmd_resume)
    p = sub.add_parser("fetch", parents=common, help="fetch a page and print its extracted text and metadata")
    p.add_argument("url")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fetch)
    p = sub.add_parser("search", parents=common, help="search and print results")
    p.add_argument("query")
    p.add_argument("-n", type=int, default=5, help="number of results (default 5)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)
    p = sub.add_parser("history", parents=common, help="list past runs")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_history)
    p = sub.add_parser("show", parents=common, help="print a stored run's article as Markdown")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_show)
    annotation_cli.add_commands(sub, common)
    method_commands.add_commands(sub, common)
    return parser


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
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
