"""Accounts, invite links and login sessions: the only SQL of the ``accounts``, ``invites`` and
``sessions`` tables (schema in migration ``m013_accounts``). ``annotation.accounts`` is the
service over these; nothing else calls them.

Secrets never reach the file: a password is stored as its Argon2 hash (made by the service),
an invite's or a session's token as its sha256 hex digest (``token_hash``). An account is never
deleted or renamed (votes name it); a session ends once (``ended``), an invite gets disabled;
the schema refuses anything else. Every write runs in its own ``begin immediate`` transaction
(``write_transaction``); what SQLite raises on a read is mapped to StoreError.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

from data import sql
from data.schema import ACCOUNT_ROLES
from data.store import Store, now, store_error, write_transaction

ROLES = ACCOUNT_ROLES  # annotator, admin

_F = TypeVar("_F", bound=Callable[..., Any])


def token_hash(token: str) -> str:
    """The sha256 hex digest a token is stored as (the token itself never is)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class AccountRow(NamedTuple):
    """An account as stored, its password's hash included (only the service reads that)."""

    name: str
    role: str
    password_hash: str | None
    disabled: bool
    quota: int | None
    completion_code: str | None
    study: str | None
    participant: dict[str, str]
    created: str


class InviteRow(NamedTuple):
    """An invite link as stored: for ``account``, or for every participant of ``study``."""

    id: int
    account: str | None
    study: str | None
    quota: int | None
    completion_code: str | None
    disabled: bool
    created: str
    expires: str | None = None  # when it stops logging anyone in (None: never)


class InviteCount(NamedTuple):
    """An invite link and what it did: the accounts it logged in (for a study link: the
    participants' accounts it made) and the sessions it opened."""

    invite: InviteRow
    accounts: int
    sessions: int


_ACCOUNT_COLUMNS = "name, role, password_hash, disabled, quota, completion_code, study, participant, created"


def _account(row: tuple | None) -> AccountRow | None:
    if row is None:
        return None
    name, role, password_hash, disabled, quota, code, study, participant, created = row
    return AccountRow(name, role, password_hash, bool(disabled), quota, code, study,
                      json.loads(participant) if participant else {}, created)


