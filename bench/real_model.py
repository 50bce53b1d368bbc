"""How the writing methods hold up against a real model: SmolLM2-135M-Instruct on llama.cpp's
OpenAI-compatible server (scripts/tiny_model.py), over the local web fixtures (tests/fakes), on the
first tasks of data/tasks/rat-writing.jsonl. A 135M model writes nonsense in the shapes real models
use (headings without blank lines, echoed prompt labels, talk about the task instead of the text),
so these numbers show what the app does with such replies, not how well anything writes.

Per method, summed over the tasks:

  runs        runs ended done / unsourced (a searching method that ended with no source) / failed
  drafted     steps in the drafts (DraftReady after a "draft" call)
  q repl      queries replaced: the model's query was a label, empty, too long or a copy of the
              prompt, and the step's own words were searched instead (core.methods.helpers.query_note)
  revised     StepRevised events
  guarded     revisions refused by the guards, the text kept (StepRevised.guarded)
  sourced     revisions that used retrieved text (StepRevised with sources)
  tokens      prompt + completion tokens (llama.cpp's streamed answers carry no usage: estimated)
  seconds     wall-clock time of the runs

Then, per role, the output tokens of each call: calls, mean, largest, and how many were cut.

    python -m bench.real_model [--tasks 3] [--methods rat,rat-step,direct,cot,rag-1,rag-5] [--max-steps 2]
                               [--app-caps-only]

Each call is capped by role (tests.real.support.CAPS, tighter than the app's own caps, so that the
tests stay quick); with --app-caps-only the app's calls go as the app sends them (its roles' caps,
core.text.caps), which shows what a model that rambles costs. Decoding is greedy. Numbers, not
pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from pathlib import Path

from common.events import Failed, Final, LLMCalled, Note, StepRevised
from common.types import RunStatus
from core.batch import TASKS_DIR, load_tasks
from core.methods.helpers import query_note
from scripts.tiny_model import start_tiny_model
from tests.fakes.web_server import FakeWeb
from tests.real import support

METHODS = "rat,rat-step,direct,cot,rag-1,rag-5"
#: How a replaced query's Note begins ("The model's query "), taken from the helper that writes it.
QUERY_NOTE = query_note(0, "\x00", "").text.split(repr("\x00"))[0]
HEADER = (f"{'method':<14}{'runs d/u/f':>11}{'drafted':>9}{'q repl':>8}{'revised':>9}{'guarded':>9}{'sourced':>9}"
          f"{'tokens':>9}{'seconds':>9}")


def tally(app, method: str, events: list, seconds: float) -> Counter:
    counts: Counter = Counter(seconds=seconds)
    end = events[-1]
    if isinstance(end, Final):
        status = app.store.get_run(events[0].run_id).status
        counts["unsourced" if status == getattr(RunStatus, "UNSOURCED", "unsourced") else "done"] += 1
    elif isinstance(end, Failed):
        counts["failed"] += 1
    draft = support.drafted(events)
    counts["drafted"] += len(draft.steps) if draft else 0
    for e in events:
        if isinstance(e, Note) and e.text.startswith(QUERY_NOTE):
            counts["q repl"] += 1
        elif isinstance(e, StepRevised):
            counts["revised"] += 1
            counts["guarded"] += bool(getattr(e, "guarded", ""))
            counts["sourced"] += bool(e.sources)
        elif isinstance(e, LLMCalled):
            counts["tokens"] += e.prompt_tokens + e.completion_tokens
            counts["estimated"] += e.estimated
            counts[f"calls {e.role}"] += 1
            counts[f"out {e.role}"] += e.completion_tokens
            counts[f"cut {e.role}"] += bool(e.cut_ending)
            counts[f"max {e.role}"] = max(counts[f"max {e.role}"], e.completion_tokens)
    return counts


def per_role(results: dict[str, Counter]) -> list[str]:
    """Output tokens per call, by role, over every method: calls, mean, largest, cut."""
    total: Counter = Counter()
    for c in results.values():
        for key, value in c.items():
            if key.startswith("max "):
                total[key] = max(total[key], value)
            elif key.startswith(("calls ", "out ", "cut ")):
                total[key] += value
    lines = [f"{'role':<10}{'calls':>7}{'mean out':>10}{'max out':>9}{'cut':>6}"]
    for role in sorted(k.split(" ", 1)[1] for k in total if k.startswith("calls ")):
        calls = total[f"calls {role}"]
        lines.append(f"{role:<10}{calls:>7}{total[f'out {role}'] / calls:>10.0f}{total[f'max {role}']:>9}"
                     f"{total[f'cut {role}']:>6}")
    return lines


def row(method: str, c: Counter) -> str:
    runs = f"{c['done']}/{c['unsourced']}/{c['failed']}"
    return (f"{method:<14}{runs:>11}{c['drafted']:>9}{c['q repl']:>8}{c['revised']:>9}{c['guarded']:>9}"
            f"{c['sourced']:>9}{c['tokens']:>9}{c['seconds']:>9.1f}")


async def bench(app, methods: list[str], tasks: list) -> dict[str, Counter]:
    results: dict[str, Counter] = {}
    for method in methods:
        total: Counter = Counter()
        for spec in tasks:
            started = time.perf_counter()
            events = await support.run(app, method, spec.task())
            for key, value in tally(app, method, events, time.perf_counter() - started).items():
                total[key] = max(total[key], value) if key.startswith("max ") else total[key] + value
            if isinstance(events[-1], Failed):
                print(f"  {method} on {spec.id}: failed: {events[-1].error}")
        results[method] = total
        print(row(method, total), flush=True)
    return results


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=3, help="the first N tasks of rat-writing.jsonl [3]")
    ap.add_argument("--methods", default=METHODS, help=f"comma list [{METHODS}]")
    ap.add_argument("--max-steps", type=int, default=support.METHOD["max_steps"],
                    help=f"most draft steps revised [{support.METHOD['max_steps']}]")
    ap.add_argument("--app-caps-only", action="store_true",
                    help="no caps of the bench's own: each call goes as the app sends it")
    args = ap.parse_args(argv)
    tasks = load_tasks(TASKS_DIR / "rat-writing.jsonl")[: max(1, args.tasks)]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    with start_tiny_model() as model, FakeWeb() as web, tempfile.TemporaryDirectory() as folder:
        settings = support.settings_for(model.base_url, model.model, web.searxng_url, Path(folder) / "bench.db",
                                        max_steps=args.max_steps)
        caps = {} if args.app_caps_only else support.CAPS
        app = support.build_app(settings, caps=caps)
        m, capped = settings.method, caps or "none but the app's own"
        print(f"SmolLM2-135M-Instruct (llama.cpp, greedy) on {len(tasks)} tasks ({', '.join(t.id for t in tasks)}); "
              f"max_steps {m.max_steps}, k {m.k}, passage_tokens {m.passage_tokens}; caps per call {capped}")
        print(HEADER)
        print("-" * len(HEADER))
        try:
            results = asyncio.run(bench(app, methods, tasks))
        finally:
            app.store.close()
    print()
    print("\n".join(per_role(results)))
    if any(c["estimated"] for c in results.values()):
        print("tokens: estimated from characters (the server sent no usage with its streamed answers).")


if __name__ == "__main__":
    main()
