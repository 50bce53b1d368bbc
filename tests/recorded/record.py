"""Record the tiny real model's replies to RAT's prompts (B.1 draft, B.2 query, B.3 revision), as
test data for the guards (tests/recorded/smollm2.json). Run once, by hand, when the prompts or the
model change (about five minutes on two cores):

    python -m tests.recorded.record [--out tests/recorded/smollm2.json]

It runs ``rat`` through the app (``app.build``, the Runner, the openai SDK over HTTP) on the tiny
model (scripts/tiny_model.py, greedy decoding) over the local web, on three writing tasks of
data/tasks/rat-writing.jsonl and one QA task, and keeps every call's prompt and raw reply, before
any parsing or guard. Each record:

    role            "draft" (B.1), "query" (B.2) or "revise" (B.3)
    task            the task's prompt
    prompt_excerpt  the prompt as sent, with the retrieved text (B.3's "Existing Text in Wiki Web")
                    cut to its first 300 characters
    before          what the reply stands for: B.2's content, B.3's answer so far ("" for B.1)
    reply           the model's reply, exactly as it came
    finish_reason   "stop", or "length" when the reply reached its cap (``CAPS``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from common.types import Task
from core.batch import TASKS_DIR, load_tasks
from core.clients import Clients
from core.llm import Completion
from scripts.tiny_model import start_tiny_model
from tests.fakes.web_server import FakeWeb
from tests.real import support

OUT = Path(__file__).with_name("smollm2.json")
#: Caps high enough for the model's own ending (a reply that reaches one says "length").
CAPS = {"draft": 400, "query": 96, "revise": 400}
WRITING_IDS = ("survey-1", "life-1", "timeline-1")
QA_TASK = support.QA
RETRIEVED = "##Existing Text in Wiki Web:\n"
EXCERPT = 300


@dataclass(frozen=True)
class RecordingClients(support.CappedClients):
    calls: list = field(default_factory=list, hash=False, compare=False)

    def llm(self, *, system: str = ""):
        return RecordingLLM(Clients.llm(self, system=system), self.caps, self.calls)


class RecordingLLM(support.CappedLLM):
    """Capped, and keeping (role, prompt, reply, finish_reason) of every finished call."""

    def __init__(self, inner, caps, calls: list[dict]):
        super().__init__(inner, caps)
        self.calls = calls

    async def stream(self, messages, *, role, temperature=None, max_tokens=None):
        async for item in super().stream(messages, role=role, temperature=temperature, max_tokens=max_tokens):
            if isinstance(item, Completion):
                self.calls.append({"role": role, "prompt": messages, "reply": item.text,
                                   "finish_reason": item.finish_reason})
            yield item


def sections(prompt: str) -> dict[str, str]:
    """The prompt's "##Label:" sections."""
    return {m.group(1).strip(): m.group(2).strip()
            for m in re.finditer(r"^##([^\n]+?):?\n(.*?)(?=^##|\Z)", prompt, flags=re.S | re.M)}


def excerpt(prompt: str) -> str:
    """The prompt with the retrieved text cut to its first ``EXCERPT`` characters."""
    if not prompt.startswith(RETRIEVED):
        return prompt
    body, sep, rest = prompt[len(RETRIEVED):].partition("\n\n##")
    cut = body if len(body) <= EXCERPT else body[:EXCERPT] + " [...]"
    return RETRIEVED + cut + sep + rest


def record(call: dict, task: Task) -> dict:
    parts = sections(call["prompt"])
    before = {"query": parts.get("Content", ""), "revise": parts.get("Answer", "")}.get(call["role"], "")
    return {"role": call["role"], "task": task.prompt, "prompt_excerpt": excerpt(call["prompt"]),
            "before": before, "reply": call["reply"], "finish_reason": call["finish_reason"]}


async def gather(app, tasks: list[Task], calls: list[dict]) -> list[dict]:
    records = []
    for task in tasks:
        calls.clear()
        events = await support.run(app, "rat", task)
        print(f"{task.prompt[:60]!r}: {len(calls)} calls, ended with {type(events[-1]).__name__}", file=sys.stderr)
        records += [record(c, task) for c in calls]
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    by_id = {t.id: t for t in load_tasks(TASKS_DIR / "rat-writing.jsonl")}
    tasks = [by_id[i].task() for i in WRITING_IDS] + [QA_TASK]
    calls: list[dict] = []
    with start_tiny_model() as model, FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        settings = support.settings_for(model.base_url, model.model, web.searxng_url, Path(folder) / "rat.db",
                                        passage_tokens=600, passage_size=180)
        app = support.build_app(settings, caps=CAPS)
        app.runner.clients = RecordingClients(settings, cache=app.clients.cache, corpus_db=app.clients.corpus_db,
                                              caps=CAPS, calls=calls)
        try:
            records = asyncio.run(gather(app, tasks, calls))
        finally:
            app.store.close()
    args.out.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    roles = {r: sum(x["role"] == r for x in records) for r in ("draft", "query", "revise")}
    print(f"{len(records)} replies ({roles}) written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
