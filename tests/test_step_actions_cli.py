"""Step actions from the command line (issue 36): ``redo RUN --step K [--query Q | --exclude URL]``
and ``undo RUN --step K [--put-back]`` store the versions the Writer stores, and print the article's
new state; ``resume`` refuses a finished run and changes nothing. A rat-step run is made end to end
(the fake model over HTTP quoting the passages it is shown, SearXNG-style search and page fetching
over HTTP, a real database); the handlers are called as app.py calls them."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import re

import pytest

import app as app_module
from common.events import Final, StepRevised
from common.types import Task
from core.authoring import Authoring, Edit
from tests.core.test_truth import check_article
from tests.fakes.scripts import QuotingAuthor, draft_steps
from tests.helpers import collect, of
from tests.test_versions_cli import run, show

TASK = Task("Write a short history of Python 3 and its ecosystem.")


def test_redo_and_undo_from_the_command_line_keep_every_citation_and_version(app, llm, capsys, monkeypatch):
    author = QuotingAuthor(draft_steps(5))
    llm.reply(author)
    events = asyncio.run(collect(app.runner.start("rat-step", TASK)))
    assert isinstance(events[-1], Final)
    run_id = events[0].run_id
    model = show(app, capsys, run_id, "--version", "model")

    capsys.readouterr()
    assert run(app, "redo", run_id, "--step", "3") == 0
    out, err = capsys.readouterr()
    assert "step 3 regenerated: version 1 (regenerate" in err
    assert out == show(app, capsys, run_id), "it prints the article's new state, as show does"
    first = show(app, capsys, run_id, "--version", "1")

    assert run(app, "redo", run_id, "--step", "2", "--query", "virtualenv pip environments") == 0
    step5 = [e for e in of(app.store.events(run_id), StepRevised) if e.i == 5][-1]
    assert step5.sources, "step 5 used a page to leave out"
    assert run(app, "redo", run_id, "--step", "5", "--exclude", step5.sources[0]) == 0
    assert run(app, "undo", run_id, "--step", "4") == 0
    latest = show(app, capsys, run_id)
    assert draft_steps(5)[3] in latest, "step 4's paragraph is its draft again"

    authoring = Authoring(app.store)
    rows = authoring.versions.list(run_id)
    assert [v.action for v in rows] == ["regenerate", "search", "exclude", "undo"]
    assert rows[-1].undone == (4,)
    article = authoring.article(run_id)
    assert check_article(article, author.quoted, "show") > 0, "quoted sentences are cited, each by its own page"
    assert step5.sources[0] not in {s.url for s in article.numbered if 5 in s.steps}, "the page left out of step 5"
    assert show(app, capsys, run_id, "--version", "model") == model, "the model's own text reads as it did"
    assert show(app, capsys, run_id, "--version", "1") == first, "version 1 reads as it did"
    assert app.store.get_run(run_id).final_text == events[-1].text

    # resume of a finished run: refused, non-zero, nothing changed (not even a draft version)
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n"))
    capsys.readouterr()
    code = app_module.main(["resume", run_id, "--draft", "-"], env={"RAT_STUDIO_DB": str(app.settings.db_path)})
    err = capsys.readouterr().err
    assert code == 1 and "is finished" in err and f"redo {run_id} --step K" in err
    assert len(authoring.versions.list(run_id)) == len(rows), "no draft version was kept"
    assert show(app, capsys, run_id) == latest


def test_undo_keeps_the_authors_hand_edit_elsewhere_and_refuses_one_it_would_lose(app, llm, capsys):
    llm.reply(QuotingAuthor(draft_steps(4)))
    events = asyncio.run(collect(app.runner.start("rat-step", TASK)))
    run_id = events[0].run_id
    authoring = Authoring(app.store)
    paragraphs = events[-1].text.split("\n\n")
    mine = "Two sentences the author typed. They are hers."
    authoring.edit(run_id, Edit("\n\n".join([paragraphs[0] + " " + mine, *paragraphs[1:]])))

    assert run(app, "undo", run_id, "--step", "2") == 0
    undone = authoring.versions.latest(run_id)
    assert mine in undone.text, "the hand edit in step 1's paragraph is kept"
    assert undone.text.split("\n\n")[1] == draft_steps(4)[1], "step 2's paragraph is its draft again"
    assert run(app, "undo", run_id, "--step", "2", "--put-back") == 0
    back = authoring.versions.latest(run_id)
    assert mine in back.text and back.text.split("\n\n")[1] == paragraphs[1] and back.undone == ()

    edited = back.text.split("\n\n")
    edited[2] = edited[2].replace("Managing", "Handling")  # the author edits step 3's own paragraph
    authoring.edit(run_id, Edit("\n\n".join(edited)))
    count, stored = len(authoring.versions.list(run_id)), len(app.store.events(run_id))
    capsys.readouterr()
    code = app_module.main(["undo", run_id, "--step", "3"], env={"RAT_STUDIO_DB": str(app.settings.db_path)})
    assert code == 1 and "edited by hand" in capsys.readouterr().err
    assert len(authoring.versions.list(run_id)) == count, "refused: nothing stored"
    code = app_module.main(["redo", run_id, "--step", "3"], env={"RAT_STUDIO_DB": str(app.settings.db_path)})
    assert code == 1 and re.search(r"edited by hand.*nothing was changed", capsys.readouterr().err)
    assert len(authoring.versions.list(run_id)) == count and len(app.store.events(run_id)) == stored


def test_redo_with_an_instruction_stores_a_version_that_names_it(app, llm, capsys):
    """Issue 39's done-when: `redo RUN --step 2 --instruction "…"` stores a version whose action names
    the instruction; `versions` shows it; the model saw it in the revision prompt; citations stay true."""
    author = QuotingAuthor(draft_steps(4))
    llm.reply(author)
    events = asyncio.run(collect(app.runner.start("rat-step", TASK)))
    run_id = events[0].run_id
    said = "Shorter, and name the year Python 3 came out."
    capsys.readouterr()
    assert run(app, "redo", run_id, "--step", "2", "--instruction", said) == 0
    err = capsys.readouterr().err
    assert "step 2 revised as instructed: version 1 (instruct" in err
    assert said in author.of_kind("revise-step")[-1], "the model saw the instruction in the revision prompt"
    authoring = Authoring(app.store)
    (version,) = authoring.versions.list(run_id)
    assert (version.action, version.instruction) == ("instruct", said)
    assert check_article(authoring.article(run_id), author.quoted, "instruct") >= 0
    capsys.readouterr()
    assert run(app, "versions", run_id) == 0
    listed = capsys.readouterr().out.splitlines()[-1]
    assert "instruct" in listed and f"instruction: {said}" in listed
    assert run(app, "versions", run_id, "--json") == 0
    assert f'"instruction": "{said}"' in capsys.readouterr().out


def test_redo_refuses_a_bad_instruction_in_one_line_naming_the_flag(app, llm, capsys):
    llm.reply(QuotingAuthor(draft_steps(3)))
    run_id = asyncio.run(collect(app.runner.start("rat-step", TASK)))[0].run_id
    direct = asyncio.run(collect(app.runner.start("direct", TASK)))[0].run_id
    env = {"RAT_STUDIO_DB": str(app.settings.db_path)}
    stored = len(app.store.events(run_id))
    for argv, code, words in [
        (["redo", run_id, "--step", "2", "--instruction", "  "], 2, "--instruction is empty"),
        (["redo", run_id, "--step", "9", "--instruction", "shorter"], 1,
         "--step 9 --instruction: The run has no step 9"),
        (["redo", direct, "--step", "1", "--instruction", "shorter"], 1, "cannot redo a step"),
        (["redo", run_id, "--step", "1", "--instruction", "x", "--exclude", "https://a.example"], 2,
         "--instruction and --exclude"),
    ]:
        capsys.readouterr()
        assert app_module.main(argv, env=env) == code, argv
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    assert len(app.store.events(run_id)) == stored and not Authoring(app.store).versions.list(run_id)


@pytest.mark.parametrize("method, kind", [("rat-step", "revise-step"), ("rat", "revise")])
def test_an_instruction_alone_revises_the_whole_article_with_it(app, llm, capsys, method, kind):
    """Issue 39, item 1, for the whole article: `redo RUN --instruction "…"` (no step) revises every
    step again with the author's line in its revision prompt, beside the step's own passages (no
    new search); the version is an "instruct" one that keeps the line, and its citations are true.
    A hand edit it would rewrite is refused first, and the run is left as it was."""
    author = QuotingAuthor(draft_steps(3))
    llm.reply(author)
    run_id = asyncio.run(collect(app.runner.start(method, TASK)))[0].run_id
    said = "More formal, and one sentence shorter each."
    queries, revisions = len(author.of_kind("query")), len(author.of_kind(kind))
    capsys.readouterr()
    assert run(app, "redo", run_id, "--instruction", said) == 0
    assert "the whole article revised as instructed: version 1 (instruct" in capsys.readouterr().err
    asked = author.of_kind(kind)[revisions:]
    assert len(asked) == 3 and all(said in prompt for prompt in asked), "every step's revision saw the line"
    assert len(author.of_kind("query")) == queries, "each step kept its passages: no new search"
    notes = [e for e in app.store.events(run_id) if type(e).__name__ == "Note" and said in e.text]
    assert sorted(e.i for e in notes) == [1, 2, 3]
    authoring = Authoring(app.store)
    (version,) = authoring.versions.list(run_id)
    assert (version.action, version.instruction) == ("instruct", said)
    assert check_article(authoring.article(run_id), author.quoted, "instruct-all") >= 0

    edited = version.text.replace("\n\n", "\n\nAn author's own line.\n\n", 1)
    authoring.edit(run_id, Edit(edited))
    stored = len(app.store.events(run_id))
    capsys.readouterr()
    env = {"RAT_STUDIO_DB": str(app.settings.db_path)}
    assert app_module.main(["redo", run_id, "--instruction", "shorter"], env=env) == 1
    assert "revising the whole article would rewrite every paragraph" in capsys.readouterr().err
    assert len(app.store.events(run_id)) == stored and authoring.versions.latest(run_id).text == edited


def test_redo_add_after_adds_a_sourced_section_there_as_an_add_version(app, llm, capsys):
    """Issue 39's add a section: `redo RUN --add-after 2 --instruction "…"` puts a new step after
    step 2 with its own query, pages and revision; the version's action is "add" and keeps the line;
    the article has five paragraphs, the new one third, and its citations are true."""
    author = QuotingAuthor(draft_steps(4))
    llm.reply(author)
    run_id = asyncio.run(collect(app.runner.start("rat-step", TASK)))[0].run_id
    line = "How packaging changed with wheels and pip"
    queries = len(author.of_kind("query"))
    capsys.readouterr()
    assert run(app, "redo", run_id, "--add-after", "2", "--instruction", line) == 0
    assert "section added after step 2: version 1 (add" in capsys.readouterr().err
    assert len(author.of_kind("query")) == queries + 1, "the new section made its own query"
    assert line in author.of_kind("revise-step")[-1]
    authoring = Authoring(app.store)
    (version,) = authoring.versions.list(run_id)
    assert (version.action, version.instruction) == ("add", line)
    paragraphs = version.text.split("\n\n")
    assert len(paragraphs) == 5 and paragraphs[2].startswith(line)
    article = authoring.article(run_id)
    assert check_article(article, author.quoted, "add") >= 1
    assert any(3 in s.steps for s in article.sources), "the new section cites its own pages"
    capsys.readouterr()
    assert run(app, "versions", run_id) == 0
    assert f"instruction: {line}" in capsys.readouterr().out.splitlines()[-1]


def test_redo_add_after_refuses_in_one_line_naming_the_flag(app, llm, capsys):
    llm.reply(QuotingAuthor(draft_steps(3)))
    run_id = asyncio.run(collect(app.runner.start("rat-step", TASK)))[0].run_id
    env = {"RAT_STUDIO_DB": str(app.settings.db_path)}
    stored = len(app.store.events(run_id))
    for argv, code, words in [
        (["redo", run_id, "--add-after", "2"], 2, "--add-after needs --instruction"),
        (["redo", run_id, "--add-after", "2", "--instruction", " "], 2, "--add-after needs --instruction"),
        (["redo", run_id, "--add-after", "7", "--instruction", "more"], 1,
         "--add-after 7 --instruction: A section can go after step 0 to 3"),
        (["redo", run_id], 2, "redo needs --step K, --add-after K, or --instruction TEXT alone"),
        (["redo", run_id, "--instruction", "more", "--query", "pip"], 2, "--query and --exclude work on one step"),
    ]:
        capsys.readouterr()
        assert app_module.main(argv, env=env) == code, argv
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    for argv, words in [  # argparse's own refusals: exit code 2 and its usage line
        (["redo", run_id, "--add-after", "1", "--step", "2", "--instruction", "more"], "not allowed with"),
    ]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            app_module.main(argv, env=env)
        assert exited.value.code == 2 and words in capsys.readouterr().err
    assert len(app.store.events(run_id)) == stored and not Authoring(app.store).versions.list(run_id)


# -- refused before anything is stored; a stopped redo finished by resume (issue 39) ---------------
def corpus_app(app, folder):
    """The app of ``app``'s database whose runs search only the local corpus in ``folder``."""
    search = dataclasses.replace(app.settings.search, providers=("corpus",), corpus_dir=folder)
    return app_module.build(dataclasses.replace(app.settings, search=search))


