"""The server around the Gradio apps (``ui.server``), over real HTTP: who must log in, where each
role lands, that an annotator's session reaches neither the Leaderboard nor the Writer (the page,
the config and Gradio's queue), the login's throttle, logouts that end one session, invite links,
state-changing requests from other sites refused, and the script put first in each page."""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import contextmanager
from datetime import timedelta

import httpx
import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI, Request

import app as app_module
from annotation.accounts import Accounts
from common.settings import Settings
from tests.helpers import free_port
from ui.app import IDLE_FRAMES, serve
from ui.server import COOKIE, PageScript

FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@contextmanager
def served(tmp_path, **settings):
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    wired = app_module.build(Settings(db_path=tmp_path / "s.db", **settings))
    accounts = Accounts(wired.store, hasher=FAST)
    up = serve(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms, accounts, port=free_port())
    try:
        with httpx.Client(base_url=up.url, timeout=30) as http:
            yield http, accounts
    finally:
        up.close()


def log_in(http: httpx.Client, name: str, password: str) -> httpx.Response:
    return http.post("/login", data={"name": name, "password": password}, follow_redirects=False)


def labels(config: dict) -> set[str]:
    return {c["props"].get("label") for c in config["components"] if c.get("type") == "tabitem"}


def test_nobody_logs_in_without_accounts_or_auth(tmp_path):
    with served(tmp_path) as (http, _):
        assert http.get("/").status_code == 200
        assert labels(http.get("/config").json()) == {"Writer", "History", "Arena", "Leaderboard"}
        assert http.get("/login", follow_redirects=False).headers["location"] == "/"


