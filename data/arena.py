"""Arena queries: outputs of any system, battles shown to annotators, their votes, and the LLM
judge's votes. The only SQL of the arena, leaderboard and judge lives here.

Every write runs in its own ``begin immediate`` transaction, so many annotators voting at once
wait for each other (``busy_timeout`` is set by ``Store``) instead of failing half-way; an import
of outputs lands in one transaction, one of votes in batches (so votes are never blocked for
long). Votes, judge votes, battles and outputs are append-only: the schema refuses updates,
deletes and replacing inserts (migrations ``m002_arena`` and ``m005_arena_append_only``). A vote
is corrected by a new row in ``vote_corrections`` (who, why, the choice that counts now), itself
append-only (``m008_vote_corrections``); the leaderboard counts a vote's newest correction. A
vote's choices by criterion (``vote_criteria``) and its flagged sentences (``sentence_flags``) are
written with it and count while it counts (``m024_vote_criteria``).

Finished runs enter the arena through ``sync_run_outputs``, which copies their text (the
author's latest version, or the model's: ``--arena-text``) into ``outputs`` (a snapshot: the text
an annotator judged is the text stored with the battle; a newer version is a new output), so
imported outputs and runs are read through the same queries. The arena service has a run's text
stored as its article, with its [n] marks and sources (``annotation.outputs``, passed in as
``render``: data/ does not import core).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from common.errors import StoreError
from data import sql
from data.store import Store, now, write_and_commit, write_transaction

CHOICES = ("a", "b", "tie", "both_bad")
#: What an annotator may flag about an output with their vote (``votes.flag``, m014_vote_notes).
FLAGS = ("a_broken", "a_empty", "a_off_task", "b_broken", "b_empty", "b_off_task")
MAX_COMMENT = 1_000  # characters of an annotator's comment on a vote
VOID = "void"  # a correction's choice for a vote that should not count at all
#: A people's vote's choice as it counts now: its newest correction's, else the one cast.
_CHOICE_NOW = ("coalesce((select c.choice from vote_corrections c where c.vote_id = v.id "
               "order by c.id desc limit 1), v.choice)")
IMPORT_BATCH = 500  # imported votes written per transaction
JUDGE_CHOICES = ("a", "b", "tie")
#: What an annotator answers on each criterion of a campaign (``vote_criteria``, m024_vote_criteria).
CRITERION_CHOICES = ("a", "b", "tie")
MAX_CRITERION = 64  # characters of a criterion's name
#: What an annotator may mark a sentence of either side as (``sentence_flags``, m024_vote_criteria).
SENTENCE_FLAGS = ("unsupported", "wrong")
MAX_SENTENCE = 1_000  # characters of a flagged sentence as stored
MAX_SENTENCE_FLAGS = 50  # flagged sentences with one vote
SOURCES = ("people", "judge")


class VoteRow(NamedTuple):
    """A vote as the leaderboard reads it: people's (``votes`` joined to its battle) or the judge's."""

    id: int
    method_a: str
    method_b: str
    choice: str
    task_id: int


class OutputRow(NamedTuple):
    """An output the arena can pair (its text is read when it is shown)."""

    id: int
    task_id: int
    method: str


class OutputText(NamedTuple):
    """An output with its text and its task's prompt, for the judge."""

    id: int
    task_id: int
    method: str
    prompt: str
    text: str


@dataclass(frozen=True)
class BattleRow:
    """A battle with its task, both texts and its vote (``choice`` None before it).
    ``output_a``/``output_b`` are None for imported votes that came without texts."""

    id: int
    task_id: int
    output_a: int | None
    output_b: int | None
    method_a: str
    method_b: str
    annotator: str
    source: str
    created: str
    prompt: str
    kind: str
    text_a: str | None
    text_b: str | None
    choice: str | None
    campaign: str | None = None  # the campaign it was shown in (None: the open arena, or imported)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def task_for(conn: sqlite3.Connection, prompt: str, kind: str | None, task_set: str | None) -> int:
    """The id of the task (created if new), inside the caller's transaction. ``kind`` or
    ``task_set`` None (an imported line that does not say): the oldest task with this text and
    the given fields, whatever the others, so votes on a bundled set's prompt join that set."""
    row = conn.execute(
        "select id from tasks where prompt = ? and (? is null or kind = ?) and (? is null or task_set = ?) "
        "order by id limit 1", [prompt, kind, kind, task_set, task_set]
    ).fetchone()
    if row:
        return row[0]
    cur = conn.execute(
        "insert into tasks (prompt, kind, task_set, meta, created) values (?, ?, ?, '{}', ?)",
        [prompt, kind or "writing", task_set or "", now()],
    )
    return cur.lastrowid


def import_output_text(conn: sqlite3.Connection, task_id: int, method: str, text: str) -> tuple[int, bool]:
    """(output id, whether it was new) of an imported text, inside the caller's transaction."""
    key = digest(text)
    row = conn.execute(
        "select id from outputs where task_id = ? and method = ? and digest = ? and source = 'import'",
        [task_id, method, key],
    ).fetchone()
    if row:
        return row[0], False
    cur = conn.execute(
        "insert into outputs (task_id, method, text, digest, source, run_id, created) "
        "values (?, ?, ?, ?, 'import', null, ?)",
        [task_id, method, text, key, now()],
    )
    return cur.lastrowid, True


# -- outputs ----------------------------------------------------------------------------------


#: Which text of a finished run the arena shows (``--arena-text``): the author's latest version of
#: its article (the model's text when the author saved none), or the method's own text.
ARENA_TEXTS = (LATEST, MODEL) = ("latest", "model")


#: How a finished run's text is written into ``outputs`` (``sync_run_outputs``): called with the
#: run's id, the number of the author's version the text is (None: the model's own) and the text,
#: it returns what the arena stores. The article with its [n] marks and its sources, for a run
#: that has them (``annotation.outputs``: it needs core, which data/ may not import).
Render = Callable[[str, int | None, str], str]


