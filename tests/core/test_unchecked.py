"""Which steps an article lists as "not checked against a source" (core.article.sources.SourceBook): a
step whose own text was never revised against retrieved text, and only that. A round that left
the whole text as it stood (ITRG with nothing new, AAG's refused edit) is not one: a real
itrg-refine run listed 4 of its 5 rounds although its text was written from sources in round 1."""

from __future__ import annotations

from common.events import DraftReady, Final, StepRevised
from core.article.sources import SourceBook

URL = "https://example.org/a"
REFUSED = "talks about the task instead of revising the text"


def unchecked(*events) -> tuple[str, ...]:
    book = SourceBook.from_events(events)
    return book.sourced(Final(text=events[-1].article)).unchecked


def test_rounds_that_keep_the_whole_text_keep_its_checks():
    text = "Python 3.6 came out in December 2016."
    assert unchecked(
        StepRevised(i=1, before="", after=text, article=text, sources=(URL,)),
        StepRevised(i=2, before=text, after=text, article=text, guarded=REFUSED),
        StepRevised(i=3, before=text, after=text, article=text, skipped="no newly retrieved documents"),
    ) == ()


def test_a_whole_text_never_checked_stays_listed_until_a_round_rewrites_it_against_a_source():
    text, better = "Python is old.", "Python dates from 1991."
    first = StepRevised(i=1, before="", after=text, article=text, skipped="nothing could be retrieved")
    kept = StepRevised(i=2, before=text, after=text, article=text, guarded=REFUSED)
    assert unchecked(first, kept) == ("step 1: nothing could be retrieved",)
    rewritten = StepRevised(i=3, before=text, after=better, article=better, sources=(URL,))
    assert unchecked(first, kept, rewritten) == ()


def test_a_step_that_adds_text_it_did_not_check_is_listed():
    # rat-step: step 2's own paragraph was kept as drafted
    one, two = "Python 3.6 came out in 2016.", "Mercurial moved to Python 3."
    assert unchecked(
        DraftReady(steps=(one, two)),
        StepRevised(i=1, before=one, after=one + " [1]", article=one + " [1]", sources=(URL,)),
        StepRevised(i=2, before=two, after=two, article=f"{one} [1]\n\n{two}", guarded=REFUSED),
    ) == (f"step 2: the model's revision was refused (it {REFUSED}); kept as it stood",)
    # rat: the answer so far plus step 2 was refused, so step 2's text is new and unchecked, and
    # a later check of the whole answer against step 3's search does not count for step 2
    so_far = f"{one}\n\n{two}"
    three = f"{so_far}\n\nA third step."
    assert [line.split(":")[0] for line in unchecked(
        StepRevised(i=1, before=one, after=one, article=one, sources=(URL,)),
        StepRevised(i=2, before=so_far, after=so_far, article=so_far, guarded=REFUSED),
        StepRevised(i=3, before=three, after=three + " More.", article=three + " More.", sources=(URL,)),
    )] == ["step 2"]


def test_a_new_draft_starts_over():
    text = "Python 3.6 came out in 2016."
    assert unchecked(
        StepRevised(i=1, before="", after=text, article=text, sources=(URL,)),
        DraftReady(steps=(text,)),
        StepRevised(i=1, before=text, after=text, article=text, skipped="no page could be read"),
    ) == ("step 1: no page could be read",)


def test_the_export_of_the_ui_lists_the_same_steps():
    from ui.runview import fold

    text = "Python 3.6 came out in December 2016."
    events = [StepRevised(i=1, before="", after=text, article=text, sources=(URL,)),
              StepRevised(i=2, before=text, after=text, article=text, guarded=REFUSED),
              StepRevised(i=3, before=text, after=text + " [1]", article=text + " [1]", sources=(URL,)),
              StepRevised(i=4, before=text + " [1]", after="", article=text + " [1] More.", skipped="cut")]
    assert fold(events).edits.unchecked() == unchecked(*events) == ("step 4: cut",)


def test_the_run_line_counts_steps_in_words():
    from ui.cli.progress import progress_line

    assert progress_line(Final(text="x", unchecked=("step 2: y",))).endswith(", 1 step not checked against a source")
    assert ", 2 steps not checked" in progress_line(Final(text="x", unchecked=("step 1: y", "step 2: y")))
