"""The Writer and History tabs end to end in a real headless Chromium: the app served on
127.0.0.1, the fake OpenAI-compatible server scripted with RatAuthor (paced so a run can be watched
mid-way), the local web with its SearXNG endpoint, and a real SQLite file. One app serves the whole
module; every test opens its own browser context, i.e. its own Gradio session."""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from pathlib import Path

import pytest

import app as app_module
from common.types import Task
from data.versions import Versions
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLM
from tests.fakes.scripts import Gate, RatAuthor, draft_steps, kind_of, prompt_of, sections
from tests.fakes.web_server import FakeWeb
from tests.ui.browser import article_box, chromium, chromium_missing, serve

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

if not chromium_missing():
    from playwright.sync_api import expect

# The README's screenshots are refreshed only on request (RAT_STUDIO_UPDATE_SCREENSHOTS=1), so a
# test run leaves the working tree as it was; otherwise they go to a temporary folder.
SCREENSHOTS = (Path(__file__).resolve().parents[2] / "screenshots"
               if os.environ.get("RAT_STUDIO_UPDATE_SCREENSHOTS") == "1"
               else Path(tempfile.gettempdir()) / "rat-studio-screenshots")
TIMEOUT = 20_000  # ms, for anything a run has to reach
EVIL_TITLE = "<img src=x onerror=\"window.__xss=1\"> Python 3 <script>window.__xss=2</script>"
EVIL_PAGE = f"""<html><head><title>{EVIL_TITLE.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</title>
</head><body><article>
<p>Python 3.0 was released in December 2008 after years of work on a cleaner language.</p>
<p>Python 3.6.0 added formatted string literals; Mercurial and many projects moved to Python 3.</p>
<p>Managing Python environments with virtualenv and pip keeps project dependencies apart.</p>
</article></body></html>"""


async def _collect(events) -> list:
    async with aclosing(events) as gen:
        return [e async for e in gen]


def run_now(app: app_module.App, method: str, prompt: str, **kw) -> str:
    """Run a task straight through the runner (no browser); its run id. In a thread of its own:
    Playwright's sync API keeps an event loop in this one."""
    with ThreadPoolExecutor(1) as pool:
        events = pool.submit(asyncio.run, _collect(app.runner.start(method, Task(prompt), **kw))).result()
    return events[0].run_id


