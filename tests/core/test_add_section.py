"""Add a section (issue 39, item 1): a new step from the author's one line, with its own query,
pages and revision, placed where the author says. Stored as a StepRedone "add" at its position;
every event stored before it reads with the steps from there on one place down
(``common.events.renumbered``), in the method's state, the article's revisions, the source book
and the Writer's view alike."""

from __future__ import annotations

import json

import pytest

from common.errors import TaskError
from common.events import (
    ADD,
    DraftReady,
    Final,
    Note,
    PassagesChosen,
    QueryMade,
    SearchDone,
    StepRedone,
    StepRevised,
    StepStarted,
    renumbered,
)
from core.article.edits import CUMULATIVE, PARAGRAPH, Revisions
from core.authoring import Authoring, Edit
from core.clients import Clients
from tests.core.test_step_actions import after, finished
from tests.fakes.model import FakeModel
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, of
from ui import runview

pytestmark = pytest.mark.both_databases

LINE = "The packaging story: wheels and pip"


@pytest.fixture
def model(app, monkeypatch):
    """The in-process fake model as every run's LLM, answering as a RatAuthor of 4 steps."""
    fake = FakeModel(RatAuthor(draft_steps(4)))
    monkeypatch.setattr(Clients, "llm", lambda self, system="": fake)
    return fake


def test_renumbered_moves_the_later_steps_of_the_events_before_an_add_only():
    events = [DraftReady(steps=("a", "b", "c")), StepStarted(i=2, thought="b", n=3), QueryMade(i=2, query="q2"),
              StepRevised(i=3, before="c", after="C", article="C"), Note(i=0, text="run note"),
              Note(i=1, text="step 1"), StepRedone(i=2, action=ADD, instruction="new"),
              StepStarted(i=2, thought="new", n=4), QueryMade(i=2, query="qn")]
    out = renumbered(events)
    assert out[0].steps == ("a", "new", "b", "c")
    assert (out[1].i, out[1].n, out[2].i, out[3].i) == (3, 4, 3, 4)
    assert (out[4].i, out[5].i) == (0, 1), "no step, and an earlier step, keep their numbers"
    assert out[6:] == events[6:], "what came after the add is numbered as it was stored"
    assert renumbered(events[:6]) == events[:6], "nothing moves without an add"
    two = renumbered([*events, StepRedone(i=1, action=ADD, instruction="first")])
    assert two[0].steps == ("first", "a", "new", "b", "c") and two[8].i == 3 and two[2].i == 4


@pytest.mark.parametrize("method", ["rat-step", "rat"])
async def test_add_after_a_step_writes_a_new_searched_and_revised_section_there(app, model, method):
    run_id = await finished(app, method)
    before = app.store.events(run_id)
    old = Revisions.from_events(before)
    await collect(app.runner.redo(run_id, 3, action=ADD, instruction=f"  {LINE} "))  # after step 2
    stored = app.store.events(run_id)
    marker = of(stored, StepRedone)[-1]
    assert (marker.i, marker.action, marker.instruction) == (3, ADD, LINE)
    redone = after(stored)
    assert [e.i for e in of(redone, QueryMade)] == [3] and of(redone, SearchDone), "its own query and pages"
    assert [e.i for e in of(redone, PassagesChosen)] == [3]
    assert of(redone, StepStarted)[0].n == 5 and of(redone, StepStarted)[0].thought == LINE
    assert any(LINE in n.text for n in of(redone, Note) if n.i == 3)
    assert LINE in model.prompts("revise")[-1 if method == "rat-step" else -3]
    final = redone[-1]
    assert isinstance(final, Final)
    paragraphs = final.text.split("\n\n")
    assert len(paragraphs) == 5 and paragraphs[2].startswith(LINE)
    revs = Revisions.from_events(stored)
    assert revs.mode == (PARAGRAPH if method == "rat-step" else CUMULATIVE)
    assert revs.steps == (*draft_steps(4)[:2], LINE, *draft_steps(4)[2:])
    assert revs.text() == final.text
    if method == "rat-step":  # the others keep their revisions, numbered where they now are
        assert [e.i for e in of(redone, StepRevised)] == [3]
        assert paragraphs[:2] + paragraphs[3:] == old.text().split("\n\n")
        assert revs.revised[4].after == old.revised[3].after and revs.revised[5].after == old.revised[4].after
        assert revs.text(undone=[3]).split("\n\n")[2] == LINE, "undoing it leaves the author's line"
    else:  # each revision rewrote the answer so far: the later ones are revised again on top of it
        assert [e.i for e in of(redone, StepRevised)] == [3, 4, 5]
    sources = {s.url: s.steps for s in final.sources}
    assert any(3 in steps for steps in sources.values()), "the new section has its own sources"
    assert sources == {s.url: s.steps for s in revs.sources()}
    view = runview.fold(stored)
    assert [c.i for _, c in sorted(view.cards.items())] == [1, 2, 3, 4, 5] and view.n == 5
    assert view.cards[3].thought == LINE and [e.action for e in view.cards[3].redone] == [ADD]
    assert view.steps == list(revs.steps) and view.final == final
    assert view.edits.text() == final.text
    version = Authoring(app.store).redone(run_id)
    assert (version.action, version.instruction, version.text) == (ADD, LINE, final.text)


