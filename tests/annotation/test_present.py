"""Outputs shown alike (issue 22, item 5): annotation.present reads any method's or system's
output (its body, citation marks and sources) and writes both sides of a pair in one house style;
a finished run with sources enters the arena as its article (annotation.outputs)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from annotation.admin import judge
from annotation.errors import ArenaError
from annotation.outputs import article_renderer
from annotation.present import PLAIN, SOURCES, STYLES, Entry, parse, present
from annotation.voting.arena import Arena
from annotation.voting.shown import Shown
from common.events import DraftReady, Final, PassagesChosen, StepRevised
from common.types import Passage, Task
from core.article.article import Article
from core.article.edits import Revisions
from core.article.markdown import text_and_sources
from core.article.sources import SourceBook
from data import arena
from data.versions import Versions
from tests.annotation.conftest import seed_outputs
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect
from ui.render_arena import battle_view

OWL = ("Owl - Wikipedia", "https://en.wikipedia.org/wiki/Owl")
QUIET = ("Silent flight of owls", "https://example.org/silent-flight")
HEAD = "Owls at night"
S1 = "Owls hunt small animals at night with their sharp eyes."
S2 = "Their soft feathers make the flight of owls almost silent."
BODY_WORDS = f"{HEAD} {S1} {S2}"


def rat_article() -> str:
    """The article a RAT run exports, made through core.article as the product makes it: S1 cited
    by the Wikipedia page, S2 by both pages."""
    text = f"## {HEAD}\n\n{S1}\n\n{S2}"
    owl = Passage(f"{S1} {S2} Owls are birds of prey.", OWL[1], OWL[0])
    quiet = Passage(f"{S2} Soft feathers muffle the sound.", QUIET[1], QUIET[0])
    book = SourceBook()
    events = [book.sourced(e) for e in (
        DraftReady((text,)), PassagesChosen(1, (owl, quiet)),
        StepRevised(1, text, text, sources=(OWL[1], QUIET[1]), article=text), Final(text))]
    return text_and_sources(Article.from_events("Describe owls", events))


#: The same content (a heading, two sentences, two sources) as each kind of method writes it.
SOURCED = {
    "rat": rat_article(),
    "imported": (f"# {HEAD}\n\n{S1[:-1]} [1].\n\n{S2[:-1]} [1, 2].\n\n## References\n\n"
                 f"[1] {OWL[0]} - {OWL[1]}\n[2] {QUIET[0]} - {QUIET[1]}\n"),
    "footnotes": (f"**{HEAD}**\n\n{S1}[^owl]\n\n{S2}[^owl][^quiet]\n\n"
                  f"[^owl]: {OWL[0]}, {OWL[1]}\n[^quiet]: [{QUIET[0]}]({QUIET[1]})\n"),
    "chat": (f"{HEAD}\n{'=' * len(HEAD)}\n\n{S1[:-1]}【1】.\n\n{S2[:-1]}【1†source】【2】.\n\n---\n\n"
             f"Sources:\n- [{OWL[0]}]({OWL[1]})\n- [{QUIET[0]}]({QUIET[1]})"),
    "echoed": (f"### {HEAD}\n\n[1] {OWL[0]} — {OWL[1]}\n<passage>\n{S1[:-1]} [1].\n</passage>\n\n"
               f"{S2[:-1]} [1][Source 2: {QUIET[0]} — {QUIET[1]}]."),
}
BARE = {"cot": f"## {HEAD}\n\n{S1}\n\n{S2}", "direct": f"__{HEAD}__\n\n{S1}  \n{S2}\n\n***"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.kinds: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        self.kinds.add(tag)


def kinds(markdown: str) -> frozenset[str]:
    """The kinds of HTML element ``markdown`` renders to (CommonMark, as the browser's renderer)."""
    parser = Tags()
    parser.feed(MarkdownIt("commonmark").render(markdown))
    return frozenset(parser.kinds)


def shown_kinds(a: str, b: str, style: str) -> tuple[frozenset[str], frozenset[str]]:
    """The element kinds of A and B as the Arena tab shows them."""
    _, side_a, side_b = battle_view(Shown(1, "Describe owls", a, b), style)
    return kinds(side_a), kinds(side_b)


def words(text: str) -> Counter:
    return Counter(re.findall(r"[A-Za-z]+", text))


# -- the parser on each shape ----------------------------------------------------------------------
def test_bare_text_is_its_own_body():
    parsed = parse(BARE["cot"])
    assert parsed.sources == () and parsed.marks == ()
    assert parsed.body == f"#### {HEAD}\n\n{S1}\n\n{S2}"
    assert present(BARE["cot"], SOURCES) == present(BARE["cot"], PLAIN) == parsed.body


def test_a_rat_article_made_by_core_article():
    text = SOURCED["rat"]
    assert "[1]" in text and "## Sources" in text, text  # what the product writes
    parsed = parse(text)
    assert parsed.marks == ("1", "2")
    assert parsed.sources == (Entry("1", *OWL), Entry("2", *QUIET))
    assert "Sources" not in parsed.body and "[" not in parsed.body


@pytest.mark.parametrize("shape", sorted(SOURCED))
def test_each_shape_gives_its_sources_and_marks(shape):
    parsed = parse(SOURCED[shape])
    titles = [(e.title, e.url) for e in parsed.sources] or [(e.title, e.url) for e in parsed.labels]
    assert OWL in titles and (QUIET in titles or shape == "echoed"), parsed
    assert len(parsed.marks) == 2
    shown = present(SOURCED[shape], SOURCES)
    assert shown == (f"#### {HEAD}\n\n{S1[:-1]} [1].\n\n{S2[:-1]} [1][2].\n\n**Sources**\n\n"
                     f"1. [Owl - Wikipedia]({OWL[1]})\n2. [{QUIET[0]}]({QUIET[1]})"), shape
    assert present(SOURCED[shape], PLAIN) == f"#### {HEAD}\n\n{S1}\n\n{S2}", shape


def test_an_imported_reference_list_is_read_entry_by_entry():
    parsed = parse(SOURCED["imported"])
    assert parsed.sources == (Entry("1", *OWL), Entry("2", *QUIET))
    assert parsed.marks == ("1", "2")


def test_footnotes_are_marks_and_their_definitions_sources():
    parsed = parse(SOURCED["footnotes"])
    assert parsed.marks == ("^owl", "^quiet")
    assert parsed.sources == (Entry("^owl", *OWL), Entry("^quiet", *QUIET))


def test_wide_brackets_are_marks():
    parsed = parse("Owls hunt【1】 and fly【2-3】.\n\nSources:\n1. A https://a.example\n2. B https://b.example\n"
                   "3. C https://c.example")
    assert parsed.marks == ("1", "2", "3")
    assert parsed.body == "Owls hunt and fly."


def test_echoed_labels_and_passage_fences_leave_the_body():
    text = ("[1] What we do - Creative Commons — http://127.0.0.1:45309/pages/creativecommons.org.html\n"
            "<passage>\nOne remaining question was around Python 3.\n</passage>\n"
            "[2] Mercurial's Journey to and Reflections on Python 3 — http://127.0.0.1:45309/pages/python3.html\n"
            "The answer is not correct [2].")
    parsed = parse(text)
    assert parsed.body == "One remaining question was around Python 3.\nThe answer is not correct."
    assert [e.key for e in parsed.labels] == ["1", "2"]
    assert present(text, SOURCES).endswith(
        "The answer is not correct [1].\n\n**Sources**\n\n"
        "1. [Mercurial's Journey to and Reflections on Python 3](http://127.0.0.1:45309/pages/python3.html)")


def test_a_labelled_line_that_is_prose_stays():
    text = "[1] See https://example.org for the details of owl flight."
    assert present(text, PLAIN) == "See https://example.org for the details of owl flight."


def test_a_sources_heading_followed_by_prose_stays_in_the_body():
    middle = f"{S1}\n\n## Sources\n\nPeople argue about the sources of owl lore.\n\n## Flight\n\n{S2}"
    end = f"{S1}\n\nSources\n-------\n\nPeople argue about the sources of owl lore, as this prose says."
    for text in (middle, end):
        assert parse(text).sources == ()
        for style in STYLES:
            assert words(present(text, style)) == words(text), (style, text)


def test_a_sources_section_not_at_the_end_stays_in_the_body():
    text = f"{S1}\n\n## Sources\n\n1. [{OWL[0]}]({OWL[1]})\n\n## Flight\n\n{S2}"
    assert parse(text).sources == ()
    assert OWL[1] in present(text, PLAIN) and S2 in present(text, PLAIN)


@pytest.mark.parametrize("text", [
    f"{S1}\n\nSee the pages:\n\nhttps://a.example\nhttps://b.example",  # bare URLs under no heading
    f"{S1}\n\nReferences\n\nLewis, P. et al. (2020). Retrieval-augmented generation.",  # plain lines, no URL
    f"{S1}\n\nSteps:\n1. Mix the flour\n2. Bake it",  # a list under a heading that names no sources
])
def test_what_does_not_look_like_sources_stays_in_the_body(text):
    assert parse(text).sources == ()
    assert present(text, PLAIN) == text


def test_sections_come_off_the_end_one_by_one_and_definitions_anywhere():
    text = (f"{S1} [1]\n\n[2]: {QUIET[1]} \"{QUIET[0]}\"\n\n{S2} [2]\n\n## Sources\n\n1. [{OWL[0]}]({OWL[1]})\n\n"
            "## Also read\n\n- [Bats](https://bats.example) — used in step 1; no sentence cites it\n")
    parsed = parse(text)
    assert parsed.body == f"{S1}\n\n{S2}"
    assert [(e.key, e.title) for e in parsed.sources] == [("1", OWL[0]), ("1", "Bats"), ("2", QUIET[0])]
    assert present(text, SOURCES).endswith(f"**Sources**\n\n1. [{OWL[0]}]({OWL[1]})\n2. [{QUIET[0]}]({QUIET[1]})\n"
                                           "3. [Bats](https://bats.example)")


def test_sources_are_numbered_by_first_use_and_the_list_agrees():
    text = ("Quiet flight comes first [2]. Hunting comes next [1]. Both [2, 1].\n\n"
            f"References:\n1. {OWL[0]} - {OWL[1]}\n2. {QUIET[0]} - {QUIET[1]}\n3. Uncited book")
    shown = present(text, SOURCES)
    body, _, listed = shown.partition("\n\n**Sources**\n\n")
    assert body == "Quiet flight comes first [1]. Hunting comes next [2]. Both [1][2]."
    assert listed.splitlines() == [f"1. [{QUIET[0]}]({QUIET[1]})", f"2. [{OWL[0]}]({OWL[1]})", "3. Uncited book"]


def test_a_mark_naming_no_source_is_left_out_and_lookalikes_stay():
    text = ("Owls were counted in [2020] and in [the survey](https://example.org) [7].\n\n"
            "```\nprint(xs[1])  # [1]\n```\n\nA `[1]` in code.")
    for style in STYLES:
        shown = present(text, style)
        assert "[2020]" in shown and "[the survey](https://example.org)" in shown
        assert "[7]" not in shown and "print(xs[1])  # [1]" in shown and "`[1]`" in shown


@pytest.mark.parametrize("style", STYLES)
def test_presenting_twice_changes_nothing(style):
    for text in [*SOURCED.values(), *BARE.values()]:
        once = present(text, style)
        assert present(once, style) == once


def test_an_unknown_style_is_refused():
    with pytest.raises(ValueError, match="--arena-style"):
        present("text", "fancy")


# -- the two sides alike ---------------------------------------------------------------------------
def test_raw_outputs_look_different():
    """What the house style has to undo: as written, the shapes render to different elements."""
    assert len({kinds(text) for text in [*SOURCED.values(), *BARE.values()]}) > 2


@pytest.mark.parametrize("a, b", list(combinations(sorted(SOURCED), 2)))
def test_with_sources_both_sides_have_the_same_kinds_of_element(a, b):
    side_a, side_b = shown_kinds(SOURCED[a], SOURCED[b], SOURCES)
    assert side_a == side_b, (a, b)
    assert {"ol", "li", "a", "strong", "h4"} <= side_a


@pytest.mark.parametrize("a, b", list(combinations(sorted({**SOURCED, **BARE}), 2)))
def test_plain_both_sides_have_the_same_kinds_of_element(a, b):
    texts = {**SOURCED, **BARE}
    side_a, side_b = shown_kinds(texts[a], texts[b], PLAIN)
    assert side_a == side_b, (a, b)
    assert not {"ol", "li", "a", "strong"} & side_a


@pytest.mark.parametrize("shape", sorted({**SOURCED, **BARE}))
def test_plain_keeps_every_word_of_the_body(shape):
    text = {**SOURCED, **BARE}[shape]
    kept = words(present(text, PLAIN))
    assert kept == words(BODY_WORDS), shape


def recorded_replies() -> list[str]:
    path = Path(__file__).resolve().parents[1] / "recorded" / "smollm2.json"
    return [r["reply"] for r in json.loads(path.read_text(encoding="utf-8"))]


_LABEL_LINE = re.compile(r"^\[\d+\] .* — https?://\S+$")


def test_real_smollm2_replies_lose_their_echoed_labels_and_nothing_else():
    labelled = 0
    for reply in recorded_replies():
        lines = reply.splitlines()
        labelled += any(_LABEL_LINE.match(line) for line in lines)
        expected = [re.sub(r"\[\d+\]", "", line) for line in lines
                    if not _LABEL_LINE.match(line) and line.strip() not in ("<passage>", "</passage>")]
        shown = present(reply, PLAIN)
        assert not any(_LABEL_LINE.match(line) or "passage>" in line for line in shown.splitlines())
        assert words(shown) == words("\n".join(expected)), reply
    assert labelled >= 2, "the recorded replies hold echoed labels"


def test_the_arena_tab_shows_both_sides_in_the_arena_style():
    shown = Shown(1, "Describe owls", SOURCED["imported"], BARE["cot"])
    _, a, _ = battle_view(shown)
    assert "**Sources**" in a and "## References" not in a
    _, a, _ = battle_view(shown, PLAIN)
    assert "[1]" not in a and "References" not in a and S2[:-1] in a


def test_the_arena_checks_its_style(store):
    with pytest.raises(ArenaError, match="--arena-style"):
        Arena(store, style="fancy")
    assert Arena(store, style=PLAIN).style == PLAIN and Arena(store).style == SOURCES


# -- runs enter the arena as their article -------------------------------------------------------------
TASK = Task("Write a short history of Python 3 and its ecosystem.")


def stored(store) -> dict[str, str]:
    """method -> the text of its newest output."""
    rows = store.db.execute("select method, text from outputs order by id").fetchall()
    return dict(rows)


async def test_a_finished_rat_run_enters_the_arena_with_marks_and_sources(app, llm):
    llm.reply(RatAuthor(draft_steps(3)))
    rat_id = (await collect(app.runner.start("rat", TASK)))[0].run_id
    cot_id = (await collect(app.runner.start("cot", TASK)))[0].run_id
    rat, cot = app.store.get_run(rat_id), app.store.get_run(cot_id)
    Arena(app.store, rng=random.Random(0)).next_pair("ana")
    texts = stored(app.store)

    article = Article.from_events(rat.task, app.store.events(rat_id))
    assert texts["rat"] == text_and_sources(article), "the Writer's article, as the export builds it"
    body, _, listed = texts["rat"].partition("\n\n## Sources\n\n")
    assert re.search(r"\[\d\]", body) and listed.startswith("1. ["), texts["rat"]
    assert parse(texts["rat"]).sources and parse(texts["rat"]).marks
    assert texts["cot"] == cot.final_text, "a baseline without sources is stored as it is"
    assert parse(texts["cot"]).sources == () and parse(texts["cot"]).marks == ()
    assert "**Sources**" in present(texts["rat"], SOURCES) and "[1]" in present(texts["rat"], SOURCES)
    assert "[1]" not in present(texts["rat"], PLAIN)

    render = article_renderer(app.store)
    Versions(app.store).add(rat_id, rat.final_text, action="restore")  # the text it already shows
    assert arena.sync_run_outputs(app.store, render=render) == 0, "a version back to the shown text is nothing new"
    edited = rat.final_text + "\n\nMercurial moved its code base from Python 2 to Python 3 over several years."
    version = Versions(app.store).add(rat_id, edited, action="edit")
    assert arena.sync_run_outputs(app.store, render=render) == 1
    mine = Revisions.from_events(app.store.events(rat_id)).article(rat.task, edited, version.undone, version.taken)
    assert stored(app.store)["rat"] == text_and_sources(mine), "the author's version, cited as the export cites it"
    assert "## Sources" in stored(app.store)["rat"]


async def test_the_judge_reads_the_outputs_as_people_see_them(app, llm):
    llm.reply(lambda body: "Verdict: A")
    seed_outputs(app.store, {"Describe owls": {"x": SOURCED["imported"], "y": BARE["cot"]}})
    await judge.judge_store(app.store, app.clients.llm, "fake-model", n=2, style=PLAIN)
    prompts = [json.dumps(body) for body in llm.requests]
    assert prompts and all("References" not in p and "[1]" not in p and S2[:-1] in p for p in prompts)
    with pytest.raises(ValueError, match="--arena-style"):
        await judge.judge_store(app.store, app.clients.llm, "other-model", n=2, style="fancy")


# -- other systems' reports: their reference headings and citation styles (issue 37, item 5) ---------
#: Reference headings as long reports of other systems write them, in their languages.
REFERENCE_HEADINGS = [
    "References", "Sources", "Bibliography", "Works cited", "参考文献", "参考资料", "参考来源", "引用", "来源",
    "Références", "Bibliographie", "Quellen", "Literatur", "Literaturverzeichnis", "Referencias", "Fuentes",
    "Bibliografía", "Riferimenti", "Fonti", "Referências", "Fontes", "出典", "참고 문헌", "참고자료", "Источники",
    "Литература", "Список литературы",
]
#: How a heading is set: alone on its line, with a colon (a full-width one too), as a Markdown
#: heading, bold, bold with its colon.
HEADING_FORMS = ["{}", "{}:", "{}：", "## {}", "### 5. {}", "**{}**", "**{}:**"]
OWL_REF = "Owlson, A. (2010). Owls at night. Bird Press."
QUIET_REF = "Feather, B., & Park, D. (2012). Silent flight. Wing Press."
PROSE = f"{S1}\n\n{S2}"


def house_list(*entries: str) -> str:
    return "**Sources**\n\n" + "\n".join(f"{n}. {e}" for n, e in enumerate(entries, start=1))


def assert_plain(shown: str, prose: str = PROSE, words_of: str | None = None) -> None:
    """No citation mark, URL, list or reference heading is left, the prose is as written, and
    the marks went cleanly: no double space, no space before a stop, no empty parentheses."""
    assert shown == prose, shown
    for leftover in ("[1]", "http", "**Sources**", "  ", " .", " ,", "()", "（）"):
        assert leftover not in shown, (leftover, shown)


def assert_sources(shown: str, body: str, *entries: str) -> None:
    """The body with its marks as [n], then exactly one Sources list in the house style, in the
    order the sources are first cited."""
    assert shown.count("**Sources**") == 1 and shown == f"{body}\n\n{house_list(*entries)}", shown
    marks = [int(n) for n in re.findall(r"\[(\d+)\]", body)]
    assert sorted(set(marks)) == list(range(1, len(entries) + 1))
    assert [n for k, n in enumerate(marks) if n not in marks[:k]] == sorted(set(marks)), "numbered by first use"


@pytest.mark.parametrize("form", HEADING_FORMS)
@pytest.mark.parametrize("name", REFERENCE_HEADINGS)
def test_each_reference_heading_in_each_form_ends_the_body(name, form):
    heading = form.format(name)
    text = (f"{S1[:-1]} [2].\n\n{S2[:-1]} [2][1].\n\n{heading}\n\n1. {QUIET[0]} - {QUIET[1]}\n"
            f"2. {OWL[0]} - {OWL[1]}\n")
    assert_plain(present(text, PLAIN))
    assert_sources(present(text, SOURCES), f"{S1[:-1]} [1].\n\n{S2[:-1]} [1][2].",
                   f"[Owl - Wikipedia]({OWL[1]})", f"[{QUIET[0]}]({QUIET[1]})")


@pytest.mark.parametrize("form", ["{}", "{}:", "## {}", "**{}**"])
@pytest.mark.parametrize("name", REFERENCE_HEADINGS)
def test_plain_academic_references_under_each_heading_are_sources(name, form):
    """A list of references with no URL (lines of author, year and title, as printed)."""
    text = f"{S1[:-1]} (Owlson, 2010).\n\n{S2[:-1]} (Owlson, 2010; Feather & Park, 2012).\n\n" \
           f"{form.format(name)}\n\n{QUIET_REF}\n{OWL_REF}\n"
    assert_plain(present(text, PLAIN))
    assert_sources(present(text, SOURCES), f"{S1[:-1]} [1].\n\n{S2[:-1]} [1][2].",
                   r"Owlson, A. \(2010\). Owls at night. Bird Press.",
                   r"Feather, B., & Park, D. \(2012\). Silent flight. Wing Press.")


#: The same two sentences and two sources in each citation style of other systems: the Owl page
#: (or Owlson's book) cited by both, the page on silent flight (Feather's book) by the second.
CITED = {
    "author-date": (f"{S1[:-1]} (Owlson, 2010).\n\n{S2[:-1]} (Owlson, 2010; Feather & Park, 2012).\n\n"
                    f"References\n\n{QUIET_REF}\n{OWL_REF}"),
    "author-date, no comma": (f"{S1[:-1]} (Owlson 2010).\n\n{S2[:-1]} (Owlson 2010; Feather and Park 2012).\n\n"
                              f"## Bibliography\n\n- {OWL_REF}\n- {QUIET_REF}"),
    "et al.": (f"{S1[:-1]} (Owlson et al., 2010, p. 4).\n\n{S2[:-1]} (see Owlson et al., 2010; Feather & Park, "
               f"2012).\n\nWorks cited:\n\nOwlson, A., Kim, C., & Lee, D. (2010). Owls at night. Bird Press.\n"
               f"{QUIET_REF}"),
    "superscript after the stop": (f"{S1}²\n\n{S2}²˒¹\n\n**References**\n\n1. {QUIET[0]}, {QUIET[1]}\n"
                                   f"2. {OWL[0]}, {OWL[1]}"),
    "superscript after the word": (f"{S1[:-1]}¹.\n\n{S2[:-1]}¹⁻².\n\nSources:\n1. [{OWL[0]}]({OWL[1]})\n"
                                   f"2. [{QUIET[0]}]({QUIET[1]})"),
    "bare URLs": f"{S1[:-1]} {OWL[1]}.\n\n{S2[:-1]} {OWL[1]} {QUIET[1]}.",
    "bare URLs and a list": (f"{S1[:-1]} {OWL[1]}.\n\n{S2[:-1]} {OWL[1]}, {QUIET[1]}.\n\nReferences:\n"
                             f"- {QUIET[0]}: {QUIET[1]}\n- {OWL[0]}: {OWL[1]}"),
    "URLs in parentheses": f"{S1[:-1]} ({OWL[1]}).\n\n{S2[:-1]} ({OWL[1]}, {QUIET[1]}).",
    "links in parentheses": (f"{S1[:-1]} ([{OWL[0]}]({OWL[1]})).\n\n"
                             f"{S2[:-1]} ([{OWL[0]}]({OWL[1]}); [{QUIET[0]}]({QUIET[1]}))."),
    "marks in parentheses": (f"{S1[:-1]} ([1]).\n\n{S2[:-1]} ([1], [2]).\n\n## Sources\n\n1. {OWL[0]} {OWL[1]}\n"
                             f"2. {QUIET[0]} {QUIET[1]}"),
}
CITED_LISTS = {
    "author-date": (r"Owlson, A. \(2010\). Owls at night. Bird Press.",
                    r"Feather, B., & Park, D. \(2012\). Silent flight. Wing Press."),
    "et al.": (r"Owlson, A., Kim, C., & Lee, D. \(2010\). Owls at night. Bird Press.",
               r"Feather, B., & Park, D. \(2012\). Silent flight. Wing Press."),
    "bare URLs": (f"[{OWL[1]}]({OWL[1]})", f"[{QUIET[1]}]({QUIET[1]})"),  # each its own source, titled by its URL
}
CITED_LISTS["author-date, no comma"] = CITED_LISTS["author-date"]
CITED_LISTS["URLs in parentheses"] = CITED_LISTS["bare URLs"]


@pytest.mark.parametrize("shape", sorted(CITED))
def test_each_citation_style_is_read(shape):
    text = CITED[shape]
    assert_plain(present(text, PLAIN))
    entries = CITED_LISTS.get(shape, (f"[Owl - Wikipedia]({OWL[1]})", f"[{QUIET[0]}]({QUIET[1]})"))
    assert_sources(present(text, SOURCES), f"{S1[:-1]} [1].\n\n{S2[:-1]} [1][2].", *entries)
    assert len(parse(text).marks) == 2
    for style in STYLES:
        once = present(text, style)
        assert present(once, style) == once, (shape, style)


@pytest.mark.parametrize("a, b", list(combinations(sorted(CITED), 2)))
def test_other_systems_reports_look_alike(a, b):
    """The same elements, a source's link aside (a printed reference has no URL to link)."""
    for style in STYLES:
        side_a, side_b = shown_kinds(CITED[a], CITED[b], style)
        assert side_a - {"a"} == side_b - {"a"}, (a, b, style)


CHINESE = """# 印刷术与欧洲

印刷术在十五世纪改变了欧洲的知识传播[1][2]。宗教改革借助印刷品迅速扩散[2]，识字率随之上升（Owlson，2010）。

参考文献：
[1] 古登堡与印刷革命 https://zh.wikipedia.org/wiki/约翰内斯·古腾堡
[2] 宗教改革与印刷 https://example.cn/reformation
[3] Owlson, A. (2010). Owls at night. Bird Press.
"""


def test_a_chinese_report_with_its_reference_list():
    assert present(CHINESE, PLAIN) == ("#### 印刷术与欧洲\n\n"
                                       "印刷术在十五世纪改变了欧洲的知识传播。宗教改革借助印刷品迅速扩散，识字率随之上升。")
    assert present(CHINESE, SOURCES) == (
        "#### 印刷术与欧洲\n\n印刷术在十五世纪改变了欧洲的知识传播[1][2]。"
        "宗教改革借助印刷品迅速扩散[2]，识字率随之上升[3]。\n\n"
        "**Sources**\n\n1. [古登堡与印刷革命](https://zh.wikipedia.org/wiki/约翰内斯·古腾堡)\n"
        "2. [宗教改革与印刷](https://example.cn/reformation)\n3. Owlson, A. \\(2010\\). Owls at night. Bird Press.")


PETTEGREE = """## The printing press in Europe

Printing spread quickly across the cities of Europe after 1450 (Pettegree, 2010). Books became cheaper, \
and more people learned to read (Eisenstein 1979; Pettegree 2010). Historians still debate how far print \
changed the way people thought (Johns et al., 1998, p. 12).

In 1500 (see Table 2) there were presses in more than 200 towns (2010).

References

Eisenstein, E. L. (1979). The Printing Press as an Agent of Change. Cambridge University Press.
Johns, A., Smith, B., & Lee, C. (1998). The Nature of the Book. University of Chicago Press.
Pettegree, A. (2010). The Book in the Renaissance. Yale University Press.
"""


def test_an_author_date_report_with_a_plain_reference_list():
    prose = ("#### The printing press in Europe\n\nPrinting spread quickly across the cities of Europe after 1450. "
             "Books became cheaper, and more people learned to read. Historians still debate how far print changed "
             "the way people thought.\n\nIn 1500 (see Table 2) there were presses in more than 200 towns (2010).")
    assert present(PETTEGREE, PLAIN) == prose, "(see Table 2) and a year alone are no citations"
    assert present(PETTEGREE, SOURCES) == (
        "#### The printing press in Europe\n\nPrinting spread quickly across the cities of Europe after 1450 [1]. "
        "Books became cheaper, and more people learned to read [1][2]. Historians still debate how far print "
        "changed the way people thought [3].\n\nIn 1500 (see Table 2) there were presses in more than 200 towns "
        "(2010).\n\n**Sources**\n\n1. Pettegree, A. \\(2010\\). The Book in the Renaissance. Yale University Press.\n"
        "2. Eisenstein, E. L. \\(1979\\). The Printing Press as an Agent of Change. Cambridge University Press.\n"
        "3. Johns, A., Smith, B., & Lee, C. \\(1998\\). The Nature of the Book. University of Chicago Press.")


@pytest.mark.parametrize("text", [
    f"{S1}\n\nReferences\n\nThis report draws on many books about owls, and on field notes from 2010.",  # prose
    f"{S1}\n\n## References\n\nOwlson (2010) and Feather (2012) wrote the books this report draws on.\n"
    "Both are in print.",  # prose of two lines
    f"{S1} The area is 5 km² and grows by 10³ m² a year.",  # units, not superscript citations
    f"{S1} Owls appear in (Windows 2000) and in (May 2020) and (see Table 2) and (2010).",  # no author-date
    f"{S1} Visit https://owl.example/night for more, or see https://owl.example/day.",  # URLs of the prose
    f"{S1} Website: https://owl.example/night",
])
def test_lookalikes_of_other_styles_stay(text):
    assert parse(text).sources == ()
    for style in STYLES:
        assert present(text, style) == text.replace("## References", "#### References"), style


def test_a_superscript_that_names_no_listed_source_stays():
    text = f"Owls hunt at night.¹\n\n## References\n\n2. {OWL[0]} {OWL[1]}"
    assert present(text, PLAIN) == "Owls hunt at night.¹"


def test_a_bare_url_the_list_already_holds_is_that_source():
    text = f"{S1[:-1]} {QUIET[1]}.\n\nSources:\n1. [{OWL[0]}]({OWL[1]})\n2. [{QUIET[0]}]({QUIET[1]}/)"
    assert present(text, SOURCES) == (f"{S1[:-1]} [1].\n\n**Sources**\n\n1. [{QUIET[0]}]({QUIET[1]}/)\n"
                                      f"2. [{OWL[0]}]({OWL[1]})")


@pytest.mark.parametrize("style", STYLES)
def test_presenting_other_systems_reports_twice_changes_nothing(style):
    for text in (CHINESE, PETTEGREE):
        once = present(text, style)
        assert present(once, style) == once


def test_a_cited_url_is_kept_in_the_stored_output_and_shown_alike(store):
    """present() works when a pair is shown: the stored text stays as the system wrote it."""
    seed_outputs(store, {"Describe owls": {"x": CITED["bare URLs"], "y": PETTEGREE}})
    texts = stored(store)
    assert texts == {"x": CITED["bare URLs"], "y": PETTEGREE}
    _, a, b = battle_view(Shown(1, "Describe owls", texts["x"], texts["y"]), PLAIN)
    assert "http" not in a + b and "References" not in b and "(Pettegree, 2010)" not in b
