"""Events to HTML and text, as pure functions (unit-tested; no gradio here).

A live run, a stored run and a replayed run all go through the same two steps: ``RunView.apply``
folds events (stored ones, plus the live ``TokenDelta``s) into a small view model, and the
``*_html`` functions render that model. Everything that came from the web or from a model is
escaped here, and only http(s) URLs become links: a page title can hold a ``<script>``.

Undoing a step's revision ("revert") is defined here too (``undo_mode``, ``article_text``). It
is offered when a run's revisions are revisions of its draft's steps, told from the events:
  paragraph   (rat-step) each revision rewrote only its own step: revision i was given T_i.
              Undoing step i swaps that one paragraph back to T_i; the others keep theirs.
  cumulative  (rat, rat-noncausal, cot-rag) each revision rewrote the answer so far: revision i
              was given the article after step i-1 followed by T_i (CoT+RAG: by T_i..T_n),
              and every later revision was made on top of it. Undoing step i gives the
              article as it stood after step i-1, followed by the draft's steps i..n as
              drafted: steps i..n are all undone.
Other methods (ITRG's rounds, AAG's critic loop, FuRePA's evidence) emit StepRevised events that
are not revisions of draft steps; their article is edited by hand only.

A revision the guards refused (core.guards: empty, talk about the task, too much text lost)
left its step as it stood; its card shows the refused reply, and in the two modes above the
author can take it (``take_choices``): in paragraph mode for that paragraph alone, in
cumulative mode as the answer up to that step, followed by the later steps as drafted.

The article's citations (``core.citations``) are shown by ``cited_html``: each [n] mark is a
``<details>`` that opens on the passage supporting its sentence and a link to its page, and a
sentence no source supports is underlined with a marker. ``cited_view`` gives the ``Cited`` of
the article as the author edited it, numbered like ``kept_sources`` so exports and the view agree.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from common.events import (
    DraftReady,
    Event,
    Failed,
    Final,
    LLMCalled,
    Note,
    PageRead,
    PassagesChosen,
    QueryMade,
    RunStarted,
    SearchDone,
    StepRevised,
    StepStarted,
    TokenDelta,
)
from common.types import Passage, Source
from core.citations import CITE_THRESHOLD, Cited, Mark
from core.docx_export import to_docx
from core.guards import strip_chatter
from core.prompts import join_steps, normalise_answer
from core.report import CUT, citation_line, to_markdown, unsourced_cause
from core.sources import SourceBook, unchecked_lines
from ui.diff import changed, diff_html

if TYPE_CHECKING:  # pragma: no cover
    from data.store import RunRow

DIFF_CONTEXT = 14  # words kept around a change in a long revised text
LONG_DIFF = 120  # words: a longer "before" text is shown with only DIFF_CONTEXT around changes
PARAGRAPH, CUMULATIVE = "paragraph", "cumulative"  # the two ways revisions can be undone
DRAFT, STEPS, PROGRESS = "draft", "steps", "progress"  # the panels an event can change
ALL_PANELS = frozenset({DRAFT, STEPS, PROGRESS})
_STEP_LABEL = re.compile(r"^\s*step\s*\d+\s*[:.)-]\s*", re.I)  # "Step 2: ..." -> "..."
PASSAGE_CHARS = 600  # characters of a supporting passage shown when its mark is opened
UNSUPPORTED = "no source supports this sentence"

CSS = """
.rat-progress { padding: .6em .9em; border-radius: 8px; border: 1px solid var(--border-color-primary);
  background: var(--block-background-fill); font-size: 1.05em; }
