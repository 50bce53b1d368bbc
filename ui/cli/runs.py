"""Commands that write, read and look up: ui, run, resume, fetch, search, history, show, versions.

    python app.py                      the browser UI on http://127.0.0.1:7860
    python app.py run "TASK"           write an article from the command line
    python app.py resume RUN_ID        continue an interrupted run (--draft FILE: with an edited draft)
    python app.py fetch URL            a page's extracted text and metadata
    python app.py search "QUERY"       search results
    python app.py history              past runs
    python app.py show RUN_ID          a stored run's article as Markdown (--version model|latest|N;
                                       --format md|docx|pdf|html -o FILE)
    python app.py versions RUN_ID      the author's versions of a run's article
    python app.py redo RUN_ID --step K do a step of a finished run again (--query Q, --exclude URL,
                                       --instruction TEXT); --add-after K --instruction TEXT adds
                                       a section after step K; --instruction TEXT alone revises
                                       the whole article
    python app.py undo RUN_ID --step K undo a step's revision (--put-back: use it again)

A RUN_ID may be a unique prefix of the id, of at least 4 characters (``ui.cli.RUN_ID_ARGS``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path

from ui.runs_table import history_text

#: ``run`` and ``resume`` exit with this when the run finished but used no source at all (a run
#: status of "unsourced"): the Markdown says so, and standard error says why and what to do.
EXIT_UNSOURCED = 3
#: ``show`` exits with this for a run that has not finished (draft, interrupted, failed, running):
#: there is no article yet, and standard error says how to continue it.
EXIT_UNFINISHED = 4
#: ``run`` and ``resume`` exit with this when the run stopped before the model call that would pass
#: its token budget (--budget-tokens; a run status of "budget"): standard error says what it spent
#: and how to continue with a larger budget.
EXIT_BUDGET = 5


NOTES_HELP = ("add the run notes (the steps never checked against a source, and why) as an appendix; a reader's "
              "document leaves them out")
OUT_HELP = ("write the article to this file: Markdown, or Word, PDF or HTML for a name ending in .docx, .pdf or "
            ".html (default: standard output)")
#: ``show --format``, and the formats a file's name says (Markdown for any other name)
FORMATS = ("md", "docx", "pdf", "html")
SUFFIXES = {".docx": "docx", ".pdf": "pdf", ".html": "html", ".htm": "html"}


def add_commands(sub: argparse._SubParsersAction, common: list[argparse.ArgumentParser]) -> None:
    """Add ``ui``, ``run``, ``resume``, ``fetch``, ``search``, ``history``, ``show`` and ``versions``
    (each with ``common``, the flags every command takes)."""
    from core.methods import METHODS

    p = sub.add_parser("ui", parents=common, help="start the browser UI (the default)")
    p.set_defaults(func=cmd_ui)
    p = sub.add_parser("run", parents=common, help="run a method on a task and print or save the article",
                       epilog="exit codes: 0 done; 1 the run failed; 2 a bad setting; 3 finished unsourced "
                              "(no step was checked against a source: the text is the model's alone); "
                              f"{EXIT_BUDGET} stopped at the token budget (--budget-tokens): resume it with a "
                              "larger one")
    p.add_argument("task", help="what to write, e.g. \"Describe Jin Yong's life\"")
    p.add_argument("--method", default="rat", choices=sorted(METHODS), help="writing method (default rat)")
    p.add_argument("--kind", default="writing", choices=["writing", "plan", "qa"])
    p.add_argument("--out", help=OUT_HELP)
    p.add_argument("--notes", action="store_true", help=NOTES_HELP)
    p.add_argument("--draft-only", action="store_true", help="stop after the draft; continue with resume")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("resume", parents=common, help="continue an interrupted or failed run",
                       epilog="exit codes as for run")
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    p.add_argument("--out", help=OUT_HELP)
    p.add_argument("--notes", action="store_true", help=NOTES_HELP)
    p.add_argument("--draft", metavar="FILE",
                   help="continue with this edited draft (e.g. of a `run --draft-only`): one step per paragraph, "
                        "blank lines between; - reads standard input. It is kept as a version of the run, and "
                        "revision starts over from step 1")
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
    p = sub.add_parser("show", parents=common, help="print a stored run's article as Markdown, or save it",
                       epilog=f"exit codes: 0 shown; 1 no such run; 2 a bad --version, or a prefix several run ids "
                              f"share; {EXIT_UNFINISHED} the run has not finished (draft, interrupted, failed or "
                              "running): continue it with resume")
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    p.add_argument("--version", default="latest", metavar="model|latest|N",
                   help="which text: the model's own, the author's latest version (the default; the model's when "
                        "there is none), or version N (`versions RUN_ID` lists them)")
    p.add_argument("-o", "--out", help=OUT_HELP)
    p.add_argument("--format", choices=FORMATS, help="md (Markdown), docx (Word), pdf or html (one self-contained "
                   "page); default: by the --out file's name, else Markdown. Word and PDF need -o FILE")
    p.add_argument("--notes", action="store_true", help=NOTES_HELP)
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("versions", parents=common, help="list the author's versions of a stored run's article")
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_versions)
    p = sub.add_parser("redo", parents=common, help="do one step of a finished rat or rat-step run again, as the "
                       "Writer's step buttons do; prints the article's new version",
                       epilog="exit codes: 0 done (a new version); 1 the redo failed or clashes with a hand edit; "
                              "2 a bad flag")
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    where = p.add_mutually_exclusive_group()  # neither: --instruction alone revises the whole article
    where.add_argument("--step", type=int, metavar="K", help="the step to do again (1 is the first)")
    where.add_argument("--add-after", type=int, metavar="K", help="add a section after step K (0: before the "
                       "first) from the one line of --instruction: its own query, pages and revision")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--query", help="search again with this query (default: regenerate the revision from the "
                                     "same passages)")
    how.add_argument("--exclude", metavar="URL", help="leave this page out of the step and revise it again")
    p.add_argument("--instruction", metavar="TEXT", help="revise the step as this one line asks (\"shorter, and "
                   "name the release date\"), beside the step's passages; with --query, beside the pages of a new "
                   "search instead; alone (no --step), every step of the whole article, each beside its passages")
    p.add_argument("--out", help=OUT_HELP)
    p.set_defaults(func=cmd_redo)
    p = sub.add_parser("undo", parents=common, help="undo the revision of a step of a finished run (the step's "
                       "paragraph goes back to its draft; your other edits stay); prints the new version",
                       epilog="exit codes: 0 done (a new version, or none when nothing changed); 1 it clashes with "
                              "a hand edit, or the run's steps cannot be undone; 2 a bad flag")
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    p.add_argument("--step", type=int, required=True, action="append", metavar="K",
                   help="the step whose revision to undo (repeat for several)")
    p.add_argument("--put-back", action="store_true", help="use the step's revision again (undo the undo)")
    p.add_argument("--out", help=OUT_HELP)
    p.set_defaults(func=cmd_undo)


def cmd_ui(args, app) -> int:
    from annotation.accounts import Accounts
    from ui.app import launch

    s = app.settings
    accounts = Accounts(app.store)
    if s.host not in ("127.0.0.1", "localhost", "::1") and not s.auth and not accounts.any():
        print(f"warning: listening on {s.host} with no login: anyone who can reach this machine "
              "can run the model on your key and read your runs. Add accounts (python app.py annotators add "
              "NAME --admin) or --auth USER:PASSWORD.", file=sys.stderr)
    if s.auth and accounts.any():
        print("note: accounts exist, so visitors log in with an account; --auth is not used.", file=sys.stderr)
    launch(app.settings, app.store, app.clients, app.runner, app.rooms, accounts)
    return 0


def cmd_run(args, app) -> int:
    from common.types import Task

    task = Task(args.task, kind=args.kind)
    from core.budget import cost_before

    estimate = cost_before(app.settings)
    if estimate:
        print(estimate, file=sys.stderr)
    return _follow_to_the_end(app.runner.start(args.method, task, draft_only=args.draft_only), args, app)


def cmd_resume(args, app) -> int:
    """Continue the run; with ``--draft``, with the author's edited draft, first kept as a
    ``draft`` version of the run (as the Writer's Continue keeps it). A run stopped part-way
    through a redo (``redo`` interrupted, failed or at its budget) finishes it, and its new text
    is kept and printed as ``redo`` keeps and prints it: a version merged with the author's edits."""
    from common.errors import RatStudioError
    from core.text.prompts import join_steps
    from data.versions import Versions

    providers = app.settings.search.providers
    app.runner.check_resume(args.run_id, providers=providers)  # refused before the draft is kept as a version
    draft = None
    if getattr(args, "draft", None) is not None:
        draft = read_draft(args.draft)
        Versions(app.store).add(args.run_id, join_steps(draft), action="draft")
    pending = app.authoring.pending_redo(args.run_id)
    events = app.runner.resume(args.run_id, draft=draft, providers=providers,
                               budget_tokens=getattr(args, "budget_tokens", None))  # a new one only when given
    if pending is None:
        return _follow_to_the_end(events, args, app)
    code = _follow_to_the_end(events, args, app, article=False)  # the article shown is the version's
    if code != 0:
        return code
    version = app.authoring.redone(args.run_id, pending.action)
    if version is None:
        raise RatStudioError(_not_done(app, args.run_id, f"The redo of step {pending.i}", "finished"))
    return _print_version(args, app, version, _redone_what(pending.i, pending.action))


def read_draft(name: str) -> list[str]:
    """The steps of the draft in the file ``name`` (standard input for "-"): one per paragraph,
    split on blank lines as the Writer's editor splits them. Raises ConfigError (naming --draft)
    when it cannot be read or holds no step."""
    from common.errors import ConfigError
    from core.text.prompts import split_steps

    where = "standard input" if name == "-" else name
    try:
        text = sys.stdin.read() if name == "-" else Path(name).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"--draft {name}: cannot read {where} ({why}): give a UTF-8 text file with the "
                          "edited draft, one step per paragraph, or - for standard input.") from exc
    steps = split_steps(text)
    if not steps:
        raise ConfigError(f"--draft {name}: {where} holds no step: write the draft's steps in it, one per "
                          "paragraph with blank lines between.")
    return steps


