"""A Chinese article in the Writer, in a real headless Chromium (issue 37, item 6): a rat-step run whose
draft and revisions a stand-in model writes in Chinese (each revision: the step as it was, then a
sentence naming a passage's page with that passage's [n] mark, as ``ChineseQuotingAuthor`` writes it)
shows its sentences intact, character for character, in the Edit and the Read view, laid out with a
width, and drawn with real glyphs where the machine has a CJK font (where it has none, Chromium draws
every character as the same empty box, "tofu": the viewer's fonts, which the app cannot supply). A
1366x768 screenshot is left in the screenshots folder."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import threading
import zipfile

import docx
import pytest

from core.authoring import Authoring
from tests.fakes.scripts import ChineseQuotingAuthor, kind_of, prompt_of, sections
from tests.ui.browser import article_box, chromium_missing
from tests.ui.test_export_browser import download
from tests.ui.test_writer_browser import (  # noqa: F401  (the fixtures: one app for this module)
    SCREENSHOTS,
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

TASK = "写一篇关于Python 3及其生态的短文。"
# the draft: Chinese, with the names the stand-in web's pages are found by (a revision keeps them)
STEPS = ["Python 3.6.0 于 2016 年 12 月发布，带来了 formatted string literals 和许多优化。",
         "Mercurial 花了数年时间，把它的 code base 从 Python 2 迁移到 Python 3。"]
QUOTE = re.compile(r"据《[^》\n]+》报道，这是第(\d+)条引文\[(\d+)\]。")  # the sentence each revision adds
HAN = "猫头鹰夜间捕猎"  # distinct Han characters, drawn one by one to tell real glyphs from tofu


def cjk_fonts() -> str:
    """The fonts fontconfig has for Chinese, one a line ('' when there are none or no fc-list)."""
    if shutil.which("fc-list") is None:
        return ""
    return subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30).stdout.strip()


def distinct_glyphs(element, characters: str = HAN) -> int:
    """How many different pictures Chromium draws for ``characters`` in ``element``'s font (each
    drawn alone on a canvas): as many as there are characters where the font has their glyphs, 1
    where each is the same empty box."""
    return element.evaluate("""(el, chars) => {
        const style = getComputedStyle(el), seen = new Set();
        for (const ch of chars) {
            const canvas = document.createElement('canvas');
            canvas.width = canvas.height = 48;
            const ctx = canvas.getContext('2d');
            ctx.font = `32px ${style.fontFamily}`;
            ctx.fillStyle = '#000';
            ctx.textBaseline = 'top';
            ctx.fillText(ch, 4, 4);
            seen.add(Array.from(ctx.getImageData(0, 0, 48, 48).data.filter((_, i) => i % 4 === 3)).join(','));
        }
        return seen.size;
    }""", characters)


class ChineseReviser(ChineseQuotingAuthor):
    """Keeps the step it revises and adds ChineseQuotingAuthor's sentence citing a passage's page
    (not its own first sentence, which drops the step's names: the guards would refuse it)."""

    def __call__(self, body: dict) -> str:
        reply = super().__call__(body)
        prompt = prompt_of(body)
        if kind_of(prompt) != "revise-step":
            return reply
        return sections(prompt)["Paragraph to revise"] + reply.split("。", 1)[1]


@pytest.fixture
def open_page(browser, app_url):  # noqa: F811
    """A page of the app at 1366x768 (a laptop's screen) in a browser context of its own."""
    contexts = []

    def opener():
        context = browser.new_context(viewport={"width": 1366, "height": 768}, locale="zh-CN", accept_downloads=True)
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


def chinese_run(open_page, llm):  # noqa: F811
    """A finished rat-step run of 2 steps, revised in Chinese, open in the Writer: (page, writer)."""
    llm.reply(ChineseReviser(STEPS))
    page, writer = open_page()
    start(writer, TASK, method="rat-step")
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    return page, writer


def test_the_writer_shows_a_chinese_article_intact(open_page, llm):  # noqa: F811
    page, writer = chinese_run(open_page, llm)

    # Edit: the article as the model wrote it, character for character, marks included (no space
    # put between two Chinese sentences, none taken out)
    text = article_box(writer).input_value()
    paragraphs = text.split("\n\n")
    assert len(paragraphs) == len(STEPS), text
    quotes = []
    for k, (step, paragraph) in enumerate(zip(STEPS, paragraphs, strict=True), start=1):
        quote = QUOTE.fullmatch(paragraph.removeprefix(step))
        assert paragraph.startswith(step) and quote and quote.group(1) == str(k), paragraph
        quotes.append(quote.group(0))
    assert "\ufffd" not in text and "&#" not in text and "\\u" not in text, "no character was mangled"

    # Read: the same sentences, each laid out with a width, the marks as links to their passage
    writer.get_by_role("radio", name="Read").check()
    cited = writer.locator(".block.rat-cited-panel")
    # (read without the "?" a sentence with no source gets: a step's own sentence cites no page)
    shown = " ".join(cited.evaluate("el => { const c = el.cloneNode(true); "
                                    "c.querySelectorAll('.rat-nosource').forEach(s => s.remove()); "
                                    "return c.textContent; }").split())
    for step, quote in zip(STEPS, quotes, strict=True):
        assert step in shown and quote.split("[")[0] in shown, shown
        for sentence in (step, quote.split("[")[0]):
            box = cited.get_by_text(sentence.removesuffix("。")).first.bounding_box()
            assert box and box["width"] > 100 and box["height"] > 0, (sentence, box)
    expect(cited.locator("details.rat-cite summary").first).to_be_visible()

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    cited.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 16)")
    page.screenshot(path=str(SCREENSHOTS / "writer-chinese.png"), animations="disabled", caret="hide")

    # the downloads carry the same sentences, each with a mark (in the readers' numbering, where the
    # exports' citing puts it: compared without the marks and the space before them)
    def unmarked(lines: list[str]) -> list[str]:
        assert all(re.search(r"\[\d+\]", line) for line in lines), lines
        return [re.sub(r"\s*\[\d+\]", "", line) for line in lines]

    markdown = download(page, writer.get_by_role("button", name="Download Markdown", exact=True)).decode("utf-8")
    assert markdown.startswith(f"# {TASK}\n\n")
    assert unmarked(markdown.split("\n\n")[1:3]) == unmarked(paragraphs), markdown
    data = download(page, writer.get_by_role("button", name="Download Word", exact=True))
    lines = [p.text for p in docx.Document(io.BytesIO(data)).paragraphs]
    assert lines[0] == TASK and unmarked(lines[1:3]) == unmarked(paragraphs), lines
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert 'w:eastAsia="zh-CN"' in z.read("word/styles.xml").decode()

    # drawn with real glyphs, where the machine has a CJK font (scripts/test.sh installs Noto CJK)
    if cjk_fonts():
        sentence = cited.locator(".rat-sentence", has_text=re.compile(r"据《[^》\n]+》报道")).first
        assert distinct_glyphs(sentence) == len(HAN), "each character has a glyph of its own: no tofu"
        assert distinct_glyphs(article_box(writer)) == len(HAN), "in the editor too"




