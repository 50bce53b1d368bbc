"""Annotator accounts (``annotation.accounts``) on a real SQLite file: adding, listing and
disabling accounts, passwords kept as Argon2 hashes, logins and their sessions, the throttle of
failed tries (per name and per address, on an injected clock), invite links per annotator and
per study, completion codes, and what the schema itself refuses.

Argon2 runs with cheap parameters here (``FAST``): the tests are about what is stored and when a
try is refused, not about the hash's cost."""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime, timedelta

import pytest
from argon2 import PasswordHasher

from annotation import accounts as accounts_mod
from annotation.accounts import (
    ACCOUNT_FAILURES,
    ADMIN,
    ANNOTATOR,
    BAD_INVITE,
    DISABLED,
    EXPIRED,
    FIRST_DELAY,
    FREE_FAILURES,
    WRONG,
    Account,
    Accounts,
    SharedLogin,
)
from annotation.errors import AccountError, LoginRefused
from data import accounts as rows
from data import migrations, sql
from data.store import Store

FAST = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}
PASSWORD = "correct-horse"
#: Prolific's ids: 24 hexadecimal digits each
PID, STUDY, SESSION = "5f1a2b3c4d5e6f7a8b9c0d1e", "60a0b1c2d3e4f5a6b7c8d9e0", "6a1b2c3d4e5f6a7b8c9d0e1f"
HELD_BACK = r"Too many failed logins for this account \(or from this address\): try again in (\d+) s\."


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingHasher(PasswordHasher):
    """A cheap hasher that counts its verifications."""

    def __init__(self) -> None:
        super().__init__(**FAST)
        self.verified = 0
        self._count_lock = threading.Lock()

    def verify(self, hash, password):  # noqa: A002 (argon2's own parameter names)
        with self._count_lock:
            self.verified += 1
        return super().verify(hash, password)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hasher() -> CountingHasher:
    return CountingHasher()


@pytest.fixture
def accounts(store, clock, hasher) -> Accounts:
    return Accounts(store, clock=clock, hasher=hasher)


def refused_wait(err: pytest.ExceptionInfo) -> int:
    """The seconds a held-back try is told to wait."""
    found = re.fullmatch(HELD_BACK, str(err.value))
    assert found, f"not the throttle's message: {err.value}"
    return int(found.group(1))


# -- accounts ---------------------------------------------------------------------------------
def test_add_list_get_and_disable(accounts):
    ana = accounts.add("ana", PASSWORD)
    bob = accounts.add("bob", role="admin", quota=3, completion_code="C0DE1234")
    assert ana == Account("ana", "annotator", False, None, None, None, {})
    assert bob == Account("bob", "admin", False, 3, "C0DE1234", None, {}) and bob.is_admin
    assert accounts.list() == [ana, bob]
    assert accounts.get("bob") == bob and accounts.get("carl") is None
    assert not hasattr(ana, "password_hash"), "front ends never see a hash"

    accounts.disable("ana")
    assert [(a.name, a.disabled) for a in accounts.list()] == [("ana", True), ("bob", False)]
    with pytest.raises(AccountError, match="No account named 'carl'.*annotators list"):
        accounts.disable("carl")


def test_a_quota_without_a_code_gets_a_generated_one(accounts):
    codes = {accounts.add(f"ann{i}", quota=5).completion_code for i in range(4)}
    assert all(re.fullmatch(r"[A-Z0-9]{8}", c) for c in codes), codes
    assert len(codes) == 4, "each account gets a code of its own"
    assert accounts.add("no-quota").completion_code is None


def test_the_password_is_stored_as_an_argon2_hash_only(accounts, store):
    accounts.add("ana", PASSWORD)
    stored = rows.get_account(store, "ana").password_hash
    assert stored != PASSWORD and stored.startswith("$argon2id$")
    assert PasswordHasher().verify(stored, PASSWORD)
    assert rows.get_account(store, "ana").password_hash == stored
    if store.dialect == sql.SQLITE:  # and in its file, write-ahead log included
        store.checkpoint()
        files = [store.path, *store.path.parent.glob(store.path.name + "-*")]
        assert not any(PASSWORD.encode() in f.read_bytes() for f in files), "the password itself is in the file"
    else:
        dump = store.db.execute("select string_agg(t::text, ' ') from accounts t").fetchone()[0]
        assert PASSWORD not in dump, "the password itself is in the table"