def _follow_to_the_end(events, args, app, *, article: bool = True) -> int:
    """Follow a run; on Ctrl-C, say how to go on (the runner stores the run as interrupted).
    ``article``: write the model's article at the end (False: the caller writes a version's)."""
    seen: dict = {}
    try:
        return asyncio.run(_follow(events, args, app, seen, article=article))
    except KeyboardInterrupt:
        run_id = seen.get("run_id")
        if run_id:
            print(f"interrupted: {again(app, run_id)}", file=sys.stderr)
        else:
            print("interrupted before the run started", file=sys.stderr)
        return 130


def again(app, run_id: str) -> str:
    """How to go on with a stopped run: resume it when its method can, else run it again."""
    from common.types import RunStatus
    from core.budget import suggested

    run = app.store.get_run(run_id)
    if run.status == RunStatus.BUDGET:
        limit = run.settings.get("budget_tokens") or 0
        more = f" --budget-tokens {suggested(limit, run.prompt_tokens + run.completion_tokens)}"
        if resumable(run):
            return f"continue with: python app.py resume {run_id}{more}"
        return f"{run.method} cannot resume; run it again: python app.py run {json.dumps(run.task)} " \
               f"--method {run.method}{more}"
    if resumable(run):
        return f"continue with: python app.py resume {run_id}"
    return f"{run.method} cannot resume; run it again: python app.py run {json.dumps(run.task)} --method {run.method}"