def notes(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "python3.md").write_text(
        "# Python 3\nPython 3.0 was released in December 2008 and broke compatibility with Python 2 on purpose, "
        "so that print became a function and text became Unicode by default in every program.\n",
        encoding="utf-8")
    return folder


def test_a_redo_of_a_corpus_run_without_corpus_is_refused_and_leaves_the_run_as_it_was(app, llm, capsys, tmp_path):
    """A run made with --search corpus, redone (or added to) without --corpus: refused in one line
    that names --corpus, exit 2, before anything is stored: the run keeps its status, events and
    versions (not failed, no finished article lost); with its folder the same redo goes."""
    folder = notes(tmp_path)
    corpus = corpus_app(app, folder)
    llm.reply(QuotingAuthor(draft_steps(3)))
    run_id = asyncio.run(collect(corpus.runner.start("rat-step", TASK)))[0].run_id
    assert app.store.get_run(run_id).settings["search"] == ["corpus"]
    env = {"RAT_STUDIO_DB": str(app.settings.db_path)}  # no --corpus
    before = app.store.get_run(run_id)
    stored = len(app.store.events(run_id))
    for argv in (["redo", run_id, "--step", "2"], ["redo", run_id, "--step", "2", "--instruction", "shorter"],
                 ["redo", run_id, "--add-after", "1", "--instruction", "how packaging changed"]):
        capsys.readouterr()
        assert app_module.main(argv, env=env) == 2, argv
        err = capsys.readouterr().err.strip()
        assert "add --corpus DIR" in err and len(err.splitlines()) == 1, err
        after = app.store.get_run(run_id)
        assert (after.status, after.error, after.updated) == (before.status, before.error, before.updated), argv
        assert len(app.store.events(run_id)) == stored, argv
    assert not Authoring(app.store).versions.list(run_id)
    assert run(corpus, "redo", run_id, "--step", "2") == 0, "with its folder, the same redo goes"
    assert [v.action for v in Authoring(app.store).versions.list(run_id)] == ["regenerate"]


