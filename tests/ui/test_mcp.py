"""The MCP tools (``ui.mcp_tools``), through the official MCP Python client (``mcp``, streamable HTTP)
against the app served on a local port (``ui.app.serve``), on the stand-ins: the tools listed and
none of the app's own events; a tool call that writes an article; errors as tool errors with a
message that names the fix; none with --arena-only; and the login rule: where the deployment asks
for a login, the MCP endpoint asks for an admin's too."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from contextlib import asynccontextmanager, contextmanager

import httpx
import pytest
from argon2 import PasswordHasher
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import app as app_module
from annotation.accounts import Accounts
from core.methods import METHODS
from tests.fakes.llm_server import FakeReply
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import free_port
from ui.app import serve
from ui.mcp_tools import TOOLS
from ui.server import COOKIE

FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
WRITES = {"write_article", "list_runs", "show_article"}  # what writes or reads runs


@contextmanager
def served(settings, **changes):
    """The app on a free port: (its MCP URL, its accounts, the App)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    wired = app_module.build(dataclasses.replace(settings, **changes))
    accounts = Accounts(wired.store, hasher=FAST)
    up = serve(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms, accounts, port=free_port())
    try:
        yield f"{up.url}gradio_api/mcp/", accounts, wired
    finally:
        up.close()


@asynccontextmanager
async def session(url: str, headers: dict | None = None):
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120)) as http, \
            streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def tool_names(url: str, headers: dict | None = None) -> set[str]:
    async with session(url, headers) as s:
        return {t.name for t in (await s.list_tools()).tools}


def refusal(url: str, headers: dict | None = None) -> str:
    """What the MCP client's connection is refused with (the client raises it in a group): the HTTP
    status ("401"), or the client's own error (a 404 is "Session terminated" to it)."""
    with pytest.raises(ExceptionGroup) as caught:
        asyncio.run(tool_names(url, headers))
    error = caught.value
    while isinstance(error, ExceptionGroup):
        error = error.exceptions[0]
    return str(error.response.status_code) if isinstance(error, httpx.HTTPStatusError) else str(error)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def log_in(url: str, name: str, password: str) -> dict:
    """The headers of a session of ``name``, as the README says to get one: log in, send the cookie."""
    reply = httpx.post(url.split("gradio_api/")[0] + "login", data={"name": name, "password": password},
                       follow_redirects=False)
    assert reply.status_code == 303
    return {"Cookie": f"{COOKIE}={reply.cookies[COOKIE]}"}


def admin_cookie(url: str, accounts: Accounts) -> dict:
    accounts.add("boss", "correct-horse", role="admin")
    return log_in(url, "boss", "correct-horse")


def test_the_tools_are_listed_with_their_docs_and_no_event_of_the_app(settings):
    with served(settings) as (url, _, _):
        async def listed():
            async with session(url) as s:
                return {t.name: t for t in (await s.list_tools()).tools}

        tools = asyncio.run(listed())
    assert set(tools) == set(TOOLS)  # the app's own events (Writer, Arena, ...) stay private: no tool
    write = tools["write_article"]
    assert "sourced article" in write.description and "Returns:" in write.description
    props = write.inputSchema["properties"]
    assert set(props) == {"task", "method", "kind"} and write.inputSchema["required"] == ["task"]
    assert props["task"]["type"] == "string" and "about" in props["task"]["description"]
    assert "Default rat" in props["method"]["description"]
    assert all(name in write.description for name in METHODS)  # every method is named
    assert tools["list_runs"].inputSchema["properties"]["limit"]["type"] == "integer"
    assert "TrueSkill" in tools["leaderboard"].description


