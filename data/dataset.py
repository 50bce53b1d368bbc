"""The two reads of ``python app.py dataset export`` (``annotation.dataset``): every output and
every people's vote, of one task set or of all (the votes also of one campaign), as flat rows
in the order they were stored.
Read-only; ``dataset import`` writes through ``data.arena``'s import functions."""

from __future__ import annotations

from data.store import Store

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
