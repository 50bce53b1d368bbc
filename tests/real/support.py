"""The app on the tiny real model (scripts/tiny_model.py) over the local web: settings that keep a
run's calls few, and the invariants every run must keep whatever the model writes. Shared by the
real-model tests (tests/real), bench/real_model.py and tests/recorded/record.py.

The app sends no max_tokens of its own, and a 135M model can ramble until its context window is
full (a draft ran for over ten minutes on two cores when we tried), so the runs here cap each call
by role (``CAPS``) with :class:`CappedLLM` around the app's own client. Everything else is the
app's: ``app.build``, the Runner, the SQLite store, the openai SDK over HTTP, SearXNG-style search
and page fetching over HTTP to the local web.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import app as app_module
from common.errors import RatStudioError
from common.events import (
    DraftReady,
    Event,
    Failed,
    Final,
    LLMCalled,
    Note,
    PageRead,
    PassagesChosen,
    RunStarted,
    StepRevised,
    TokenDelta,
)
from common.settings import FetchSettings, LLMSettings, MethodSettings, SearchSettings, Settings
from common.types import RunStatus, Task
from core.article.article import Article
from core.article.citations import cited_numbers, mark_order, strip_marks
from core.article.markdown import link_target, to_markdown
from core.clients import Clients
from core.methods import METHODS
from core.methods.helpers import SHORTER
from tests.helpers import collect

#: Most tokens per call, by role: enough for a few lines in the model's shapes (headings, labels,
#: lists), never a rambling run to the end of the context window; most answers still reach
#: their cap (the "cut" column of ``python -m bench.real_model``), so cut endings are met. A
#: revision may be longer than the draft it revises. Written tokens are most of these tests'
#: CPU (about 20 CPU-ms each, a prompt token's 5: ``python -m bench.tiny_model``); a third fewer
#: than the 96/48/128/32 before took the real-model tests from 429 to 372 CPU-s of the machine
#: (``pytest -n 2 -m real_model``, 2 cores).
CAPS = {"draft": 64, "query": 32, "revise": 96, "judge": 24}
#: The writing and QA tasks of the tests; the local web has pages on both (Python 3, Mercurial).
WRITING = Task("Write a short history of Python 3 and its ecosystem.")
QA = Task("Which version of Mercurial was the first to support Python 3?", "qa")
#: Method parameters that shrink iterations (the keys of each core/methods module's docstring).
PARAMS = {
    "itrg.iterations": "2", "itrg.top_k": "2",
    "aag.max_queries": "1", "aag.procedures": "1", "aag.critic_cycles": "1",
    "furepa.n": "2", "furepa.iterations": "2",
}
#: Two steps revised (a first, and one that reads the revision before it), two pages a step: with
#: three steps the real-model tests took 372 CPU-s of the machine, with two 328.
METHOD = {"max_steps": 2, "k": 2, "passage_tokens": 150, "passage_size": 100}


class CappedLLM:
    """The app's LLM client with each call's max_tokens capped by role (``caps``); the rest is the client's."""

    def __init__(self, inner: Any, caps: dict[str, int]):
        self.inner = inner
        self.caps = caps

    def _cap(self, role: str, asked: int | None) -> int | None:
        cap = self.caps.get(role)
        if cap is None:
            return asked
        return min(asked, cap) if asked else cap

    def stream(self, messages, *, role: str, temperature: float | None = None, max_tokens: int | None = None):
        return self.inner.stream(messages, role=role, temperature=temperature, max_tokens=self._cap(role, max_tokens))

    async def complete(self, messages, *, role: str, temperature: float | None = None, max_tokens: int | None = None):
        return await self.inner.complete(messages, role=role, temperature=temperature,
                                         max_tokens=self._cap(role, max_tokens))

    def __getattr__(self, name: str) -> Any:  # aclose, check, context_window...
        return getattr(self.inner, name)


@dataclass(frozen=True)
class CappedClients(Clients):
    caps: dict[str, int] = field(default_factory=dict, hash=False)

    def llm(self, *, system: str = ""):
        return CappedLLM(super().llm(system=system), self.caps)


def settings_for(base_url: str, model: str, searxng_url: str, db_path: Path, *,
                 params: dict[str, str] | None = None, **method: Any) -> Settings:
    """Settings for a run on the tiny model over the local web: greedy decoding (temperature 0;
    FuRePA still samples at its own temperatures), few steps, small k and passage budget."""
    return Settings(
        llm=LLMSettings(base_url=base_url, model=model, timeout=120, max_retries=1, backoff=0.5, temperature=0.0),
        search=SearchSettings(providers=("searxng",), searxng_url=searxng_url, retries=1, backoff=0.05),
        fetch=FetchSettings(allow_private_urls=True, timeout=5, step_deadline=10),
        method=MethodSettings(**{**METHOD, **method}, params=dict(PARAMS if params is None else params)),
        db_path=db_path,
    )


