"""The Gradio app: one tab per module, each built from the parts it uses, and the server it runs in.

    build_app(settings, store, clients, runner, rooms, role=ADMIN)
                          the Blocks (tabs, queue with the settings' concurrency); nothing started.
                          ADMIN: every tab the deployment has (--arena-only: Arena and Leaderboard),
                          and the MCP tools (ui/mcp_tools.py; none with --arena-only);
                          ANNOTATOR: the Arena alone (no ratings, no other voters, no runs)
    serve(...)            both apps behind ``ui.server`` (login, invite links, same-origin writes) on
                          the settings' host and port, in a thread; returns ``ui.server.Served``
    launch(...)           serve until Ctrl-C or SIGTERM, then store the live runs as interrupted
"""

from __future__ import annotations

import html
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gradio as gr

from annotation.accounts import ADMIN, ANNOTATOR, Accounts, SharedLogin
from annotation.rooms import ArenaRooms
from common.settings import Settings
from core.clients import Clients
from core.live import LiveRuns
from core.runner import Runner
from core.text import language
from ui import arena, gradio_start, history, leaderboard, mcp_tools, server, writer
from ui.listeners import PRIVATE

TITLE = "RAT Studio"


STYLE = Path(__file__).with_name("style.css")
#: Run first in every page of the app: animation frames for a page that does not change, at most one a second
IDLE_FRAMES = Path(__file__).with_name("idle_frames.js")


def css() -> str:
    """The app's style sheet, ``ui/style.css`` (passed to launch(); Gradio 6 takes css there, not in
    Blocks)."""
    return STYLE.read_text(encoding="utf-8")


def build_app(settings: Settings, store, clients: Clients, runner: Runner, rooms: ArenaRooms, *,
              role: str = ADMIN, warm: bool = False, accounts: Accounts | None = None) -> gr.Blocks:
    """``rooms``: app.py's arena rooms (``App.rooms``): the annotators' side for the Arena tab,
    what the votes say and the admin's work for the Leaderboard tab (one leaderboard cache).
    ``role``: ADMIN builds every tab the deployment has,
    ANNOTATOR the Arena alone (the events of the other tabs do not exist in it). ``accounts``: for
    an account's quota and completion code in the Arena. ``warm``: bring the leaderboard up to
    date in the background now (``Results.warm_up``), as ``serve`` does once its port answers, so
    that neither the first pair nor the first opening of its tab reads every vote."""
    # each export hands Gradio files, which it copies into its cache: files older than a day go, hourly
    with gradio_start.one_app(), gr.Blocks(title=TITLE, analytics_enabled=False, delete_cache=CACHE_KEPT) as demo:
        with gr.Row(elem_id="rat-header"):
            gr.Markdown(f"# {TITLE}\nWrite long, sourced texts with a language model, step by step."
                        if role == ADMIN else f"# {TITLE} · Arena")
            who = gr.HTML(elem_id="rat-who")  # HTML: Gradio's Markdown opens a link in a new tab
        demo.load(whoami, outputs=who, queue=False, **PRIVATE)
        if role == ANNOTATOR:
            arena.build(rooms.arena, accounts, start_on_load=True)
        else:
            with gr.Tabs():
                if not settings.arena_only:  # annotators must not browse who wrote what
                    live = LiveRuns(runner, limit=settings.concurrency)  # the runs are the server's
                    with gr.Tab("Writer", id="writer", elem_id="rat-tab-writer"):
                        writer.build(runner, live, store, clients)
                    with gr.Tab("History", id="history", elem_id="rat-tab-history") as history_tab:
                        past = history.build(runner, live, store, clients)
                    past.refresh_on(history_tab.select)
                with gr.Tab("Arena", id="arena", elem_id="rat-tab-arena"):  # one service for both tabs
                    arena.build(rooms.arena, accounts)
                with gr.Tab("Leaderboard", id="leaderboard", elem_id="rat-tab-leaderboard") as board_tab:
                    # annotators' deployments serve nothing that spends the model
                    board = leaderboard.build(rooms, None if settings.arena_only else clients, accounts)
                board.load_on(board_tab.select)  # computed when the tab opens, not on every page load
            if not settings.arena_only:  # the MCP tools (ui/mcp_tools.py): --arena-only serves none
                mcp_tools.build(runner, live, store, rooms.results)
        if warm:
            rooms.results.warm_up(leaderboard.BOOTSTRAP)
    queue(demo, settings.concurrency)
    return demo


#: Gradio's file cache (the Writer's downloads): (every N seconds, delete files older than M seconds)
CACHE_KEPT = (3600, 86400)
#: Gradio's monitoring summary: recent events kept, and events between two summaries (nothing of
#: ours reads it; see ``queue``).
ANALYTICS_EVENTS, ANALYTICS_EVERY = 1_000, 100
#: Seconds Gradio's queue sleeps, while it has nothing to do, before it looks again for an event to
#: start and for progress to send. Gradio's own on Linux (0.001 and 0.01) kept an idle server at 5%
#: of a core; these keep it at about 2% and start an event at most 5 ms later (``python -m
#: bench.idle_server``).
QUEUE_POLL, PROGRESS_POLL = 0.005, 0.1


