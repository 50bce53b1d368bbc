"""The command line: argparse and printing over the library calls the UI shares.

    build_parser()        every command and flag; each command sets ``func(args, app) -> exit code``
    common_flags(...)     the flags every command takes (settings; app.py's ``settings_from`` reads them)

The commands live by subject: ``ui.cli.runs`` (ui, run, resume, fetch, search, history, show),
``ui.cli.arena`` (votes, outputs, leaderboard, judge), ``ui.cli.methods`` (batch, eval,
procedures). Handlers raise our typed errors; ``app.main`` prints them as one line and turns
them into the exit code.
"""

from __future__ import annotations

import argparse

from common.settings import ROLES, SEARCH_PROVIDERS
from ui.cli import arena, methods, runs


def common_flags(suppress: bool) -> argparse.ArgumentParser:
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
    g.add_argument("--max-tokens", type=int,
                   help="most tokens of one model answer, for models that ramble [RAT_STUDIO_MAX_TOKENS; "
                        "default: the server's limit]")
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
    g.add_argument("--context-tokens", type=int,
                   help="the model's context window in tokens; prompts are fitted to it (passages shrink "
                        "first) [RAT_STUDIO_CONTEXT_TOKENS; default: what the server reports, else 8192]")
    g.add_argument("--min-keep", type=float,
                   help="share of a text's characters a revision must keep, else the text stays as it was "
                        "[RAT_STUDIO_MIN_KEEP; 0.4]")
    g.add_argument("--cite-threshold", type=float,
                   help="share of a sentence's content words a retrieved passage must hold for the sentence to "
                        "cite it [RAT_STUDIO_CITE_THRESHOLD; 0.6]")
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


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python app.py``: the common flags, and every command with them."""
    parser = argparse.ArgumentParser(prog="python app.py", description="RAT Studio: write long, sourced texts "
                                     "with a language model, and judge blind which method writes best.",
                                     parents=[common_flags(suppress=False)])
    parser.set_defaults(func=runs.cmd_ui)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = [common_flags(suppress=True)]
    runs.add_commands(sub, common)
    arena.add_commands(sub, common)
    methods.add_commands(sub, common)
    return parser
