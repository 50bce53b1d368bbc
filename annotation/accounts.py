"""Annotator accounts as one service: accounts with a role, logins and their sessions, invite
links (one per annotator, or one per crowd study whose participants get an account each on first
use), and the completion code shown once an account has cast its quota of votes. Front ends
call this, never ``data.accounts``.

    accounts = Accounts(store)
    accounts.add("ana", "correct-horse")                 # Account(name='ana', role='annotator', ...)
    token = accounts.login("ana", "correct-horse", "203.0.113.7")
    accounts.session(token)                              # Account(name='ana', ...), on every request
    accounts.logout(token)                               # ends that session only
    link = accounts.invite(study="pilot", quota=20, completion_code="C0DE1234")
    token, account = accounts.redeem(link, {"PROLIFIC_PID": "5f..."}, "198.51.100.2")  # "pilot:5f..."

Secrets stay secret: a password is stored as its Argon2 hash (``argon2.PasswordHasher``), a
session's or an invite's token as its sha256 hash; neither a password nor a token is logged.
A wrong name and a wrong password get the same message, and an unknown name is verified against
a dummy hash, so neither the message nor the time tells which names exist.

Failed tries are throttled (``Throttle``) per account name from one client address, per client
address, and per account name from every address, before the password is verified: once a key
has its free failures within ``FAILURE_WINDOW`` (``FREE_FAILURES`` for a name from one address
and for an address, ``ACCOUNT_FAILURES`` for a name from anywhere: one person guessing cannot
lock a team out of a shared name, issue 38), every further try is refused until ``FIRST_DELAY``
seconds after the last failure, a delay that doubles with each further failure up to
``MAX_DELAY``. A success clears the name's failures (not the address's). Invite links that fail
count against the address the same way. The
failures are kept in the database (m019's login_failures), so every app process on it counts
the same tries.

``SharedLogin`` is the same door for one shared name and password (``--auth``), with its
sessions in memory, for a deployment without accounts.

One ``Accounts`` per store, shared by Gradio's worker threads: ``session`` is called on every
HTTP request, so open sessions are cached in memory for ``SESSION_TTL`` seconds (a logout or
disable in this process drops them at once; one in another process, such as ``python app.py
annotators disable``, within that time) and ``any`` for ``ANY_TTL`` seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import math
import re
import secrets
import string
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from annotation.errors import AccountError, LoginRefused
from common.settings import MIN_PASSWORD
from data import accounts as rows
from data.store import Store

ROLES = rows.ROLES  # annotator, admin
ANNOTATOR, ADMIN = ROLES  # an annotator votes; an admin also sees the leaderboard and runs the study
MAX_NAME = 64  # characters of an account's or a study's name
MAX_PASSWORD = 1024
CODE_LENGTH = 8  # characters of a generated completion code
CODE_ALPHABET = string.ascii_uppercase + string.digits
#: The crowd platform's ids a study link carries (Prolific's URL parameters), kept with the account.
PLATFORM_IDS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
PARTICIPANT_KEYS = ("PROLIFIC_PID", "participant")  # where a study link's participant id is read from
_PLATFORM_ID = re.compile(r"[A-Za-z0-9._@-]{1,64}")
#: Prolific's own ids (participant, study, session) are 24 hexadecimal digits: a made-up one is refused
_PROLIFIC_ID = re.compile(r"[0-9a-f]{24}")
SESSION_DAYS = 14  # a session ends this long after its login, on the server as in the browser's cookie
STUDY_LINK_DAYS = 30  # a study link ends this long after it is made, unless told otherwise (--expires)
#: New participants' accounts a study link makes for one client address in an hour (0: no cap);
#: --study-accounts-per-address
STUDY_ACCOUNTS_PER_ADDRESS = 3
_DEFAULT = object()  # invite(expires=...) not given: the kind of link decides
_CODE = re.compile(r"[!-~]{1,64}")  # printable ASCII, no space
_MAX_KEY = 256  # characters of a typed name the throttle keeps

FREE_FAILURES = 5  # failed tries within FAILURE_WINDOW before tries are held back
#: failed tries at one name from every address before that name is held back everywhere: a
#: higher count, so five wrong passwords from one place do not lock the name's owner out
ACCOUNT_FAILURES = 50
FAILURE_WINDOW = 15 * 60.0
FIRST_DELAY = 2.0  # seconds after the FREE_FAILURES-th failure; doubles with each further one
MAX_DELAY = 15 * 60.0

ANY_TTL = 5.0  # seconds ``any`` keeps its answer (a write of this process drops it)
SESSION_TTL = 30.0  # seconds an open session stays cached
SESSION_CACHE_SIZE = 10_000

WRONG = "Wrong name or password."
DISABLED = "This account is disabled: ask the study's admin."
BAD_INVITE = "This invite link is not valid: ask for a new one."
EXPIRED = "This invite link has expired: ask the study's admin for a new one."
TOO_MANY_PARTICIPANTS = ("Too many new participants joined from your address in the last hour: if you share a "
                         "network with others taking part, try again later, or ask the study's admin.")
HELD_BACK = "Too many failed logins for this account (or from this address): try again in {wait} s."
LINKS_HELD_BACK = "Too many invalid invite links or failed logins from this address: try again in {wait} s."


@dataclass(frozen=True)
class Account:
    """An account as front ends see it (never its password's hash). ``quota``: the votes it is
    asked to cast (None: no quota); ``completion_code``: what it is shown once it has (None:
    nothing); ``study``: the crowd study it joined through a study link (None: added by hand);
    ``participant``: the platform's ids it came with (PROLIFIC_PID, STUDY_ID, SESSION_ID)."""

    name: str
    role: str = ANNOTATOR
    disabled: bool = False
    quota: int | None = None
    completion_code: str | None = None
    study: str | None = None
    participant: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN

    def code_after(self, votes: int, quota: int | None = None) -> str | None:
        """The completion code once ``votes`` >= the quota (``quota``: the one the annotator is shown,
        e.g. a smaller campaign's; else the account's); None before, or without a quota or code."""
        quota = self.quota if quota is None else quota
        return self.completion_code if quota is not None and votes >= quota else None


def _public(row: rows.AccountRow) -> Account:
    return Account(row.name, row.role, row.disabled, row.quota, row.completion_code, row.study,
                   dict(row.participant))


Key = tuple[str, str]  # ("account", name) or ("address", ip)


class MemoryFailures:
    """A Throttle's ledger in this process's memory (one process: the shared login)."""

    def __init__(self, max_keys: int = 100_000):
        self._times: dict[Key, list[float]] = {}
        self._sweep_above = max_keys

    def get(self, key: Key) -> list[float]:
        return list(self._times.get(key, ()))

    def put(self, key: Key, times: list[float]) -> None:
        if times:
            self._times[key] = list(times)
        else:
            self._times.pop(key, None)

    def transaction(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def sweep(self, last_before: float) -> None:
        """Forget the keys whose last failure is older than ``last_before`` (once there are many)."""
        if len(self._times) > self._sweep_above:
            for key in [k for k, t in self._times.items() if t[-1] < last_before]:
                del self._times[key]
            self._sweep_above = max(self._sweep_above, 2 * len(self._times))


class StoredFailures:
    """A Throttle's ledger in the database (``data.accounts``' login_failures): every process on
    it counts the same failed tries. Raises StoreError."""

    SWEEP_EVERY = 500  # tries between two sweeps of forgotten keys

    def __init__(self, store: Store):
        self.store = store
        self._tries = 0

    def get(self, key: Key) -> list[float]:
        return rows.failure_times(self.store, *key)

    def put(self, key: Key, times: list[float]) -> None:
        rows.put_failure_times(self.store, *key, times)

    def transaction(self) -> contextlib.AbstractContextManager:
        return self.store.exclusive("count a login try")

    def sweep(self, last_before: float) -> None:
        self._tries += 1
        if self._tries % self.SWEEP_EVERY == 0:
            rows.forget_failures(self.store, last_before)


class Throttle:
    """Failed tries per key (("account", name), ("address", ip)). Once a key has ``free``
    failures within ``window`` seconds, a try is held back until ``first`` seconds after its
    last failure, doubled with each failure beyond ``free``, at most ``cap``; a held-back try is
    not counted (it was not verified). A key's failures are forgotten ``window`` seconds after
    its last hold-back ended (or, before any, as they leave the window).

    A try of an account is counted as failed when it starts (``start``), so a burst of tries at
    one account cannot slip past the count while their passwords are verified; ``settle`` then
    takes it back (``neutral``), or clears the first key (``success``). A try from an address
    counts once it has failed: a lab behind one address logging in at once, 200 people in the
    same second, is not held back by its own logins in flight (a burst of guesses at many names
    from one address is held back as soon as its first ``free`` have failed).

    The failures are kept in ``ledger``: this process's memory, or the database
    (``StoredFailures``), where every process on it counts the same tries (the clock is then
    wall-clock time). Thread-safe; the clock is injectable."""

    #: The kinds of key a try counts against from its start, not from its failure: a name from one
    #: address ("pair") and a name from anywhere ("account"); a success clears both.
    IN_FLIGHT = ("account", "pair")

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, free: int = FREE_FAILURES,
                 window: float = FAILURE_WINDOW, first: float = FIRST_DELAY, cap: float = MAX_DELAY,
                 ledger: MemoryFailures | StoredFailures | None = None, free_by_kind: Mapping[str, int] | None = None):
        self.clock = clock
        self.free, self.window, self.first, self.cap = free, window, first, cap
        self.free_by_kind = dict(free_by_kind or {})  # a kind's own free failures (else ``free``)
        self.ledger = ledger or MemoryFailures()
        self._lock = threading.Lock()

    def delay(self, failures: int, kind: str = "") -> float:
        """Seconds a key of ``kind`` with ``failures`` failures is held back after its last one."""
        free = self.free_by_kind.get(kind, self.free)
        if failures < free:
            return 0.0
        return min(self.first * 2 ** (failures - free), self.cap)

    def _times(self, key: Key, now: float) -> list[float]:
        """The key's failures that still count at ``now`` (forgotten ones leave the ledger)."""
        stored = self.ledger.get(key)
        times = list(stored)
        if len(times) >= self.free_by_kind.get(key[0], self.free):
            if now - (times[-1] + self.delay(len(times), key[0])) >= self.window:
                times = []
        else:
            while times and now - times[0] >= self.window:
                times.pop(0)
        if times != stored:
            self.ledger.put(key, times)
        return times

    def wait(self, key: Key) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        with self._lock, self.ledger.transaction():
            return self._wait(key, self.clock())

    def _wait(self, key: Key, now: float) -> float:
        return self._held(self._times(key, now), now, key[0])

    def _held(self, times: list[float], now: float, kind: str = "") -> float:
        """Seconds a key of ``kind`` whose counted failures are ``times`` is held back at ``now``."""
        if len(times) < self.free_by_kind.get(kind, self.free):
            return 0.0
        return max(0.0, times[-1] + self.delay(len(times), kind) - now)

    def start(self, keys: Iterable[Key], message: str = HELD_BACK) -> float:
        """Count one try of ``keys`` as failed and return its time stamp (for ``settle``).
        Raises LoginRefused (``message`` with ``{wait}``, the whole seconds to wait) when any key
        is held back; nothing is counted then."""
        keys = list(keys)
        now = self.clock()
        with self._lock, self.ledger.transaction():
            counted = {key: self._times(key, now) for key in keys}
            wait = max((self._held(times, now, key[0]) for key, times in counted.items()), default=0.0)
            if wait > 0:
                raise LoginRefused(message.format(wait=math.ceil(wait)))
            for key, times in counted.items():
                if key[0] in self.IN_FLIGHT:
                    self.ledger.put(key, [*times, now])
            self.ledger.sweep(now - self.window - self.cap)
        return now

    def settle(self, keys: Iterable[Key], stamp: float, outcome: str) -> None:
        """What the try ``start`` counted at ``stamp`` came to: ``failed`` (it stays counted),
        ``neutral`` (not a guess: taken back) or ``success`` (the failures of its IN_FLIGHT keys, the
        name's, are cleared; an address's try is taken back)."""
        keys = list(keys)
        with self._lock, self.ledger.transaction():
            for key in keys:
                times = self.ledger.get(key)
                if key[0] not in self.IN_FLIGHT:  # counted now, if it failed, in time order
                    if outcome == "failed":
                        self.ledger.put(key, sorted([*times, stamp]))
                elif outcome == "success":
                    if times:
                        self.ledger.put(key, [])
                elif outcome != "failed" and stamp in times:
                    times.remove(stamp)
                    self.ledger.put(key, times)


def password_hasher() -> PasswordHasher:
    """Argon2id with OWASP's recommended parameters (19 MiB, 2 passes, 1 lane: about 19 ms of one
    core a hash here). The library's defaults (64 MiB, 3 passes, 4 lanes: 150 ms of CPU) made 200
    annotators logging in within 20 s ask 2.5 cores of hashing of a 2-core server: a login took
    6-9 s and a first pair 6 s behind them (bench.arena_scale, issue 41). A hash made with other
    parameters still verifies, and is made again with these at its account's next login."""
    return PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


class Accounts:
    """The accounts in ``store``'s database. ``clock`` times the throttle and the caches (default:
    the wall clock for the throttle, whose failures every process shares, and a monotonic one for
    the caches); ``hasher``
    hashes passwords (``password_hasher``; tests pass cheaper parameters)."""

    def __init__(self, store: Store, *, clock: Callable[[], float] | None = None,
                 hasher: PasswordHasher | None = None, study_accounts_per_address: int = STUDY_ACCOUNTS_PER_ADDRESS):
        self.store = store
        self.study_accounts_per_address = study_accounts_per_address
        self.clock = clock or time.monotonic
        self.hasher = hasher or password_hasher()
        # failed tries are counted in the database, on the wall clock: every process on it counts them
        self.throttle = Throttle(clock or time.time, ledger=StoredFailures(store),
                                 free_by_kind={"account": ACCOUNT_FAILURES})
        self._lock = threading.Lock()
        self._dummy_hash: str | None = None
        self._any: tuple[float, bool] | None = None  # (when, answer)
        self._sessions: OrderedDict[str, tuple[float, Account]] = OrderedDict()  # token hash -> (when, account)
        self._generation = 0  # bumped by every invalidation: a read begun before one is not cached

    # -- accounts -------------------------------------------------------------------------------
    def add(self, name: str, password: str | None = None, *, role: str = ANNOTATOR, quota: int | None = None,
            completion_code: str | None = None) -> Account:
        """A new account. ``password`` None: it logs in by invite link only. With a ``quota`` and
        no ``completion_code``, one is generated (CODE_LENGTH upper-case letters and digits).
        Raises AccountError for a bad name (1 to 64 printable characters, no spaces at its ends,
        no ':'), a password under MIN_PASSWORD characters or with spaces at its ends, an unknown
        role, a bad quota or code, or a name taken; StoreError."""
        _check_name(name)
        _check_password(password)
        if role not in ROLES:
            raise AccountError(f"Unknown role {role!r}: an account is one of {', '.join(ROLES)} (--admin for admin).")
        quota = _check_quota(quota)
        completion_code = _check_code(completion_code)
        if quota is not None and completion_code is None:
            completion_code = new_completion_code()
        password_hash = self.hasher.hash(password) if password is not None else None
        row = rows.add_account(self.store, name, role=role, password_hash=password_hash, quota=quota,
                               completion_code=completion_code)
        if row is None:
            raise AccountError(f"An account named {name!r} exists already: pick another name "
                               "(`python app.py annotators list` lists them).")
        self._invalidate()
        return _public(row)

    def list(self) -> list[Account]:
        """Every account, in the order they were added. Raises StoreError."""
        return [_public(r) for r in rows.list_accounts(self.store)]

    def get(self, name: str) -> Account | None:
        """The account ``name`` (None: none of that name). Raises StoreError."""
        row = rows.get_account(self.store, name)
        return _public(row) if row is not None else None

    def disable(self, name: str) -> None:
        """Disable the account ``name``: its open sessions end, and neither its password nor
        its invite links log it in any more (its votes stay). Raises AccountError for an unknown name,
        StoreError."""
        if not rows.disable_account(self.store, name):
            raise AccountError(f"No account named {name!r}: `python app.py annotators list` lists them.")
        self._invalidate(account=name)

    def any(self) -> bool:
        """Whether at least one enabled account exists (then every visitor must log in). Cached
        for ANY_TTL seconds; a write of this process drops it. Raises StoreError."""
        now = self.clock()
        with self._lock:
            if self._any is not None and now - self._any[0] < ANY_TTL:
                return self._any[1]
            generation = self._generation
        answer = rows.any_enabled(self.store)
        with self._lock:
            if generation == self._generation:
                self._any = (now, answer)
        return answer

    # -- logins and sessions --------------------------------------------------------------------
    def login(self, name: str, password: str, address: str | None) -> str:
        """Log ``name`` in from client ``address`` (None: unknown); returns a new session's token
        (for a cookie; only its hash is stored). Raises LoginRefused: too many failed tries for
        this name or from this address (checked before the password), a wrong name or password
        (one message for both), a disabled account; StoreError."""
        keys = login_keys(name, address)
        stamp = self.throttle.start(keys)
        outcome = "neutral"
        try:
            row = rows.get_account(self.store, name) if isinstance(name, str) and 0 < len(name) <= 200 else None
            matched = self._verify(row.password_hash if row else None, password)
            if row is None or not matched:
                outcome = "failed"
                raise LoginRefused(WRONG)
            if row.disabled:
                raise LoginRefused(DISABLED)
            token = self._open_session(row.name, address)
            self._rehash(row, password)
            outcome = "success"
            return token
        finally:
            self.throttle.settle(keys, stamp, outcome)

    def session(self, token: str | None) -> Account | None:
        """The account of the open session ``token`` names; None for no token, an unknown or
        ended session, one opened SESSION_DAYS ago or more (the cookie's age: a stolen cookie
        is not good forever), or a disabled account. Cached (see the module's docstring). Raises
        StoreError."""
        if not isinstance(token, str) or not token or len(token) > _MAX_KEY:
            return None
        hashed = rows.token_hash(token)
        now = self.clock()
        with self._lock:
            kept = self._sessions.get(hashed)
            if kept is not None and now - kept[0] < SESSION_TTL:
                self._sessions.move_to_end(hashed)
                return kept[1]
            generation = self._generation
        since = (datetime.now(UTC) - timedelta(days=SESSION_DAYS)).isoformat(timespec="milliseconds")
        row = rows.session_account(self.store, hashed, since)
        account = _public(row) if row is not None else None
        with self._lock:
            if account is None:
                self._sessions.pop(hashed, None)
            elif generation == self._generation:
                self._sessions[hashed] = (now, account)
                self._sessions.move_to_end(hashed)
                while len(self._sessions) > SESSION_CACHE_SIZE:
                    self._sessions.popitem(last=False)
        return account

    def logout(self, token: str | None) -> None:
        """End the session ``token`` names, and only it (the account's other sessions stay
        open); nothing for an unknown or ended one. Raises StoreError."""
        if not isinstance(token, str) or not token or len(token) > _MAX_KEY:
            return
        hashed = rows.token_hash(token)
        rows.end_session(self.store, hashed)
        self._invalidate(token_hash=hashed)

    # -- invite links ---------------------------------------------------------------------------
    def invite(self, name: str | None = None, *, study: str | None = None, quota: int | None = None,
               completion_code: str | None = None, expires: timedelta | None | object = _DEFAULT) -> str:
        """A new invite link's secret token (only its hash is stored). With ``name``: a link
        that logs that account in; a ``quota`` or ``completion_code`` given here become the
        account's (with a quota and no code, one is generated when it has none). With ``study``:
        a link for every participant of a crowd study, each getting an account of their own on
        first use, with this ``quota`` and ``completion_code`` (both needed: the platform gave
        the code, and the quota says when to show it). The link ends ``expires`` after now (None:
        never; not given: a study link after STUDY_LINK_DAYS, an account's never). Raises
        AccountError for both or neither of name and study, an unknown or disabled account, a bad
        study name, quota, code or expiry; StoreError."""
        if (name is None) == (study is None):
            raise AccountError("An invite is for one account (annotators invite NAME) or for a study "
                               "(annotators invite --study STUDY --quota N --completion-code C): give one of the two.")
        quota = _check_quota(quota)
        completion_code = _check_code(completion_code)
        if expires is _DEFAULT:
            expires = timedelta(days=STUDY_LINK_DAYS) if study is not None else None
        if expires is not None and (not isinstance(expires, timedelta) or expires <= timedelta(0)):
            raise AccountError(f"An invite link's expiry must be a time after now (e.g. --expires 7d), not {expires}.")
        ends = (datetime.now(UTC) + expires).isoformat(timespec="milliseconds") if expires is not None else None
        token = secrets.token_urlsafe(32)
        if name is not None:
            row = rows.get_account(self.store, name)
            if row is None:
                raise AccountError(f"No account named {name!r}: add it first (python app.py annotators add "
                                   f"{name} --no-password), or `annotators list` to see them.")
            if row.disabled:
                raise AccountError(f"The account {name!r} is disabled: add a new account for this annotator.")
            if quota is not None or completion_code is not None:
                new_quota = quota if quota is not None else row.quota
                code = completion_code or row.completion_code
                if new_quota is not None and code is None:
                    code = new_completion_code()
                rows.set_terms(self.store, name, quota=new_quota, completion_code=code)
                self._invalidate(account=name)
            rows.add_invite(self.store, rows.token_hash(token), account=name, quota=quota,
                            completion_code=completion_code, expires=ends)
            return token
        _check_study(study)
        if completion_code is None or quota is None:
            raise AccountError(f"A study link needs the completion code the crowd platform gave (--completion-code C) "
                               f"and the votes each participant casts before it is shown (--quota N): "
                               f"annotators invite --study {study} --quota 20 --completion-code C.")
        rows.add_invite(self.store, rows.token_hash(token), study=study, quota=quota, completion_code=completion_code,
                        expires=ends)
        return token

    def revoke(self, token: str) -> None:
        """Disable the invite link ``token`` (sessions it opened stay open; disable the account
        to end them). Raises AccountError for an unknown token, StoreError."""
        if not isinstance(token, str) or not token or not rows.disable_invite(self.store, rows.token_hash(token)):
            raise AccountError("No invite link with that token: copy it whole, from /invite/ to before any '?'.")

    def revoke_links(self, *, name: str | None = None, study: str | None = None) -> int:
        """Disable every open invite link of account ``name`` or of ``study`` (one of the two);
        returns how many. Raises AccountError for neither or both, an unknown account or study;
        StoreError."""
        if (name is None) == (study is None):
            raise AccountError("Revoke the links of one account (annotators revoke NAME) or of one study "
                               "(annotators revoke --study STUDY): give one of the two.")
        links = self.links()
        if name is not None and not any(c.invite.account == name for c in links):
            raise AccountError(f"No invite link was made for {name!r}: `annotators links` lists them.")
        if study is not None and not any(c.invite.study == study for c in links):
            raise AccountError(f"No invite link was made for the study {study!r}: `annotators links` lists them.")
        return rows.disable_invites(self.store, account=name, study=study)

    def links(self) -> list[rows.InviteCount]:
        """Every invite link, oldest first, with the accounts it logged in (a study link: the
        participants' accounts it made) and the sessions it opened. Raises StoreError."""
        return rows.list_invites(self.store)

    def redeem(self, token: str, params: Mapping[str, str], address: str | None) -> tuple[str, Account]:
        """Open a session through the invite link ``token`` (with the link's query ``params``)
        from client ``address``; returns the session's token and its account. A study link makes
        the account ``STUDY:ID`` (ID: ``params["PROLIFIC_PID"]``, or ``params["participant"]``)
        on first use, with the platform's ids present (PLATFORM_IDS), and reuses it after.
        Raises LoginRefused: too many failures from this address, an unknown or disabled link
        (counted as a failure), a study link without a participant id, a disabled account;
        StoreError."""
        keys = [("address", address)] if address else []
        stamp = self.throttle.start(keys, LINKS_HELD_BACK)
        outcome = "neutral"
        try:
            ok = isinstance(token, str) and 0 < len(token) <= _MAX_KEY
            invite = rows.get_invite(self.store, rows.token_hash(token)) if ok else None
            if invite is None or invite.disabled:
                outcome = "failed"
                raise LoginRefused(BAD_INVITE)
            if invite.expires is not None and datetime.fromisoformat(invite.expires) <= datetime.now(UTC):
                outcome = "failed"
                raise LoginRefused(EXPIRED)
            if invite.account is not None:
                row = rows.get_account(self.store, invite.account)
            else:
                row = self._study_account(invite, params, address)
            if row is None or row.disabled:
                raise LoginRefused(DISABLED)
            session = self._open_session(row.name, address, invite=invite.id)
            return session, _public(row)  # neutral: a success clears no address's failures
        finally:
            self.throttle.settle(keys, stamp, outcome)

    def completion_code(self, name: str, votes: int) -> str | None:
        """The account's completion code once it has cast ``votes`` >= its quota; None before,
        without a quota or code, or for an unknown account. Raises StoreError."""
        account = self.get(name)
        return account.code_after(votes) if account is not None else None

    # -- inside -----------------------------------------------------------------------------------
    def _study_account(self, invite: rows.InviteRow, params: Mapping[str, str],
                       address: str | None) -> rows.AccountRow:
        """The account of the participant a study link names (made on first use): the platform's
        ids in its form (Prolific's: 24 hexadecimal digits; ``participant``: letters, digits and
        '._-@'), and at most ``study_accounts_per_address`` new accounts an hour from one address."""
        pid = next((params[k] for k in PARTICIPANT_KEYS if params.get(k)), None)
        if pid is None:
            raise LoginRefused("This study link lacks your participant id (PROLIFIC_PID): open the study from "
                               "Prolific, which adds it to the link.")
        ids = {k: params[k] for k in (*PLATFORM_IDS, "participant") if params.get(k)}
        bad = [k for k, v in ids.items() if not isinstance(v, str) or not _PLATFORM_ID.fullmatch(v)
               or (k in PLATFORM_IDS and not _PROLIFIC_ID.fullmatch(v))]
        if bad:
            form = ("24 hexadecimal digits" if bad[0] in PLATFORM_IDS
                    else "letters, digits, '.', '_', '-', '@'; at most 64")
            raise LoginRefused(f"This study link's {bad[0]} is not an id the platform gives ({form}): open the "
                               "study from Prolific, which fills it in.")
        name = f"{invite.study}:{pid}"
        cap = self.study_accounts_per_address
        if cap and address and rows.get_account(self.store, name) is None:
            since = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="milliseconds")
            if rows.new_study_accounts(self.store, invite.study, address, since) >= cap:
                raise LoginRefused(TOO_MANY_PARTICIPANTS)
        row = rows.study_account(self.store, name, study=invite.study, quota=invite.quota,
                                 completion_code=invite.completion_code, participant=ids)
        self._invalidate()
        return row

    def _open_session(self, name: str, address: str | None, *, invite: int | None = None) -> str:
        token = secrets.token_urlsafe(32)
        if not rows.add_session(self.store, rows.token_hash(token), name, address, invite=invite):
            raise LoginRefused(DISABLED)  # disabled between the check and now
        return token

    def _verify(self, password_hash: str | None, password: object) -> bool:
        """Whether ``password`` matches ``password_hash``; without a hash (an unknown name, an
        invite-only account) a dummy one is verified, so the time taken is the same."""
        with self._lock:
            if self._dummy_hash is None:
                self._dummy_hash = self.hasher.hash(secrets.token_urlsafe(16))
            dummy = self._dummy_hash
        try:
            matched = self.hasher.verify(password_hash or dummy, password if isinstance(password, str) else "")
        except (VerificationError, InvalidHashError):
            matched = False
        return bool(matched) and password_hash is not None

    def _rehash(self, row: rows.AccountRow, password: str) -> None:
        """Store the password's hash anew when it was made with older parameters than ``hasher``'s."""
        if row.password_hash and self.hasher.check_needs_rehash(row.password_hash):
            rows.set_password_hash(self.store, row.name, self.hasher.hash(password))

    def _invalidate(self, *, account: str | None = None, token_hash: str | None = None) -> None:
        """Drop what the caches hold that a write of this process changed: ``any``'s answer, and
        the cached sessions of ``account`` or the one of ``token_hash``."""
        with self._lock:
            self._generation += 1
            self._any = None
            if token_hash is not None:
                self._sessions.pop(token_hash, None)
            if account is not None:
                for hashed in [h for h, (_, a) in self._sessions.items() if a.name == account]:
                    del self._sessions[hashed]


