"""A run is a stream of events. Every method is an async generator of these small frozen
dataclasses; the runner stores each one the moment it happens and passes it on, and the UI,
the CLI, history, replay and the arena all read the same events.

Step numbers ``i`` are 1-based, as in the paper (T_1..T_n). Events that belong to no step
use ``i = 0``.

``TokenDelta`` and ``ThinkingDelta`` are the events that are not stored (one row per token would
be most of the database); replay re-types the stored texts instead (a call's thinking is stored
whole on its ``LLMCalled``).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from common.types import Passage, SearchResult, Source


@dataclass(frozen=True)
class Event:
    persist: ClassVar[bool] = True

    @property
    def type(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RunStarted(Event):
    run_id: str
    method: str
    task: str
    resumed: bool = False
    budget_tokens: int | None = None  # the run's token budget from here on (--budget-tokens); None: no cap


@dataclass(frozen=True)
class DraftReady(Event):
    """The initial step-by-step draft T_1..T_n (or a method's plan), split into steps."""

    steps: tuple[str, ...]


@dataclass(frozen=True)
class StepStarted(Event):
    i: int
    thought: str
    n: int = 0  # how many steps in all, for "step i of n"


@dataclass(frozen=True)
class QueryMade(Event):
    i: int
    query: str


@dataclass(frozen=True)
class SearchDone(Event):
    i: int
    query: str
    results: tuple[SearchResult, ...]
    provider: str = ""
    seconds: float = 0.0
    cached: bool = False
    error: str = ""  # set when every provider failed; the step goes on without pages
    warnings: tuple[str, ...] = ()  # e.g. "ddg rate-limited, used searxng"


@dataclass(frozen=True)
class PageRead(Event):
    i: int
    url: str
    title: str
    status: str  # "ok" or "error"
    error: str = ""
    chars: int = 0
    seconds: float = 0.0
    cached: bool = False


@dataclass(frozen=True)
class PassagesChosen(Event):
    i: int
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class StepRevised(Event):
    """Step i was revised: ``before`` is the text the revision call was given to revise and
    ``after`` the text after it. ``sources`` are the URLs of the passages it was shown (none
    when the step was kept as it was); ``article`` is the whole text as it stands after this
    step (what resume continues from). When the model's reply was refused (core.text.guards), the
    text is kept (``after == before``), ``guarded`` says why and ``rejected`` holds the reply."""

    i: int
    before: str
    after: str
    sources: tuple[str, ...] = ()
    article: str = ""
    skipped: str = ""  # why the step was kept as it was (no page could be read, ...)
    guarded: str = ""  # why the model's revision was refused ("it is empty", ...)
    rejected: str = ""  # the refused revision, as the model wrote it

    @property
    def checked(self) -> bool:
        """True when the step's text was revised against retrieved text."""
        return bool(self.sources) and not self.skipped and not self.guarded


@dataclass(frozen=True)
class SourcesUsed(Event):
    """Step i used the passages of ``urls`` without revising a step (RAG's answer, AAG's
    summaries). The runner numbers an article's sources from these and ``StepRevised.sources``."""

    i: int
    urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class LLMCalled(Event):
    """One finished call to the model; the runner counts tokens, calls and time from these."""

    role: str
    model: str
    i: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    estimated: bool = False  # True when the server sent no usage and we counted ourselves
    cut_ending: str = ""  # an answer the token limit cut short: its last words (core.article.sources.cut_ending)
    #: What a reasoning model thought before answering, kept apart from the answer (shown folded
    #: under its step; never part of a draft, query, revision or article), and its tokens: part of
    #: ``completion_tokens``, which counts every token the model wrote.
    thinking: str = ""
    thinking_tokens: int = 0


@dataclass(frozen=True)
class TokenDelta(Event):
    persist: ClassVar[bool] = False

    role: str
    text: str
    i: int = 0
    reset: bool = False  # the call was retried: drop what was shown for it so far (its thinking too)


@dataclass(frozen=True)
class ThinkingDelta(Event):
    """A piece of a reasoning model's thinking as it streams, apart from the answer's
    TokenDelta; the whole thinking is stored on the call's LLMCalled."""

    persist: ClassVar[bool] = False

    role: str
    text: str
    i: int = 0


@dataclass(frozen=True)
class Note(Event):
    """Something the person watching should know that is not an error (a retry, a fallback)."""

    text: str
    i: int = 0
    level: str = "info"  # info | warning


@dataclass(frozen=True)
class Final(Event):
    """The run's result. A method yields only ``text``; the runner fills the rest from the
    run's events (``core.article.sources.SourceBook``) before storing and passing it on. ``unchecked``:
    one line per step whose text was never checked against retrieved text, e.g. "step 2: no
    page could be read; kept as drafted". ``cited``: the text with its [n] marks
    (``core.article.citations``), ``sentences`` of it, ``supported`` by a source, and ``marks_removed``:
    marks the model wrote that named no passage of their step. ``cut``: the text ends as an answer
    the token limit cut short ended, so its end is missing."""

    text: str
    sources: tuple[Source, ...] = ()
    unchecked: tuple[str, ...] = ()
    cited: str = ""
    sentences: int = 0
    supported: int = 0
    marks_removed: int = 0
    cut: bool = False  # the text ends where a model's answer was cut at the token limit: its end is missing


@dataclass(frozen=True)
class StepRedone(Event):
    """The author asked for step i to be done again after the run ended (or stopped): ``action``
    "regenerate" (the same query and passages, a new revision), "search" (the author's own
    ``query``, then retrieval and revision) or "exclude" (the step's query again with the pages of
    ``exclude`` left out, then revision). ``at``: when it was asked (ISO time, set by the runner).
    "instruct" revises the step with the author's ``instruction`` (one line, put in the revision
    prompt as the author's text) beside its stored passages, or beside the pages of ``query`` when
    one is given. Stored before the method runs again; the method reads it from the run's events, so a redo
    that stops half-way continues as any run does. Earlier revisions of the step stay in the events.
    "add" (``ADD``) puts a new step at position i, the author's one line (``instruction``) as its
    draft, then searches for it (``query`` when given) and revises it: the steps from i on move one
    place down, for every event stored before it (``renumbered``). "instruct-all" (``EVERY``, with
    ``i`` 1) revises every step again with the author's ``instruction``, each beside its stored
    passages: the instruction for the whole article."""

    i: int
    action: str
    query: str = ""
    exclude: tuple[str, ...] = ()
    at: str = ""
    instruction: str = ""  # "instruct": what the author asked of the revision ("" for the other actions)


#: The StepRedone action that adds a step (a section the author asks for) at position ``i``.
ADD = "add"
#: The StepRedone action that revises every step with the author's one instruction (the whole article).
EVERY = "instruct-all"


def shifted(e: Event, at: int, thought: str = "") -> Event:
    """``e`` numbered as it reads once a step is added at position ``at``: a step number from
    ``at`` on moves one down, a step count grows by one, and a draft gets ``thought`` (the added
    step's draft) in its place."""
    if isinstance(e, DraftReady):
        return DraftReady(steps=(*e.steps[: at - 1], thought, *e.steps[at - 1:]))
    i = getattr(e, "i", 0)
    if not isinstance(i, int) or i < at:  # (0: no step; an earlier step keeps its number)
        return e
    n = getattr(e, "n", 0)
    return dataclasses.replace(e, i=i + 1, **({"n": n + 1} if isinstance(e, StepStarted) and n else {}))


def renumbered(events: typing.Iterable[Event]) -> list[Event]:
    """A run's events with every step numbered as the run reads now: each event stored before a
    step was added (a StepRedone ``ADD``) is :func:`shifted` past it, as if the added step had
    been in the draft from the start, not yet revised. The events themselves when none was added."""
    events = list(events)
    adds = [k for k, e in enumerate(events) if isinstance(e, StepRedone) and e.action == ADD]
    for k in adds:
        add = events[k]
        events[:k] = [shifted(e, add.i, add.instruction) for e in events[:k]]
    return events


@dataclass(frozen=True)
class Failed(Event):
    error: str
    resumable: bool = False
    error_type: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        RunStarted, DraftReady, StepStarted, QueryMade, SearchDone, PageRead, PassagesChosen,
        StepRevised, SourcesUsed, LLMCalled, TokenDelta, ThinkingDelta, Note, Final, Failed, StepRedone,
    )
}

