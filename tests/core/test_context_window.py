"""The context window (issue 9): every prompt is fitted to --context-tokens (default: what the
server reports, else 8192); passages shrink first, RAT warns where its answer so far leaves no
room and suggests rat-step; a server's context error is a typed error that names the setting.
End to end: the openai SDK over HTTP to the fake server, SearXNG and pages over HTTP."""

from __future__ import annotations

import pytest

from app import build, settings_from
from common.errors import ConfigError, LLMContextExceeded
from common.events import Failed, LLMCalled, Note, PassagesChosen, StepRevised
from common.settings import DEFAULT_CONTEXT_TOKENS, MethodSettings
from common.types import Task
from core.methods.helpers import fit_passages, prompt_room
from core.text.fencing import format_passages
from core.text.tokens import count_tokens
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeReply
from tests.fakes.method_scripts import method_context
from tests.fakes.model import FakeModel
from tests.fakes.scripts import RatAuthor, draft_steps, kind_of
from tests.helpers import collect, of
from ui.cli import build_parser

TASK = Task("Write a short history of Python 3 and its ecosystem.")


def run_with(tmp_path, llm, web, **method):
    return build(make_settings(tmp_path, llm, web, **method))


def revise_prompts(llm) -> list[str]:
    contents = [m["content"] for body in llm.requests for m in body["messages"]]
    return [c for c in contents if kind_of(c).startswith("revise")]


async def test_the_window_the_server_reports_is_used(tmp_path, llm, web):
    llm.context_length = 32768
    llm.reply(RatAuthor(draft_steps(1)))
    app = run_with(tmp_path, llm, web)
    client = app.clients.llm()
    try:
        assert await client.context_window() == 32768
        assert await client.context_window("not-served") is None
        asked = llm.paths.count("GET /v1/models")
        assert await app.clients.llm().context_window() == 32768
        assert llm.paths.count("GET /v1/models") == asked, "a later run does not ask the server again"
    finally:
        await client.aclose()
    llm.context_length = None
    app.clients.notes.windows.clear()  # as after WINDOW_TTL: the server is asked again
    client = app.clients.llm()
    try:
        assert await client.context_window() is None, "a server that says nothing: the default applies"
    finally:
        await client.aclose()


async def test_passages_shrink_first_so_the_prompt_fits(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(2)))
    app = run_with(tmp_path, llm, web, context_tokens=1024, passage_tokens=1500)
    events = await collect(app.runner.start("rat-step", TASK))
    chosen = of(events, PassagesChosen)
    revs = of(events, StepRevised)
    assert chosen and all(len(c.passages) > 1 for c in chosen)
    left_out = [n for n in of(events, Note) if "were left out of step" in n.text]
    assert left_out and all("--context-tokens 1,024" in n.text for n in left_out)
    room = 1024 - 256
    assert all(count_tokens(p) <= room for p in revise_prompts(llm)), "every revision prompt fits"
    for c, r in zip(chosen, revs, strict=True):  # the sources are the passages the model was shown
        assert set(r.sources) <= {p.url for p in c.passages} and len(r.sources) >= 1


async def test_rat_warns_where_the_answer_so_far_leaves_no_room_and_suggests_rat_step(tmp_path, llm, web):
    long_steps = [f"Step {k}: " + ("Python 3 changed strings, printing and division for good. " * 45)
                  for k in range(1, 4)]
    llm.reply(RatAuthor(long_steps))
    app = run_with(tmp_path, llm, web, context_tokens=1024)
    events = await collect(app.runner.start("rat", TASK))
    revs = of(events, StepRevised)
    assert revs[-1].skipped.startswith("no retrieved text fits beside the text")
    (warn, *_) = [n for n in of(events, Note) if "leaves no room for retrieved text" in n.text]
    assert "rat-step" in warn.text and "--context-tokens 1,024" in warn.text
    assert events[-1].text.count("Python 3 changed strings") == 3 * 45, "no text lost"


def test_fit_passages_keeps_the_best_that_fit():
    from common.types import Passage

    ctx = method_context(FakeModel(), context_tokens=1024)
    passages = [Passage(text="word " * 300, url=f"http://x.org/{k}", title=f"P{k}") for k in range(4)]
    kept, notes = fit_passages(ctx, 3, passages, "template " * 100)
    assert kept == passages[:len(kept)] and 0 < len(kept) < 4
    assert count_tokens(format_passages(kept)) + count_tokens("template " * 100) <= prompt_room(ctx)
    assert len(notes) == 1 and notes[0].i == 3 and notes[0].level == "warning"
    assert fit_passages(ctx, 3, passages[:1], "short")[1] == [], "no note when everything fits"
    assert prompt_room(method_context(FakeModel())) == DEFAULT_CONTEXT_TOKENS - 1024


async def test_a_servers_context_error_is_typed_and_names_the_setting(tmp_path, llm, web):
    llm.queue(FakeReply.fail(400, "This model's maximum context length is 4096 tokens. However, your messages "
                                  "resulted in 9000 tokens.", code="context_length_exceeded"))
    app = run_with(tmp_path, llm, web)
    events = await collect(app.runner.start("rat", TASK))
    failed = events[-1]
    assert isinstance(failed, Failed) and failed.error_type == LLMContextExceeded.__name__
    assert "--context-tokens" in failed.error and "RAT_STUDIO_CONTEXT_TOKENS" in failed.error
    assert "OLLAMA_CONTEXT_LENGTH" in failed.error


async def test_an_oversized_prompt_is_announced_before_it_is_sent(tmp_path, llm, web):
    llm.reply(RatAuthor(draft_steps(1)))
    app = run_with(tmp_path, llm, web, context_tokens=1024)
    events = await collect(app.runner.start("direct", Task("Explain: " + "why " * 3000)))
    (note,) = [n for n in of(events, Note) if "prompt is about" in n.text]
    assert "more than the 768 that --context-tokens 1,024 leaves" in note.text
    assert of(events, LLMCalled), "it is still sent: the server decides"


@pytest.mark.parametrize("argv, env, expected", [
    ([], {}, None),
    (["--context-tokens", "4096"], {}, 4096),
    ([], {"RAT_STUDIO_CONTEXT_TOKENS": "16384"}, 16384),
])
def test_the_setting_comes_from_the_flag_or_the_environment(argv, env, expected):
    settings = settings_from(build_parser().parse_args(argv), env)
    assert settings.method.context_tokens == expected
    assert MethodSettings().context_tokens is None


def test_a_window_too_small_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"--context-tokens 100 is too small .* at least 1024"):
        settings_from(build_parser().parse_args(["--context-tokens", "100"]), {})
