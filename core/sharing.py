"""Share links (issue 39, item 4): a secret, revocable, read-only link to one version of a run's
article and to its replay, for anyone who holds it, without an account. The service over
``data.shares``; ``ui.server`` serves what :meth:`Sharing.open` finds at ``/share/TOKEN``.

The version rule: a link shows the version it was made for, for good. ``share RUN`` (the Writer's
Share button: the version on screen) names the author's latest version *at that moment* (the
model's own text when there is none); later edits do not reach readers until the author shares
again. Versions are append-only, so a link reads the same as long as it opens. Its replay is the
run's events as they stood when that version was made: the model's run for the model's text
(before any step was done again), and every event up to the version's time for version N.

The token (``secrets.token_urlsafe(32)``: 256 random bits) is shown once and never stored: the
table keeps its sha256 hash, and a link is found by the hash of what a request names, so a guess
learns nothing from the time an answer takes. An unknown, malformed or revoked token opens
nothing (:meth:`Sharing.open` returns None; the server answers 404).

    sharing = Sharing(store, authoring)
    link = sharing.share(run_id)                 # ShareLink(token=..., run_id, version=None or N)
    sharing.open(link.token)                      # Shared: the version as it reads, and its replay's events
    sharing.revoke(run_id)                        # every open link of the run; version=2: that one's
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import NamedTuple

from common.errors import ConfigError, RunNotFound, TaskError, VersionNotFound
from common.events import Event
from core.authoring import Authoring, Shown, model_events
from data import shares as rows
from data.store import RunRow, Store
from data.versions import LATEST, MODEL

PATH = "/share/"  # a link's path before its token
_MAX_TOKEN = 200  # characters: a longer "token" is not one of ours, and is not hashed
ANY = rows.ANY  # revoke(version=ANY): the links of every version


class ShareLink(NamedTuple):
    """A link just made: its secret ``token`` (shown once: only its hash is kept), the run and the
    version it shows (None: the model's own text)."""

    token: str
    run_id: str
    version: int | None

    @property
    def path(self) -> str:
        """The link's path on the app's server, ``/share/TOKEN``."""
        return PATH + self.token


@dataclass(frozen=True)
class Shared:
    """What a link opens: the ``run``, the ``version`` as it reads (``shown``), and the events of its
    replay (``events``, with when each was stored: ``stamps``)."""

    run: RunRow
    version: int | None
    shown: Shown
    events: tuple[Event, ...]
    stamps: tuple[str, ...]


def which_version(given: str | int | None) -> str | int:
    """A version as a user names it ("model", "latest", N), checked. Raises ConfigError."""
    which = str(given if given is not None else LATEST).strip().lower()
    if which in (MODEL, LATEST):
        return which
    if which.isascii() and which.isdigit() and int(which) >= 1:
        return int(which)
    raise ConfigError(f"--version {given!r} names no version: give model, latest or a version's number.")


class Sharing:
    """The share links of ``store``'s runs; ``authoring``: the door versions are read through."""

    def __init__(self, store: Store, authoring: Authoring | None = None):
        self.store = store
        self.authoring = authoring or Authoring(store)

    def share(self, run_id: str, version: str | int = LATEST, *, by: str = "") -> ShareLink:
        """A new link to ``version`` of run ``run_id`` ("latest": the author's newest version now,
        the model's text when there is none; "model"; or N), made by ``by``. Raises RunNotFound,
        TaskError for a run with no article yet, VersionNotFound, ConfigError for a bad version."""
        run = self.store.get_run(run_id)
        if not run.final_text:
            raise TaskError(f"Run {run_id} has no article yet ({run.status}): share it once it has finished.")
        chosen = self.authoring.versions.find(run_id, which_version(version))
        n = chosen.n if chosen is not None else None
        token = secrets.token_urlsafe(32)
        rows.add_share(self.store, rows.token_hash(token), run_id, version=n, shared_by=by)
        return ShareLink(token, run_id, n)

    def revoke(self, run_id: str, version: str | int | object = ANY, *, token: str | None = None) -> int:
        """Revoke the open links of run ``run_id`` (of ``version`` only: "model" or N; the link of
        ``token`` only); returns how many were open. Raises RunNotFound, ConfigError."""
        self.store.get_run(run_id)
        if version is not ANY:
            which = which_version(version)  # type: ignore[arg-type]
            if which == LATEST:
                raise ConfigError("--version latest names no link: a link names the version it was made for "
                                  "(model or N; `share RUN --list` lists them), or leave --version out to revoke "
                                  "every link of the run.")
            version = None if which == MODEL else which
        hashed = rows.token_hash(token) if token else None
        return rows.revoke_shares(self.store, run_id, version=version, hashed=hashed)

    def links(self, run_id: str) -> list[rows.ShareRow]:
        """Every link of the run (revoked ones too), oldest first. Raises RunNotFound."""
        self.store.get_run(run_id)
        return rows.list_shares(self.store, run_id)

    def find(self, token: str) -> rows.ShareRow | None:
        """The open link ``token`` names; None for anything else (unknown, revoked, not a token)."""
        if not isinstance(token, str) or not token or len(token) > _MAX_TOKEN:
            return None
        link = rows.get_share(self.store, rows.token_hash(token))
        return link if link is not None and link.revoked is None else None

    def open(self, token: str) -> Shared | None:
        """What the open link ``token`` shows; None for an unknown, revoked or malformed token (and
        for a run or version that is no longer there). Raises StoreError when the store fails."""
        link = self.find(token)
        if link is None:
            return None
        try:
            run = self.store.get_run(link.run_id)
            timed = self.store.timed_events(link.run_id)
            every = [event for event, _ in timed]
            shown = self.authoring.shown(link.run_id, MODEL if link.version is None else link.version, events=every)
        except (RunNotFound, VersionNotFound):
            return None
        if link.version is None:
            kept = len(model_events(every))
        else:
            made = shown.version.created if shown.version is not None else ""
            kept = sum(1 for _, stamp in timed if not made or stamp <= made)
        return Shared(run, link.version, shown, tuple(every[:kept]), tuple(stamp for _, stamp in timed[:kept]))
