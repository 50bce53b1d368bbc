"""The Writer's pure parts: the word diff, the view folded from events, the HTML it renders (all
web and model text escaped), undoing revisions, export, history rows and the replay schedule."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from common.events import (
    DraftReady,
    Failed,
    Final,
    LLMCalled,
    Note,
    PageRead,
    PassagesChosen,
    QueryMade,
    RunStarted,
    SearchDone,
    StepRevised,
    StepStarted,
    TokenDelta,
)
from common.types import Passage, SearchResult, Source
from core.article import edits
from core.authoring import Edit
from ui import article_view, escape, run_html, runs_table, runview
from ui.diff import changed, diff_html, word_diff
from ui.runview import RunView, fold

XSS = "<script>alert('x')</script>"
STEPS = ["Python 3 was released in 2008.", "Mercurial moved to Python 3.", "Pip manages packages."]


def url(n: int) -> str:
    return f"http://example.org/page{n}"


def step_events(i: int, n: int, before: str, after: str, article: str, *, title: str = "Page", query: str = "q",
                snippet: str = "a snippet", passage: str = "a passage", skipped: str = "", guarded: str = "",
                rejected: str = "") -> list:
    return [
        StepStarted(i=i, thought=STEPS[i - 1], n=n),
        LLMCalled(role="query", model="m", i=i, prompt_tokens=10, completion_tokens=5),
        QueryMade(i=i, query=query),
        SearchDone(i=i, query=query, provider="searxng", seconds=0.1,
                   results=(SearchResult(url(i), title, snippet), SearchResult(url(100 + i), "Dead", ""))),
        PageRead(i=i, url=url(i), title=title, status="ok", chars=12345, seconds=0.2),
        PageRead(i=i, url=url(100 + i), title="", status="error", error=f"{url(100 + i)} HTTP 404 Not Found"),
        PassagesChosen(i=i, passages=(Passage(passage, url(i), title, 1.0, 40),)),
        LLMCalled(role="revise", model="m", i=i, prompt_tokens=100, completion_tokens=20),
        StepRevised(i=i, before=before, after=after, sources=(url(i),) if not (skipped or guarded) else (),
                    article=article, skipped=skipped, guarded=guarded, rejected=rejected),
    ]


def rat_run(method: str = "rat", n: int = 3, refused: frozenset[int] = frozenset(), **kw) -> list:
    """A finished run's events as RAT (cumulative) or rat-step (paragraph) would store them;
    the revisions of ``refused`` steps were refused by the guards (the model's reply, kept in
    the event, is the revision with " [m<i>]" after a preamble)."""
    events = [RunStarted(run_id="abc123", method=method, task="Write about Python 3."),
              LLMCalled(role="draft", model="m", prompt_tokens=20, completion_tokens=30),
              DraftReady(steps=tuple(STEPS[:n]))]
    article = ""
    for i in range(1, n + 1):
        step = STEPS[i - 1]
        if method == "rat-step":
            before, after = step, step + f" [r{i}]"
            article = "\n\n".join(x for x in (article, after) if x)
        else:
            before = "\n\n".join(x for x in (article, step) if x)
            after = before + f" [r{i}]"
            article = after
        if i in refused:
            after, model = before, f"Here is the revised text:\n\n{before} [m{i}]"
            article = "\n\n".join(x for x in (article.removesuffix(f" [r{i}]"),) if x)
            events += step_events(i, n, before, after, article, guarded="talks about the task", rejected=model, **kw)
            continue
        events += step_events(i, n, before, after, article, **kw)
    kept = [i for i in range(1, n + 1) if i not in refused]
    sources = tuple(Source(k, url(i), "Page", (i,)) for k, i in enumerate(kept, start=1))
    unchecked = tuple(f"step {i}: the model's revision was refused" for i in sorted(refused))
    events.append(Final(text=article, sources=sources, unchecked=unchecked))
    return events


# -- diff -----------------------------------------------------------------------------------------
def test_diff_marks_insertions_and_deletions():
    html = diff_html("The cat sat on the mat.", "The black cat sat on a mat.")
    assert "<ins>black </ins>" in html
    assert "<del>the </del><ins>a </ins>" in html
    assert re.sub(r"<del>.*?</del>|<[^>]+>", "", html) == "The black cat sat on a mat."


def test_diff_pieces_rebuild_both_texts():
    before, after = "One two three.\n\nFour five.", "One 2 three.\n\nFour five six."
    pieces = word_diff(before, after)
    assert "".join(p.text for p in pieces if p.op != "delete") == after
    assert changed(before, after) == (2, 1)


def test_diff_escapes_both_sides():
    html = diff_html("safe text", f"safe text {XSS}")
    assert "<script>" not in html and "&lt;script&gt;" in html
    html = diff_html(f"{XSS} gone", "gone")
    assert "<script>" not in html and "<del>&lt;script&gt;" in html


def test_diff_with_context_leaves_out_long_unchanged_runs():
    words = " ".join(f"w{k}" for k in range(200))
    html = diff_html(words, words + " added", 5)
    assert "<ins>added</ins>" in html
    assert "…" in html and not re.search(r"\bw(0|194)\b", html)
    assert "w195 w196 w197 w198 w199 <ins>" in html
    assert diff_html(words, words, 5) == words, "no change: the text as it is"


# -- the view -------------------------------------------------------------------------------------
def test_fold_builds_a_card_per_step_and_counts_tokens():
    view = fold(rat_run())
    assert view.run_id == "abc123" and view.steps == STEPS and view.n == 3
    assert sorted(view.cards) == [1, 2, 3] and all(c.revised for c in view.cards.values())
    assert view.llm_calls == 1 + 3 * 2 and view.final is not None
    assert all(not isinstance(e, TokenDelta) for e in view.events)


def test_streamed_draft_tokens_show_numbered_and_reset_drops_them():
    view = RunView()
    view.apply(RunStarted(run_id="r", method="rat", task="t"))
    for piece in ["First ", "step.\n\n", "Second ", "st"]:
        assert view.apply(TokenDelta(role="draft", text=piece)) == {runview.DRAFT}
    html = run_html.draft_html(view)
    assert html.count("<li") == 2 and "First step." in html and "rat-caret" in html
    assert run_html.progress_text(view) == "Writing the draft…"
    view.apply(TokenDelta(role="draft", text="", reset=True))
    view.apply(TokenDelta(role="draft", text="Again"))
    assert view.draft_live == "Again"
    view.apply(DraftReady(steps=("A", "B")))
    html = run_html.draft_html(view)
    assert "rat-caret" not in html and html.count("<li") == 2


def test_progress_says_step_i_of_n_and_highlights_it():
    events = rat_run(n=3)
    cut = next(k for k, e in enumerate(events) if isinstance(e, QueryMade) and e.i == 3)
    view = fold(events[:cut])
    assert run_html.progress_text(view) == "Step 3 of 3: writing the query"
    view.apply(events[cut])
    assert run_html.progress_text(view) == "Step 3 of 3: searching"
    assert "<li class='rat-current' id='rat-draft-3'>" in run_html.draft_html(view)
    assert "<li class='rat-done' id='rat-draft-1'>" in run_html.draft_html(view)
    steps = run_html.steps_html(view)
    assert "<details class='rat-card rat-current' id='rat-step-3' open>" in steps
    assert "Step 2 of 3" in steps


@pytest.mark.parametrize("status, expected", [
    ("draft", "Draft ready: 3 steps."),
    ("interrupted", "Stopped after step 1 of 3."),
])
def test_progress_for_stopped_runs(status, expected):
    events = rat_run(n=3)
    if status == "draft":
        events = events[:3]
    else:
        events = events[:next(k for k, e in enumerate(events) if isinstance(e, StepStarted) and e.i == 2)]
    assert run_html.progress_text(fold(events), status).startswith(expected)


def test_the_progress_counts_say_one_call_and_one_page_in_the_singular():
    events = rat_run(n=1)
    draft_only = fold(events[:3])  # the draft: one call, no page read
    assert "1 LLM call · 50 tokens · 0 pages read" in run_html.progress_html(draft_only)
    one_step = fold(events)  # three calls, one page read (the other is dead)
    assert "3 LLM calls · 185 tokens · 1 page read</span>" in run_html.progress_html(one_step)


def test_progress_when_done_or_failed():
    assert run_html.progress_text(fold(rat_run())) == "Done: 3 steps revised."
    failed = fold(rat_run()[:5] + [Failed(error="The server is down.", resumable=True)])
    text = run_html.progress_text(failed, "failed")
    assert text.startswith("Failed: The server is down.") and "Continue" in text
    later = fold(rat_run()[:14] + [Failed(error="The server is down.", resumable=True)])
    assert run_html.progress_text(later, "failed").startswith("Failed after step 1 of 3: The server is down.")
    assert "rat-failed" in run_html.progress_html(failed)


def test_cards_show_query_results_pages_passages_and_diff():
    html = run_html.steps_html(fold(rat_run(n=1, query="python 3 release", title="Python 3.0 released")))
    assert "python 3 release" in html
    assert "1 results" not in html and "2 results from searxng" in html
    assert "<a href='http://example.org/page1' target='_blank' rel='noopener noreferrer nofollow'>" \
           "Python 3.0 released</a>" in html
    assert "ok · 12,345 chars" in html
    assert "rat-why'>HTTP 404 Not Found<" in html and "rat-err" in html
    assert ">Dead</a>" in html, "a page that gave no title shows its search result's"
    assert "1 passage used (40 tokens)" in html and "a passage" in html
    assert "<ins>[r1]</ins>" in html and "+1 / −0 words" in html


def test_skipped_step_says_why():
    view = fold(rat_run(n=1, skipped="no page could be read"))
    assert "Kept as drafted: no page could be read" in run_html.steps_html(view)


@pytest.mark.parametrize("field", ["title", "query", "snippet", "passage"])
def test_web_and_model_text_is_escaped(field):
    view = fold(rat_run(n=1, **{field: XSS}))
    html = run_html.steps_html(view) + run_html.draft_html(view) + run_html.progress_html(view)
    assert "<script" not in html
    assert "&lt;script&gt;" in html


def test_draft_thoughts_notes_errors_and_live_text_are_escaped():
    view = RunView()
    view.apply(RunStarted(run_id="r", method="rat", task=XSS))
    view.apply(TokenDelta(role="draft", text=XSS))
    assert "<script" not in run_html.draft_html(view)
    view.apply(DraftReady(steps=(XSS,)))
    view.apply(StepStarted(i=1, thought=XSS, n=1))
    view.apply(TokenDelta(role="query", text=XSS, i=1))
    view.apply(Note(text=XSS, i=1, level="warning"))
    view.apply(SearchDone(i=1, query="q", results=(), error=XSS, warnings=(XSS,)))
    view.apply(Failed(error=XSS))
    html = run_html.draft_html(view) + run_html.steps_html(view) + run_html.progress_html(view)
    assert "<script" not in html and html.count("&lt;script&gt;") >= 6


@pytest.mark.parametrize("bad", ["javascript:alert(1)", "data:text/html,<b>x</b>",
                                 "http://x.org/'onmouseover='alert(1)"])
def test_only_http_links_and_no_attribute_breakout(bad):
    html = escape.link(bad, "title")
    if bad.startswith("http"):
        assert "href='http://x.org/&#x27;onmouseover=&#x27;alert(1)'" in html
    else:
        assert "href" not in html and "title" in html


# -- undo and export ------------------------------------------------------------------------------
def test_rat_step_undo_swaps_only_that_paragraph():
    view = fold(rat_run("rat-step"))
    assert view.edits.text() == "\n\n".join(f"{s} [r{i}]" for i, s in enumerate(STEPS, 1))
    assert view.edits.undone_steps([2]) == [2]
    assert view.edits.text([2]) == f"{STEPS[0]} [r1]\n\n{STEPS[1]}\n\n{STEPS[2]} [r3]"


def test_rat_undo_goes_back_to_the_article_before_that_step_plus_the_draft():
    view = fold(rat_run("rat"))
    assert view.edits.undone_steps([2]) == [2, 3], "later revisions built on step 2"
    assert view.edits.text([2]) == f"{STEPS[0]} [r1]\n\n{STEPS[1]}\n\n{STEPS[2]}"
    assert view.edits.text([1]) == "\n\n".join(STEPS)
    assert view.edits.text([]) == view.final.text


def test_undo_mode_is_told_from_the_events():
    assert fold(rat_run("rat-step")).edits.mode == edits.PARAGRAPH
    assert fold(rat_run("rat")).edits.mode == edits.CUMULATIVE
    # CoT+RAG: one revision of the whole draft; undoing it gives the draft back
    draft = "\n\n".join(STEPS)
    cot_rag = fold([RunStarted(run_id="c", method="cot-rag", task="t"), DraftReady(steps=tuple(STEPS)),
                    StepRevised(i=1, before=draft, after=draft + " [r]", article=draft + " [r]"),
                    Final(text=draft + " [r]")])
    assert cot_rag.edits.mode == edits.CUMULATIVE and cot_rag.edits.text([1]) == draft
    # rounds that rewrite an output (ITRG) or gather evidence (FuRePA) are not revisions of draft steps
    rounds = fold([RunStarted(run_id="i", method="itrg-refine", task="t"),
                   StepRevised(i=1, before="", after="first", article="first"),
                   StepRevised(i=2, before="first", after="second", article="second"), Final(text="second")])
    assert rounds.edits.mode == "" and article_view.revert_choices(rounds) == []
    assert rounds.edits.text([2]) == "second"


def test_undone_steps_lose_their_sources_and_the_rest_are_renumbered():
    view = fold(rat_run("rat-step"))
    assert view.edits.sources() == view.final.sources
    kept = view.edits.sources([1])
    assert [(s.n, s.url, s.steps) for s in kept] == [(1, url(2), (2,)), (2, url(3), (3,))]


def test_export_markdown_has_the_edited_text_and_sources():
    view = fold(rat_run("rat-step"))
    md = article_view.export_markdown(view, Edit.of("My own words.", [3]))
    assert md.startswith("# Write about Python 3.\n\nMy own words.")
    # no sentence of the author's words is cited: the pages read are listed apart, with no number
    assert "## Sources" not in md and "## Also read" in md
    assert f"- [Page]({url(1)}) — used in step 1; no sentence cites it" in md
    assert url(3) not in md
    assert article_view.export_name(view) == "write-about-python-3-abc123.md"


def test_revert_choices_skip_unchanged_steps():
    events = rat_run("rat-step", n=2)
    view = fold(events)
    assert [i for _, i in article_view.revert_choices(view)] == [1, 2]
    skipped = fold(rat_run("rat-step", n=1, skipped="no pages"))
    assert article_view.revert_choices(skipped) == []


def test_an_edited_draft_starts_the_cards_over():
    events = rat_run("rat", n=2)[:-1]
    view = fold(events + [RunStarted(run_id="abc123", method="rat", task="t", resumed=True),
                          DraftReady(steps=("Edited one.",))])
    assert view.steps == ["Edited one."] and view.cards == {} and view.n == 1


# -- history and replay ---------------------------------------------------------------------------
def test_history_rows():
    from common.types import RunStatus
    from data.store import RunRow

    run = RunRow(id="abc", task_id=1, task="Write " + "x" * 200, method="rat", created="2025-01-02T03:04:05.000+00:00",
                 status=RunStatus.DONE, prompt_tokens=1000, completion_tokens=234, wall_seconds=12.34)
    (row,) = runs_table.history_rows([run])
    assert row[0] == "abc" and row[1].endswith("…") and len(row[1]) == 80
    assert row[2:] == ["rat", runs_table.when(run.created), "done", "", "", "1,234", "12.3 s"]
    checked = RunRow(id="d", task_id=1, method="rat", status=RunStatus.UNSOURCED, steps_total=3, steps_sourced=0,
                     steps_guarded=2)
    assert runs_table.history_rows([checked])[0][4:7] == ["unsourced", "0/3, 2 refused", ""]
    cited = RunRow(id="e", task_id=1, method="rat", status=RunStatus.DONE, sentences=9, sentences_cited=7,
                   marks_removed=1)
    assert runs_table.history_rows([cited])[0][6] == "7/9, 1 mark removed"
    assert runs_table.cited_cell(replace(cited, marks_removed=0)) == "7/9"
    assert runs_table.cited_cell(replace(cited, marks_removed=2)) == "7/9, 2 marks removed"
    assert len(row) == len(runs_table.HISTORY_HEADERS)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row[3])


def test_replay_schedule_caps_gaps_scales_speed_and_retypes_model_text():
    events = rat_run("rat-step", n=1)
    stamps = [f"2025-01-01T00:00:{k * 3:02d}.000+00:00" for k in range(len(events))]  # 3 s apart
    schedule = runview.replay_schedule(events, stamps, speed=2, max_gap=2.0, typing_chunks=4)
    stored = [e for _, e in schedule if not isinstance(e, TokenDelta)]
    assert stored == events
    typed = [e for _, e in schedule if isinstance(e, TokenDelta)]
    draft_typed = "".join(e.text for e in typed if e.role == "draft")
    assert draft_typed == "\n\n".join(STEPS[:1])
    revise_typed = "".join(e.text for e in typed if e.role == "revise")
    assert revise_typed == f"{STEPS[0]} [r1]" and all(e.i == 1 for e in typed if e.role == "revise")
    assert max(d for d, _ in schedule) <= 1.0 + 1e-9, "3 s gaps capped at 2 s, at 2x"
    assert sum(d for d, _ in schedule) == pytest.approx((len(events) - 1) * 1.0)
    # replaying the schedule gives the same view as the stored events
    replayed = fold(e for _, e in schedule)
    assert run_html.steps_html(replayed) == run_html.steps_html(fold(events))
    assert run_html.draft_html(replayed) == run_html.draft_html(fold(events))


# -- the live panel's pace ------------------------------------------------------------------------
async def test_streamed_tokens_are_rendered_at_most_about_ten_times_a_second(app):
    import gradio as gr

    from ui.writer import RunPanel

    async def burst():
        yield RunStarted(run_id="r", method="rat", task="t")
        for k in range(500):
            yield TokenDelta(role="draft", text=f"w{k} ")
        yield DraftReady(steps=("w0",))

    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    updates = [u async for u in panel.follow(burst(), RunView(), live=False)]
    # the reset, RunStarted, the first token, at most a few more tokens, DraftReady, the settled panel
    assert len(updates) <= 8
    whole = fold([RunStarted(run_id="r", method="rat", task="t"), DraftReady(steps=("w0",))])
    assert "".join(updates[-1][panel.draft]) == run_html.draft_html(whole)



async def test_an_undo_box_ticked_before_the_run_is_done_is_cleared_not_an_error(app):
    """Seen under load: a box ticked as the run ended reached the server before its Final, and the
    handler returned {} for the panel's 17 outputs (Gradio's "didn't return enough output values")."""
    import gradio as gr

    from ui.writer import RunPanel

    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    out = await panel.on_undo(RunView(run_id="r"), [2], [])
    assert set(out) == {panel.text.undo, panel.text.take}
    assert out[panel.text.undo].value == [] and out[panel.text.take].value == []


async def test_an_undo_box_ticked_as_the_runs_end_is_shown_undoes_the_step(app, monkeypatch):
    """The page showed the finished run while this tab's state still lacked its Final: the step is
    undone all the same, read from the store."""
    import gradio as gr

    from common.types import Task
    from core.clients import Clients
    from data.versions import Versions
    from tests.fakes.model import FakeModel
    from tests.fakes.scripts import RatAuthor, draft_steps
    from tests.helpers import collect
    from ui.writer import RunPanel

    monkeypatch.setattr(Clients, "llm", lambda self, system="": FakeModel(RatAuthor(draft_steps(3))))
    run_id = (await collect(app.runner.start("rat-step", Task("Write about Python packaging."))))[0].run_id
    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    out = await panel.on_undo(RunView(run_id=run_id), [2], [])
    assert out[panel.text.undo].value == [2]
    (version,) = Versions(app.store).list(run_id)
    assert version.action == "undo" and list(version.undone) == [2]


# -- the Writer's helpers (no browser) ------------------------------------------------------------
def test_search_choices_and_per_run_provider(app):
    from dataclasses import replace

    from ui.run_inputs import CHAIN, providers_for, search_choices

    assert search_choices(app.settings) == [("searxng", "searxng")]
    assert providers_for(app.settings, "searxng") == ("searxng",)
    two = app.settings.with_(search=replace(app.settings.search, providers=("searxng", "ddg")))
    assert search_choices(two)[0] == ("all, in order: searxng → ddg", CHAIN)
    assert providers_for(two, CHAIN) == ("searxng", "ddg") and providers_for(two, None) == ("searxng", "ddg")
    assert providers_for(two, "ddg") == ("ddg",)
    assert providers_for(two, ["corpus"]) == ("searxng", "ddg"), "a provider that is not configured is ignored"


async def test_llm_check_says_what_to_fix(app, llm):
    from ui.writer import llm_check, model_html

    problem, served = await llm_check(app.clients)
    assert problem == "" and "fake-model" in served
    assert "the model server answers" in model_html(app.settings, problem, served)
    llm.down = True
    problem, _ = await llm_check(app.clients)
    assert problem and "503" in problem
    shown = model_html(app.settings, "<b>set OPENAI_BASE_URL</b>")
    assert "&lt;b&gt;set OPENAI_BASE_URL&lt;/b&gt;" in shown


# -- refused revisions ----------------------------------------------------------------------------
def test_a_refused_revision_shows_the_reply_and_can_be_taken_in_paragraph_mode():
    view = fold(rat_run("rat-step", refused=frozenset({2})))
    card = "".join(run_html.card_parts(view.cards[2], n=3, current=False))
    assert "revision refused" in card and "Kept as it stood: the model's revision talks about the task" in card
    assert f"{STEPS[1]} [m2]" in card, "the refused reply is shown"
    ((label, step),) = article_view.take_choices(view)
    assert step == 2 and label.startswith("Step 2: ")
    assert [i for _, i in article_view.revert_choices(view)] == [1, 3], "nothing to undo at a refused step"
    assert view.edits.text() == f"{STEPS[0]} [r1]\n\n{STEPS[1]}\n\n{STEPS[2]} [r3]"
    taken = view.edits.text([], [2])
    assert taken == f"{STEPS[0]} [r1]\n\n{STEPS[1]} [m2]\n\n{STEPS[2]} [r3]", "without the model's preamble"
    assert "taken by hand" in run_html.steps_html(view, Edit(taken=(2,)))
    assert [s.steps for s in view.edits.sources()] == [(1,), (3,)]
    assert [(s.url, s.steps) for s in view.edits.sources([], [2])] == [(url(1), (1,)), (url(2), (2,)),
                                                                              (url(3), (3,))]
    assert "Not checked" not in article_view.export_markdown(view, Edit.of(view.edits.text(), [1])), \
        "run notes: asked for"
    md = article_view.export_markdown(view, Edit.of(view.edits.text(), [1]), notes=True)
    assert "## Not checked against a source" in md
    assert "- Step 1: its revision was undone by the author" in md
    assert "- Step 2: the model's revision was refused" in md
    assert "Not checked" not in article_view.export_markdown(view, Edit.of(taken, [], [2]), notes=True)


def test_taking_a_refused_revision_in_cumulative_mode_drops_the_later_revisions():
    view = fold(rat_run("rat", refused=frozenset({2})))
    assert [i for _, i in article_view.take_choices(view)] == [2]
    undone, taken = view.edits.chosen([], [2])
    assert (undone, taken) == ({3}, {2})
    assert view.edits.text([], [2]) == f"{STEPS[0]} [r1]\n\n{STEPS[1]} [m2]\n\n{STEPS[2]}"
    assert view.edits.chosen([1], [2]) == ({1, 2, 3}, set()), "undoing an earlier step wins"


def test_progress_says_what_was_refused_and_what_is_unsourced():
    view = fold(rat_run("rat-step", refused=frozenset({2})))
    text = run_html.progress_text(view, "done")
    assert "1 revision was refused and the text kept" in text and "step 2: the model's revision was refused" in text
    everything = fold(rat_run("rat-step", refused=frozenset({1, 2, 3})))
    text = run_html.progress_text(everything, "unsourced")
    assert text.startswith("Unsourced: no part of this text was checked against retrieved text (")
    assert "rat-unsourced" in run_html.progress_html(everything, "unsourced")
    assert article_view.take_choices(fold(rat_run("itrg-refine"))) == []


# -- citations ------------------------------------------------------------------------------------
def cited_run(method: str = "rat-step", *, title: str = "Page", extra: str = "It says more.", **kw) -> list:
    """``rat_run`` where each step's passage holds that step's sentence (so each is cited)."""
    def supported(e):
        if isinstance(e, PassagesChosen):
            return replace(e, passages=(Passage(f"{STEPS[e.i - 1]} {extra}", url(e.i), title, 1.0, 40),))
        return e
    return [supported(e) for e in rat_run(method, **kw)]


def test_each_mark_opens_on_its_passage_and_page():
    view = fold(cited_run())
    cited = view.edits.cited(view.edits.text())
    assert (cited.sentences, cited.supported) == (3, 3)
    html = article_view.cited_html(cited)
    marks = re.findall(r"<details class='rat-cite'>.*?</details>", html)
    assert len(marks) == 3
    assert "<summary title='Source 2: Page'>[2]</summary>" in marks[1]
    assert f"{STEPS[1]} It says more." in marks[1], "the passage that supports the sentence"
    assert f"<a href='{url(2)}' target='_blank' rel='noopener noreferrer nofollow'>Page</a>" in marks[1]
    assert html.count("<div class='rat-para'>") == 3, "blank lines separate paragraphs"
    assert "3 of 3 sentences cited" in html and "rat-unsupported" not in html


def test_a_sentence_no_source_supports_is_marked():
    view = fold(cited_run())
    text = view.edits.text() + "\nThe author added this claim about tortoises."
    html = article_view.cited_html(view.edits.cited(text))
    claim = re.search(r"<span class='rat-sentence rat-unsupported' title='no source supports this sentence'>"
                      r"The author added this claim about tortoises<sup class='rat-nosource'[^>]*>\?</sup></span>",
                      html)
    assert claim, html
    assert "[r3]<br><span class='rat-sentence rat-unsupported'" in html, "a single newline breaks the line"
    assert "3 of 4 sentences cited" in html and "1 sentence with no source" in html


def test_a_long_passage_is_trimmed_and_an_empty_article_says_so():
    view = fold(cited_run(extra="word " * 400))
    html = article_view.cited_html(view.edits.cited(view.edits.text()))
    passage = re.search(r"<span class='rat-cite-passage'>(.*?)</span>", html).group(1)
    assert len(passage) <= article_view.PASSAGE_CHARS and passage.endswith("…")
    assert "empty" in article_view.cited_html(view.edits.cited(""))


@pytest.mark.parametrize("where", ["title", "passage", "text", "url"])
def test_hostile_text_in_the_cited_article_is_escaped(where):
    events = cited_run(title=XSS if where == "title" else "Page", extra=XSS if where == "passage" else "More.")
    if where == "url":
        events = [replace(e, passages=tuple(replace(p, url="javascript:alert(1)") for p in e.passages))
                  if isinstance(e, PassagesChosen) else
                  replace(e, sources=("javascript:alert(1)",) if e.sources else ()) if isinstance(e, StepRevised)
                  else e for e in events]
    view = fold(events)
    text = view.edits.text() + (f"\n\n{XSS} Python 3 was released in 2008." if where == "text" else "")
    cited = view.edits.cited(text)
    assert cited.supported >= 3
    html = article_view.cited_html(cited)
    assert "<script" not in html and "javascript:" not in html.replace("rat-nolink'>javascript:", "")
    if where == "url":
        assert not re.search(r"href='(?!#rat-source-\d+')", html), "a page that is not http(s) is no link"
    else:
        assert "&lt;script&gt;" in html


def test_progress_says_how_many_sentences_are_cited():
    events = cited_run()
    final = events[-1]
    events[-1] = replace(final, sentences=3, supported=2, marks_removed=1)
    assert run_html.progress_text(fold(events)) == "Done: 3 steps revised. 2 of 3 sentences cited, 1 mark removed."
    assert "cited" not in run_html.progress_text(fold(rat_run())), "runs stored before citations say nothing"


def test_exports_carry_the_marks_numbered_like_the_kept_sources():
    view = fold(cited_run())
    text = view.edits.text([1])  # step 1 undone: its sentence has no source, step 2's is [1]
    md = article_view.export_markdown(view, Edit.of(text, [1]))
    assert f"{STEPS[0]}\n\n{STEPS[1].removesuffix('.')} [1]. [r2]\n\n{STEPS[2].removesuffix('.')} [2]. [r3]" in md
    assert f"1. [Page]({url(2)}) — used in step 2" in md and f"2. [Page]({url(3)}) — used in step 3" in md
    assert article_view.export_name(view, "docx") == "write-about-python-3-abc123.docx"

    import io

    from docx import Document

    doc = Document(io.BytesIO(article_view.export_docx(view, Edit.of(text, [1]))))
    paragraphs = [p.text for p in doc.paragraphs]
    assert paragraphs[0] == "Write about Python 3."
    assert f"{STEPS[1].removesuffix('.')} [1]. [r2]" in paragraphs
    assert any(p.startswith(f"[1] Page — {url(2)}") for p in paragraphs)


def test_a_taken_revision_is_cited_from_the_passages_of_its_step():
    view = fold(cited_run(refused=frozenset({2})))
    kept = view.edits.cited(view.edits.text())
    assert [bool(p.marks) for p in kept.pieces if p.sentence] == [True, False, True], "step 2 was never checked"
    text = view.edits.text([], [2])
    cited = view.edits.cited(text, [], [2])
    assert [m.n for p in cited.pieces for m in p.marks] == [1, 2, 3]
    assert [s.n for s in view.edits.sources([], [2])] == [1, 2, 3]


# -- a reasoning model's thinking -----------------------------------------------------------------
def test_thinking_streams_open_under_its_step_then_folds_with_its_tokens():
    from common.events import LLMCalled, ThinkingDelta

    view = fold(rat_run(n=2)[:3])  # started, draft, step 1 started
    view.apply(StepStarted(i=1, thought="", n=2))
    assert view.apply(ThinkingDelta(role="query", text="Hmm, <b>which</b> words", i=1)) == {runview.STEPS}
    live = run_html.steps_html(view)
    assert "<details class='rat-thinking' open>" in live and "Hmm, &lt;b&gt;which&lt;/b&gt; words" in live
    assert "rat-caret" in live
    view.apply(LLMCalled(role="query", model="m", i=1, completion_tokens=40, thinking="Hmm, <b>which</b> words",
                         thinking_tokens=30))
    done = run_html.steps_html(view)
    assert "<details class='rat-thinking'><summary>Thinking (query · 30 tokens)</summary>" in done
    assert "open>" not in done.split("rat-thinking")[1], "a finished call's thinking is folded"
    assert "<b>which" not in done, "escaped"
    assert "Hmm" not in run_html.draft_html(view), "a step's thinking is not the draft's"


def test_the_drafts_thinking_sits_above_the_draft_and_a_retry_drops_it():
    from common.events import LLMCalled, ThinkingDelta

    view = RunView()
    view.apply(RunStarted(run_id="r", method="rat", task="t"))
    assert view.apply(ThinkingDelta(role="draft", text="First I plan.")) == {runview.DRAFT}
    assert "First I plan." in run_html.draft_html(view)
    view.apply(TokenDelta(role="draft", text="", reset=True))
    assert "First I plan." not in run_html.draft_html(view), "a retried call starts its thinking over"
    view.apply(ThinkingDelta(role="draft", text="Plan again."))
    view.apply(LLMCalled(role="draft", model="m", thinking="Plan again.", thinking_tokens=3))
    view.apply(DraftReady(steps=("A", "B")))
    html = run_html.draft_html(view)
    assert html.index("Thinking (draft · 3 tokens)") < html.index("<ol class='rat-draft'>")
    assert "Plan again." not in run_html.steps_html(view)
    assert fold(view.events).thinking == view.thinking, "stored events give the same thinking (History, replay)"


def test_a_marks_popup_shows_its_passage_as_read_not_its_markdown():
    from core.article.citations import Mark

    mark = Mark(2, "https://a.example/owls", "Owls", "## **How would owls hunt?**\n> They [listen](https://x.example) "
                "closely, __always__.", 0.8)
    shown = article_view.mark_html(mark)
    assert "How would owls hunt?" in shown and "They listen closely, always." in shown
    assert "##" not in shown and "**" not in shown and "__" not in shown and "x.example" not in shown


def test_the_progress_line_counts_the_version_on_screen_not_the_models_text():
    from core.article.citations import Cited, Piece

    view = fold(cited_run())
    assert "0 of 2 sentences cited" not in run_html.progress_text(view, "done")
    shown = Cited((Piece("One sentence with words", ". ", sentence=True),
                   Piece("Another sentence of words", ".", sentence=True)))
    line = run_html.progress_text(view, "done", shown, ("step 2: its revision was undone by the author",))
    assert "0 of 2 sentences cited" in line and "step 2: its revision was undone by the author" in line


def test_why_a_revision_was_refused_or_skipped_names_the_writer_s_controls_not_flags():
    """A refused revision's reason came from core with the command line's flag in it ("raise
    --max-tokens"); a browser user has the Run settings, so the card names the control."""
    cut = StepRevised(i=1, before="b", after="b", guarded="was cut short at the token limit, so its end is "
                      "missing (raise --max-tokens)", rejected="half a")
    skipped = StepRevised(i=1, before="b", after="b", skipped="see --min-keep")
    shown = run_html.revision_html(cut) + run_html.revision_html(skipped)
    assert "--" not in shown.replace("<!--", "")
    assert "raise Max tokens (Run settings)" in shown and "Min keep" in shown


async def test_a_stream_stops_once_a_newer_one_has_its_pages_panel_and_not_another_pages(app):
    """One panel, one run: the one a page asked for last (``RunPanel.shows``). A stream a newer
    one replaced in the same page ends in an error the page does not show (so no settling event
    follows it), and a settling event that comes after all shows nothing; a stream in another page
    goes on. Each stream sets the page's state once, then changes that view in place; the settled
    panel does not set it."""
    import asyncio
    from types import SimpleNamespace

    import gradio as gr

    from ui.writer import RunPanel

    def events(run_id: str, gate: asyncio.Event):
        async def gen():
            yield RunStarted(run_id=run_id, method="rat", task="t")
            await gate.wait()
            yield DraftReady(steps=("a", "b"))
        return gen()

    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    here, there = SimpleNamespace(session_hash="here"), SimpleNamespace(session_hash="there")
    gates = [asyncio.Event() for _ in range(3)]
    views = [RunView() for _ in range(3)]
    first = panel.follow(events("r1", gates[0]), views[0], live=False, page=here)
    other = panel.follow(events("r3", gates[2]), views[2], live=False, page=there)
    assert (await anext(first))[panel.state] is views[0] and panel.state in await anext(other)
    newer = panel.follow(events("r2", gates[1]), views[1], live=False, page=here)
    assert (await anext(newer))[panel.state] is views[1]
    assert panel.state not in await anext(newer)  # RunStarted: the view changed in place
    for gate in gates:
        gate.set()
    with pytest.raises(gr.Error) as stopped:
        [u async for u in first]
    assert stopped.value.visible is False and stopped.value.print_exception is False
    assert [panel.draft in u for u in [u async for u in newer]] == [True]
    assert any(panel.draft in u for u in [u async for u in other])
    assert panel.on_settled(views[0]) == {panel.state: gr.skip()}  # too late: the page shows r2
    settled = panel.on_settled(views[1])
    assert panel.draft in settled and panel.state not in settled
    panel.page_gone(here)
    panel.page_gone(there)
    assert panel._shown == {}


async def test_a_page_joining_a_run_late_shows_what_it_did_so_far_as_one_rendering(app, monkeypatch):
    """Issue 41, item 2: a reload or a late viewer gets the run as it stands in one rendering (at
    ``CaughtUp``), then each event live; before, each of a long run's past events was rendered
    in turn, and a failure long since continued was warned of again."""
    import gradio as gr

    from core.live import CaughtUp, Timed
    from ui.writer import RunPanel

    past = [RunStarted(run_id="r", method="rat", task="t"), DraftReady(steps=tuple(f"s{k}" for k in range(1, 21)))]
    for k in range(1, 21):
        past += [StepStarted(i=k, thought=f"s{k}", n=20), QueryMade(i=k, query=f"q{k}")]
    past.append(Failed(error="the server went away", resumable=True))

    async def joined():
        for e in past:
            yield Timed(e, 1.0)
        yield Timed(CaughtUp(), 2.0)
        yield Timed(StepStarted(i=21, thought="s21", n=21), 3.0)

    warned = []
    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    monkeypatch.setattr(gr, "Warning", lambda *a, **k: warned.append(a))
    updates = [u async for u in panel.follow(joined(), RunView())]
    assert len(updates) == 3, "the empty frame, the run as it stood, the live event"
    assert "s20" in "".join(updates[1][panel.draft]) and "q20" in "".join(updates[1][panel.steps])
    assert warned == [], "a failure of the past is not warned of again"


async def test_events_that_were_waiting_are_shown_in_one_rendering_with_the_last_of_them(app):
    """Issue 41, item 1: under load the batches grow, not the backlog: the events a page finds
    waiting (``Timed.more``) are rendered once, with the last of them; a batch that holds more than
    streamed tokens is shown at once, even when it ends in one."""
    import gradio as gr

    from core.live import CaughtUp, Timed
    from ui.writer import RunPanel

    steps = tuple(f"s{k}" for k in range(1, 6))
    waiting = [StepStarted(i=k, thought=f"s{k}", n=5) for k in range(1, 6)]

    async def behind():
        yield Timed(RunStarted(run_id="r", method="rat", task="t"), 1.0)
        yield Timed(CaughtUp(), 1.0)
        yield Timed(DraftReady(steps=steps), 2.0)
        for k, e in enumerate(waiting):
            yield Timed(e, 3.0 + k, more=k < len(waiting) - 1)
        yield Timed(QueryMade(i=5, query="q5"), 9.0, more=True)
        yield Timed(TokenDelta(role="revise", text="x", i=5), 9.5)

    with gr.Blocks():
        panel = RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    updates = [u async for u in panel.follow(behind(), RunView())]
    assert len(updates) == 5, "the empty frame, the run joined, the draft, the five steps, the query and token"
    assert "s5" in "".join(updates[3][panel.steps]) and "q5" not in "".join(updates[3][panel.steps])
    assert "q5" in "".join(updates[4][panel.steps])


async def test_a_followed_run_sends_the_browser_what_changed_not_the_panel_again(app, monkeypatch):
    """Issue 41, item 1: a stream's outputs go to the browser as Gradio's edits of the last value
    sent (``gradio.utils.diff``, what ``Blocks.handle_streaming_diffs`` sends); the draft and the
    steps are lists of fragments, so a streamed token goes as the text it adds and a card's change
    as that card. Before, each of these frames sent the whole steps panel again."""
    import json

    import gradio as gr
    from gradio.utils import diff
    from gradio_client.utils import apply_diff

    from ui import writer

    monkeypatch.setattr(writer, "TOKEN_INTERVAL", 0.0)  # a frame for every token: the most there can be
    events = []
    for e in rat_run(n=3):
        if isinstance(e, LLMCalled) and e.role == "draft":
            events += [TokenDelta(role="draft", text=w + " ") for w in "\n\n".join(STEPS).split(" ")]  # 12 tokens
        if isinstance(e, LLMCalled) and e.role == "revise":
            events += [TokenDelta(role="revise", text=f"word{k} <&> ", i=e.i) for k in range(20)]
        events.append(e)

    async def stream():
        for e in events:
            yield e

    with gr.Blocks():
        panel = writer.RunPanel(app.runner, app.store, app.clients)
        panel.layout()
    updates = [u async for u in panel.follow(stream(), RunView(), live=False)]
    assert all(panel.steps in u and panel.draft in u for u in updates), "no panel left out: it would go whole next"
    # every token but a call's first (it opens a card's text) and the draft's two that begin a step
    for out, tokens in ((panel.steps, 3 * 19), (panel.draft, 12 - 1 - 2)):
        sent = browser = updates[0][out]
        whole = edited = appended = 0
        for u in updates[1:]:
            edits = diff(sent, u[out])
            browser, sent = apply_diff(browser, edits), u[out]
            assert browser == sent, "the browser's panel is the server's after every frame"
            whole, edited = whole + len(json.dumps(sent)), edited + len(json.dumps(edits))
            if edits and all(op == "append" for op, _, _ in edits):
                appended += 1
                assert len(edits) == 1 and len(edits[0][2]) <= len("word19 &lt;&amp;&gt; "), edits
        assert appended >= tokens, f"{appended} frames sent a token as the text it adds, of {tokens}"
        # (each event that changes a card sends that card: 36 KB of edits for 309 KB of steps panels here)
        assert edited < whole / 5, f"{edited:,} bytes of edits for {whole:,} bytes of panels"
    assert "".join(updates[-1][panel.steps]) == run_html.steps_html(fold(events))