def test_a_hash_made_with_other_parameters_logs_in_and_is_made_again_with_the_apps(store):
    """The app hashes with OWASP's Argon2id parameters (``password_hasher``: a crowd logging in at
    once no longer waits behind 150 ms of CPU a login). An account hashed before, with the
    library's heavier defaults, still logs in, and its hash is made anew with the app's."""
    from argon2 import extract_parameters

    from annotation.accounts import password_hasher

    app_params = extract_parameters(password_hasher().hash(PASSWORD))
    assert (app_params.memory_cost, app_params.time_cost, app_params.parallelism) == (19 * 1024, 2, 1)
    accounts = Accounts(store)  # the app's own hasher
    rows.add_account(store, "ana", password_hash=PasswordHasher().hash(PASSWORD))
    old = extract_parameters(rows.get_account(store, "ana").password_hash)
    assert old != app_params
    assert accounts.session(accounts.login("ana", PASSWORD, None)).name == "ana"
    assert extract_parameters(rows.get_account(store, "ana").password_hash) == app_params
    assert accounts.session(accounts.login("ana", PASSWORD, None)).name == "ana"  # with the new hash


@pytest.mark.parametrize("name, password, role, fix", [
    ("", PASSWORD, "annotator", "1 to 64 characters"),
    (" ana", PASSWORD, "annotator", "without spaces at its ends"),
    ("a" * 65, PASSWORD, "annotator", "1 to 64 characters"),
    ("study:ana", PASSWORD, "annotator", "cannot hold ':'"),
    ("ana\nbob", PASSWORD, "annotator", "control character"),
    ("ana", "short", "annotator", "--no-password"),
    ("ana", " padded-password", "annotator", "without spaces at its ends"),
    ("ana", PASSWORD, "owner", "Unknown role 'owner'.*--admin"),
])
def test_bad_input_is_refused_naming_the_fix(accounts, name, password, role, fix):
    with pytest.raises(AccountError, match=fix):
        accounts.add(name, password, role=role)
    assert accounts.list() == []


@pytest.mark.parametrize("quota, code", [(0, None), (-1, None), (True, None), ("5", None), (3, "has space"),
                                         (3, "")])
def test_a_bad_quota_or_code_is_refused(accounts, quota, code):
    with pytest.raises(AccountError, match="--quota|--completion-code"):
        accounts.add("ana", quota=quota, completion_code=code)


def test_a_name_is_taken_once(accounts):
    accounts.add("ana", PASSWORD)
    with pytest.raises(AccountError, match="exists already"):
        accounts.add("ana", "another-password")
    assert len(accounts.list()) == 1


def test_any_says_whether_an_enabled_account_exists(accounts, store, clock):
    assert accounts.any() is False
    accounts.add("ana", PASSWORD)
    assert accounts.any() is True, "a write of this process is seen at once"
    accounts.disable("ana")
    assert accounts.any() is False

    elsewhere = Accounts(store, hasher=PasswordHasher(**FAST))  # another process, say the CLI
    elsewhere.add("bob", PASSWORD)
    assert accounts.any() is False, "kept for a few seconds"
    clock.advance(accounts_mod.ANY_TTL)
    assert accounts.any() is True


# -- logins and sessions ----------------------------------------------------------------------
def test_login_opens_a_session_of_the_account(accounts, store):
    ana = accounts.add("ana", PASSWORD)
    token = accounts.login("ana", PASSWORD, "10.0.0.1")
    assert len(token) >= 43 and accounts.session(token) == ana
    assert accounts.session("not-a-token") is None and accounts.session("") is None and accounts.session(None) is None
    stored = store.db.execute("select token_hash, address from sessions").fetchall()
    assert stored == [(rows.token_hash(token), "10.0.0.1")], "only the token's hash is stored"


def test_wrong_password_and_unknown_name_get_one_message_and_both_verify(accounts, hasher):
    accounts.add("ana", PASSWORD)
    accounts.add("bob")  # invite-only: no password logs it in
    for name, password in (("ana", "wrong-password"), ("nobody", PASSWORD), ("bob", ""), ("bob", PASSWORD)):
        before = hasher.verified
        with pytest.raises(LoginRefused) as err:
            accounts.login(name, password, None)
        assert str(err.value) == WRONG
        assert hasher.verified == before + 1, f"{name}: a hash was verified, so the time tells nothing"