class SharedLogin:
    """One shared name and password for the whole team (``--auth USER:PASSWORD``), used while no
    account exists; the same ``login``/``session``/``logout`` as ``Accounts``. Its sessions are
    kept in memory (a restart logs everyone out) and are all the one Account named ``user`` with
    ``role`` (ADMIN: the whole app). Name and password are compared in constant time (as sha256
    digests: the password itself is not kept), and failed tries are throttled as ``Accounts``
    throttles them. Thread-safe; the clock is injectable."""

    def __init__(self, user: str, password: str, *, role: str = ADMIN, clock: Callable[[], float] = time.monotonic):
        if role not in ROLES:
            raise AccountError(f"Unknown role {role!r}: one of {', '.join(ROLES)}.")
        self.account = Account(user, role)
        self._user = hashlib.sha256(user.encode("utf-8")).digest()
        self._password = hashlib.sha256(password.encode("utf-8")).digest()
        self.throttle = Throttle(clock, free_by_kind={"account": ACCOUNT_FAILURES})
        self.clock = clock
        self._sessions: OrderedDict[str, float] = OrderedDict()  # token hash -> when it was opened
        self._lock = threading.Lock()

    def any(self) -> bool:
        """Always True: with a shared password, every visitor logs in."""
        return True

    def login(self, name: str, password: str, address: str | None) -> str:
        """A new session's token for the right name and password. Raises LoginRefused: too many
        failed tries for this name or from this address, or a wrong name or password (one
        message for both)."""
        keys = login_keys(name, address)
        stamp = self.throttle.start(keys)
        outcome = "neutral"
        try:
            given = [hashlib.sha256(str(v).encode("utf-8")).digest() for v in (name, password)]
            matched = hmac.compare_digest(given[0], self._user) & hmac.compare_digest(given[1], self._password)
            if not matched:
                outcome = "failed"
                raise LoginRefused(WRONG)
            token = secrets.token_urlsafe(32)
            with self._lock:
                self._sessions[rows.token_hash(token)] = self.clock()
                while len(self._sessions) > SESSION_CACHE_SIZE:
                    self._sessions.popitem(last=False)  # the oldest session ends
            outcome = "success"
            return token
        finally:
            self.throttle.settle(keys, stamp, outcome)

    def session(self, token: str | None) -> Account | None:
        """The shared account for an open session's token, opened less than SESSION_DAYS ago;
        None otherwise."""
        if not isinstance(token, str) or not token or len(token) > _MAX_KEY:
            return None
        with self._lock:
            opened = self._sessions.get(rows.token_hash(token))
        return self.account if opened is not None and self.clock() - opened < SESSION_DAYS * 86400 else None

    def logout(self, token: str | None) -> None:
        """End the session ``token`` names, and only it."""
        if isinstance(token, str) and token and len(token) <= _MAX_KEY:
            with self._lock:
                self._sessions.pop(rows.token_hash(token), None)


