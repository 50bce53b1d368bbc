"""Plain-text views of a run, shared by the CLI and exports: one progress line per event, and
the article as Markdown with its numbered sources."""

from __future__ import annotations

import html
import re

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
from core.citations import cited_numbers, summary


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
            unread = sum(not s.read for s in sources)
            line += f" ({unread} of them search snippets only)" if unread else ""
            line += f", {citation_line(event)}" if event.sentences else ""
            line += f", {len(unchecked)} step{'s' if len(unchecked) != 1 else ''} not checked against a source" \
                if unchecked else ""
            return line + (f"; {CUT_TEXT}" if event.cut else "")
        case Failed(error=error, resumable=resumable):
            return f"failed: {error}" + (" (resumable)" if resumable else "")
    return None


CUT = "the text ends where the model's answer was cut at the token limit, so its end is missing"
CUT_TEXT = f"{CUT} (raise --max-tokens)"  # the CLI's and the exports' words; the Writer names where to raise it


def citation_line(final: Final) -> str:
    """'7 of 9 sentences cited, 1 mark removed' for a run's Final."""
    return summary(final.supported, final.sentences, final.marks_removed)


def to_markdown(task: str, text: str, sources: tuple[Source, ...] | list[Source], *, title: str | None = None,
                unchecked: tuple[str, ...] | list[str] = (), unsourced: str = "", cited: str = "",
                cut: bool = False) -> str:
    """The article with a numbered source list that says which steps used each source, and
    the steps that were never checked against a source (``unchecked``, one line each). With
    ``cited`` (the text with its [n] marks, ``core.citations``), that is the text written. A
    source whose page was never read (only its search snippet was used) is listed apart, with
    why. With ``unsourced`` (the cause), a warning above the text says no part of it was
    checked. With ``cut``, a line under the text says its end is missing (cut at the token limit).
    Titles and the task are written as text: Markdown and HTML in them are escaped."""
    parts = [f"# {escape_text(title or _short(task, 120))}", ""]
    if unsourced:
        parts += [f"> **Unsourced**: no part of this text was checked against retrieved text ({unsourced}).", ""]
    parts += [(cited or text).strip(), ""]
    if cut:
        parts += [f"> **Cut short**: {CUT_TEXT}.", ""]
    read = [s for s in sources if s.read]
    snippets = [s for s in sources if not s.read]
    marked = cited_numbers(cited) if cited else None
    if read:
        parts += ["## Sources", ""]
        parts += [f"{s.n}. [{escape_text(s.title or s.url)}]({link_target(s.url)}){used_in(s, marked)}"
                  for s in read]
        parts.append("")
    if snippets:
        parts += ["## Search snippets only (page not read)", ""]
        parts += [f"{s.n}. [{escape_text(s.title or s.url)}]({link_target(s.url)}){used_in(s, marked)}; the page "
                  f"was not read: {escape_text(s.why or 'unknown reason')}" for s in snippets]
        parts.append("")
    if unchecked and not unsourced:
        parts += ["## Not checked against a source", ""]
        parts += [f"- {line[0].upper()}{line[1:]}" for line in unchecked]
        parts.append("")
    return "\n".join(parts)


def used_in(source: Source, marked: set[int] | None = None) -> str:
    """' — used in steps 2, 3' ('' for a source no step names). With ``marked`` (the numbers
    the text's [n] marks name), a source no mark names says so: a step was checked against the
    page, but no sentence of the text matches it closely enough to be cited."""
    said = []
    if source.steps:
        label = "step" if len(source.steps) == 1 else "steps"
        said.append(f"used in {label} " + ", ".join(str(x) for x in source.steps))
    if marked is not None and source.n not in marked:
        said.append("no sentence cites it")
    return " — " + "; ".join(said) if said else ""


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def escape_text(text: str) -> str:
    """``text`` (a page title, a task) on one line, to be read as plain text in Markdown: HTML
    is escaped (``<script>`` shows as written, never runs) and Markdown's punctuation
    backslash-escaped."""
    one = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(one, quote=False))


def link_target(url: str) -> str:
    """``url`` as a Markdown link target: spaces, brackets and angle brackets percent-encoded,
    so the URL cannot end the link early or open an HTML tag."""
    table = {" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", "[": "%5B", "]": "%5D", "\n": "", "\r": ""}
    return "".join(table.get(ch, ch) for ch in url.strip())


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
    if guarded:  # --min-keep is named only where it refused a revision: it cannot help a talk or a cut reply
        also = ", or lower --min-keep" if any("--min-keep" in e.guarded for e in guarded) else ""
        return (f"the model's revisions were refused at {len(guarded)} step(s), e.g. it {guarded[-1].guarded}: "
                f"try a larger model{also}")
    if not searches:
        return "no search was made: the method found nothing to look up"
    return "no retrieved text was used: see the steps' notes"
