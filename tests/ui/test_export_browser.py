"""The article's output in a real headless Chromium (issue 23, item 5): the download buttons hold
the shown article (one click, after a run, an undo and an edit), the copy buttons copy it
(Markdown and plain text) and say so, the word count follows edits, run notes are an appendix only
when asked for, the .docx links are real, and a run going on shows its elapsed time and ETA."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from data.versions import Versions
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import wait_until
from tests.ui.browser import article_box, chromium_missing
from tests.ui.test_writer_browser import (  # noqa: F401  (the fixtures: one app for this module)
    TIMEOUT,
    app,
    app_url,
    browser,
    llm,
    stand_ins,
    start,
    web,
)

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

UNDONE = "its revision was undone by the author"


@pytest.fixture
def page_of(browser, app_url):  # noqa: F811
    """A page of the app in a context of its own that may read and write the clipboard."""
    contexts = []

    def opener():
        context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url.rstrip("/"))
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.goto(app_url)
        writer = page.locator("#rat-tab-writer")
        expect(writer.get_by_text("the model server answers")).to_be_visible(timeout=TIMEOUT)
        return page, writer

    yield opener
    for context in contexts:
        context.close()


def download(page, button) -> bytes:
    """Click ``button`` once; the bytes it downloads."""
    expect(button).to_be_enabled(timeout=TIMEOUT)
    with page.expect_download() as info:
        button.click()
    return open(info.value.path(), "rb").read()


def clipboard(page) -> str:
    return page.evaluate("navigator.clipboard.readText()")


def test_one_click_downloads_copies_and_counts_the_shown_article(page_of, llm, app):  # noqa: F811
    author = RatAuthor(draft_steps(3))
    llm.reply(author)
    page, writer = page_of()
    start(writer, "Write about Python packaging for export.", method="rat-step")
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    md_button = writer.get_by_role("button", name="Download Markdown", exact=True)
    docx_button = writer.get_by_role("button", name="Download Word", exact=True)
    reading = writer.locator(".rat-reading")
    expect(reading).to_have_text(re.compile(r"^\d+ words · 1 min read$"))

    # the six buttons in one row within the 1366 px window, the run notes' box on one line under them
    # (measured in one go: the page above may still grow between two separate measurements)
    names = ("Download Markdown", "Download Word", "Download PDF", "Download HTML", "Copy Markdown", "Copy text")
    for name in names:
        expect(writer.get_by_role("button", name=name, exact=True)).to_be_visible()
    handles = [writer.get_by_role("button", name=name, exact=True).element_handle() for name in names]
    handles.append(writer.get_by_text("Include run notes").element_handle())
    *buttons, notes_line = page.evaluate("""els => els.map(e => {
        const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; })""", handles)
    assert len({round(b["y"]) for b in buttons}) == 1 and max(b["x"] + b["width"] for b in buttons) <= 1366, buttons
    assert notes_line["y"] > buttons[0]["y"] + buttons[0]["height"] and notes_line["height"] < 30, notes_line
    from tests.ui.test_writer_browser import screenshot

    screenshot(page, "writer-export-1366.png", top=writer.get_by_role("button", name="Download Markdown", exact=True))

    # one click, no second button: the file is the run's article
    markdown = download(page, md_button).decode("utf-8")
    assert markdown.startswith("# Write about Python packaging for export.")
    assert markdown.count("[revised]") == 3, markdown
    assert writer.get_by_role("button", name=re.compile("^Download .*\\.md$")).count() == 0

    # undo step 2: the buttons hold the undone article at once, without the run note...
    writer.get_by_role("checkbox", name=re.compile("^Step 2: ")).check()
    expect(writer.locator("#rat-step-2 .rat-badge")).to_have_text("undone", timeout=TIMEOUT)
    expect(md_button).to_be_enabled(timeout=TIMEOUT)
    markdown = download(page, md_button).decode("utf-8")
    (second,) = [line for line in markdown.splitlines() if line.startswith("Step 2:")]
    assert "[revised]" not in second and markdown.count("[revised]") == 2, markdown
    assert UNDONE not in markdown, "a run note is not for the reader"
    # ...unless the author asks for the run notes
    notes = writer.get_by_role("checkbox", name="Include run notes")
    expect(notes).not_to_be_checked()
    notes.check()
    with_notes = writer.get_by_role("button", name="Download Markdown + run notes", exact=True)
    assert f"- Step 2: {UNDONE}" in download(page, with_notes).decode("utf-8")
    notes.uncheck()
    expect(with_notes).to_have_count(0, timeout=TIMEOUT)
    assert UNDONE not in download(page, md_button).decode("utf-8")

    # edit: the word count follows each keystroke; the buttons wait for the save, then hold the edit
    before = int(reading.inner_text().split()[0])
    article = article_box(writer)
    article.press("End")
    article.press_sequentially(" Closing words here.")
    expect(md_button).to_be_disabled()  # no file older than the text typed while it is saved
    expect(reading).to_have_text(re.compile(rf"^{before + 3} words · 1 min read$"), timeout=TIMEOUT)
    # saved as typed: one version, or under load two (the words typed so far, then the rest)
    run_id = app.store.list_runs(limit=1)[0].id
    wait_until(lambda: "Closing words here." in Versions(app.store).latest(run_id).text, TIMEOUT / 1000)
    expect(writer.locator(".block.rat-saved")).to_contain_text(f"Version {Versions(app.store).latest(run_id).n},")
    markdown = download(page, md_button).decode("utf-8")
    assert "Closing words here." in markdown and UNDONE not in markdown
    expect(page.get_by_text(re.compile("Error|didn't return"))).to_have_count(0)  # the timer's ticks while saving

    # Word: the same article, its sources as real links
    data = download(page, docx_button)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        rels = z.read("word/_rels/document.xml.rels").decode()
        body = z.read("word/document.xml").decode()
    urls = re.findall(r'Type="[^"]+/hyperlink" Target="(http://127\.0\.0\.1:\d+/pages/[^"]+)" TargetMode="External"',
                      rels)
    assert urls and all(url in markdown for url in urls), rels
    assert "Closing words here." in body

    # PDF and HTML, one click each: the same article, its sources as links
    from pypdf import PdfReader

    pdf = PdfReader(io.BytesIO(download(page, writer.get_by_role("button", name="Download PDF", exact=True))))
    links = {a.get_object()["/A"].get("/URI") for p in pdf.pages for a in p.get("/Annots") or []}
    assert set(urls) <= links, links
    assert "Closing words here." in "".join(p.extract_text() for p in pdf.pages).replace("\0", "")
    html = download(page, writer.get_by_role("button", name="Download HTML", exact=True)).decode("utf-8")
    assert "Closing words here." in html and all(f'href="{url}"' in html for url in urls)
    assert "<script" not in html.lower()

    # copy: the Markdown and the plain text of the same article, with a visible confirmation
    writer.get_by_role("button", name="Copy Markdown").click()
    expect(writer.locator(".rat-copied")).to_contain_text("Copied", timeout=TIMEOUT)
    assert clipboard(page) == markdown
    writer.get_by_role("button", name="Copy text").click()
    expect(writer.locator(".rat-copied")).to_contain_text("text", timeout=TIMEOUT)
    text = clipboard(page)
    assert text.startswith("Write about Python packaging for export.\n") and "Closing words here." in text
    assert "#" not in text and "](" not in text, "plain text: no Markdown markup"


def test_a_run_going_on_shows_elapsed_time_then_an_eta(page_of, llm):  # noqa: F811
    llm.reply(RatAuthor(draft_steps(3)))
    llm.latency = 0.4
    page, writer = page_of()
    start(writer, "Write about Python wheels, slowly.", method="rat-step")
    timing = writer.locator(".rat-progress .rat-timing")
    expect(timing).to_contain_text(re.compile(r"^\d+:\d\d elapsed"), timeout=TIMEOUT)
    expect(timing).to_contain_text(re.compile(r"elapsed · about \d+:\d\d left$"), timeout=TIMEOUT)
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    expect(timing).to_have_count(0)
