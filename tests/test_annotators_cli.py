"""``python app.py annotators add/list/disable/invite`` through ``app.main``, on a tmp database:
what is printed, the exit code, and that a printed link really logs in (read back with
``annotation.accounts.Accounts`` on the same file)."""

from __future__ import annotations

import getpass
import io
import re
import sys

import pytest
from argon2 import PasswordHasher

from annotation.accounts import Accounts
from annotation.errors import LoginRefused
from data.store import Store

PASSWORD = "correct-horse"
LINK = r"http://127\.0\.0\.1:7860/invite/([A-Za-z0-9_-]{43})"
PROLIFIC = r"\?PROLIFIC_PID=\{\{%PROLIFIC_PID%\}\}&STUDY_ID=\{\{%STUDY_ID%\}\}&SESSION_ID=\{\{%SESSION_ID%\}\}"


@pytest.fixture
def accounts(db):
    store = Store(db)
    yield Accounts(store, hasher=PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    store.close()


def test_add_with_a_password_then_list_shows_it_without_a_hash(cli, accounts):
    code, out, _ = cli("annotators", "add", "ana", "--password", PASSWORD)
    assert code == 0 and "'ana'" in out and PASSWORD not in out
    assert cli("annotators", "add", "boss", "--password", PASSWORD, "--admin", "--quota", "4")[0] == 0
    code, out, _ = cli("annotators", "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["name", "role", "state", "quota", "study"]
    assert [line.split() for line in lines[1:]] == [["ana", "annotator", "enabled", "-", "-"],
                                                    ["boss", "admin", "enabled", "4", "-"]]
    assert "$argon2" not in out and PASSWORD not in out
    assert accounts.session(accounts.login("ana", PASSWORD, None)).name == "ana", "the password works"


def test_list_without_accounts_says_how_to_add_one(cli):
    code, out, _ = cli("annotators", "list")
    assert code == 0 and "annotators add NAME" in out


def test_add_without_a_password_and_no_terminal_names_password(cli, accounts, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, err = cli("annotators", "add", "ana")
    assert code == 1 and "--password" in err and err.count("\n") == 1
    assert accounts.list() == [], "nothing was added"


def test_add_asks_twice_at_a_terminal(cli, accounts, monkeypatch):
    monkeypatch.setattr(sys, "stdin", type("Tty", (io.StringIO,), {"isatty": lambda self: True})())
    typed = iter([PASSWORD, "another-password", PASSWORD, PASSWORD])
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": next(typed))
    code, _, err = cli("annotators", "add", "ana")
    assert code == 1 and "differ" in err and accounts.list() == []
    assert cli("annotators", "add", "ana")[0] == 0
    assert accounts.login("ana", PASSWORD, None)


def test_a_bad_add_or_disable_is_one_line_naming_the_fix(cli):
    code, out, err = cli("annotators", "add", "ana", "--password", "short")
    assert code == 1 and out == "" and "--no-password" in err
    code, _, err = cli("annotators", "disable", "nobody")
    assert code == 1 and "annotators list" in err


def test_disable_ends_the_account_s_sessions(cli, accounts):
    cli("annotators", "add", "ana", "--password", PASSWORD)
    token = accounts.login("ana", PASSWORD, None)
    code, out, _ = cli("annotators", "disable", "ana")
    assert code == 0 and "ana" in out
    fresh = Accounts(accounts.store)  # no cache of before
    assert fresh.session(token) is None
    assert cli("annotators", "list")[1].splitlines()[1].split()[2] == "disabled"


def test_invite_prints_a_link_that_logs_the_account_in(cli, accounts):
    cli("annotators", "add", "bob", "--no-password", "--quota", "3")
    code, out, _ = cli("annotators", "invite", "bob")
    link, secret = out.splitlines()
    found = re.fullmatch(LINK, link)
    assert code == 0 and found and "secret" in secret
    session, account = accounts.redeem(found.group(1), {}, None)
    assert account.name == "bob" and accounts.session(session).name == "bob"


def test_invite_uses_the_host_and_port_the_app_is_served_at(cli):
    cli("annotators", "add", "bob", "--no-password")
    code, out, _ = cli("annotators", "invite", "bob", "--host", "0.0.0.0", "--port", "9000")
    assert code == 0 and out.startswith("http://0.0.0.0:9000/invite/")


def test_a_study_invite_prints_prolific_s_template(cli, accounts):
    code, out, _ = cli("annotators", "invite", "--study", "pilot", "--quota", "2", "--completion-code", "C0DE1234")
    link, secret = out.splitlines()
    found = re.fullmatch(LINK + PROLIFIC, link)
    assert code == 0 and found and "secret" in secret
    ids = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60a0b1c2d3e4f5a6b7c8d9e0",
           "SESSION_ID": "6a1b2c3d4e5f6a7b8c9d0e1f"}  # Prolific's ids: 24 hexadecimal digits
    _, account = accounts.redeem(found.group(1), ids, None)
    assert (account.name, account.quota, account.completion_code) == (f"pilot:{ids['PROLIFIC_PID']}", 2, "C0DE1234")
    assert accounts.completion_code(account.name, 2) == "C0DE1234"


def test_a_study_invite_without_its_code_names_the_flag(cli):
    code, out, err = cli("annotators", "invite", "--study", "pilot", "--quota", "2")
    assert code == 1 and out == "" and "--completion-code" in err
    code, _, err = cli("annotators", "invite")
    assert code == 1 and "--study" in err


def test_links_list_each_link_and_revoke_stops_one_an_account_s_or_a_study_s(cli, accounts):
    """Issue 38 (F28): `Accounts.revoke` existed but no command called it; links never ended."""
    cli("annotators", "add", "bob", "--no-password")
    one = re.match(LINK, cli("annotators", "invite", "bob", "--expires", "7d")[1]).group(1)
    two = re.match(LINK, cli("annotators", "invite", "bob")[1]).group(1)
    study = re.match(LINK, cli("annotators", "invite", "--study", "pilot", "--quota", "2", "--completion-code",
                               "C0DE1234", "--expires", "never")[1]).group(1)
    accounts.redeem(one, {}, None)
    code, out, _ = cli("annotators", "links")
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["id", "for", "made", "ends", "state", "accounts", "sessions"]
    assert [row.split()[-3:] for row in rows] == [["open", "1", "1"], ["open", "0", "0"], ["open", "0", "0"]]
    assert "never" in rows[1] and "never" in rows[2] and "never" not in rows[0], "7d ends; the others never"
    assert one not in out and two not in out, "no token is shown (only its hash is stored)"

    code, out, _ = cli("annotators", "revoke", f"http://127.0.0.1:7860/invite/{one}?x=1")
    assert code == 0 and "Revoked the invite link" in out
    code, out, _ = cli("annotators", "revoke", "--study", "pilot")
    assert code == 0 and "Revoked 1 invite link of study 'pilot'" in out
    code, out, _ = cli("annotators", "revoke", "bob")
    assert code == 0 and "Revoked 1 invite link of 'bob'" in out, "the one still open"
    for token in (one, two, study):
        with pytest.raises(LoginRefused):
            accounts.redeem(token, {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e"}, None)
    assert [row.split()[-3] for row in cli("annotators", "links")[1].splitlines()[1:]] == ["revoked"] * 3
    code, _, err = cli("annotators", "invite", "bob", "--expires", "soon")
    assert code == 1 and "--expires" in err and "7d" in err
    code, _, err = cli("annotators", "revoke", "made-up-token")
    assert code == 1 and "No invite link" in err
