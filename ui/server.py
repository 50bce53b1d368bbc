"""The HTTP server around the Gradio app: who a request is, and which app it may reach.

    Doors(settings, accounts, shared)   who a request is (``who``), from its session cookie
    server_app(doors, admin, arena, ...) the FastAPI app: our login page, logout, invite links, share
                                        links (/share/TOKEN: one run's article and replay, read only, to
                                        anyone holding the link), the two Gradio apps mounted, same-origin
                                        writes only
    Served / start(...)                 serve it with uvicorn (in a thread for tests, or blocking)

Two Gradio apps are served, built by ``ui.app.build_app``: the whole app at ``/`` for admins (and
for everyone when nobody has to log in), and the Arena alone at ``/arena/`` for annotators. An
annotator's session reaches only the second one, so nothing an annotator can reach, in the page
or over Gradio's HTTP API, shows ratings, other voters or who wrote what: the Leaderboard's events
do not exist in the app they can reach (``/`` answers 401 to their queue requests).

Who must log in (asked per request, so the first account added while the app runs takes effect
at once):

- accounts exist (``python app.py annotators add``): every visitor logs in with an account; a
  vote is the account's; annotators are sent to ``/arena/``;
- else ``--auth USER:PASSWORD``: one shared password, for admins (a name is typed in the Arena);
- else nobody logs in: the whole app, or only the Arena with --arena-only.

Login is our page (the app's name and a line of instructions), throttled per name and per address
(``annotation.accounts``); a session is a random token in an HttpOnly cookie, stored hashed, and
a logout ends that session only, and only from our own page or a typed address (a browser says
where a request comes from in ``Sec-Fetch-Site``: a link on another site logs nobody out).
Requests that change state (any method but GET, HEAD, OPTIONS) from another origin are refused, and
no origin but our own gets CORS headers.

Before any of that (``Guard``, in front of every route, Gradio's included):

- a request naming a host the server does not answer to gets 421 and nothing else (``host_allowed``:
  its own address, any IP address, ``localhost``, the names of ``--allowed-hosts``): a page of
  another site that points its name at this machine (DNS rebinding) sends its own name as Host and
  Origin alike, which the origin check lets through;
- no file is taken: neither app has a file input, so Gradio's upload routes answer 403 before a byte
  of the body is read (an open Arena took 20 MB a request, kept for a day);
- the MCP tools (``ui.mcp_tools``, Gradio's MCP server at ``/gradio_api/mcp/``, the whole app's only,
  never with --arena-only) answer whom the whole app lets in (``Doors.mcp_allowed``): an admin's
  session, or anyone when nobody logs in; others get 401 before Gradio sees the request.
"""

from __future__ import annotations

import html
import ipaddress
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import gradio as gr
import uvicorn
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from annotation.accounts import ADMIN, ANNOTATOR, SESSION_DAYS, Accounts, SharedLogin
from annotation.errors import LoginRefused
from common.errors import ConfigError
from common.settings import Settings

log = logging.getLogger(__name__)

COOKIE = "rat_studio_session"
COOKIE_DAYS = SESSION_DAYS  # the browser forgets the cookie when the server ends its session
ARENA_PATH = "/arena"
#: The two apps' pages (what Gradio answers GET with HTML)
PAGES = ("/", ARENA_PATH + "/")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SHARE_PATH = "/share/"  # a share link's page: SHARE_PATH + its token (core.sharing)
SHARE_GONE = "No such link: it was revoked, or it was never made. Ask its author for a new one."
MCP_PATH = "/gradio_api/mcp"  # Gradio's MCP transport (streamable HTTP; SSE under /sse)
MCP_REFUSED = (f"The MCP tools need an admin's login: log in as an admin and send the session cookie with each "
               f"request (a header `Cookie: {COOKIE}=TOKEN`); README.md, section MCP, says how.")
TITLE = "RAT Studio"
LOGIN_HELP = ("Log in with the name and password you were given. As an annotator you will compare two "
              "anonymous answers at a time; your votes are kept under your name.")


class Who(NamedTuple):
    """Who a request is: the name votes are kept under ("" when it is typed in the page: nobody
    logs in, or one shared password) and the role (ADMIN or ANNOTATOR)."""

    name: str
    role: str


