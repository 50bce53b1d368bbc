"""The Writer's Run settings (issue 23, item 4): a run's own model, k, token limits and method
parameters with their ranges; messages that name the browser's controls, not flags; rat-step as
the default, with readable method choices. The pure parts first, then in a real headless
Chromium over the fake model server and the local web (the Writer tests' fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

import gradio as gr
import pytest

from common.errors import ConfigError
from common.settings import LLMSettings, Settings
from core.methods import METHODS
from tests.fakes.llm_server import FakeReply
from tests.fakes.scripts import RatAuthor, draft_steps, kind_of, prompt_of
from tests.ui import test_writer_browser as writer_tests
from tests.ui.browser import chromium_missing
from ui import run_settings, writer
from ui.controls import LABELS, RUN_SETTINGS, control, for_browser
from ui.run_settings import NUMBERS, ROWS, RunSettings, out_of_range, per_run

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


# -- messages name the controls ---------------------------------------------------------------------
@pytest.mark.parametrize("said, shown", [
    ("was cut short: raise --max-tokens (50), or use a model that answers more briefly.",
     "was cut short: raise Max tokens (Run settings) (50), or use a model that answers more briefly."),
    ("kept as it stood (see --min-keep).", "kept as it stood (see Min keep (Run settings))."),
    ("lower --passage-tokens, or give the server a larger context",
     "lower Passage tokens (Run settings), or give the server a larger context"),
    ("--param itrg.iterations=0 is out of range: use a whole number from 1 to 10 (default 5).",
     "itrg.iterations (Run settings) = 0 is out of range: use a whole number from 1 to 10 (default 5)."),
    ("pick a stronger model with --model.", "pick a stronger model with Model (Run settings)."),
    ("set --base-url or OPENAI_BASE_URL", "set --base-url or OPENAI_BASE_URL"),  # the server's: no control
    ("a well-known-flag--k and a--max-tokens", "a well-known-flag--k and a--max-tokens"),  # not flags
])
def test_for_browser_names_the_control_of_each_flag_it_knows(said, shown):
    assert for_browser(said) == shown


def test_the_progress_line_of_a_cut_article_names_the_control_not_the_flag():
    from common.events import Final
    from ui import run_html
    from ui.runview import RunView

    view = RunView()
    view.apply(Final(text="A text whose end was cut", cut=True))
    line = run_html.progress_html(view, "done")
    assert "Max tokens (Run settings)" in line and "--max-tokens" not in line
    assert "--max-tokens" in run_html.progress_text(view, "done"), "the plain line (CLI words) keeps the flag"


def test_the_messages_name_the_labels_the_controls_have():
    """The names for_browser gives are the labels of the Run settings' controls: one table."""
    with gr.Blocks():
        panel = RunSettings(Settings(llm=LLMSettings(role_models={"revise": "big"})))
        panel.layout("itrg-refine")
    labels = {c.label for c in panel.components()}
    in_run_settings = [flag for flag, (_, where) in LABELS.items() if where == RUN_SETTINGS]
    shown = {flag: control(flag).removesuffix(f" ({RUN_SETTINGS})") for flag in in_run_settings}
    assert {"--model", "--revise-model", *(n.flag for n in NUMBERS)} <= set(shown)
    assert {shown[f] for f in ("--model", "--revise-model", *(n.flag for n in NUMBERS))} <= labels
    assert "itrg.iterations" in labels and "rat.step_context_tokens" in labels


# -- ranges ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("number", [n for n in NUMBERS if ROWS[n.flag].check is not None], ids=lambda n: n.flag)
def test_each_range_is_the_one_its_setting_accepts(number):
    """A control's range is what the flag's check in SETTINGS accepts, at both ends."""
    check, step = ROWS[number.flag].check, 1 if number.whole else 0.01
    for inside in (number.low, number.high):
        if inside is not None:
            check(inside)
    for outside in (number.low - step if number.low is not None else None,
                    number.high + step if number.high is not None else None):
        if outside is not None:
            with pytest.raises(ConfigError):
                check(outside)