def sync_run_outputs(store: Store, text: str = LATEST, render: Render | None = None) -> int:
    """Copy finished runs (status 'done', non-empty text) into ``outputs`` where their text is not
    there yet; returns how many outputs were added. ``text`` LATEST: a run's text is the author's
    latest version of its article (``data.versions``; a ``draft`` version is not one), else the
    model's; a new version adds a new output (the older ones stay, for the battles that showed
    them). MODEL: the method's own text only. ``render``: what is stored for a run's text (see
    ``Render``; None: the text as it is); a run's row keeps the digest of the text it was
    rendered from, so a version back to the text already shown adds nothing. Raises StoreError
    (and what ``render`` raises)."""
    _run_text(text)  # checks it
    version = ("(select max(n) from versions w where w.run_id = r.id and w.action != 'draft')"
               if text == LATEST else "null")
    wanted = (
        "select r.id as run_id, r.task_id, r.method, v.n as version, coalesce(v.text, r.final_text) as text "
        f"from runs r left join versions v on v.run_id = r.id and v.n = {version} "
        "where r.status = 'done' and trim(coalesce(r.final_text, '')) != ''"
    )
    # LATEST: a version that holds the text the run already shows (an undo undone) is nothing new;
    # an output stored as rendered is told by the digest of the text it was rendered from
    newest = "o.id = (select max(id) from outputs where run_id = w.run_id)"
    same = f"or {newest} and o.text = w.text" if text == LATEST else ""
    rows = store.db.execute(
        "select w.task_id, w.method, w.text, w.run_id, w.version, "
        f"(select o.digest from outputs o where o.run_id = w.run_id and {newest}) "
        f"from ({wanted}) w where trim(w.text) != '' and not exists (select 1 from outputs o "
        f"where o.run_id = w.run_id and (coalesce(o.version, 0) = coalesce(w.version, 0) {same}))"
    ).fetchall()
    new = []
    for task_id, method, run_text, run_id, version_n, shown_digest in rows:
        key = digest(run_text)
        if text == LATEST and shown_digest == key:
            continue
        shown = render(run_id, version_n, run_text) if render is not None else run_text
        new.append([task_id, method, shown, key, run_id, version_n])
    if not new:
        return 0  # the usual case: no write transaction for nothing
    added = 0
    with write_transaction(store.db, "add finished runs to the arena") as conn:
        stamp = now()
        for row in new:  # one already there (another thread's sync) is skipped by the schema
            added += conn.execute(
                "insert or ignore into outputs (task_id, method, text, digest, source, run_id, version, created) "
                "values (?, ?, ?, ?, 'run', ?, ?, ?)", [*row, stamp]).rowcount
    return added


def import_outputs(store: Store, records: Iterable[dict]) -> tuple[int, int]:
    """Add outputs of any system, all in one transaction: each record has ``prompt``, ``kind``,
    ``task_set``, ``method`` and ``text``. Returns (added, already present). Raises StoreError."""
    added = present = 0
    with write_transaction(store.db, "import the outputs") as conn:
        for r in records:
            task_id = task_for(conn, r["prompt"], r["kind"], r["task_set"])
            _, new = import_output_text(conn, task_id, r["method"], r["text"])
            added += new
            present += not new
    return added, present


def _run_text(text: str) -> str:
    """The SQL condition that keeps one output of each run: its newest (LATEST), or the model's."""
    if text not in ARENA_TEXTS:
        raise StoreError(f"Unknown arena text {text!r}: use one of {', '.join(ARENA_TEXTS)} (--arena-text).")
    if text == MODEL:
        return "(run_id is null or version is null)"
    return "(run_id is null or id in (select max(id) from outputs where run_id is not null group by run_id))"


def arena_outputs(store: Store, task_set: str | None = None, text: str = LATEST) -> list[OutputRow]:
    """Outputs of tasks that have outputs from at least two methods, oldest first; of a run, the
    one its ``text`` names (``sync_run_outputs``)."""
    shown = f"(select * from outputs where {_run_text(text)})"
    sql = (
        f"select id, task_id, method from {shown} s where task_id in "
        f"(select task_id from {shown} t group by task_id having count(distinct method) >= 2)"
    )
    args: list[Any] = []
    if task_set is not None:
        sql += " and task_id in (select id from tasks where task_set = ?)"
        args.append(task_set)
    return [OutputRow(*r) for r in store.db.execute(sql + " order by id", args).fetchall()]


def newest_output_id(store: Store) -> int:
    """The id of the newest output (0: none): outputs are append-only, so it names what is there."""
    return store.db.execute("select coalesce(max(id), 0) from outputs").fetchone()[0]


def output_count(store: Store) -> int:
    return store.db.execute("select count(*) from outputs").fetchone()[0]


def imported_outputs(store: Store, methods: Iterable[str] | None = None,
                     task_set: str | None = None) -> list[OutputText]:
    """For each task and method, its newest output that no run made (an imported one), by task and
    method; only ``methods`` and tasks of ``task_set`` when given."""
    rows = store.db.execute(
        "select o.id, o.task_id, o.method, t.prompt, o.text from outputs o join tasks t on t.id = o.task_id "
        "where o.id in (select max(id) from outputs where run_id is null group by task_id, method) "
        "and (? is null or t.task_set = ?) order by o.task_id, o.method", [task_set, task_set]
    ).fetchall()
    wanted = set(methods) if methods is not None else None
    return [OutputText(*r) for r in rows if wanted is None or r[2] in wanted]


def latest_outputs(store: Store, methods: Iterable[str] | None = None, text: str = LATEST) -> list[OutputText]:
    """For each task and method, its newest output (of a run, the one its ``text`` names), by task
    and method."""
    rows = store.db.execute(
        "select o.id, o.task_id, o.method, t.prompt, o.text from outputs o join tasks t on t.id = o.task_id "
        f"where o.id in (select max(id) from outputs where {_run_text(text)} group by task_id, method) "
        "order by o.task_id, o.method"
    ).fetchall()
    wanted = set(methods) if methods is not None else None
    return [OutputText(*r) for r in rows if wanted is None or r[2] in wanted]


def methods(store: Store) -> list[str]:
    """Every method that has an output or a vote, sorted."""
    rows = store.db.execute(
        "select method from outputs union select method_a from battles union select method_b from battles "
        "union select method_a from judge_votes union select method_b from judge_votes order by 1"
    ).fetchall()
    return [r[0] for r in rows]


def task_sets(store: Store) -> list[str]:
    return [r[0] for r in store.db.execute("select distinct task_set from tasks order by 1").fetchall()]


# -- battles and votes ------------------------------------------------------------------------


def seen_output_pairs(store: Store, annotator: str) -> set[frozenset[int]]:
    """The output pairs this annotator has been shown (voted on or not)."""
    rows = store.db.execute(
        "select output_a, output_b from battles where annotator = ? and output_a is not null", [annotator]
    ).fetchall()
    return {frozenset(r) for r in rows}


