"""A run's token budget (--budget-tokens, the Writer's Token budget): the run stops before the
model call that would pass it, with status "budget" and exit code 5, and resumes with a larger
one; the progress lines say spent / budget; --prices says what a run costs. End to end on the
stand-ins (the fake model server over HTTP, the local web's SearXNG, a real SQLite file)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from common.errors import BudgetExceeded, ConfigError
from common.events import Failed, LLMCalled, RunStarted
from common.types import RunStatus, Task
from core.budget import ANSWER_ALLOWANCE, TokenBudget, dollars, read_prices, run_cost, upper_bound
from data.store import Store
from tests.fakes.scripts import RatAuthor, draft_steps
from tests.helpers import collect, of
from ui.cli.progress import progress_line, tokens_line
from ui.cli.runs import EXIT_BUDGET
from ui.run_html import progress_html
from ui.runview import fold

TASK = "Write a short history of Python 3 and its ecosystem."
BUDGET = 2500


@pytest.fixture
def env(tmp_path, llm, shared_web) -> dict[str, str]:
    return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_SEARCH": "searxng", "RAT_STUDIO_SEARXNG_URL": shared_web.searxng_url,
            "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1", "RAT_STUDIO_DB": str(tmp_path / "budget.db")}


def spent(app, run_id: str) -> int:
    run = app.store.get_run(run_id)
    return run.prompt_tokens + run.completion_tokens


def with_budget(app, budget: int | None):
    return replace(app.settings, llm=replace(app.settings.llm, budget_tokens=budget))


# -- the estimate ---------------------------------------------------------------------------------
def test_a_call_is_refused_when_its_estimate_would_pass_the_budget():
    budget = TokenBudget(1000, spent=400)
    budget.check("x" * 400, role="query", max_tokens=100)  # 100 + 100 more: 600, within
    with pytest.raises(BudgetExceeded) as refused:
        budget.check("x" * 400, role="draft", max_tokens=None)  # 100 + the allowance: 1,012
    assert (refused.value.spent, refused.value.budget, refused.value.need) == (400, 1000, 100 + ANSWER_ALLOWANCE)
    assert "a larger --budget-tokens, e.g. 2000" in str(refused.value), "the message names the flag and a larger budget"


def test_a_role_whose_answers_ran_long_is_counted_at_its_longest():
    budget = TokenBudget(10_000)
    assert budget.estimate("", role="revise", max_tokens=2000) == (0, ANSWER_ALLOWANCE)
    budget.spend("revise", 300, 900)
    assert budget.spent == 1200
    assert budget.estimate("", role="revise", max_tokens=2000) == (0, 900)
    assert budget.estimate("", role="revise", max_tokens=600) == (0, 600), "never more than the call's cap"
    assert budget.estimate("", role="query", max_tokens=64) == (0, 64)


# -- a run ----------------------------------------------------------------------------------------
def test_a_rat_run_stops_within_its_budget_says_budget_and_resumes_with_a_larger_one(cli, env, llm):
    llm.reply(RatAuthor(draft_steps(5)))
    code, out, err = cli("run", TASK, "--method", "rat", "--budget-tokens", str(BUDGET), env=env)
    assert code == EXIT_BUDGET, err
    run_id = re.search(r"run id: ([0-9a-f]{12})", err).group(1)
    store = Store(env["RAT_STUDIO_DB"])
    run = store.get_run(run_id)
    assert run.status == RunStatus.BUDGET
    used = run.prompt_tokens + run.completion_tokens
    assert 0 < used <= BUDGET * 1.1, used
    assert run.steps_done < 5, "the budget stopped the run before its end"
    failed = of(store.events(run_id), Failed)[-1]
    assert failed.resumable and failed.error_type == "BudgetExceeded" and "--budget-tokens" in failed.error
    line = re.search(r"budget: spent ([\d,]+) of 2,500 tokens; continue with: python app.py resume "
                     rf"{run_id} --budget-tokens (\d+)", err)
    assert line and int(line.group(1).replace(",", "")) == used, err
    assert re.search(r"^  [\d,]+ / 2,500 tokens$", err, flags=re.M), "the progress line says spent / budget"

    code, out, err = cli("resume", run_id, env=env)  # the run's own budget is kept
    assert code == EXIT_BUDGET, err
    assert store.get_run(run_id).settings["budget_tokens"] == BUDGET

    larger = int(line.group(2))
    code, out, err = cli("resume", run_id, "--budget-tokens", str(larger), env=env)
    run = store.get_run(run_id)
    assert run.settings["budget_tokens"] == larger, "the larger budget is the run's own from now on"
    assert run.prompt_tokens + run.completion_tokens <= larger * 1.1 and run.steps_done > 0, err
    assert f"/ {larger:,} tokens" in err

    code, out, err = cli("resume", run_id, "--budget-tokens", "100000", env=env)
    assert code == 0, err
    run = store.get_run(run_id)
    assert run.status == RunStatus.DONE and run.steps_done == 5 and "[revised]" in out
    store.close()


async def test_without_a_budget_the_same_run_spends_more_than_the_budget(app, llm):
    llm.reply(RatAuthor(draft_steps(5)))
    events = await collect(app.runner.start("rat", Task(TASK)))
    assert app.store.get_run(events[0].run_id).status == RunStatus.DONE
    assert spent(app, events[0].run_id) > BUDGET * 1.1, "else the budget test above cannot fail"
    assert events[0].budget_tokens is None


async def test_a_run_of_the_writer_stores_its_budget_and_its_progress_line_shows_it(app, llm):
    llm.reply(RatAuthor(draft_steps(5)))
    events = await collect(app.runner.start("rat-step", Task(TASK), settings=with_budget(app, BUDGET)))
    run = app.store.get_run(events[0].run_id)
    assert run.status == RunStatus.BUDGET and run.settings["chosen"] == ["budget_tokens"]
    assert of(events, RunStarted)[0].budget_tokens == BUDGET
    assert sum(e.prompt_tokens + e.completion_tokens for e in of(events, LLMCalled)) == spent(app, run.id)
    view = fold(app.store.events(run.id))
    html = progress_html(view, str(run.status))
    assert f"{spent(app, run.id):,} / 2,500 tokens" in html, html
    assert "Token budget (Run settings)" in html, "the Writer names its control, not the flag"
    assert progress_line(of(events, Failed)[0]).startswith("stopped: Stopped at the token budget")


async def test_a_method_that_cannot_resume_says_to_run_it_again(app, llm):
    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("direct", Task(TASK), settings=with_budget(app, 10)))
    failed = of(events, Failed)[0]
    assert not failed.resumable and "run it again with a larger --budget-tokens" in failed.error
    assert app.store.get_run(events[0].run_id).status == RunStatus.BUDGET
    assert not of(events, LLMCalled) and not llm.requests, "the refused call was never sent"


# -- settings -------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_budget_that_is_not_positive_is_refused_naming_the_flag(cli, value):
    code, out, err = cli("history", "--budget-tokens", value)
    assert code == 2 and "--budget-tokens must be a positive whole number" in err, err


def test_a_budget_that_is_no_number_is_refused_naming_the_flag(cli):
    with pytest.raises(SystemExit):
        cli("history", "--budget-tokens", "lots")


def test_the_progress_line_of_a_budget():
    assert tokens_line(1234, 2500) == "  1,234 / 2,500 tokens"


# -- prices ---------------------------------------------------------------------------------------
def test_prices_give_a_run_s_cost_and_a_budget_s_most(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"fake-model": {"input": 0.15, "output": 0.6}, "big": {"input": 5, "output": 15}}))
    prices = read_prices(path)
    by_role = {"draft": {"prompt": 1000, "completion": 1000}, "revise": {"prompt": 2000, "completion": 0}}
    assert run_cost(prices, by_role, {"model": "fake-model"}) == pytest.approx((3000 * 0.15 + 1000 * 0.6) / 1e6)
    assert run_cost(prices, by_role, {"model": "fake-model", "role_models": {"revise": "big"}}) == \
        pytest.approx((1000 * 0.15 + 1000 * 0.6 + 2000 * 5) / 1e6)
    assert run_cost(prices, by_role, {"model": "unpriced"}) is None
    assert upper_bound(prices, 2500, {"fake-model", "big"}) == pytest.approx(2500 * 15 / 1e6)
    assert (dollars(0.01234), dollars(0.5), dollars(12.345)) == ("≈ $0.012", "≈ $0.50", "≈ $12.35")


@pytest.mark.parametrize("text", ["not json", "[1]", '{"m": {"input": 1}}'])
def test_a_bad_price_table_names_the_flag(tmp_path, text):
    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="--prices"):
        read_prices(path)


def test_a_run_with_prices_says_its_cost_before_and_after(cli, env, llm, tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"fake-model": {"input": 1, "output": 2}}))
    llm.reply(RatAuthor(draft_steps(2)))
    code, out, err = cli("run", TASK, "--method", "rat-step", "--budget-tokens", "100000", "--prices", str(path),
                         env=env)
    assert code == 0, err
    assert "budget: 100,000 tokens, ≈ $0.20 at most" in err
    assert re.search(r"cost: ≈ \$0\.0\d+ \([\d,]+ tokens\)", err), err
    code, out, err = cli("history", "--json", "--prices", str(path), env=env)
    assert json.loads(out)[0]["cost"] > 0


# -- the Writer -----------------------------------------------------------------------------------
async def test_the_writer_says_a_budgets_most_before_run_and_the_runs_cost_after(app, llm, tmp_path):
    """Issue 39, item 3, in the Writer: with --prices, the Run settings' line says the most the
    Token budget can cost (as the command line says it before a run), following the budget typed;
    a run's progress line says its cost once it has settled."""
    import gradio as gr

    from ui.run_settings import RunSettings
    from ui.writer import RunPanel

    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"fake-model": {"input": 1, "output": 2}}))
    priced = replace(app.settings, prices=read_prices(path))
    controls = RunSettings(priced)
    with gr.Blocks():
        controls.layout("rat-step")
    values = [None] * len(controls.names)
    assert "≈ $" not in controls.on_change(*values).label, "no budget: nothing to say"
    values[controls.names.index("--budget-tokens")] = 100_000
    assert controls.on_change(*values).label.endswith(" · budget: 100,000 tokens, ≈ $0.20 at most")
    values[controls.names.index("--budget-tokens")] = 5_000
    assert controls.on_change(*values).label.endswith("budget: 5,000 tokens, ≈ $0.010 at most")

    llm.reply(RatAuthor(draft_steps(2)))
    events = await collect(app.runner.start("rat-step", Task(TASK)))
    run = app.store.get_run(events[0].run_id)
    cost = run_cost(priced.prices, run.tokens_by_role, run.settings)
    assert cost and cost > 0
    app.runner.settings = priced  # the server's --prices (this test's app only)
    panel = RunPanel(app.runner, app.store, app.clients)
    with gr.Blocks():
        panel.layout()
    line = panel.settle(fold(app.store.events(run.id)))[panel.progress]
    assert f"{run.prompt_tokens + run.completion_tokens:,} tokens · {dollars(cost)} · " in line, line
async def test_the_writer_continues_a_run_stopped_at_its_budget_with_the_token_budget_s_value(app, llm):
    import gradio as gr

    from core.text.prompts import join_steps
    from ui.writer import RunPanel

    llm.reply(RatAuthor(draft_steps(3)))
    events = await collect(app.runner.start("rat-step", Task(TASK), settings=with_budget(app, 1500)))
    run_id = events[0].run_id
    assert app.store.get_run(run_id).status == RunStatus.BUDGET
    panel = RunPanel(app.runner, app.store, app.clients)
    with gr.Blocks():
        panel.layout()
    view = fold(app.store.events(run_id))
    settled = panel.settle(view)
    assert settled[panel.drafting.box].visible, "a run stopped at its budget can be continued"
    async for _ in panel.drafting.on_continue(view, join_steps(view.steps), budget=100_000):
        pass
    run = app.store.get_run(run_id)
    assert run.status == RunStatus.DONE and run.settings["budget_tokens"] == 100_000
