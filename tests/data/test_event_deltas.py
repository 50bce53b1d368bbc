"""Events store deltas (issue 12, item 2): a StepRevised's ``article`` and ``before`` are left out
of the stored payload when they follow from the run's earlier events, and rebuilt when read, so
a run's stored events grow with its text, not with the text times its steps. What is read back
is exactly what was appended, across a new Store on the same file (resume in another process)."""

from __future__ import annotations

import json

from common.events import DraftReady, Final, RunStarted, StepRevised, StepStarted
from data.store import Store


def join(*texts: str) -> str:
    return "\n\n".join(t.strip() for t in texts if t.strip())


def rat_step_events(steps: list[str]) -> list:
    """What rat-step appends: each revision rewrites its step; the article grows by it."""
    events, article = [RunStarted(run_id="r", method="rat-step", task="t"), DraftReady(steps=tuple(steps))], ""
    for i, step in enumerate(steps, start=1):
        after = step + " (revised)"
        article = join(article, after)
        events += [StepStarted(i=i, thought=step, n=len(steps)),
                   StepRevised(i=i, before=step, after=after, sources=("http://a/",), article=article)]
    return [*events, Final(text=article)]


def rat_events(steps: list[str]) -> list:
    """What rat appends: each revision rewrites the answer so far (before = article + step i)."""
    events, article = [RunStarted(run_id="r", method="rat", task="t"), DraftReady(steps=tuple(steps))], ""
    for i, step in enumerate(steps, start=1):
        before = join(article, step)
        article = before.replace("Step", "Revised step")
        events.append(StepRevised(i=i, before=before, after=article, sources=("http://a/",), article=article))
    return [*events, Final(text=article)]


def store_all(store: Store, run_id: str, events: list, start: int = 1) -> None:
    for seq, event in enumerate(events, start=start):
        store.append_event(run_id, seq, event)


def stored_bytes(store: Store, run_id: str, type_name: str = "StepRevised") -> int:
    return sum(len(p) for (p,) in store.db.execute(
        "select payload from events where run_id = ? and type = ?", [run_id, type_name]).fetchall())


def a_run(store: Store, method: str) -> str:
    return store.create_run(method, store.add_task("t", "writing", ""), {})


def steps_of(n: int) -> list[str]:
    return [f"Step {k} says something of its own about the subject, in a sentence or two." for k in range(1, n + 1)]


def test_rat_step_stores_no_article_and_reads_back_the_same_events(tmp_path):
    store = Store(tmp_path / "r.db")
    size = {}
    for n in (10, 40):
        run_id = a_run(store, "rat-step")
        events = rat_step_events(steps_of(n))
        store_all(store, run_id, events)
        assert store.events(run_id) == events
        size[n] = stored_bytes(store, run_id)
        assert size[n] < 3 * len(events[-1].text) + 250 * n, "before and after of each step, and field names"
        payloads = [json.loads(p) for (p,) in store.db.execute(
            "select payload from events where run_id = ? and type = 'StepRevised'", [run_id])]
        assert all(p["article"] is None for p in payloads)
        assert [p["article_from"] for p in payloads[1:]] == ["appended"] * (n - 1), "step 1's article is its after"
    assert size[40] < 5 * size[10], f"4x the steps, about 4x the bytes (the whole article each step: ~16x): {size}"


def test_rat_stores_its_before_as_a_delta(tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = a_run(store, "rat")
    events = rat_events(steps_of(20))
    store_all(store, run_id, events)
    assert store.events(run_id) == events
    payloads = [json.loads(p) for (p,) in store.db.execute(
        "select payload from events where run_id = ? and type = 'StepRevised'", [run_id])]
    assert all(p["before"] is None and p["article"] is None for p in payloads), "only after, the model's output"


def test_a_new_store_on_the_file_goes_on_from_the_stored_events(tmp_path):
    events = rat_step_events(steps_of(6))
    first = Store(tmp_path / "r.db")
    run_id = a_run(first, "rat-step")
    store_all(first, run_id, events[:8])  # RunStarted, DraftReady, steps 1-3
    first.close()
    second = Store(tmp_path / "r.db")  # another process resumes it
    store_all(second, run_id, events[8:], start=9)
    assert second.events(run_id) == events
    payloads = [json.loads(p) for (p,) in second.db.execute(
        "select payload from events where run_id = ? and type = 'StepRevised' order by seq", [run_id])]
    assert [p["article_from"] for p in payloads] == ["after"] + ["appended"] * 5, "the new store compacts as the first"


def test_what_does_not_follow_is_stored_whole(tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = a_run(store, "rat-step")
    odd = [RunStarted(run_id="r", method="rat-step", task="t"), DraftReady(steps=("One step.", "Two step.")),
           StepRevised(i=1, before="One step.", after="One!", article="Something else entirely."),
           StepRevised(i=2, before="Not the draft's step.", after="Two!", article="Something else entirely.\n\nTwo!"),
           DraftReady(steps=("An edited draft.",)),  # an author's edit starts the trail over
           StepRevised(i=1, before="An edited draft.", after="Edited!", article="Edited!")]
    store_all(store, run_id, odd)
    assert store.events(run_id) == odd
    payloads = [json.loads(p) for (p,) in store.db.execute(
        "select payload from events where run_id = ? and type = 'StepRevised' order by seq", [run_id])]
    assert payloads[0]["article"] == "Something else entirely." and payloads[1]["article"] is None
    assert payloads[2]["article_from"] == "after"