def resumable(run) -> bool:
    """Whether the method of ``run`` (a ``data.store.RunRow``) can continue a stopped run."""
    from core.methods import METHODS

    info = METHODS.get(run.method)
    return info is not None and info.resumable


async def _follow(events, args, app, seen: dict | None = None, *, article: bool = True) -> int:
    from common.events import Failed, Final, LLMCalled, RunStarted
    from common.types import RunStatus
    from data.versions import MODEL
    from ui.cli.progress import progress_line, tokens_line

    run_id, final, failed = None, None, None
    spent, budget = 0, None
    try:
        async for event in events:
            if isinstance(event, RunStarted):
                run_id, budget = event.run_id, event.budget_tokens
                run = app.store.get_run(run_id)
                spent = run.prompt_tokens + run.completion_tokens  # a resumed run's earlier stretches
                if seen is not None:
                    seen["run_id"] = run_id
            elif isinstance(event, Final):
                final = event
            elif isinstance(event, Failed):
                failed = event
            line = progress_line(event)
            if line:
                print(line, file=sys.stderr, flush=True)
            if isinstance(event, LLMCalled):
                spent += event.prompt_tokens + event.completion_tokens
                if budget is not None:
                    print(tokens_line(spent, budget), file=sys.stderr, flush=True)
    finally:
        if run_id:
            print(f"run id: {run_id}", file=sys.stderr)
            cost = cost_after(app, run_id)
            if cost:
                print(cost, file=sys.stderr)
    if failed and app.store.get_run(run_id).status == RunStatus.BUDGET:
        run = app.store.get_run(run_id)
        print(f"budget: spent {run.prompt_tokens + run.completion_tokens:,} of "
              f"{run.settings.get('budget_tokens') or 0:,} tokens; {again(app, run_id)}", file=sys.stderr)
        return EXIT_BUDGET
    if failed:
        print(f"error: {failed.error}", file=sys.stderr)
        print(f"what was done is kept; {again(app, run_id)}" if failed.resumable else
              f"to try again: {again(app, run_id)}", file=sys.stderr)
        return 1
    if final is None:  # draft only
        print(f"draft stored; continue with: python app.py resume {run_id}", file=sys.stderr)
        return 0
    if not article:
        return 0
    shown = app.authoring.article(run_id, MODEL)  # the model's text, as `show --version model` reads it
    write_article(args.out, shown, notes=getattr(args, "notes", False))
    if shown.unsourced:
        print(f"warning: unsourced: nothing in this text was checked against a source: {shown.unsourced}.",
              file=sys.stderr)
        return EXIT_UNSOURCED
    return 0