def _read(fn: _F) -> _F:
    """Map what the database raises on a read to StoreError (``data.store.store_error``)."""

    @functools.wraps(fn)
    def read(store: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(store, *args, **kwargs)
        except sql.DatabaseError as exc:
            raise store_error(store.path, exc) from exc

    return read  # type: ignore[return-value]


# -- accounts ---------------------------------------------------------------------------------
def add_account(store: Store, name: str, *, role: str = "annotator", password_hash: str | None = None,
                quota: int | None = None, completion_code: str | None = None, study: str | None = None,
                participant: Mapping[str, str] | None = None) -> AccountRow | None:
    """Store a new account; returns it, or None when an account of that name exists already
    (nothing is written then). Raises StoreError when SQLite refuses the row (a role not in
    ROLES, a quota under 1...)."""
    with write_transaction(store.db, f"add the account {name!r}") as conn:
        if conn.execute("select 1 from accounts where name = ?", [name]).fetchone():
            return None
        conn.execute(
            "insert into accounts (name, role, password_hash, disabled, quota, completion_code, study, participant, "
            "created) values (?, ?, ?, 0, ?, ?, ?, ?, ?)",
            [name, role, password_hash, quota, completion_code, study,
             json.dumps(dict(participant), ensure_ascii=False) if participant is not None else None, now()],
        )
        return _account(conn.execute(f"select {_ACCOUNT_COLUMNS} from accounts where name = ?", [name]).fetchone())


def study_account(store: Store, name: str, *, study: str, quota: int | None, completion_code: str | None,
                  participant: Mapping[str, str]) -> AccountRow:
    """The account ``name`` of a study's participant, created (an annotator, no password, the
    study's quota and completion code, the platform's ids) when it does not exist yet; an
    existing one is returned as it is. One transaction, so two first uses at once make one
    account. Raises StoreError."""
    with write_transaction(store.db, f"open the study account {name!r}") as conn:
        conn.execute(
            "insert into accounts (name, role, password_hash, disabled, quota, completion_code, study, participant, "
            "created) select ?, 'annotator', null, 0, ?, ?, ?, ?, ? "
            "where not exists (select 1 from accounts where name = ?)",
            [name, quota, completion_code, study, json.dumps(dict(participant), ensure_ascii=False), now(), name],
        )
        return _account(conn.execute(f"select {_ACCOUNT_COLUMNS} from accounts where name = ?", [name]).fetchone())


@_read
def get_account(store: Store, name: str) -> AccountRow | None:
    """The account ``name`` (None: no such account). Raises StoreError."""
    return _account(store.db.execute(f"select {_ACCOUNT_COLUMNS} from accounts where name = ?", [name]).fetchone())


@_read
def list_accounts(store: Store) -> list[AccountRow]:
    """Every account, in the order they were added. Raises StoreError."""
    rows = store.db.execute(f"select {_ACCOUNT_COLUMNS} from accounts order by id").fetchall()
    return [_account(r) for r in rows]


@_read
def any_enabled(store: Store) -> bool:
    """Whether at least one account is not disabled. Raises StoreError."""
    return store.db.execute("select exists (select 1 from accounts where disabled = 0)").fetchone()[0] == 1


def disable_account(store: Store, name: str) -> bool:
    """Disable the account ``name`` and end its open sessions, in one transaction (its invite
    links then open nothing: a session needs an enabled account); returns False when there is no
    such account. Raises StoreError."""
    with write_transaction(store.db, f"disable the account {name!r}") as conn:
        if not conn.execute("select 1 from accounts where name = ?", [name]).fetchone():
            return False
        stamp = now()
        conn.execute("update accounts set disabled = 1 where name = ?", [name])
        conn.execute("update sessions set ended = ? where account = ? and ended is null", [stamp, name])
    return True


def set_terms(store: Store, name: str, *, quota: int | None, completion_code: str | None) -> bool:
    """Set the account's quota and completion code (None: none); returns False when there is no
    such account. Raises StoreError (a quota under 1)."""
    with write_transaction(store.db, f"set the quota of {name!r}") as conn:
        cur = conn.execute("update accounts set quota = ?, completion_code = ? where name = ?",
                           [quota, completion_code, name])
    return cur.rowcount == 1


def set_password_hash(store: Store, name: str, password_hash: str) -> None:
    """Replace the account's password hash (a rehash with newer parameters). Raises StoreError."""
    with write_transaction(store.db, f"store the password of {name!r}") as conn:
        conn.execute("update accounts set password_hash = ? where name = ?", [password_hash, name])


# -- invites ----------------------------------------------------------------------------------
def add_invite(store: Store, hashed: str, *, account: str | None = None, study: str | None = None,
               quota: int | None = None, completion_code: str | None = None, expires: str | None = None) -> int:
    """Store an invite link by its token's hash (``token_hash``), for ``account`` or for every
    participant of ``study`` (exactly one), ending at ``expires`` (None: never); returns its id.
    Raises StoreError when SQLite refuses it (both or neither given, an unknown account, a study
    without quota or completion code)."""
    with write_transaction(store.db, "store the invite") as conn:
        cur = conn.execute(
            "insert into invites (token_hash, account, study, quota, completion_code, created, disabled, expires) "
            "values (?, ?, ?, ?, ?, ?, 0, ?)",
            [hashed, account, study, quota, completion_code, now(), expires],
        )
    return cur.lastrowid


_INVITE_COLUMNS = "id, account, study, quota, completion_code, disabled, created, expires"


def _invite(row: tuple) -> InviteRow:
    return InviteRow(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6], row[7])


@_read
def get_invite(store: Store, hashed: str) -> InviteRow | None:
    """The invite whose token hashes to ``hashed`` (None: no such invite). Raises StoreError."""
    row = store.db.execute(f"select {_INVITE_COLUMNS} from invites where token_hash = ?", [hashed]).fetchone()
    return None if row is None else _invite(row)


@_read
def list_invites(store: Store) -> list[InviteCount]:
    """Every invite link, oldest first, with the accounts it logged in and the sessions it opened.
    Raises StoreError."""
    columns = ", ".join(f"i.{c}" for c in _INVITE_COLUMNS.split(", "))
    rows = store.db.execute(
        f"select {columns}, count(distinct s.account), count(s.id) from invites i "
        f"left join sessions s on s.invite = i.id group by {columns} order by i.id").fetchall()
    return [InviteCount(_invite(row[:8]), row[8], row[9]) for row in rows]