def screenshot(page, name: str, *, top) -> None:
    """A 1280x900 screenshot for the README from the element ``top`` down, palette-quantised to
    keep the file small."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    top.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 16)")
    page.screenshot(path=str(path), animations="disabled", caret="hide")
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with gradio
        return
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=128).save(path, optimize=True)


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    with FakeLLM() as llm, FakeWeb() as web:
        settings = make_settings(tmp_path_factory.mktemp("ui"), llm, web)
        yield llm, web, app_module.build(settings)


@pytest.fixture(scope="module")
def app_url(stand_ins):
    with serve(stand_ins[2]) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def llm(stand_ins):
    fake = stand_ins[0]
    yield fake
    fake.latency, fake.tokens_per_second, fake.down = 0.0, None, False


@pytest.fixture
def web(stand_ins):
    fake = stand_ins[1]
    yield fake
    fake.extra_results = []


@pytest.fixture
def app(stand_ins):
    return stand_ins[2]


@pytest.fixture
def open_page(browser, app_url):
    contexts = []

    def opener(ready: bool = True):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.goto(app_url)
        writer = page.locator("#rat-tab-writer")
        if ready:
            expect(writer.get_by_text("the model server answers")).to_be_visible(timeout=TIMEOUT)
        return page, writer

    yield opener
    for context in contexts:
        context.close()


def start(writer, task: str, *, method: str | None = "rat", draft_only: bool = False) -> None:
    """Run ``task`` with ``method`` (these tests were written for rat; the Writer's default is rat-step)."""
    writer.get_by_label("Task").fill(task)
    if method:
        writer.get_by_label("Method").click()
        writer.page.get_by_role("option", name=re.compile(f"^{re.escape(method)} ")).click()
    if draft_only:
        writer.get_by_role("checkbox", name=re.compile("Draft only")).check()
    writer.get_by_role("button", name="Run", exact=True).click()


# -- tests ----------------------------------------------------------------------------------------
def test_a_run_streams_the_draft_queries_pages_and_diffs(open_page, llm, web):
    gate = Gate(3, passed=1)  # step 2's revision waits at the gate until the mid-run checks are done
    llm.reply(gate)
    llm.latency, llm.tokens_per_second = 0.15, 120  # streamed at a pace people see
    web.extra_results = [{"url": web.url("/status/404"), "title": "A dead page", "content": "gone"}]
    page, writer = open_page()
    stop = writer.get_by_role("button", name="Stop", exact=True)
    expect(stop).to_be_disabled()  # nothing runs: Stop is off (it was bright red and enabled, issue 36)
    start(writer, "Write a short history of Python 3 and its ecosystem.")
    progress = writer.locator(".rat-progress")
    draft, steps = writer.locator(".block.rat-draft-panel"), writer.locator(".block.rat-steps-panel")

    # mid-run: the numbered draft, step 1 revised with its query, pages and diff, step 2 highlighted
    expect(progress).to_contain_text(re.compile(r"Step 2 of 3"), timeout=TIMEOUT)
    assert "Done" not in progress.inner_text(), "shown while it runs, not at the end"
    expect(stop).to_be_enabled()
    expect(draft.locator("ol.rat-draft > li")).to_have_count(3)
    expect(draft.locator("li.rat-current")).to_contain_text("Step 2:")
    card1 = steps.locator("#rat-step-1")
    expect(card1.locator(".rat-query")).to_contain_text("Python 3.6.0 was released")
    expect(card1.locator("li.rat-ok").first).to_contain_text(re.compile(r"ok · [\d,]+ chars"))
    expect(card1.locator("li.rat-err")).to_contain_text("404")
    expect(card1.locator(".rat-diff ins")).to_contain_text("[revised]")
    expect(steps.locator(".rat-card.rat-current")).to_have_attribute("id", "rat-step-2")
    expect(steps.locator("#rat-step-2 li.rat-ok").first).to_be_visible(timeout=TIMEOUT)
    assert gate.held.wait(TIMEOUT / 1000), "step 2's revision reached the model"
    screenshot(page, "writer-mid-run.png", top=progress)
    gate.open.set()

    expect(progress).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    expect(stop).to_be_disabled()
    expect(steps.locator(".rat-card")).to_have_count(3)
    expect(steps.locator(".rat-card.rat-current")).to_have_count(0)
    article = article_box(writer)
    expect(article).to_have_value(re.compile(r"Step 3: .*\[revised\]"))
    screenshot(page, "writer-finished.png", top=steps.locator("#rat-step-3"))


def test_web_text_with_markup_shows_as_text_and_never_runs(open_page, llm, web):
    # a step no other test drafts, so its search is not answered from the store's search cache
    llm.reply(RatAuthor(["The t-SNE algorithm embeds high-dimensional data for visualisation."]))
    evil = web.add_page("evil", EVIL_PAGE)
    snippet = "<img src=y onerror=\"window.__xss=3\"> a snippet"
    web.extra_results = [{"url": evil, "title": EVIL_TITLE, "content": snippet}]
    page, writer = open_page()
    start(writer, "Write about <b>Python 3</b> <img src=z onerror=\"window.__xss=4\">.")
    steps = writer.locator(".block.rat-steps-panel")
    expect(writer.locator(".rat-progress")).to_contain_text("Done: 1 step revised.", timeout=TIMEOUT)
    expect(steps.locator("li.rat-ok", has_text="<script>window.__xss=2</script>")).to_have_count(1)
    html = steps.inner_html()
    assert "&lt;script&gt;" in html and "<script>window" not in html and "<img src=x" not in html
    assert page.evaluate("window.__xss") is None, "nothing from the web ran"


def test_draft_only_edit_the_steps_continue_undo_and_export(open_page, llm, app, tmp_path):
    author = RatAuthor(draft_steps(3))
    llm.reply(author)
    page, writer = open_page()
    start(writer, "Write about Python packaging.", method="rat-step", draft_only=True)
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("Draft ready: 3 steps.", timeout=TIMEOUT)
    assert author.of_kind("query") == [], "nothing is revised before Continue"
    editor = writer.get_by_label("Draft steps")
    expect(editor).to_have_value("\n\n".join(author.steps))

    # reorder (3 first), rewrite step 2, delete step 1, add a new step
    edited = [author.steps[2], "Mercurial EDITED: the port to Python 3 took ten years.", "A new closing step on pip."]
    editor.fill("\n\n".join(edited))
    writer.get_by_role("button", name="Continue").click()
    expect(progress).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    revised = [sections(p)["Paragraph to revise"] for p in author.of_kind("revise-step")]
    assert revised == edited, "the revision used the edited steps, in their new order"
    expect(writer.locator(".block.rat-draft-panel li")).to_have_text(edited)
    article = article_box(writer)
    expect(article).to_have_value("\n\n".join(s + " [revised]" for s in edited))
    run_id = app.store.list_runs(limit=1)[0].id
    kept = [(v.action, v.text) for v in Versions(app.store).list(run_id)]
    assert kept == [("draft", "\n\n".join(edited))], "the edited draft is the author's work: kept as a version"

    # undo step 2's revision: only that paragraph goes back (rat-step)
    writer.get_by_role("checkbox", name=re.compile("^Step 2: Mercurial EDITED")).check()
    expect(article).to_have_value(f"{edited[0]} [revised]\n\n{edited[1]}\n\n{edited[2]} [revised]")
    expect(writer.locator("#rat-step-2 .rat-badge")).to_have_text("undone")

    # edit the article by hand and export it with its sources
    article.fill(article.input_value() + "\n\nA closing line by the author.")
    download_btn = writer.get_by_role("button", name="Download Markdown", exact=True)
    expect(download_btn).to_be_disabled()  # until the edit is saved: one click then downloads it
    expect(download_btn).to_be_enabled(timeout=TIMEOUT)
    with page.expect_download() as info:
        download_btn.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    markdown = path.read_text(encoding="utf-8")
    assert markdown.startswith("# Write about Python packaging.")
    assert "A closing line by the author." in markdown and f"{edited[1]}\n" in markdown
    sources = re.findall(r"^(?:\d+\.|-) \[.+\]\((http://127\.0\.0\.1:\d+/pages/[^)]+)\) — used in steps? "
                         r"([\d, ]+)(?:; no sentence cites it)?$",
                         markdown, flags=re.M)
    assert sources, markdown
    assert {int(x) for _, used in sources for x in used.split(",")} == {1, 3}, "step 2 was undone"


def test_stop_then_continue(open_page, llm, app):
    author = RatAuthor(draft_steps(3))
    llm.reply(author)
    llm.latency = 0.4
    page, writer = open_page()
    start(writer, "Write about Python environments, slowly.")
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("Step 1 of 3", timeout=TIMEOUT)
    writer.get_by_role("button", name="Stop").click()
    expect(progress).to_contain_text(re.compile(r"^Stopped (after step \d of 3|before the first step)"),
                                     timeout=TIMEOUT)
    run = app.store.list_runs(limit=1)[0]
    assert run.status == "interrupted" and run.task == "Write about Python environments, slowly."
    llm.latency = 0.0
    writer.get_by_role("button", name="Continue").click()
    expect(progress).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    assert app.store.get_run(run.id).status == "done"
    assert [k for k, _ in author.calls].count("draft") == 1, "the draft was not written again"


def test_history_opens_replays_and_continues_a_stored_run(open_page, llm, app):
    llm.reply(RatAuthor(draft_steps(2)))
    llm.latency = 0.2  # stored time stamps far enough apart for the replay to show each step
    done_id = run_now(app, "rat", "A stored run about Mercurial.")
    draft_id = run_now(app, "rat", "A stored draft about virtualenv.", draft_only=True)
    llm.latency = 0.0
    page, _ = open_page()
    page.get_by_role("tab", name="History").click()
    history = page.locator("#rat-tab-history")
    row = history.get_by_role("row", name=re.compile(done_id))
    expect(row).to_contain_text("A stored run about Mercurial.")
    expect(row).to_contain_text("done")
    history.get_by_role("gridcell", name=done_id).click()
    progress = history.locator(".rat-progress")
    expect(progress).to_contain_text("Done: 2 steps revised.")
    expect(history.locator(".rat-card")).to_have_count(2)
    expect(history.locator(".rat-diff ins").first).to_contain_text("[revised]")

    # replay (at the default 2x): the view starts over and goes through each step again
    progress.evaluate("""el => {
        window.__seen = [];
        new MutationObserver(() => window.__seen.push(el.innerText)).observe(el, {subtree: true, childList: true,
                                                                                   characterData: true});
    }""")
    history.get_by_role("button", name="Replay").click()
    # every state the panel went through is in window.__seen: polling for "Step 1 of 2" on screen
    # would miss it when a loaded machine lets the replay run past it between two polls
    page.wait_for_function("window.__seen.some(t => t.includes('Step 1 of 2'))", timeout=TIMEOUT)
    expect(progress).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    seen = " | ".join(page.evaluate("window.__seen"))
    for state in ("Writing the draft", "Step 1 of 2", "Step 2 of 2", "Done"):
        assert state in seen, seen
    assert seen.index("Step 1 of 2") < seen.index("Step 2 of 2") < seen.rindex("Done")
    expect(history.locator(".rat-card")).to_have_count(2)

    # a draft-only run continues from History
    history.get_by_label("Run", exact=True).fill(draft_id)
    history.get_by_role("button", name="Open").click()
    expect(progress).to_contain_text("Draft ready: 2 steps.")
    history.get_by_role("button", name="Continue").click()
    expect(progress).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    assert app.store.get_run(draft_id).status == "done"


class TwoAuthors:
    """Answers each task with its own draft, so two sessions' runs can be told apart."""

    def __init__(self):
        self.alpha = RatAuthor([f"Alpha step {k}: Python 3.6.0 was released in December 2016." for k in (1, 2)])
        self.beta = RatAuthor([f"Beta step {k}: Managing Python environments with virtualenv." for k in (1, 2)])

    def __call__(self, body: dict) -> str:
        return (self.alpha if "Alpha" in prompt_of(body) else self.beta)(body)


class OverlappingAuthors(TwoAuthors):
    """``TwoAuthors`` whose Alpha run waits, before it revises, for the Beta run to ask for its
    draft: the two runs are going at the same time however slow the machine is (a fixed latency
    let Alpha finish before Beta had started, under load)."""

    def __init__(self):
        super().__init__()
        self.beta_asked = threading.Event()

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        if "Beta" in prompt:
            self.beta_asked.set()
        elif kind_of(prompt) != "draft":
            self.beta_asked.wait(TIMEOUT / 1000)
        return super().__call__(body)


def test_two_browsers_run_at_once_and_see_only_their_own_run(open_page, llm, app):
    llm.reply(OverlappingAuthors())
    page_a, writer_a = open_page()
    page_b, writer_b = open_page()
    start(writer_a, "Alpha: write about Python 3.6.")
    start(writer_b, "Beta: write about virtualenv.")
    progress_a, progress_b = writer_a.locator(".rat-progress"), writer_b.locator(".rat-progress")
    expect(progress_a).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    expect(progress_b).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    text_a, text_b = writer_a.inner_text(), writer_b.inner_text()
    assert "Alpha step 1" in text_a and "Beta step" not in text_a
    # the two runs were going at the same time: each started before the other ended
    runs = {app.store.get_run(r.id).task: r.id for r in app.store.list_runs(limit=2)}
    rows = {task[:4]: app.store.event_rows(run_id) for task, run_id in runs.items()}
    assert rows["Alph"][0].ts < rows["Beta"][-1].ts and rows["Beta"][0].ts < rows["Alph"][-1].ts, rows
    assert "Beta step 1" in text_b and "Alpha step" not in text_b


def test_a_model_server_that_is_down_is_named_instead_of_failing(open_page, llm, app):
    llm.down = True
    runs_before = len(app.store.list_runs())
    page, writer = open_page(ready=False)
    model = writer.locator(".rat-model")
    expect(model).to_contain_text("fake-model")
    expect(model).to_contain_text("503")
    start(writer, "Write about Python 3.")
    expect(page.get_by_role("status").filter(has_text="failed with 503")).to_be_visible()
    assert len(app.store.list_runs()) == runs_before, "no run was started"
    expect(writer.locator(".rat-progress")).to_have_text("No run yet: type a task and press Run.")


def test_a_refused_revision_is_shown_and_can_be_taken_by_hand(open_page, llm):
    talk = "I have made the requested changes to answer this question according to the WIKI."

    class Talker(RatAuthor):  # step 2's revision is talk about the task (a real model's reply)
        def __call__(self, body: dict) -> str:
            reply = super().__call__(body)
            if "##Paragraph to revise:" in prompt_of(body) and "Step 2:" in sections(prompt_of(body))[
                    "Paragraph to revise"]:
                return talk
            return reply

    author = Talker(draft_steps(3))
    llm.reply(author)
    page, writer = open_page()
    start(writer, "Write about Python 3 and a guarded step.", method="rat-step")
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("1 revision was refused and the text kept", timeout=TIMEOUT)
    expect(progress).to_contain_text("step 2: the model's revision was refused")
    card = writer.locator("#rat-step-2")
    expect(card.locator(".rat-badge")).to_have_text("revision refused")
    expect(card).to_contain_text("The model's revision of step 2 was not used: it talks about the task")
    # the settled panel (the article under the cards) draws the cards again, folded: open one after it
    expect(article_box(writer)).to_be_visible(timeout=TIMEOUT)
    # a finished step's card is folded to its header line: its title opens it (the middle holds its buttons)
    card.locator("> summary").click(position={"x": 24, "y": 12})
    card.get_by_text(re.compile(r"^The refused revision")).click()
    expect(card.locator("pre.rat-rejected")).to_have_text(talk)
    article = article_box(writer)
    steps = author.steps
    expect(article).to_have_value(f"{steps[0]} [revised]\n\n{steps[1]}\n\n{steps[2]} [revised]")
    writer.get_by_role("checkbox", name=re.compile("^Step 2: ")).check()  # only under "Take": no undo
    expect(article).to_have_value(f"{steps[0]} [revised]\n\n{talk}\n\n{steps[2]} [revised]")
    expect(card).to_contain_text("taken by hand in the article below")


class Quoter(RatAuthor):
    """RatAuthor whose first revision (RAT's, of the answer so far) ends with a sentence made of
    the first words of the first passage it was shown: a sentence that passage supports."""

    PASSAGE = re.compile(r"^\[(\d+)\] .*? — (\S+)\n<passage>\n(.*?)\n</passage>", re.S | re.M)

    def __init__(self, steps: list[str]):
        super().__init__(steps)
        self.quote, self.url = "", ""

    def __call__(self, body: dict) -> str:
        reply = super().__call__(body)
        prompt = prompt_of(body)
        if kind_of(prompt) != "revise" or self.quote:
            return reply
        first = self.PASSAGE.search(prompt)
        words = re.findall(r"[A-Za-z]+", first.group(3))[:14]
        self.quote, self.url = " ".join(words).capitalize() + ".", first.group(2)
        return f"{reply}\n\n{self.quote}"


def test_a_mark_opens_on_its_passage_and_the_article_is_exported_as_docx(open_page, llm, app, tmp_path):
    from docx import Document

    author = Quoter(draft_steps(3))
    llm.reply(author)
    page, writer = open_page()
    start(writer, "Write a cited history of Python 3 and its tools.")
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("Done: 3 steps revised.", timeout=TIMEOUT)
    expect(progress).to_contain_text(re.compile(r"\d+ of \d+ sentences cited"))
    assert author.quote, "the model was shown passages"

    cited = writer.locator(".block.rat-cited-panel")
    expect(cited.locator(".rat-cite-summary")).to_contain_text("sentences cited")
    sentence = cited.locator("span.rat-sentence", has_text=author.quote.removesuffix("."))
    mark = sentence.locator("details.rat-cite").first
    box = mark.locator(".rat-cite-box")
    expect(box).to_be_hidden()
    mark.locator("summary").click()
    expect(box).to_be_visible()
    shown = " ".join(re.findall(r"[A-Za-z]+", box.locator(".rat-cite-passage").inner_text()))
    assert author.quote.removesuffix(".").lower() in shown.lower(), "the passage the sentence was copied from"
    expect(box.locator(f"a[href='{author.url}']")).to_be_visible()
    screenshot(page, "writer-citations.png", top=cited)

    # the author's own sentence has no source: the cited view follows the edited text
    article = article_box(writer)
    claim = "The author adds a bold claim about tortoises and their racing speed."
    article.fill(article.input_value() + "\n\n" + claim)
    writer.get_by_role("radio", name="Read").check()
    expect(article).to_be_hidden()
    expect(cited.locator("span.rat-unsupported", has_text=claim.removesuffix("."))).to_have_attribute(
        "title", "no source supports this sentence")

    download_btn = writer.get_by_role("button", name="Download Word", exact=True)
    expect(writer.locator(".block.rat-saved")).to_contain_text("Version 1,", timeout=TIMEOUT)  # the edit saved
    expect(download_btn).to_be_enabled(timeout=TIMEOUT)
    with page.expect_download() as info:
        download_btn.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    text = "\n".join(p.text for p in Document(str(path)).paragraphs)
    assert claim in text and re.search(r"\[\d+\]", text), text
    assert "Sources" in text

    # History shows the stored run with the same marks and counts
    run = app.store.list_runs(limit=1)[0]
    page.get_by_role("tab", name="History").click()
    history = page.locator("#rat-tab-history")
    history.get_by_label("Run", exact=True).fill(run.id)
    history.get_by_role("button", name="Open").click()
    expect(history.locator(".rat-progress")).to_contain_text(re.compile(r"\d+ of \d+ sentences cited"))
    stored = history.locator(".block.rat-cited-panel span.rat-sentence", has_text=author.quote.removesuffix("."))
    expect(stored.locator("details.rat-cite summary").first).to_be_visible()
    expect(history.get_by_role("button", name="Download Word", exact=True)).to_be_enabled()


def test_a_reasoning_models_thinking_is_shown_folded_under_its_step_and_never_in_the_text(open_page, llm):
    from tests.fakes.llm_server import THOUGHT, with_thinking

    llm.reply(with_thinking(RatAuthor(draft_steps(2)), "reasoning_content"))
    page, writer = open_page()
    start(writer, "Describe how Python 3 changed text and bytes.")
    progress = writer.locator(".rat-progress")
    expect(progress).to_contain_text("Done: 2 steps revised.", timeout=TIMEOUT)
    # the settled panel (its saved line) draws the cards again, folded: open one after it
    expect(writer.locator(".rat-saved").last).to_contain_text("The model's text", timeout=TIMEOUT)
    card = writer.locator("#rat-step-1")
    # a finished step's card is folded to its header line: its title opens it (the middle holds its buttons)
    card.locator("> summary").click(position={"x": 24, "y": 12})
    folded = card.locator("details.rat-thinking").first
    expect(folded.locator("summary")).to_contain_text(re.compile(r"Thinking \((query|revise)"))
    expect(folded.locator(".rat-thinking-text")).to_be_hidden()
    folded.locator("summary").click()
    expect(folded.locator(".rat-thinking-text")).to_contain_text("PONDERING-XYZ")
    expect(writer.locator(".block.rat-draft-panel details.rat-thinking summary")).to_contain_text("Thinking (draft")
    assert "PONDERING-XYZ" in THOUGHT
    expect(writer.locator(".block.rat-cited-panel")).not_to_contain_text("PONDERING")
    expect(writer.locator(".block.rat-draft-panel ol.rat-draft")).not_to_contain_text("PONDERING")
    screenshot(page, "writer-thinking.png", top=card)