def test_a_disabled_account_cannot_log_in_and_its_sessions_end(accounts, store):
    accounts.add("ana", PASSWORD)
    first, second = (accounts.login("ana", PASSWORD, "10.0.0.1") for _ in range(2))
    assert accounts.session(first) is not None  # now cached
    accounts.disable("ana")
    assert accounts.session(first) is None and accounts.session(second) is None
    assert rows.open_sessions(store, "ana") == 0
    with pytest.raises(LoginRefused) as err:
        accounts.login("ana", PASSWORD, "10.0.0.1")
    assert str(err.value) == DISABLED
    with pytest.raises(LoginRefused, match="Wrong name or password"):
        accounts.login("ana", "wrong-password", "10.0.0.1")  # no telling it is disabled without the password


def test_logout_ends_only_its_own_session(accounts, store):
    ana = accounts.add("ana", PASSWORD)
    laptop, phone = accounts.login("ana", PASSWORD, "10.0.0.1"), accounts.login("ana", PASSWORD, "10.0.0.2")
    assert laptop != phone and accounts.session(laptop) == ana == accounts.session(phone)
    accounts.logout(laptop)
    assert accounts.session(laptop) is None, "the cached session went with the logout"
    assert accounts.session(phone) == ana
    assert rows.open_sessions(store, "ana") == 1
    accounts.logout(laptop)  # twice: nothing more happens
    accounts.logout("unknown")
    assert accounts.session(phone) == ana


def test_a_session_ends_on_the_server_when_its_cookie_would(accounts, store, clock, monkeypatch):
    """Issue 38 (F35): server-side sessions never expired: a copied cookie was good forever."""
    ana = accounts.add("ana", PASSWORD)
    token = accounts.login("ana", PASSWORD, "10.0.0.1")
    assert accounts.session(token) == ana
    monkeypatch.setattr(accounts_mod, "SESSION_DAYS", 0.2 / 86400)  # 0.2 s
    time.sleep(0.3)
    fresh = Accounts(store, clock=clock, hasher=PasswordHasher(**FAST))  # another process: nothing cached
    assert fresh.session(token) is None, "older than SESSION_DAYS: ended"
    assert fresh.session(fresh.login("ana", PASSWORD, "10.0.0.1")) == ana, "a new login opens a new one"
    monkeypatch.setattr(accounts_mod, "SESSION_DAYS", 14)
    shared = SharedLogin("team", PASSWORD, clock=clock)
    kept = shared.login("team", PASSWORD, "10.0.0.1")
    clock.now += 14 * 86400 - 1
    assert shared.session(kept) == shared.account
    clock.now += 1
    assert shared.session(kept) is None, "--auth's sessions end too"


def test_a_disable_in_another_process_ends_cached_sessions_within_the_ttl(accounts, store, clock):
    accounts.add("ana", PASSWORD)
    token = accounts.login("ana", PASSWORD, None)
    assert accounts.session(token) is not None
    Accounts(store, hasher=PasswordHasher(**FAST)).disable("ana")
    clock.advance(accounts_mod.SESSION_TTL)
    assert accounts.session(token) is None


# -- the throttle -----------------------------------------------------------------------------
def test_300_wrong_passwords_then_the_right_one_is_refused_until_the_delay_passed(accounts, clock, hasher):
    accounts.add("ana", PASSWORD)
    held_back = 0
    for _ in range(300):
        with pytest.raises(LoginRefused) as err:
            accounts.login("ana", "wrong-password", "10.0.0.1")
        held_back += str(err.value) != WRONG
    assert held_back == 295 and hasher.verified == 5, "held back before the password is verified"
    with pytest.raises(LoginRefused) as err:
        accounts.login("ana", PASSWORD, "10.0.0.1")  # the guessing address: held back, the right password too
    assert refused_wait(err) == 2
    clock.advance(1.5)
    with pytest.raises(LoginRefused) as err:
        accounts.login("ana", PASSWORD, "10.0.0.1")
    assert refused_wait(err) == 1
    # issue 38 (F36): five wrong passwords from one place held the name back from every address,
    # so with --auth one person locked a team out; the name's owner elsewhere logs in
    assert accounts.session(accounts.login("ana", PASSWORD, "10.0.0.2")).name == "ana"
    clock.advance(0.5)
    assert accounts.session(accounts.login("ana", PASSWORD, "10.0.0.1")).name == "ana"


