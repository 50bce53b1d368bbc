"""Helpers that yield events and also return a result.

A method is an async generator of events, and so are the pieces it is made of: one LLM call
(``generate``), one retrieval (``retrieve``), one phase of a method (AAG's critic loop). Such a
piece must pass its events on *and* give its caller a result (the text, the passages), but an
async generator cannot ``return`` a value. So the piece ends with ``yield Return(value)``, and
the :func:`returning` decorator makes a call to it give back a :class:`Returning`: iterate it to
pass the events on (the ``Return`` is kept, not passed on), then read ``.result``::

    @returning
    async def ask(ctx, prompt) -> AsyncIterator[Event | Return[str]]:
        ...                      # yield events
        yield Return(text)       # instead of `return text`

    answer = ask(ctx, prompt)
    async for event in answer:   # the events, in order
        yield event
    text = answer.result

This is the one way a method's helpers hand back results, in every method and in retrieval.
Standard library and common.events only, so both ``core.retrieval.pipeline`` and ``core.methods`` can
import it.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

from common.events import Event

T = TypeVar("T")
P = ParamSpec("P")

_UNSET: Any = object()


@dataclass(frozen=True)
class Return(Generic[T]):
    """The last item a :func:`returning` helper yields: what it returns."""

    value: T


class Returning(Generic[T]):
    """A running helper: an async iterator of its events, then its ``result``."""

    def __init__(self, items: AsyncIterator[Event | Return[T]]):
        self._items = items
        self._result: T = _UNSET

    def __aiter__(self) -> Returning[T]:
        return self

    async def __anext__(self) -> Event:
        while True:
            item = await self._items.__anext__()  # StopAsyncIteration ends the events
            if not isinstance(item, Return):
                return item
            self._result = item.value

    async def aclose(self) -> None:
        close = getattr(self._items, "aclose", None)
        if close is not None:
            await close()

    @property
    def result(self) -> T:
        """What the helper returned. Raises RuntimeError when read before the helper yielded
        its ``Return`` (iterate it to the end first)."""
        if self._result is _UNSET:
            raise RuntimeError("The helper has not returned yet: iterate its events to the end before "
                               "reading .result (and end the helper with `yield Return(value)`).")
        return self._result


def returning(fn: Callable[P, AsyncIterator[Event | Return[T]]]) -> Callable[P, Returning[T]]:
    """Make an async generator function that ends with ``yield Return(value)`` return a
    :class:`Returning` (see the module docstring)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> Returning[T]:
        return Returning(fn(*args, **kwargs))

    return call
