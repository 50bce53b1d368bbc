"""Plain-text views of a run, shared by the CLI and exports: one progress line per event, and
the article as Markdown with its numbered sources."""

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
from common.types import Source


def _short(text: str, width: int = 90) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def progress_line(event: Event) -> str | None:
    """One line for the person watching a run in a terminal, or None for events not shown."""
    match event:
        case RunStarted(run_id=run_id, method=method, resumed=resumed):
            return f"{'resuming' if resumed else 'run'} {run_id} ({method})"
        case DraftReady(steps=steps):
            lines = [f"draft: {len(steps)} steps"]
            lines += [f"  {n}. {_short(s)}" for n, s in enumerate(steps, start=1)]
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
            return line + (f", {len(unchecked)} steps not checked against a source" if unchecked else "")
        case Failed(error=error, resumable=resumable):
            return f"failed: {error}" + (" (resumable)" if resumable else "")
    return None


def to_markdown(task: str, text: str, sources: tuple[Source, ...] | list[Source], *, title: str | None = None,
                unchecked: tuple[str, ...] | list[str] = (), unsourced: str = "") -> str:
    """The article with a numbered source list that says which steps used each source, and
    the steps that were never checked against a source (``unchecked``, one line each). With
    ``unsourced`` (the cause), a warning above the text says no part of it was checked."""
    parts = [f"# {title or _short(task, 120)}", ""]
    if unsourced:
        parts += [f"> **Unsourced**: no part of this text was checked against retrieved text ({unsourced}).", ""]
    parts += [text.strip(), ""]
    if sources:
        parts += ["## Sources", ""]
        for s in sources:
            where = ""
            if s.steps:
                label = "step" if len(s.steps) == 1 else "steps"
                where = f" — used in {label} " + ", ".join(str(x) for x in s.steps)
            title_text = s.title.replace("[", "(").replace("]", ")") or s.url
            parts.append(f"{s.n}. [{title_text}]({s.url}){where}")
        parts.append("")
    if unchecked and not unsourced:
        parts += ["## Not checked against a source", ""]
        parts += [f"- {line[0].upper()}{line[1:]}" for line in unchecked]
        parts.append("")
    return "\n".join(parts)


def unsourced_cause(events: list[Event]) -> str:
    """Why a run used no source, and what to do, in one line: read from its events (the last
    draft's steps on)."""
    last_draft = max((k for k, e in enumerate(events) if isinstance(e, DraftReady)), default=0)
    events = events[last_draft:]
    searches = [e for e in events if isinstance(e, SearchDone)]
    pages = [e for e in events if isinstance(e, PageRead)]
    guarded = [e for e in events if isinstance(e, StepRevised) and e.guarded]
    if searches and all(s.error for s in searches):
        return f"search failed for every step: {searches[-1].error}"
    if searches and not any(s.results for s in searches if not s.error):
        return ("no search returned any result: try another provider (--search ddg,searxng,corpus) "
                "or a task with more common words")
    if pages and not any(p.status == "ok" for p in pages):
        return (f"no page could be read ({len(pages)} tried; last: {pages[-1].error}): try another search "
                "provider, or --corpus with local files")
    if guarded:
        return (f"the model's revisions were refused at {len(guarded)} step(s), e.g. it {guarded[-1].guarded}: "
                "try a larger model, or lower --min-keep")
    if not searches:
        return "no search was made: the method found nothing to look up"
    return "no retrieved text was used: see the steps' notes"