def unvoted_battles(store: Store, annotator: str, task_set: str | None = None,
                    campaign: str | None = None) -> list[int]:
    """The ids of the battles shown to ``annotator`` in the arena that have no vote (pairs they
    skipped, or the one on their screen), oldest first; of ``task_set``'s tasks when given; of
    ``campaign`` (None: of the open arena, no campaign). Raises StoreError."""
    sql = ("select b.id from battles b join tasks t on t.id = b.task_id where b.annotator = ? "
           "and b.source = 'arena' and b.output_a is not null and b.output_b is not null "
           "and b.campaign is not distinct from ? and not exists (select 1 from votes v where v.battle_id = b.id)")
    args: list[Any] = [annotator, campaign]
    if task_set is not None:
        sql += " and t.task_set = ?"
        args.append(task_set)
    return [r[0] for r in store.db.execute(sql + " order by b.id", args).fetchall()]


class CountedVote(NamedTuple):
    """One of an annotator's votes that counts now: its id, its battle's, and when it was cast."""

    id: int
    battle_id: int
    created: str


def counted_votes(store: Store, annotator: str) -> list[CountedVote]:
    """``annotator``'s people's votes that count now, oldest first: a vote whose newest correction
    is ``void`` (one they undid) is left out. Raises StoreError."""
    rows = store.db.execute(
        f"select v.id, v.battle_id, v.created from votes v where v.annotator = ? and {_CHOICE_NOW} != 'void' "
        "order by v.id", [annotator]).fetchall()
    return [CountedVote(*r) for r in rows]


class LastVote(NamedTuple):
    """An annotator's newest vote in the arena, and the choice that counts now (``void`` once undone)."""

    id: int
    battle_id: int
    choice: str
    created: str


def last_vote(store: Store, annotator: str) -> LastVote | None:
    """``annotator``'s newest vote on a battle shown in the arena (None: none yet). Raises StoreError."""
    row = store.db.execute(
        f"select v.id, v.battle_id, {_CHOICE_NOW}, v.created from votes v join battles b on b.id = v.battle_id "
        "where v.annotator = ? and b.source = 'arena' order by v.id desc limit 1", [annotator]).fetchone()
    return LastVote(*row) if row else None


class BattleCounts(NamedTuple):
    """How often each method pair and each output pair was shown to people, over the battles
    with id up to ``last_id`` (battles are append-only, so later ones can be added on top)."""

    by_methods: dict[frozenset[str], int]
    by_outputs: dict[frozenset[int], int]
    last_id: int


def battle_counts(store: Store, since: BattleCounts | None = None) -> BattleCounts:
    """How often each method pair and each output pair was shown to people (any annotator):
    ``since`` plus the battles recorded after it (a copy; ``since`` is left as it was)."""
    by_methods = dict(since.by_methods) if since else {}
    by_outputs = dict(since.by_outputs) if since else {}
    after = since.last_id if since else 0
    last = store.db.execute("select coalesce(max(id), 0) from battles").fetchone()[0]
    if last <= after:
        return BattleCounts(by_methods, by_outputs, after)
    for ma, mb, oa, ob, n in store.db.execute(
        "select method_a, method_b, output_a, output_b, count(*) from battles where id > ? and id <= ? "
        "group by 1, 2, 3, 4", [after, last]
    ).fetchall():
        key = frozenset((ma, mb))
        by_methods[key] = by_methods.get(key, 0) + n
        if oa is not None and ob is not None:
            okey = frozenset((oa, ob))
            by_outputs[okey] = by_outputs.get(okey, 0) + n
    return BattleCounts(by_methods, by_outputs, last)


def create_battle(store: Store, output_a: int, output_b: int, annotator: str, campaign: str | None = None) -> int:
    """Record that ``annotator`` is shown outputs A and B (A first), in ``campaign`` (None: the
    open arena). Raises StoreError."""
    with write_transaction(store.db, "start a battle", keys=()) as conn:  # (outputs are never changed)
        rows = conn.execute(
            "select id, task_id, method from outputs where id in (?, ?)", [output_a, output_b]
        ).fetchall()
        found = {r[0]: r for r in rows}
        if output_a not in found or output_b not in found:
            raise StoreError(f"Output {output_a} or {output_b} is not in {store.path}.")
        cur = write_and_commit(
            store.db,
            "insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, source, created, "
            "campaign) values (?, ?, ?, ?, ?, ?, 'arena', ?, ?)",
            [found[output_a][1], output_a, output_b, found[output_a][2], found[output_b][2], annotator, now(),
             campaign],
        )
    return cur.lastrowid


def get_battle(store: Store, battle_id: int) -> BattleRow:
    """The battle with its task prompt, both texts and its vote (``choice`` is None before it).
    Raises StoreError when there is no such battle."""
    battle = find_battle(store, battle_id)
    if battle is None:
        raise StoreError(f"No battle {battle_id} in {store.path}.")
    return battle


def find_battle(store: Store, battle_id: int) -> BattleRow | None:
    """``get_battle``'s battle, None when there is no such battle. Raises StoreError."""
    rows = list(
        store.db.query(
            "select b.*, t.prompt as prompt, t.kind as kind, oa.text as text_a, ob.text as text_b, "
            "v.choice as choice from battles b join tasks t on t.id = b.task_id "
            "left join outputs oa on oa.id = b.output_a left join outputs ob on ob.id = b.output_b "
            "left join votes v on v.battle_id = b.id where b.id = ?",
            [battle_id],
        )
    )
    return BattleRow(**rows[0]) if rows else None


#: Why a vote is refused, said alike by ``record_vote`` and by the arena service's checks before it.
NO_BATTLE = "No battle {battle_id}: press Next to get a new pair."
NOT_YOURS = "This pair was shown to another annotator: press Next to get your own."
VOTED_ALREADY = "You already voted on this pair: press Next for a new one."