def cost_after(app, run_id: str) -> str:
    """The line said after a run when --prices is given: its tokens and what they cost, else ""."""
    from core.budget import dollars, run_cost

    if not app.settings.prices:
        return ""
    run = app.store.get_run(run_id)
    cost = run_cost(app.settings.prices, run.tokens_by_role, run.settings)
    tokens = f"{run.prompt_tokens + run.completion_tokens:,} tokens"
    return f"cost: {dollars(cost)} ({tokens})" if cost is not None else \
        f"cost: unknown ({tokens}; --prices has no price for a model of this run)"


def write_article(out: str | None, article, *, notes: bool = False, fmt: str | None = None) -> None:
    """The article (a ``core.article.Article``) on standard output, or saved to ``out``, in ``fmt``
    (``FORMATS``; None: the one ``out``'s name ends with, ``SUFFIXES``, else Markdown); with the run
    notes as an appendix when ``notes``. Raises ConfigError for Word or PDF with no ``out`` (a
    binary file: -o names it) and when the file cannot be written, PdfFontMissing
    (``core.article.pdf``) for a PDF that no font here can draw."""
    from common.errors import ConfigError

    fmt = fmt or (SUFFIXES.get(Path(out).suffix.lower(), "md") if out else "md")
    if not out:
        if fmt in ("docx", "pdf"):
            raise ConfigError(f"--format {fmt} writes a file, not standard output: name it with -o, e.g. "
                              f"-o article.{fmt} (Markdown and HTML are printed without -o).")
        print(_exported(article, fmt, notes))
        return
    path = Path(out).expanduser()
    data = _exported(article, fmt, notes)
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot write the article to {out}: {exc.strerror or exc}. Choose a file in a folder "
                          "that exists and that you can write to.") from exc
    print(f"article written to {out}", file=sys.stderr)


