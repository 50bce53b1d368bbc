"""The article's output (issue 23, items 5 and 8): raw HTML escaped in the Markdown body, run
notes kept out of the reader's document unless asked for, real hyperlinks in the .docx, the plain
text the copy button copies, the reading time, the export folder that does not pile up, and the
elapsed time and ETA of a run going on."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import docx
import pytest

from common.events import DraftReady, Final, RunStarted, StepRevised, StepStarted
from common.types import Source
from core.article.article import Article
from core.article.docx import to_docx
from core.article.markdown import escape_html, plain_text, to_markdown, to_text
from core.authoring import Edit
from tests.ui.test_render import cited_run, rat_run
from ui import article_view, export_view, run_html
from ui.runview import RunView, fold

SCRIPT = "<script>alert('x')</script>"
UNDONE = "its revision was undone by the author"


def article(**kw) -> Article:
    sources = (Source(1, "https://a.example/one?x=1&y=2", "First <b>page</b>", (1,)),
               Source(2, "https://b.example/two", "Second page", (2,)))
    values = dict(task="Write about owls.", text="Owls hunt. They fly.", sources=sources,
                  cited="Owls hunt [2]. They fly [1].", unchecked=(f"step 2: {UNDONE}",))
    return Article(**{**values, **kw})


def docx_parts(data: bytes) -> tuple[str, str]:
    """The relationships and the body XML of a .docx."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.read("word/_rels/document.xml.rels").decode(), z.read("word/document.xml").decode()


# -- item 8: raw HTML in the body -------------------------------------------------------------------
def test_raw_html_a_model_copied_is_escaped_in_the_markdown_body():
    body = f"Owls hunt at night. {SCRIPT}\n\n<img src=x onerror=alert(1)> They fly [1]."
    md = to_markdown(article(cited=body))
    assert SCRIPT not in md and "<img" not in md
    assert "&lt;script>alert('x')&lt;/script>" in md and "&lt;img src=x onerror=alert(1)>" in md
    assert "They fly [1]." in md, "the marks stay"


@pytest.mark.parametrize("field", ["title", "task", "source title", "source why"])
def test_title_task_and_sources_are_escaped_too(field):
    evil = f"Owls {SCRIPT}"
    kw = {"title": dict(title=evil), "task": dict(task=evil),
          "source title": dict(sources=(Source(1, "https://a.example/", evil, (1,)),), cited="Owls hunt [1]."),
          "source why": dict(sources=(Source(1, "https://a.example/", "T", (1,), read=False, why=evil),),
                             cited="Owls hunt [1].")}[field]
    md = to_markdown(article(**kw))
    assert SCRIPT not in md and "&lt;script&gt;" in md


@pytest.mark.parametrize("kept", ["`<b>bold</b>`", "```\n<div>code</div>\n```", "<https://owls.example/a>"])
def test_code_and_autolinks_are_kept_as_written(kept):
    assert escape_html(f"Before.\n\n{kept}\n\nAfter <i>x</i>.") == f"Before.\n\n{kept}\n\nAfter &lt;i>x&lt;/i>."


def test_a_less_than_sign_that_opens_no_tag_is_left_alone():
    assert escape_html("3 < 4 and 5 <= 6") == "3 < 4 and 5 <= 6"


# -- item 5: run notes out of the reader's document ------------------------------------------------
def test_run_notes_are_an_appendix_only_when_asked_for():
    a = article()
    assert UNDONE not in to_markdown(a, notes=False) and "Not checked" not in to_markdown(a, notes=False)
    assert f"## Not checked against a source\n\n- Step 2: {UNDONE}" in to_markdown(a, notes=True)
    paragraphs = [p.text for p in docx.Document(io.BytesIO(to_docx(a, notes=False))).paragraphs]
    assert not any(UNDONE in p for p in paragraphs) and "Owls hunt [1]. They fly [2]." in paragraphs
    with_notes = [p.text for p in docx.Document(io.BytesIO(to_docx(a, notes=True))).paragraphs]
    assert f"Step 2: {UNDONE}" in with_notes
    assert UNDONE not in to_text(a), "the copied text has no run notes"


def test_the_writers_export_of_an_undone_step_leaves_the_note_out_by_default(tmp_path):
    view = fold(rat_run("rat-step"))
    folder = export_view.ExportFolder()
    out = folder.output(view, Edit.of(view.edits.text([1]), [1]))
    assert "undone by the author" not in out.markdown_text
    assert "undone by the author" not in out.markdown.read_text(encoding="utf-8")
    noted = folder.output(view, Edit.of(view.edits.text([1]), [1]), notes=True)
    assert "- Step 1: its revision was undone by the author" in noted.markdown.read_text(encoding="utf-8")
    folder.close()


