"""How the inline citations of the searching methods hold up: how many sentences get a source,
how many marks the model wrote were kept or removed, and whether each mark's passage really
shares words with its sentence (citation precision).

Runs each registered method that searches (``MethodInfo.uses_search``; ``--methods`` to choose)
on a few writing tasks about topics the local web's fixture pages cover (``--tasks``, default 3),
against the fake OpenAI-compatible server and the local web with its SearXNG-style search
(tests/fakes), with a real SQLite store, and prints per method, summed over its tasks:

  runs        runs that ended with a Final (failed runs are listed under the table)
  sent        sentences of the final texts (pieces that need a source: ``core.article.citations``)
  supp        supported share: sentences with at least one mark / sentences
  marks       [n] marks in the final texts (attribution's and the model's)
  model       marks the model wrote that were kept (they name a passage of their step)
  removed     marks the model wrote that were removed (they name no passage of their step)
  prec        citation precision: the share of marks whose passage shares at least
              PRECISION_WORDS (3) content words with its sentence AND at least PRECISION_SHARE
              (30%) of the sentence's content words (``core.text.tokens.tokenize``: lowercase
              letters and digits, stopwords out). Independent of the attribution threshold
              (``--cite-threshold``, 0.6 of the sentence's words and at least 3 of them): a mark the
              model wrote is kept for naming a passage of its step, whatever the overlap, so
              this checks the kept marks too. "-" when there is no mark.
  prec m      the same precision over the kept model marks only
  read        sources listed in the Finals whose page was read (``Source.read``)
  snippet     sources listed whose page could not be read: only the search snippet was used

The citations are recomputed from the run's stored events,
``SourceBook.from_events(store.events(run_id)).cited(final.text)``, as the UI does for an
article; a run whose recomputed counts differ from its ``Final`` (sentences, supported,
marks_removed) is named under the table.

    python -m bench.citations [--tasks 3] [--methods rat,rag-1,...] [--max-steps 3]

The fake model answers like a cooperative one that sometimes copies labels: the draft is the
task's steps; a RAT revision keeps the answer and adds, to its last paragraph, one sentence taken
from a retrieved passage followed by the label that passage had in the prompt ("[n] Title — URL"
above <passage>...</passage>), e.g. "... in December 2016 [2]."; the other methods' writing
answers (RAG's answer, ITRG's documents, AAG's first/updated/edited answers, FuRePA's answer)
get the same added sentence. For one task in three (the first, the fourth, ...) each writing
answer whose prompt does not hold it yet also adds a sentence with an invented mark [99]
(INVENTED), which no passage has: the removed column counts those (RAT keeps it through its later
revisions, so once per run; RAT step-scope's prompts show only part of the article, so it can be
added, and removed, more than once). Numbers, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import app as app_module
from common.events import Failed, Final
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from common.types import Task
from core.article.citations import Cited
from core.article.sources import SourceBook
from core.methods import METHODS
from core.text.tokens import tokenize
from tests.fakes.llm_server import FakeLLM
from tests.fakes.method_scripts import MethodAuthor
from tests.fakes.scripts import rat_reply
from tests.fakes.web_server import FakeWeb

PRECISION_WORDS = 3  # content words a mark's passage must share with its sentence ...
PRECISION_SHARE = 0.3  # ... and the share of the sentence's content words they must be
INVENTED = 99  # the invented mark: no article here has that many sources
INVENTED_SENTENCE = f"Experts widely expect these developments to matter even more in coming years [{INVENTED}]."


@dataclass(frozen=True)
class WritingTask:
    prompt: str
    steps: tuple[str, ...]  # the fake model's draft


#: Topics of the fixture pages (../shared/fixtures/web/manifest.json), three pages each.
TASKS = (
    WritingTask("Write an overview of Python 3 for developers: the Python 3.6.0 release, Mercurial's port to "
                "Python 3, and managing Python environments.",
                ("Python 3.6.0 was released in December 2016 with formatted string literals and many optimizations.",
                 "Mercurial moved its code base from Python 2 to Python 3 over several years of work.",
                 "Managing Python environments with virtualenv and pip keeps project dependencies apart.")),
    WritingTask("Write an article on carbon and climate: U.S. emissions in 2019, Microsoft's plan to remove its "
                "carbon footprint, and forests managed by Indigenous peoples.",
                ("United States carbon emissions dipped in 2019 as power plants burned less coal.",
                 "Microsoft will invest in carbon removal technology to erase its carbon footprint.",
                 "Intact forest lands managed by Indigenous peoples protect the climate.")),
    WritingTask("Write an article on data tools for programmers: t-SNE for visualising data, fast JSON parsing, "
                "and why developers love Rust.",
                ("The t-SNE algorithm embeds high-dimensional data in two dimensions for visualisation.",
                 "Parsing JSON quickly with simdjson needs careful engineering of number parsing.",
                 "Rust has been the most loved language on Stack Overflow for years.")),
)

#: Answers of the fake model that write text (the others plan, query, summarise or judge).
WRITING = ("revise", "rag", "itrg-refresh", "itrg-refine", "aag-first", "aag-update", "aag-edit")
PLANS = ("furepa-plan", "furepa-forced")  # "[Answer] ..." lines: the sentence goes into the answer

_PASSAGE = re.compile(r"^\[(\d+)\] [^\n]*\n<passage>\n(.*?)\n</passage>", re.S | re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_JUNK = re.compile(r"[\[\]|#*_<>‹{}]|https?:|\s[-–]\s*$")
HEADER = (f"{'method':<14}{'runs':>5}{'sent':>6}{'supp':>7}{'marks':>7}{'model':>7}{'removed':>8}"
          f"{'prec':>7}{'prec m':>7}{'read':>6}{'snippet':>8}")


def passages_in(prompt: str) -> list[tuple[int, str]]:
    """The labelled passages of a prompt: (label number, text), in prompt order."""
    return [(int(m.group(1)), m.group(2)) for m in _PASSAGE.finditer(prompt)]


def quotable(text: str) -> list[str]:
    """Sentences of a passage fit to copy: one line of prose, 40-220 characters, 5+ content words."""
    out = []
    for s in _SENTENCE.split(" ".join(text.split())):
        s = s.strip()
        if 40 < len(s) < 220 and s[-1] in ".!?" and not _JUNK.search(s) and len(set(tokenize(s))) >= 5:
            out.append(s)
    return out


def cited_sentence(prompt: str) -> str:
    """One sentence of a passage of ``prompt`` with that passage's label, "... text [n].", that
    the prompt's own text (outside its passages) does not hold yet; "" when there is none. The
    passage is chosen by the marks already in that text, so successive revisions cite in turn."""
    found = passages_in(prompt)
    if not found:
        return ""
    outside = _PASSAGE.sub("", prompt)
    start = len(re.findall(r"\[\d+\]", outside)) % len(found)
    for n, text in found[start:] + found[:start]:
        for s in quotable(text):
            if s[:-1] not in outside:
                return f"{s[:-1].rstrip()} [{n}]{s[-1]}"
    return ""


class CitingAuthor(MethodAuthor):
    """MethodAuthor (tests/fakes) whose writing answers add one sentence from a retrieved
    passage with its prompt label, and, when ``invent``, once, a sentence with a made-up mark."""

    def __init__(self, steps: list[str], *, invent: bool):
        super().__init__(list(steps))
        self.invent = invent

    def default(self, kind: str, prompt: str, n: int) -> str:
        if kind == "revise" and "##Paragraph to revise:" in prompt:  # RAT step-scope: its own paragraph
            reply = rat_reply("revise-step", prompt, self.steps) or ""
        else:
            reply = super().default(kind, prompt, n)
        if kind not in WRITING and kind not in PLANS:
            return reply
        extra = [cited_sentence(prompt)]
        if self.invent and INVENTED_SENTENCE.split(" [")[0] not in prompt:
            extra.append(INVENTED_SENTENCE)
        added = " ".join(x for x in extra if x)
        if not added:
            return reply
        if kind in PLANS:
            return re.sub(r"^(\[Answer\][^\n]*)", lambda m: f"{m.group(1).rstrip('.')}. {added}", reply,
                          count=1, flags=re.M)
        if kind == "revise" and reply.endswith(" [revised]"):  # RAT: the (last) paragraph it revises
            return reply[: -len(" [revised]")] + " " + added + " [revised]"
        return f"{reply.rstrip()} {added}"


def overlap_ok(sentence: str, passage: str) -> bool:
    """Citation precision's test: the passage shares at least PRECISION_WORDS content words with
    the sentence, and at least PRECISION_SHARE of the sentence's content words."""
    words = set(tokenize(sentence))
    common = words & set(tokenize(passage))
    return bool(words) and len(common) >= PRECISION_WORDS and len(common) / len(words) >= PRECISION_SHARE