def _exported(article, fmt: str, notes: bool) -> str | bytes:
    """``article`` in ``fmt`` (``FORMATS``): the text of Markdown and HTML, the bytes of Word and PDF.
    Raises PdfFontMissing for a PDF no font here can draw."""
    if fmt == "docx":
        from core.article.docx import to_docx

        return to_docx(article, notes=notes)
    if fmt == "pdf":
        from core.article.pdf import to_pdf

        return to_pdf(article, notes=notes)
    if fmt == "html":
        from core.article.html import to_html

        return to_html(article, notes=notes)
    from core.article.markdown import to_markdown

    return to_markdown(article, notes=notes)


def cmd_fetch(args, app) -> int:
    async def go():
        fetcher = app.clients.fetcher(metadata=True)
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
    from core.budget import run_cost

    runs = app.store.list_runs(limit=args.limit)
    if args.json:
        prices = app.settings.prices  # with --prices, each run's cost in dollars (None: a model has no price)
        rows = [r.to_dict() | ({"cost": run_cost(prices, r.tokens_by_role, r.settings)} if prices else {})
                for r in runs]
        print(json.dumps(rows, ensure_ascii=False, indent=2, default=str))
        return 0
    if not runs:
        print(f"No runs yet in {app.store.path}: python app.py run \"TASK\" writes one.", file=sys.stderr)
        return 0
    print(history_text(runs))
    return 0


def cmd_show(args, app) -> int:
    from core.runner import FINISHED

    run = app.store.get_run(args.run_id)
    if run.status not in FINISHED:
        print(unfinished(app, run), file=sys.stderr)
        return EXIT_UNFINISHED
    write_article(getattr(args, "out", None), article_of(app, run, getattr(args, "version", "latest")),
                  notes=getattr(args, "notes", False), fmt=getattr(args, "format", None))
    return 0


def unfinished(app, run) -> str:
    """One line on a run (a ``data.store.RunRow``) that has no article yet: where it stands and how
    to go on."""
    from common.types import RunStatus
    from data.store import describe_owner

    if run.status == RunStatus.RUNNING:
        where = f" in {describe_owner(run.owner, run.heartbeat)}" if run.owner else ""
        return f"Run {run.id} is still running{where}: it has no article yet; show it again once it has finished."
    error = " ".join(run.error.split())
    state = {RunStatus.DRAFT: "stopped after its draft", RunStatus.INTERRUPTED: "was interrupted",
             RunStatus.BUDGET: "stopped at its token budget",
             RunStatus.FAILED: f"failed ({error})" if error else "failed"}.get(run.status, f"is {run.status}")
    edited = " (add --draft FILE to continue with an edited draft)" \
        if run.status == RunStatus.DRAFT and resumable(run) else ""
    return f"Run {run.id} {state}: it has no article yet; {again(app, run.id)}{edited}."


def article_of(app, run, which: str):
    """The article (a ``core.article.Article``) of ``run`` (a ``data.store.RunRow``) at the version
    ``which`` names: "model" (the run's Final, as the model wrote it), "latest" (the author's
    newest version, else the model's) or a version's number. An unsourced run's article says so
    on every version. Raises ConfigError for a version the run does not have."""
    from common.errors import ConfigError, VersionNotFound
    from data.versions import LATEST, MODEL

    which = str(which).strip().lower()
    if which not in (MODEL, LATEST) and not (which.isascii() and which.isdigit()):
        raise ConfigError(f"--version {which!r} names no version: give model, latest or a version's number "
                          f"(`python app.py versions {run.id}` lists them).")
    try:
        return app.authoring.article(run.id, which)
    except VersionNotFound as exc:
        raise ConfigError(str(exc)) from exc  # a bad --version is a bad setting: exit 2


