"""The reads of ``python app.py dataset export`` (``annotation.admin.dataset``): every output, every
people's vote and every LLM judge's vote, of one task set or of all (people's votes also of one
campaign), as flat rows in the order they were stored; and the import of the judge's votes.
``dataset import`` writes outputs and people's votes through ``data.arena``'s import functions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from data.arena import IMPORT_BATCH, JUDGE_CHOICES, import_output_text, task_for
from data.store import Store, write_transaction

_TASK_SET = "(? is null or t.task_set = ?)"
_CAMPAIGN = "(? is null or b.campaign = ?)"


def output_rows(store: Store, task_set: str | None = None) -> list[dict]:
    """Every output (of ``task_set``'s tasks; None: every task), oldest first: its id, its task's
    id, prompt, kind and set, the method, the text as stored, where it came from (``source``:
    'run' or 'import'; a run's ``run_id`` and the author's ``version`` it holds) and when it was
    stored. Raises StoreError."""
    return list(store.db.query(
        "select o.id as output_id, o.task_id, t.prompt, t.kind, t.task_set, o.method, o.text, o.source, o.run_id, "
        f"o.version, o.created from outputs o join tasks t on t.id = o.task_id where {_TASK_SET} order by o.id",
        [task_set, task_set]))


def vote_rows(store: Store, task_set: str | None = None, campaign: str | None = None) -> list[dict]:
    """Every people's vote (of ``task_set``'s tasks, and cast in ``campaign``; None: every task,
    every campaign and the open arena), in the order they were
    recorded: the vote's and its battle's ids, the task, both methods, output ids and the texts
    shown (None for an imported vote that came without them), the choice as cast (``winner``),
    its newest correction (``correction``: the choice that counts now, or void; with
    ``corrected_by``, ``correction_why``, ``correction_created``; None when uncorrected), the
    annotator, their comment and flag, when the pair was shown (``shown``) and the vote cast
    (``created``), the battle's ``source`` ('arena' or 'import') and ``campaign`` (None: the open
    arena, or imported). Raises StoreError."""
    return list(store.db.query(
        "select v.id as vote_id, b.id as battle_id, b.task_id, t.prompt, t.kind, t.task_set, b.method_a, b.method_b, "
        "b.output_a as output_a_id, b.output_b as output_b_id, oa.text as output_a, ob.text as output_b, "
        "v.choice as winner, c.choice as correction, c.corrected_by, c.why as correction_why, "
        "c.created as correction_created, v.annotator, v.comment, v.flag, b.created as shown, v.created, "
        "b.source, b.campaign from votes v join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id "
        "left join outputs oa on oa.id = b.output_a left join outputs ob on ob.id = b.output_b "
        "left join vote_corrections c on c.id = (select max(id) from vote_corrections where vote_id = v.id) "
        f"where {_TASK_SET} and {_CAMPAIGN} order by v.id", [task_set, task_set, campaign, campaign]))


def vote_criteria_rows(store: Store, task_set: str | None = None, campaign: str | None = None) -> dict[int, dict]:
    """The criterion choices of the votes ``vote_rows`` gives (same scope): vote id -> {criterion:
    a, b or tie}, each vote's in the order stored; a vote without criteria is left out. Raises
    StoreError."""
    found: dict[int, dict] = {}
    for vote_id, criterion, choice in store.db.execute(
            "select k.vote_id, k.criterion, k.choice from vote_criteria k join votes v on v.id = k.vote_id "
            "join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id "
            f"where {_TASK_SET} and {_CAMPAIGN} order by k.id", [task_set, task_set, campaign, campaign]).fetchall():
        found.setdefault(vote_id, {})[criterion] = choice
    return found


def sentence_flag_rows(store: Store, task_set: str | None = None, campaign: str | None = None) -> dict[int, list]:
    """The flagged sentences of the votes ``vote_rows`` gives (same scope): vote id -> [{side,
    sentence, kind}], each vote's in the order stored; a vote without is left out. Raises StoreError."""
    found: dict[int, list] = {}
    for vote_id, side, sentence, kind in store.db.execute(
            "select f.vote_id, f.side, f.sentence, f.kind from sentence_flags f join votes v on v.id = f.vote_id "
            "join battles b on b.id = v.battle_id join tasks t on t.id = b.task_id "
            f"where {_TASK_SET} and {_CAMPAIGN} order by f.id", [task_set, task_set, campaign, campaign]).fetchall():
        found.setdefault(vote_id, []).append({"side": side, "sentence": sentence, "kind": kind})
    return found


