"""Errors of the arena. Like every RatStudioError, the message is shown to the user as it is."""

from __future__ import annotations

from common.errors import RatStudioError


class ArenaError(RatStudioError):
    """Something in the arena, the leaderboard or the judge cannot be done as asked."""


class ImportFormatError(ArenaError):
    """A line of a JSONL file to import is not what ``votes import``/``outputs import`` reads.
    The message names the line and the fix; nothing of the file was imported."""


class NoPairLeft(ArenaError):
    """There is no pair of outputs left to show this annotator; the message says how to make more
    (for the command line: the Arena tab says its own words). ``judged_all``: the annotator has
    voted on every pair there is (none skipped is left either); else nothing can be paired yet."""

    def __init__(self, message: str, *, judged_all: bool = False):
        super().__init__(message)
        self.judged_all = judged_all


class AccountError(ArenaError):
    """An account, an invite or a password cannot be made or changed as asked (a bad name, a
    short password, a duplicate name, an unknown account); the message names the fix."""


class LoginRefused(ArenaError):
    """A login or an invite link was refused (wrong name or password, a disabled account, an
    invalid link, too many failed tries); the message is shown to the person as it is and tells
    no more than they may know (never whether a name exists)."""