def test_arena_only_without_accounts_serves_the_arena_alone(tmp_path):
    """Everyone is an annotator: the whole app (with the Leaderboard) is not reachable."""
    with served(tmp_path, arena_only=True) as (http, _):
        first = http.get("/", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/arena/"
        assert http.get("/config").status_code == 401
        assert http.get("/arena/").status_code == 200
        config = http.get("/arena/config").json()
        assert "Leaderboard" not in str(config) and "Writer" not in labels(config)


def test_once_an_account_exists_every_visitor_logs_in(tmp_path):
    with served(tmp_path) as (http, accounts):
        assert http.get("/", follow_redirects=False).status_code == 200
        accounts.add("ana", "correct-horse")
        first = http.get("/", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/login"
        login = http.get("/login")
        assert login.headers.get("cache-control") == "no-store"
        page = login.text
        assert "RAT Studio" in page and "Log in with the name and password" in page
        for path in ("/config", "/arena/config", "/gradio_api/info", "/arena/gradio_api/info"):
            assert http.get(path).status_code == 401, path


def test_an_annotator_reaches_the_arena_and_nothing_else(tmp_path):
    with served(tmp_path) as (http, accounts):
        accounts.add("ana", "correct-horse")
        refused = log_in(http, "ana", "wrong-horse")
        assert refused.status_code == 401 and "Wrong name or password." in refused.text
        assert COOKIE not in http.cookies
        ok = log_in(http, "ana", "correct-horse")
        assert ok.status_code == 303 and ok.headers["location"] == "/arena/"
        assert http.get("/", follow_redirects=False).headers["location"] == "/arena/"
        assert http.get("/arena/").status_code == 200
        arena_config = http.get("/arena/config").json()
        assert "Leaderboard" not in str(arena_config)
        # the whole app's page, config, API info and queue all refuse the annotator's session
        assert http.get("/config").status_code == 401
        assert http.get("/gradio_api/info").status_code == 401
        join = http.post("/gradio_api/queue/join", json={"data": [], "fn_index": 0, "trigger_id": 1,
                                                          "session_hash": "abc"})
        assert join.status_code == 401


def test_an_admin_reaches_the_whole_app(tmp_path):
    with served(tmp_path) as (http, accounts):
        accounts.add("ana", "correct-horse")
        accounts.add("boss", "correct-horse", role="admin")
        ok = log_in(http, "boss", "correct-horse")
        assert ok.status_code == 303 and ok.headers["location"] == "/"
        assert labels(http.get("/config").json()) == {"Writer", "History", "Arena", "Leaderboard"}


def test_30_wrong_passwords_then_the_right_one_are_refused_over_http(tmp_path):
    with served(tmp_path) as (http, accounts):
        accounts.add("ana", "correct-horse")
        codes = {log_in(http, "ana", f"guess-{k:04d}").status_code for k in range(30)}
        assert codes == {401}
        late = log_in(http, "ana", "correct-horse")
        assert late.status_code == 401 and "Too many failed logins" in late.text
        assert COOKIE not in http.cookies


def test_a_logout_ends_that_session_only(tmp_path):
    with served(tmp_path) as (first, accounts):
        accounts.add("ana", "correct-horse")
        with httpx.Client(base_url=str(first.base_url), timeout=30) as second:
            assert log_in(first, "ana", "correct-horse").status_code == 303
            assert log_in(second, "ana", "correct-horse").status_code == 303
            # issue 38 (F35): a link or an image on another site logged the annotator out
            for site in ("cross-site", "same-site"):
                away = first.get("/logout", headers={"Sec-Fetch-Site": site}, follow_redirects=False)
                assert away.status_code == 303 and first.get("/arena/config").status_code == 200, site
            out = first.get("/logout", headers={"Sec-Fetch-Site": "same-origin"}, follow_redirects=False)
            assert out.headers["location"] == "/login"
            assert first.get("/arena/config").status_code == 401
            assert second.get("/arena/config").status_code == 200


def test_an_invite_link_logs_its_annotator_in(tmp_path):
    with served(tmp_path) as (http, accounts):
        accounts.add("ana", None)
        token = accounts.invite("ana")
        assert http.get("/invite/not-a-token", follow_redirects=False).status_code == 403
        landed = http.get(f"/invite/{token}", follow_redirects=False)
        assert landed.status_code == 303 and landed.headers["location"] == "/arena/"
        assert http.get("/arena/config").status_code == 200
        # issue 38: a revoked or expired link answers 403 and logs nobody in
        expired = accounts.invite("ana", expires=timedelta(milliseconds=1))
        accounts.revoke(token)
        time.sleep(0.01)
        http.cookies.clear()
        for link, said in ((token, "not valid"), (expired, "expired")):
            refused = http.get(f"/invite/{link}", follow_redirects=False)
            assert refused.status_code == 403 and said in refused.text and COOKIE not in http.cookies, link


def test_a_study_link_records_the_platform_ids(tmp_path):
    with served(tmp_path) as (http, accounts):
        token = accounts.invite(study="pilot", quota=3, completion_code="C0DE42")
        ids = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60a0b1c2d3e4f5a6b7c8d9e0",
               "SESSION_ID": "6a1b2c3d4e5f6a7b8c9d0e1f"}  # Prolific's ids: 24 hexadecimal digits
        landed = http.get(f"/invite/{token}", params=ids, follow_redirects=False)
        assert landed.status_code == 303
        made = accounts.get(f"pilot:{ids['PROLIFIC_PID']}")
        assert made is not None and made.participant["STUDY_ID"] == ids["STUDY_ID"] and made.quota == 3


def test_state_changing_requests_from_another_site_are_refused(tmp_path):
    with served(tmp_path) as (http, accounts):
        accounts.add("ana", "correct-horse")
        foreign = http.post("/login", data={"name": "ana", "password": "correct-horse"},
                            headers={"Origin": "http://evil.example"}, follow_redirects=False)
        assert foreign.status_code == 403 and COOKIE not in http.cookies
        own = http.post("/login", data={"name": "ana", "password": "correct-horse"},
                        headers={"Origin": str(http.base_url).rstrip("/")}, follow_redirects=False)
        assert own.status_code == 303
        preflight = http.options("/gradio_api/queue/join", headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers


def test_one_shared_password_with_auth(tmp_path):
    with served(tmp_path, auth=("team", "correct-horse")) as (http, _):
        assert http.get("/", follow_redirects=False).headers["location"] == "/login"
        assert log_in(http, "team", "nope-nope-nope").status_code == 401
        ok = log_in(http, "team", "correct-horse")
        assert ok.status_code == 303 and ok.headers["location"] == "/"
        assert http.get("/config").status_code == 200


def test_x_forwarded_for_counts_only_from_a_trusted_proxy():
    """Issue 26: uvicorn trusts X-Forwarded-For from loopback by default, so any local client could
    name the address the per-address vote limit counts (80 of 80 votes taken instead of 56)."""
    from ui.server import start

    echo = FastAPI()

    @echo.get("/who")
    def who(request: Request) -> dict:
        return {"client": request.client.host}

    forged = {"X-Forwarded-For": "203.0.113.9"}
    for trusted, seen in (((), "127.0.0.1"), (("127.0.0.1",), "203.0.113.9"), (("10.0.0.0/8",), "127.0.0.1")):
        up = start(echo, "127.0.0.1", free_port(), trusted)
        try:
            assert httpx.get(up.url + "who", headers=forged, timeout=10).json() == {"client": seen}, trusted
        finally:
            up.close()


def test_a_request_naming_another_host_gets_no_page_no_config_and_no_queue(tmp_path):
    """Issue 38 (F30): a page of another site that points its name at 127.0.0.1 sends that name as
    Host and Origin alike, so the origin check let it read History and start runs. Now only this
    server's names are answered: 421 before any handler, Gradio's included."""
    with served(tmp_path, allowed_hosts=("rat.example.org",)) as (http, _):
        rebound = {"Host": "evil.example:7860", "Origin": "http://evil.example:7860"}
        for method, path in (("GET", "/"), ("GET", "/config"), ("GET", "/arena/"), ("GET", "/gradio_api/info"),
                             ("POST", "/gradio_api/queue/join"), ("GET", "/login")):
            answer = http.request(method, path, headers=rebound, json={} if method == "POST" else None)
            assert answer.status_code == 421, (method, path, answer.status_code)
            assert "--allowed-hosts" in answer.text and "Writer" not in answer.text
        for host in ("localhost", "127.0.0.1", "rat.example.org", "[::1]"):
            assert http.get("/config", headers={"Host": host}).status_code == 200, host
        assert http.get("/config").status_code == 200, "the address the server was opened by"


def test_no_upload_is_taken_and_nothing_is_written(tmp_path, monkeypatch):
    """Issue 38 (F29): anyone who could open the Arena could upload files of any size (20 MB in
    under a second, kept a day); no input takes a file, so the upload routes refuse before reading."""
    uploads = tmp_path / "gradio-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    with served(tmp_path, arena_only=True) as (http, _):
        body = b"x" * 20_000_000
        for path in ("/arena/gradio_api/upload", "/gradio_api/upload", "/arena/upload", "/arena/gradio_api/upload/"):
            answer = http.post(path, files={"files": ("big.bin", body)})
            assert answer.status_code == 403 and "takes no files" in answer.text, (path, answer.status_code)
        assert not uploads.exists() or not any(uploads.rglob("*")), "nothing was written"
        assert http.get("/arena/").status_code == 200, "the Arena itself is served"


# -- the script first in each page (PageScript, ui/idle_frames.js) --------------------------------
def test_both_pages_run_the_idle_frames_script_before_any_of_gradios(tmp_path):
    script = IDLE_FRAMES.read_text(encoding="utf-8")
    with served(tmp_path) as (http, _):
        for path in ("/", "/arena/"):
            page = http.get(path)
            assert page.status_code == 200, path
            assert int(page.headers["content-length"]) == len(page.content), path
            head = page.text.index("<head>") + len("<head>")
            assert page.text[head:].startswith(f"<script>{script}</script>"), path
            assert page.text.count("__ratIdleFrames = true") == 1, path
            assert page.text.index("</script>", head) < page.text.index('type="module"'), "before Gradio's code"
        assert "__ratIdleFrames" not in http.get("/config").text and "__ratIdleFrames" not in http.get("/login").text


def _asgi_answer(middleware, path: str = "/", method: str = "GET") -> tuple[dict, bytes]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(middleware({"type": "http", "method": method, "path": path, "headers": []}, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return dict(start["headers"]), b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _page_app(chunks: list[bytes], headers: list[tuple[bytes, bytes]]):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for k, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": k < len(chunks) - 1})
    return app


HTML = [(b"content-type", b"text/html; charset=utf-8")]


def test_a_page_sent_in_pieces_gets_the_script_once_with_its_length():
    page = [b"<!doctype html><html lang='en'><HEAD data-x='1'>", b"<title>t</title></head>", b"<body></body></html>"]
    headers, body = _asgi_answer(PageScript(_page_app(page, HTML + [(b"content-length", b"71")]), "let a = 1;"))
    assert body == b"<!doctype html><html lang='en'><HEAD data-x='1'><script>let a = 1;</script>" \
                   b"<title>t</title></head><body></body></html>"
    assert headers[b"content-length"] == str(len(body)).encode()


def test_what_is_no_readable_page_passes_as_it_is(caplog):
    gzipped = PageScript(_page_app([b"\x1f\x8b..."], HTML + [(b"content-encoding", b"gzip")]), "let a = 1;")
    assert _asgi_answer(gzipped)[1] == b"\x1f\x8b..."
    json_answer = PageScript(_page_app([b"{}"], [(b"content-type", b"application/json")]), "let a = 1;")
    assert _asgi_answer(json_answer)[1] == b"{}"
    other_path = PageScript(_page_app([b"<head></head>"], HTML), "let a = 1;")
    assert _asgi_answer(other_path, "/login")[1] == b"<head></head>"
    assert _asgi_answer(other_path, "/", "POST")[1] == b"<head></head>"
    headless = PageScript(_page_app([b"<p>no head</p>"], HTML), "let a = 1;")
    assert _asgi_answer(headless)[1] == b"<p>no head</p>"
    assert "without its script" in caplog.text


def test_a_script_that_would_end_its_element_is_refused():
    with pytest.raises(ValueError, match="</"):
        PageScript(_page_app([], HTML), "document.write('</script>')")
