"""The app on PostgreSQL (issue 26): ``--db postgresql://...`` from the command line, the way an
operator of several arena processes gives it; what it says when the server is not there."""

from __future__ import annotations

import json

import pytest

import app as app_module
from data.store import Store

pytestmark = pytest.mark.both_databases


def test_the_cli_stores_and_reads_back_through_a_postgresql_url(cli, db, backend, tmp_path):
    lines = [json.dumps({"task": f"Task {t}", "method": m, "text": f"{m} on task {t}."})
             for t in range(2) for m in ("rat", "cot")]
    (tmp_path / "outputs.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = cli("outputs", "import", str(tmp_path / "outputs.jsonl"))
    assert code == 0, err
    code, out, err = cli("campaign", "create", "pilot", "--methods", "rat,cot", "--by", "admin")
    assert code == 0, err
    code, out, err = cli("campaign", "list")
    assert code == 0 and "pilot" in out, err
    store = Store(db)
    try:
        assert store.dialect == backend
        assert [r[0] for r in store.db.execute("select name from campaigns").fetchall()] == ["pilot"]
    finally:
        store.close_all()


@pytest.mark.parametrize("url", ["postgresql://rat:s3cret@127.0.0.1:1/nope", "postgres://rat@127.0.0.1:1/nope"])
def test_a_server_that_is_not_there_is_one_line_naming_the_fix_without_the_password(capsys, url):
    code = app_module.main(["history"], env={"RAT_STUDIO_DB": url})
    err = capsys.readouterr().err
    assert code != 0
    assert "Cannot reach the database server" in err and "--db" in err and "start PostgreSQL" in err
    assert "s3cret" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