def record_vote(store: Store, battle_id: int, annotator: str, choice: str, *, comment: str = "",
                flag: str | None = None, address: str | None = None, last: bool = False,
                criteria: Mapping[str, str] | None = None,
                sentences: Iterable[tuple[str, str, str]] | None = None) -> int:
    """Append the annotator's vote on a battle shown to them, with their optional ``comment`` (at
    most MAX_COMMENT characters; blank: none), ``flag`` (one of FLAGS, or None) and client
    ``address`` (counted by ``vote_times``), and its ``criteria`` (criterion's name -> one of
    CRITERION_CHOICES; ``vote_criteria``, in the same transaction: the vote lands with all of them
    or not at all) and flagged ``sentences`` ((side, sentence, kind) each: ``sentence_flags``,
    checked by ``sentence_flag_rows``, also in the transaction); returns the vote id. ``last``:
    inside a transaction of the caller's (``Store.exclusive``) that ends with this vote, commit it
    with the vote (``write_and_commit``). Raises ValueError for a choice not in CHOICES, a flag
    not in FLAGS, a comment over MAX_COMMENT, a bad criterion or criterion choice or a bad
    flagged sentence; StoreError when the battle is unknown, was shown to someone else, or
    already has a vote."""
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {CHOICES}, not {choice!r}")
    comment, flag = vote_note(comment, flag)
    criteria = criterion_choices(criteria)
    flagged = sentence_flag_rows(sentences)
    # One statement: the vote is inserted only on a battle shown to ``annotator`` (a battle's
    # annotator never changes), and a second vote on a battle is refused by the database itself
    # (votes.battle_id is unique: the one constraint this insert can break); why nothing was
    # inserted is read only then. (In a caller's transaction the database's refusal comes raw.)
    try:
        with write_transaction(store.db, "record the vote", keys=()):
            stamp = now()
            insert = ("insert into votes (battle_id, annotator, choice, created, comment, flag, address) "
                      "select id, annotator, ?, ?, ?, ?, ? from battles where id = ? and annotator = ?")
            args = [choice, stamp, comment, flag, address, battle_id, annotator]
            if not criteria and not flagged:
                cur = write_and_commit(store.db, insert, args, ends_joined=last)
                inserted = cur.rowcount
            else:  # the vote, then its criteria and flags (the last write, committed with them)
                cur = store.db.conn.execute(insert, args)
                inserted = cur.rowcount
                if inserted == 1:
                    vote_id = cur.lastrowid
                    writes = [_insert_rows(table, columns, [(*row, vote_id, stamp) for row in rows])
                              for table, columns, rows in (
                                  ("vote_criteria", "criterion, choice", list(criteria.items())),
                                  ("sentence_flags", "side, sentence, kind", flagged)) if rows]
                    for statement, params in writes[:-1]:
                        store.db.conn.execute(statement, params)
                    write_and_commit(store.db, *writes[-1], ends_joined=last)
                    cur = _Inserted(vote_id)
    except (StoreError, *sql.IntegrityError) as exc:
        refused = exc.__cause__ if isinstance(exc, StoreError) else exc
        if isinstance(refused, sql.IntegrityError):
            raise StoreError(VOTED_ALREADY) from exc
        raise
    if inserted != 1:
        row = store.db.execute("select annotator from battles where id = ?", [battle_id]).fetchone()
        raise StoreError(NO_BATTLE.format(battle_id=battle_id) if row is None else NOT_YOURS)
    return cur.lastrowid


def _insert_rows(table: str, columns: str, rows: list[tuple]) -> tuple[str, list]:
    """One insert of ``rows`` (each ``columns``, then vote_id and created) into ``table``, and its parameters."""
    one = "(" + ", ".join("?" * len(rows[0])) + ")"
    return (f"insert into {table} ({columns}, vote_id, created) values {', '.join([one] * len(rows))}",
            [x for row in rows for x in row])


class _Inserted(NamedTuple):
    """The vote's id where its insert's cursor is no longer the last one (``record_vote``)."""

    lastrowid: int


def criterion_choices(criteria: Mapping[str, str] | None) -> dict[str, str]:
    """A vote's criterion choices as stored (name -> a, b or tie; None: none). Raises ValueError
    for a blank or over-long name (MAX_CRITERION) or a choice not in CRITERION_CHOICES."""
    checked = {}
    for name, pick in (criteria or {}).items():
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_CRITERION:
            raise ValueError(f"a criterion is named by 1 to {MAX_CRITERION} characters, not {str(name)[:80]!r}")
        if pick not in CRITERION_CHOICES:
            raise ValueError(f"the choice on criterion {name!r} must be one of {', '.join(CRITERION_CHOICES)}, "
                             f"not {pick!r}")
        checked[name] = pick
    return checked


def sentence_flag_rows(sentences: Iterable[tuple[str, str, str]] | None) -> list[tuple[str, str, str]]:
    """Flagged sentences as stored: (side, sentence, kind), the sentence's spaces collapsed, each
    once (None: none). Raises ValueError for a side not a or b, a kind not in SENTENCE_FLAGS, a
    blank sentence or one over MAX_SENTENCE characters, or more than MAX_SENTENCE_FLAGS."""
    rows: list[tuple[str, str, str]] = []
    for side, sentence, kind in sentences or ():
        if side not in ("a", "b"):
            raise ValueError(f"a flagged sentence is of side a or b, not {str(side)[:10]!r}")
        if kind not in SENTENCE_FLAGS:
            raise ValueError(f"a sentence is flagged as {' or '.join(SENTENCE_FLAGS)}, not {str(kind)[:20]!r}")
        text = " ".join(str(sentence or "").split())
        if not text or len(text) > MAX_SENTENCE:
            raise ValueError(f"a flagged sentence is 1 to {MAX_SENTENCE:,} characters, not {len(text):,}")
        if (side, text, kind) not in rows:
            rows.append((side, text, kind))
    if len(rows) > MAX_SENTENCE_FLAGS:
        raise ValueError(f"at most {MAX_SENTENCE_FLAGS} sentences are flagged with one vote, not {len(rows)}")
    return rows


class SentenceFlag(NamedTuple):
    """A sentence an annotator flagged with a vote that counts: the method of its side, which side,
    the sentence, the kind (``SENTENCE_FLAGS``)."""

    vote_id: int
    method: str
    side: str
    sentence: str
    kind: str


def sentence_flags(store: Store, campaign: str | None = None, vote_id: int | None = None) -> list[SentenceFlag]:
    """The flagged sentences of the votes that count now (of ``campaign``, of one vote, when
    given), in the order stored, each with the method that wrote its side. Raises StoreError."""
    rows = store.db.execute(
        "select f.vote_id, case f.side when 'a' then b.method_a else b.method_b end, f.side, f.sentence, f.kind "
        "from sentence_flags f join votes v on v.id = f.vote_id join battles b on b.id = v.battle_id "
        f"where {_CHOICE_NOW} != 'void' and (? is null or b.campaign = ?) and (? is null or v.id = ?) order by f.id",
        [campaign, campaign, vote_id, vote_id]).fetchall()
    return [SentenceFlag(*r) for r in rows]


