"""PDF and self-contained HTML export of any version (issue 39, item 2): headings, [n] marks that
link to the source list, clickable source links, Chinese text drawn with an embedded font (or a
clear refusal naming the font to install), no script or outside stylesheet in the HTML, every text
escaped; from the Writer's export folder and from ``show RUN --format pdf|html -o FILE``.

The PDFs are read back with pypdf: their text, their link annotations (URIs and internal links)
and their fonts."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import pytest
from pypdf import PdfReader

import app as app_module
from common.errors import ConfigError
from common.events import Final
from common.types import Source, Task
from core.article import pdf as pdf_module
from core.article.article import Article
from core.article.html import to_html
from core.article.pdf import PdfFontMissing, cjk_font, to_pdf
from core.authoring import Edit
from tests.core.test_export_cjk import PARAGRAPHS, TASK, chinese
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect
from tests.ui.test_render import cited_run
from ui import article_view, export_view
from ui.cli import build_parser
from ui.runview import fold

SCRIPT = "<script>alert('x')</script>"
EVIL = f"Owls {SCRIPT}<link rel=stylesheet href=https://evil.example/x.css>"


def owls(**kw) -> Article:
    sources = (Source(1, "https://a.example/one?x=1&y=2", "First <b>page</b>", (1,)),
               Source(2, "https://b.example/two", "Second page", (2,)),
               Source(3, "https://c.example/read", "Read, not cited", (2,)),
               Source(4, "javascript:alert(1)", "A hostile address", (3,)))
    cited = ("# Hunting\n\nOwls hunt at night with **keen** *ears* [2]. They fly silently [1].\n\n"
             "- Feathers with soft edges [1]\n- Large eyes\n\n1. Wait.\n2. Strike [4].\n\nThe end [2].")
    values = dict(task="Write about owls.", text=re.sub(r" \[\d\]", "", cited), sources=sources, cited=cited,
                  unchecked=("step 3: kept as drafted",))
    return Article(**{**values, **kw})


# -- HTML ---------------------------------------------------------------------------------------------
class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and its text."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for t, attrs in self.tags if t == tag]


def assert_inert(page: str) -> None:
    """No script, no outside stylesheet, nothing fetched, no event handler, and links only to web
    pages or to the page itself."""
    tags = Tags(page)
    names = {t for t, _ in tags.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "img", "base", "form"}, names
    for tag, attrs in tags.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert "src" not in attrs and "srcset" not in attrs, (tag, attrs)
        if tag == "a":
            assert re.match(r"^(https?://|#src-\d+$)", attrs["href"]), attrs
    assert "@import" not in page and "url(" not in page, "the style loads nothing"


@pytest.mark.parametrize("field", ["title", "task", "source title", "source why", "body"])
def test_html_escapes_a_hostile_text_wherever_it_stands(field):
    kw = {"title": dict(title=EVIL), "task": dict(task=EVIL),
          "source title": dict(sources=(Source(1, "https://a.example/", EVIL, (1,)),), cited="Owls hunt [1]."),
          "source why": dict(sources=(Source(1, "https://a.example/", "T", (1,), read=False, why=EVIL),),
                             cited="Owls hunt [1]."),
          "body": dict(cited=f"Owls hunt [1]. {EVIL}\n\n<img src=x onerror=alert(1)>")}[field]
    page = to_html(owls(**kw))
    assert SCRIPT not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page, "shown as written"
    assert_inert(page)


def test_html_marks_link_to_existing_source_ids_and_sources_are_clickable():
    a = owls()
    page = to_html(a, notes=True)
    assert_inert(page)
    tags = Tags(page)
    ids = {attrs["id"] for _, attrs in tags.tags if "id" in attrs}
    cites = [attrs["href"] for attrs in tags.all("a") if attrs.get("class") == "cite"]
    assert cites == ["#src-1", "#src-2", "#src-2", "#src-3", "#src-1"], "each [n] of the text, in order"
    assert {href[1:] for href in cites} <= ids
    entries = [attrs for attrs in tags.all("li") if attrs.get("id", "").startswith("src-")]
    assert [(e["id"], e["value"]) for e in entries] == [("src-1", "1"), ("src-2", "2"), ("src-3", "3")]
    outside = [attrs["href"] for attrs in tags.all("a") if attrs.get("class") != "cite"]
    assert outside == ["https://b.example/two", "https://a.example/one?x=1&y=2", "https://c.example/read"], \
        "the readers' numbering; the javascript: address is no link"
    assert "javascript:alert(1)" in "".join(tags.text), "it is written as text"
    assert re.findall(r"<(h\d)>(.*?)</h\d>", page) == [
        ("h1", "Write about owls."), ("h2", "Hunting"), ("h2", "Sources"), ("h2", "Also read"),
        ("h2", "Not checked against a source")]
    assert "Not checked against a source" in page and "Not checked" not in to_html(a)


def test_html_of_a_chinese_article_keeps_its_text_and_says_its_language():
    page = to_html(chinese())
    assert '<html lang="zh">' in page and '<meta charset="utf-8">' in page
    text = "".join(Tags(page).text)
    assert PARAGRAPHS[1] in text and "《自然》：仓鸮的听觉定位" in text
    assert_inert(page)


# -- PDF ----------------------------------------------------------------------------------------------
def read(data: bytes) -> PdfReader:
    assert data.startswith(b"%PDF-")
    return PdfReader(io.BytesIO(data))


def text_of(reader: PdfReader) -> str:
    return "\n".join(page.extract_text() for page in reader.pages)


def compact(text: str) -> str:
    """``text`` without white space, and without the NUL that pypdf reads before each character of a
    CID-keyed CFF font such as Noto Sans CJK (PDFium, Chrome's reader, reads the text as written)."""
    return re.sub(r"[\s\x00]+", "", text)


def links(reader: PdfReader) -> tuple[list[str], list[tuple[int, float]]]:
    """The URIs of a PDF's link annotations, and its internal links' destinations (page, top)."""
    uris, internal = [], []
    pages = {page.indirect_reference.idnum: k for k, page in enumerate(reader.pages)}
    for page in reader.pages:
        for annot in page.get("/Annots", []):
            annot = annot.get_object()
            assert annot["/Subtype"] == "/Link"
            if "/A" in annot and annot["/A"].get("/S") == "/URI":
                uris.append(annot["/A"]["/URI"])
            else:
                dest = annot["/Dest"]
                internal.append((pages[dest[0].idnum], float(dest[3])))
    return uris, internal


def fonts(reader: PdfReader) -> dict[str, bool]:
    """Each font of a PDF's pages: whether it is embedded."""
    found = {}
    for page in reader.pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            descendant = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
            descriptor = descendant["/FontDescriptor"].get_object()
            found[str(font["/BaseFont"])] = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))
    return found


