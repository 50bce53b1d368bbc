"""Drafts as real models write them become steps that can each be searched, and no word of the
draft is lost: blank lines first, else Markdown structure, else single lines; fragments too short
to search merged; over --max-steps, neighbours merged, never dropped."""

from __future__ import annotations

import re

import pytest

from common.events import DraftReady, Note
from common.types import Task
from core.methods.helpers import write_draft
from core.text.prompts import draft_steps, merge_steps, split_steps
from tests.fakes.method_scripts import method_context
from tests.fakes.model import FakeModel

# Shapes seen from SmolLM2-135M and from larger models (issue 9).
HEADINGS = ("### Jin Yong\n### Early life\nBorn in 1924 in Haining, Zhejiang, to a scholarly family.\n"
            "### Career\nHe co-founded Ming Pao and wrote wuxia serials for it.\n"
            "### Legacy\nHis novels are read across the Chinese-speaking world.")
NUMBERED = ("1. Jin Yong was born in 1924 in Haining.\n2. He worked as a journalist in Hong Kong.\n"
            "3. He wrote fifteen wuxia novels between 1955 and 1972.\n4. He revised them all later in life.")
BULLETS = ("- Python 3.0 came out in December 2008.\n* It broke compatibility with Python 2 on purpose.\n"
           "+ Tools like 2to3 helped projects move over.")
BOLD_STEPS = ("**Step 1:** Punch a tree to gather four logs of wood.\n**Step 2:** Turn the logs into planks "
              "in the inventory grid.\n**Step 3:** Put four planks in a square to craft the table.")
LITERAL = ("First the war began in 1861 at Fort Sumter./n/nThen Gettysburg turned it in 1863./n/n"
           "It ended at Appomattox in April 1865.")
ONE_PARAGRAPH = "Jin Yong was a Chinese novelist who wrote wuxia fiction and co-founded a newspaper."
LABELS_ONLY = "Step 1:\nStep 2:\nThe answer is that owls hunt at night using their hearing."


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


@pytest.mark.parametrize("draft, n", [
    (HEADINGS, 3), (NUMBERED, 4), (BULLETS, 3), (BOLD_STEPS, 3), (LITERAL, 3), (ONE_PARAGRAPH, 1), (LABELS_ONLY, 1),
])
def test_real_shapes_split_into_searchable_steps_and_keep_every_word(draft, n):
    steps = draft_steps(draft)
    assert len(steps) == n, steps
    assert words("\n".join(steps)) == words(draft.replace("/n/n", "\n")), "no word lost, none reordered"
    if n > 1:
        assert all(len(re.findall(r"[^\W\d_]{2,}", s)) >= 4 for s in steps), "no step too short to search"


def test_a_heading_keeps_the_text_under_it():
    steps = draft_steps(HEADINGS)
    assert steps[1] == "### Career\nHe co-founded Ming Pao and wrote wuxia serials for it."
    assert steps[0].startswith("### Jin Yong\n### Early life\nBorn in 1924"), "a lone heading joins the next step"


def test_a_draft_with_blank_lines_splits_as_before():
    draft = "Para one has some words.\n\nPara two has some words.\n\nPara three has words too."
    assert draft_steps(draft) == split_steps(draft)
    short = "First, gather wood.\n\nThen craft planks."
    assert draft_steps(short) == ["First, gather wood.", "Then craft planks."], "a short sentence is a step"
    assert draft_steps("## Wood\n\nThen craft planks.") == ["## Wood\nThen craft planks."], "a lone heading is not"


def test_merging_to_fewer_steps_keeps_every_step_in_order():
    steps = [f"Step number {k} has its own words." for k in range(1, 8)]
    merged = merge_steps(steps, 3)
    assert len(merged) == 3 and [len(split_steps(m)) for m in merged] == [3, 2, 2]
    assert split_steps("\n\n".join(merged)) == steps
    assert merge_steps(steps, 10) == steps


async def test_a_draft_over_max_steps_is_merged_not_cut():
    draft = "\n\n".join(f"Paragraph {k} of the draft says something long enough." for k in range(1, 6))
    ctx = method_context(FakeModel().queue(draft), max_steps=2)
    events = [e async for e in write_draft(ctx, Task("Describe owls"))]
    (ready,) = [e for e in events if isinstance(e, DraftReady)]
    assert len(ready.steps) == 2
    assert words("\n".join(ready.steps)) == words(draft)
    (note,) = [e for e in events if isinstance(e, Note)]
    assert note.level == "warning" and "merged into 2" in note.text and "none is lost" in note.text