def test_a_value_out_of_range_names_the_control_and_its_range():
    server = Settings()
    with pytest.raises(ConfigError, match=re.escape("Results read per step (Run settings) must be a whole number "
                                                    "of at least 1, not 0.")):
        per_run(server, "rat", {"--k": 0})
    with pytest.raises(ConfigError, match=re.escape("Min keep (Run settings) must be a number from 0 to 1, not 1.5.")):
        per_run(server, "rat", {"--min-keep": 1.5})
    with pytest.raises(ConfigError, match=re.escape("rat.step_context_tokens (Run settings) = 10 is out of range: "
                                                    "use a whole number from 50 to 100000")):
        per_run(server, "rat-step", {"param:rat.step_context_tokens": 10})
    assert out_of_range("X", 5, 1, 10, True) == ""


def test_per_run_settings_are_built_from_the_servers():
    server = Settings(llm=LLMSettings(model="small", role_models={"revise": "big"}))
    settings = per_run(server, "itrg-refine", {"model": "other", "model:revise": "", "--k": 2, "--max-tokens": 50,
                                               "--context-tokens": None, "param:itrg.iterations": 3,
                                               "param:itrg.top_k": 5})
    assert (settings.llm.model, settings.llm.role_models, settings.llm.max_tokens) == ("other", {"revise": "big"}, 50)
    assert (settings.method.k, settings.method.context_tokens) == (2, None)
    assert settings.method.params == {"itrg.iterations": "3"}, "only what differs from the server's"
    assert settings.search == server.search and server.method.k == 5, "the server's settings are left as they are"
    assert per_run(server, "rat", {}) == server


# -- the default method and the model line ---------------------------------------------------------
def test_rat_step_is_the_default_and_the_readme_says_why():
    assert writer.default_method() == "rat-step"
    assert "rat-step" in writer.method_info("rat-step") and "one paragraph at a time" in writer.method_info("rat")
    methods = README.split("## Methods", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"default.*`rat-step`.*one paragraph at a time.*`rat` rewrites the whole answer",
                     " ".join(methods.split())), \
        "README's Methods section says the Writer's default and why"


def test_method_choices_are_short_and_start_with_the_name():
    choices = writer.method_choices()
    assert [value for _, value in choices] == list(METHODS)
    for label, value in choices:
        assert label.startswith(f"{value} — ") and len(label) <= len(value) + 48, label
        assert METHODS[value].description not in label, "the description is shown under the list"


def test_the_model_line_offers_the_listed_models_when_the_configured_one_is_not():
    settings = Settings(llm=LLMSettings(model="gpt-4o-mini"))
    line = writer.model_html(settings, "", ["llama3", "qwen3"])
    assert "does not list gpt-4o-mini" in line and "llama3, qwen3" in line and "Model (Run settings)" in line
    assert run_settings.model_choices("gpt-4o-mini", ["llama3", "qwen3"]) == [
        ("gpt-4o-mini (not listed)", "gpt-4o-mini"), ("llama3", "llama3"),
        ("qwen3", "qwen3")]
    assert run_settings.model_choices("llama3", ["llama3", "qwen3"]) == [("llama3", "llama3"), ("qwen3", "qwen3")]


# -- in the browser --------------------------------------------------------------------------------
stand_ins, app_url, browser = writer_tests.stand_ins, writer_tests.app_url, writer_tests.browser
llm, web, app, open_page = writer_tests.llm, writer_tests.web, writer_tests.app, writer_tests.open_page
if not chromium_missing():
    from playwright.sync_api import expect


def open_settings(writer):
    writer.get_by_text(re.compile(f"^{RUN_SETTINGS} ·")).click()


def set_number(writer, name: str, value: str) -> None:
    box = writer.get_by_label(name, exact=True)
    box.fill("")
    box.press_sequentially(value)
    box.press("Tab")