def test_pdf_has_the_words_real_source_links_and_marks_linked_to_their_entries():
    a = owls()
    reader = read(to_pdf(a))
    text = text_of(reader)
    for words in ("Write about owls.", "Hunting", "Owls hunt at night with keen ears [1].", "They fly silently [2].",
                  "Sources", "Also read", "First <b>page</b>", "javascript:alert(1)"):
        assert words in text, words
    assert "kept as drafted" not in text, "run notes only when asked for"
    uris, internal = links(reader)
    assert set(uris) == {"https://a.example/one?x=1&y=2", "https://b.example/two", "https://c.example/read"}
    assert len(internal) == len(re.findall(r"\[\d\]", a.body)) == 5
    by_mark = dict(zip(re.findall(r"\[(\d)\]", a.renumbered().body), internal, strict=True))
    assert by_mark["1"][1] > by_mark["2"][1] > by_mark["3"][1], "each number its own entry, in list order"
    assert all(fonts(reader).values()) and fonts(reader)


def test_pdf_run_notes_only_with_notes_and_the_same_article_gives_the_same_bytes():
    assert "Step 3: kept as drafted" in text_of(read(to_pdf(owls(), notes=True)))
    assert to_pdf(owls()) == to_pdf(owls())


def test_pdf_draws_chinese_with_an_embedded_cjk_font():
    assert cjk_font("zh-CN") is not None, "the tests install Debian's fonts-noto-cjk (scripts/test.sh)"
    reader = read(to_pdf(chinese()))
    text = compact(text_of(reader))
    for paragraph in PARAGRAPHS:
        assert compact(paragraph) in text, "its characters and its [n] marks"
    assert compact(TASK) in text and "《自然》：仓鸮的听觉定位" in text
    embedded = fonts(reader)
    assert any("CJK" in name or "Han" in name for name in embedded), embedded
    assert all(embedded.values()), embedded
    uris, internal = links(reader)
    assert "https://zh.example/owl" in uris and len(internal) == 3


def test_a_japanese_sentence_is_drawn_too():
    sentence = "フクロウは夜に狩りをします。"
    reader = read(to_pdf(Article(task="フクロウについて", text=sentence)))
    assert sentence in compact(text_of(reader))


def test_a_chinese_article_without_a_cjk_font_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr(pdf_module, "cjk_font", lambda language="zh-CN": None)
    with pytest.raises(PdfFontMissing) as caught:
        to_pdf(chinese())
    message = str(caught.value)
    assert "fonts-noto-cjk" in message and "Word or HTML" in message and "U+" in message
    assert to_pdf(owls()).startswith(b"%PDF-"), "an article in Latin script needs no CJK font"


def test_a_symbol_no_font_has_is_a_question_mark_not_an_empty_box():
    assert "Rockets ? fly." in text_of(read(to_pdf(Article(task="t", text="Rockets 🚀 fly."))))