def test_guesses_at_a_name_from_many_addresses_hold_it_back_past_the_higher_count(accounts, clock):
    """Issue 38 (F36): the account-wide hold stays, past ACCOUNT_FAILURES rather than FREE_FAILURES."""
    accounts.add("ana", PASSWORD)
    for k in range(ACCOUNT_FAILURES):  # four guesses from each address: none of them is held back
        with pytest.raises(LoginRefused, match=WRONG):
            accounts.login("ana", "wrong-password", f"10.0.{k // 4}.{k % 4}")
    with pytest.raises(LoginRefused, match=HELD_BACK):
        accounts.login("ana", PASSWORD, "10.9.9.9")
    clock.advance(FIRST_DELAY + 0.1)
    assert accounts.login("ana", PASSWORD, "10.9.9.9"), "the hold-back ends; the success clears the name's failures"
    with pytest.raises(LoginRefused, match=WRONG):
        accounts.login("ana", "wrong-password", "10.9.9.9")


def test_the_delay_doubles_with_each_further_failure_up_to_15_minutes(accounts, clock):
    accounts.add("ana", PASSWORD)
    for _ in range(5):
        with pytest.raises(LoginRefused, match="Wrong"):
            accounts.login("ana", "wrong-password", None)
    waits = []
    for _ in range(12):
        with pytest.raises(LoginRefused) as err:
            accounts.login("ana", "wrong-password", None)
        waits.append(refused_wait(err))
        clock.advance(waits[-1])
        with pytest.raises(LoginRefused, match="Wrong"):  # the delay passed: this one is verified, and fails
            accounts.login("ana", "wrong-password", None)
    assert waits == [2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900]


def test_failures_leave_the_window_and_a_success_clears_the_account(accounts, clock):
    accounts.add("ana", PASSWORD)
    for _ in range(4):
        with pytest.raises(LoginRefused, match="Wrong"):
            accounts.login("ana", "wrong-password", None)
    clock.advance(accounts_mod.FAILURE_WINDOW)
    for _ in range(4):  # four more, 15 minutes later: still not five within the window
        with pytest.raises(LoginRefused, match="Wrong"):
            accounts.login("ana", "wrong-password", None)
    accounts.login("ana", PASSWORD, None)
    for _ in range(5):  # the success cleared them: five more are verified
        with pytest.raises(LoginRefused, match="Wrong"):
            accounts.login("ana", "wrong-password", None)
    with pytest.raises(LoginRefused, match="Too many"):
        accounts.login("ana", PASSWORD, None)


def test_an_address_is_throttled_across_names_and_a_success_does_not_clear_it(accounts):
    accounts.add("ana", PASSWORD)
    accounts.add("bob", PASSWORD)
    for i in range(4):
        with pytest.raises(LoginRefused, match="Wrong"):
            accounts.login(f"guess{i}", PASSWORD, "10.0.0.9")
    accounts.login("ana", PASSWORD, "10.0.0.9")  # fine, and the address keeps its four failures
    with pytest.raises(LoginRefused, match="Wrong"):
        accounts.login("guess4", PASSWORD, "10.0.0.9")
    with pytest.raises(LoginRefused) as err:
        accounts.login("bob", PASSWORD, "10.0.0.9")
    assert refused_wait(err) == 2
    assert accounts.login("bob", PASSWORD, "10.0.0.10"), "another address is not held back"


