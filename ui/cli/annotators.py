"""The annotators' accounts on the command line: ``annotators add/list/disable/invite``, printing
over ``annotation.accounts.Accounts``. As soon as one account exists, the app asks every visitor
to log in (an account's password, or an invite link)."""

from __future__ import annotations

import argparse
import getpass
import sys

from annotation.accounts import Account, Accounts
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
    p.set_defaults(func=cmd_invite)


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


def cmd_invite(args, app) -> int:
    token = Accounts(app.store).invite(args.name, study=args.study, quota=args.quota,
                                       completion_code=args.completion_code)
    link = f"http://{app.settings.host}:{app.settings.port}/invite/{token}"
    if args.study:
        print(link + PROLIFIC_TEMPLATE)
        print(f"Keep this link secret (give it to Prolific as the study URL): whoever opens it joins study "
              f"{args.study!r} with an account of their own.")
    else:
        print(link)
        print(f"Keep this link secret: whoever opens it is logged in as {args.name!r}.")
    return 0