def test_resume_refuses_a_search_it_cannot_make_before_it_keeps_the_draft(app, llm, capsys, monkeypatch):
    llm.reply(QuotingAuthor(draft_steps(3)))
    run_id = asyncio.run(collect(app.runner.start("rat-step", TASK, draft_only=True)))[0].run_id
    before, stored = app.store.get_run(run_id), len(app.store.events(run_id))
    monkeypatch.setattr("sys.stdin", io.StringIO("A first step.\n\nA second step.\n"))
    capsys.readouterr()
    code = app_module.main(["resume", run_id, "--draft", "-", "--search", "corpus"],
                           env={"RAT_STUDIO_DB": str(app.settings.db_path)})
    err = capsys.readouterr().err.strip()
    assert code == 2 and "add --corpus DIR" in err and len(err.splitlines()) == 1, err
    after = app.store.get_run(run_id)
    assert (after.status, after.updated) == (before.status, before.updated) == ("draft", before.updated)
    assert len(app.store.events(run_id)) == stored
    assert not Authoring(app.store).versions.list(run_id), "the draft was not kept as a version"


@pytest.mark.parametrize("argv, action, said", [
    (["--step", "2", "--instruction", "Shorter, and name the year."], "instruct", "step 2 revised as instructed"),
    (["--add-after", "1", "--instruction", "How packaging changed"], "add", "section added after step 1"),
])
def test_resume_of_a_stopped_redo_keeps_its_text_as_the_redos_version(app, llm, capsys, argv, action, said):
    """A redo stopped part-way (here: right after its request was stored) and finished by `resume`:
    its new text is a version with the redo's action (and instruction), merged with the author's
    hand edit, and resume says so as redo does."""
    from common.events import StepRedone

    author = QuotingAuthor(draft_steps(3))
    llm.reply(author)
    events = asyncio.run(collect(app.runner.start("rat-step", TASK)))
    run_id = events[0].run_id
    authoring = Authoring(app.store)
    mine = "A sentence the author typed."
    paragraphs = events[-1].text.split("\n\n")
    # in the last step's paragraph
    authoring.edit(run_id, Edit("\n\n".join([*paragraphs[:-1], paragraphs[-1] + " " + mine])))
    line = argv[-1]
    stopped = asyncio.run(collect(app.runner.redo(run_id, 2, action=action, instruction=line),
                                  stop_after=lambda ev: len(ev) > 2 and isinstance(ev[-2], StepRedone)))
    assert app.store.get_run(run_id).status == "interrupted"
    assert authoring.pending_redo(run_id) == stopped[-2]

    capsys.readouterr()
    assert run(app, "resume", run_id) == 0
    out, err = capsys.readouterr()
    assert f"{said}: version 2 ({action}" in err, err
    assert authoring.pending_redo(run_id) is None
    version = authoring.versions.latest(run_id)
    assert (version.n, version.action, version.instruction) == (2, action, line)
    assert mine in version.text, "the author's hand edit is kept"
    final = app.store.events(run_id)[-1]
    assert isinstance(final, Final)
    new = version.text.split("\n\n")[1]
    assert new == final.text.split("\n\n")[1] and new != paragraphs[1], "step 2's new text is the version's"
    assert out == show(app, capsys, run_id), "it prints the version's article, as redo does"
    assert app.store.get_run(run_id).final_text == events[-1].text, "the model's own text stays the run's"