def build_app(settings: Settings, caps: dict[str, int] | None = None) -> app_module.App:
    """``app.build(settings)`` with the runner's LLM calls capped (``CAPS`` unless given)."""
    built = app_module.build(settings)
    clients = CappedClients(settings, cache=built.clients.cache, corpus_db=built.clients.corpus_db,
                            caps=dict(CAPS if caps is None else caps))
    built.runner.clients = clients
    return replace(built, clients=clients)


async def run(app: app_module.App, method: str, task: Task) -> list[Event]:
    """Every event of one run, as the UI gets them."""
    return await collect(app.runner.start(method, task))


# -- the invariants ------------------------------------------------------------------------------
_TYPED = set()
_todo: list[type] = [RatStudioError]
while _todo:
    _cls = _todo.pop()
    _TYPED.add(_cls.__name__)
    _todo.extend(_cls.__subclasses__())
#: What a user must never read in an error: a traceback, an exception's repr, an object's address.
_UNREADABLE = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\(|object at 0x")


def _short(text: str, n: int = 300) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 3] + "...")


def _chars(text: str) -> int:
    """Characters without layout (blank lines, indentation)."""
    return len(" ".join(text.split()))


def _loss_notes(events: Sequence[Event]) -> list[str]:
    """What could explain text lost in a run: refused revisions (StepRevised.guarded), warning
    Notes on a step other than a replaced query or a retried call, and the Notes that a used
    revision is shorter than the text it replaced (information when it kept 90% or more)."""
    why = [f"step {e.i} guarded: {g}" for e in events
           if isinstance(e, StepRevised) and (g := getattr(e, "guarded", ""))]
    why += [e.text for e in events if isinstance(e, Note) and e.i >= 1
            and (e.level == "warning" or SHORTER in e.text)
            and not e.text.startswith("The model's query") and " call failed: " not in e.text]
    return why


def drafted(events: Sequence[Event]) -> DraftReady | None:
    """The run's last step-by-step draft (a DraftReady right after a "draft" call; AAG's outline,
    written by its "query" call, is no draft of the text)."""
    last_call, draft = None, None
    for e in events:
        if isinstance(e, LLMCalled):
            last_call = e.role
        elif isinstance(e, DraftReady) and last_call == "draft":
            draft = e
    return draft


def _citation_problems(final: Final, events: Sequence[Event]) -> list[str]:
    found = []
    if final.cited and " ".join(strip_marks(final.cited).split()) != " ".join(strip_marks(final.text).split()):
        found.append(f"6. the cited text is not the final text with marks: {_short(final.cited)}")
    numbers = {s.n for s in final.sources}
    marks = cited_numbers(final.cited)  # every form: [1], [1, 2], [2-4]
    if marks - numbers:
        found.append(f"6. marks {sorted(marks - numbers)} name no source of the run ({sorted(numbers)})")
    from_pages = {p.url for e in events if isinstance(e, PassagesChosen) for p in e.passages if not p.snippet}
    for s in final.sources:
        if s.read and s.url not in from_pages:
            found.append(f"6. source [{s.n}] {s.url} is listed as read but no passage of its page was used")
    if not 0 <= final.supported <= final.sentences:
        found.append(f"6. {final.supported} of {final.sentences} sentences supported")
    # the export, in the readers' numbering: the cited sources 1..n in order of their first mark,
    # the others listed with no number and saying no sentence cites them
    article = Article("task", final.text, final.sources, cited=final.cited or final.text).renumbered()
    if " ".join(strip_marks(article.cited).split()) != " ".join(strip_marks(final.cited or final.text).split()):
        found.append(f"6. renumbering the marks changed the text: {_short(article.cited)}")
    cited = [s.n for s in article.sources if s.n > 0]
    if cited != list(range(1, len(cited) + 1)) or mark_order(article.cited) != cited:
        found.append(f"6. the export numbers its sources {cited}, its marks name {mark_order(article.cited)}: "
                     "not 1..n in order of the first mark")
    if sorted(s.url for s in article.sources) != sorted(s.url for s in final.sources):
        found.append("6. the export does not list the run's sources, each once")
    listed = to_markdown(article).splitlines()
    for s in article.sources:
        line = next((x for x in listed if f"]({link_target(s.url)})" in x), "")
        if s.n == 0 and (not line.startswith("- ") or "no sentence cites it" not in line):
            found.append(f"6. a source no sentence names is listed as if cited: {line}")
        if s.n > 0 and not line.startswith(f"{s.n}. "):
            found.append(f"6. cited source [{s.n}] is not listed under its number: {line}")
    return found