.rat-progress .rat-stats { color: var(--body-text-color-subdued); font-size: .85em; margin-left: .6em; }
.rat-progress.rat-failed { border-color: #d73a49; }
.rat-progress.rat-done { border-color: #2ea043; }
.rat-progress.rat-unsourced { border-color: #d29922; }
.rat-empty { color: var(--body-text-color-subdued); font-style: italic; padding: .4em 0; }
ol.rat-draft { padding-left: 1.8em; margin: 0; }
ol.rat-draft li { white-space: pre-wrap; margin: 0 0 .6em; padding: .25em .4em; border-radius: 6px; }
ol.rat-draft li.rat-current { background: rgba(255, 196, 0, .22); outline: 2px solid rgba(255, 170, 0, .6); }
ol.rat-draft li.rat-done::marker { color: #2ea043; font-weight: bold; }
.rat-caret { display: inline-block; width: .5em; height: 1em; margin-left: 1px; vertical-align: text-bottom;
  background: var(--color-accent); animation: rat-blink 1s steps(1) infinite; }
@keyframes rat-blink { 50% { opacity: 0; } }
.rat-card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: .6em .8em;
  margin-bottom: .7em; background: var(--block-background-fill); }
.rat-card.rat-current { border: 2px solid rgba(255, 170, 0, .85); box-shadow: 0 0 0 3px rgba(255, 196, 0, .18); }
.rat-card-head { display: flex; gap: .6em; align-items: baseline; margin-bottom: .3em; }
.rat-badge { font-size: .75em; padding: .1em .5em; border-radius: 999px; background: var(--neutral-200);
  color: var(--neutral-800); }
.rat-badge.rat-working { background: rgba(255, 196, 0, .35); }
.rat-badge.rat-revised { background: rgba(46, 160, 67, .25); }
.rat-badge.rat-refused { background: rgba(210, 153, 34, .3); }
pre.rat-rejected { white-space: pre-wrap; max-height: 16em; overflow: auto; }
.rat-badge.rat-undone { background: rgba(215, 58, 73, .22); }
.rat-thought { color: var(--body-text-color-subdued); font-size: .9em; white-space: pre-wrap; margin-bottom: .3em; }
.rat-label { font-weight: 600; font-size: .85em; margin-right: .4em; }
.rat-row { margin: .25em 0; }
.rat-query { white-space: pre-wrap; font-size: .9em; }
.rat-meta { color: var(--body-text-color-subdued); font-size: .85em; }
ul.rat-pages, ol.rat-results { margin: .2em 0 .3em; padding-left: 1.4em; font-size: .9em; }
ul.rat-pages li.rat-ok::marker { content: "✓ "; color: #2ea043; }
ul.rat-pages li.rat-err::marker { content: "✗ "; color: #d73a49; }
ul.rat-pages li.rat-err .rat-why { color: #d73a49; }
.rat-snippet { color: var(--body-text-color-subdued); }
details.rat-more > summary { cursor: pointer; font-size: .85em; font-weight: 600; }
blockquote.rat-passage { margin: .3em 0; padding: .3em .6em; border-left: 3px solid var(--border-color-accent);
  white-space: pre-wrap; font-size: .85em; }
.rat-diff, .rat-live { white-space: pre-wrap; padding: .4em .6em; border-radius: 6px;
  background: var(--background-fill-secondary); font-size: .92em; }
.rat-diff ins { background: rgba(46, 160, 67, .28); text-decoration: none; border-radius: 3px; }
.rat-diff del { background: rgba(215, 58, 73, .22); text-decoration: line-through; border-radius: 3px; }
.rat-elided { color: var(--body-text-color-subdued); padding: 0 .3em; }
.rat-skipped { font-style: italic; color: var(--body-text-color-subdued); }
.rat-note { font-size: .85em; color: var(--body-text-color-subdued); }
.rat-note.rat-warning { color: #b08800; }
.rat-error { color: #d73a49; }
.rat-cited { line-height: 1.65; padding: .2em .1em; }
.rat-cited .rat-para { margin: 0 0 .8em; }
.rat-cite-summary { color: var(--body-text-color-subdued); font-size: .85em; margin-bottom: .5em; }
details.rat-cite { display: inline; }
details.rat-cite::details-content { display: inline; }  /* a closed mark keeps its line */
details.rat-cite:not([open])::details-content { display: none; }
details.rat-cite > summary { display: inline; cursor: pointer; list-style: none; color: var(--color-accent);
  font-size: .8em; vertical-align: super; line-height: 1; }
details.rat-cite > summary::-webkit-details-marker { display: none; }
details.rat-cite[open] > summary { font-weight: 700; }
.rat-cite-box { display: block; margin: .3em 0 .6em; padding: .4em .7em; border-radius: 6px;
  border-left: 3px solid var(--color-accent); background: var(--background-fill-secondary); font-size: .88em; }
.rat-cite-passage { display: block; }
.rat-cite-box .rat-meta { display: block; margin-top: .3em; }
.rat-unsupported { text-decoration: underline dotted #d29922; text-decoration-thickness: 2px;
  text-underline-offset: 3px; }
.rat-nosource { color: #b08800; font-weight: 700; font-size: .8em; margin-left: 1px; cursor: help; }
"""


# -- escaping -------------------------------------------------------------------------------------
def esc(text: object) -> str:
    """HTML-escaped text (quotes too, so it is safe inside attributes)."""
    return html.escape("" if text is None else str(text), quote=True)


def safe_url(url: str) -> str | None:
    """The URL if it is http(s) (anything else, e.g. ``javascript:``, never becomes a link)."""
    try:
        parts = urlsplit((url or "").strip())
    except ValueError:
        return None
    return url.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def link(url: str, title: str = "") -> str:
    """An escaped link that opens in a new tab, or escaped text for a URL that is not http(s)."""
    label = esc(title or url)
    href = safe_url(url)
    if href is None:
        return f"<span class='rat-nolink'>{label}</span>"
    return f"<a href='{esc(href)}' target='_blank' rel='noopener noreferrer nofollow'>{label}</a>"


def short(text: str, width: int = 90) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= width else one[: width - 1] + "…"


# -- the view model -------------------------------------------------------------------------------
@dataclass
class StepCard:
    """What one step (or one iteration of a method without steps) did."""

    i: int
    thought: str = ""
    query: str = ""
    live: dict[str, str] = field(default_factory=dict)  # role -> text being streamed now
    searches: list[SearchDone] = field(default_factory=list)
    pages: list[PageRead] = field(default_factory=list)
    passages: tuple[Passage, ...] = ()
    revised: StepRevised | None = None
    notes: list[Note] = field(default_factory=list)

    @property
    def phase(self) -> str:
        if self.revised is not None:
            if self.revised.guarded:
                return "revision refused"
            return "kept as drafted" if self.revised.skipped else "revised"
        if "revise" in self.live or self.passages:
            return "revising"
        if self.pages or self.searches:
            return "reading pages"
        if self.query:
            return "searching"
        return "writing the query"


@dataclass
class RunView:
    """A run as the Writer shows it, folded from its events (``fold``) or built up live
    (``apply``). ``events`` keeps the stored kind only (no TokenDelta)."""

    run_id: str = ""
    method: str = ""
    task: str = ""
    events: list[Event] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    draft_ready: bool = False
    draft_live: str = ""
    live: dict[str, str] = field(default_factory=dict)  # role -> streamed text of calls outside any step
    cards: dict[int, StepCard] = field(default_factory=dict)
    current: int = 0
    n: int = 0
    final: Final | None = None
    failed: Failed | None = None
    notes: list[Note] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def card(self, i: int) -> StepCard:
        if i not in self.cards:
            self.cards[i] = StepCard(i)
        return self.cards[i]

    def apply(self, e: Event) -> set[str]:
        """Fold one event in; returns the panels it changed (``DRAFT``, ``STEPS``, ``PROGRESS``)."""
        if e.persist:
            self.events.append(e)
        match e:
            case TokenDelta(role=role, text=text, i=i, reset=reset):
                if role == "draft" and i == 0:
                    self.draft_live = ("" if reset else self.draft_live) + text
                    return {DRAFT}
                live = self.card(i).live if i else self.live
                live[role] = ("" if reset else live.get(role, "")) + text
                return {STEPS}
            case RunStarted(run_id=run_id, method=method, task=task):
                self.run_id, self.method, self.task = run_id, method, task
                self.failed = None
                return {PROGRESS}
            case DraftReady(steps=steps):  # an edited draft replaces the first: revision starts over
                self.steps, self.draft_ready, self.draft_live = list(steps), True, ""
                self.cards, self.current, self.n, self.final = {}, 0, len(steps), None
                return set(ALL_PANELS)
            case StepStarted(i=i, thought=thought, n=n):
                self.card(i).thought = thought
                self.current, self.n = i, n or self.n or len(self.steps)
                return set(ALL_PANELS)
            case QueryMade(i=i, query=query):
                card = self.card(i)
                card.query = query
                card.live.pop("query", None)
                return {STEPS, PROGRESS}
            case SearchDone(i=i):
                self.card(i).searches.append(e)
                return {STEPS, PROGRESS}
            case PageRead(i=i):
                self.card(i).pages.append(e)
                return {STEPS}
            case PassagesChosen(i=i, passages=passages):
                self.card(i).passages = passages
                return {STEPS, PROGRESS}
            case StepRevised(i=i):
                card = self.card(i)
                card.revised = e
                card.live.pop("revise", None)
                return set(ALL_PANELS)
            case LLMCalled(prompt_tokens=p, completion_tokens=c):
                self.llm_calls += 1
                self.prompt_tokens += p
                self.completion_tokens += c
                return {PROGRESS}
            case Note(i=i):
                (self.card(i).notes if i else self.notes).append(e)
                return {STEPS}
            case Final():
                self.final, self.current, self.live = e, 0, {}
                return set(ALL_PANELS)
            case Failed():
                self.failed = e
                return {PROGRESS, STEPS}
        return set()

    @property
    def undo_mode(self) -> str:
        """PARAGRAPH, CUMULATIVE, or "" when the revisions cannot be undone (see the module
        docstring); told from what each revision was given to revise."""
        revisions = self.revisions
        if self.final is None or not self.draft_ready or not revisions:
            return ""
        paragraph = cumulative = True
        before_i = ""  # the article after the previous revision
        for i, rev in revisions.items():
            if not 1 <= i <= len(self.steps):
                return ""
            step = self.steps[i - 1].strip()
            paragraph = paragraph and rev.before.strip() == step
            given = rev.before.strip()  # step i alone, or (CoT+RAG) steps i..n at once
            cumulative = cumulative and given in (join_steps([before_i, step]),
                                                  join_steps([before_i, *self.steps[i - 1:]]))
            before_i = rev.article
        return PARAGRAPH if paragraph else CUMULATIVE if cumulative else ""

    @property
    def revisions(self) -> dict[int, StepRevised]:
        return {i: c.revised for i, c in sorted(self.cards.items()) if c.revised is not None}


def fold(events: Iterable[Event]) -> RunView:
    """The view of a run from its events (stored ones, or a whole live stream)."""
    view = RunView()
    for e in events:
        view.apply(e)
    return view


# -- progress -------------------------------------------------------------------------------------
def progress_text(view: RunView, status: str = "") -> str:
    """One line saying where the run is, e.g. "Step 3 of 7: reading pages"; ``status`` is the
    run's stored status when known (draft, interrupted, failed, ...)."""
    n = view.n or len(view.steps)
    revised = len(view.revisions)
    if view.failed is not None:
        again = " What was done is kept: press Continue to resume." if view.failed.resumable else ""
        where = f" after step {revised} of {n}" if revised else ""
        return f"Failed{where}: {view.failed.error}{again}"
    if view.final is not None:
        if status == "unsourced":
            return (f"Unsourced: no part of this text was checked against retrieved text "
                    f"({unsourced_cause(view.events)}). The text is the model's alone.")
        done = f"Done: {revised} step{'s' if revised != 1 else ''} revised." if revised else "Done."
        refused = sum(1 for rev in view.revisions.values() if rev.guarded)
        if refused:
            were = "s were" if refused != 1 else " was"
            done += f" {refused} revision{were} refused and the text kept (see the steps)."
        if view.final.sentences:  # runs stored before citations have none: nothing to say
            done += f" {citation_line(view.final)}."
        if view.final.unchecked:
            done += f" Not checked against a source: {'; '.join(view.final.unchecked)}."
        if view.final.cut:
            done += f" {CUT[0].upper()}{CUT[1:]} (start the app with a higher --max-tokens)."
        return done
    if status == "draft":
        return f"Draft ready: {n} steps. Edit them below if you like, then press Continue."
    if status == "interrupted":
        where = f" after step {revised} of {n}" if revised else " before the first step was revised" if n else ""
        return f"Stopped{where}. Press Continue to go on from there."
    if view.current:
        card = view.cards.get(view.current)
        return f"Step {view.current} of {n}: {card.phase if card else 'starting'}"
    if view.draft_ready:
        return f"Draft ready: {n} steps."
    if view.draft_live:
        return "Writing the draft…"
    if view.run_id:
        return "Starting…"
    return "No run yet: type a task and press Run."


def progress_html(view: RunView, status: str = "") -> str:
    kind = ("rat-failed" if view.failed else "rat-unsourced" if view.final and status == "unsourced"
            else "rat-done" if view.final else "")
    stats = ""
    if view.llm_calls:
        tokens = view.prompt_tokens + view.completion_tokens
        pages = sum(1 for c in view.cards.values() for p in c.pages if p.status == "ok")
        stats = (f"<span class='rat-stats'>{view.llm_calls} LLM calls · {tokens:,} tokens · "
                 f"{pages} pages read</span>")
    return f"<div class='rat-progress {kind}'>{esc(progress_text(view, status))}{stats}</div>"


# -- the draft (left) -----------------------------------------------------------------------------
def draft_html(view: RunView) -> str:
    """The step-by-step draft, numbered; while it streams, the text so far with a caret."""
    if not view.draft_ready:
        if not view.draft_live:
            if view.final is not None or view.cards:
                return "<div class='rat-empty'>This method writes no step-by-step draft.</div>"
            return "<div class='rat-empty'>The draft appears here as the model writes it.</div>"
        blocks = re.split(r"(?:\r?\n[ \t]*){2,}", view.draft_live.lstrip())
        items = [f"<li>{esc(b)}</li>" for b in blocks[:-1]]
        items.append(f"<li>{esc(blocks[-1])}<span class='rat-caret'></span></li>")
        return "<ol class='rat-draft rat-streaming'>" + "".join(items) + "</ol>"
    items = []
    for n, step in enumerate(view.steps, start=1):
        card = view.cards.get(n)
        cls = "rat-current" if n == view.current and view.final is None else \
            "rat-done" if card and card.revised else ""
        items.append(f"<li class='{cls}' id='rat-draft-{n}'>{esc(step)}</li>")
    return "<ol class='rat-draft'>" + "".join(items) + "</ol>"


# -- the steps (right) ----------------------------------------------------------------------------
def search_html(s: SearchDone) -> str:
    if s.error:
        return f"<div class='rat-row rat-error'>Search failed: {esc(s.error)}</div>"
    head = f"{len(s.results)} results from {esc(s.provider or 'search')}" + (" (cached)" if s.cached else "")
    if s.seconds:
        head += f" <span class='rat-meta'>{s.seconds:.2f} s</span>"
    warnings = "".join(f"<div class='rat-note rat-warning'>{esc(w)}</div>" for w in s.warnings)
    results = "".join(
        f"<li>{link(r.url, r.title)}<br><span class='rat-snippet'>{esc(short(r.snippet, 220))}</span></li>"
        for r in s.results)
    listing = (f"<details class='rat-more'><summary>results</summary><ol class='rat-results'>{results}</ol></details>"
               if results else "")
    return f"<div class='rat-row'><span class='rat-label'>Search</span>{head}{warnings}{listing}</div>"


def page_html(p: PageRead, fallback_title: str = "") -> str:
    """One page read for a step: its title as a link, then "ok", its size and time, or why it
    could not be read. ``fallback_title`` (the search result's) is used when the page gave none."""
    title = link(p.url, p.title or fallback_title or p.url)
    cached = " · cached" if p.cached else ""
    if p.status == "ok":
        return (f"<li class='rat-ok'>{title} <span class='rat-meta'>ok · {p.chars:,} chars · "
                f"{p.seconds:.2f} s{cached}</span></li>")
    why = (p.error or "could not be read").removeprefix(p.url).strip() or "could not be read"
    return f"<li class='rat-err'>{title} <span class='rat-why'>{esc(why)}</span></li>"


def passages_html(passages: Sequence[Passage]) -> str:
    if not passages:
        return ""
    tokens = sum(p.tokens for p in passages)
    quotes = "".join(
        f"<blockquote class='rat-passage'>{esc(p.text)}<br><span class='rat-meta'>— {link(p.url, p.title or p.url)}"
        f"</span></blockquote>" for p in passages)
    label = "passage" if len(passages) == 1 else "passages"
    return (f"<details class='rat-more'><summary>{len(passages)} {label} used ({tokens:,} tokens)</summary>"
            f"{quotes}</details>")


def revision_html(rev: StepRevised, *, undone: bool = False, taken: bool = False) -> str:
    if rev.skipped:
        return f"<div class='rat-skipped'>Kept as drafted: {esc(rev.skipped)}</div>"
    if rev.guarded:
        used = " — taken by hand in the article below" if taken else ""
        return (f"<div class='rat-skipped'>Kept as it stood: the model's revision {esc(rev.guarded)}{used}.</div>"
                f"<details class='rat-more rat-refused'><summary>The refused revision ({len(rev.rejected):,} "
                f"characters)</summary><pre class='rat-rejected'>{esc(rev.rejected) or '(empty)'}</pre></details>")
    added, removed = changed(rev.before, rev.after)
    note = " — undone in the article below" if undone else ""
    long = len(rev.before.split()) > LONG_DIFF
    body = diff_html(rev.before, rev.after, DIFF_CONTEXT if long else None)
    return (f"<div class='rat-label'>Revision <span class='rat-meta'>+{added} / −{removed} words{note}</span></div>"
            f"<div class='rat-diff'>{body}</div>")


def card_html(card: StepCard, *, n: int, current: bool, undone: bool = False, taken: bool = False) -> str:
    cls = "rat-card rat-current" if current else "rat-card"
    phase = "undone" if undone else card.phase
    badge = {"revised": "rat-revised", "undone": "rat-undone", "kept as drafted": "",
             "revision refused": "rat-refused"}.get(phase, "rat-working")
    title = f"Step {card.i} of {n}" if card.i and n else f"Step {card.i}" if card.i else "Retrieval"
    parts = [f"<div class='{cls}' id='rat-step-{card.i}'>",
             f"<div class='rat-card-head'><b>{title}</b><span class='rat-badge {badge}'>{esc(phase)}</span></div>"]
    if card.thought:
        parts.append(f"<div class='rat-thought'>{esc(short(card.thought, 240))}</div>")
    if card.query:
        parts.append(f"<div class='rat-row'><span class='rat-label'>Query</span><code class='rat-query'>"
                     f"{esc(card.query)}</code></div>")
    elif "query" in card.live:
        parts.append(f"<div class='rat-row'><span class='rat-label'>Query</span><span class='rat-query'>"
                     f"{esc(card.live['query'])}<span class='rat-caret'></span></span></div>")
    parts += [search_html(s) for s in card.searches]
    if card.pages:
        titles = {r.url: r.title for s in card.searches for r in s.results}
        parts.append("<div class='rat-label'>Pages</div><ul class='rat-pages'>"
                     + "".join(page_html(p, titles.get(p.url, "")) for p in card.pages) + "</ul>")
    parts.append(passages_html(card.passages))
    parts += [f"<div class='rat-note rat-{esc(note.level)}'>{esc(note.text)}</div>" for note in card.notes]
    if card.revised is not None:
        parts.append(revision_html(card.revised, undone=undone, taken=taken))
    else:
        for role, text in card.live.items():
            if role != "query":
                parts.append(f"<div class='rat-label'>{esc(role.capitalize())}…</div>"
                             f"<div class='rat-live'>{esc(text)}<span class='rat-caret'></span></div>")
    parts.append("</div>")
    return "".join(parts)


def steps_html(view: RunView, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> str:
    """A card per step: query, search, pages, passages and the revision's diff; the step being
    worked on is highlighted."""
    undone, taken = set(undone), set(taken)
    if not view.cards and not view.live and not view.notes and view.failed is None:
        wait = "Each step's search, pages and revision appear here."
        return f"<div class='rat-empty'>{wait}</div>"
    n = view.n or len(view.steps)
    out = [f"<div class='rat-note rat-{esc(note.level)}'>{esc(note.text)}</div>" for note in view.notes]
    for i, card in sorted(view.cards.items()):
        out.append(card_html(card, n=n, current=i == view.current and view.final is None,
                             undone=i in undone, taken=i in taken))
    for role, text in view.live.items():
        if role != "draft":
            out.append(f"<div class='rat-card rat-current'><div class='rat-label'>{esc(role.capitalize())}…</div>"
                       f"<div class='rat-live'>{esc(text)}<span class='rat-caret'></span></div></div>")
    if view.failed is not None:
        out.append(f"<div class='rat-card'><span class='rat-error'>{esc(view.failed.error)}</span></div>")
    todo = n - len(view.cards) if view.draft_ready and view.final is None and view.failed is None else 0
    if todo > 0 and view.cards:
        out.append(f"<div class='rat-empty'>{todo} more step{'s' if todo != 1 else ''} to go.</div>")
    return "".join(out)


# -- the article: undoing revisions, export -------------------------------------------------------
def revert_choices(view: RunView) -> list[tuple[str, int]]:
    """(label, step) for each step whose revision can be undone: none unless the run has an
    ``undo_mode``, and none for a revision that changed nothing."""
    if not view.undo_mode:
        return []
    return [(f"Step {i}: {short(_STEP_LABEL.sub('', view.cards[i].thought or view.steps[i - 1]), 60)}", i)
            for i, rev in view.revisions.items() if not rev.skipped and rev.before != rev.after]


def undone_steps(view: RunView, chosen: Iterable[int]) -> list[int]:
    """The steps actually undone when ``chosen`` are: themselves (paragraph mode), or every
    revised step from the first chosen one on (cumulative mode)."""
    mode = view.undo_mode
    chosen = sorted({int(i) for i in chosen} & set(view.revisions))
    if not chosen or not mode:
        return []
    if mode == PARAGRAPH:
        return chosen
    return [i for i in view.revisions if i >= chosen[0]]


def take_choices(view: RunView) -> list[tuple[str, int]]:
    """(label, step) for each step whose revision the guards refused and that the author may
    take by hand: none unless the run has an ``undo_mode`` (the same rules say what taking
    a step's revision does to the steps after it)."""
    if not view.undo_mode:
        return []
    return [(f"Step {i}: {short(_STEP_LABEL.sub('', view.cards[i].thought or view.steps[i - 1]), 60)}", i)
            for i, rev in view.revisions.items() if rev.guarded and taken_text(rev)]


def taken_text(rev: StepRevised) -> str:
    """A refused revision as the author takes it: without the model's preamble and postscript."""
    return normalise_answer(strip_chatter(rev.rejected)) or rev.rejected.strip()


def chosen_edits(view: RunView, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> tuple[set[int], set[int]]:
    """The steps undone and the steps whose refused revision is taken, once the mode's rules
    apply: in paragraph mode each step on its own; in cumulative mode everything from the first
    chosen step on goes back to the draft, except that step itself when its revision is taken."""
    guarded = {i for i, rev in view.revisions.items() if rev.guarded}
    taken = {int(i) for i in taken} & guarded if view.undo_mode else set()
    undone = set(undone_steps(view, undone))
    if view.undo_mode == PARAGRAPH or not (undone | taken):
        return undone, taken - undone
    first = min(undone | taken)
    later = {i for i in view.revisions if i >= first}
    return (later - {first}, {first}) if first in taken else (later, set())


def article_text(view: RunView, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> str:
    """The final article with the revisions of ``undone`` steps taken back and the refused
    revisions of ``taken`` steps used (see the module docstring for what that means in each
    mode). The run's own text when nothing is chosen."""
    undone, taken = chosen_edits(view, undone, taken)
    base = view.final.text if view.final else ""
    if not undone and not taken:
        return base
    revisions = view.revisions
    if view.undo_mode == PARAGRAPH:
        return join_steps([rev.before if i in undone else taken_text(rev) if i in taken else rev.after
                           for i, rev in revisions.items()])
    first = min(undone | taken)
    if first in taken:  # the refused revision was of the whole answer up to this step
        return join_steps([taken_text(revisions[first]), *view.steps[first:]])
    kept = [i for i in revisions if i < first]
    before = revisions[kept[-1]].article if kept else ""
    return join_steps([before, *view.steps[first - 1:]])


def kept_sources(view: RunView, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                 book: SourceBook | None = None) -> tuple[Source, ...]:
    """The sources of the steps whose revisions are kept (and, for a refused revision taken
    by hand, the passages it was written from), numbered in order of first use. ``book``: the
    ``_kept_book`` of these edits, when the caller has it already."""
    undone, taken = chosen_edits(view, undone, taken)
    if not undone and not taken and view.final is not None:
        return view.final.sources
    return (book or _kept_book(view, undone, taken)).sources()


def _kept_book(view: RunView, undone: set[int], taken: set[int],
               threshold: float = CITE_THRESHOLD) -> SourceBook:
    """The run's source book as if the ``undone`` steps had not been revised and the refused
    revisions of ``taken`` steps had been accepted (with all the passages their step was shown)."""
    book = SourceBook(threshold)
    for e in view.events:
        if isinstance(e, StepRevised) and e.i in undone:
            continue
        if isinstance(e, StepRevised) and e.i in taken:
            e = replace(e, sources=tuple(dict.fromkeys(p.url for p in view.cards[e.i].passages)), guarded="",
                        after=taken_text(e))
        book.see(e)
    return book


def cited_view(view: RunView, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
               threshold: float = CITE_THRESHOLD) -> Cited:
    """``text`` (the article as the author edited it) with its citations: each sentence marked
    with the sources of the kept steps that support it, numbered as ``kept_sources`` numbers
    them. ``threshold``: the share of a sentence's words a passage must hold (``core.citations``)."""
    undone, taken = chosen_edits(view, undone, taken)
    return _kept_book(view, undone, taken, threshold).cited(text, undone=undone, taken=taken)


def mark_html(mark: Mark) -> str:
    """One [n] mark: a ``<details>`` whose summary is "[n]" and which opens on the passage that
    supports the sentence (escaped, at most PASSAGE_CHARS characters) and a link to its page."""
    passage = re.sub(r"[ \t]*\r?\n\s*", "\n", mark.passage.strip())  # line breaks kept, blank lines not
    if len(passage) > PASSAGE_CHARS:
        passage = passage[:PASSAGE_CHARS - 1].rstrip() + "…"
    title = " ".join((mark.title or mark.url).split())
    by = " · cited by the model" if mark.by_model else ""
    box = (f"<span class='rat-cite-box'><span class='rat-cite-passage'>{esc(passage).replace(chr(10), '<br>')}"
           f"</span>"
           f"<span class='rat-meta'>[{mark.n}] {link(mark.url, title)} · {mark.score:.0%} of the sentence's "
           f"words{by}</span></span>")
    html_ = (f"<details class='rat-cite'><summary title='Source {mark.n}: {esc(title)}'>[{mark.n}]</summary>"
             f"{box}</details>")
    return html_.replace("\r", " ").replace("\n", " ")  # paragraphs are told by the article's newlines


def cited_html(cited: Cited, *, head: bool = True) -> str:
    """The article with its citations, as HTML with no script: each [n] opens on its passage
    and page (``mark_html``); a sentence that needs a source and has none is underlined, with a
    marker and a tooltip. Blank lines separate paragraphs, single newlines break lines, and
    everything is escaped. ``head``: a line with the counts above it."""
    parts = []
    for piece in cited.pieces:
        if piece.marks:
            marks = "".join(mark_html(m) for m in piece.marks)
            parts.append(f"<span class='rat-sentence'>{esc(piece.body)} {marks}</span>{esc(piece.tail)}")
        elif piece.sentence:
            parts.append(f"<span class='rat-sentence rat-unsupported' title='{UNSUPPORTED}'>{esc(piece.body)}"
                         f"<sup class='rat-nosource' title='{UNSUPPORTED}'>?</sup></span>{esc(piece.tail)}")
        else:
            parts.append(esc(piece.body + piece.tail))
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return "<div class='rat-empty'>The article is empty.</div>"
    paragraphs = "".join(f"<div class='rat-para'>{para.strip().replace(chr(10), '<br>')}</div>"
                         for para in re.split(r"\n[ \t]*\n\s*", text))
    top = ""
    if head:
        unsupported = cited.sentences - cited.supported
        todo = (f" {unsupported} sentence{'s' if unsupported != 1 else ''} with no source "
                f"<span class='rat-unsupported'>underlined</span>." if unsupported else "")
        top = (f"<div class='rat-cite-summary'>{esc(cited.summary())}. Click a [n] to see the passage that "
               f"supports its sentence.{todo}</div>")
    return f"<div class='rat-cited'>{top}{paragraphs}</div>"


def unchecked_steps(view: RunView, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> tuple[str, ...]:
    """One line per step of the article (as undone and taken) never checked against a source."""
    undone, taken = chosen_edits(view, undone, taken)
    return unchecked_lines(view.revisions.values(), undone, taken)


def _export(view: RunView, text: str, undone: Iterable[int], taken: Iterable[int], threshold: float) -> dict:
    """What ``to_markdown`` and ``to_docx`` are given for the article as edited, from one source
    book (``cited_view``'s, which ``kept_sources`` and the cut check share)."""
    chosen = chosen_edits(view, undone, taken)
    book = _kept_book(view, *chosen, threshold)
    return dict(task=view.task, text=text, sources=kept_sources(view, undone, taken, book=book),
                unchecked=unchecked_steps(view, undone, taken), cut=book.ends_cut(text),
                cited=book.cited(text, undone=chosen[0], taken=chosen[1]).text)


def export_markdown(view: RunView, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                    threshold: float = CITE_THRESHOLD) -> str:
    """The article (as edited) as Markdown with its [n] marks, its numbered sources and the
    steps that were never checked against one."""
    return to_markdown(**_export(view, text, undone, taken, threshold))


def export_docx(view: RunView, text: str, undone: Iterable[int] = (), taken: Iterable[int] = (), *,
                threshold: float = CITE_THRESHOLD) -> bytes:
    """The same article as ``export_markdown``, as the bytes of a Word document."""
    return to_docx(**_export(view, text, undone, taken, threshold))


def export_name(view: RunView, suffix: str = "md") -> str:
    """A file name for the article: the task's first words and the run id, ending in ``suffix``."""
    words = re.findall(r"[A-Za-z0-9]+", view.task)[:8]
    slug = "-".join(words).lower()[:60] or "article"
    return f"{slug}-{view.run_id or 'run'}.{suffix.lstrip('.')}"


# -- history and replay ---------------------------------------------------------------------------
HISTORY_HEADERS = ["run", "task", "method", "date", "status", "sourced", "cited", "tokens", "time"]


def history_rows(runs: Iterable[RunRow]) -> list[list]:
    """One row per run for the History table; "sourced" is the steps checked against retrieved
    text out of the steps, with the revisions the guards refused; "cited" the finished article's
    sentences a source supports out of its sentences, with the model's marks removed."""
    return [[r.id, short(r.task, 80), r.method, when(r.created), str(r.status), _sourced(r), cited_cell(r),
             f"{r.tokens:,}", f"{r.wall_seconds or 0:.1f} s"] for r in runs]


def cited_cell(run: RunRow) -> str:
    """'7/9' (sentences cited / sentences), with ', 1 mark removed'; empty for a run that has not
    finished, or was stored before citations were counted."""
    if not run.sentences:
        return ""
    removed = run.marks_removed
    extra = f", {removed} mark{'s' if removed != 1 else ''} removed" if removed else ""
    return f"{run.sentences_cited}/{run.sentences}{extra}"


def _sourced(run: RunRow) -> str:
    if not run.steps_total:
        return ""
    refused = f", {run.steps_guarded} refused" if run.steps_guarded else ""
    return f"{run.steps_sourced}/{run.steps_total}{refused}"


def when(stamp: str) -> str:
    """An ISO time stamp as local "YYYY-MM-DD HH:MM"."""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return stamp or ""


def _seconds(stamps: Sequence[str]) -> list[float]:
    out, first = [], None
    for s in stamps:
        try:
            t = datetime.fromisoformat(s).timestamp()
        except (TypeError, ValueError):
            t = out[-1] if out else 0.0
        first = t if first is None else first
        out.append(t)
    return out


def _chunks(text: str, parts: int) -> list[str]:
    words = re.findall(r"\S+\s*", text)
    if not words:
        return []
    size = max(1, -(-len(words) // parts))
    return ["".join(words[k:k + size]) for k in range(0, len(words), size)]


def replay_schedule(events: Sequence[Event], stamps: Sequence[str], *, speed: float = 1.0,
                    max_gap: float = 2.0, typing_chunks: int = 24) -> list[tuple[float, Event]]:
    """(seconds to wait, event) pairs that replay a stored run: the gaps between the stored
    events' time stamps, each capped at ``max_gap`` seconds, divided by ``speed``. TokenDeltas
    are not stored, so the text a model call wrote (the draft, a revision) is re-typed over
    that call's own time, in ``typing_chunks`` pieces."""
    speed = max(speed, 0.01)
    times = _seconds(stamps)
    gaps = [0.0] + [max(0.0, min(max_gap, b - a)) / speed for a, b in zip(times, times[1:], strict=False)]
    gaps += [0.0] * (len(events) - len(gaps))
    schedule: list[tuple[float, Event]] = []
    for k, e in enumerate(events):
        nxt = events[k + 1] if k + 1 < len(events) else None
        text = ""
        if isinstance(e, LLMCalled):
            if isinstance(nxt, DraftReady):
                text = join_steps(list(nxt.steps))
            elif isinstance(nxt, StepRevised) and not nxt.skipped and nxt.i == e.i:
                text = nxt.after
        pieces = _chunks(text, typing_chunks)
        if pieces:
            role = "draft" if isinstance(nxt, DraftReady) else e.role
            i = 0 if isinstance(nxt, DraftReady) else e.i
            each = gaps[k] / len(pieces)
            schedule += [(each, TokenDelta(role=role, text=p, i=i)) for p in pieces]
            schedule.append((0.0, e))
        else:
            schedule.append((gaps[k], e))
    return schedule
