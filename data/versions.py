"""The author's versions of a run's article: the only SQL of the ``versions`` table (schema in
migration ``m011_versions``).

Every author action on a run's article is a new version, numbered 1, 2, 3... per run, with the
time: an edit of the text (``edit``), an undo of step revisions (``undo``), a refused revision
taken (``take``), a continue with an edited draft (``draft``), an old version restored
(``restore``). A version holds the text as the author left it and the steps undone and taken
and its ``attribution``: each citation of the text bound to the page and passage it names, as
JSON (``core.article.attribution.Attribution``, made by ``core.authoring``), so a version reads
the same forever whatever the run does later (versions stored before it have none: their
citations are derived from the run's events). The model's own text is not a version: it stays
the run's first Final event (``MODEL``). A ``draft``
version holds the draft steps the author continued with (joined by blank lines): it is the
run's history, not its article, so :meth:`Versions.latest` passes over it (the article is the
model's text the revision made of that draft, until the author changes it).

A version's ``undone`` and ``taken`` are read in the run's numbering now: a section the author
added (a StepRedone ``ADD``) after the version was made moves the steps from its place on one
down, in the version as in the run's events (``common.events.renumbered``). A version keeps how
many sections had been added when it was made (``steps_added``, m026), so it reads the same
whatever is added later; one made before m026 is placed among the additions by its time.

Versions are append-only, in the schema itself: nothing here updates or deletes one, and the
database refuses it from anyone else. Saving what the latest version already holds adds nothing
(an autosave that fires twice leaves one version).

    versions = Versions(store)
    v = versions.add(run_id, text, undone=[2], action="undo")      # VersionRow(n=1, ...)
    versions.restore(run_id, 1)                                      # a new version, restored_from=1
    versions.list(run_id); versions.latest(run_id); versions.get(run_id, 2)
    versions.find(run_id, "latest")   # "model" | "latest" | N: a VersionRow, or None for the model's text
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from common.errors import RunNotFound, StoreError, VersionNotFound
from common.events import ADD
from data.schema import VERSION_ACTIONS
from data.store import Store, now, write_transaction

ACTIONS = VERSION_ACTIONS  # edit, undo, take, draft, restore; regenerate, search, exclude, instruct (a step done
#                           again); add (a section the author added)
INSTRUCTED = ("instruct", "add")  # whose version keeps the author's instruction (add: the new section's line)
MODEL, LATEST = "model", "latest"  # the two versions named by a word (see Versions.find)


@dataclass(frozen=True)
class VersionRow:
    """One stored version: the ``n``-th of run ``run_id``, its ``text``, the steps whose revision
    is ``undone`` and whose refused revision is ``taken`` (sorted step numbers), what made it
    (``action``), the version it restored (``restored_from``; None for any other action, and for
    a restore of the model's own text), when (``created``, ISO time), its ``attribution``
    (JSON; None for a ``draft`` version and for one stored before attributions were) and, for an
    ``instruct`` version, the author's ``instruction`` the step was revised with, for an ``add``
    version the line the added section was written from (None otherwise)."""

    id: int
    run_id: str
    n: int
    text: str
    undone: tuple[int, ...] = ()
    taken: tuple[int, ...] = ()
    action: str = "edit"
    restored_from: int | None = None
    created: str = ""
    attribution: str | None = None
    instruction: str | None = None

    def to_dict(self, *, words: int) -> dict:
        """The row as JSON-friendly values (``versions --json``), with its word count ``words``
        (counted by the caller, in the text's script: ``core.text.segment.word_count``)."""
        return {"n": self.n, "created": self.created, "action": self.action, "restored_from": self.restored_from,
                "words": words, "undone": list(self.undone), "taken": list(self.taken),
                "instruction": self.instruction, "text": self.text}


class Versions:
    """The versions of runs' articles in ``store``'s file (each call uses the calling thread's
    connection, as ``Store`` does)."""

    def __init__(self, store: Store):
        self.store = store

    def add(self, run_id: str, text: str, *, undone: Iterable[int] = (), taken: Iterable[int] = (),
            action: str = "edit", restored_from: int | None = None, attribution: str | None = None,
            instruction: str | None = None) -> VersionRow:
        """Store the article of run ``run_id`` as the author left it, as its next version; returns
        it. When the latest version holds the same text, undone and taken steps and attribution,
        nothing is added and the latest is returned. ``instruction``: what the author asked of an
        ``instruct`` version. Raises RunNotFound, StoreError for an unknown action, an instruction with
        another action or a ``restored_from`` that is not an earlier version restored, or when SQLite
        refuses the write."""
        if action not in ACTIONS:
            raise StoreError(f"Unknown version action {action!r}: use one of {', '.join(ACTIONS)}.")
        if restored_from is not None and action != "restore":
            raise StoreError(f"A {action!r} version restores nothing: pass restored_from only with action='restore'.")
        if instruction is not None and action not in INSTRUCTED:
            raise StoreError(f"A {action!r} version follows no instruction: pass instruction only with "
                             f"action {' or '.join(repr(a) for a in INSTRUCTED)}.")
        undone, taken = _steps(undone), _steps(taken)
        with write_transaction(self.store.db, f"store a version of run {run_id}") as conn:
            if conn.execute("select 1 from runs where id = ?", [run_id]).fetchone() is None:
                raise _no_run(self.store, run_id)
            adds = _adds(conn, run_id)
            latest = _newest(conn, run_id, adds)
            if latest is not None and (latest.text, latest.undone, latest.taken, latest.attribution) == \
                    (text, undone, taken, attribution):
                return latest
            n = latest.n + 1 if latest else 1
            if restored_from is not None and not 1 <= restored_from < n:
                raise StoreError(f"Run {run_id} has no version {restored_from} to restore: {_range(n - 1)}.")
            stamp = now()
            cur = conn.execute(
                "insert into versions (run_id, n, text, undone, taken, action, restored_from, created, attribution, "
                "instruction, steps_added) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, n, text, json.dumps(undone), json.dumps(taken), action, restored_from, stamp, attribution,
                 instruction, len(adds)],
            )
        return VersionRow(cur.lastrowid, run_id, n, text, undone, taken, action, restored_from, stamp, attribution,
                          instruction)

    def restore(self, run_id: str, n: int | str) -> VersionRow:
        """A new version that holds what version ``n`` held (its text, undone and taken steps and
        attribution: it reads as ``n`` read), with action 'restore' and restored_from=n (the
        model's own text is restored by ``core.authoring``, which attributes it). Nothing is added
        when the latest version holds it already (see :meth:`add`). Raises VersionNotFound,
        RunNotFound."""
        old = self.get(run_id, n)
        return self.add(run_id, old.text, undone=old.undone, taken=old.taken, action="restore", restored_from=old.n,
                        attribution=old.attribution)

    def list(self, run_id: str) -> list[VersionRow]:
        """Every version of the run, oldest first ([] for none, and for an unknown run)."""
        rows = self.store.db.execute(f"select {_COLUMNS} from versions where run_id = ? order by n", [run_id])
        rows = rows.fetchall()
        adds = _adds(self.store.db, run_id) if rows else []
        return [_row(r, adds) for r in rows]

    def latest(self, run_id: str) -> VersionRow | None:
        """The run's newest version of its article (a ``draft`` version is not one); None when the
        author has saved none (its text is the model's)."""
        row = self.store.db.execute(f"select {_COLUMNS} from versions where run_id = ? and action != 'draft' "
                                    "order by n desc limit 1", [run_id]).fetchone()
        return _row(row, _adds(self.store.db, run_id)) if row else None

    def get(self, run_id: str, n: int | str) -> VersionRow:
        """Version ``n`` of the run (a number, or its digits). Raises VersionNotFound, whose message
        says which versions the run has; RunNotFound for an unknown run."""
        number = _number(n)
        if number is not None:
            row = self.store.db.execute(f"select {_COLUMNS} from versions where run_id = ? and n = ?",
                                        [run_id, number]).fetchone()
            if row is not None:
                return _row(row, _adds(self.store.db, run_id))
        if self.store.db.execute("select 1 from runs where id = ?", [run_id]).fetchone() is None:
            raise _no_run(self.store, run_id)
        count = self.store.db.execute("select max(n) from versions where run_id = ?", [run_id]).fetchone()[0] or 0
        raise VersionNotFound(f"Run {run_id} has no version {n}: {_range(count)}.")

    def find(self, run_id: str, which: int | str) -> VersionRow | None:
        """The version a user names: MODEL ("model": None, the model's own text), LATEST ("latest":
        the newest version of the article, or None when there is none) or a number. Raises VersionNotFound for
        anything else, RunNotFound."""
        if which == MODEL:
            return None
        if which == LATEST:
            return self.latest(run_id)
        return self.get(run_id, which)


# -- inside ---------------------------------------------------------------------------------------
_COLUMNS = ("id, run_id, n, text, undone, taken, action, restored_from, created, attribution, instruction, "
            "steps_added")


@dataclass(frozen=True)
class _Add:
    """A section the author added to a run: at step ``at``, stored at time ``ts``."""

    at: int
    ts: str


def _adds(conn: sqlite3.Connection, run_id: str) -> list[_Add]:
    """The sections added to the run so far, in the order they were asked for."""
    rows = conn.execute("select payload, ts from events where run_id = ? and type = 'StepRedone' order by seq",
                        [run_id]).fetchall()
    asked = [(json.loads(payload), ts) for payload, ts in rows]
    return [_Add(int(p["i"]), ts) for p, ts in asked if p.get("action") == ADD]


def _newest(conn: sqlite3.Connection, run_id: str, adds: list[_Add]) -> VersionRow | None:
    """The run's newest version of any kind (the next number follows it)."""
    row = conn.execute(f"select {_COLUMNS} from versions where run_id = ? order by n desc limit 1",
                       [run_id]).fetchone()
    return _row(row, adds) if row else None


def _row(row: tuple, adds: list[_Add]) -> VersionRow:
    """A stored row as a VersionRow, its steps numbered as the run (whose added sections are
    ``adds``) numbers them now."""
    id_, run_id, n, text, undone, taken, action, restored_from, created, attribution, instruction, added = row
    if added is None:  # made before m026: before the sections added after it was made
        added = sum(1 for a in adds if a.ts <= created)
    return VersionRow(id_, run_id, n, text, _now(json.loads(undone), adds[added:]),
                      _now(json.loads(taken), adds[added:]), action, restored_from, created, attribution, instruction)


def _now(steps: Iterable[int], later: list[_Add]) -> tuple[int, ...]:
    """``steps`` as numbered once the sections ``later`` are added, in turn."""
    steps = _steps(steps)
    for add in later:
        steps = tuple(j + (j >= add.at) for j in steps)
    return steps


def _steps(steps: Iterable[int]) -> tuple[int, ...]:
    """Step numbers as stored: ints, each once, in order."""
    return tuple(sorted({int(i) for i in steps}))


def _number(n: int | str) -> int | None:
    if isinstance(n, bool):
        return None
    if isinstance(n, int):
        return n
    text = str(n).strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _range(count: int) -> str:
    """Which versions a run has (``count`` of them), and what to pick."""
    if count == 0:
        return "it has none (its text is the model's own); pick 'model' or 'latest'"
    have = "version 1" if count == 1 else f"versions 1-{count}"
    return f"it has {have}; pick one of them, or 'model' for the model's own text"


def _no_run(store: Store, run_id: str) -> RunNotFound:
    return RunNotFound(f"No run {run_id!r} in {store.path}. `python app.py history` lists the runs.")
