"""``python app.py share RUN_ID``: a secret, read-only link to a run's article and its replay
(``core.sharing``), for anyone who holds it, without an account; ``--revoke`` closes the run's
links, ``--list`` lists them.

    python app.py share RUN_ID                  a new link to the author's latest version (now)
    python app.py share RUN_ID --version 2      ... to version 2 (model: the model's own text)
    python app.py share RUN_ID --revoke         every open link of the run answers 404 from now on
    python app.py share RUN_ID --list           the run's links: version, made, by whom, revoked
"""

from __future__ import annotations

import argparse
import sys
from urllib.parse import urlsplit

from common.errors import ConfigError, VersionNotFound

EPILOG = ("A link shows the version it was made for, for good (later edits reach readers once you share again), "
          "and its replay, to anyone who holds it, without a login, while the rest of the app still asks for one. "
          "Only a hash of its secret is stored: the link is printed once. exit codes: 0 done; 1 no such run; "
          "2 a bad flag; 4 the run has not finished (no article yet)")


def add_commands(sub: argparse._SubParsersAction, common: list[argparse.ArgumentParser]) -> None:
    """Add ``share`` (with ``common``, the flags every command takes)."""
    p = sub.add_parser("share", parents=common, help="print a secret read-only link to a run's article and its "
                       "replay (--revoke: close the run's links)", epilog=EPILOG)
    p.add_argument("run_id", help="the run's id, or a unique prefix of it (at least 4 characters)")
    p.add_argument("--version", metavar="model|latest|N",
                   help="which text the link shows: the author's latest version now (the default; the model's "
                        "text when there is none), the model's own, or version N (`versions RUN_ID` lists them); "
                        "with --revoke, only the links to that version")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--revoke", action="store_true", help="revoke the run's open links (with --version: those "
                                                            "to that version): they answer 404 from now on")
    what.add_argument("--list", action="store_true", help="list the run's links (the link itself is never stored)")
    p.add_argument("--public-url", metavar="URL",
                   help="the address readers open the app at, e.g. https://rat.example.org (default: "
                        "http://HOST:PORT of --host and --port)")
    p.set_defaults(func=cmd_share)


def cmd_share(args, app) -> int:
    from core.runner import FINISHED
    from core.sharing import ANY, Sharing
    from ui.cli.runs import EXIT_UNFINISHED, unfinished

    sharing = Sharing(app.store, app.authoring)
    if args.list:
        if args.version is not None:
            raise ConfigError("--list lists every link of the run: leave --version out.")
        return _list(sharing, args.run_id)
    if args.revoke:
        closed = sharing.revoke(args.run_id, ANY if args.version is None else args.version)
        which = "" if args.version is None else f" to version {args.version}"
        if closed:
            print(f"revoked {closed} share link{'s' if closed != 1 else ''}{which} of run {args.run_id}: "
                  f"{'they answer' if closed != 1 else 'it answers'} 404 from now on", file=sys.stderr)
        else:
            print(f"run {args.run_id} has no open share link{which}: nothing to revoke", file=sys.stderr)
        return 0
    base = public_url(args, app.settings)
    run = app.store.get_run(args.run_id)
    if run.status not in FINISHED and not run.final_text:
        print(unfinished(app, run), file=sys.stderr)
        return EXIT_UNFINISHED
    try:
        link = sharing.share(args.run_id, args.version if args.version is not None else "latest")
    except VersionNotFound as exc:  # a bad --version is a bad flag: exit 2
        raise ConfigError(f"--version {args.version}: {exc} (`python app.py versions {args.run_id}` lists them)") \
            from exc
    shown = "the model's own text" if link.version is None else f"version {link.version}"
    print(base + link.path)
    print(f"anyone with this link can read run {args.run_id} ({shown}) and watch its replay, without logging in; "
          f"close it with: python app.py share {args.run_id} --revoke", file=sys.stderr)
    return 0


def public_url(args, settings) -> str:
    """Where readers reach the app, without a trailing slash: ``--public-url``, else the server's
    own address (--host and --port; 127.0.0.1 for a server on every address). Raises ConfigError
    for a --public-url that is not an http(s) address."""
    given = getattr(args, "public_url", None)
    if given:
        parts = urlsplit(given.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--public-url {given!r} is not an http(s) address: give the one readers open the app "
                              "at, e.g. https://rat.example.org")
        return given.strip().rstrip("/")
    host = settings.host if settings.host not in ("0.0.0.0", "", "::") else "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def _list(sharing, run_id: str) -> int:
    links = sharing.links(run_id)
    if not links:
        print(f"run {run_id} has no share link: python app.py share {run_id} makes one", file=sys.stderr)
        return 0
    for link in links:
        version = "model" if link.version is None else str(link.version)
        state = f"revoked {link.revoked[:19]}" if link.revoked else "open"
        by = f"  by {link.shared_by}" if link.shared_by else ""
        print(f"{link.id:>5}  version {version:<6} {link.created[:19]}  {state}{by}")
    return 0
