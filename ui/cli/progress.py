"""A run as the terminal shows it: one progress line per event, on standard error."""

from __future__ import annotations

from common.events import (
    DraftReady,
    Event,
    Failed,
    Final,
    Note,
    PageRead,
    PassagesChosen,
    QueryMade,
    RunStarted,
    SearchDone,
    StepRevised,
    StepStarted,
)
from core.article.article import CUT_TEXT
from core.article.citations import citation_line
from core.text.oneline import short


def progress_line(event: Event) -> str | None:
    """One line for the person watching a run in a terminal, or None for events not shown."""
    match event:
        case RunStarted(run_id=run_id, method=method, resumed=resumed):
            return f"{'resuming' if resumed else 'run'} {run_id} ({method})"
        case DraftReady(steps=steps):
            lines = [f"draft: {len(steps)} steps"]
            lines += [f"  {n}. {short(s)}" for n, s in enumerate(steps, start=1)]
            return "\n".join(lines)
        case StepStarted(i=i, n=n):
            return f"step {i} of {n}"
        case QueryMade(i=i, query=query):
            return f"  query: {query}"
        case SearchDone(error=error) if error:
            return f"  search failed: {error}"
        case SearchDone(results=results, provider=provider, cached=cached, warnings=warnings):
            extra = " (cached)" if cached else ""
            head = f"  search: {len(results)} results from {provider}{extra}"
            return "\n".join([head, *(f"  warning: {w}" for w in warnings)])
        case PageRead(status="ok", url=url, chars=chars, seconds=seconds):
            return f"    ok    {url} ({chars:,} chars, {seconds:.2f} s)"
        case PageRead(url=url, error=error):
            return f"    error {url}: {error}"
        case PassagesChosen(passages=passages):
            return f"  passages: {len(passages)} chosen, {sum(p.tokens for p in passages):,} tokens"
        case StepRevised(i=i, before=before, after=after, skipped=skipped):
            if skipped:
                return f"  step {i} kept: {skipped}"
            return f"  revised step {i}: {len(before):,} -> {len(after):,} chars"
        case Note(text=text, level=level):
            return f"  {level}: {text}"
        case Final(text=text, sources=sources, unchecked=unchecked):
            line = f"done: {len(text):,} chars, {len(sources)} sources"
            unread = sum(not s.read for s in sources)
            line += f" ({unread} of them search snippets only)" if unread else ""
            line += f", {citation_line(event)}" if event.sentences else ""
            line += f", {len(unchecked)} step{'s' if len(unchecked) != 1 else ''} not checked against a source" \
                if unchecked else ""
            return line + (f"; {CUT_TEXT}" if event.cut else "")
        case Failed(error=error, error_type="BudgetExceeded"):
            return f"stopped: {error}"
        case Failed(error=error, resumable=resumable):
            return f"failed: {error}" + (" (resumable)" if resumable else "")
    return None


def tokens_line(spent: int, budget: int) -> str:
    """What a run with a token budget has spent of it, after each model call: "  1,234 / 2,500 tokens"."""
    return f"  {spent:,} / {budget:,} tokens"
