"""Share links (issue 39, item 4) end to end: ``python app.py share RUN`` (through ``app.main``, as
a shell runs it) prints a link that a real server on a local port shows without a login, while
``/`` still sends the visitor to the login page; ``share RUN --revoke`` makes it answer 404, and so
does a token never made. A link shows its own run only, at the version it was made for (the
version rule of ``core.sharing``), with the run's replay and presentation mode, and nothing of the
Gradio apps. Runs are made on the stand-ins (the fake model over HTTP, SearXNG-style search)."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager

import httpx
import pytest
from argon2 import PasswordHasher

import app as app_module
from annotation.accounts import ADMIN, Accounts
from common.events import Final
from common.types import Task
from core.sharing import Sharing
from data.versions import Versions
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, free_port
from ui.app import serve

FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
TASK = Task("Write a short history of Python 3 and its ecosystem.")
OTHER = Task("Describe the life of Jin Yong, the novelist.")
MINE = "A closing paragraph the author wrote by hand."
LATER = "A paragraph written after the link was made."


async def stored_run(app, llm, task: Task = TASK) -> str:
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat-step", task))
    assert isinstance(events[-1], Final), events[-1]
    return events[0].run_id


def cli(app, capsys, *argv: str) -> tuple[int, str, str]:
    """``python app.py ARGV`` on the app's database: exit code, standard output and error."""
    capsys.readouterr()
    code = app_module.main([*argv, "--db", str(app.settings.db_path)], env={})
    out = capsys.readouterr()
    return code, out.out, out.err


