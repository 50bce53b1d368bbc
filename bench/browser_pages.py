"""What one page of the app costs the browser tests, and who spends it.

The browser tests open about 120 pages of the app, each in a fresh context of the tests' one
headless Chromium (tests/ui/browser.py): after the model and the browser's own work on a run, the
largest share of the suite's CPU. This builds the app against the stand-in model and web of the
tests, serves it with the tests' ``serve``, and opens the Writer ``--pages`` times (after one left
out: the process's first), each in a fresh context at 1280x900, closed after. Prints per page the
median CPU seconds from a context's opening to its Writer saying the model server answers, then
0.5 s more:

  machine   the whole machine (/proc/stat; run it on an otherwise idle machine)
  renderer  the page's renderer process (read before the context closes)
  browser   Chromium's browser process; gpu, utility (its network service), zygote
  node      Playwright's driver
  server    this process: the app's server (and the stand-ins, idle here)
  seconds   wall seconds of the same

    python -m bench.browser_pages [--pages 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.web_server import FakeWeb
from tests.helpers import cpu_seconds, machine_busy
from tests.ui.browser import chromium, chromium_missing, close_chromium, serve

READY = "the model server answers"
KINDS = ("machine", "renderer", "browser", "gpu", "utility", "zygote", "node", "server", "seconds")


def kind_of(cmdline: bytes) -> str | None:
    if b"chromium" in cmdline:
        for kind in ("renderer", "gpu", "utility", "zygote"):
            if f"--type={kind}".encode() in cmdline:
                return kind
        return "browser"
    return "node" if b"playwright" in cmdline else None


def by_process() -> Counter:
    """CPU seconds so far of the processes that serve a page, summed by kind."""
    spent: Counter = Counter({"server": cpu_seconds(os.getpid())})
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                kind = kind_of(Path(f"/proc/{entry}/cmdline").read_bytes())
                if kind:
                    spent[kind] += cpu_seconds(int(entry))
            except (OSError, ValueError):  # (gone meanwhile)
                continue
    return spent


def one_page(browser, url: str) -> Counter:
    from playwright.sync_api import expect

    before, busy, wall = by_process(), machine_busy()[0], time.monotonic()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    expect(page.locator("#rat-tab-writer").get_by_text(READY)).to_be_visible(timeout=60_000)
    time.sleep(0.5)
    spent = by_process()
    spent.subtract(before)
    spent["machine"], spent["seconds"] = machine_busy()[0] - busy, time.monotonic() - wall
    context.close()
    return spent


def main(argv: list[str] | None = None) -> int:
    import app as app_module

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=6, help="pages to open (after the first, left out)")
    args = parser.parse_args(argv)
    if chromium_missing():
        print(f"no browser: {chromium_missing()}")
        return 2
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        built = app_module.build(make_settings(Path(folder), llm, web))
        with serve(built) as url, chromium() as browser:
            one_page(browser, url)
            rows = [one_page(browser, url) for _ in range(args.pages)]
        close_chromium()
    print(f"the Writer, {len(rows)} pages, each in a fresh context; median per page:")
    for kind in KINDS:
        unit = "s" if kind == "seconds" else "CPU-s"
        print(f"  {kind:<9} {statistics.median(row[kind] for row in rows):6.2f} {unit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
