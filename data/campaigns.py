"""Campaign queries: a campaign's settings (append-only rows, the newest of a name holds now), and
what its battles and votes add up to (how many annotators each pair of outputs has, each
annotator's votes). The only SQL of campaigns lives here; ``annotation.campaigns`` is the service.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from common.errors import StoreError
from data.arena import _CHOICE_NOW
from data.store import Store, now, write_transaction

STATUSES = (OPEN, CLOSED) = ("open", "closed")


class CampaignRow(NamedTuple):
    """A campaign's settings as one row holds them (``created``: from when), with when the
    campaign was first made (``started``)."""

    id: int
    name: str
    task_set: str | None
    methods: tuple[str, ...]
    style: str
    overlap: int
    quota: int | None
    voters: tuple[str, ...]
    status: str
    changed_by: str
    created: str
    started: str
    criteria: tuple[str, ...] = ()  # what each vote also answers, A/B/tie per criterion (m024; empty: none)


_COLUMNS = "id, name, task_set, methods, style, overlap, quota, voters, status, changed_by, created, criteria"
_INSERT = f"insert into campaigns ({_COLUMNS.removeprefix('id, ')}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _row(r: Sequence[Any], started: str) -> CampaignRow:
    return CampaignRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], tuple(json.loads(r[7])), r[8],
                       r[9], r[10], started, tuple(json.loads(r[11])))


def add_row(store: Store, name: str, *, task_set: str | None, methods: Sequence[str], style: str, overlap: int,
            quota: int | None, voters: Sequence[str], status: str, changed_by: str, new: bool,
            criteria: Sequence[str] = ()) -> int:
    """Append a row of settings for campaign ``name``: its first (``new``) or a change. Returns
    the row's id. Raises StoreError when ``new`` and the name is taken, or not ``new`` and there
    is no such campaign, or the row breaks the schema's checks."""
    with write_transaction(store.db, "store the campaign") as conn:
        exists = conn.execute("select 1 from campaigns where name = ?", [name]).fetchone() is not None
        if new and exists:
            raise StoreError(f"A campaign {name!r} exists: pick another name, or change it with "
                             f"`python app.py campaign set {name} ...`.")
        if not new and not exists:
            raise StoreError(f"No campaign {name!r}: `python app.py campaign list` lists them.")
        cur = conn.execute(_INSERT, [name, *_settings(task_set, methods, style, overlap, quota, voters, status,
                                                      changed_by, now(), criteria)])
    return cur.lastrowid


def _settings(task_set: str | None, methods: Sequence[str], style: str, overlap: int, quota: int | None,
              voters: Sequence[str], status: str, changed_by: str, created: str, criteria: Sequence[str] = ()) -> tuple:
    """A row's columns after its name, as stored (the lists as JSON)."""
    return (task_set, json.dumps(list(methods)), style, overlap, quota, json.dumps(list(voters)), status, changed_by,
            created, json.dumps(list(criteria)))


def current(store: Store) -> list[CampaignRow]:
    """Every campaign as its newest row says, oldest campaign first. Raises StoreError."""
    rows = store.db.execute(
        f"select {_COLUMNS}, (select min(f.created) from campaigns f where f.name = c.name) from campaigns c "
        "where c.id = (select max(n.id) from campaigns n where n.name = c.name) "
        "order by (select min(f.id) from campaigns f where f.name = c.name)").fetchall()
    return [_row(r[:-1], r[-1]) for r in rows]


def history(store: Store, name: str) -> list[CampaignRow]:
    """Every row of campaign ``name``, oldest first (empty: no such campaign). Raises StoreError."""
    rows = store.db.execute(f"select {_COLUMNS} from campaigns where name = ? order by id", [name]).fetchall()
    return [_row(r, rows[0][10]) for r in rows]


def every_row(store: Store) -> list[CampaignRow]:
    """Every row of every campaign, in the order they were stored. Raises StoreError."""
    rows = store.db.execute(
        f"select {_COLUMNS}, (select min(f.created) from campaigns f where f.name = c.name) from campaigns c "
        "order by c.id").fetchall()
    return [_row(r[:-1], r[-1]) for r in rows]


