"""Share links: the only SQL of the ``share_links`` table (schema in migration ``m023_share_links``).
``core.sharing`` is the service over these; nothing else calls them.

A link is stored by its secret token's sha256 hex digest (``token_hash``, as invites and sessions
are: the token itself never reaches the file), with the run it shows, the version (N, or None for
the model's own text), who made it and when. A link is never deleted: it gets ``revoked`` (once,
the time it stopped opening); the schema refuses anything else.

    add_share(store, token_hash(token), run_id, version=2, shared_by="ana")   # its ShareRow
    get_share(store, token_hash(token))         # the ShareRow, revoked or not; None: no such link
    list_shares(store, run_id)                   # every link of the run, oldest first
    revoke_shares(store, run_id, version=ANY)    # revoke the run's open links (of one version)
"""

from __future__ import annotations

from typing import NamedTuple

from data import sql
from data.accounts import token_hash
from data.store import Store, now, store_error, write_transaction

__all__ = ["ANY", "ShareRow", "add_share", "get_share", "list_shares", "revoke_shares", "token_hash"]

#: ``revoke_shares(version=ANY)``: the links of every version (None names the model's text's).
ANY = object()


class ShareRow(NamedTuple):
    """A share link as stored: the ``run_id`` it shows at ``version`` (None: the model's own
    text), who made it (``shared_by``: "" from the command line), when (``created``, ISO time) and
    when it was ``revoked`` (None while it opens)."""

    id: int
    run_id: str
    version: int | None
    shared_by: str
    created: str
    revoked: str | None


_COLUMNS = "id, run_id, version, shared_by, created, revoked"


def add_share(store: Store, hashed: str, run_id: str, *, version: int | None, shared_by: str = "") -> ShareRow:
    """Store a new link by its token's hash (``token_hash``) to ``version`` of run ``run_id``;
    returns it. Raises StoreError when SQLite refuses it (a hash used before, an unknown run)."""
    stamp = now()
    with write_transaction(store.db, f"store a share link of run {run_id}") as conn:
        cur = conn.execute("insert into share_links (token_hash, run_id, version, shared_by, created) "
                           "values (?, ?, ?, ?, ?)", [hashed, run_id, version, shared_by, stamp])
    return ShareRow(cur.lastrowid, run_id, version, shared_by, stamp, None)


def get_share(store: Store, hashed: str) -> ShareRow | None:
    """The link whose token hashes to ``hashed``, revoked or not (None: no such link). Raises
    StoreError."""
    try:
        row = store.db.execute(f"select {_COLUMNS} from share_links where token_hash = ?", [hashed]).fetchone()
    except sql.DatabaseError as exc:
        raise store_error(store.path, exc) from exc
    return None if row is None else ShareRow(*row)


def list_shares(store: Store, run_id: str) -> list[ShareRow]:
    """Every link of run ``run_id``, oldest first. Raises StoreError."""
    try:
        rows = store.db.execute(f"select {_COLUMNS} from share_links where run_id = ? order by id", [run_id])
        return [ShareRow(*row) for row in rows.fetchall()]
    except sql.DatabaseError as exc:
        raise store_error(store.path, exc) from exc


def revoke_shares(store: Store, run_id: str, *, version: int | None | object = ANY, hashed: str | None = None) -> int:
    """Revoke the open links of run ``run_id`` (those to ``version`` only, None naming the model's
    text's; the one whose token hashes to ``hashed`` only); returns how many. Raises StoreError."""
    where, params = "run_id = ? and revoked is null", [run_id]
    if version is None:
        where += " and version is null"
    elif version is not ANY:
        where, params = where + " and version = ?", [*params, version]
    if hashed is not None:
        where, params = where + " and token_hash = ?", [*params, hashed]
    with write_transaction(store.db, f"revoke the share links of run {run_id}") as conn:
        cur = conn.execute(f"update share_links set revoked = ? where {where}", [now(), *params])
    return cur.rowcount