@pytest.mark.browser
@pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())
def test_a_cut_answer_names_the_max_tokens_control_and_the_run_uses_the_settings(open_page, llm, app):
    author = RatAuthor(draft_steps(2))

    def cut_revisions(body: dict):
        answer = author(body)
        return FakeReply(text=answer, finish_reason="length") if kind_of(prompt_of(body)) == "revise-step" else answer

    llm.reply(cut_revisions)
    llm.requests.clear()
    page, w = open_page()
    expect(w.get_by_label("Method")).to_have_value(re.compile("^rat-step "))
    open_settings(w)
    set_number(w, "Max tokens", "40")
    set_number(w, "Results read per step", "2")
    w.get_by_label("Model", exact=True).click()
    page.get_by_role("option", name="fake-draft", exact=True).click()  # one of the server's models
    w.get_by_label("Task").fill("Write about Python 3 in two steps, cut short.")
    w.get_by_role("button", name="Run", exact=True).click()
    # every revision is cut, so refused: the run ends unsourced
    expect(w.locator(".rat-progress")).to_contain_text(re.compile("^(Done|Unsourced)"), timeout=writer_tests.TIMEOUT)

    note = w.locator("#rat-step-1 .rat-note", has_text="cut short")
    expect(note.first).to_contain_text("Max tokens (Run settings) (40)")
    assert "--max-tokens" not in w.locator(".block.rat-steps-panel").inner_text()
    run = app.store.list_runs(limit=1)[0]
    assert (run.method, run.settings["max_tokens"], run.settings["k"], run.settings["model"]) == \
        ("rat-step", 40, 2, "fake-draft")
    assert llm.requests and all(r["max_tokens"] <= 40 and r["model"] == "fake-draft" for r in llm.requests)

    # a reload shows the run with its task and its Run settings, so Run again runs it the same way
    # (the Task box came back empty and the settings fell back to the server's, issue 36)
    page.reload()
    w = page.locator("#rat-tab-writer")
    expect(w.get_by_label("Task")).to_have_value("Write about Python 3 in two steps, cut short.",
                                                 timeout=writer_tests.TIMEOUT)
    expect(w.get_by_label("Method")).to_have_value(re.compile("^rat-step "))
    open_settings(w)
    expect(w.get_by_label("Max tokens", exact=True)).to_have_value("40")
    expect(w.get_by_label("Results read per step", exact=True)).to_have_value("2")
    expect(w.get_by_label("Model", exact=True)).to_have_value("fake-draft")


@pytest.mark.browser
@pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())
def test_a_setting_out_of_range_is_refused_and_each_method_shows_its_parameters(open_page, llm, app):
    page, w = open_page()
    open_settings(w)
    expect(w.get_by_label("rat.step_context_tokens")).to_be_visible()
    expect(w.get_by_label("itrg.iterations")).to_be_hidden()
    w.get_by_label("Method").click()
    page.get_by_role("option", name=re.compile("^itrg-refine ")).click()
    expect(w.get_by_label("itrg.iterations")).to_be_visible()
    expect(w.get_by_label("rat.step_context_tokens")).to_be_hidden()

    runs = len(app.store.list_runs())
    set_number(w, "itrg.iterations", "11")
    w.get_by_label("Task").fill("Write about Python 3.")
    w.get_by_role("button", name="Run", exact=True).click()
    refused = r"itrg\.iterations \(Run settings\) = 11 is out of range: use a whole number from 1 to 10"
    expect(page.get_by_text(re.compile(refused))).to_be_visible(timeout=writer_tests.TIMEOUT)
    set_number(w, "itrg.iterations", "3")
    set_number(w, "Min keep", "2")
    w.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_text(re.compile(r"Min keep \(Run settings\) must be a number from 0 to 1, not 2"))
           ).to_be_visible(timeout=writer_tests.TIMEOUT)
    assert len(app.store.list_runs()) == runs, "nothing ran"


def test_the_article_of_a_run_is_cited_with_the_threshold_it_ran_with(tmp_path):
    import app as app_module
    from ui.runview import RunView

    wired = app_module.build(Settings(db_path=tmp_path / "t.db"))
    panel = writer.RunPanel(wired.runner, wired.store, wired.clients)
    task = wired.store.add_task("Write about owls.")
    own = wired.store.create_run("rat-step", task, {"cite_threshold": 0.9})
    older = wired.store.create_run("rat-step", task, {})  # stored before runs kept theirs
    assert panel.text.threshold_of(RunView(run_id=own)) == 0.9 != panel.text.threshold
    server = wired.settings.method.cite_threshold
    assert panel.text.threshold_of(RunView(run_id=older)) == panel.text.threshold == server
    wired.store.close()
