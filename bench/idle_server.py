"""What the app's server spends while nobody uses it: the CPU of its process per second, served as
``python app.py`` serves it (both apps, their queues), no page open, after a warm-up.

Gradio's queue looks for an event to start and for progress to send in two loops that sleep
between looks; on Linux Gradio sleeps 1 ms and 10 ms, which kept an idle server at about 5% of a
core. The app sleeps ``ui.app.QUEUE_POLL`` and ``PROGRESS_POLL`` seconds instead (an event starts at
most that much later). This serves the app once with each and prints, per setting, the median over
``--rounds`` of the process's CPU seconds per wall second (its threads together, from /proc; the
stand-in model and web of the tests sit idle in the same process).

    python -m bench.idle_server [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import ui.app
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.web_server import FakeWeb
from tests.helpers import cpu_seconds
from tests.ui.browser import serve

#: (name, queue poll, progress poll) of each setting measured.
SETTINGS = (("Gradio's", 0.001, 0.01), ("the app's", ui.app.QUEUE_POLL, ui.app.PROGRESS_POLL))
WARM_UP = 1.0  # seconds served before measuring (start-up work done)


def idle_cpu(built, seconds: float, queue_poll: float, progress_poll: float) -> float:
    """CPU seconds per second of this process while ``built`` is served with the queue's loops
    sleeping ``queue_poll`` and ``progress_poll`` seconds."""
    kept = ui.app.QUEUE_POLL, ui.app.PROGRESS_POLL
    ui.app.QUEUE_POLL, ui.app.PROGRESS_POLL = queue_poll, progress_poll  # (read as the apps are built)
    try:
        with serve(built):
            time.sleep(WARM_UP)
            before, started = cpu_seconds(os.getpid()), time.monotonic()
            time.sleep(seconds)
            return (cpu_seconds(os.getpid()) - before) / (time.monotonic() - started)
    finally:
        ui.app.QUEUE_POLL, ui.app.PROGRESS_POLL = kept


def main(argv: list[str] | None = None) -> dict[str, float]:
    import app as app_module

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds measured per round [5]")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setting, the median printed [3]")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error("--seconds must be more than 0")
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    results: dict[str, float] = {}
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        built = app_module.build(make_settings(Path(folder), llm, web))
        try:
            rounds = {name: [] for name, *_ in SETTINGS}
            for _ in range(args.rounds):  # (the settings in turn: the machine's drift falls on both)
                for name, queue_poll, progress_poll in SETTINGS:
                    rounds[name].append(idle_cpu(built, args.seconds, queue_poll, progress_poll))
        finally:
            built.store.close()
    print(f"the app served, idle: CPU of its process per second (median of {args.rounds} x {args.seconds:g} s)")
    print(f"{'queue sleeps':<14}{'poll s':>8}{'progress s':>12}{'CPU-s/s':>10}")
    for name, queue_poll, progress_poll in SETTINGS:
        results[name] = statistics.median(rounds[name])
        print(f"{name:<14}{queue_poll:>8g}{progress_poll:>12g}{results[name]:>10.3f}")
    return results


if __name__ == "__main__":
    main()
