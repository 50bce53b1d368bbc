"""The step cards as the work in view needs them (issue 23.1): the active card open, finished
ones folded to one line that still says what happened, a ``rat`` card showing only what its
revision changed, the task carried for presentation mode, and the step-actions hook."""

from __future__ import annotations

import re

from common.events import QueryMade, StepRevised
from tests.ui.test_render import STEPS, rat_run
from ui import presenting, run_html
from ui.runview import fold


def cards(html: str) -> dict[int, str]:
    """Each step card's HTML, by step."""
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"<details class='rat-card[^']*' id='rat-step-(\d+)'.*?"
                                                             r"</div></details>", html, re.S)}


def test_finished_cards_fold_to_one_line_and_the_active_one_stays_open():
    events = rat_run(n=3, query="python 3 release")
    cut = next(k for k, e in enumerate(events) if isinstance(e, QueryMade) and e.i == 3)
    shown = cards(run_html.steps_html(fold(events[:cut + 1])))
    assert sorted(shown) == [1, 2, 3]
    assert " open>" in shown[3].split("<summary")[0] and "rat-current" in shown[3], "the active step is open"
    for i in (1, 2):
        head = shown[i].split("<summary")[0]
        assert " open" not in head and "rat-folded" in head, f"step {i} is done: folded"
        line = re.search(r"<summary class='rat-card-head'>(.*?)</summary>", shown[i]).group(1)
        assert f"Step {i} of 3" in line and ">revised<" in line
        assert "1 source" in line and "“python 3 release”" in line and re.search(r"\+\d+ / −\d+ words", line)
    assert "rat-card-line" not in shown[3], "the active card has no summary line: its body is open"


def test_a_finished_run_folds_every_card_and_an_unfinished_card_stays_open():
    done = cards(run_html.steps_html(fold(rat_run(n=2))))
    assert all("rat-folded" in c.split("<summary")[0] for c in done.values())
    events = rat_run(n=2)
    cut = next(k for k, e in enumerate(events) if isinstance(e, StepRevised) and e.i == 2)
    view = fold(events[:cut])
    view.current = 0  # e.g. a run that stopped while step 2 was being revised
    assert " open>" in cards(run_html.steps_html(view))[2].split("<summary")[0], "not finished: not folded"


def test_a_cumulative_revision_shows_what_it_changed_not_the_whole_answer_again():
    long = [" ".join(f"w{k}s{i}" for k in range(60)) + "." for i in range(1, 4)]
    events = rat_run(n=3)
    article, edited = "", []
    for e in events:  # the same run with steps long enough to leave out unchanged text
        if isinstance(e, StepRevised):
            step = long[e.i - 1]
            before = "\n\n".join(x for x in (article, step) if x)
            article = before + f" [r{e.i}]"
            e = StepRevised(i=e.i, before=before, after=article, sources=e.sources, article=article)
        edited.append(e)
    edited = [type(e)(steps=tuple(long)) if type(e).__name__ == "DraftReady" else e for e in edited]
    view = fold(edited)
    assert [run_html.rewrites_answer(view, i) for i in (1, 2, 3)] == [False, True, True]
    third = cards(run_html.steps_html(view))[3]
    assert "[r3]" in third and "rat-elided" in third
    assert "w5s1" not in third, "step 1's text, unchanged by step 3, is not repeated"
    paragraph = fold(rat_run("rat-step", n=3))
    assert not any(run_html.rewrites_answer(paragraph, i) for i in (1, 2, 3))
    assert STEPS[2] in cards(run_html.steps_html(paragraph))[3], "a short step's text is shown whole"


def test_actions_go_in_each_cards_header_line_even_folded():
    html = run_html.steps_html(fold(rat_run(n=2)), actions=lambda i: f"<button class='act'>redo {i}</button>")
    for i, card in cards(html).items():
        head = re.search(r"<summary class='rat-card-head'>(.*?)</summary>", card).group(1)
        assert f"<span class='rat-actions'><button class='act'>redo {i}</button></span>" in head
    assert "rat-actions" not in run_html.steps_html(fold(rat_run(n=2))), "no actions without the hook"


def test_the_task_rides_along_escaped_and_unseen():
    view = fold(rat_run(n=1))
    view.task = "Python <3> & 'quotes'"
    html = run_html.draft_html(view)
    assert "<span class='rat-task-data' data-task='Python &lt;3&gt; &amp; &#x27;quotes&#x27;' hidden></span>" in html


def test_replay_marks_step_through_the_draft_and_each_revision():
    events = rat_run(n=3)
    marks = presenting.marks(events)
    ends = [k + 1 for k, e in enumerate(events) if type(e).__name__ in ("DraftReady", "StepRevised", "Final")]
    assert marks == sorted({0, *ends, len(events)})
    assert presenting.step(marks, 0, +1) == marks[1]
    assert presenting.step(marks, marks[2] + 1, -1) == marks[2], "back from mid-step: to the step's start"
    assert presenting.step(marks, marks[2], -1) == marks[1]
    assert presenting.step(marks, len(events), +1) == len(events), "no further than the end"
    assert presenting.step(marks, 0, -1) == 0