@contextmanager
def served(app, *, accounts: bool = True):
    """The app served on a free local port, as ``python app.py`` serves it (with an admin account:
    every visitor logs in); an httpx client on it."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    people = Accounts(app.store, hasher=FAST)
    if accounts:
        people.add("ana", "correct-horse", role=ADMIN)
    up = serve(app.settings, app.store, app.clients, app.runner, app.rooms, people, port=free_port())
    try:
        with httpx.Client(base_url=up.url, timeout=30) as http:
            yield up.url.rstrip("/"), http
    finally:
        up.close()


def link_path(link: str) -> str:
    assert re.fullmatch(r"http://[^/]+/share/[A-Za-z0-9_-]{43}", link), link
    return "/share/" + link.rsplit("/", 1)[1]


async def test_a_link_shows_the_article_without_a_login_while_the_app_asks_for_one_and_revoke_closes_it(
        app, llm, capsys):
    run_id = await stored_run(app, llm)
    with served(app) as (base, http):
        code, out, err = cli(app, capsys, "share", run_id[:8], "--public-url", base)
        assert code == 0, err
        link = out.strip()
        assert "without logging in" in err and f"share {run_id} --revoke" in err
        path = link_path(link)

        page = http.get(path)  # no cookie: nobody logged in
        assert page.status_code == 200
        assert TASK.prompt in page.text and "[revised]" in page.text
        assert "<h2>Sources</h2>" in page.text and 'href="#src-1"' in page.text
        assert page.headers["cache-control"] == "no-store" and page.headers["referrer-policy"] == "no-referrer"
        policy = page.headers["content-security-policy"]
        nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
        assert f'<script nonce="{nonce}">' in page.text and "default-src 'none'" in policy
        assert page.text.count("<script") == 2, "the frames (data) and the one script"
        # the replay with presentation mode, on the page itself: no Gradio app, no API behind it
        assert 'id="rat-replay-play"' in page.text and "rat-present-btn" in page.text and "rat-stage" in page.text
        assert "gradio_api" not in page.text and "gradio_config" not in page.text

        first = http.get("/", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/login"
        for other in ("/config", "/gradio_api/info", path + "/config", path + "/gradio_api/info"):
            assert http.get(other).status_code in (401, 404), other

        code, _, err = cli(app, capsys, "share", run_id, "--revoke")
        assert code == 0 and "revoked 1 share link" in err
        gone = http.get(path)
        assert gone.status_code == 404 and TASK.prompt not in gone.text
        code, _, err = cli(app, capsys, "share", run_id, "--revoke")
        assert code == 0 and "no open share link" in err


async def test_an_unknown_or_malformed_token_answers_404(app, llm):
    run_id = await stored_run(app, llm)
    token = Sharing(app.store, app.authoring).share(run_id).token
    with served(app) as (_, http):
        assert http.get(f"/share/{token}").status_code == 200
        for path in ("/share/" + "A" * 43, f"/share/{token[:-1]}", f"/share/{token}x", f"/share/{token}/",
                     f"/share/{token}/x", "/share/", "/share/" + "x" * 5000):
            answer = http.get(path)
            assert answer.status_code == 404, path
            assert TASK.prompt not in answer.text


@pytest.mark.both_databases
async def test_only_a_hash_of_the_secret_is_stored(app, llm):
    run_id = await stored_run(app, llm)
    link = Sharing(app.store, app.authoring).share(run_id, by="ana")
    rows = app.store.db.execute("select * from share_links").fetchall()
    assert len(rows) == 1 and link.token not in repr(rows)
    assert any(isinstance(v, str) and len(v) == 64 for v in rows[0])
    with pytest.raises(Exception, match="never deleted"):
        app.store.db.execute("delete from share_links")
    with pytest.raises(Exception, match="revoked, once"):
        app.store.db.execute("update share_links set run_id = 'x'")


async def test_a_link_shows_its_own_run_only(app, llm):
    mine, theirs = await stored_run(app, llm), await stored_run(app, llm, OTHER)
    Versions(app.store).add(theirs, f"{app.store.get_run(theirs).final_text}\n\nA secret of the other run.")
    token = Sharing(app.store, app.authoring).share(mine).token
    with served(app) as (_, http):
        page = http.get(f"/share/{token}").text
    assert TASK.prompt in page
    assert OTHER.prompt not in page and "Jin Yong" not in page and "secret of the other run" not in page
    assert theirs not in page and "History" not in page


async def test_the_version_rule_a_link_shows_the_version_it_was_made_for(app, llm, capsys):
    run_id = await stored_run(app, llm)
    model_text = app.store.get_run(run_id).final_text
    versions = Versions(app.store)
    versions.add(run_id, f"{model_text}\n\n{MINE}")  # version 1: the latest when shared
    with served(app) as (base, http):
        _, latest, _ = cli(app, capsys, "share", run_id, "--public-url", base)
        _, model, _ = cli(app, capsys, "share", run_id, "--version", "model", "--public-url", base)
        versions.add(run_id, f"{model_text}\n\n{MINE}\n\n{LATER}")  # version 2, made after the link
        _, second, err = cli(app, capsys, "share", run_id, "--version", "2", "--public-url", base)
        assert "(version 2)" in err

        at_share = http.get(link_path(latest.strip())).text
        assert MINE in at_share and LATER not in at_share, "a link keeps the version it was made for"
        assert "version 1, saved" in at_share
        own = http.get(link_path(model.strip())).text
        assert MINE not in own and "[revised]" in own and "the model&#x27;s own text" in own
        assert LATER in http.get(link_path(second.strip())).text

        # --revoke --version: only the links to that version
        code, _, err = cli(app, capsys, "share", run_id, "--revoke", "--version", "model")
        assert code == 0 and "revoked 1 share link to version model" in err
        assert http.get(link_path(model.strip())).status_code == 404
        assert http.get(link_path(latest.strip())).status_code == 200
    code, out, _ = cli(app, capsys, "share", run_id, "--list")
    assert code == 0 and len(out.splitlines()) == 3 and out.count("revoked") == 1


async def test_bad_flags_and_unfinished_runs_are_refused_naming_the_flag(app, llm, capsys):
    run_id = await stored_run(app, llm)
    code, _, err = cli(app, capsys, "share", run_id, "--version", "9")
    assert code == 2 and "--version" in err and "no version 9" in err
    code, _, err = cli(app, capsys, "share", run_id, "--version", "newest")
    assert code == 2 and err.startswith("error: --version 'newest'")
    code, _, err = cli(app, capsys, "share", run_id, "--public-url", "ftp://example.org")
    assert code == 2 and "--public-url" in err
    code, _, err = cli(app, capsys, "share", "nosuchrun")
    assert code == 1
    llm.reply(RatAuthor(draft_steps(2)))
    draft = (await collect(app.runner.start("rat", Task("A draft to edit first."), draft_only=True)))[0].run_id
    code, out, err = cli(app, capsys, "share", draft)
    assert code == 4 and not out and "has no article yet" in err
    assert app.store.db.execute("select count(*) from share_links").fetchone()[0] == 0


@pytest.mark.both_databases
async def test_the_replay_steps_through_the_run_and_ends_on_the_shared_version(app, llm):
    from ui.share_page import replay_frames

    run_id = await stored_run(app, llm)
    shared = Sharing(app.store, app.authoring)
    opened = shared.open(shared.share(run_id).token)
    frames, stops = replay_frames(opened)
    assert frames[0]["at"] == 0 and frames[-1]["at"] == len(opened.events)
    assert len(stops) == 6, "start, draft, three revisions, the final text (the end)"
    assert "rat-card" not in frames[0]["steps"] and "Done: 3 steps revised." in frames[-1]["progress"]
    assert any("Step 2 of 3" in f["progress"] for f in frames), "the run mid-way"
    assert all(0.5 <= f["wait"] <= 2.0 for f in frames)


def test_arena_only_serves_no_share_link(tmp_path):
    from common.settings import Settings

    wired = app_module.build(Settings(db_path=tmp_path / "a.db", arena_only=True))
    with served(wired, accounts=False) as (_, http):
        assert http.get("/share/" + "A" * 43).status_code in (303, 401, 404)
        assert "RAT Studio" not in http.get("/share/" + "A" * 43, follow_redirects=False).text
