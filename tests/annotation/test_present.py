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

from annotation import judge
from annotation.errors import ArenaError
from annotation.outputs import article_renderer
from annotation.present import PLAIN, SOURCES, STYLES, Entry, parse, present
from annotation.service import Arena, Shown
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
