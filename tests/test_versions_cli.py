"""The author's versions on the command line: ``show RUN --version model|latest|N`` and
``versions RUN``. A run is made end to end (the fake model over HTTP, SearXNG-style search and page
fetching over HTTP, a real SQLite file); its versions are stored with ``data.versions`` as the
Writer stores them; the handlers are called in-process as app.py calls them, and a bad version
goes through ``app.main`` for its one line and exit code."""

from __future__ import annotations

import json
import re

import app as app_module
from common.events import Final
from common.settings import Settings
from common.types import Task
from core.article.article import Article
from core.article.edits import Revisions
from core.article.markdown import to_markdown
from data.versions import MODEL, Versions
from tests.conftest import make_settings
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect
from ui.cli import build_parser

TASK = Task("Write a short history of Python 3 and its ecosystem.")
MINE = "A closing paragraph the author wrote by hand."


def run(app, *argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return args.func(args, app)


def show(app, capsys, run_id: str, *flags: str) -> str:
    capsys.readouterr()
    assert run(app, "show", run_id, *flags) == 0
    return capsys.readouterr().out


async def stored_run(app, llm, method: str = "rat-step") -> tuple[str, Final]:
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start(method, TASK))
    assert isinstance(events[-1], Final), events[-1]
    return events[0].run_id, events[-1]


def steps_used(markdown: str) -> set[int]:
    """The steps the sources list says they were used in."""
    return {int(n) for used in re.findall(r"used in steps? ([\d, ]+)", markdown) for n in used.split(", ")}


async def test_show_gives_the_model_s_text_the_latest_version_or_version_n(app, llm, capsys):
    run_id, final = await stored_run(app, llm)
    model = to_markdown(Article.from_events(TASK.prompt, app.store.events(run_id))) + "\n"
    assert show(app, capsys, run_id) == model, "no version yet: the latest is the model's text"
    assert show(app, capsys, run_id, "--version", "latest") == model
    assert final.text.count("[revised]") == 3 and 2 in steps_used(model)

    revisions = Revisions.from_events(app.store.events(run_id))
    assert 2 in revisions.undoable()
    versions = Versions(app.store)
    versions.add(run_id, f"{final.text}\n\n{MINE}")
    undone = versions.add(run_id, f"{revisions.text(undone=[2])}\n\n{MINE}", undone=[2], action="undo")
    assert undone.n == 2

    latest = show(app, capsys, run_id)
    assert latest == show(app, capsys, run_id, "--version", "latest") == show(app, capsys, run_id, "--version", "2")
    assert MINE in latest and latest.count("[revised]") == 2, "step 2's revision is undone"
    assert draft_steps(3)[1] in latest and f"{draft_steps(3)[1]} [revised]" not in latest
    assert steps_used(latest) and 2 not in steps_used(latest), "the undone step's sources are not its"
    first = show(app, capsys, run_id, "--version", "1")
    assert MINE in first and first.count("[revised]") == 3 and 2 in steps_used(first)
    assert show(app, capsys, run_id, "--version", MODEL) == model, "the model's own text is as it was"
    assert final.text == app.store.get_run(run_id).final_text


async def test_the_versions_command_lists_each_version(app, llm, capsys):
    run_id, final = await stored_run(app, llm)
    capsys.readouterr()
    assert run(app, "versions", run_id) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split()[0] == "model" and "no author versions" in err
    versions = Versions(app.store)
    versions.add(run_id, "One two three.")
    versions.add(run_id, "One two three four five.", taken=[1], action="take")
    versions.restore(run_id, 1)
    assert run(app, "versions", run_id) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["model", "1", "2", "3"]
    assert re.match(r"\s+2  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d  take\s+5 words$", lines[2]), lines[2]
    assert lines[3].endswith("restored from 1") and " restore " in lines[3]
    assert run(app, "versions", run_id, "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(v["n"], v["action"], v["words"], v["restored_from"], v["taken"]) for v in listed] == [
        (1, "edit", 3, None, []), (2, "take", 5, None, [1]), (3, "restore", 3, 1, [])]


async def test_a_restored_version_exports_byte_identically_to_the_version_it_restores(app, llm, capsys, tmp_path):
    run_id, final = await stored_run(app, llm)
    versions = Versions(app.store)
    versions.add(run_id, f"{final.text}\n\n{MINE}", undone=[3], action="undo")
    first = {ext: tmp_path / f"first.{ext}" for ext in ("md", "docx")}
    for path in first.values():
        assert run(app, "show", run_id, "--version", "1", "--out", str(path)) == 0
    versions.add(run_id, final.text.replace("[revised]", "[edited]"))
    changed = tmp_path / "changed.md"
    assert run(app, "show", run_id, "--out", str(changed)) == 0
    assert changed.read_bytes() != first["md"].read_bytes()
    assert versions.restore(run_id, 1).n == 3
    for ext, path in first.items():
        again = tmp_path / f"restored.{ext}"
        assert run(app, "show", run_id, "--out", str(again)) == 0, "the latest: the restore"
        assert again.read_bytes() == path.read_bytes(), ext
        numbered = tmp_path / f"numbered.{ext}"
        assert run(app, "show", run_id, "--version", "3", "--out", str(numbered)) == 0
        assert numbered.read_bytes() == path.read_bytes(), ext


def test_a_bad_version_is_one_line_that_names_the_fix_and_exit_2(tmp_path, capsys):
    store = app_module.build(Settings(db_path=tmp_path / "versions.db")).store  # no model or search is used
    run_id = store.create_run("rat-step", store.add_task(TASK.prompt), {})
    store.update_run(run_id, status="done", final_text="The model's text.")
    env = {"RAT_STUDIO_DB": str(store.path)}
    capsys.readouterr()
    assert app_module.main(["show", run_id, "--version", "1"], env=env) == 2
    err = capsys.readouterr().err
    assert err == (f"error: Run {run_id} has no version 1: it has none (its text is the model's own); "
                   "pick 'model' or 'latest'.\n")
    for text in ("One.", "Two."):
        Versions(store).add(run_id, text)
    for bad, says in (("3", "has no version 3: it has versions 1-2; pick one of them, or 'model' for the model's "
                            "own text."),
                      ("0", "has no version 0: it has versions 1-2"),
                      ("newest", f"'newest' names no version: give model, latest or a version's number "
                                 f"(`python app.py versions {run_id}` lists them).")):
        assert app_module.main(["show", run_id, "--version", bad], env=env) == 2, bad
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and says in err, err
    assert app_module.main(["show", run_id, "--version", "2"], env=env) == 0
    assert "Two." in capsys.readouterr().out


async def test_every_version_of_an_unsourced_run_says_it_is_unsourced(tmp_path, llm, web, capsys):
    settings = make_settings(tmp_path, llm, web)
    offline = app_module.build(settings.with_(search=settings.search.__class__(
        providers=("searxng",), retries=1, backoff=0.01, searxng_url="http://127.0.0.1:9/")))
    run_id, final = await stored_run(offline, llm, method="rat")
    assert offline.store.get_run(run_id).status == "unsourced"
    Versions(offline.store).add(run_id, f"{final.text}\n\n{MINE}")
    for which in ("model", "latest", "1"):
        shown = show(offline, capsys, run_id, "--version", which)
        assert "> **Unsourced**: no part of this text was checked against retrieved text" in shown, which
        assert "search failed for every step" in shown, which
    assert MINE in show(offline, capsys, run_id) and MINE not in show(offline, capsys, run_id, "--version", "model")

