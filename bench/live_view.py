"""How far the live view lags its run, and what showing it costs: the two numbers of issue 41.

Serves the app as a user does (``python app.py ui``, its own process) against the stand-in model
and web of the tests (served from this process), opens the Writer in Debian's headless Chromium at
1366x768, starts a 5-step ``rat-step`` run, turns Present on once the run has begun, and waits for
the page to say Done. Then runs the same task from the command line (``python app.py run``).
Prints, per run and as medians:

  final->done   seconds from the run's Final event being stored (its row's time in the database)
                to the Writer's progress line saying Done (a MutationObserver's time stamp; one
                machine, one clock). Target: at most 2 s.
  app cpu       CPU seconds (user + system) of the app's process from the click on Run to Done,
                a browser attached and Present on
  cli cpu       CPU seconds of the same run from the command line, imports left out (the CLI is
                started by a small script that reads its own CPU after importing app and again
                after ``app.main``)
  ratio         app cpu / cli cpu. Target: at most 1.5.
  page KB       kilobytes the page received on Gradio's event stream (/queue/data, read with the
                DevTools protocol) from the click on Run to Done: the run as the browser is sent it
  reload->step  seconds from a reload of the Writer (another run of the same task, at its step 3)
                to the page showing the step the run is at. Target: at most 2 s.

``--busy N`` starts N processes that each keep a core busy (``while True: pass``) for the whole
measurement, as a local model or a shared server would. ``--latency`` and ``--tps`` pace the
stand-in model (0 --tps: full speed).

    python -m bench.live_view [--runs 2] [--latency 0.3] [--tps 60] [--busy 0] [--steps 5]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.fakes.web_server import FakeWeb
from tests.helpers import cpu_seconds, free_port
from tests.ui.browser import chromium, chromium_missing

ROOT = Path(__file__).resolve().parent.parent
WATCH = """() => {
  window.__done = null;
  const now = () => performance.timeOrigin + performance.now();
  const seen = () => {
    const line = document.querySelector('#rat-tab-writer .rat-progress');
    if (window.__done === null && line && line.textContent.trim().startsWith('Done')) { window.__done = now(); }
  };
  new MutationObserver(seen).observe(document.querySelector('#rat-tab-writer'),
                                     {childList: true, subtree: true, characterData: true});
}"""
# the CLI's run, its imports left out: CPU after `import app`, then after the run
CLI = """
import resource, sys
import app
from core.text import language
language._identifier()  # the task language's model: loaded once a process (the server loads it as it starts)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
before = cpu()
code = app.main(sys.argv[1:])
print(f"CPU-RUN {cpu() - before:.3f}", file=sys.stderr)
sys.exit(code)
"""


def flags(llm: FakeLLM, web: FakeWeb, db: Path, steps: int) -> list[str]:
    return ["--base-url", llm.base_url, "--model", "fake-model", "--search", "searxng",
            "--searxng-url", web.searxng_url, "--allow-private-urls", "--db", str(db),
            "--max-steps", str(steps)]


def env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "GRADIO_ANALYTICS_ENABLED": "False",
            "PYTHONPATH": str(ROOT)}


def serve(llm: FakeLLM, web: FakeWeb, db: Path, steps: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "app.py", *flags(llm, web, db, steps), "--port", str(port), "ui"],
                            cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(f"error: the app did not start: {proc.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.3)


def final_time(db: Path, run_id: str) -> float:
    """When the run's last Final event was stored (epoch seconds)."""
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        (ts,) = con.execute("select max(ts) from events where run_id = ? and type = 'Final'", [run_id]).fetchone()
    return datetime.fromisoformat(ts).timestamp()


def latest_run(db: Path) -> str:
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute("select id from runs order by created desc limit 1").fetchone()[0]


def writer_with_task(browser, url: str, task: str, timeout: float):
    """(page, Writer tab) at 1366x768, the model server answering, rat-step chosen, ``task`` typed."""
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.set_default_timeout(timeout * 1000)
    page.goto(url)
    writer = page.locator("#rat-tab-writer")
    writer.get_by_text("the model server answers").wait_for()
    method = writer.get_by_label("Method")
    if not method.input_value().startswith("rat-step"):
        raise SystemExit(f"error: the Writer's method is {method.input_value()!r}, not rat-step")
    writer.get_by_label("Task").fill(task)
    return page, writer


def received(page) -> list[int]:
    """A one-item list that counts the bytes the page receives on Gradio's event stream (DevTools)."""
    cdp = page.context.new_cdp_session(page)
    streams, total = set(), [0]

    def sent(e: dict) -> None:
        if "/queue/data" in e["request"]["url"]:
            streams.add(e["requestId"])

    def got(e: dict) -> None:
        if e["requestId"] in streams:
            total[0] += e["dataLength"]

    cdp.on("Network.requestWillBeSent", sent)
    cdp.on("Network.dataReceived", got)
    cdp.send("Network.enable")
    return total