def cmd_redo(args, app) -> int:
    """Do ``--step`` again (regenerate, ``--query``, ``--exclude``, ``--instruction``), then keep the
    new text as a version merged with the author's edits (``core.authoring``), and print it."""
    from common.errors import ConfigError, RatStudioError

    instruction = getattr(args, "instruction", None)
    add_after = getattr(args, "add_after", None)
    if add_after is not None:
        return _add_section(args, app, add_after, instruction)
    if args.step is None:
        return _revise_all(args, app, instruction)
    flags = f"--step {args.step}" + (" --instruction" if instruction is not None else "")
    if instruction is not None and not instruction.strip():
        raise ConfigError("--instruction is empty: say in one line how the step should change "
                          "(`--instruction \"shorter, and name the release date\"`).")
    if instruction is not None and args.exclude:
        raise ConfigError("--instruction and --exclude do not go together: leave the page out first, then give "
                          "the instruction in a second redo.")
    app.authoring.check_redo(args.run_id, args.step)  # a clash with a hand edit: refused before anything runs
    action = ("instruct" if instruction is not None else "search" if args.query is not None
              else "exclude" if args.exclude else "regenerate")
    events = app.runner.redo(args.run_id, args.step, action=action, query=args.query or "",
                             exclude=[args.exclude] if args.exclude else (), instruction=instruction or "",
                             budget_tokens=getattr(args, "budget_tokens", None))
    _follow_redo(events, flags)
    version = app.authoring.redone(args.run_id, action)
    if version is None:
        raise RatStudioError(_not_done(app, args.run_id, f"Step {args.step}", "done again"))
    return _print_version(args, app, version, _redone_what(args.step, action))


def _revise_all(args, app, instruction: str | None) -> int:
    """``redo RUN --instruction TEXT`` with no step: every step revised again as the author's line
    asks, each beside its stored passages, kept as an ``instruct`` version; print it."""
    from common.errors import ConfigError, RatStudioError
    from common.events import EVERY

    if instruction is None or not instruction.strip():
        raise ConfigError("redo needs --step K, --add-after K, or --instruction TEXT alone for the whole article "
                          "(`--instruction \"more formal, and shorter\"`).")
    if args.query is not None or args.exclude:
        raise ConfigError("--query and --exclude work on one step: add --step K, or leave them out to revise the "
                          "whole article with --instruction.")
    app.authoring.check_redo(args.run_id, 1, every=True)  # a clash with a hand edit: refused before anything runs
    _follow_redo(app.runner.redo(args.run_id, 1, action=EVERY, instruction=instruction,
                                 budget_tokens=getattr(args, "budget_tokens", None)), "--instruction")
    version = app.authoring.redone(args.run_id, EVERY)
    if version is None:
        raise RatStudioError(_not_done(app, args.run_id, "The whole article", "revised"))
    return _print_version(args, app, version, "the whole article revised as instructed")