def vote_criteria(store: Store, vote_id: int) -> dict[str, str]:
    """The criterion choices stored with vote ``vote_id`` (criterion -> a, b or tie), in the order
    stored; empty for a vote without. Raises StoreError."""
    return dict(store.db.execute("select criterion, choice from vote_criteria where vote_id = ? order by id",
                                 [vote_id]).fetchall())


def criterion_vote_rows(store: Store, criterion: str, task_set: str | None = None, *, leave_out: Iterable[str] = (),
                        campaign: str | None = None) -> list[VoteRow]:
    """People's choices on ``criterion`` as votes (``vote_rows``' fields: the vote's id, its
    battle's methods, the criterion's choice, the task), in the order recorded, of the votes that
    count now (one undone, or voided by a correction, takes its criterion choices with it; a
    correction to another choice changes the overall vote only); of ``task_set``'s tasks, of
    ``campaign``'s votes, without the annotators in ``leave_out``, when given. Raises StoreError."""
    sql = (
        "select v.id, b.method_a, b.method_b, k.choice, b.task_id from vote_criteria k "
        "join votes v on v.id = k.vote_id join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id "
        f"where k.criterion = ? and {_CHOICE_NOW} != 'void'"
    )
    args: list[Any] = [criterion]
    if task_set is not None:
        sql += " and t.task_set = ?"
        args.append(task_set)
    if campaign is not None:
        sql += " and b.campaign = ?"
        args.append(campaign)
    left_out = sorted(set(leave_out))
    if left_out:
        sql += f" and v.annotator not in ({', '.join('?' * len(left_out))})"
        args += left_out
    return [VoteRow(*r) for r in store.db.execute(sql + " order by v.id", args).fetchall()]


def criteria_answered(store: Store, campaign: str | None = None) -> list[str]:
    """The criteria people's votes (of ``campaign``, when given) have choices on, in the order
    first answered. Raises StoreError."""
    rows = store.db.execute(
        "select k.criterion from vote_criteria k join votes v on v.id = k.vote_id join battles b on b.id = v.battle_id "
        "where (? is null or b.campaign = ?) group by k.criterion order by min(k.id)", [campaign, campaign]).fetchall()
    return [r[0] for r in rows]


def vote_times(store: Store, since: str, *, annotator: str | None = None, address: str | None = None) -> list[str]:
    """When the people's votes cast since ``since`` (an ISO stamp) by ``annotator``, or from
    ``address``, were stored, oldest first: what the vote limits count, in every process on the
    database. Raises StoreError."""
    column, value = ("annotator", annotator) if annotator is not None else ("address", address)
    return [r[0] for r in store.db.execute(
        f"select created from votes where {column} = ? and created >= ? order by created", [value, since]).fetchall()]


def vote_note(comment: str | None, flag: str | None) -> tuple[str | None, str | None]:
    """A vote's comment and flag as stored: a blank comment or flag is None. Raises ValueError for
    a flag not in FLAGS or a comment over MAX_COMMENT characters (SQLite cannot add a check to a
    column added later, so this is where they are checked)."""
    comment = (comment or "").strip() or None
    if comment is not None and len(comment) > MAX_COMMENT:
        raise ValueError(f"the comment is {len(comment):,} characters long; the limit is {MAX_COMMENT:,}")
    flag = flag or None
    if flag is not None and flag not in FLAGS:
        raise ValueError(f"flag must be one of {', '.join(FLAGS)}, not {flag!r}")
    return comment, flag


class CorrectionRow(NamedTuple):
    """A correction of a people's vote: which vote, the choice that counts now (or ``void``),
    who made it, why, when; and the vote's choice as it was cast."""

    id: int
    vote_id: int
    choice: str
    corrected_by: str
    why: str
    created: str
    cast: str


def correct_vote(store: Store, vote_id: int, choice: str, corrected_by: str, why: str) -> int:
    """Append a correction that supersedes vote ``vote_id`` (the vote itself is never changed):
    ``choice`` counts from now on (one of CHOICES, or VOID for a vote that should not count),
    ``corrected_by`` says who decided, ``why`` why. Returns the correction's id.
    Raises ValueError for an unknown choice or an empty name or reason, StoreError for an
    unknown vote."""
    if choice not in (*CHOICES, VOID):
        raise ValueError(f"choice must be one of {', '.join((*CHOICES, VOID))}, not {choice!r}")
    if not corrected_by.strip():
        raise ValueError("say who corrects the vote (--by NAME)")
    if not why.strip():
        raise ValueError("say why the vote is corrected (--why TEXT)")
    with write_transaction(store.db, "correct the vote") as conn:
        if not conn.execute("select 1 from votes where id = ?", [vote_id]).fetchone():
            raise StoreError(f"No vote {vote_id} in {store.path}: `python app.py votes corrections` lists the "
                             "corrections, `votes export` the votes.")
        cur = conn.execute(
            "insert into vote_corrections (vote_id, choice, corrected_by, why, created) values (?, ?, ?, ?, ?)",
            [vote_id, choice, corrected_by.strip(), why.strip(), now()],
        )
    return cur.lastrowid


def vote_corrections(store: Store) -> list[CorrectionRow]:
    """Every correction, oldest first, with the choice each vote was cast with."""
    rows = store.db.execute(
        "select c.id, c.vote_id, c.choice, c.corrected_by, c.why, c.created, v.choice "
        "from vote_corrections c join votes v on v.id = c.vote_id order by c.id"
    ).fetchall()
    return [CorrectionRow(*r) for r in rows]


def version(store: Store) -> tuple[int, int, int]:
    """What the leaderboards are computed from, in three numbers that change whenever a vote, a
    correction or a judge vote is added (each table is append-only, so its largest id says it)."""
    return store.db.execute(
        "select (select coalesce(max(id), 0) from votes), (select coalesce(max(id), 0) from vote_corrections), "
        "(select coalesce(max(id), 0) from judge_votes)").fetchone()


def last_correction_id(store: Store) -> int:
    """The id of the newest correction (0 for none): a tally built before it is stale."""
    return store.db.execute("select coalesce(max(id), 0) from vote_corrections").fetchone()[0]


class VotesImported(NamedTuple):
    """What ``import_votes`` wrote: votes added, votes already present (skipped), and the
    corrections it appended."""

    added: int
    present: int
    corrections: int


