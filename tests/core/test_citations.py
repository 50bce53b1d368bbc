"""Inline citations (issue 10): one numbering per article, passages labelled with it in the
prompts, marks by attribution, a model's own marks kept only when they name a passage of their
step, only read pages listed as read, non-web URLs dropped, exports (Markdown, DOCX) with the
marks. Pure functions first, then end to end: the openai SDK over HTTP to the fake model,
SearXNG search and page fetching over HTTP, a real SQLite file."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import docx
import pytest

import app as app_module
from common.events import DraftReady, Final, Note, PassagesChosen, QueryMade, SearchDone, StepRevised
from common.types import Passage, Source, Task
from core.article.article import Article
from core.article.citations import StepEvidence, cite, mark_order, shown_labels, strip_marks
from core.article.docx import to_docx
from core.article.markdown import to_markdown
from core.article.sources import SourceBook
from core.text.fencing import format_passages
from tests.fakes.scripts import RatAuthor, draft_steps, kind_of, sections
from tests.helpers import collect, of
from tests.test_app import cli

JIN = Passage("Jin Yong was a Chinese wuxia novelist born in Haining in 1924.", "https://a.example/jin", "Jin Yong")
MING = Passage("He founded the Ming Pao newspaper in Hong Kong in 1959.", "https://b.example/ming", "Ming Pao")
NUMBERS = {JIN.url: 1, MING.url: 2}


# -- pure ----------------------------------------------------------------------------------------
def test_a_sentence_gets_the_mark_of_the_passage_that_supports_it_and_the_rest_is_unchanged():
    text = "Jin Yong was a wuxia novelist born in Haining. He liked long walks by the sea every morning.\n"
    cited = cite(text, [StepEvidence(1, text, [JIN, MING])], NUMBERS)
    assert cited.text == ("Jin Yong was a wuxia novelist born in Haining [1]. "
                          "He liked long walks by the sea every morning.\n")
    assert (cited.sentences, cited.supported, cited.removed) == (2, 1, 0)
    (mark,) = [m for p in cited.pieces for m in p.marks]
    assert mark.url == JIN.url and mark.passage == JIN.text and not mark.by_model
    assert strip_marks(cited.text) == text


def test_a_copied_label_stays_and_an_invented_one_is_removed_and_counted():
    text = ("He founded a newspaper, Ming Pao [2]. He wrote many novels [9]. "
            "Then he retired from writing novels [1, 9].\n")
    cited = cite(text, [StepEvidence(1, text, [JIN, MING])], NUMBERS)
    assert "[9]" not in cited.text
    assert cited.removed == 2, "[9] twice names no passage of the step"
    assert "Ming Pao [2]." in cited.text
    assert "retired from writing novels [1]." in cited.text, "a mark naming a passage of the step stays"
    assert cited.supported == 2 and cited.sentences == 3


def test_a_mark_before_a_colon_is_the_models_and_only_a_line_opening_one_is_a_reference_definition():
    """A found truth bug (a real model's "... on the following websites [1]: ..."): a [n] before a
    colon was read as text by cite and as a mark by mark_order, so a mark the model wrote stayed
    unchecked and the cited text was not the text with marks."""
    text = ("He founded a newspaper in Hong Kong [9]: Ming Pao, in 1959.\n"
            "Jin Yong was a novelist born in Haining [1]: a wuxia writer.\n"
            "[2]: https://b.example/ming\n")
    cited = cite(text, [StepEvidence(1, text, [JIN, MING])], NUMBERS)
    assert cited.removed == 1, "[9] names no passage of the step"
    assert "[9]" not in cited.text
    assert "Haining: a wuxia writer [1]." in cited.text, "a mark naming a passage of the step stays"
    assert cited.text.endswith("\n[2]: https://b.example/ming\n"), "a reference definition is text"
    assert strip_marks(cited.text) == strip_marks(text) == (
        "He founded a newspaper in Hong Kong: Ming Pao, in 1959.\n"
        "Jin Yong was a novelist born in Haining: a wuxia writer.\n"
        "[2]: https://b.example/ming\n")
    assert mark_order(cited.text) == [m.n for p in cited.pieces for m in p.marks] == [2, 1]


def test_a_mark_means_the_label_its_own_prompt_gave_the_page():
    """Step 1's prompt showed Jin as [1] and Ming as [2] but used Ming only (Ming: source 1); step 2's
    prompt showed the article's source 1 (Ming) and then Tea as [2]: a [2] the model wrote names Ming
    in step 1 and Tea in step 2, though the article numbers Ming 1 and Tea 2 (a found truth bug: a
    step's quote was said to come from a later step's page)."""
    tea = Passage("Green tea, black tea and oolong are the common teas of China.", "https://c.example/tea", "Tea")
    one, two = "He founded the newspaper Ming Pao [2].", "Oolong and green tea are common teas of China [2]."
    events = [DraftReady(steps=("a", "b")), PassagesChosen(1, (JIN, MING)), StepRevised(1, "a", one, (MING.url,)),
              PassagesChosen(2, (MING, tea)), StepRevised(2, "b", two, (tea.url,))]
    assert shown_labels(events) == {1: {JIN.url: 1, MING.url: 2}, 2: {MING.url: 1, tea.url: 2}}
    book = SourceBook.from_events(events)
    assert book.numbers() == {MING.url: 1, tea.url: 2}
    cited = book.cited(f"{one}\n\n{two}")
    marks = {p.body: [(m.url, m.by_model) for m in p.marks] for p in cited.pieces if p.marks}
    assert marks == {"He founded the newspaper Ming Pao": [(MING.url, True)],
                     "Oolong and green tea are common teas of China": [(tea.url, True)]}, marks
    assert cited.removed == 0


def test_a_mark_naming_a_source_of_another_step_is_removed():
    one, two = "Jin Yong was born in Haining in 1924 [1].", "He founded Ming Pao in Hong Kong [1]."
    steps = [StepEvidence(1, one, [JIN]), StepEvidence(2, two, [MING])]
    cited = cite(one + "\n\n" + two + "\n", steps, NUMBERS)
    assert cited.text == ("Jin Yong was born in Haining in 1924 [1].\n\n"
                          "He founded Ming Pao in Hong Kong [2].\n")
    assert cited.removed == 1


def test_an_edited_sentence_that_no_step_holds_gets_no_mark():
    step = "Jin Yong was born in Haining in 1924."
    cited = cite("Jin Yong, the novelist, was born in Haining in 1924.", [StepEvidence(1, step, [JIN])], NUMBERS)
    assert cited.supported == 0 and cited.sentences == 1 and "[" not in cited.text


def test_headings_and_short_lines_need_no_source():
    text = "# Jin Yong\n\nAnswer: Haining\n\nJin Yong was born in Haining in 1924.\n"
    cited = cite(text, [StepEvidence(1, text, [JIN])], NUMBERS)
    assert cited.sentences == 1 and cited.supported == 1
    assert cited.text.startswith("# Jin Yong\n\nAnswer: Haining\n\n")


def test_passages_in_a_prompt_carry_the_article_numbers():
    new = Passage("Other text.", "https://c.example/new", "New")
    shown = format_passages([new, MING, new], {JIN.url: 1, MING.url: 2})
    labels = re.findall(r"^\[(\d+)\] (\S+)", shown, flags=re.M)
    assert labels == [("3", "New"), ("2", "Ming"), ("3", "New")]
    assert format_passages([MING, JIN]).startswith("[1] Ming Pao"), "without numbers: by first appearance"


def test_markdown_escapes_a_hostile_title_and_lists_snippets_apart():
    sources = [Source(1, "https://a.example/x", "<script>alert(1)</script> [evil](javascript:x)", (1,)),
               Source(2, "https://b.example/y", "Y", (2,), read=False, why="HTTP 404")]
    md = to_markdown(Article("Task", "Text.", sources, cited="Text [1][2]."))
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "](javascript" not in md, "a title cannot open a link of its own"
    assert "Text [1][2]." in md
    # a cited snippet-only source is numbered with the cited ones, and says its page was not read
    assert "## Search snippets only" not in md
    assert "2. [Y](https://b.example/y) — used in step 2; the page was not read: HTTP 404" in md.split("## Sources")[1]
    md = to_markdown(Article("Task", "Text.", sources, cited="Text [1]."))
    read, snippets = md.split("## Search snippets only (page not read)")
    assert "https://a.example/x" in read and "https://b.example/y" not in read
    assert "- [Y](https://b.example/y) — used in step 2; no sentence cites it; the page was not read: HTTP 404" \
        in snippets


def test_a_source_no_sentence_cites_says_so():
    sources = [Source(1, "https://a.example/x", "X", (1, 3)), Source(2, "https://b.example/y", "Y", (2,)),
               Source(3, "https://c.example/z", "Z", ())]
    md = to_markdown(Article("Task", "One. Two.", sources, cited="One [2-3]. Two."))
    # the readers' numbering: the cited Y and Z are 1 and 2, the uncited X is listed apart with no number
    assert "One [1][2]. Two." in md
    assert "1. [Y](https://b.example/y) — used in step 2\n" in md
    assert "2. [Z](https://c.example/z)\n" in md
    assert "## Also read\n\n- [X](https://a.example/x) — used in steps 1, 3; no sentence cites it" in md
    assert "cites" not in to_markdown(Article("Task", "One.", sources)), "without attribution nothing is claimed"
    doc = docx.Document(io.BytesIO(to_docx(Article("Task", "One. Two.", sources, cited="One [2]."))))
    lines = [p.text for p in doc.paragraphs]
    assert "[1] Y — https://b.example/y — used in step 2" in lines
    assert "X — https://a.example/x — used in steps 1, 3; no sentence cites it" in lines
    assert "Z — https://c.example/z — no sentence cites it" in lines


# -- end to end --------------------------------------------------------------------------------
TASK = Task("Write a short history of Python 3 and its ecosystem.")


class CitingAuthor(RatAuthor):
    """Revises each paragraph (rat-step) by adding the first sentence of the prompt's first
    passage with the label it was given there; on the revisions in ``invent`` also a sentence
    with a made-up [9]. Records each revision prompt's labels: {number: url}."""

    def __init__(self, steps, invent=()):
        super().__init__(steps)
        self.invent, self.labels = set(invent), []

    def __call__(self, body):
        reply = super().__call__(body)
        kind, prompt = self.calls[-1]
        if kind != "revise-step":
            return reply
        self.labels.append({int(n): url for n, url in re.findall(r"^\[(\d+)\] .*? — (\S+)$", prompt, flags=re.M)})
        passages = sections(prompt)["Existing Text in Wiki Web"]
        first = re.search(r"^\[(\d+)\].*\n<passage>\n(.*?)(?:\n|</passage>)", passages, flags=re.M)
        sentence = re.split(r"(?<=[.!?])\s", first.group(2).strip())[0].rstrip(".")
        extra = f" {sentence} [{first.group(1)}]."
        if len(self.labels) in self.invent:
            extra += " Everyone agrees this was the most important event of the decade [9]."
        return sections(prompt)["Paragraph to revise"] + extra


async def test_a_run_numbers_its_sources_once_and_marks_point_to_what_each_step_read(app, llm):
    author = CitingAuthor(draft_steps(3), invent={2})
    llm.reply(author)
    events = await collect(app.runner.start("rat-step", TASK))
    final = events[-1]
    assert isinstance(final, Final), events[-1]
    numbers = {s.url: s.n for s in final.sources}
    for labels in author.labels:  # every label the model was shown is its source's number (or a new one's)
        for n, url in labels.items():
            assert numbers.get(url, n) == n, f"{url} was labelled [{n}] but is source {numbers.get(url)}"
    assert any(set(a) & set(b) for a in author.labels for b in author.labels if a is not b) or len(numbers) > 3
    shown = {e.i: {p.url for p in e.passages} for e in of(events, PassagesChosen)}
    paragraphs = final.cited.split("\n\n")
    assert len(paragraphs) == 3
    for i, paragraph in enumerate(paragraphs, start=1):
        marks = {int(n) for n in re.findall(r"\[(\d+)\]", paragraph)}
        assert marks, f"step {i} copied a labelled sentence: it is cited\n{final.cited}\n{final.text}"
        by_number = {s.n: s.url for s in final.sources}
        assert all(by_number[n] in shown[i] for n in marks), "each mark names a passage retrieved for its step"
    assert "[9]" not in final.cited and final.marks_removed == 1
    assert "[9]" in final.text, "the model's own text is kept as it wrote it"
    assert final.supported >= 3 and final.sentences >= final.supported
    assert all(s.read for s in final.sources)
    stored = [e for e in app.store.events(events[0].run_id) if isinstance(e, Final)][-1]
    assert stored.cited == final.cited and stored.marks_removed == 1, "the marks are stored with the run"
    run = app.store.get_run(events[0].run_id)
    assert (run.sentences, run.sentences_cited, run.marks_removed) == (final.sentences, final.supported, 1), \
        "History and the CLI's history read the counts from the run's row"


async def test_resume_keeps_the_numbering(app, llm):
    author = CitingAuthor(draft_steps(3))
    llm.reply(author)
    first = await collect(app.runner.start("rat-step", TASK),
                          stop_after=lambda evs: len(of(evs, StepRevised)) == 2)
    run_id = first[0].run_id
    resumed = await collect(app.runner.resume(run_id))
    final = resumed[-1]
    assert isinstance(final, Final)
    again = await collect(app.runner.start("rat-step", TASK))  # the same run without a stop
    assert [(s.n, s.url) for s in final.sources] == [(s.n, s.url) for s in again[-1].sources]
    assert final.cited == again[-1].cited


async def test_a_step_with_only_snippets_lists_them_apart_with_the_reason(tmp_path, llm, web):
    from tests.conftest import make_settings

    settings = make_settings(tmp_path, llm, web)
    settings = replace(settings, fetch=replace(settings.fetch, allow_private_urls=False))  # no page can be read
    app = app_module.build(settings)
    llm.reply(RatAuthor(draft_steps(2)))
    events = await collect(app.runner.start("rat-step", TASK))
    final = events[-1]
    assert isinstance(final, Final) and final.sources
    assert all(not s.read for s in final.sources), "no page was read: every source is a snippet"
    assert all("private" in s.why.lower() or "loopback" in s.why.lower() or "local" in s.why.lower()
               for s in final.sources), [s.why for s in final.sources]
    md = to_markdown(Article(TASK.prompt, final.text, final.sources, cited=final.cited))
    assert "## Sources" not in md and "## Search snippets only (page not read)" in md


async def test_results_that_are_not_web_pages_are_dropped_before_fetching(app, llm, web):
    web.extra_results = [{"url": "file:///etc/passwd", "title": "passwd", "content": "root:x:0:0 Python 3"},
                         {"url": "gopher://example.org/1", "title": "gopher", "content": "Python 3 history"}]
    llm.reply(RatAuthor(draft_steps(1)))
    events = await collect(app.runner.start("rat", TASK))
    (search,) = of(events, SearchDone)
    assert all(r.url.startswith("http") for r in search.results)
    assert any("2 search result(s) with a URL that is not http(s) were dropped" in n.text for n in of(events, Note))
    final = events[-1]
    assert all(s.url.startswith("http") for s in final.sources)
    assert not any(q for q in of(events, QueryMade) if "passwd" in q.query)


async def test_docx_export_round_trip_from_the_cli(app, llm, env_for, tmp_path):
    llm.reply(CitingAuthor(draft_steps(2)))
    events = await collect(app.runner.start("rat-step", TASK))
    final = events[-1]
    data = to_docx(Article(TASK.prompt, final.text, final.sources, cited=final.cited))
    text = "\n".join(p.text for p in docx.Document(io.BytesIO(data)).paragraphs)
    marks = set(re.findall(r"\[\d+\]", final.cited))
    assert marks and all(m in text for m in marks)
    assert all(s.url in text for s in final.sources)
    out = tmp_path / "article.docx"
    done = cli("show", events[0].run_id, "--out", str(out), env_extra=env_for(app))
    assert done.returncode == 0, done.stderr
    shown = "\n".join(p.text for p in docx.Document(str(out)).paragraphs)
    assert all(m in shown for m in marks) and "Sources" in shown
    md = tmp_path / "article.md"
    assert cli("show", events[0].run_id, "--out", str(md), env_extra=env_for(app)).returncode == 0
    assert all(m in md.read_text() for m in marks)
    history = cli("history", env_extra=env_for(app))
    assert re.search(rf"\b{final.supported}/{final.sentences}\b", history.stdout), history.stdout


@pytest.fixture
def env_for(llm, web):
    def env(app):
        return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
                "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": web.searxng_url,
                "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(app.store.path)}
    return env


def test_kind_of_knows_the_step_revision():  # the CitingAuthor depends on it
    assert kind_of("##Existing Text in Wiki Web:\nx\n\n##Paragraph to revise:\ny") == "revise-step"


def test_a_step_that_uses_passages_chosen_in_earlier_steps_is_checked_against_them():
    """AAG's update step revises with what its questions retrieved (steps 2 and 3)."""
    from common.events import DraftReady, PassagesChosen
    from core.article.citations import evidence

    answer = "Jin Yong was born in Haining in 1924 [1]. He founded Ming Pao in Hong Kong in 1959 [2]."
    events = [DraftReady(steps=("plan",)), PassagesChosen(i=2, passages=(JIN,)), PassagesChosen(i=3, passages=(MING,)),
              StepRevised(i=4, before="", after=answer, sources=(JIN.url, MING.url), article=answer)]
    cited = cite(answer, evidence(events), NUMBERS)
    assert cited.removed == 0 and cited.supported == 2
    assert [m.url for p in cited.pieces for m in p.marks] == [JIN.url, MING.url]


def test_two_common_words_do_not_make_a_citation():
    text = "First step of the answer."
    weak = Passage("The first step is to read the manual.", "https://c.example/manual", "Manual")
    cited = cite(text, [StepEvidence(1, text, [weak])], {weak.url: 1})
    assert cited.sentences == 1 and cited.supported == 0, "2 of 3 words shared: not enough"


def test_rat_step_asks_for_marks_and_the_papers_prompts_keep_their_words():
    from core.text import prompts

    step = prompts.REVISE_STEP.format(content="[4] t — http://x\n<passage>\np\n</passage>", question="q",
                                      context="", step="s")
    assert "number of its passage in brackets, like [2]" in step
    for paper in (prompts.DRAFT, prompts.QUERY, prompts.REVISE):  # B.1-B.3 as the paper wrote them
        assert "brackets" not in paper and "[2]" not in paper


async def test_a_runs_pages_are_named_as_the_search_results_named_them(app, llm):
    """A run reads pages without metadata (half the extraction work); their <title> elements
    carry the site's name, so the title shown is the search result's."""
    from common.events import PageRead

    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat-step", TASK))
    named = {r.url: r.title for e in of(events, SearchDone) for r in e.results}
    read = [e for e in of(events, PageRead) if e.status == "ok"]
    assert read and all(e.title == named[e.url] for e in read), [(e.title, named[e.url]) for e in read]
    final = events[-1]
    assert isinstance(final, Final) and all(s.title == named[s.url] for s in final.sources)