# -- the Writer's files --------------------------------------------------------------------------------
def test_the_export_folder_writes_one_pdf_or_html_file_and_refuses_a_pdf_it_cannot_draw(monkeypatch):
    view = fold(cited_run())
    article = article_view.export_article(view, Edit.of(view.edits.text()))
    folder = export_view.ExportFolder()
    pdf, page = folder.file(view, article, export_view.PDF), folder.file(view, article, export_view.HTML)
    assert pdf.suffix == ".pdf" and page.suffix == ".html"
    assert "Write about Python 3." in text_of(read(pdf.read_bytes()))
    assert_inert(page.read_text(encoding="utf-8"))
    monkeypatch.setattr(pdf_module, "cjk_font", lambda language="zh-CN": None)
    chinese = article_view.export_article(view, Edit.of(view.edits.text() + "\n\n猫头鹰在夜间捕猎。"))
    with pytest.raises(PdfFontMissing, match="fonts-noto-cjk"):
        folder.file(view, chinese, export_view.PDF)
    folder.close()


# -- show RUN --format pdf|html -o FILE ----------------------------------------------------------------
RUN_TASK = Task("Write a short history of Python 3 and its ecosystem.")


async def stored_run(app, llm) -> tuple[str, Final]:
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat-step", RUN_TASK))
    assert isinstance(events[-1], Final), events[-1]
    return events[0].run_id, events[-1]


def show(app, capsys, *argv: str) -> tuple[int, str, str]:
    """``python app.py show ARGV`` in-process, on ``app``'s database."""
    capsys.readouterr()
    code = app_module.main(["show", *argv], env={"RAT_STUDIO_DB": str(app.settings.db_path)})
    out, err = capsys.readouterr()
    return code, out, err


async def test_show_writes_a_pdf_with_link_annotations_and_a_self_contained_html(app, llm, capsys, tmp_path):
    run_id, final = await stored_run(app, llm)
    article = Article.from_events(RUN_TASK.prompt, app.store.events(run_id))  # no author version: the latest is this
    web = {s.url for s in article.sources}
    assert web and all(url.startswith("http") for url in web)

    pdf_file = tmp_path / "a.pdf"
    code, _, err = show(app, capsys, run_id, "--format", "pdf", "-o", str(pdf_file))
    assert code == 0 and "article written to" in err, err
    reader = read(pdf_file.read_bytes())
    text = re.sub(r"\s+", " ", text_of(reader))
    assert re.sub(r"\s+", " ", draft_steps(3)[0]) in text and "[revised]" in text
    uris, internal = links(reader)
    assert set(uris) == web, "each source's URL is a link annotation to its page"
    assert len(internal) == len(re.findall(r"\[\d+\]", article.body)) > 0

    html_file = tmp_path / "a.txt"  # --format wins over the name
    code, _, _ = show(app, capsys, run_id, "--version", "model", "--format", "html", "-o", str(html_file))
    page = html_file.read_text(encoding="utf-8")
    assert code == 0 and page.startswith("<!DOCTYPE html>")
    assert_inert(page)
    hrefs = {a["href"] for a in Tags(page).all("a")}
    assert web <= hrefs and {h for h in hrefs if h.startswith("#")} <= {f"#src-{s.n}" for s in article.numbered}

    code, out, _ = show(app, capsys, run_id, "--format", "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>"), "HTML may go to standard output"
    by_name = tmp_path / "b.pdf"
    assert show(app, capsys, run_id, "-o", str(by_name))[0] == 0 and by_name.read_bytes().startswith(b"%PDF-")


async def test_show_refuses_a_pdf_on_standard_output_naming_o(app, llm, capsys):
    run_id, _ = await stored_run(app, llm)
    code, out, err = show(app, capsys, run_id, "--format", "pdf")
    assert code == 2 and out == "" and "-o" in err and "article.pdf" in err, err
    args = build_parser().parse_args(["show", run_id, "--format", "docx"])
    with pytest.raises(ConfigError, match="-o article.docx"):
        args.func(args, app)


async def test_the_writer_makes_the_shown_versions_pdf_and_html_when_clicked(app, llm, monkeypatch):
    import gradio as gr

    from core.authoring import Authoring, Edit
    from ui import runview
    from ui.writer import RunPanel

    run_id, _ = await stored_run(app, llm)
    Authoring(app.store).edit(run_id, Edit("An author's own words about Python 3.\n\n猫头鹰在夜间捕猎。"))
    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    view = runview.fold(app.store.events(run_id))
    shown = panel.text.export_outputs(view, Edit.of(view.edits.text()))
    assert shown[panel.text.download_pdf].interactive and shown[panel.text.download_html].interactive
    model = panel.text.on_file(view, 0, "pdf")  # the model's text (the versions list's 0)
    assert model.value["orig_name"].endswith(".pdf")
    with open(model.value["path"], "rb") as held:  # the file gradio hands the browser
        assert RUN_TASK.prompt in text_of(read(held.read())).replace("\n", " ")
    page = panel.text.on_file(view, 1, "html")  # version 1, the author's
    assert "An author&#x27;s own words" in open(page.value["path"], encoding="utf-8").read()
    monkeypatch.setattr(pdf_module, "cjk_font", lambda language="zh-CN": None)
    with pytest.raises(gr.Error, match="fonts-noto-cjk"):  # never a PDF of empty boxes
        panel.text.on_file(view, 1, "pdf")
    panel.text.exports.close()
