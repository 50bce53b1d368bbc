"""The readers' numbering (issue 21): an article leaving the house numbers the sources its text
cites 1..n in the order of their first [n] mark, lists the pages read that no sentence cites
under "Also read" with no number, keeps snippet-only sources apart, and gives one version of an
article the same numbers in Markdown, Word, the command line and the Writer. The run's own
numbering (order of first use: prompts' labels, ``Final``) is left as it is."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import docx

from common.events import DraftReady, Final, PassagesChosen
from common.types import Passage, Source
from core.article.article import Article, renumber_cited
from core.article.citations import mark_order, renumber_marks
from core.article.docx import to_docx
from core.article.markdown import to_markdown
from core.authoring import Edit
from tests.ui.test_render import XSS, cited_run, url
from ui import article_view
from ui.runview import fold


def src(n: int, *, read: bool = True, steps: tuple[int, ...] = (1,)) -> Source:
    return Source(n, f"https://example.org/{n}", f"Page {n}", steps, read=read, why="" if read else "HTTP 404")


def test_marks_are_renumbered_in_order_of_first_appearance():
    sources = tuple(src(n, steps=(n,)) for n in range(1, 8))
    article = Article("Task", "A. B. C. D.", sources, cited="A [4]. B [1]. C [7][4]. D [1, 7].").renumbered()
    assert article.cited == "A [1]. B [2]. C [1][3]. D [2][3]."
    assert [(s.n, s.url) for s in article.sources if s.n] == [(1, src(4).url), (2, src(1).url), (3, src(7).url)]
    assert article.text == "A. B. C. D.", "the text itself is untouched"


def test_the_issues_run_lists_four_sources_and_eight_apart():
    """Marks [1], [4], [7], [11] of 12 sources read: the export shows [1]..[4], the rest under Also read."""
    sources = tuple(src(n, steps=(n,)) for n in range(1, 13))
    final = Final(text="A. B. C. D.", sources=sources, cited="A [1]. B [4]. C [7]. D [11].")
    article = Article.from_events("Task", [DraftReady(steps=("A.",)), final])
    assert article.cited == "A [1]. B [2]. C [3]. D [4]."
    assert [s.url for s in article.numbered] == [src(n).url for n in (1, 4, 7, 11)]
    assert len(article.also_read) == 8 and all(s.n == 0 for s in article.also_read)
    md = to_markdown(article)
    sources_part, also = md.split("## Sources\n\n")[1].split("## Also read\n\n")
    assert re.findall(r"^(\d+)\. ", sources_part, flags=re.M) == ["1", "2", "3", "4"]
    assert len(re.findall(r"^- \[Page \d+\]", also, flags=re.M)) == 8 and not re.search(r"^\d+\. ", also, re.M)
    assert final.sources == sources and final.cited == "A [1]. B [4]. C [7]. D [11].", "the run's numbering stays"


def test_uncited_read_sources_are_listed_under_also_read_and_never_get_a_number():
    sources = (src(1, steps=(1, 3)), src(2, steps=(2,)), src(3, read=False, steps=(2,)), src(4, read=False))
    article = Article("Task", "One. Two.", sources, cited="One [2]. Two [4].").renumbered()
    assert [(s.n, s.url) for s in article.numbered] == [(1, src(2).url), (2, src(4).url)]
    assert [(s.n, s.url) for s in article.also_read] == [(0, src(1).url)]
    assert [(s.n, s.url) for s in article.snippets_apart] == [(0, src(3).url)]
    md = to_markdown(article)
    assert "## Sources\n\n1. [Page 2](https://example.org/2) — used in step 2\n" in md
    assert "2. [Page 4](https://example.org/4) — used in step 1; the page was not read: HTTP 404\n" in md
    assert "## Also read\n\n- [Page 1](https://example.org/1) — used in steps 1, 3; no sentence cites it\n" in md
    assert ("## Search snippets only (page not read)\n\n- [Page 3](https://example.org/3) — used in step 2; "
            "no sentence cites it; the page was not read: HTTP 404\n") in md
    lines = [p.text for p in docx.Document(io.BytesIO(to_docx(article))).paragraphs]
    also = lines[lines.index("Also read") + 1]
    assert also == "Page 1 — https://example.org/1 — used in steps 1, 3; no sentence cites it"
    assert not any(line.startswith("[3]") for line in lines)
    html = article_view.sources_html(article)
    assert re.findall(r"id='rat-source-(\d+)'", html) == ["1", "2"], "only cited sources are numbered"
    assert "Also read" in html and "https://example.org/1" in html.split("Also read")[1]


def test_an_undo_changes_nothing_for_a_source_still_cited_first():
    """Step 1's page supports no sentence. Undoing step 1 renumbers the run's sources (step 2's
    page goes from 2 to 1), but the export's numbers were already the readers' and stay."""
    events = [replace(e, passages=(Passage("Unrelated words about tortoises and gardens.", url(1), "Page", 1.0, 40),))
              if isinstance(e, PassagesChosen) and e.i == 1 else e for e in cited_run()]
    edits = fold(events).edits
    assert [s.n for s in edits.sources() if s.url == url(2)] == [2]
    assert [s.n for s in edits.sources([1]) if s.url == url(2)] == [1], "the run's numbering moves"
    before = edits.article("Task", edits.text())
    after = edits.article("Task", edits.text([1]), [1])
    assert [(s.n, s.url) for s in before.numbered] == [(s.n, s.url) for s in after.numbered] == [(1, url(2)),
                                                                                                  (2, url(3))]
    assert before.cited.split("\n\n")[1:] == after.cited.split("\n\n")[1:]
    assert [s.url for s in before.also_read] == [url(1)] and after.also_read == ()


def numbers_of_markdown(md: str) -> tuple[list[str], dict[int, str]]:
    body, sources = md.split("## Sources\n\n")
    listed = {int(n): u for n, u in re.findall(r"^(\d+)\. \[.*?\]\((\S+?)\)", sources.split("\n## ")[0], re.M)}
    return re.findall(r"\[(\d+)\]", body), listed


def test_markdown_docx_and_the_writer_agree_on_every_number():
    """The author moved the last paragraph first: its source's mark comes first, so it is [1]
    everywhere, though the run numbered it 3."""
    view = fold(cited_run())
    paragraphs = view.edits.text().split("\n\n")
    text = "\n\n".join([paragraphs[2], paragraphs[0], paragraphs[1]])
    md_marks, md_sources = numbers_of_markdown(article_view.export_markdown(view, Edit.of(text)))
    assert md_marks == ["1", "2", "3"] and md_sources == {1: url(3), 2: url(1), 3: url(2)}

    document = docx.Document(io.BytesIO(article_view.export_docx(view, Edit.of(text))))
    lines = [p.text for p in document.paragraphs]
    assert [m for line in lines[1:4] for m in re.findall(r"\[(\d+)\]", line)] == md_marks
    assert {int(n): u for line in lines for n, u in re.findall(r"^\[(\d+)\] .*? — (\S+)", line)} == md_sources

    run_cited = view.edits.cited(text)
    assert [m.n for p in run_cited.pieces for m in p.marks] == [3, 1, 2], "the run's numbering, as it was"
    html = article_view.cited_html(run_cited)
    shown = re.findall(r"<summary title='Source (\d+): [^']*'>\[\1\]</summary>.*?<a href='([^']+)'", html)
    assert [n for n, _ in shown] == md_marks and {int(n): u for n, u in shown} == md_sources
    assert re.findall(r"href='#rat-source-(\d+)'", html) == md_marks, "each mark links to its entry"
    listed = article_view.sources_html(view.edits.article(view.task, text))
    entries = dict(re.findall(r"id='rat-source-(\d+)'><span class='rat-source-n'>\[\d+\]</span> <a href='([^']+)'",
                              listed))
    assert {int(n): u for n, u in entries.items()} == md_sources


def test_renumbering_is_idempotent():
    sources = (src(1), src(2), src(3, read=False), src(4))
    article = Article("Task", "A. B.", sources, cited="A [4][2]. B [3]:\n\n# Head [1]\n").renumbered()
    assert article.cited == "A [1][2]. B [3]:\n\n# Head [1]\n", "a heading's brackets are no mark"
    assert article.renumbered() is article
    assert to_markdown(article) == to_markdown(replace(article))
    view = fold(cited_run())
    paragraphs = view.edits.text().split("\n\n")
    cited = renumber_cited(view.edits.cited("\n\n".join(reversed(paragraphs))))
    assert renumber_cited(cited) is cited
    assert [m.n for p in cited.pieces for m in p.marks] == [1, 2, 3]
    assert mark_order(cited.text) == [1, 2, 3]


def test_mark_forms_and_places():
    text = "A [2, 5]. B [3-4]:\n[1]: https://example.org/ref\n```\nx [5]\n```\nC [5].\n"
    assert mark_order(text) == [2, 5, 3, 4]
    assert renumber_marks(text, {2: 1, 5: 2, 3: 3}) == (
        "A [1][2]. B [3]:\n[1]: https://example.org/ref\n```\nx [5]\n```\nC [2].\n"), \
        "4 names no source: left out; a reference definition and code are left as they are"


def test_sources_html_escapes_and_keeps_snippets_apart():
    hostile = Source(1, "javascript:alert(1)", XSS, (1,))
    snippet = replace(src(2, read=False), title=XSS, why=XSS)
    html = article_view.sources_html(Article("Task", "A.", (hostile, snippet), cited="A [1]."))
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "href='javascript" not in html
    assert "Search snippets only (page not read)" in html and "id='rat-source-2'" not in html
    assert "No source" in article_view.sources_html(Article("Task", "A."))
    unattributed = article_view.sources_html(Article("Task", "A.", (src(1), src(2, read=False))))
    assert "id='rat-source-1'" in unattributed and "id='rat-source-2'" in unattributed, \
        "a text never attributed keeps the run's numbers"
