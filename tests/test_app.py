"""The command line, run as a user runs it: `python app.py ...` in a subprocess, talking HTTP to
the fake model server and the local web."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.scripts import RatAuthor, draft_steps

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env_extra: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "app.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def env(tmp_path, llm, web):
    return {
        "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
        "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
        "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(tmp_path / "cli.db"),
    }


def test_run_writes_a_sourced_markdown_article(tmp_path, env, llm):
    author = RatAuthor(draft_steps(3))
    llm.reply(author)
    out = tmp_path / "article.md"
    proc = cli("run", "Write a short history of Python 3.", "--out", str(out), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    log = proc.stderr
    assert "draft: 3 steps" in log and "step 2 of 3" in log and "query:" in log
    assert re.search(r"ok\s+http://127\.0\.0\.1:\d+/pages/", log)
    assert re.search(r"revised step 3: [\d,]+ -> [\d,]+ chars", log)
    run_id = re.search(r"run id: ([0-9a-f]{12})", log).group(1)
    article = out.read_text()
    assert article.startswith("# Write a short history of Python 3.")
    assert article.count("[revised]") == 3
    sources = re.findall(r"^(\d+\.|-) \[(.+)\]\((http://127\.0\.0\.1:\d+/pages/[^)]+)\) — used in steps? "
                         r"([\d, ]+)(?:; no sentence cites it)?$", article, flags=re.M)
    numbered = [int(n.rstrip(".")) for n, *_ in sources if n != "-"]  # cited: 1..n; read, not cited: "-"
    assert sources and numbered == list(range(1, len(numbered) + 1))
    used = {int(x) for *_, steps in sources for x in steps.split(",")}
    assert used == {1, 2, 3}
    # the same article comes back from the store
    shown = cli("show", run_id, env_extra=env)
    assert shown.returncode == 0 and shown.stdout.strip() == article.strip()
    history = cli("history", "--json", env_extra=env)
    assert json.loads(history.stdout)[0]["id"] == run_id


def test_flags_work_before_and_after_the_command(tmp_path, env, llm):
    llm.reply(RatAuthor(draft_steps(1)))
    db = tmp_path / "other.db"
    base = {k: v for k, v in env.items() if k != "RAT_STUDIO_DB"}
    proc = cli("--db", str(db), "run", "A task", "--method", "rat-step", "--model", "fake-draft", env_extra=base)
    assert proc.returncode == 0, proc.stderr
    assert db.exists()
    assert {body["model"] for body in llm.requests} == {"fake-draft"}


def test_empty_task_exits_nonzero_with_one_clear_line(env):
    proc = cli("run", "   ", env_extra=env)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0
    assert proc.stderr.startswith("error: The task is empty")


def test_unreachable_model_server_says_what_to_set(env):
    bad = dict(env, OPENAI_BASE_URL="http://127.0.0.1:9/v1", RAT_STUDIO_MAX_RETRIES="0")
    proc = cli("run", "A task", env_extra=bad)
    assert proc.returncode == 1
    assert "127.0.0.1:9" in proc.stderr and "OPENAI_BASE_URL" in proc.stderr
    assert "resume" in proc.stderr


def test_bad_setting_is_a_config_error(env):
    proc = cli("run", "A task", env_extra=dict(env, RAT_STUDIO_SEARCH="bing"))
    assert proc.returncode == 2
    assert "Unknown search provider bing" in proc.stderr


def test_fetch_prints_text_and_metadata(env, web):
    proc = cli("fetch", web.page_url("blog.python.org.html"), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    assert "title: Python 3.6.0 is now available!" in proc.stdout
    assert "Python 3.6.0 is the newest major release" in proc.stdout


def test_fetch_refuses_private_address_without_the_flag(env, web):
    no_private = {k: v for k, v in env.items() if k != "RAT_STUDIO_ALLOW_PRIVATE_URLS"}
    proc = cli("fetch", web.page_url("blog.python.org.html"), env_extra=no_private)
    assert proc.returncode == 1
    assert "--allow-private-urls" in proc.stderr


def test_search_prints_results(env):
    proc = cli("search", "python release", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    assert "1. Python 3.6.0 is now available!" in proc.stdout
    assert "results from searxng" in proc.stderr


def test_a_killed_run_resumes_from_its_last_completed_step(tmp_path, env, llm):
    """A real crash: the process is killed mid-run (no clean-up at all); `resume` goes on after
    the last revised step, and the draft and finished steps are not asked for again."""
    import signal
    import time

    author = RatAuthor(draft_steps(4))
    llm.reply(author)
    llm.latency = 0.3
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    proc = subprocess.Popen([sys.executable, "app.py", "run", "Write about Python 3.", "--out", str(tmp_path / "a.md")],
                            cwd=ROOT, env={**clean, **env},
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    log = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        log.append(line)
        if line.startswith("  revised step 2"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    run_id = re.search(r"run ([0-9a-f]{12})", "".join(log)).group(1)
    assert "revised step 2" in "".join(log)
    llm.latency = 0.0
    calls_before = len(author.calls)
    resumed = cli("resume", run_id, "--out", str(tmp_path / "b.md"), env_extra=env)
    assert resumed.returncode == 0, resumed.stderr
    kinds = [k for k, _ in author.calls[calls_before:]]
    assert kinds.count("draft") == 0
    assert kinds.count("query") in (2, 3)  # steps 3 and 4 (and step 3 again if it was cut mid-way)
    assert "revised step 4" in resumed.stderr and "revised step 1" not in resumed.stderr
    article = (tmp_path / "b.md").read_text()
    assert article.count("[revised]") == 4


def test_method_params_reach_the_method_and_bad_ones_are_refused(env, llm):
    from tests.fakes.method_scripts import __name__ as _  # noqa: F401  (the scripts exist)

    llm.reply(lambda body: "A plain answer.")
    proc = cli("run", "Who wrote Hamlet?", "--method", "itrg-refresh", "--param", "itrg.iterations=2", env_extra=env)
    assert proc.returncode == 0, proc.stderr
    generations = [b for b in llm.requests if "Hamlet" in str(b["messages"])]
    assert len(generations) == 2, "two ITRG iterations, one generation each"
    bad = cli("run", "x", "--param", "itrg.iterations", env_extra=env)
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_help_lists_every_setting_with_its_variable_and_default():
    from common.settings import SETTINGS

    proc = cli("--help")
    assert proc.returncode == 0, proc.stderr
    text = "".join(proc.stdout.split())  # argparse wraps the lines where it likes
    for s in SETTINGS:
        assert s.env in text
        if s.flag:
            assert "".join(f"{s.flag} {s.metavar or ''}".split()) in text
            assert "".join(f"[{s.env}; {s.shown_default}]".split()) in text, s.flag
