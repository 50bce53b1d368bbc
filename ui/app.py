"""The Gradio app: one tab per module, each built from the same Services.

    build_app(services)   the Blocks (tabs, queue with the settings' concurrency); nothing started
    launch(services)      build and serve on the settings' host and port (127.0.0.1 unless
                          --host says otherwise); a public link only with --share and --auth
"""

from __future__ import annotations

import gradio as gr

from core.services import Services
from ui import arena, history, leaderboard, render, writer

TITLE = "RAT Studio"


def css() -> str:
    """The app's style sheet (passed to launch(); Gradio 6 takes css there, not in Blocks)."""
    return render.CSS


def build_app(services: Services) -> gr.Blocks:
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {TITLE}\nWrite long, sourced texts with a language model, step by step.")
        with gr.Tabs():
            if not services.settings.arena_only:  # annotators must not browse who wrote what
                with gr.Tab("Writer", id="writer", elem_id="rat-tab-writer"):
                    writer.build(services)
                with gr.Tab("History", id="history", elem_id="rat-tab-history") as history_tab:
                    past = history.build(services)
                past.refresh_on(history_tab.select)
            with gr.Tab("Arena", id="arena", elem_id="rat-tab-arena"):
                arena.build(services)
            with gr.Tab("Leaderboard", id="leaderboard", elem_id="rat-tab-leaderboard"):
                leaderboard.build(services)
    demo.queue(default_concurrency_limit=services.settings.concurrency)
    return demo


def launch(services: Services, **overrides) -> gr.Blocks:
    """Start the UI on the settings' host and port (127.0.0.1 unless told otherwise). Blocks
    until the server stops, unless ``prevent_thread_lock=True`` is passed."""
    s = services.settings
    demo = build_app(services)
    options = dict(server_name=s.host, server_port=s.port, share=s.share, auth=s.auth,
                   show_error=True, footer_links=[], css=css())
    options.update(overrides)
    demo.launch(**options)
    return demo