def _add_section(args, app, after: int, instruction: str | None) -> int:
    """``redo --add-after K --instruction TEXT``: a new step after step K, from the author's line
    (its own query, or ``--query``), kept as an ``add`` version; print it."""
    from common.errors import ConfigError, RatStudioError
    from common.events import ADD

    if instruction is None or not instruction.strip():
        raise ConfigError("--add-after needs --instruction: say in one line what the new section should cover "
                          "(`--add-after 2 --instruction \"how packaging changed\"`).")
    if args.exclude:
        raise ConfigError("--add-after and --exclude do not go together: a new section has no pages to leave out "
                          "yet.")
    flags = f"--add-after {after} --instruction"
    app.authoring.check_redo(args.run_id, after + 1)  # a clash with a hand edit: refused before anything runs
    _follow_redo(app.runner.redo(args.run_id, after + 1, action=ADD, query=args.query or "", instruction=instruction,
                                 budget_tokens=getattr(args, "budget_tokens", None)), flags)
    version = app.authoring.redone(args.run_id, ADD)
    if version is None:
        raise RatStudioError(_not_done(app, args.run_id, f"The section after step {after}", "added"))
    return _print_version(args, app, version, _redone_what(after + 1, ADD))


def _follow_redo(events, flags: str) -> None:
    """Print a redo's progress lines to stderr as it goes; a request refused before anything was
    stored names the ``flags`` it refuses."""
    from common.errors import TaskError

    async def follow() -> None:
        from ui.cli.progress import progress_line

        async for event in events:
            line = progress_line(event)
            if line:
                print(line, file=sys.stderr, flush=True)

    try:
        asyncio.run(follow())
    except TaskError as exc:
        raise TaskError(f"redo {flags}: {exc}") from exc


def _not_done(app, run_id: str, what: str, done: str) -> str:
    run = app.store.get_run(run_id)
    return (f"{what} of run {run_id} was not {done} ({run.status}{': ' + run.error if run.error else ''}): "
            f"its article is as it was. {again(app, run_id)}")


def cmd_undo(args, app) -> int:
    """Undo (or, with ``--put-back``, use again) the revision of each ``--step``, keeping the
    author's other edits; print the new version."""

    authoring = app.authoring
    latest = authoring.versions.latest(args.run_id)
    undone = set(latest.undone) if latest else set()
    undone = undone - set(args.step) if args.put_back else undone | set(args.step)
    version = authoring.choose(args.run_id, undone, latest.taken if latest else ())
    steps = ", ".join(str(k) for k in args.step)
    return _print_version(args, app, version, f"step {steps} {'put back' if args.put_back else 'undone'}")


_DONE = {"regenerate": "regenerated", "search": "searched again", "exclude": "revised without the page",
         "instruct": "revised as instructed"}


def _redone_what(i: int, action: str) -> str:
    """What a redo of step ``i`` did (``action``: its StepRedone's), as the version line says it."""
    from common.events import ADD

    return f"section added after step {i - 1}" if action == ADD else f"step {i} {_DONE.get(action, 'done again')}"


def _print_version(args, app, version, what: str) -> int:
    """Say which version an action made, and write its article (as ``show`` would)."""
    from core.text.segment import word_count
    print(f"run {args.run_id}: {what}: version {version.n} ({version.action}, {word_count(version.text):,} words); "
          f"`python app.py versions {args.run_id}` lists them", file=sys.stderr)
    write_article(getattr(args, "out", None), app.authoring.article(args.run_id, version.n))
    return 0


def cmd_versions(args, app) -> int:
    from core.text.segment import word_count

    run = app.store.get_run(args.run_id)
    versions = app.authoring.versions.list(run.id)
    if args.json:
        print(json.dumps([v.to_dict(words=word_count(v.text)) for v in versions], ensure_ascii=False, indent=2))
        return 0
    words = len(run.final_text.split())
    print(f"{'model':>5}  {(run.finished or run.updated)[:19]}  {'model':<8} {words:>6} words  the model's own text")
    for v in versions:
        restored = f"  restored from {v.restored_from}" if v.restored_from else \
            "  restored the model's text" if v.action == "restore" else ""
        asked = f"  instruction: {v.instruction}" if v.instruction else ""
        print(f"{v.n:>5}  {v.created[:19]}  {v.action:<8} {word_count(v.text):>6} words{restored}{asked}")
    if not versions:
        print(f"run {run.id} has no author versions: its text is the model's own", file=sys.stderr)
    return 0