def tally(final: Final, cited: Cited) -> Counter:
    c: Counter = Counter(runs=1, sent=cited.sentences, supported=cited.supported, removed=cited.removed)
    for piece in cited.pieces:
        for mark in piece.marks:
            ok = overlap_ok(piece.body, mark.passage)
            c["marks"] += 1
            c["precise"] += ok
            if mark.by_model:
                c["model"] += 1
                c["model precise"] += ok
    c["read"] = sum(s.read for s in final.sources)
    c["snippet"] = sum(not s.read for s in final.sources)
    return c


def share(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def row(method: str, c: Counter) -> str:
    return (f"{method:<14}{c['runs']:>5}{c['sent']:>6}{share(c['supported'], c['sent']):>7}{c['marks']:>7}"
            f"{c['model']:>7}{c['removed']:>8}{share(c['precise'], c['marks']):>7}"
            f"{share(c['model precise'], c['model']):>7}{c['read']:>6}{c['snippet']:>8}")


async def run_one(app: app_module.App, method: str, prompt: str) -> tuple[str, list]:
    events = [e async for e in app.runner.start(method, Task(prompt))]
    return events[0].run_id, events


def searching_methods() -> list[str]:
    return [name for name, info in METHODS.items() if info.uses_search]


def main(argv: list[str] | None = None) -> dict[str, Counter]:
    every = searching_methods()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=3, help=f"writing tasks per method, 1-{len(TASKS)} [3]")
    ap.add_argument("--methods", default=",".join(every), help="comma list [every method that searches]")
    ap.add_argument("--max-steps", type=int, default=3, help="most draft steps revised [3]")
    args = ap.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        ap.error(f"unknown method(s): {', '.join(unknown)}; known: {', '.join(METHODS)}")
    tasks = TASKS[: max(1, min(args.tasks, len(TASKS)))]

    results: dict[str, Counter] = {}
    problems: list[str] = []
    with FakeLLM() as llm, FakeWeb() as web, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            llm=LLMSettings(base_url=llm.base_url, api_key="sk-bench", model="fake-model", max_retries=0),
            search=SearchSettings(providers=("searxng",), searxng_url=web.searxng_url),
            fetch=FetchSettings(allow_private_urls=True),
            method=MethodSettings(max_steps=args.max_steps), db_path=Path(tmp) / "bench-citations.db")
        app = app_module.build(settings)
        print(f"fake model, local web ({len(web.manifest)} pages); {len(tasks)} task(s) per method, "
              f"max_steps {args.max_steps}; model invents [{INVENTED}] on task 1 of every 3\n")
        print(HEADER)
        print("-" * len(HEADER))
        try:
            for method in methods:
                total: Counter = Counter()
                for t, task in enumerate(tasks):
                    llm.reply(CitingAuthor(list(task.steps), invent=t % 3 == 0))
                    run_id, events = asyncio.run(run_one(app, method, task.prompt))
                    final = next((e for e in events if isinstance(e, Final)), None)
                    if final is None:
                        failed = next((e for e in events if isinstance(e, Failed)), None)
                        problems.append(f"{method} on task {t + 1}: failed: {failed.error if failed else '?'}")
                        continue
                    book = SourceBook.from_events(app.store.events(run_id),
                                                  threshold=settings.method.cite_threshold)
                    cited = book.cited(final.text)
                    if (cited.sentences, cited.supported, cited.removed) != (
                            final.sentences, final.supported, final.marks_removed):
                        problems.append(f"{method} on task {t + 1}: recomputed {cited.sentences}/"
                                        f"{cited.supported}/{cited.removed} sentences/supported/removed, "
                                        f"Final says {final.sentences}/{final.supported}/{final.marks_removed}")
                    total.update(tally(final, cited))
                results[method] = total
                print(row(method, total), flush=True)
        finally:
            app.store.close()
    print(f"\nprec: marks whose passage shares >= {PRECISION_WORDS} content words and >= "
          f"{PRECISION_SHARE:.0%} of its sentence's; prec m: the same over the kept model marks.")
    for line in problems:
        print("  " + line)
    return results


if __name__ == "__main__":
    main()