def login_keys(name: object, address: str | None) -> list[Key]:
    """What a login try counts against: the name from this address, the name from anywhere (held
    back only past ACCOUNT_FAILURES) and the address (a burst of guesses at many names)."""
    typed = str(name)[:_MAX_KEY]
    return [("pair", f"{address or ''}|{typed}"), ("account", typed)] + ([("address", address)] if address else [])


def new_completion_code() -> str:
    """CODE_LENGTH random upper-case letters and digits."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME or name != name.strip():
        raise AccountError(f"An account name has 1 to {MAX_NAME} characters, without spaces at its ends, "
                           f"e.g. annotators add ana (not {str(name)[:80]!r}).")
    if ":" in name:
        raise AccountError(f"An account name cannot hold ':' (a study's participants are named STUDY:ID): "
                           f"pick another name than {name!r}.")
    if not name.isprintable():
        raise AccountError(f"The account name {name!r} holds a control character (a tab, a line break): "
                           "type it without.")


def _check_study(study: object) -> None:
    if (not isinstance(study, str) or not 0 < len(study) <= MAX_NAME or study != study.strip() or ":" in study
            or not study.isprintable()):
        raise AccountError(f"A study's name has 1 to {MAX_NAME} printable characters, no ':' and no spaces at its "
                           f"ends, e.g. --study pilot-1 (not {str(study)[:80]!r}).")


def _check_password(password: object) -> None:
    if password is None:
        return
    if (not isinstance(password, str) or len(password) < MIN_PASSWORD or password != password.strip()
            or len(password) > MAX_PASSWORD):
        raise AccountError(f"A password has {MIN_PASSWORD} to {MAX_PASSWORD} characters, without spaces at its "
                           "ends: pass another --password, or --no-password for an account that logs in by invite "
                           "link only.")


def _check_quota(quota: object) -> int | None:
    if quota is None:
        return None
    if isinstance(quota, bool) or not isinstance(quota, int) or quota < 1:
        raise AccountError(f"A quota is the number of votes to cast, at least 1 (--quota 20), not {quota!r}.")
    return quota


def _check_code(code: object) -> str | None:
    if code is None:
        return None
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise AccountError(f"A completion code has 1 to 64 letters, digits or signs, without spaces "
                           f"(--completion-code C0DE1234), not {str(code)[:80]!r}.")
    return code