class Doors:
    """Who a request is, from its session cookie, and the login that applies now: accounts when
    one exists, else the shared --auth password, else none. Thread-safe."""

    def __init__(self, settings: Settings, accounts: Accounts, shared: SharedLogin | None = None):
        self.settings, self.accounts, self.shared = settings, accounts, shared

    def gate(self) -> Accounts | SharedLogin | None:
        """The login in force: accounts, the shared password, or None (nobody logs in)."""
        if self.accounts.any():
            return self.accounts
        return self.shared

    def mcp_allowed(self, request: Request) -> bool:
        """Whether the request may reach the MCP tools (``ui.mcp_tools``): as it may reach the whole app,
        an admin's session (its cookie), or anyone when nobody logs in (not with --arena-only)."""
        who = self.who(request)
        return who is not None and who.role == ADMIN

    def who(self, request: Request) -> Who | None:
        """Who the request is; None: not logged in (while a login is in force)."""
        gate = self.gate()
        if gate is None:
            return Who("", ANNOTATOR if self.settings.arena_only else ADMIN)
        account = gate.session(request.cookies.get(COOKIE) or "")
        if account is None:
            return None
        return Who(account.name if gate is self.accounts else "", account.role)


def home(who: Who) -> str:
    """Where a logged-in person lands: admins on the whole app, annotators on the Arena."""
    return "/" if who.role == ADMIN else ARENA_PATH + "/"


def address(request: Request) -> str:
    return request.client.host if request.client else ""


# -- the login page -------------------------------------------------------------------------------
def login_page(message: str = "", name: str = "", *, status: int = 200) -> HTMLResponse:
    """Our login page: the app's name, a line of instructions, and ``message`` (a refusal)."""
    error = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · {TITLE}</title>