def problems(app: app_module.App, method: str, events: Sequence[Event]) -> list[str]:
    """Each invariant the run broke, with the real text that broke it ([] when it kept them all):

    1. it ends with Final, or with a Failed whose message is a typed error (a RatStudioError) a
       user can read: no traceback, no exception repr;
    2. every source of the Final is a URL the run read (PageRead ok) or passed on as passages;
    3. no text is lost silently: a Final shorter than the draft's steps joined comes with a
       refused revision or a warning Note on a step that says why;
    4. no StepRevised has an empty ``after`` unless it was skipped, guarded or a Note explains;
    5. the stored run matches the events: the events themselves, the status (``unsourced`` when a
       method that searches ends with no source at all), the final text or the error;
    6. citations: the marked text is the final text plus marks (no word lost or added), each [n]
       names a source of the run, a source listed as read had a passage of its page (not a
       snippet) chosen, the counts add up, and the export numbers the cited sources 1..n in order of
       their first mark and lists the others with no number, saying no sentence cites them.
    """
    found: list[str] = []
    if not events or not isinstance(events[0], RunStarted):
        return [f"the run did not start: {events[:1]!r}"]
    end = events[-1]
    final = end if isinstance(end, Final) else None
    if isinstance(end, Failed):
        if end.error_type not in _TYPED:
            found.append(f"1. it failed with an untyped error {end.error_type}: {_short(end.error)}")
        if _UNREADABLE.search(end.error):
            found.append(f"1. its error is not readable: {_short(end.error)}")
    elif final is None:
        found.append(f"1. it ended with {type(end).__name__}, neither Final nor Failed")

    if final is not None:
        read = {e.url for e in events if isinstance(e, PageRead) and e.status == "ok"}
        passed = {p.url for e in events if isinstance(e, PassagesChosen) for p in e.passages}
        for s in final.sources:
            if s.url not in read | passed:
                found.append(f"2. source [{s.n}] {s.url} was neither read nor passed as a passage in this run")
        draft = drafted(events)
        if draft is not None:
            joined = "\n\n".join(draft.steps)
            if _chars(final.text) < _chars(joined) and not _loss_notes(events):
                shrinks = [e for e in events if isinstance(e, StepRevised) and _chars(e.after) < _chars(e.before)]
                worst = min(shrinks, key=lambda e: _chars(e.after) - _chars(e.before), default=None)
                detail = (f"; step {worst.i} went from {_chars(worst.before)} to {_chars(worst.after)} characters: "
                          f"{_short(worst.before, 160)} -> {_short(worst.after, 160)}") if worst else ""
                found.append(f"3. the final text ({_chars(final.text)} characters) is shorter than the draft "
                             f"({_chars(joined)}) and no Note says why{detail}")

    if final is not None:
        found += _citation_problems(final, events)

    for e in events:
        if isinstance(e, StepRevised) and not e.after.strip() and not (e.skipped or getattr(e, "guarded", "")):
            if not any(isinstance(n, Note) and n.i == e.i and n.level == "warning" for n in events):
                found.append(f"4. step {e.i}'s revision is empty and no Note explains it (before: {_short(e.before)})")

    run_id = events[0].run_id
    stored = app.store.events(run_id)
    live = [e for e in events if not isinstance(e, TokenDelta)]
    if stored != live:
        found.append(f"5. the stored events differ from the live ones ({len(stored)} stored, {len(live)} live)")
    row = app.store.get_run(run_id)
    unsourced = getattr(RunStatus, "UNSOURCED", "unsourced")
    if final is not None:
        expected = unsourced if METHODS[method].uses_search and not final.sources else RunStatus.DONE
        if row.status != expected:
            found.append(f"5. the run is stored as {row.status!r}, expected {str(expected)!r} "
                         f"({len(final.sources)} sources)")
        if row.final_text != final.text:
            found.append(f"5. the stored final text differs: {_short(row.final_text)} != {_short(final.text)}")
    elif isinstance(end, Failed) and (row.status != RunStatus.FAILED or row.error != end.error):
        found.append(f"5. the stored run says {row.status!r} / {_short(row.error)}, "
                     f"the events Failed: {_short(end.error)}")
    return found