def import_votes(store: Store, records: Iterable[dict]) -> VotesImported:
    """Add votes cast elsewhere, in batches of IMPORT_BATCH. Each record has ``prompt``, ``kind``,
    ``task_set`` (or ``task_id`` of a task in this database), ``method_a``, ``method_b``,
    ``choice``, ``annotator``, optional ``output_a``/``output_b`` texts, optional ``comment`` and
    ``flag`` (as ``record_vote`` takes them), optional ``criteria`` (criterion -> a, b or tie, as
    ``record_vote`` takes them; stored with a vote added), optional ``sentences`` (flagged
    sentences, (side, sentence, kind) each, likewise), optional ``created``, optional ``campaign`` (the
    campaign it was cast in, which the caller has checked is here) and ``line`` (for messages). A
    record equal to a vote already here (same task, methods, annotator and choice, and the same
    ``created`` when it has one; without one, an imported vote) is skipped, so importing a file
    twice adds nothing. A record's optional ``correction`` (``choice``, ``by``, ``why``, optional
    ``created``: a vote's newest correction, as ``export_votes`` writes it) is appended as a
    correction of the vote, new or already here, unless that vote has the same one.

    Written ``IMPORT_BATCH`` records a transaction, so a long import never holds the write lock
    for more than a moment: annotators' votes go in between. (An import stopped half-way can be
    run again: what it already wrote is skipped.)
    Returns VotesImported(added, present, corrections). Raises StoreError (naming the line) for an
    unknown task id, a flag not in FLAGS or a comment over MAX_COMMENT."""
    records = list(records)
    for r in records:  # unknown task ids and bad notes are refused before anything is written
        if r.get("task_id") is not None:
            _record_task_id(store.db.conn, r, store)
        try:
            vote_note(r.get("comment"), r.get("flag"))
            criterion_choices(r.get("criteria"))
            sentence_flag_rows(r.get("sentences"))
        except ValueError as exc:
            raise StoreError(f"line {r.get('line', '?')}: {exc}.") from None
    added = skipped = corrections = 0
    for start in range(0, len(records), IMPORT_BATCH):
        with write_transaction(store.db, "import the votes") as conn:
            for r in records[start:start + IMPORT_BATCH]:
                task_id = _record_task_id(conn, r, store)
                vote_id = _existing_vote(conn, task_id, r)
                if vote_id is None:
                    vote_id = _insert_imported_vote(conn, task_id, r)
                    added += 1
                else:
                    skipped += 1
                if r.get("correction"):
                    corrections += _import_correction(conn, vote_id, r["correction"])
    return VotesImported(added, skipped, corrections)


def _record_task_id(conn: sqlite3.Connection, r: dict, store: Store) -> int:
    if r.get("task_id") is None:
        return task_for(conn, r["prompt"], r["kind"], r["task_set"])
    if not conn.execute("select 1 from tasks where id = ?", [r["task_id"]]).fetchone():
        raise StoreError(
            f"line {r.get('line', '?')}: no task {r['task_id']} in {store.path}; "
            "give the task's text instead of its id."
        )
    return r["task_id"]


def _existing_vote(conn: sqlite3.Connection, task_id: int, r: dict) -> int | None:
    """The id of the first vote here with the content key of an imported one (task, methods,
    annotator, choice, and ``created`` when the line has one: a line without one matches an
    imported vote with any time stamp), or None."""
    created = r.get("created")
    row = conn.execute(
        "select v.id from votes v join battles b on b.id = v.battle_id where b.task_id = ? and b.method_a = ? "
        "and b.method_b = ? and v.annotator = ? and v.choice = ? "
        "and (case when ? is null then b.source = 'import' else v.created = ? end)",
        [task_id, r["method_a"], r["method_b"], r["annotator"], r["choice"], created, created],
    ).fetchone()
    return row[0] if row else None


def _import_correction(conn: sqlite3.Connection, vote_id: int, c: dict) -> bool:
    """Append correction ``c`` (choice, by, why, optional created) to vote ``vote_id`` unless the
    vote has one with the same choice, by and why (and created, when ``c`` has one); returns
    whether it was appended."""
    created = c.get("created")
    if conn.execute(
        "select 1 from vote_corrections where vote_id = ? and choice = ? and corrected_by = ? and why = ? "
        "and (? is null or created = ?)", [vote_id, c["choice"], c["by"], c["why"], created, created],
    ).fetchone():
        return False
    conn.execute("insert into vote_corrections (vote_id, choice, corrected_by, why, created) values (?, ?, ?, ?, ?)",
                 [vote_id, c["choice"], c["by"], c["why"], created or now()])
    return True


def _insert_imported_vote(conn: sqlite3.Connection, task_id: int, r: dict) -> int:
    outs = [
        import_output_text(conn, task_id, r[m], r[o])[0] if r.get(o) else None
        for m, o in (("method_a", "output_a"), ("method_b", "output_b"))
    ]
    stamp = r.get("created") or now()
    comment, flag = vote_note(r.get("comment"), r.get("flag"))
    cur = conn.execute(
        "insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, source, created, campaign) "
        "values (?, ?, ?, ?, ?, ?, 'import', ?, ?)",
        [task_id, outs[0], outs[1], r["method_a"], r["method_b"], r["annotator"], stamp, r.get("campaign")],
    )
    vote_id = conn.execute(
        "insert into votes (battle_id, annotator, choice, created, comment, flag) values (?, ?, ?, ?, ?, ?)",
        [cur.lastrowid, r["annotator"], r["choice"], stamp, comment, flag],
    ).lastrowid
    for name, pick in criterion_choices(r.get("criteria")).items():  # (a dataset's votes by criterion)
        conn.execute("insert into vote_criteria (vote_id, criterion, choice, created) values (?, ?, ?, ?)",
                     [vote_id, name, pick, stamp])
    for side, sentence, kind in sentence_flag_rows(r.get("sentences")):  # (and its flagged sentences)
        conn.execute("insert into sentence_flags (vote_id, side, sentence, kind, created) values (?, ?, ?, ?, ?)",
                     [vote_id, side, sentence, kind, stamp])
    return vote_id


def export_votes(store: Store) -> Iterator[dict]:
    """People's votes in the order they were recorded, as ``votes import`` reads them: each as it
    was cast, with its comment and flag when it has them, and its newest correction, if any, under
    ``correction`` (choice, by, why, created)."""
    rows = store.db.query(
        "select v.id, t.prompt as task, t.id as task_id, t.kind, t.task_set, b.method_a, b.method_b, "
        "v.choice as winner, v.annotator, v.created, v.comment, v.flag, oa.text as output_a, ob.text as output_b, "
        "c.choice as c_choice, c.corrected_by as c_by, c.why as c_why, c.created as c_created "
        "from votes v join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id "
        "left join outputs oa on oa.id = b.output_a left join outputs ob on ob.id = b.output_b "
        "left join vote_corrections c on c.id = (select max(n.id) from vote_corrections n where n.vote_id = v.id) "
        "order by v.id"
    )
    for row in rows:
        row["vote_id"] = row.pop("id")  # what ``votes correct`` names (an import ignores it)
        correction = {key: row.pop(f"c_{key}") for key in ("choice", "by", "why", "created")}
        if correction["choice"] is not None:
            row["correction"] = correction
        yield {k: v for k, v in row.items() if v is not None}