class CampaignsImported(NamedTuple):
    """What ``import_rows`` wrote: rows added, rows already here (skipped)."""

    added: int
    present: int


def import_rows(store: Store, records: Sequence[dict]) -> CampaignsImported:
    """Append campaigns' rows written elsewhere (``dataset export``), each with its own
    ``created``. A campaign's rows are its history: where this database holds the start of the
    same history, only the rest is added (importing twice adds nothing). Each record has the
    columns of a row (``methods`` and ``voters`` as lists) and ``line`` (for messages). Raises
    StoreError, before anything is written, for a campaign here with another history."""
    by_name: dict[str, list[dict]] = {}
    for r in records:
        by_name.setdefault(r["name"], []).append(r)
    added = present = 0
    with write_transaction(store.db, "import the campaigns") as conn:
        new: list[tuple] = []
        for name, rows in by_name.items():
            here = [tuple(r) for r in conn.execute(
                f"select {_COLUMNS.removeprefix('id, name, ')} from campaigns where name = ? order by id", [name])]
            there = [_settings(r["task_set"], r["methods"], r["style"], r["overlap"], r["quota"], r["voters"],
                               r["status"], r["changed_by"], r["created"], r.get("criteria") or ()) for r in rows]
            shared = min(len(here), len(there))
            if here[:shared] != there[:shared]:
                differs = next(k for k in range(shared) if here[k] != there[k])
                raise StoreError(f"line {rows[differs].get('line', '?')}: a campaign {name!r} exists in {store.path} "
                                 "with another history (started "
                                 f"{here[0][-2]}): it is another campaign, or was changed in both places. Import "
                                 "into another database (--db), or leave its rows and votes out.")
            present += shared
            new += [(name, *row) for row in there[shared:]]
        for row in new:
            conn.execute(_INSERT, row)
            added += 1
    return CampaignsImported(added, present)


def coverage(store: Store, campaign: str, reserved_since: str | None = None) -> dict[frozenset[int], set[str]]:
    """Each pair of outputs shown in ``campaign`` -> the annotators who hold it: with a vote that
    counts now, or shown it at or after ``reserved_since`` and not voted yet (a pair on someone's
    screen is theirs for a while; None: votes only). Raises StoreError."""
    rows = store.db.execute(
        "select b.output_a, b.output_b, b.annotator from battles b left join votes v on v.battle_id = b.id "
        "where b.campaign = ? and b.output_a is not null and b.output_b is not null and "
        f"(v.id is null and ? is not null and b.created >= ? or v.id is not null and {_CHOICE_NOW} != 'void')",
        [campaign, reserved_since, reserved_since]).fetchall()
    held: dict[frozenset[int], set[str]] = {}
    for a, b, who in rows:
        held.setdefault(frozenset((a, b)), set()).add(who)
    return held


def votes_of(store: Store, campaign: str, annotator: str) -> int:
    """How many of ``annotator``'s votes in ``campaign`` count now. Raises StoreError."""
    return store.db.execute(
        f"select count(*) from votes v join battles b on b.id = v.battle_id where b.campaign = ? "
        f"and v.annotator = ? and {_CHOICE_NOW} != 'void'", [campaign, annotator]).fetchone()[0]


class AnnotatorCount(NamedTuple):
    """An annotator's votes in a campaign that count now, cast since a given time, and the newest's time."""

    annotator: str
    votes: int
    since: int
    last: str


def annotator_counts(store: Store, campaign: str, since: str, only: str | None = None) -> list[AnnotatorCount]:
    """One row per annotator with a vote that counts in ``campaign`` (only ``only``'s, when
    given), by name. Raises StoreError."""
    rows = store.db.execute(
        "select v.annotator, count(*), sum(case when v.created >= ? then 1 else 0 end), max(v.created) from votes v "
        f"join battles b on b.id = v.battle_id where b.campaign = ? and (? is null or v.annotator = ?) "
        f"and {_CHOICE_NOW} != 'void' group by v.annotator order by v.annotator",
        [since, campaign, only, only]).fetchall()
    return [AnnotatorCount(*r) for r in rows]
