"""rat-step's read-only context is bounded (issue 12, item 1): the previous revised step in full,
an outline of the earlier ones, within --param rat.step_context_tokens; so each step's prompts
stay the same size however long the article grows, and the prompts grow linearly in all."""

from __future__ import annotations

from common.types import Task
from core.methods.rat import OUTLINE_WORDS, step_context
from core.text.tokens import count_tokens
from tests.fakes.method_scripts import method_context, run_method
from tests.fakes.model import FakeModel
from tests.fakes.scripts import RatAuthor, draft_steps, sections

TASK = Task("Describe the life of Jin Yong.")


def paragraph(n: int, words: int = 40) -> str:
    return f"Paragraph {n} says " + " ".join(f"word{n}x{k}" for k in range(words)) + "."


def test_the_previous_step_in_full_and_an_outline_of_the_earlier_ones():
    revised = [paragraph(n) for n in range(1, 6)]
    context = step_context(revised, budget=400)
    assert revised[-1] in context, "the step just before, in full"
    for n, text in enumerate(revised[:-1], start=1):
        first = " ".join(text.split()[:OUTLINE_WORDS])
        assert f"{n}. {first} ..." in context, "each earlier step as an outline line, in order"
        assert text not in context
    assert context.index("1. Paragraph 1") < context.index("4. Paragraph 4") < context.index(revised[-1])
    assert step_context([], 400) == "" and step_context(revised[:1], 400) == revised[0]


def test_the_context_stays_within_its_budget_however_long_the_article():
    for steps in (5, 40, 400):
        revised = [paragraph(n) for n in range(1, steps + 1)]
        context = step_context(revised, budget=200)
        assert count_tokens(context) <= 200 + 40, (steps, count_tokens(context))  # + the two bracketed labels
        assert revised[-1] in context
        if steps > 20:
            assert "left out" in context and f"{steps - 1}. Paragraph {steps - 1}" in context, "newest kept"
    huge = paragraph(1) + "\n\n" + paragraph(2, words=2000)
    assert count_tokens(step_context([huge], budget=100)) <= 110, "a step longer than the budget is cut"


async def test_rat_step_prompts_stay_flat_as_the_article_grows(web):
    """40 steps: each step's query and revision prompts hold at most the budget of context (plus
    the step itself), where RAT's B.2 would hold all 39 revised steps."""
    author = RatAuthor(draft_steps(40))
    ctx = method_context(FakeModel(author), web, max_steps=40, params={"rat.step_context_tokens": "150"})
    events = await run_method("rat-step", TASK, ctx)
    queries, revisions = author.of_kind("query"), author.of_kind("revise-step")
    assert len(queries) == len(revisions) == 40
    context = [count_tokens(sections(p)["Answer so far (already revised, read-only)"]) for p in revisions]
    content = [count_tokens(sections(p)["Content"]) for p in queries]
    assert max(context) <= 150 + 40 and max(content) <= 150 + 40 + max(count_tokens(s) for s in author.steps), (
        context, content)
    assert context[39] <= context[19] + 20, "once the budget is reached, the context stops growing"
    assert author.steps[38] + " [revised]" in sections(revisions[39])["Answer so far (already revised, read-only)"]
    assert author.steps[0] + " [revised]" not in revisions[39], "the first step is only in the outline"
    assert events[-1].text == "\n\n".join(s + " [revised]" for s in author.steps), "the article is still whole"
