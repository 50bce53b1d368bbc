"""bench/browser_pages.py sorts the processes that serve a page by kind, from their command lines."""

from __future__ import annotations

from bench.browser_pages import kind_of


def test_chromiums_processes_and_playwrights_driver_are_told_apart_and_others_left_out():
    chromium = b"/usr/lib/chromium/chromium\0--headless\0"
    assert kind_of(chromium + b"--no-sandbox\0") == "browser"
    assert kind_of(chromium + b"--type=renderer\0--enable-features=x\0") == "renderer"
    assert kind_of(chromium + b"--type=gpu-process\0") == "gpu"
    assert kind_of(chromium + b"--type=utility\0--utility-sub-type=network.mojom.NetworkService\0") == "utility"
    assert kind_of(chromium + b"--type=zygote\0") == "zygote"
    assert kind_of(b"/usr/lib/python3/site-packages/playwright/driver/node\0run-driver\0") == "node"
    assert kind_of(b"python3\0-m\0pytest\0") is None