def test_a_tool_call_writes_an_article_on_the_stand_ins(settings, llm):
    llm.reply(RatAuthor(draft_steps(3)))
    with served(settings) as (url, _, wired):
        async def calls():
            async with session(url) as s:
                written = await s.call_tool("write_article", {"task": "Write a short history of Python 3.",
                                                              "method": "rat"})
                listed = await s.call_tool("list_runs", {"limit": 5})
                run_id = re.search(r"Run id: ([0-9a-f]{12})", text_of(written)).group(1)
                shown = await s.call_tool("show_article", {"run_id": run_id[:8]})
                board = await s.call_tool("leaderboard", {})
                return written, listed, shown, board, run_id

        written, listed, shown, board, run_id = asyncio.run(calls())
        run = wired.store.get_run(run_id)
    assert not written.isError, text_of(written)
    text = text_of(written)
    assert run.method == "rat" and run.status == "done"
    assert "# Write a short history of Python 3." in text and text.count("[revised]") == 3
    assert re.search(r"\[\d+\]", text) and "## Sources" in text
    assert re.search(r"^1\. \[.+\]\(http://127\.0\.0\.1:\d+/pages/", text, flags=re.M)
    assert run_id in text_of(listed) and "rat" in text_of(listed)
    assert not shown.isError and text_of(shown) == text  # no edit yet: the latest version is the model's
    assert "No people votes yet" in text_of(board)


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("write_article", {"task": "A task", "method": "ratt"}, "Unknown method 'ratt': give one of aag,"),
    ("write_article", {"task": "   "}, "The task is empty"),
    ("write_article", {"task": "A task", "kind": "poem"}, "Unknown kind 'poem': give one of writing, plan, qa"),
    ("show_article", {"run_id": "0123456789ab"}, "No run '0123456789ab': call list_runs"),
    ("list_runs", {"limit": 0}, "give 1 to 200"),
    ("leaderboard", {"source": "crowd"}, "Unknown source 'crowd': give one of people, judge"),
    ("leaderboard", {"task_set": "nope"}, "No task set 'nope'"),
])
def test_a_bad_argument_is_a_tool_error_that_names_the_fix(settings, llm, tool, arguments, says):
    with served(settings) as (url, _, wired):
        async def call():
            async with session(url) as s:
                return await s.call_tool(tool, arguments)

        result = asyncio.run(call())
        assert wired.store.list_runs() == []
    assert result.isError
    assert says in text_of(result) and "Traceback" not in text_of(result)
    assert llm.requests == []


def test_a_run_that_fails_is_a_tool_error_that_says_how_to_go_on(settings, llm):
    llm.reply(lambda body: FakeReply.fail(401, "bad key"))
    with served(settings) as (url, _, wired):
        async def calls():
            async with session(url) as s:
                written = await s.call_tool("write_article", {"task": "A task", "method": "rat"})
                [run] = wired.store.list_runs()
                return run, written, await s.call_tool("show_article", {"run_id": run.id})

        run, written, shown = asyncio.run(calls())
    assert written.isError and shown.isError and run.status == "failed"
    for text in (text_of(written), text_of(shown)):  # the same, from the event and from the stored run
        assert text.startswith(f"Run {run.id} failed: The LLM server") and "check OPENAI_API_KEY." in text
        assert f"continue it in the app's History, or with `python app.py resume {run.id}`" in text


def test_arena_only_serves_no_tool(settings):
    with served(settings, arena_only=True) as (url, accounts, _):
        refused = httpx.post(url, json={})
        assert refused.status_code == 401  # everyone is an annotator: refused before Gradio
        cookie = admin_cookie(url, accounts)  # an admin of an annotators' deployment finds none either
        assert httpx.post(url, json={}, headers=cookie).status_code == 404
        assert refusal(url) == "401" and refusal(url, cookie) == "Session terminated"


def test_the_arena_app_serves_no_tool(settings):
    with served(settings) as (url, _, _):
        arena = url.replace("/gradio_api/mcp/", "/arena/gradio_api/mcp/")
        assert httpx.post(arena, json={}).status_code == 404


def test_with_a_login_the_tools_need_an_admins_session(settings):
    with served(settings) as (url, accounts, _):
        assert "write_article" in asyncio.run(tool_names(url))  # nobody logs in: the tools as the whole app
        accounts.add("ana", "correct-horse")  # a login is in force from now on
        refused = httpx.post(url, json={}, headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401 and "admin's login" in refused.json()["error"]
        assert httpx.get(f"{url}schema").status_code == 401  # the tools' schemas too
        assert refusal(url) == "401"
        as_ana = log_in(url, "ana", "correct-horse")
        assert httpx.post(url, json={}, headers=as_ana).status_code == 401  # an annotator's session: refused
        assert asyncio.run(tool_names(url, admin_cookie(url, accounts))) == set(TOOLS)


def test_with_a_shared_password_the_tools_need_its_login(settings):
    with served(settings, auth=("boss", "correct-horse")) as (url, _, _):
        assert httpx.post(url, json={}).status_code == 401
        assert asyncio.run(tool_names(url, log_in(url, "boss", "correct-horse"))) == set(TOOLS)



def test_the_sse_transport_lists_the_tools_and_asks_the_same_login(settings):
    from mcp.client.sse import sse_client

    async def names(url: str, headers: dict | None = None) -> set[str]:
        async with sse_client(url, headers=headers) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return {t.name for t in (await s.list_tools()).tools}

    with served(settings) as (url, accounts, _):
        assert asyncio.run(names(f"{url}sse")) == set(TOOLS)
        cookie = admin_cookie(url, accounts)
        assert httpx.get(f"{url}sse").status_code == 401
        assert asyncio.run(names(f"{url}sse", cookie)) == set(TOOLS)