def test_tries_at_once_cannot_slip_past_the_count(store, clock, hasher):
    Accounts(store, hasher=hasher).add("ana", PASSWORD)
    shared = Accounts(store, clock=clock, hasher=hasher)
    hasher.verified = 0
    start = threading.Barrier(20)
    outcomes: list[str] = []

    def guess() -> None:
        start.wait()
        try:
            shared.login("ana", "wrong-password", None)
        except LoginRefused as exc:
            outcomes.append("verified" if str(exc) == WRONG else "held back")
        finally:
            store.close()

    threads = [threading.Thread(target=guess) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["held back"] * 15 + ["verified"] * 5 and hasher.verified == 5


def test_a_lab_behind_one_address_logs_in_at_once_and_a_burst_of_guesses_from_it_is_held_back(store, clock,
                                                                                                hasher):
    """Thirty people behind one address log in in the same instant: none is held back by the
    others' logins in flight. Guesses at many names from that address count as they fail."""
    names = [f"ann{k}" for k in range(30)]
    setup = Accounts(store, hasher=hasher)
    for name in names:
        setup.add(name, PASSWORD)
    shared = Accounts(store, clock=clock, hasher=hasher)
    start = threading.Barrier(len(names))
    outcomes: list[str] = []

    def log_in(name: str) -> None:
        start.wait()
        try:
            shared.login(name, PASSWORD, "10.0.0.7")
            outcomes.append("in")
        except LoginRefused as exc:
            outcomes.append(str(exc))
        finally:
            store.close()

    threads = [threading.Thread(target=log_in, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == ["in"] * len(names)
    for k in range(FREE_FAILURES):
        with pytest.raises(LoginRefused, match=WRONG):
            shared.login(names[k], "wrong-password", "10.0.0.7")
    with pytest.raises(LoginRefused, match=HELD_BACK):
        shared.login(names[-1], "wrong-password", "10.0.0.7")


def test_failed_tries_are_counted_by_every_process_on_the_database(store, clock, hasher):
    """Two services with connections of their own on one database, as two app processes behind a
    balancer are: guesses spread over both are held back as guesses at one would be."""
    Accounts(store, hasher=hasher).add("ana", PASSWORD)
    other = Store(store.url or store.path)
    try:
        one, two = Accounts(store, clock=clock, hasher=hasher), Accounts(other, clock=clock, hasher=hasher)
        for k in range(FREE_FAILURES):
            with pytest.raises(LoginRefused, match=WRONG):
                (one, two)[k % 2].login("ana", "wrong-password", "10.0.0.1")
        for service in (one, two):
            with pytest.raises(LoginRefused, match=HELD_BACK):
                service.login("ana", PASSWORD, "10.0.0.1")
        clock.now += FIRST_DELAY + 0.1
        assert two.login("ana", PASSWORD, "10.0.0.1"), "the hold-back ends for both"
    finally:
        other.close_all()


# -- invite links -----------------------------------------------------------------------------
def test_an_annotator_invite_logs_that_account_in_and_sets_its_quota(accounts, store):
    accounts.add("bob")
    link = accounts.invite("bob", quota=3)
    bob = accounts.get("bob")
    assert bob.quota == 3 and re.fullmatch(r"[A-Z0-9]{8}", bob.completion_code)
    session, account = accounts.redeem(link, {}, "10.0.0.1")
    assert account == bob and accounts.session(session) == bob
    again, _ = accounts.redeem(link, {}, "10.0.0.1")
    assert again != session and rows.open_sessions(store, "bob") == 2
    assert store.db.execute("select count(*) from invites where token_hash = ?",
                            [rows.token_hash(link)]).fetchone() == (1,)
    assert not store.db.execute("select 1 from invites where token_hash = ?", [link]).fetchone()


def test_a_study_invite_makes_one_account_per_participant_with_the_platform_ids(accounts):
    link = accounts.invite(study="pilot", quota=2, completion_code="C0DE1234")
    params = {"PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": SESSION, "utm_source": "mail"}
    session, account = accounts.redeem(link, params, "10.0.0.1")
    assert account == Account(f"pilot:{PID}", "annotator", False, 2, "C0DE1234", "pilot",
                              {"PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": SESSION})
    assert accounts.session(session) == account
    _, again = accounts.redeem(link, {**params, "SESSION_ID": "6a1b2c3d4e5f6a7b8c9d0e20"}, "10.0.0.1")
    assert again == account, "the participant's account is reused, as first made"
    _, other = accounts.redeem(link, {"participant": "p-7"}, "10.0.0.3")
    assert other.name == "pilot:p-7" and other.participant == {"participant": "p-7"}
    assert [a.name for a in accounts.list()] == [f"pilot:{PID}", "pilot:p-7"]
    with pytest.raises(AccountError):  # nobody logs in with a password as a participant
        accounts.add(f"pilot:{PID}", PASSWORD)


@pytest.mark.parametrize("params", [{}, {"STUDY_ID": "s-1"}, {"PROLIFIC_PID": ""},
                                    {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"}, {"PROLIFIC_PID": "a" * 65}])
def test_a_study_link_without_a_participant_id_is_refused_naming_prolific_pid(accounts, params):
    link = accounts.invite(study="pilot", quota=2, completion_code="C0DE1234")
    with pytest.raises(LoginRefused, match="PROLIFIC_PID"):
        accounts.redeem(link, params, "10.0.0.1")
    assert accounts.list() == []


def test_an_unknown_revoked_or_disabled_invite_is_refused(accounts):
    accounts.add("bob")
    link = accounts.invite("bob")
    for token in ("made-up-token", "", link[:-1]):
        with pytest.raises(LoginRefused) as err:
            accounts.redeem(token, {}, None)
        assert str(err.value) == BAD_INVITE
    revoked = accounts.invite("bob")
    accounts.revoke(revoked)
    with pytest.raises(LoginRefused, match="not valid"):
        accounts.redeem(revoked, {}, None)
    accounts.disable("bob")
    with pytest.raises(LoginRefused) as err:
        accounts.redeem(link, {}, None)
    assert str(err.value) == DISABLED
    with pytest.raises(AccountError, match="No invite link"):
        accounts.revoke("made-up-token")


def test_an_expired_link_is_refused_and_a_study_link_ends_after_30_days_by_default(accounts, store):
    """Issue 38 (F28): a personal link logged in any number of times, forever."""
    accounts.add("bob")
    short = accounts.invite("bob", expires=timedelta(seconds=1))
    forever = accounts.invite("bob")
    study = accounts.invite(study="pilot", quota=2, completion_code="C0DE1234")
    first, second, third = (c.invite for c in accounts.links())
    assert first.expires is not None and second.expires is None, "bob's short link ends, the other never"
    lasts = datetime.fromisoformat(third.expires) - datetime.fromisoformat(third.created)
    assert abs(lasts - timedelta(days=30)) < timedelta(seconds=5), "a study link: 30 days"
    assert accounts.redeem(short, {}, "10.0.0.1")[1].name == "bob", "before it ends it logs in"
    time.sleep(1.1)
    with pytest.raises(LoginRefused) as err:
        accounts.redeem(short, {}, "10.0.0.1")
    assert str(err.value) == EXPIRED
    assert accounts.redeem(forever, {}, "10.0.0.1")[1].name == "bob", "a link with no end still works"
    with pytest.raises(AccountError, match="expiry"):
        accounts.invite("bob", expires=timedelta(0))
    assert accounts.redeem(study, {"PROLIFIC_PID": PID}, "10.0.0.1")[1].name == f"pilot:{PID}"


def test_revoking_an_account_s_or_a_study_s_links_stops_them_all(accounts):
    accounts.add("bob")
    bob = [accounts.invite("bob"), accounts.invite("bob")]
    study = [accounts.invite(study="pilot", quota=2, completion_code="C0DE1234") for _ in range(2)]
    other = accounts.invite(study="main", quota=2, completion_code="C0DE1234")
    assert accounts.revoke_links(name="bob") == 2 and accounts.revoke_links(study="pilot") == 2
    for link in (*bob, *study):
        with pytest.raises(LoginRefused, match="not valid"):
            accounts.redeem(link, {"PROLIFIC_PID": PID}, "10.0.0.1")
    assert accounts.redeem(other, {"PROLIFIC_PID": PID}, "10.0.0.1")[1].name == f"main:{PID}"
    assert accounts.revoke_links(name="bob") == 0, "none left open"
    with pytest.raises(AccountError, match="annotators links"):
        accounts.revoke_links(study="nope")
    states = [(c.invite.account or c.invite.study, c.invite.disabled, c.accounts) for c in accounts.links()]
    assert states == [("bob", True, 0), ("bob", True, 0), ("pilot", True, 0), ("pilot", True, 0), ("main", False, 1)]


def test_made_up_participant_ids_are_refused_and_one_address_makes_at_most_the_cap(store):
    """Issue 38 (F28): 20 made-up PROLIFIC_PIDs from 20 addresses gave 20 accounts, each with its
    quota and completion code. Prolific's ids have its form; one address makes at most the cap an hour."""
    accounts = Accounts(store, hasher=PasswordHasher(**FAST), study_accounts_per_address=3)
    link = accounts.invite(study="pilot", quota=2, completion_code="C0DE1234")
    for made_up in ("p123", "5f1a", "x" * 24, PID.upper()):
        with pytest.raises(LoginRefused, match="24 hexadecimal digits"):
            accounts.redeem(link, {"PROLIFIC_PID": made_up}, "10.0.0.1")
    with pytest.raises(LoginRefused, match="STUDY_ID"):
        accounts.redeem(link, {"PROLIFIC_PID": PID, "STUDY_ID": "s9"}, "10.0.0.1")
    pids = [f"{n:024x}" for n in range(1, 6)]
    for pid in pids[:3]:
        accounts.redeem(link, {"PROLIFIC_PID": pid}, "10.0.0.7")
    with pytest.raises(LoginRefused, match="Too many new participants"):
        accounts.redeem(link, {"PROLIFIC_PID": pids[3]}, "10.0.0.7")
    assert accounts.redeem(link, {"PROLIFIC_PID": pids[0]}, "10.0.0.7")[1].name == f"pilot:{pids[0]}", \
        "a participant who has an account comes back"
    assert accounts.redeem(link, {"PROLIFIC_PID": pids[3]}, "10.0.0.8")[1].name == f"pilot:{pids[3]}", \
        "another address is counted apart"
    assert [c.accounts for c in accounts.links()] == [4]
    lab = Accounts(store, hasher=PasswordHasher(**FAST), study_accounts_per_address=0)
    assert lab.redeem(link, {"PROLIFIC_PID": pids[4]}, "10.0.0.7")[1].name == f"pilot:{pids[4]}", "0: no cap"


def test_a_disabled_participant_cannot_come_back_through_the_study_link(accounts):
    link = accounts.invite(study="pilot", quota=2, completion_code="C0DE1234")
    _, account = accounts.redeem(link, {"PROLIFIC_PID": PID}, None)
    accounts.disable(account.name)
    with pytest.raises(LoginRefused) as err:
        accounts.redeem(link, {"PROLIFIC_PID": PID}, None)
    assert str(err.value) == DISABLED


def test_bad_invite_links_are_throttled_per_address(accounts, clock):
    accounts.add("bob")
    link = accounts.invite("bob")
    for i in range(5):
        with pytest.raises(LoginRefused, match="not valid"):
            accounts.redeem(f"guess-{i}", {}, "10.0.0.9")
    with pytest.raises(LoginRefused, match=r"Too many invalid invite links .*try again in 2 s"):
        accounts.redeem(link, {}, "10.0.0.9")
    assert accounts.redeem(link, {}, "10.0.0.10")[1].name == "bob"
    clock.advance(2)
    assert accounts.redeem(link, {}, "10.0.0.9")[1].name == "bob"


@pytest.mark.parametrize("name, study, quota, code, fix", [
    (None, None, None, None, "give one of the two"),
    ("bob", "pilot", None, None, "give one of the two"),
    ("carl", None, None, None, "No account named 'carl'.*annotators add carl"),
    (None, "pilot", 20, None, "--completion-code"),
    (None, "pilot", None, "C0DE1234", "--quota"),
    (None, "pi:lot", 20, "C0DE1234", "no ':'"),
    (None, "pilot", 0, "C0DE1234", "at least 1"),
])
def test_bad_invites_are_refused_naming_the_fix(accounts, name, study, quota, code, fix):
    accounts.add("bob")
    with pytest.raises(AccountError, match=fix):
        accounts.invite(name, study=study, quota=quota, completion_code=code)


def test_the_completion_code_comes_at_the_quota(accounts):
    accounts.add("ana", quota=3, completion_code="C0DE1234")
    accounts.add("bob")
    assert [accounts.completion_code("ana", n) for n in (0, 2, 3, 7)] == [None, None, "C0DE1234", "C0DE1234"]
    assert accounts.completion_code("bob", 100) is None, "no quota: no code"
    assert accounts.completion_code("nobody", 100) is None


# -- one shared password (--auth) ------------------------------------------------------------
def test_a_shared_login_opens_sessions_of_its_one_account(clock):
    shared = SharedLogin("team", PASSWORD, clock=clock)
    assert shared.any() and (ADMIN, ANNOTATOR) == ("admin", "annotator")
    first, second = (shared.login("team", PASSWORD, "10.0.0.1") for _ in range(2))
    assert shared.session(first) == Account("team", ADMIN) == shared.session(second)
    shared.logout(first)
    assert shared.session(first) is None and shared.session(second) == Account("team", ADMIN)
    assert shared.session("made-up") is None and shared.session(None) is None
    assert SharedLogin("lab", PASSWORD, role=ANNOTATOR).account.role == ANNOTATOR
    for name, password in (("team", "wrong-password"), ("other", PASSWORD), ("team", PASSWORD + "x")):
        with pytest.raises(LoginRefused) as err:
            shared.login(name, password, "10.0.0.2")
        assert str(err.value) == WRONG


def test_a_shared_login_is_throttled_too(clock):
    shared = SharedLogin("team", PASSWORD, clock=clock)
    for _ in range(300):
        with pytest.raises(LoginRefused):
            shared.login("team", "wrong-password", "10.0.0.1")
    with pytest.raises(LoginRefused) as err:
        shared.login("team", PASSWORD, "10.0.0.1")
    assert refused_wait(err) == 2
    assert shared.session(shared.login("team", PASSWORD, "10.0.0.3")) is not None, "the team elsewhere logs in"
    clock.advance(2)
    assert shared.session(shared.login("team", PASSWORD, "10.0.0.1")) is not None


# -- the schema -------------------------------------------------------------------------------
def test_the_migration_follows_m012_and_names_its_tables():
    names = [name for name, _ in migrations.MIGRATIONS]
    assert names[names.index("m012_output_versions") + 1] == "m013_accounts"
    assert migrations.TABLES["m013_accounts"] == ("accounts", "invites", "sessions")


def test_the_schema_keeps_accounts_sessions_and_invites(accounts, store):
    accounts.add("ana", PASSWORD)
    token = accounts.login("ana", PASSWORD, "10.0.0.1")
    link = accounts.invite("ana")
    accounts.logout(token)
    db = store.db
    hashed = rows.token_hash(token)
    refused = {
        "delete from accounts where name = 'ana'": "never deleted",
        "update accounts set name = 'anna' where name = 'ana'": "never renamed",
        "insert into accounts (name, role, created) values ('ana', 'annotator', 'now')": "exists",
        "insert into accounts (name, role, created) values ('zed', 'owner', 'now')": "(?i)check",
        "insert into accounts (name, role, password_hash, created) "
        "values ('zed', 'admin', 'plain', 'now')": "(?i)check",
        "delete from sessions": "never deleted",
        "update sessions set ended = 'later'": "only ends, once",
        "update sessions set account = 'ana', address = 'elsewhere'": "only ends, once",
        f"insert into sessions (token_hash, account, created) values ('{hashed}', 'ana', 'now')": "replaced",
        "delete from invites": "never deleted",
        "update invites set account = null, study = 'pilot'": "only gets disabled",
        "insert into invites (token_hash, study, created) values ('" + "0" * 64 + "', 'pilot', 'now')": "(?i)check",
        "insert into invites (token_hash, created) values ('" + "1" * 64 + "', 'now')": "(?i)check",
    }
    if store.dialect == sql.SQLITE:  # PostgreSQL has no replacing insert
        refused["insert or replace into accounts (id, name, role, created) "
                "values (1, 'zed', 'annotator', 'now')"] = "replaced"
    for statement, why in refused.items():
        with pytest.raises(sql.IntegrityError, match=why):
            with db.conn:
                db.execute(statement)
    assert [a.name for a in accounts.list()] == ["ana"]
    assert db.execute("select count(*), count(ended) from sessions").fetchone() == (1, 1)
    assert db.execute("select count(*) from invites where token_hash = ? and disabled = 0",
                      [rows.token_hash(link)]).fetchone() == (1,)
    assert accounts.redeem(link, {}, None)[1].name == "ana", "the invite still works"


def test_a_fresh_store_on_the_file_reads_the_accounts(accounts, store, tmp_path):
    accounts.add("ana", PASSWORD)
    token = accounts.login("ana", PASSWORD, None)
    again = Store(store.path)
    try:
        other = Accounts(again, hasher=PasswordHasher(**FAST))
        assert other.session(token).name == "ana" and other.any()
    finally:
        again.close()
