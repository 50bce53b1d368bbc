"""The registry of methods and the context a method receives. The helpers the methods share
(a streamed LLM call as events, the B.1 draft, parameters) are in ``core.methods.helpers``.

A method never touches openai, httpx or SQLite: it gets ``ctx.llm``, ``ctx.search``,
``ctx.fetch`` and ``ctx.settings``, and yields events (common.events). To resume an interrupted
run it reads ``ctx.prior``, the events the run stored before it stopped. It ends with
``Final(text=...)``; the runner fills in the sources, from the events.

Parameters. A method declares the ``--param KEY=VALUE`` keys it reads where it is registered
(``register(..., params=(Param(...), ...))``): key, default (the paper's value, whose type is
the parameter's), range or choices, and a one-line help. Keys are named by method family
(``itrg.iterations`` serves itrg-refine and itrg-refresh). ``core.methods.helpers.param`` reads
a value with the declared default and type; :func:`check_params` checks every given key and value
before any run is created.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from common.errors import ConfigError, TaskError
from common.events import Event, Final
from common.settings import MethodSettings
from common.types import Task


@dataclass
class MethodContext:
    llm: Any  # core.llm.LLMClient or anything with the same stream()/complete()
    search: Any  # core.retrieval.search.SearchChain
    fetch: Any  # core.retrieval.fetch.Fetcher
    settings: MethodSettings = field(default_factory=MethodSettings)
    prior: list[Event] = field(default_factory=list)  # events stored before a resume
    read_local: Callable[[str], tuple[str, str] | None] | None = None  # file:// corpus reader
    memory: Any = None  # core.procedures.ProcedureMemory: AAG's procedural memory
    # the article's sources so far, URL -> number (core.article.sources.SourceBook.numbers): prompts
    # label passages with these numbers (core.methods.helpers.numbers)
    numbers: Callable[[], dict[str, int]] | None = None


MethodFn = Callable[[Task, MethodContext], AsyncIterator[Event]]


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Param:
    """A method parameter, set with ``--param KEY=VALUE``. Its type is its default's (int,
    float, bool or str); ``low``/``high`` bound a number (inclusive), ``choices`` a string."""

    key: str
    default: int | float | bool | str
    help: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def kind(self) -> type:
        return type(self.default)

    def accepts(self) -> str:
        """What a value may be, e.g. "1-10", "0-1", "on-repeat|per-iteration", "yes|no"."""
        if self.choices:
            return "|".join(self.choices)
        if self.kind is bool:
            return "yes|no"
        if self.low is not None and self.high is not None:
            return f"{self.low:g}-{self.high:g}"
        if self.low is not None:
            return f">= {self.low:g}"
        if self.high is not None:
            return f"<= {self.high:g}"
        return "a whole number" if self.kind is int else ("a number" if self.kind is float else "text")

    def describe(self) -> str:
        """``itrg.iterations (1-10, default 5)``."""
        return f"{self.key} ({self.accepts()}, default {_shown(self.default)})"

    def parse(self, value: Any) -> int | float | bool | str:
        """``value`` (a string from the command line, or already typed) as this parameter's
        type, checked against its range or choices. Raises ValueError with the message to show,
        which names the key, the value and what is accepted."""
        try:
            typed = self._typed(value)
        except (TypeError, ValueError):
            raise ValueError(f"--param {self.key}={_shown(value)} is not {self._a_kind()}: "
                             f"use {self._hint()}.") from None
        if self.choices and typed not in self.choices:
            raise ValueError(f"--param {self.key}={_shown(value)} is not one of {', '.join(self.choices)} "
                             f"(default {_shown(self.default)}).")
        if isinstance(typed, (int, float)) and not isinstance(typed, bool) and (
                (self.low is not None and typed < self.low) or (self.high is not None and typed > self.high)):
            raise ValueError(f"--param {self.key}={_shown(value)} is out of range: use {self._hint()}.")
        return typed

    def _typed(self, value: Any) -> int | float | bool | str:
        kind = self.kind
        text = value.strip() if isinstance(value, str) else value
        if kind is bool:
            if isinstance(text, str):
                if text.lower() not in _TRUE | _FALSE:
                    raise ValueError(value)
                return text.lower() in _TRUE
            if isinstance(text, (bool, int)) and text in (0, 1):
                return bool(text)
            raise ValueError(value)
        if kind is int:
            if isinstance(text, bool):
                raise ValueError(value)
            if isinstance(text, float):
                if not text.is_integer():
                    raise ValueError(value)
                return int(text)
            return int(text)
        if kind is float:
            if isinstance(text, bool):
                raise ValueError(value)
            number = float(text)
            if not math.isfinite(number):
                raise ValueError(value)
            return number
        if not isinstance(text, str):
            raise ValueError(value)
        return text

    def _a_kind(self) -> str:
        return {int: "a whole number", float: "a number", bool: "yes or no"}.get(self.kind, "a known value")

    def _hint(self) -> str:
        if self.choices:
            return f"one of {', '.join(self.choices)} (default {_shown(self.default)})"
        if self.kind is bool:
            return f"yes or no (default {_shown(self.default)})"
        what = "a whole number" if self.kind is int else "a number"
        if self.low is not None and self.high is not None:
            what += f" from {self.low:g} to {self.high:g}"
        elif self.low is not None:
            what += f" of at least {self.low:g}"
        elif self.high is not None:
            what += f" of at most {self.high:g}"
        return f"{what} (default {_shown(self.default)})"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class MethodInfo:
    name: str
    description: str
    paper: str
    run: MethodFn
    resumable: bool = False
    uses_search: bool = True
    params: tuple[Param, ...] = ()
    #: ``redo(events, i, action=, query=, exclude=) -> StepRedone``: the method can do one of a
    #: run's steps again at the author's request (``core.runner.Runner.redo``); it checks the
    #: request against the run's events, raising TaskError naming the fix. None: it cannot.
    redo: Callable[..., Any] | None = None


METHODS: dict[str, MethodInfo] = {}
AUTHOR_QUERY_CHARS = 500  # an author's own query for a step (a redo's "search"): at most this long
AUTHOR_INSTRUCTION_CHARS = 1000  # an author's one line for a revision or a new section (issue 39): at most


def register(name: str, description: str, paper: str, *, resumable: bool = False,
             uses_search: bool = True, params: tuple[Param, ...] = (),
             redo: Callable[..., Any] | None = None) -> Callable[[MethodFn], MethodFn]:
    """Register ``fn`` as the method ``name``; ``params``: the ``--param`` keys it reads; ``redo``:
    see ``MethodInfo.redo``. Raises
    ValueError when a key is declared twice with different declarations (one family, one meaning)."""
    def deco(fn: MethodFn) -> MethodFn:
        for p in params:
            other = declared_param(p.key)
            if other is not None and other != p:
                raise ValueError(f"--param {p.key} is declared twice, differently: {other} and {p}.")
        METHODS[name] = MethodInfo(name, description, paper, fn, resumable, uses_search, tuple(params), redo)
        return fn

    return deco


def declared_param(key: str) -> Param | None:
    """The declaration of ``key`` by any registered method, or None."""
    for info in METHODS.values():
        for p in info.params:
            if p.key == key:
                return p
    return None


def methods_with_param(key: str) -> list[str]:
    """The registered methods that read ``key``, in registry order."""
    return [info.name for info in METHODS.values() if any(p.key == key for p in info.params)]


def check_params(methods: Iterable[str], params: Mapping[str, Any], *, strict: bool = True) -> None:
    """Check ``--param`` values ``params`` (key -> value) for a run of ``methods``, before any
    run is created. Every key must be declared by a registered method and every value must fit
    its declaration (type, range, choices). With ``strict``, a key must also be one that one of
    ``methods`` reads; without it, a key of another method passes (settings shared by runs of
    several methods, as in the UI). Unknown methods in ``methods`` are left to ``get_method``.
    Raises ConfigError, in one line, naming each bad key with the fix: the close key ("did you
    mean"), the methods a key belongs to, or the accepted range; and the valid keys."""
    names = [m for m in dict.fromkeys(methods) if m in METHODS]
    valid = {p.key: p for m in names for p in METHODS[m].params}
    problems: list[str] = []
    list_valid = False
    for key, value in params.items():
        declared = valid.get(key) or declared_param(key)
        if declared is None:
            close = difflib.get_close_matches(key, list(valid) or _all_keys(), n=1, cutoff=0.6)
            close = close or difflib.get_close_matches(key, _all_keys(), n=1, cutoff=0.6)
            problems.append(f"Unknown --param {key}" + (f": did you mean {close[0]}?" if close else "."))
            list_valid = True
            continue
        if strict and names and key not in valid:
            problems.append(f"--param {key} is a parameter of {', '.join(methods_with_param(key))}, "
                            f"not of {', '.join(names)}.")
            list_valid = True
            continue
        if value is None:
            continue
        try:
            declared.parse(value)
        except ValueError as exc:
            problems.append(str(exc))
    if not problems:
        return
    if list_valid:
        problems.append(_valid_keys(names, valid))
    raise ConfigError(" ".join(" ".join(p.split()) for p in problems))


def _all_keys() -> list[str]:
    return list(dict.fromkeys(p.key for info in METHODS.values() for p in info.params))


def _valid_keys(names: list[str], valid: dict[str, Param]) -> str:
    if not names:
        every = [declared_param(k) for k in _all_keys()]
        return "Valid keys: " + ", ".join(p.describe() for p in every if p) + "."
    if not valid:
        return f"{', '.join(names)} {'takes' if len(names) == 1 else 'take'} no --param."
    return f"Valid keys for {', '.join(names)}: " + ", ".join(p.describe() for p in valid.values()) + "."


def get_method(name: str) -> MethodInfo:
    """Raises TaskError naming the known methods."""
    try:
        return METHODS[name]
    except KeyError:
        raise TaskError(f"Unknown method {name!r}. Known methods: {', '.join(sorted(METHODS))}.") from None


def unsourced(method: str, final: Final) -> bool:
    """A method that searches ended with no page read: no source at all, or only search snippets
    (every source's page could not be read, ``Source.read`` is False): nothing it wrote was
    checked against a page. What makes a finished run's status "unsourced"."""
    return get_method(method).uses_search and not any(s.read for s in final.sources)
