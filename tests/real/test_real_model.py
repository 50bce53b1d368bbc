"""Every method, end to end on a real model: SmolLM2-135M-Instruct (a 135M model that writes
nonsense in the shapes real models use: headings, echoed prompt labels, talk about the task)
through the app's Runner, over the local web, on a writing task and a QA task.

Nothing here judges the text. Each run must keep the invariants of ``tests.real.support.problems``:
it ends with Final or a readable typed error, cites only what it read, loses no text without a
Note that says why, and is stored as it happened."""

from __future__ import annotations

import pytest

from common.errors import LLMConnectionError
from common.events import Failed, Final, LLMCalled
from core.methods import METHODS
from tests.real.support import QA, WRITING, problems, run

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(240)]


@pytest.mark.parametrize("task", [WRITING, QA], ids=["writing", "qa"])
@pytest.mark.parametrize("method", list(METHODS))
async def test_method_keeps_the_invariants_on_a_real_model(real_app, method, task):
    events = await run(real_app, method, task)
    assert isinstance(events[-1], Final | Failed)
    end = events[-1]
    assert not (isinstance(end, Failed) and end.error_type == LLMConnectionError.__name__), (
        f"the real model could not be reached: the server died or never answered ({end.error}); "
        "its log is in scripts/tiny_model.py's temp file")
    assert any(isinstance(e, LLMCalled) for e in events), "the real model answered no call"
    broken = problems(real_app, method, events)
    assert not broken, f"{method} on {task.kind!r}:\n" + "\n".join(broken)