async def test_a_section_added_first_and_last(app, model):
    run_id = await finished(app, "rat-step")
    await collect(app.runner.redo(run_id, 5, action=ADD, instruction="A closing word"))
    await collect(app.runner.redo(run_id, 1, action=ADD, instruction="An opening word"))
    revs = Revisions.from_events(app.store.events(run_id))
    paragraphs = revs.text().split("\n\n")
    assert len(paragraphs) == 6 and paragraphs[0].startswith("An opening word")
    assert paragraphs[-1].startswith("A closing word")
    assert revs.steps[0] == "An opening word" and revs.steps[-1] == "A closing word"


async def test_the_authors_undone_steps_move_with_an_added_section_and_edits_stay(app, model):
    authoring = Authoring(app.store)
    run_id = await finished(app, "rat-step")
    undone = authoring.choose(run_id, [3])
    assert undone.undone == (3,)
    edited = undone.text.replace(draft_steps(4)[0], draft_steps(4)[0] + " My own words.")
    authoring.edit(run_id, Edit.of(edited, [3], []))
    await collect(app.runner.redo(run_id, 2, action=ADD, instruction=LINE))
    version = authoring.redone(run_id)
    assert version.undone == (4,), "the undone step is the same step, now number 4"
    paragraphs = version.text.split("\n\n")
    assert "My own words." in paragraphs[0] and paragraphs[1].startswith(LINE)
    assert paragraphs[3] == draft_steps(4)[2], "step 4 (was 3) still reads as drafted"


async def test_a_version_made_before_a_section_was_added_names_its_steps_as_the_run_numbers_them_now(app, model):
    authoring = Authoring(app.store)
    run_id = await finished(app, "rat-step")
    model_text = Revisions.from_events(app.store.events(run_id)).text()
    first = authoring.choose(run_id, [3])  # version 1: step 3's revision undone
    await collect(app.runner.redo(run_id, 2, action=ADD, instruction=LINE))  # a new step 2: step 3 is now 4
    authoring.redone(run_id)
    authoring.choose(run_id, [])  # version 3: every revision kept
    old = authoring.shown(run_id, 1)
    assert (old.text, old.undone) == (first.text, (4,)), "the same step, ticked as the boxes number it now"
    assert authoring.versions.get(run_id, 1).undone == (4,)
    assert [v.undone for v in authoring.versions.list(run_id)] == [(4,), (4,), ()]
    restored = authoring.restore(run_id, 1)
    assert (restored.text, restored.undone) == (first.text, (4,))
    redone = authoring.choose(run_id, [])  # the restored article without the added section, step 4 revised again
    assert redone.text == model_text and redone.undone == ()
    authoring.choose(run_id, [4])
    await collect(app.runner.redo(run_id, 1, action=ADD, instruction="An opening word"))
    assert [v.undone for v in authoring.versions.list(run_id)] == [(5,), (5,), (), (5,), (), (5,)], \
        "a second add moves them again"


async def test_a_version_stored_before_versions_kept_their_numbering_is_placed_by_its_time(app, model):
    authoring = Authoring(app.store)
    run_id = await finished(app, "rat-step")
    authoring.choose(run_id, [3])
    await collect(app.runner.redo(run_id, 2, action=ADD, instruction=LINE))
    authoring.redone(run_id)
    # as a database written before m026 holds them: no steps_added (a new table lets the column be null)
    app.store.db.execute("create temporary table legacy as select * from versions")
    rows = app.store.db.execute("select n, undone, steps_added from legacy order by n").fetchall()
    assert [(n, json.loads(u), added) for n, u, added in rows] == [(1, [3], 0), (2, [4], 1)]
    from data import versions as versions_module
    adds = versions_module._adds(app.store.db, run_id)
    read = [versions_module._row((*r[:-1], None), adds) for r in app.store.db.execute(
        f"select {versions_module._COLUMNS} from versions where run_id = ? order by n", [run_id]).fetchall()]
    assert [v.undone for v in read] == [(4,), (4,)]


@pytest.mark.parametrize("asked, problem", [
    ({"i": 7, "instruction": LINE}, "after step 0 to 4"),
    ({"i": 0, "instruction": LINE}, "after step 0 to 4"),
    ({"i": 2, "instruction": "  "}, "new section should cover"),
    ({"i": 2, "instruction": "x" * 1001}, "shorten it"),
])
async def test_a_bad_add_is_refused_before_anything_is_stored(app, model, asked, problem):
    run_id = await finished(app, "rat-step")
    count = len(app.store.events(run_id))
    with pytest.raises(TaskError, match=problem):
        await collect(app.runner.redo(run_id, action=ADD, **asked))
    assert len(app.store.events(run_id)) == count
