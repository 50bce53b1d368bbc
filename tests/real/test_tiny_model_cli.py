"""What README tells a user with no key to run: ``python scripts/tiny_model.py run "TASK"``, a
subprocess that starts its own tiny model and then app.py on it, here over the local web. The
text is nonsense; the exit code, the stored run and the printed article must agree, and a run
that found no source must not exit 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from data.store import Store
from tests.real.support import WRITING
from tests.test_app import ROOT

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(300)]


def test_tiny_model_run_from_the_command_line(tmp_path, shared_web):
    """A short run (two steps, short answers, 300 tokens of passages a revision: the app's 1,500
    were most of the model's time, on a server of its own that the reply cache does not serve)."""
    db = tmp_path / "tiny.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    done = subprocess.run(
        [sys.executable, "scripts/tiny_model.py", "run", WRITING.prompt, "--method", "rat-step",
         "--search", "searxng", "--searxng-url", shared_web.searxng_url, "--allow-private-urls",
         "--max-steps", "2", "--k", "2", "--max-tokens", "64", "--passage-tokens", "300", "--db", str(db)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280, stdin=subprocess.DEVNULL)
    assert "writes poorly" in done.stderr, "the script says plainly that the model writes poorly"
    assert done.returncode in (0, 3), f"exit {done.returncode}:\n{done.stderr[-2000:]}"
    run_id = re.search(r"run id: (\w+)", done.stderr).group(1)
    store = Store(db)
    try:
        run = store.get_run(run_id)
    finally:
        store.close()
    assert run.method == "rat-step" and run.final_text.strip()
    assert done.stdout.startswith(f"# {WRITING.prompt}"), done.stdout[:300]
    assert run.final_text.split("\n\n")[0][:40] in done.stdout, "the article printed is the one stored"
    if done.returncode == 3:
        assert run.status == "unsourced" and "warning: unsourced" in done.stderr
    else:
        assert run.status == "done" and run.sources, "exit 0 only for a run with sources"
        for source in run.sources:
            assert source["url"] in done.stdout


def test_the_tests_model_runs_below_their_priority(tiny_model):
    """Every thread of the session's model server is 10 below the tests' CPU priority (higher
    nice): on two cores it kept both busy, and a browser test beside it timed out."""
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    tasks = Path(f"/proc/{tiny_model.process.pid}/task")
    nices = [int((task / "stat").read_text().rsplit(")", 1)[1].split()[16]) for task in tasks.iterdir()]
    assert nices and all(n == min(ours + 10, 19) for n in nices), nices
