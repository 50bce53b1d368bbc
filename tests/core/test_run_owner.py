"""Runs have an owner (issue 11, items 4 and 5): one runner per run, a heartbeat, runs whose process
died become interrupted (at start-up and when History loads), and a run's counters are written
with its events, so a kill at any moment leaves them in agreement. A real SQLite file; the CLI as a
subprocess, killed with SIGKILL mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from common.errors import RunLive
from common.events import DraftReady, Final, LLMCalled, RunStarted
from common.types import RunStatus, Task
from core.runner import Runner
from data.store import HOST, Store, new_owner, owner_alive
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, of
from tests.test_app import ROOT, cli

TASK = Task("Write a short history of Python 3 and its ecosystem.")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def a_run(store: Store, **fields) -> str:
    run_id = store.create_run("rat", store.add_task("a task", "writing", ""), {})
    if fields:
        store.update_run(run_id, **fields)
    return run_id


def ago(seconds: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


def test_a_live_owner_keeps_its_run_and_a_gone_one_does_not(tmp_path):
    store = Store(tmp_path / "r.db")
    mine = new_owner()
    live = a_run(store, owner=mine, heartbeat=ago(1))
    with pytest.raises(RunLive, match=rf"Run {live} is already running in this process \(heard from 1 s ago\)"):
        store.claim_run(live, new_owner())
    store.claim_run(live, mine)  # the owner itself may claim again
    stale = a_run(store, owner=mine, heartbeat=ago(120))
    store.claim_run(stale, new_owner())  # not heard from for 2 minutes: gone
    killed = a_run(store, owner=f"{HOST}:{dead_pid()}:abcd1234", heartbeat=ago(1))
    assert not owner_alive(f"{HOST}:{dead_pid()}:abcd1234", ago(1)), "a dead process on this host"
    store.claim_run(killed, new_owner())
    elsewhere = a_run(store, owner="other-host:1:abcd1234", heartbeat=ago(2))
    with pytest.raises(RunLive, match="process 1 on other-host"):
        store.claim_run(elsewhere, new_owner())


def test_orphans_become_interrupted_and_live_runs_do_not(tmp_path):
    store = Store(tmp_path / "r.db")
    killed = a_run(store, owner=f"{HOST}:{dead_pid()}:abcd1234", heartbeat=ago(1))
    silent = a_run(store, owner="other-host:1:abcd1234", heartbeat=ago(600))
    live = a_run(store, owner=new_owner(), heartbeat=ago(2))
    legacy = a_run(store, owner="", heartbeat="")  # written before runs had owners
    store.db.execute("update runs set updated = ? where id = ?", [ago(600), legacy])
    store.db.conn.commit()
    done = a_run(store, status=RunStatus.DONE, owner=f"{HOST}:{dead_pid()}:x", heartbeat=ago(999))
    assert sorted(store.interrupt_orphans()) == sorted([killed, silent, legacy])
    assert [store.get_run(r).status for r in (killed, silent, legacy, live, done)] == [
        "interrupted", "interrupted", "interrupted", "running", "done"]
    assert "continue it from where it stopped" in store.get_run(killed).error
    assert store.interrupt_orphans() == []


async def test_a_second_resume_of_a_live_run_is_refused_and_nothing_is_lost(app, llm):
    llm.reply(RatAuthor(draft_steps(3)))
    drafted = await collect(app.runner.start("rat-step", TASK, draft_only=True))
    run_id = drafted[0].run_id
    llm.latency = 0.2
    first = app.runner.resume(run_id)
    started = await first.__anext__()
    assert isinstance(started, RunStarted)
    with pytest.raises(RunLive, match=f"Run {run_id} is already running in this process"):
        await collect(app.runner.resume(run_id))
    rest = [e async for e in first]
    assert isinstance(rest[-1], Final)
    stored = app.store.events(run_id)
    seqs = [row.seq for row in app.store.event_rows(run_id)]
    assert seqs == list(range(1, len(seqs) + 1)), "one writer: no gap, no clash"
    run = app.store.get_run(run_id)
    assert run.status == RunStatus.DONE
    assert run.llm_calls == len(of(stored, LLMCalled)), "the counters agree with the events"


@pytest.mark.parametrize("read", [1, 2])
async def test_a_continuation_closed_at_its_first_events_is_interrupted_and_goes_on_again(app, llm, read):
    """A resume (with an edited draft: RunStarted, then the draft) or a redo whose reader stops at
    its first events (Ctrl-C, a closed follower) leaves the run interrupted and free, not
    "running" with no runner until its heartbeat goes stale (the claim and the first event came
    before the clean-up was in place)."""
    llm.reply(RatAuthor(draft_steps(3)))
    drafted = await collect(app.runner.start("rat-step", TASK, draft_only=True))
    run_id = drafted[0].run_id
    resumed = app.runner.resume(run_id, draft=["Step one, edited.", "Step two, edited."])
    for _ in range(read):
        await resumed.__anext__()
    await resumed.aclose()
    assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED
    done = await collect(app.runner.resume(run_id))  # not refused as live
    assert isinstance(done[-1], Final) and app.store.get_run(run_id).status == RunStatus.DONE
    redone = app.runner.redo(run_id, 1, action="regenerate")
    for _ in range(read):
        await redone.__anext__()
    await redone.aclose()
    assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED
    assert isinstance((await collect(app.runner.resume(run_id)))[-1], Final)


async def test_a_run_beats_while_it_waits_on_the_model(app, llm):
    runner = Runner(app.store, app.clients, app.settings, memory=app.runner.memory, heartbeat=0.05)
    llm.reply(RatAuthor(draft_steps(1)))
    llm.latency = 0.6
    running = asyncio.create_task(collect(runner.start("cot", TASK)))
    await asyncio.sleep(0.15)
    (run,) = app.store.list_runs(limit=1)
    await asyncio.sleep(0.3)
    assert app.store.get_run(run.id).heartbeat > run.heartbeat, "the heartbeat moves though no event came"
    events = await running
    assert isinstance(events[-1], Final)


def test_a_run_killed_mid_way_becomes_interrupted_with_its_counters_whole_and_continues(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(4)))
    llm.latency = 0.15
    db = tmp_path / "kill.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    env.update({"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
                "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
                "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(db)})
    proc = subprocess.Popen([sys.executable, "app.py", "run", TASK.prompt, "--method", "rat-step"], cwd=ROOT,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        store = None
        while time.monotonic() < deadline:
            if db.exists():
                store = store or Store(db)
                runs = store.list_runs(limit=1)
                if runs and runs[0].steps_done >= 2:
                    break
            time.sleep(0.05)
        else:
            proc.kill()
            pytest.fail(f"the run did not reach step 2: {proc.communicate()[1][-2000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    run = store.list_runs(limit=1)[0]
    assert run.status == RunStatus.RUNNING, "nobody could say otherwise: the process was killed"
    events = store.events(run.id)
    assert run.llm_calls == len(of(events, LLMCalled)), "counters were written with the events"
    assert run.steps_total == len(of(events, DraftReady)[-1].steps)
    history = cli("history", "--json", env_extra={k: v for k, v in env.items() if k.startswith("RAT_STUDIO")})
    assert json.loads(history.stdout)[0]["status"] == "interrupted", history.stderr
    llm.latency = 0.0
    resumed = cli("resume", run.id, env_extra={k: v for k, v in env.items() if k.startswith(("RAT_", "OPENAI_"))})
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(r"resuming \w+ \(rat-step\)", resumed.stderr)
    assert store.get_run(run.id).status == RunStatus.DONE


def test_the_cli_says_resume_only_for_methods_that_can(tmp_path, llm, web):
    llm.down = True
    env = {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
           "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
           "RAT_STUDIO_DB": str(tmp_path / "c.db"), "RAT_STUDIO_MAX_RETRIES": "0"}
    rat = cli("run", "A task", "--method", "rat", env_extra=env)
    assert rat.returncode == 1 and "continue with: python app.py resume" in rat.stderr
    itrg = cli("run", "A task", "--method", "itrg-refine", env_extra=env)
    assert itrg.returncode == 1, itrg.stderr
    assert "resume" not in itrg.stderr.replace("cannot resume", "")
    assert 'itrg-refine cannot resume; run it again: python app.py run "A task" --method itrg-refine' in itrg.stderr
