"""The annotators' accounts on the command line: ``annotators add/list/disable/invite/links/revoke``,
printing over ``annotation.accounts.Accounts``. As soon as one account exists, the app asks every
visitor to log in (an account's password, or an invite link)."""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from datetime import UTC, datetime, timedelta

from annotation.accounts import STUDY_LINK_DAYS, Account, Accounts
from annotation.errors import AccountError

#: Prolific's URL template: it fills in each participant's ids when it sends them to the study link.
PROLIFIC_TEMPLATE = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def add_commands(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``annotators`` with its actions; the common flags (``parents``) go on every one."""
    annotators = subparsers.add_parser("annotators", help="annotator accounts: add, list, disable, invite links")
    asub = annotators.add_subparsers(dest="annotators_command", metavar="ACTION", required=True)

    p = asub.add_parser("add", parents=parents, help="add an account (then every visitor must log in)",
                        description="Add an account. Without --password or --no-password the password is asked "
                                    "for twice (standard input must be a terminal).")
    p.add_argument("name", metavar="NAME", help="1 to 64 characters, no ':'")
    password = p.add_mutually_exclusive_group()
    password.add_argument("--password", metavar="P",
                          help="its password, at least 8 characters (other users of this machine may see the "
                               "command line: leave it out to be asked)")
    password.add_argument("--no-password", action="store_true",
                          help="no password: the account logs in by its invite link only (annotators invite NAME)")
    p.add_argument("--admin", action="store_true", help="an admin (runs the study) rather than an annotator")
    p.add_argument("--quota", type=int, metavar="N", help="votes to cast, then the completion code is shown")
    p.add_argument("--completion-code", metavar="C",
                   help="the code shown once the quota is reached (default with --quota: a generated one)")
    p.set_defaults(func=cmd_add)

    p = asub.add_parser("list", parents=parents, help="every account: name, role, enabled or not, quota, study")
    p.set_defaults(func=cmd_list)

    p = asub.add_parser("disable", parents=parents,
                        help="disable an account: its sessions end, its invite links stop working (its votes stay)")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(func=cmd_disable)

    p = asub.add_parser("invite", parents=parents, help="print an invite link, for one account or for a study",
                        description="An invite link logs its holder in without a password: one for the account "
                                    "NAME, or, with --study, one for every participant of a crowd study (Prolific), "
                                    "who each get an account STUDY:PROLIFIC_PID on first use.")
    p.add_argument("name", metavar="NAME", nargs="?", help="the account the link logs in")
    p.add_argument("--study", metavar="STUDY", help="a study link instead (needs --quota and --completion-code)")
    p.add_argument("--quota", type=int, metavar="N", help="votes to cast before the completion code is shown")
    p.add_argument("--completion-code", metavar="C", help="the code the crowd platform gave for the study")
    p.add_argument("--expires", metavar="TIME",
                   help=f"the link ends after TIME: 30m, 12h, 7d, 2w, or never (default: a study link after "
                        f"{STUDY_LINK_DAYS}d, an account's never)")
    p.set_defaults(func=cmd_invite)

    p = asub.add_parser("links", parents=parents,
                        help="every invite link: whom it is for, when it ends, the accounts and sessions it opened")
    p.set_defaults(func=cmd_links)

    p = asub.add_parser("revoke", parents=parents, help="stop invite links: one (TOKEN or the link), an account's "
                                                        "(NAME) or a study's (--study S)",
                        description="Stop invite links from logging anyone in (sessions they opened stay: "
                                    "`annotators disable NAME` ends an account's).")
    p.add_argument("link", metavar="TOKEN|LINK|NAME", nargs="?", help="a link or its token, or an account's name")
    p.add_argument("--study", metavar="STUDY", help="every link of this study")
    p.set_defaults(func=cmd_revoke)


def cmd_add(args, app) -> int:
    password = None if args.no_password else args.password
    if password is None and not args.no_password:
        password = ask_password(args.name)
    account = Accounts(app.store).add(args.name, password, role="admin" if args.admin else "annotator",
                                      quota=args.quota, completion_code=args.completion_code)
    how = "logs in by invite link only: annotators invite NAME" if password is None else "logs in with a password"
    print(f"Added the {account.role} {account.name!r} ({how})"
          + (f"; completion code {account.completion_code} after {account.quota} votes" if account.quota else "")
          + ".")
    return 0


def ask_password(name: str) -> str:
    """The password, typed twice at the terminal. Raises AccountError when standard input is not
    a terminal (naming --password) or the two differ."""
    if not sys.stdin.isatty():
        raise AccountError("No password given and no terminal to ask for one: pass --password P, or --no-password "
                           "for an account that logs in by invite link only.")
    first = getpass.getpass(f"Password for {name}: ")
    if getpass.getpass("The same again: ") != first:
        raise AccountError("The two passwords differ: run the command again.")
    return first


def cmd_list(args, app) -> int:
    accounts = Accounts(app.store).list()
    if not accounts:
        print("No accounts yet (anyone can open the app): python app.py annotators add NAME.")
        return 0
    print(format_accounts(accounts))
    return 0


def format_accounts(accounts: list[Account]) -> str:
    """A header and one aligned row per account (never a hash)."""
    table = [("name", "role", "state", "quota", "study")] + [
        (a.name, a.role, "disabled" if a.disabled else "enabled", str(a.quota) if a.quota is not None else "-",
         a.study or "-") for a in accounts]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table)


def cmd_disable(args, app) -> int:
    Accounts(app.store).disable(args.name)
    print(f"Disabled {args.name!r}: its sessions ended and it can no longer log in; its votes stay.")
    return 0


_DURATION = re.compile(r"(\d{1,6})\s*([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def duration(text: str) -> timedelta | None:
    """``--expires``' TIME: "30m", "12h", "7d", "2w" (None for "never"). Raises AccountError
    naming the flag for anything else."""
    text = text.strip().lower()
    if text == "never":
        return None
    m = _DURATION.fullmatch(text)
    if m is None or int(m.group(1)) < 1:
        raise AccountError(f"--expires takes a time such as 30m, 12h, 7d or 2w, or never; not {text!r}.")
    return timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def cmd_invite(args, app) -> int:
    ends = {} if args.expires is None else {"expires": duration(args.expires)}
    token = Accounts(app.store).invite(args.name, study=args.study, quota=args.quota,
                                       completion_code=args.completion_code, **ends)
    link = f"http://{app.settings.host}:{app.settings.port}/invite/{token}"
    if args.study:
        print(link + PROLIFIC_TEMPLATE)
        print(f"Keep this link secret (give it to Prolific as the study URL): whoever opens it joins study "
              f"{args.study!r} with an account of their own.")
    else:
        print(link)
        print(f"Keep this link secret: whoever opens it is logged in as {args.name!r}.")
    return 0


def cmd_links(args, app) -> int:
    links = Accounts(app.store).links()
    if not links:
        print("No invite links yet: python app.py annotators invite NAME (or --study STUDY).")
        return 0
    now = datetime.now(UTC)
    table = [("id", "for", "made", "ends", "state", "accounts", "sessions")]
    for c in links:
        i = c.invite
        ended = i.expires is not None and datetime.fromisoformat(i.expires) <= now
        table.append((str(i.id), f"study {i.study}" if i.study else i.account or "-", i.created[:16].replace("T", " "),
                      i.expires[:16].replace("T", " ") if i.expires else "never",
                      "revoked" if i.disabled else "expired" if ended else "open", str(c.accounts), str(c.sessions)))
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    print("\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table))
    return 0


def cmd_revoke(args, app) -> int:
    accounts = Accounts(app.store)
    if args.study is not None or (args.link and accounts.get(args.link) is not None):
        if args.study is not None and args.link:
            raise AccountError("Give a link, an account's name or --study, not two of them.")
        n = accounts.revoke_links(name=None if args.study else args.link, study=args.study)
        whose = f"study {args.study!r}" if args.study else repr(args.link)
        print(f"Revoked {n} invite link{'s' if n != 1 else ''} of {whose}: they log nobody in now "
              "(sessions they opened stay; `annotators disable NAME` ends an account's).")
        return 0
    if not args.link:
        raise AccountError("Name what to revoke: a link or its token, an account's name, or --study STUDY.")
    token = args.link.rpartition("/invite/")[2].partition("?")[0]
    accounts.revoke(token)
    print("Revoked the invite link: it logs nobody in now (sessions it opened stay).")
    return 0
