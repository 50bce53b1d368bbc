"""The Gradio app: one tab per module, each built from the parts it uses.

    build_app(settings, store, clients, runner, arena_service)
                          the Blocks (tabs, queue with the settings' concurrency); nothing started;
                          ``arena_service`` is app.py's one arena service (``App.arena``)
    launch(...)           build and serve on the settings' host and port (127.0.0.1 unless
                          --host says otherwise); a public link only with --share and --auth
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gradio as gr

from annotation.service import Arena
from common.settings import Settings
from core.clients import Clients
from core.live import LiveRuns
from core.runner import Runner
from ui import arena, history, leaderboard, writer

TITLE = "RAT Studio"


STYLE = Path(__file__).with_name("style.css")


def css() -> str:
    """The app's style sheet, ``ui/style.css`` (passed to launch(); Gradio 6 takes css there, not in
    Blocks)."""
    return STYLE.read_text(encoding="utf-8")


def build_app(settings: Settings, store, clients: Clients, runner: Runner, arena_service: Arena, *,
              warm: bool = False) -> gr.Blocks:
    """``arena_service``: app.py's one arena service (``App.arena``), for both the Arena and the
    Leaderboard tab (one leaderboard cache). ``warm``: bring the leaderboard up to date in the
    background now (``Arena.warm_up``), as ``launch`` does, so that neither the first pair nor the
    first opening of its tab reads every vote."""
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {TITLE}\nWrite long, sourced texts with a language model, step by step.")
        with gr.Tabs():
            if not settings.arena_only:  # annotators must not browse who wrote what
                live = LiveRuns(runner, limit=settings.concurrency)  # the runs are the server's
                with gr.Tab("Writer", id="writer", elem_id="rat-tab-writer"):
                    writer.build(runner, live, store, clients)
                with gr.Tab("History", id="history", elem_id="rat-tab-history") as history_tab:
                    past = history.build(runner, live, store, clients)
                past.refresh_on(history_tab.select)
            with gr.Tab("Arena", id="arena", elem_id="rat-tab-arena"):  # one service for both tabs
                arena.build(arena_service)
            with gr.Tab("Leaderboard", id="leaderboard", elem_id="rat-tab-leaderboard") as board_tab:
                # annotators' deployments serve nothing that spends the model
                board = leaderboard.build(arena_service, None if settings.arena_only else clients)
            board.load_on(board_tab.select)  # computed when the tab opens, not on every page load
            if warm:
                arena_service.warm_up(leaderboard.BOOTSTRAP)
    demo.queue(default_concurrency_limit=settings.concurrency)
    return demo


def launch(settings: Settings, store, clients: Clients, runner: Runner, arena_service: Arena,
           **overrides) -> gr.Blocks:
    """Start the UI on the settings' host and port (127.0.0.1 unless told otherwise). Blocks
    until the server stops, unless ``prevent_thread_lock=True`` is passed.

    While it blocks, SIGTERM stops the server as Ctrl-C does (a second signal gets the handling it
    had before: SIGTERM's default ends the process at once); then the runs it was driving are
    stored as interrupted, to be continued (``Runner.interrupt_live``), the store is closed (its
    WAL folded back), and the page-extraction workers end as the process exits
    (``core.retrieval.extract.shutdown``)."""
    s = settings
    demo = build_app(settings, store, clients, runner, arena_service, warm=True)
    options = dict(server_name=s.host, server_port=s.port, share=s.share, auth=s.auth,
                   show_error=True, footer_links=[], css=css())
    options.update(overrides)
    if options.get("prevent_thread_lock") or threading.current_thread() is not threading.main_thread():
        demo.launch(**options)  # the caller owns the process and its signals
        return demo
    with _signals_stop_the_server():
        try:
            demo.launch(**options)  # Gradio closes its server on KeyboardInterrupt and returns
        finally:
            stopped = runner.interrupt_live()
            if stopped:
                print(f"stopped {len(stopped)} run(s) as interrupted: continue them in History, or with "
                      f"python app.py resume RUN_ID ({', '.join(stopped)})", file=sys.stderr)
            store.close()  # folds the WAL back into the file
    return demo


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
