"""How the app's listeners are bound (the keyword arguments of Gradio's event methods), one
table for every tab: none is part of the app's API (``api_visibility``), and a stream that follows a
run is not limited by Gradio's queue (``core.live.LiveRuns`` bounds the runs themselves)."""

from __future__ import annotations

PRIVATE = {"api_visibility": "private"}
# following a run: not limited by the queue (core.live.LiveRuns bounds the runs themselves)
STREAM = {**PRIVATE, "show_progress": "hidden", "concurrency_limit": None}
# the settled panel after a stream (RunPanel.settles): one at a time, every panel's in one line, in the
# order they were asked: a settle run late put back what a later one showed (two step actions in a row:
# version 1 after version 2; a Continue's settle after the next run was opened: its Continue hidden);
# one asked while the one before is still on its way runs after it ("always_last"): Gradio's default,
# "once", dropped it, and the page kept the last stream's frame (two step actions in a row, under load)
SETTLE = {**PRIVATE, "show_progress": "hidden", "concurrency_limit": 1, "concurrency_id": "rat-settle",
          "trigger_mode": "always_last"}