def in_browser(url: str, proc: subprocess.Popen, db: Path, task: str, timeout: float,
               profile: str = "") -> tuple[float, float, float]:
    """(final->done s, app CPU s, KB the page received) of one run started in the Writer with
    Present on; with ``profile``, py-spy samples the app meanwhile and writes its collapsed
    stacks there."""
    with chromium() as browser:
        page, writer = writer_with_task(browser, url, task, timeout)
        page.evaluate(WATCH)
        got = received(page)
        spy = subprocess.Popen(["py-spy", "record", "-p", str(proc.pid), "-f", "raw", "-o", profile, "-r", "200"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if profile else None
        before, got[0] = cpu_seconds(proc.pid), 0
        writer.get_by_role("button", name="Run", exact=True).click()
        # the run has begun (a page behind a fast run shows what waited at once: it may be done already)
        writer.locator(".rat-progress").get_by_text(re.compile(r"^(Step \d+ of|Done)")).first.wait_for()
        writer.get_by_role("button", name="Present").click()
        page.wait_for_function("window.__done !== null", timeout=timeout * 1000)
        done = page.evaluate("window.__done") / 1000
        writer.get_by_text("The model's text").wait_for()  # the settled panel too
        spent, kb = cpu_seconds(proc.pid) - before, got[0] / 1000
        if spy is not None:
            spy.send_signal(2)
            spy.wait(timeout=60)
    return done - final_time(db, latest_run(db)), spent, kb


def reload_mid_run(url: str, task: str, steps: int, timeout: float) -> float:
    """Seconds from a reload of the Writer, with the run at step 3 (of ``steps``) or later, to the
    page showing the step the run is at (or Done): the run is the server's, and the page joins it.
    NaN when the run was over before the page showed step 3 (a model at full speed)."""
    with chromium() as browser:
        page, writer = writer_with_task(browser, url, task, timeout)
        writer.get_by_role("button", name="Run", exact=True).click()
        later = "|".join(str(k) for k in range(3, steps + 1))
        line = writer.locator(".rat-progress").get_by_text(re.compile(rf"^(Step ({later}) of|Done)"))
        line.wait_for()
        if line.inner_text().startswith("Done"):  # a model at full speed: over before a reload
            return math.nan
        started = time.monotonic()
        page.reload()
        page.locator("#rat-tab-writer .rat-progress").get_by_text(re.compile(rf"^(Step ({later}) of|Done)")).wait_for()
        took = time.monotonic() - started
        page.locator("#rat-tab-writer .rat-progress").get_by_text(re.compile("^Done")).wait_for()
    return took


def from_cli(llm: FakeLLM, web: FakeWeb, db: Path, steps: int, task: str) -> float:
    done = subprocess.run([sys.executable, "-c", CLI, *flags(llm, web, db, steps), "run", "--method", "rat-step",
                           task], cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stderr.splitlines() if line.startswith("CPU-RUN ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"error: the CLI run failed ({done.returncode}): {done.stderr[-2000:]}")
    return float(lines[-1].split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.3, help="seconds before each answer's first token")
    ap.add_argument("--tps", type=float, default=60.0, help="the model's tokens a second (0: full speed)")
    ap.add_argument("--busy", type=int, default=0, help="processes that each keep a core busy meanwhile")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    ap.add_argument("--profile", default="", help="write py-spy's collapsed stacks of the app's last run here")
    args = ap.parse_args()
    missing = chromium_missing()
    if missing:
        raise SystemExit(f"error: {missing}")
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    rows = []
    try:
        with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
            llm.reply(RatAuthor(draft_steps(args.steps)))
            llm.latency, llm.tokens_per_second = args.latency, (args.tps or None)
            db = Path(tmp) / "rat.db"
            proc, url = serve(llm, web, db, args.steps)
            pace = f"{args.latency:g} s / {args.tps:g} tokens/s" if args.tps else f"{args.latency:g} s / full speed"
            print(f"{args.runs} runs of {args.steps}-step rat-step, model {pace}, {args.busy} busy processes\n")
            heads = (("run", 3), ("final->done s", 15), ("app cpu s", 11), ("cli cpu s", 11), ("ratio", 7),
                     ("page KB", 9), ("reload->step s", 16))
            print("".join(f"{h:>{w}}" for h, w in heads))
            try:
                for n in range(1, args.runs + 1):
                    task = f"Write a short history of Python 3 and its ecosystem (take {n}, {time.time():.0f})."
                    lag, app_cpu, kb = in_browser(url, proc, db, task, args.timeout, args.profile)
                    cli_cpu = from_cli(llm, web, Path(tmp) / f"cli{n}.db", args.steps, task)
                    rejoin = reload_mid_run(url, task.replace("take", "reload"), args.steps, args.timeout)
                    rows.append((lag, app_cpu, cli_cpu, app_cpu / cli_cpu, kb, rejoin))
                    print(f"{n:>3}{lag:>15.2f}{app_cpu:>11.2f}{cli_cpu:>11.2f}{app_cpu / cli_cpu:>7.2f}{kb:>9.0f}"
                          f"{rejoin:>16.2f}")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    finally:
        for p in busy:
            p.kill()
    worst_reload = max((r[5] for r in rows if not math.isnan(r[5])), default=math.nan)
    med = [statistics.median([x for x in col if not math.isnan(x)] or [math.nan]) for col in zip(*rows, strict=True)]
    print(f"med{med[0]:>15.2f}{med[1]:>11.2f}{med[2]:>11.2f}{med[3]:>7.2f}{med[4]:>9.0f}{med[5]:>16.2f}")
    print(f"\nfinal->done: median {med[0]:.2f} s, worst {max(r[0] for r in rows):.2f} s (target <= 2 s); "
          f"app/cli CPU: median {med[3]:.2f}x, worst {max(r[3] for r in rows):.2f}x (target <= 1.5x); "
          f"the page received {med[4]:.0f} KB a run (median); "
          f"reload mid-run -> its step shown: median {med[5]:.2f} s, worst {worst_reload:.2f} s "
          "(target <= 2 s)")


if __name__ == "__main__":
    main()