def vote_outputs(store: Store, source: str = "people") -> dict[int, tuple[int, int, str | None]]:
    """Vote id (as ``vote_rows`` gives it) -> the ids of the outputs shown as A and B and the
    campaign the vote was cast in (None: the open arena, and every judge's vote), for the votes
    whose battle (people's) or judged pair (the judge's) names both (a vote imported without its
    texts has none): what style control reads. Raises ValueError for another source."""
    if source == "people":
        sql = ("select v.id, b.output_a, b.output_b, b.campaign from votes v join battles b on b.id = v.battle_id "
               "where b.output_a is not null and b.output_b is not null")
    elif source == "judge":
        sql = ("select id, output_a, output_b, null from judge_votes "
               "where output_a is not null and output_b is not null")
    else:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    return {r[0]: (r[1], r[2], r[3]) for r in store.db.execute(sql).fetchall()}


def output_texts(store: Store, ids: Iterable[int]) -> dict[int, str]:
    """Output id -> its text, for the ids given (an unknown id is left out). Raises StoreError."""
    wanted, found = sorted(set(ids)), {}
    for start in range(0, len(wanted), 900):  # under SQLite's limit on a statement's parameters
        chunk = wanted[start:start + 900]
        found.update(store.db.execute(
            f"select id, text from outputs where id in ({', '.join('?' * len(chunk))})", chunk).fetchall())
    return found


def vote_rows(store: Store, source: str = "people", task_set: str | None = None, after_id: int = 0,
              *, leave_out: Iterable[str] = (), campaign: str | None = None) -> list[VoteRow]:
    """People's votes (``source='people'``) or the judge's (``'judge'``), in the order they were
    recorded, with id > ``after_id``; people's votes of the annotators in ``leave_out`` are left out;
    with ``campaign``, only people's votes cast in that campaign (the judge has none: ValueError).
    A corrected vote counts with its newest correction's choice, a voided one not at all.
    Raises ValueError for another source."""
    if source == "people":
        sql = (
            f"select v.id, b.method_a, b.method_b, {_CHOICE_NOW} as choice, b.task_id from votes v "
            "join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id where v.id > ? "
            f"and {_CHOICE_NOW} != 'void'"
        )
    elif source == "judge":
        sql = (
            "select j.id, j.method_a, j.method_b, j.choice, j.task_id from judge_votes j "
            "join tasks t on t.id = j.task_id where j.id > ?"
        )
    else:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    args: list[Any] = [after_id]
    if task_set is not None:
        sql += " and t.task_set = ?"
        args.append(task_set)
    if campaign is not None:
        if source != "people":
            raise ValueError("campaigns hold people's votes only; read the judge's by task set")
        sql += " and b.campaign = ?"
        args.append(campaign)
    left_out = sorted(set(leave_out))
    if left_out and source == "people":
        sql += f" and v.annotator not in ({', '.join('?' * len(left_out))})"
        args += left_out
    return [VoteRow(*r) for r in store.db.execute(sql + " order by 1", args).fetchall()]


class AnnotatedVote(NamedTuple):
    """A people's vote that counts now, with who cast it (for ``annotation.results.outliers``)."""

    annotator: str
    method_a: str
    method_b: str
    choice: str


def annotated_votes(store: Store) -> list[AnnotatedVote]:
    """People's votes that count now (a corrected one with its newest choice, a voided one left
    out), in the order they were recorded, each with its annotator. Raises StoreError."""
    rows = store.db.execute(
        f"select v.annotator, b.method_a, b.method_b, {_CHOICE_NOW} as choice from votes v "
        f"join battles b on b.id = v.battle_id where {_CHOICE_NOW} != 'void' order by v.id").fetchall()
    return [AnnotatedVote(*r) for r in rows]


class PairVote(NamedTuple):
    """A people's vote that counts now, with who cast it and the pair shown: task, methods and
    output ids (None for a vote imported without its texts), for ``annotation.results.agreement``."""

    annotator: str
    task_id: int
    method_a: str
    method_b: str
    output_a: int | None
    output_b: int | None
    choice: str


def pair_votes(store: Store, task_set: str | None = None, campaign: str | None = None) -> list[PairVote]:
    """People's votes that count now (of one task set, and of one campaign, when given), in the
    order they were recorded, each with its annotator and the pair shown. Raises StoreError."""
    where, args = (" and t.task_set = ?", [task_set]) if task_set is not None else ("", [])
    if campaign is not None:
        where, args = where + " and b.campaign = ?", [*args, campaign]
    rows = store.db.execute(
        f"select v.annotator, b.task_id, b.method_a, b.method_b, b.output_a, b.output_b, {_CHOICE_NOW} from votes v "
        f"join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id where {_CHOICE_NOW} != 'void'{where} "
        "order by v.id", args).fetchall()
    return [PairVote(*r) for r in rows]


class GoldPair(NamedTuple):
    """A gold pair: two outputs of one task and the ``better`` one (``a``: ``output_a``), as an
    admin set it, with its task and the two methods."""

    id: int
    output_a: int
    output_b: int
    better: str
    added_by: str
    created: str
    task_id: int
    method_a: str
    method_b: str


#: The newest gold row of each pair of outputs (in either order), with the better output's id.
_GOLD_NOW = ("select g.*, case g.better when 'a' then g.output_a else g.output_b end best from gold_pairs g "
             "where g.id = (select max(h.id) from gold_pairs h where "
             "(h.output_a = g.output_a and h.output_b = g.output_b) or "
             "(h.output_a = g.output_b and h.output_b = g.output_a))")