def disable_invite(store: Store, hashed: str) -> bool:
    """Disable the invite whose token hashes to ``hashed``; returns False when there is none.
    Raises StoreError."""
    with write_transaction(store.db, "disable the invite") as conn:
        cur = conn.execute("update invites set disabled = 1 where token_hash = ?", [hashed])
    return cur.rowcount == 1


def disable_invites(store: Store, *, account: str | None = None, study: str | None = None) -> int:
    """Disable every open invite link of ``account`` or of ``study`` (exactly one); returns how
    many. Raises StoreError."""
    column, value = ("account", account) if account is not None else ("study", study)
    with write_transaction(store.db, f"disable the invites of {value!r}") as conn:
        cur = conn.execute(f"update invites set disabled = 1 where {column} = ? and disabled = 0", [value])
    return cur.rowcount


@_read
def new_study_accounts(store: Store, study: str, address: str, since: str) -> int:
    """How many accounts of ``study`` were made since ``since`` (an ISO time) whose sessions came
    from ``address``. Raises StoreError."""
    return store.db.execute(
        "select count(*) from accounts a where a.study = ? and a.created >= ? and exists "
        "(select 1 from sessions s where s.account = a.name and s.address = ?)", [study, since, address]).fetchone()[0]


# -- sessions ---------------------------------------------------------------------------------
def add_session(store: Store, hashed: str, account: str, address: str | None, *, invite: int | None = None) -> bool:
    """Open a session of ``account`` under its token's hash, from ``address``; returns False (and
    writes nothing) when the account does not exist or is disabled. Raises StoreError."""
    with write_transaction(store.db, f"open a session of {account!r}") as conn:
        cur = conn.execute(
            "insert into sessions (token_hash, account, address, invite, created) select ?, ?, ?, ?, ? "
            "where exists (select 1 from accounts where name = ? and disabled = 0)",
            [hashed, account, address, invite, now(), account],
        )
    return cur.rowcount == 1


@_read
def session_account(store: Store, hashed: str, since: str = "") -> AccountRow | None:
    """The account of the open session whose token hashes to ``hashed``; None when there is no
    such session, it ended or was opened before ``since`` (an ISO time), or its account is
    disabled. Raises StoreError."""
    columns = ", ".join(f"a.{c}" for c in _ACCOUNT_COLUMNS.split(", "))
    row = store.db.execute(
        f"select {columns} from sessions s join accounts a on a.name = s.account "
        "where s.token_hash = ? and s.ended is null and s.created >= ? and a.disabled = 0",
        [hashed, since],
    ).fetchone()
    return _account(row)


def end_session(store: Store, hashed: str) -> bool:
    """End the open session whose token hashes to ``hashed`` (only that one); returns False when
    there is no open session of that hash. Raises StoreError."""
    with write_transaction(store.db, "end the session") as conn:
        cur = conn.execute("update sessions set ended = ? where token_hash = ? and ended is null", [now(), hashed])
    return cur.rowcount == 1


@_read
def open_sessions(store: Store, account: str) -> int:
    """How many sessions of ``account`` are open. Raises StoreError."""
    return store.db.execute("select count(*) from sessions where account = ? and ended is null",
                            [account]).fetchone()[0]



# -- failed login tries (the throttle's ledger, shared by every process on the database) ------------
@_read
def failure_times(store: Store, kind: str, key: str) -> list[float]:
    """When the counted failed tries of ``(kind, key)`` happened, oldest first. Raises StoreError."""
    return [r[0] for r in store.db.execute(
        "select at from login_failures where kind = ? and key = ? order by at", [kind, key]).fetchall()]


def put_failure_times(store: Store, kind: str, key: str, times: list[float]) -> None:
    """Make ``times`` the counted failed tries of ``(kind, key)``, inside the caller's write
    transaction (``Store.exclusive``). Raises StoreError."""
    with write_transaction(store.db, "count the login try") as conn:
        conn.execute("delete from login_failures where kind = ? and key = ?", [kind, key])
        if times:
            conn.executemany("insert into login_failures (kind, key, at) values (?, ?, ?)",
                             [(kind, key, t) for t in times])


def forget_failures(store: Store, last_before: float) -> None:
    """Forget the keys whose last failed try happened before ``last_before``. Raises StoreError."""
    with write_transaction(store.db, "forget old login tries") as conn:
        conn.execute("delete from login_failures where (kind || ':' || key) in (select kind || ':' || key "
                     "from login_failures group by kind, key having max(at) < ?)", [last_before])