def queue(demo: gr.Blocks, concurrency: int) -> None:
    """Give ``demo`` the queue the app serves it with: ``concurrency`` runs of each event at once,
    Gradio's monitoring summary made cheap, and an idle queue that sleeps. By default Gradio
    rebuilds that summary (a pandas DataFrame of the last 10,000 events, grouped per function)
    after every event: several ms of CPU per vote or pair at first, tens of ms once the server has
    seen 10,000 events. We keep ANALYTICS_EVENTS and rebuild it every ANALYTICS_EVERY events. And
    its loops wake every QUEUE_POLL and PROGRESS_POLL seconds when there is nothing to do, not a
    thousand times a second. (Attributes of Gradio's queue, checked by tests/ui/test_app_tabs.py
    so an upgrade that renames them is caught.)"""
    demo.queue(default_concurrency_limit=concurrency)
    demo._queue.ANALYTICS_MAX_EVENTS = ANALYTICS_EVENTS
    demo._queue.ANAYLTICS_CACHE_FREQUENCY = ANALYTICS_EVERY  # (Gradio's spelling)
    demo._queue.sleep_when_free = QUEUE_POLL
    demo._queue.progress_update_sleep_when_free = PROGRESS_POLL


def whoami(request: gr.Request) -> str:
    """The header's corner: who is logged in, and the way out (none when nobody logs in)."""
    name = getattr(request, "username", None)
    logged_in = name or (getattr(request, "cookies", None) or {}).get(server.COOKIE)
    if not logged_in:
        return ""
    shown = f"<strong>{html.escape(name)}</strong> · " if name else ""
    return f"{shown}<a href='/logout'>Log out</a>"  # in this tab: the page left behind is logged out


def serve(settings: Settings, store, clients: Clients, runner: Runner, rooms: ArenaRooms,
          accounts: Accounts | None = None, *, port: int | None = None) -> server.Served:
    """Build both apps (the whole one for admins, the Arena alone for annotators) and serve them
    behind ``ui.server`` on the settings' host and ``port`` (default the settings'), in a thread.
    Raises ConfigError when the port is taken."""
    accounts = accounts or Accounts(store, study_accounts_per_address=settings.study_accounts_per_address)
    doors = server.Doors(settings, accounts, SharedLogin(*settings.auth) if settings.auth else None)
    whole = build_app(settings, store, clients, runner, rooms, role=ADMIN, accounts=accounts)
    alone = build_app(settings, store, clients, runner, rooms, role=ANNOTATOR, accounts=accounts)
    shares = None if settings.arena_only else share_pages(store, settings)  # annotators' deployments read no run
    script = IDLE_FRAMES.read_text(encoding="utf-8")
    served = server.start(server.server_app(doors, whole, alone, css=css(), script=script, shares=shares),
                          settings.host, port or settings.port, settings.trusted_proxies)
    rooms.results.warm_up(leaderboard.BOOTSTRAP)  # once the port answers: the first page does not wait for it
    if not settings.arena_only:
        language.warm_up()  # the task language's model, before the first run needs it
    return served


def share_pages(store, settings: Settings):
    """The share links' pages (``ui.share_page``), read through their own authoring door."""
    from core.authoring import Authoring
    from core.sharing import Sharing
    from ui.share_page import SharePages

    return SharePages(Sharing(store, Authoring(store, settings.method.cite_threshold)))


def launch(settings: Settings, store, clients: Clients, runner: Runner, rooms: ArenaRooms,
           accounts: Accounts | None = None) -> None:
    """Serve the UI on the settings' host and port (127.0.0.1 unless told otherwise) until Ctrl-C
    or SIGTERM (a second signal gets the handling it had before: SIGTERM's default ends the process
    at once); then the runs it was driving are stored as interrupted, to be continued
    (``Runner.interrupt_live``), the store is closed (its WAL folded back), and the
    page-extraction workers end as the process exits (``core.retrieval.extract.shutdown``).
    With --share, a public link through Gradio's tunnel as well."""
    served = serve(settings, store, clients, runner, rooms, accounts)
    print(f"* Running on {served.url}", flush=True)
    if not settings.arena_only:
        print(f"* MCP tools on {served.url}gradio_api/mcp/ (README.md, section MCP)", flush=True)
    if settings.share:
        print(f"* Public link: {public_link(settings)}", flush=True)
    with _signals_stop_the_server():
        try:
            served.wait()
        except KeyboardInterrupt:
            pass
        finally:
            served.close()
            stopped = runner.interrupt_live()
            if stopped:
                print(f"stopped {len(stopped)} run(s) as interrupted: continue them in History, or with "
                      f"python app.py resume RUN_ID ({', '.join(stopped)})", file=sys.stderr)
            store.close()  # folds the WAL back into the file


def public_link(settings: Settings) -> str:
    """A public link to the local server through Gradio's share tunnel (needs the internet)."""
    import secrets

    from gradio import networking

    return networking.setup_tunnel(local_host=settings.host, local_port=settings.port,
                                   share_token=secrets.token_urlsafe(32), share_server_address=None,
                                   share_server_tls_certificate=None)


@contextmanager
def _signals_stop_the_server() -> Iterator[None]:
    """SIGTERM and SIGINT raise KeyboardInterrupt in the main thread (the first of them; then the
    handlers that were there before are back: SIGTERM's default ends the process at once)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def stop(signum: int, frame) -> None:
        restore()
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in previous:
        signal.signal(sig, stop)
    try:
        yield
    finally:
        restore()