<style>
body {{ font-family: system-ui, sans-serif; background: #f6f7f9; color: #1f2328; margin: 0; }}
main {{ max-width: 26rem; margin: 12vh auto; background: #fff; padding: 2rem 2.2rem; border-radius: 10px;
        box-shadow: 0 1px 4px rgba(0,0,0,.12); }}
h1 {{ margin: 0 0 .4rem; font-size: 1.6rem; }}
p {{ line-height: 1.45; }}
label {{ display: block; margin-top: 1rem; font-weight: 600; }}
input {{ width: 100%; box-sizing: border-box; padding: .55rem; margin-top: .3rem; font-size: 1rem;
         border: 1px solid #bbb; border-radius: 6px; }}
button {{ margin-top: 1.4rem; width: 100%; padding: .65rem; font-size: 1rem; border: 0; border-radius: 6px;
          background: #ea580c; color: #fff; cursor: pointer; }}
.error {{ color: #b42318; font-weight: 600; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #111; color: #eee; }} main {{ background: #1d1d1f; }}
  input {{ background: #2a2a2d; color: #eee; border-color: #555; }} .error {{ color: #ff8a80; }} }}
</style></head>
<body><main>
<h1>{TITLE}</h1>
<p>{html.escape(LOGIN_HELP)}</p>
{error}
<form method="post" action="/login">
<label for="name">Name</label><input id="name" name="name" autocomplete="username" required value="{html.escape(name)}">
<label for="password">Password</label><input id="password" name="password" type="password"
 autocomplete="current-password" required>
<button type="submit">Log in</button>
</form>
</main></body></html>"""
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


def with_session(response: Response, token: str, request: Request) -> Response:
    response.set_cookie(COOKIE, token, max_age=COOKIE_DAYS * 86400, httponly=True, samesite="lax", path="/",
                        secure=request.url.scheme == "https")
    return response


#: Seconds an idle browser connection stays open (nginx's default; browsers keep theirs longer).
KEEP_ALIVE_SECONDS = 75

# -- the app ----------------------------------------------------------------------------------------
def same_origin(request: Request) -> bool:
    """Whether a state-changing request comes from our own pages: no Origin header (not a browser's
    cross-site request), or one whose host and port are the request's own."""
    origin = request.headers.get("origin")
    if not origin:
        return True
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def host_allowed(host: str, bound: str, allowed: tuple[str, ...] = (), *, share: bool = False) -> bool:
    """Whether the server answers a request whose Host header is ``host`` (a port may follow): no
    Host (no browser sends none), an IP address (a page of another site cannot make a browser send
    one for its own name), ``localhost`` or a name under it, ``bound`` (the --host the server
    listens on), a name of ``allowed`` (``.example.org``: it and its subdomains; ``*``: any), and
    with ``share`` Gradio's share links (``*.gradio.live``)."""
    if not host:
        return True
    name = host.strip().lower()
    if name.startswith("["):  # "[::1]:7860"
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    name = name.rstrip(".")
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    if name == "localhost" or name.endswith(".localhost") or name == bound.lower().rstrip("."):
        return True
    if share and name.endswith(".gradio.live"):
        return True
    for entry in allowed:
        entry = entry.lower().rstrip(".")
        if entry == "*" or name == entry or (entry.startswith(".") and (name == entry[1:] or name.endswith(entry))):
            return True
    return False


#: Gradio's routes that take files (under either app's path): no input of ours takes one
_UPLOADS = ("/gradio_api/upload", "/upload")


class Guard:
    """Pure ASGI middleware in front of every route (Starlette's ``@app.middleware("http")`` runs
    each request through a task group and memory streams, a large share of the CPU a click costs):
    a request naming another host is refused (:func:`host_allowed`), and so are uploads (no input
    takes a file) and a state-changing request from another origin; a page of the app (``/``, the
    Arena) is shown only to whom ``doors`` lets in, the others are sent to the login page or their own."""

    def __init__(self, app, doors: Doors):
        self.app = app
        self.doors = doors

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(Request(scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, request: Request) -> Response | None:
        """The answer to a request that does not go on to the app, or None."""
        settings = self.doors.settings
        host = request.headers.get("host", "")
        if not host_allowed(host, settings.host, settings.allowed_hosts, share=settings.share):
            log.warning("refused a request for host %r (not this server's; --allowed-hosts)", host[:100])
            return PlainTextResponse(f"This server does not answer to {host[:100]!r}: open it by its own address, "
                                     "or add the name to --allowed-hosts.", status_code=421)
        path = request.url.path
        if path.rstrip("/").endswith(_UPLOADS):
            return JSONResponse({"error": "This app takes no files."}, status_code=403)
        if request.method not in SAFE_METHODS and not same_origin(request):
            return JSONResponse({"error": "A request from another site was refused: use the app's own page."},
                                status_code=403)
        if MCP_PATH in path and not self.doors.mcp_allowed(request):
            return JSONResponse({"error": MCP_REFUSED}, status_code=401)
        if request.method == "GET" and path in (*PAGES, ARENA_PATH):
            who = self.doors.who(request)
            if who is None:
                return RedirectResponse("/login", status_code=303)
            if path == "/" and who.role != ADMIN:
                return RedirectResponse(home(who), status_code=303)
            if path == ARENA_PATH:
                return RedirectResponse(ARENA_PATH + "/", status_code=307)
        return None


_HEAD = re.compile(rb"<head(?:\s[^>]*)?>", re.IGNORECASE)


class PageScript:
    """Pure ASGI middleware: ``script`` first in the ``<head>`` of the apps' pages (``PAGES``), so it
    runs before any of Gradio's code (Gradio's own ``head=`` is added to the page later, by Gradio's
    code). Other answers pass as they are, and so does a compressed page, and a page without a
    ``<head>`` (that is logged)."""

    def __init__(self, app, script: str):
        if "</" in script:
            raise ValueError("a page script must not hold '</' (it would end its <script> element)")
        self.app = app
        self.tag = f"<script>{script}</script>".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in PAGES:
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        body: list[bytes] = []

        async def hold(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in headers:
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await self.send_page(send, start, b"".join(body))
                return
            await send(message)

        await self.app(scope, receive, hold)

    async def send_page(self, send, start: dict, page: bytes) -> None:
        head = _HEAD.search(page)
        if head is None:
            log.warning("a page without <head> was served without its script (ui/idle_frames.js)")
        else:
            page = page[:head.end()] + self.tag + page[head.end():]
        headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
        headers.append((b"content-length", str(len(page)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": page})


def server_app(doors: Doors, admin: gr.Blocks, arena: gr.Blocks, *, css: str = "", script: str = "",
               shares=None) -> FastAPI:
    """The FastAPI app: our routes first, then the Arena app at ARENA_PATH and the whole app at /.
    ``script``: JavaScript run first in both apps' pages (``PageScript``). ``shares``: the share
    links' pages (``ui.share_page.SharePages``), served at /share/TOKEN to anyone, without a
    login; None (--arena-only): no such route."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    # Our own CORS policy (no origin but ours): Gradio then adds none of its own.
    app.add_middleware(CORSMiddleware, allow_origins=[], allow_credentials=False)
    if script:
        app.add_middleware(PageScript, script=script)

    app.add_middleware(Guard, doors=doors)

    @app.get("/login")
    def login_form(request: Request):
        if doors.gate() is None:
            return RedirectResponse(home(doors.who(request)), status_code=303)
        who = doors.who(request)
        return RedirectResponse(home(who), status_code=303) if who else login_page()

    @app.post("/login")
    async def login(request: Request):
        gate = doors.gate()
        if gate is None:
            return RedirectResponse("/", status_code=303)
        form = await request.form()
        name, password = str(form.get("name") or "").strip(), str(form.get("password") or "")
        try:  # in a worker thread: hashing the password must not stop the event loop, and every page with it
            token = await run_in_threadpool(gate.login, name, password, address(request))
        except LoginRefused as exc:
            return login_page(str(exc), name, status=401)
        account = await run_in_threadpool(gate.session, token)
        who = Who(name, account.role if account else ANNOTATOR)
        return with_session(RedirectResponse(home(who), status_code=303), token, request)

    @app.get("/logout")
    def logout(request: Request):
        gate = doors.gate()
        token = request.cookies.get(COOKIE)
        if request.headers.get("sec-fetch-site", "none") not in ("same-origin", "none"):
            # a link or image on another site: no logout (issue 38); the user's own click is same-origin
            return RedirectResponse(home(doors.who(request)) if doors.who(request) else "/login", status_code=303)
        if gate is not None and token:
            gate.logout(token)  # this session only: others logged in under the same name stay
        response = RedirectResponse("/login" if gate is not None else "/", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @app.get("/invite/{token}")
    def invite(token: str, request: Request):
        try:
            session, account = doors.accounts.redeem(token, dict(request.query_params), address(request))
        except LoginRefused as exc:
            return login_page(str(exc), status=403)
        return with_session(RedirectResponse(home(Who(account.name, account.role)), status_code=303), session,
                            request)

    if shares is not None:
        @app.get(SHARE_PATH + "{token:path}")
        async def share(token: str):
            """A share link's page (``ui.share_page``): open to anyone holding the link, without a
            login (the Guard lets it through: it is neither / nor the Arena); an unknown or revoked
            token, and anything under it, answers 404. Nothing of the Gradio apps is reached."""
            page = await run_in_threadpool(shares.page, token)
            if page is None:
                return PlainTextResponse(SHARE_GONE, status_code=404,
                                         headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})
            return HTMLResponse(page.html, headers=page.headers)

    def anyone(request: Request) -> str | None:
        who = doors.who(request)
        return who.name if who else None

    def admins(request: Request) -> str | None:
        who = doors.who(request)
        return who.name if who and who.role == ADMIN else None

    options: dict[str, Any] = dict(show_error=True, footer_links=[], css=css, ssr_mode=False)
    # MCP (ui/mcp_tools.py): the whole app's tools, at /gradio_api/mcp/; none with --arena-only, none in the Arena
    gr.mount_gradio_app(app, arena, path=ARENA_PATH, auth_dependency=anyone, mcp_server=False, **options)
    gr.mount_gradio_app(app, admin, path="/", auth_dependency=admins, mcp_server=not doors.settings.arena_only,
                        **options)
    return app


@dataclass
class Served:
    """A server started by ``start``: its URL, and ``close()`` to stop it."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def wait(self) -> None:
        """Until the server stops (KeyboardInterrupt passes through)."""
        while self.thread.is_alive():
            self.thread.join(0.5)


def start(app: FastAPI, host: str, port: int, trusted_proxies: tuple[str, ...] = ()) -> Served:
    """Serve ``app`` on host:port with uvicorn in a daemon thread, until ``close()``; returns once
    it listens. (In a thread uvicorn leaves the process's signals alone: the caller owns them.)
    A client's address is the connection's, or, from one of ``trusted_proxies`` (addresses or
    networks, --trusted-proxies), what its X-Forwarded-For says: uvicorn trusts the header from
    loopback by default, which let anyone on the machine pick the address the per-address vote
    limit counts. Raises ConfigError when it does not start (the port is taken)."""
    # (http and loop: uvicorn's "auto", httptools and uvloop from requirements.txt where installed)
    # keep-alive: an annotator reads a pair for seconds between two clicks; with uvicorn's 5 s, a
    # click sent on the connection just as the server closed it came back as "connection reset"
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3,
                            timeout_keep_alive=KEEP_ALIVE_SECONDS,
                            ws="none", lifespan="on", proxy_headers=bool(trusted_proxies),
                            forwarded_allow_ips=list(trusted_proxies))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="rat-studio-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"The server did not start on {host}:{port}: is the port taken? Pick another "
                               "with --port.")
        time.sleep(0.02)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return Served(f"http://{shown}:{port}/", server, thread)
