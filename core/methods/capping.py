"""Each call's token cap (``core.text.caps``, where caps are sized by role) within the run's
context window: a method passes ``max_tokens=within(ctx, caps.revise(text, n), prompt)``, and a
cap that would not fit beside its prompt is left out (``core.text.caps.fit``)."""

from __future__ import annotations

from common.types import Task
from core.methods.base import MethodContext
from core.methods.helpers import context_tokens
from core.text import caps


def within(ctx: MethodContext, cap: caps.Cap, prompt: str | list[dict]) -> caps.Cap | None:
    """``cap``, or None when it would not fit beside ``prompt`` in the context window
    (--context-tokens, else what the server reports)."""
    return caps.fit(cap, prompt, context_tokens(ctx))


def whole_answer(ctx: MethodContext, task: Task, prompt: str | list[dict]) -> caps.Cap | None:
    """The cap of a draft or a whole answer to ``task`` (by its kind and --max-steps), within
    the window beside ``prompt``."""
    return within(ctx, caps.draft(task.kind, ctx.settings.max_steps), prompt)


def cut_advice(ctx: MethodContext, completion_tokens: int, cap: int | None) -> str:
    """Which limit cut an answer of ``completion_tokens`` tokens that was sent with ``cap``, and
    its fix (``core.text.caps.cut_advice``): the call's own cap, --max-tokens (the client's
    setting, ``ctx.llm.settings.max_tokens``) or the context window."""
    settings = getattr(ctx.llm, "settings", None)
    return caps.cut_advice(completion_tokens, cap, getattr(settings, "max_tokens", None), context_tokens(ctx))