# -- item 5: DOCX with real links -------------------------------------------------------------------
def test_docx_sources_are_external_hyperlinks_and_marks_link_to_their_entries():
    a = article()
    rels, body = docx_parts(to_docx(a))
    targets = dict(re.findall(r'Id="(rId\d+)" Type="[^"]+/hyperlink" Target="([^"]+)" TargetMode="External"', rels))
    assert sorted(targets.values()) == ["https://a.example/one?x=1&amp;y=2", "https://b.example/two"]
    linked = re.findall(r'<w:hyperlink r:id="(rId\d+)">.*?<w:t>([^<]+)</w:t>', body)
    assert {targets[rid] for rid, _ in linked} == set(targets.values()), "each URL is a link in the body"
    anchors = re.findall(r'<w:hyperlink w:anchor="(source-\d)">.*?<w:t>(\[\d\])</w:t>', body)
    assert anchors == [("source-1", "[1]"), ("source-2", "[2]")], "each [n] mark links to its entry"
    assert sorted(re.findall(r'<w:bookmarkStart w:id="\d+" w:name="(source-\d)"/>', body)) == ["source-1", "source-2"]
    lines = [p.text for p in docx.Document(io.BytesIO(to_docx(a))).paragraphs]
    assert "[1] Second page — https://b.example/two — used in step 2" in lines, "the text reads as before"


def test_docx_links_survive_the_reproducible_zip():
    a = article()
    assert to_docx(a) == to_docx(a), "the same article gives the same bytes"


# -- copy: plain text --------------------------------------------------------------------------------
def test_plain_text_has_no_markup_but_keeps_marks_and_lists():
    md = "## Origins\n\nOwls are **silent** and *fast* [1].\n\n* one\n1. two\n\n> A [page](https://x.example/) `code`."
    assert plain_text(md) == ("Origins\n\nOwls are silent and fast [1].\n\n- one\n1. two\n\n"
                              "A page (https://x.example/) code.")


def test_to_text_is_the_article_with_its_sources():
    text = to_text(article(cited="Owls **hunt** [2]. They fly [1]."))
    assert text.startswith("Write about owls.\n\nOwls hunt [1]. They fly [2].\n\nSources\n\n")
    assert "[1] Second page — https://b.example/two" in text and "**" not in text


# -- word count -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("words", "line"), [(1, "1 word · 1 min read"), (230, "230 words · 1 min read"),
                                             (1234, "1,234 words · 5 min read"), (1400, "1,400 words · 6 min read")])
def test_reading_line_counts_words_at_230_a_minute(words, line):
    assert export_view.reading_line(" ".join(["owl"] * words) + " [1]") == line


def test_an_empty_article_says_there_is_nothing_to_export():
    assert export_view.reading_line("  [1] ") == ""
    assert export_view.EMPTY in export_view.reading_html("")


# -- item 8: exports do not pile up ------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sets(folder: export_view.ExportFolder) -> list[Path]:
    return sorted(p for p in folder.path.iterdir() if p.is_dir())