def add_gold_pair(store: Store, output_a: int, output_b: int, better: str, added_by: str) -> int:
    """Mark ``better`` (``a``: ``output_a``, ``b``: ``output_b``) the better of two outputs of one
    task; a newer mark of the same two outputs supersedes this one. Returns the row's id.
    Raises ValueError for another ``better`` or an empty name, StoreError for an unknown output,
    one output twice or outputs of two tasks or of one method."""
    if better not in ("a", "b"):
        raise ValueError(f"the better side must be a or b, not {better!r}")
    if not added_by.strip():
        raise ValueError("say who marks the pair (--by NAME)")
    with write_transaction(store.db, "add the gold pair") as conn:
        found = {r[0]: r[1:] for r in conn.execute(
            "select id, task_id, method from outputs where id in (?, ?)", [output_a, output_b])}
        missing = [str(i) for i in (output_a, output_b) if i not in found]
        if missing:
            raise StoreError(f"No output {', '.join(missing)} in {store.path}: `python app.py votes gold outputs` "
                             "lists the outputs with their ids.")
        if output_a == output_b or found[output_a] == found[output_b] or found[output_a][0] != found[output_b][0]:
            raise StoreError(f"Outputs {output_a} and {output_b} cannot make a gold pair: it needs two outputs of "
                             "one task by two different methods.")
        cur = conn.execute("insert into gold_pairs (output_a, output_b, better, added_by, created) "
                           "values (?, ?, ?, ?, ?)", [output_a, output_b, better, added_by.strip(), now()])
    return cur.lastrowid


def gold_pairs(store: Store) -> list[GoldPair]:
    """Every gold pair as its newest mark says, oldest first. Raises StoreError."""
    rows = store.db.execute(
        f"select g.id, g.output_a, g.output_b, g.better, g.added_by, g.created, a.task_id, a.method, b.method "
        f"from ({_GOLD_NOW}) g join outputs a on a.id = g.output_a join outputs b on b.id = g.output_b "
        "order by g.id").fetchall()
    return [GoldPair(*r) for r in rows]


class GoldResult(NamedTuple):
    """An annotator's votes that count on gold pairs: how many, and how many ``missed`` the
    better side (a draw misses it too)."""

    annotator: str
    seen: int
    missed: int


def gold_results(store: Store) -> list[GoldResult]:
    """One row per annotator with a counted vote on a gold pair (its newest mark), by name.
    Raises StoreError."""
    rows = store.db.execute(
        f"select v.annotator, count(*), sum(case when (case {_CHOICE_NOW} when 'a' then b.output_a "
        f"when 'b' then b.output_b end) = g.best then 0 else 1 end) "  # a draw (no side) misses it too
        f"from votes v join battles b on b.id = v.battle_id join ({_GOLD_NOW}) g "
        "on (b.output_a = g.output_a and b.output_b = g.output_b) "
        "or (b.output_a = g.output_b and b.output_b = g.output_a) "
        f"where {_CHOICE_NOW} != 'void' group by v.annotator order by v.annotator").fetchall()
    return [GoldResult(*r) for r in rows]


class AnnotatorRow(NamedTuple):
    """What an annotator's votes look like: how many, how often A and B, and the median seconds
    from being shown a pair to voting on it (None for imported votes, which have no such time)."""

    annotator: str
    votes: int
    a: int
    b: int
    median_seconds: float | None


def annotator_rows(store: Store, only: Iterable[str] | None = None) -> list[AnnotatorRow]:
    """One row per annotator of people's votes (of the annotators in ``only``, when given), counted
    and the median taken by SQLite (one pass, no vote copied into Python). Raises StoreError."""
    names = sorted(set(only)) if only is not None else None
    if names == []:
        return []
    where = f"where v.annotator in ({', '.join('?' * len(names))}) " if names else ""
    # the median is the upper one of an even count: sorted seconds[n // 2], as statistics.median_high
    rows = store.db.execute(
        "with t as (select v.annotator a, v.choice c, case when b.source = 'arena' "
        "then (julianday(v.created) - julianday(b.created)) * 86400 end s "
        f"from votes v join battles b on b.id = v.battle_id {where}), "
        "r as (select a, s, row_number() over (partition by a order by s) k, count(*) over (partition by a) n "
        "from t where s is not null) "
        "select g.a, g.votes, g.na, g.nb, m.s from "
        "(select a, count(*) votes, sum(case when c = 'a' then 1 else 0 end) na, "
        "sum(case when c = 'b' then 1 else 0 end) nb from t group by a) g "
        "left join (select a, s from r where k = n / 2 + 1) m on m.a = g.a order by g.a", names or []
    ).fetchall()
    return [AnnotatorRow(*r) for r in rows]


class VoterActivity(NamedTuple):
    """An annotator's votes that count now (one they undid is left out), how many of them were
    cast since a given time, and when the newest was."""

    annotator: str
    counted: int
    since: int
    last: str


def voter_activity(store: Store, since: str) -> list[VoterActivity]:
    """One row per annotator of people's votes, by name, with the votes that count now and those
    cast at or after ``since`` (an ISO time, as votes store theirs). Raises StoreError."""
    rows = store.db.execute(
        f"select v.annotator, count(*), sum(case when v.created >= ? then 1 else 0 end), max(v.created) from votes v "
        f"where {_CHOICE_NOW} != 'void' group by v.annotator order by v.annotator", [since]).fetchall()
    return [VoterActivity(*r) for r in rows]


def voters_since(store: Store, after_id: int) -> tuple[set[str], int]:
    """The annotators with a people's vote of id > ``after_id``, and the newest vote's id
    (``after_id`` when there is none). Raises StoreError."""
    rows = store.db.execute("select annotator, max(id) from votes where id > ? group by annotator",
                            [after_id]).fetchall()
    return {r[0] for r in rows}, max((r[1] for r in rows), default=after_id)


# -- the LLM judge ----------------------------------------------------------------------------


def judged_output_pairs(store: Store, model: str) -> set[frozenset[int]]:
    rows = store.db.execute(
        "select output_a, output_b from judge_votes where model = ? and output_a is not null", [model]
    ).fetchall()
    return {frozenset(r) for r in rows}


def add_judge_vote(
    store: Store, *, task_id: int, output_a: int, output_b: int, method_a: str, method_b: str,
    choice: str, n: int, detail: dict, model: str,
) -> int:
    """Append one judged pair (the majority of ``n`` calls). Raises ValueError for a choice not
    in JUDGE_CHOICES, StoreError when it cannot be written."""
    if choice not in JUDGE_CHOICES:
        raise ValueError(f"judge choice must be one of {JUDGE_CHOICES}, not {choice!r}")
    with write_transaction(store.db, "store the judge's vote") as conn:
        cur = conn.execute(
            "insert into judge_votes (task_id, method_a, method_b, output_a, output_b, choice, n, detail, model, "
            "created) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [task_id, method_a, method_b, output_a, output_b, choice, n,
             json.dumps(detail, ensure_ascii=False), model, now()],
        )
    return cur.lastrowid