_NESTED = {"SearchResult": SearchResult, "Passage": Passage, "Source": Source}


def _decoder(hint: Any) -> Callable[[Any], Any] | None:
    """How a stored value of a field typed ``hint`` is rebuilt: a tuple of its items rebuilt in
    turn, a nested dataclass from its dict (its tuple fields from lists); None where the stored
    value is the value (a str, a number, a dict of plain values)."""
    if typing.get_origin(hint) is tuple:
        inner = _decoder(typing.get_args(hint)[0])
        return tuple if inner is None else (lambda value: tuple(inner(v) for v in value))
    if isinstance(hint, type) and hint.__name__ in _NESTED:
        cls = _NESTED[hint.__name__]
        tuples = [name for name, h in _hints(cls).items() if typing.get_origin(h) is tuple]

        def nested(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            data = dict(value)
            for name in tuples:
                if name in data:
                    data[name] = tuple(data[name])
            return cls(**data)
        return nested
    return None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s field types, resolved once per class: typing.get_type_hints evaluates every
    annotation's string anew on each call, which was most of the time reading a run's events took."""
    return typing.get_type_hints(cls)


@functools.cache
def _decoders(cls: type) -> dict[str, Callable[[Any], Any] | None]:
    """Each field of ``cls`` and its ``_decoder``, worked out once per class: reading a run reads
    every event it stored, and asking typing of each field's type again for each was a third of
    that time."""
    hints = _hints(cls)
    return {f.name: _decoder(hints[f.name]) for f in dataclasses.fields(cls)}


def event_from_dict(type_name: str, payload: dict[str, Any]) -> Event:
    """Rebuild a stored event. Raises KeyError for an unknown type name."""
    cls = EVENT_TYPES[type_name]
    decoders = _decoders(cls)
    kwargs = {k: v if (decode := decoders[k]) is None else decode(v) for k, v in payload.items() if k in decoders}
    return cls(**kwargs)
