"""The Article value and the author's edits it is built from (core.article)."""

from __future__ import annotations

from dataclasses import replace

from common.events import DraftReady, Final, SearchDone, StepRevised
from common.types import Source
from core.article.article import Article
from core.article.edits import CUMULATIVE, PARAGRAPH, Revisions
from core.article.markdown import to_markdown
from core.text.guards import guard_revision
from core.text.prompts import join_steps
from tests.ui.test_render import STEPS, rat_run

SOURCES = (Source(1, "http://example.org/a", "A", (1,)), Source(2, "http://example.org/b", "B", (2,), read=False,
                                                                 why="timed out"))


def test_undoing_the_last_step_in_cumulative_mode_keeps_the_steps_before_it():
    edits = Revisions.from_events(rat_run("rat"))
    assert edits.mode == CUMULATIVE
    assert edits.chosen([3]) == ({3}, set())
    after_two = edits.revised[2].article
    assert edits.text([3]) == join_steps([after_two, STEPS[2]])
    assert "[r2]" in edits.text([3]) and "[r3]" not in edits.text([3])


def test_undoing_the_last_step_in_paragraph_mode_touches_that_paragraph_only():
    edits = Revisions.from_events(rat_run("rat-step"))
    assert edits.mode == PARAGRAPH
    assert edits.text([3]) == join_steps([STEPS[0] + " [r1]", STEPS[1] + " [r2]", STEPS[2]])


def test_a_revision_keeping_exactly_min_keep_is_used_and_one_character_less_is_refused():
    before = "x" * 99 + "."
    exactly = guard_revision(before, "y" * 39 + ".", min_keep=0.4)
    assert not exactly.problem and exactly.text == "y" * 39 + "." and exactly.kept == 0.4
    less = guard_revision(before, "y" * 38 + ".", min_keep=0.4)
    assert "see --min-keep" in less.problem and less.text == before


def test_an_article_from_a_runs_events_is_its_final():
    final = Final(text="One. Two.", sources=SOURCES, cited="One [1]. Two.", unchecked=("step 2: kept",), cut=True)
    article = Article.from_events("Task", [DraftReady(steps=("One.", "Two.")), final])
    uncited = replace(SOURCES[1], n=0)  # in the readers' numbering a source no mark names has no number
    assert (article.text, article.sources, article.cited, article.unchecked, article.cut) == (
        final.text, (SOURCES[0], uncited), final.cited, final.unchecked, True)
    assert article.unsourced == "" and article.body == "One [1]. Two."
    assert article.read_sources == SOURCES[:1] and article.snippet_sources == (uncited,)
    assert article.marked == {1} and article.used_in(uncited) == " — used in step 2; no sentence cites it"
    assert article.unchecked_lines == ("Step 2: kept",)


def test_an_unsourced_article_says_why_and_lists_no_unchecked_steps():
    events = [DraftReady(steps=("One.",)), SearchDone(i=1, query="q", results=(), error="search is down"),
              Final(text="One.", unchecked=("step 1: revised without retrieved text",))]
    article = Article.from_events("Task", events, unsourced=True)
    assert article.unsourced == "search failed for every step: search is down"
    assert article.unchecked_lines == ()
    assert "> **Unsourced**" in to_markdown(article) and "Not checked" not in to_markdown(article)


def test_a_run_without_a_final_is_an_article_with_no_text():
    article = Article.from_events("Write about Python 3.", [DraftReady(steps=("One.",))])
    assert article.text == "" and article.sources == () and to_markdown(article).startswith("# Write about Python 3.")


def test_the_authors_article_takes_its_sources_and_endings_from_the_edits():
    events = rat_run("rat")
    edits = Revisions.from_events(events)
    whole = edits.article("Task", edits.text())
    # nothing undone: the run's own list; no sentence of rat_run's text is cited, so none has a number
    assert whole.sources == tuple(replace(s, n=0) for s in edits.final.sources)
    undone = edits.article("Task", edits.text([2]), [2])
    assert [s.url for s in undone.sources] == ["http://example.org/page1"]
    assert undone.unchecked == ("step 2: its revision was undone by the author",
                                "step 3: its revision was undone by the author")


def test_revisions_start_over_with_an_edited_draft():
    events = rat_run("rat") + [DraftReady(steps=("New one.",))]
    edits = Revisions.from_events(events)
    assert edits.steps == ("New one.",) and edits.revised == {} and edits.final is None and edits.mode == ""
    assert isinstance(next(e for e in edits.events if isinstance(e, StepRevised)), StepRevised)  # all kept


def test_one_article_always_gives_the_same_word_document():
    import io
    import zipfile

    from core.article.docx import ZIP_EPOCH, to_docx

    article = Article("Task", "One. Two.", SOURCES, cited="One [1]. Two.")
    first = to_docx(article)
    assert to_docx(article) == first
    entries = zipfile.ZipFile(io.BytesIO(first)).infolist()
    assert {e.date_time for e in entries} == {ZIP_EPOCH}, "stamped with the time it was saved"
    assert "word/document.xml" in {e.filename for e in entries}