def judge_vote_rows(store: Store, task_set: str | None = None) -> list[dict]:
    """Every LLM judge's vote (of ``task_set``'s tasks; None: every task), in the order they were
    recorded: its id (``judge_vote_id``), the task's id, prompt, kind and set, both methods,
    output ids and the texts shown (None where the judged pair names no output), the ``choice``
    (a, b or tie), ``n`` (calls), the judge ``model``, ``created`` and ``detail`` (JSON text).
    Raises StoreError."""
    return list(store.db.query(
        "select j.id as judge_vote_id, j.task_id, t.prompt, t.kind, t.task_set, j.method_a, j.method_b, "
        "j.output_a as output_a_id, j.output_b as output_b_id, oa.text as output_a, ob.text as output_b, j.choice, "
        "j.n, j.model, j.created, j.detail from judge_votes j join tasks t on t.id = j.task_id "
        "left join outputs oa on oa.id = j.output_a left join outputs ob on ob.id = j.output_b "
        f"where {_TASK_SET} order by j.id", [task_set, task_set]))


class JudgeVotesImported(NamedTuple):
    """What ``import_judge_votes`` wrote: judge votes added, and those already present (skipped)."""

    added: int
    present: int


def import_judge_votes(store: Store, records: Iterable[dict]) -> JudgeVotesImported:
    """Add the LLM judge's votes of another database, in batches of IMPORT_BATCH (append-only).
    Each record has ``prompt``, ``kind``, ``task_set``, ``method_a``, ``method_b``, optional
    ``output_a``/``output_b`` texts (stored as imported outputs, or found among them), ``choice``
    (one of JUDGE_CHOICES), ``n``, ``detail`` (JSON text, kept as it is), ``model``, ``created``
    and optional ``line`` (for messages). A record equal to a judge vote already here (same task,
    methods, model, choice and created) is skipped, so importing twice adds nothing.
    Raises ValueError for a choice not in JUDGE_CHOICES (before anything is written), StoreError."""
    records = list(records)
    for r in records:
        if r["choice"] not in JUDGE_CHOICES:
            raise ValueError(f"line {r.get('line', '?')}: judge choice must be one of {JUDGE_CHOICES}, "
                             f"not {r['choice']!r}")
    added = present = 0
    for start in range(0, len(records), IMPORT_BATCH):
        with write_transaction(store.db, "import the judge's votes") as conn:
            for r in records[start:start + IMPORT_BATCH]:
                task_id = task_for(conn, r["prompt"], r["kind"], r["task_set"])
                if _judge_vote_present(conn, task_id, r):
                    present += 1
                else:
                    _insert_judge_vote(conn, task_id, r)
                    added += 1
    return JudgeVotesImported(added, present)


def _judge_vote_present(conn: sqlite3.Connection, task_id: int, r: dict) -> bool:
    return conn.execute(
        "select 1 from judge_votes where task_id = ? and method_a = ? and method_b = ? and model = ? "
        "and choice = ? and created = ?",
        [task_id, r["method_a"], r["method_b"], r["model"], r["choice"], r["created"]]).fetchone() is not None


def _insert_judge_vote(conn: sqlite3.Connection, task_id: int, r: dict) -> None:
    outs = [import_output_text(conn, task_id, r[m], r[o])[0] if r.get(o) else None
            for m, o in (("method_a", "output_a"), ("method_b", "output_b"))]
    conn.execute(
        "insert into judge_votes (task_id, method_a, method_b, output_a, output_b, choice, n, detail, model, created) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [task_id, r["method_a"], r["method_b"], *outs, r["choice"], r["n"], r["detail"], r["model"], r["created"]])