def test_n_exports_leave_one_folder_with_one_file_set(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    view, clock = fold(cited_run()), Clock()
    folder = export_view.ExportFolder(clock=clock)
    for k in range(5):
        clock.now += export_view.KEEP_SECONDS
        out = folder.output(view, Edit.of(view.edits.text() + f"\n\nEdit number {k}."))
    assert [p.name for p in tmp_path.iterdir()] == [folder.path.name] and folder.path.name.startswith("rat-export-")
    (only,) = sets(folder)
    assert sorted(p.name for p in only.iterdir()) == ["write-about-python-3-abc123.docx",
                                                      "write-about-python-3-abc123.md"]
    assert "Edit number 4." in out.markdown.read_text(encoding="utf-8")
    folder.close()
    assert list(tmp_path.iterdir()) == [], "closing removes the folder"


def test_a_set_just_handed_over_is_kept_until_it_is_old(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    clock = Clock()
    folder = export_view.ExportFolder(clock=clock, keep=30)
    first = folder.write({"a.md": b"one"})["a.md"]
    clock.now += 1
    folder.write({"a.md": b"two"})
    assert first.read_bytes() == b"one", "another browser's set, written a moment ago, may not be copied yet"
    clock.now += 30
    again = folder.write({"a.md": b"two"})["a.md"]
    assert not first.exists() and again.read_bytes() == b"two" and len(sets(folder)) == 1
    folder.close()


# -- elapsed time and ETA ---------------------------------------------------------------------------
def timed_run(done: int, *, n: int = 4, step_seconds: float = 30.0) -> RunView:
    """A run going on, started at t=100 (its draft took 10 s), ``done`` steps revised each in
    ``step_seconds``, then the next one started."""
    view = RunView()
    view.apply(RunStarted(run_id="r", method="rat-step", task="t"), at=100.0)
    view.apply(DraftReady(steps=tuple(f"Step {i}." for i in range(1, n + 1))), at=110.0)
    t = 110.0
    for i in range(1, done + 1):
        view.apply(StepStarted(i=i, thought="", n=n), at=t)
        t += step_seconds
        view.apply(StepRevised(i=i, before=f"Step {i}.", after=f"Step {i} revised."), at=t)
    if done < n:
        view.apply(StepStarted(i=done + 1, thought="", n=n), at=t)
    return view


def test_a_run_going_on_shows_elapsed_time_and_no_eta_before_a_step_is_done():
    view = timed_run(0)
    assert run_html.timing(view, now=175.0) == "1:15 elapsed"
    assert "<span class='rat-timing'>1:15 elapsed</span>" in run_html.progress_html(view, now=175.0)


def test_the_eta_is_the_mean_step_time_times_the_steps_left():
    view = timed_run(2, step_seconds=30.0)
    assert run_html.timing(view, now=180.0) == "1:20 elapsed · about 1:00 left"
    faster = timed_run(3, step_seconds=20.0)
    assert run_html.timing(faster, now=3700.0) == "1:00:00 elapsed · about 0:20 left"


@pytest.mark.parametrize("status", ["interrupted", "failed", "draft"])
def test_a_run_not_going_on_shows_no_times(status):
    assert run_html.timing(timed_run(1), status, now=500.0) == ""


def test_a_replay_shows_no_times_the_watchers_clock_is_not_the_runs():
    view = timed_run(2, step_seconds=30.0)
    view.replayed = True
    assert run_html.timing(view, now=180.0) == "" and "rat-timing" not in run_html.progress_html(view, now=180.0)


def test_a_finished_run_shows_no_times():
    view = timed_run(4)
    view.apply(Final(text="Done."), at=300.0)
    assert run_html.timing(view, now=500.0) == "" and "rat-timing" not in run_html.progress_html(view)


def test_an_edited_draft_restarts_the_eta():
    view = timed_run(2, step_seconds=30.0)
    view.apply(DraftReady(steps=("A.", "B.")), at=200.0)
    view.apply(StepStarted(i=1, thought="", n=2), at=200.0)
    assert run_html.timing(view, now=205.0) == "1:45 elapsed", "the old draft's steps do not count"


def test_the_export_folder_writes_the_writer_files_with_the_exported_names():
    view = fold(cited_run())
    folder = export_view.ExportFolder()
    out = folder.output(view, Edit.of(view.edits.text()))
    assert out.markdown.name == article_view.export_name(view, "md")
    assert out.markdown.read_text(encoding="utf-8") == out.markdown_text
    assert docx.Document(str(out.docx)).paragraphs[0].text == "Write about Python 3."
    assert "[1]" in out.plain_text and "**" not in out.plain_text
    folder.close()


@pytest.mark.parametrize("url", ["javascript:alert(1)", "corpus/owls.txt"])
def test_only_web_addresses_become_links(url):
    a = article(sources=(Source(1, url, "Local", (1,)),), cited="Owls hunt [1].")
    rels, body = docx_parts(to_docx(a))
    assert "hyperlink\" Target" not in rels and url in body


def test_a_resumed_run_counts_from_where_it_went_on():
    view = timed_run(2, step_seconds=1.0)  # steps 1 and 2 went fast before it stopped
    view.apply(RunStarted(run_id="r", method="rat-step", task="t", resumed=True), at=500.0)
    view.apply(StepStarted(i=3, thought="", n=4), at=500.0)
    assert run_html.timing(view, now=510.0) == "0:10 elapsed", "no step done since it went on"
    view.apply(StepRevised(i=3, before="Step 3.", after="Step 3 revised."), at=540.0)
    view.apply(StepStarted(i=4, thought="", n=4), at=540.0)
    assert run_html.timing(view, now=545.0) == "0:45 elapsed · about 0:40 left", "step 3's 40 s, one step left"
