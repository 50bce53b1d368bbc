"""The run commands of the command line, through ``app.main`` as ``python app.py`` calls it (the
fake model server and the local web over HTTP, a real SQLite file): ``resume RUN --draft FILE``,
``show`` of a run that has not finished, a unique prefix of a run id in every command that takes
one (and in the History tab), ``history``'s table, and a closed pipe on standard output (``| head``)
in real subprocesses."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import app as app_module
from common.events import Final
from common.settings import Settings
from common.types import RunStatus
from core.live import LiveRuns
from core.text.prompts import join_steps
from data.store import MIN_RUN_PREFIX, Store, new_owner
from data.versions import Versions
from tests.fakes.scripts import TOPICS, RatAuthor, draft_steps
from ui.cli.runs import EXIT_UNFINISHED
from ui.runs_table import HISTORY_HEADERS, history_rows

ROOT = Path(__file__).resolve().parents[1]
TASK = "Write a short history of Python 3 and its ecosystem."
EDITED = [f"{TOPICS[4]} The author's own words.", f"{TOPICS[5]} Also the author's."]


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "cli.db"


@pytest.fixture
def env(db, llm, shared_web) -> dict[str, str]:
    return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": shared_web.searxng_url,
            "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(db)}


@pytest.fixture
def store(db):
    s = app_module.build(Settings(db_path=db)).store  # no model or search is used
    yield s
    s.close()


def stored_run(store: Store, status: str = "done", text: str = "", **changes) -> str:
    """A run stored as a finished (or stopped) run would be: its Final event when it has a text."""
    run_id = store.create_run("rat", store.add_task(TASK), {})
    if text:
        store.append_event(run_id, 1, Final(text=text))
    store.update_run(run_id, status=status, final_text=text, **changes)
    return run_id


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.endswith("\n"), err
    return err


# -- resume RUN --draft FILE ----------------------------------------------------------------------
@pytest.mark.parametrize("source", ["file", "stdin"])
def test_resume_continues_a_draft_only_run_with_the_edited_draft(cli, env, llm, db, tmp_path, monkeypatch, source):
    llm.reply(RatAuthor(draft_steps(3)))
    code, out, err = cli("run", TASK, "--draft-only", env=env)
    assert code == 0 and out == "", err
    run_id = re.search(r"draft stored; continue with: python app.py resume ([0-9a-f]{12})", err).group(1)

    edited = "\n\n".join(EDITED) + "\n"
    if source == "file":
        (tmp_path / "draft.txt").write_text(edited, encoding="utf-8")
        given = str(tmp_path / "draft.txt")
    else:
        monkeypatch.setattr("sys.stdin", io.StringIO(edited))
        given = "-"
    code, article, err = cli("resume", run_id[:MIN_RUN_PREFIX + 2], "--draft", given, env=env)
    assert code == 0, err
    assert all(f"{step} [revised]" in article for step in EDITED), article
    assert not any(step in article for step in draft_steps(3)), "the model's draft was replaced by the author's"

    store = Store(db)
    assert store.get_run(run_id).status == RunStatus.DONE
    versions = Versions(store).list(run_id)
    assert [(v.n, v.action, v.text) for v in versions] == [(1, "draft", join_steps(EDITED))], \
        "the author's draft is kept as a version"
    code, shown, _ = cli("show", run_id)
    assert code == 0 and shown == article, "the latest article is the revision of that draft"


def test_a_missing_or_empty_draft_is_one_line_that_names_draft(cli, store, tmp_path):
    run_id = stored_run(store, "draft")
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n\n \n", encoding="utf-8")
    for given, says in ((tmp_path / "nowhere.txt", "cannot read"), (empty, "holds no step")):
        code, out, err = cli("resume", run_id, "--draft", str(given))
        assert code == 2 and out == "", err
        assert one_line(err).startswith(f"error: --draft {given}: ") and says in err, err
    assert Versions(store).list(run_id) == [] and store.get_run(run_id).status == RunStatus.DRAFT


# -- show of a run that has not finished ---------------------------------------------------------
@pytest.mark.parametrize(("status", "says"), [
    ("draft", "stopped after its draft"),
    ("interrupted", "was interrupted"),
    ("failed", "failed (The model server timed out.)"),
])
def test_show_of_a_stopped_run_says_how_to_continue_it_and_exits_non_zero(cli, store, tmp_path, status, says):
    run_id = stored_run(store, status, error="The model server timed out." if status == "failed" else "")
    out_file = tmp_path / "article.md"
    for flags in ((), ("--out", str(out_file))):
        code, out, err = cli("show", run_id, *flags)
        assert code == EXIT_UNFINISHED and out == "", (code, out, err)
        assert one_line(err).startswith(f"Run {run_id} {says}: it has no article yet; "), err
        assert f"continue with: python app.py resume {run_id}" in err
    assert not out_file.exists()
    assert ("--draft FILE" in err) == (status == "draft")


def test_show_of_a_running_run_says_it_is_still_running(cli, store):
    run_id = store.create_run("rat", store.add_task(TASK), {}, owner=new_owner())  # this process: alive
    code, out, err = cli("show", run_id)
    assert code == EXIT_UNFINISHED and out == ""
    assert one_line(err).startswith(f"Run {run_id} is still running in this process"), err
    done = stored_run(store, text="A finished article.")
    code, out, err = cli("show", done)
    assert code == 0 and "A finished article." in out and err == ""


# -- a unique prefix of a run id ------------------------------------------------------------------
@pytest.fixture
def three_runs(store, monkeypatch) -> list[str]:
    """Three finished runs whose ids are chosen: two share their first 4 characters."""
    ids = iter(["abcd11112222", "abcd33334444", "abce55556666"])
    monkeypatch.setattr("data.store.uuid", SimpleNamespace(uuid4=lambda: SimpleNamespace(hex=next(ids))))
    return [stored_run(store, text=f"The article of run {n}.") for n in range(3)]


def test_a_unique_prefix_of_a_run_id_is_taken_by_every_command(cli, store, three_runs):
    first, second, third = three_runs
    assert cli("show", first) == cli("show", first[:5]) == cli("show", f" {first[:8]} ")
    code, out, err = cli("show", third[:MIN_RUN_PREFIX])
    assert code == 0 and "The article of run 2." in out, err
    code, out, err = cli("versions", second[:5])
    assert code == 0 and out.startswith("model ") and f"run {second} has no author versions" in err
    code, _, err = cli("procedures", "add-from-run", first[:5], third[:MIN_RUN_PREFIX])
    assert code == 0 and f"run {first}: procedure" in err and f"run {third}: procedure" in err, err


def test_a_short_unknown_or_ambiguous_prefix_is_refused_naming_the_fix(cli, store, three_runs):
    first, second, third = three_runs
    code, out, err = cli("show", first[:MIN_RUN_PREFIX])
    assert code == 2 and out == ""
    assert one_line(err).startswith(f"error: '{first[:4]}' starts the ids of several runs (")
    assert err.endswith("): give more of the id's characters.\n") and first in err and second in err
    assert third not in err
    code, _, err = cli("versions", third[:MIN_RUN_PREFIX - 1])
    assert code == 1 and one_line(err).startswith(f"error: No run '{third[:3]}' in ")
    assert f"at least its first {MIN_RUN_PREFIX} characters" in err
    code, _, err = cli("resume", "ffff")
    assert code == 1 and one_line(err).startswith("error: No run 'ffff' in ") and "history` lists" in err


def test_the_history_tab_opens_a_run_by_a_unique_prefix(store, three_runs):
    import gradio as gr

    from ui.history import HistoryTab

    built = app_module.build(Settings(db_path=store.path))
    tab = HistoryTab(built.runner, LiveRuns(built.runner), built.store, built.clients)
    view = tab.view_of(three_runs[2][:MIN_RUN_PREFIX])
    assert view.run_id == three_runs[2] and view.final.text == "The article of run 2."
    with pytest.raises(gr.Error, match="several runs"):
        tab.view_of(three_runs[0][:MIN_RUN_PREFIX])


def test_the_history_tab_says_where_runs_come_from_while_there_are_none(store):
    import gradio as gr

    from ui.history import NO_RUNS, HistoryTab

    built = app_module.build(Settings(db_path=store.path))
    tab = HistoryTab(built.runner, LiveRuns(built.runner), built.store, built.clients)
    with gr.Blocks():
        tab.layout()
    empty = tab.rows()
    assert empty[tab.table]["data"] == [] and empty[tab.empty].visible is True
    assert "Writer" in NO_RUNS and "python app.py run" in NO_RUNS
    run_id = stored_run(store)
    listed = tab.rows()
    assert [row[0] for row in listed[tab.table]["data"]] == [run_id[:len(listed[tab.table]["data"][0][0])]]
    assert listed[tab.empty].visible is False


# -- history --------------------------------------------------------------------------------------
def test_history_prints_a_header_and_the_history_tab_s_columns(cli, store):
    code, out, err = cli("history")
    assert code == 0 and out == "" and "No runs yet" in err
    old = stored_run(store, "interrupted")
    time.sleep(0.01)  # listed newest first
    new = stored_run(store, text="Seven sentences.", steps_total=3, steps_sourced=2, steps_guarded=1,
                     sentences=9, sentences_cited=7, marks_removed=1)
    code, out, err = cli("history")
    assert code == 0 and err == ""
    header, *lines = out.splitlines()
    assert header.split() == HISTORY_HEADERS
    assert [line.split()[0] for line in lines] == [new, old]
    rows = history_rows(store.list_runs())
    for line, row in zip(lines, rows, strict=True):
        for cell, name in zip(row, HISTORY_HEADERS, strict=True):
            assert str(cell) in line, (name, cell, line)
    for name, cell in (("sourced", "2/3, 1 refused"), ("cited", "7/9, 1 mark removed")):
        assert cell in rows[0]
        assert lines[0].index(cell) == header.index(name), f"the {name} cell sits under its header"


# -- a closed pipe --------------------------------------------------------------------------------
def big_db(db: Path) -> dict[str, str]:
    """A database whose history, one run's article and the votes are each longer than a pipe
    holds (so each command is still writing when its reader goes away)."""
    from data import arena

    store = Store(db)
    task = store.add_task(TASK)
    ids = [store.create_run("rat", task, {}) for _ in range(700)]
    paragraph = "A sentence of the long article. " * 40
    store.append_event(ids[0], 1, Final(text="\n\n".join([paragraph] * 200)))
    store.update_run(ids[0], status="done")
    arena.import_votes(store, [{"prompt": TASK, "kind": "writing", "task_set": "", "method_a": "rat",
                                "method_b": "cot", "choice": "a", "annotator": f"ann{n}",
                                "output_a": paragraph * 20 + str(n), "output_b": paragraph}
                               for n in range(20)])
    store.close()
    return {"run_id": ids[0]}


def test_a_closed_pipe_ends_any_command_quietly(db):
    made = big_db(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAT_STUDIO_"))}
    env["RAT_STUDIO_DB"] = str(db)
    for argv, first in ((["history", "--limit", "1000"], "run "), (["show", made["run_id"][:6]], "# "),
                        (["votes", "export"], "{")):
        proc = subprocess.Popen([sys.executable, "app.py", *argv], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        proc.stdout.close()  # as `| head -1` does
        err = proc.stderr.read()
        proc.stderr.close()
        code = proc.wait(timeout=60)
        assert line.startswith(first), (argv, line[:80])
        assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, (argv, err)
        assert code == app_module.EXIT_CLOSED_PIPE, (argv, code, err)
        if argv[0] == "votes":
            assert json.loads(line)["annotator"] == "ann0"


def test_run_notes_are_an_appendix_only_with_notes(cli, store):
    """A reader's document leaves out the run notes (steps never checked against a source); --notes
    adds them, in Markdown and in Word."""
    import docx

    run_id = stored_run(store, text="Python 3 came out in 2008.")
    store.append_event(run_id, 2, Final(text="Python 3 came out in 2008.",
                                        unchecked=("step 1: no retrieved text for this step; kept as drafted",)))
    code, out, _ = cli("show", run_id)
    assert code == 0 and "2008" in out and "Not checked" not in out and "kept as drafted" not in out
    code, out, _ = cli("show", run_id, "--notes")
    assert code == 0 and "## Not checked against a source" in out and "kept as drafted" in out
    for flags, shown in (((), False), (("--notes",), True)):
        path = Path(store.path).with_name(f"notes-{shown}.docx")
        assert cli("show", run_id, "--out", str(path), *flags)[0] == 0
        text = "\n".join(p.text for p in docx.Document(str(path)).paragraphs)
        assert ("kept as drafted" in text) is shown, text