class HeldReviser(ChineseReviser):
    """A ChineseReviser whose revisions wait until ``opened`` is set (``held``: one is waiting)."""

    def __init__(self, steps: list[str]):
        super().__init__(steps)
        self.opened, self.held = threading.Event(), threading.Event()

    def __call__(self, body: dict) -> str:
        reply = super().__call__(body)
        if kind_of(prompt_of(body)) == "revise-step":
            self.held.set()
            self.opened.wait(TIMEOUT / 1000)
        return reply


def test_a_chinese_run_survives_a_reload_mid_run_and_the_author_s_undo_and_edit_a_reload(browser, app_url, llm, app):  # noqa: F811
    """Driven as an author would at 1920x1080: the page reloaded while the run goes on, then an undo
    and a Chinese sentence typed by hand, then another reload: nothing the author did is lost, and
    the marks that stay still name their pages."""
    author = HeldReviser(STEPS)
    llm.reply(author)
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, locale="zh-CN")
    context.set_default_timeout(10_000)
    try:
        page = context.new_page()
        page.goto(app_url)
        writer = page.locator("#rat-tab-writer")
        expect(writer.get_by_text("the model server answers")).to_be_visible(timeout=TIMEOUT)
        start(writer, TASK, method="rat-step")
        assert author.held.wait(TIMEOUT / 1000), "the first revision reached the model"
        # the page has heard of its run (a page reloaded before that finds it in "Runs going on")
        expect(writer.locator(".rat-progress")).to_contain_text(re.compile(r"Step 1 of 2"), timeout=TIMEOUT)
        page.reload()  # mid-run: the run is the server's
        expect(writer.locator(".rat-progress")).to_contain_text(re.compile(r"Step 1 of 2"), timeout=TIMEOUT)
        author.opened.set()
        expect(writer.locator(".rat-progress")).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
        page.screenshot(path=str(SCREENSHOTS / "writer-chinese-1920x1080.png"), animations="disabled", caret="hide")

        # the finished article is on the page (the box of step 2 is the settled panel's, not one the
        # last render replaces under the click)
        expect(writer.locator(".rat-saved").last).to_contain_text("The model's text", timeout=TIMEOUT)
        step2 = writer.get_by_role("checkbox", name=re.compile(r"^Step 2: "))
        step2.click()  # undo step 2's revision
        expect(step2).to_be_checked(timeout=TIMEOUT)
        article = article_box(writer)
        expect(article).not_to_have_value(re.compile(r"第2条引文"))
        expect(writer.locator(".rat-saved").last).to_contain_text(re.compile(r"Version 1, saved"), timeout=TIMEOUT)
        mine = "这一句是作者亲手写的"
        article.fill(article.input_value() + f"\n\n{mine}.")
        expect(writer.locator(".rat-saved").last).to_contain_text(re.compile(r"Version 2, saved"), timeout=TIMEOUT)

        page.reload()
        article = article_box(writer)
        expect(article).to_have_value(re.compile(rf"{mine}\.$"), timeout=TIMEOUT)
        text = article.input_value()
        assert "第1条引文" in text and "第2条引文" not in text and text.startswith(STEPS[0]), text
        expect(writer.get_by_role("checkbox", name=re.compile(r"^Step 2: "))).to_be_checked()
        run_id = app.store.list_runs(limit=1)[0].id
        shown = Authoring(app.store).shown(run_id)
        entries = {s.n: s.url for s in shown.article.numbered}
        quoted = next(u for q, (u, _) in author.quoted.items() if "第1条引文" in q)
        marks = [int(n) for n in re.findall(r"第1条引文\[(\d+)\]", shown.article.cited or "")]
        assert marks and {entries[n] for n in marks} == {quoted}, (shown.article.cited, entries)
    finally:
        context.close()
