"""The Gradio app: one tab per module, each built from the parts it uses.

    build_app(settings, store, clients, runner, arena_service)
                          the Blocks (tabs, queue with the settings' concurrency); nothing started;
                          ``arena_service`` is app.py's one arena service (``App.arena``)
    launch(...)           build and serve on the settings' host and port (127.0.0.1 unless
                          --host says otherwise); a public link only with --share and --auth
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from annotation.service import Arena
from common.settings import Settings
from core.clients import Clients
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
                with gr.Tab("Writer", id="writer", elem_id="rat-tab-writer"):
                    writer.build(runner, store, clients)
                with gr.Tab("History", id="history", elem_id="rat-tab-history") as history_tab:
                    past = history.build(runner, store, clients)
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
    until the server stops, unless ``prevent_thread_lock=True`` is passed."""
    s = settings
    demo = build_app(settings, store, clients, runner, arena_service, warm=True)
    options = dict(server_name=s.host, server_port=s.port, share=s.share, auth=s.auth,
                   show_error=True, footer_links=[], css=css())
    options.update(overrides)
    demo.launch(**options)
    return demo
