"""A run's view (``ui.runview.RunView``) as HTML, as pure functions: the progress line, the
draft (left) and a card per step (right) with its query, search, pages, passages and the
revision's diff. Everything that came from the web or from a model is escaped (``ui.escape``).

The draft and the steps come as fragments too (``draft_parts``, ``steps_parts``: the HTML is
their concatenation), the text a model is streaming a fragment of its own: the Writer sends a
panel as its list of fragments, and Gradio sends a stream's outputs as edits of what it sent last
(``gradio.utils.diff``), so the browser gets the card that changed, not the panel again, and a
step's streamed tokens as the text they add (escaping is per character, so a longer text's
escaped form begins with the shorter one's)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence

from common.events import PageRead, SearchDone, StepRevised
from common.types import Passage
from core.article.article import CUT, unsourced_cause
from core.article.citations import Cited, citation_line, renumber_marks
from core.authoring import NO_EDIT, Edit
from core.budget import dollars
from core.text.oneline import short
from ui.controls import for_browser
from ui.diff import changed, diff_html
from ui.escape import esc, link
from ui.runview import RunView, StepCard, Thought

DIFF_CONTEXT = 14  # words kept around a change in a long revised text
LONG_DIFF = 120  # words: a longer "before" text is shown with only DIFF_CONTEXT around changes


# -- progress -------------------------------------------------------------------------------------
def progress_text(view: RunView, status: str = "", shown: Cited | None = None,
                  unchecked: Sequence[str] | None = None) -> str:
    """One line saying where the run is, e.g. "Step 3 of 7: reading pages"; ``status`` is the
    run's stored status when known (draft, interrupted, failed, ...); ``shown`` and ``unchecked``:
    the marks and unchecked steps of the version of a finished run's article on screen, which the
    line counts (not the model's text's, once the author has undone a step or edited it)."""
    n = view.n or len(view.steps)
    revised = len(view.revisions)
    if view.failed is not None and view.failed.error_type == "BudgetExceeded":  # its message says how to go on
        again = " Then press Continue." if view.failed.resumable else ""
        where = f" after step {revised} of {n}" if revised else ""
        return f"Budget reached{where}: {view.failed.error}{again}"
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
        if shown is not None and shown.sentences:
            done += f" {shown.summary()}."
        elif view.final.sentences:  # runs stored before citations have none: nothing to say
            done += f" {citation_line(view.final)}."
        unchecked = view.final.unchecked if unchecked is None else unchecked
        if unchecked:
            done += f" Not checked against a source: {'; '.join(unchecked)}."
        if view.final.cut:
            done += f" {CUT[0].upper()}{CUT[1:]} (raise --max-tokens and run it again)."
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
    if view.queued is not None:
        ahead = view.queued.ahead
        before = f"{ahead} other run{'s' if ahead != 1 else ''} waiting before it" if ahead else "next in line"
        return (f"Queued: {view.queued.limit} run{'s' if view.queued.limit != 1 else ''} already going "
                f"(the most at once, --concurrency); this one starts when one ends ({before}).")
    return "No run yet: type a task and press Run."


STOPPED = ("draft", "interrupted", "failed", "budget", "done", "unsourced")  # stored statuses of a run not going on


def timing(view: RunView, status: str = "", now: float | None = None) -> str:
    """"1:05 elapsed · about 2:10 left" for a run going on: the time since it started (its
    last ``RunStarted``: a resumed run counts from where it went on) until ``now`` (``time.time()``
    by default) and, once a step is done since then, the mean time of those steps times the steps
    left. "" for a run not going on (done, failed, stopped, a draft waiting for Continue:
    ``status``), replayed, or whose start is not known."""
    if not view.started or view.replayed or view.final is not None or view.failed is not None or status in STOPPED:
        return ""
    now = time.time() if now is None else now
    line = f"{clock(now - view.started)} elapsed"
    done = [end - start for i, (start, end) in view.step_times.items()
            if end and i in view.revisions and start >= view.started]
    left = (view.n or len(view.steps)) - len(view.revisions)
    eta = sum(done) / len(done) * left if done and left > 0 else 0.0
    if eta >= 1:  # (under a second: nothing worth saying)
        line += f" · about {clock(eta)} left"
    return line


def clock(seconds: float) -> str:
    """``seconds`` as "m:ss" (or "h:mm:ss" from an hour on)."""
    minutes, secs = divmod(max(0, round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_html(view: RunView, status: str = "", now: float | None = None, *, shown: Cited | None = None,
                  unchecked: Sequence[str] | None = None, cost: float | None = None) -> str:
    """The progress line (``progress_text``; ``shown``: as there) with the run's time (``timing``;
    ``now``: as there) and its counts of calls, tokens (and ``cost``, in dollars, with --prices)
    and pages."""
    kind = ("rat-failed" if view.failed else "rat-unsourced" if view.final and status == "unsourced"
            else "rat-done" if view.final else "")
    stats = ""
    if view.llm_calls:
        tokens = view.prompt_tokens + view.completion_tokens
        pages = sum(1 for c in view.cards.values() for p in c.pages if p.status == "ok")
        calls = view.llm_calls
        spent = f"{tokens:,} / {view.budget_tokens:,} tokens" if view.budget_tokens else f"{tokens:,} tokens"
        spent += f" · {dollars(cost)}" if cost is not None else ""
        stats = (f"<span class='rat-stats'>{calls} LLM call{'s' if calls != 1 else ''} · {spent} · "
                 f"{pages} page{'s' if pages != 1 else ''} read</span>")
    times = timing(view, status, now)
    times = f"<span class='rat-timing'>{times}</span>" if times else ""
    line = for_browser(progress_text(view, status, shown, unchecked))  # flags named as the Writer's controls
    return f"<div class='rat-progress {kind}'>{esc(line)}{times}{stats}</div>"


# -- the draft (left) -----------------------------------------------------------------------------
def thinking_parts(thoughts: Sequence[Thought], live: dict[str, str]) -> list[str]:
    """A reasoning model's thinking, apart from its answer: each finished call's folded (open it
    to read), the one streaming now open with a caret (a fragment of its own)."""
    parts = []
    for t in thoughts:
        tokens = f" · {t.tokens:,} tokens" if t.tokens else ""
        parts.append(f"<details class='rat-thinking'><summary>Thinking ({esc(t.role)}{tokens})</summary>"
                     f"<div class='rat-thinking-text'>{esc(t.text)}</div></details>")
    for role, text in live.items():
        parts += streaming(f"<details class='rat-thinking' open><summary>Thinking ({esc(role)})…</summary>"
                           "<div class='rat-thinking-text'>", text, "</div></details>")
    return parts


def streaming(before: str, text: str, after: str) -> list[str]:
    """Text a model is writing, escaped, with a caret, as three fragments: the text its own, so
    its next tokens change that fragment alone, and only by adding to it."""
    return [before, esc(text), "<span class='rat-caret'></span>" + after]


class Fragments(list):
    """A piece of HTML as fragments: what ``add`` gives goes on the last fragment, what ``join``
    gives keeps its own fragments (the text being streamed: ``streaming``), the rest joined on."""

    def __init__(self) -> None:
        super().__init__([""])

    def add(self, html: str) -> None:
        self[-1] += html

    def join(self, parts: Sequence[str]) -> None:
        if parts:
            self[-1] += parts[0]
            self.extend(parts[1:])


def draft_html(view: RunView) -> str:
    """The step-by-step draft, numbered; while it streams, the text so far with a caret; above
    it, the thinking of a reasoning model's draft call, folded. The run's task rides along in an
    attribute (``task_data``), for presentation mode to show."""
    return "".join(draft_parts(view))


def draft_parts(view: RunView) -> list[str]:
    """``draft_html`` as fragments: a step each, the text being streamed one of its own."""
    drafted = [t for t in view.thinking if t.role == "draft"]
    return [task_data(view.task),
            *thinking_parts(drafted, {r: t for r, t in view.thinking_live.items() if r == "draft"}),
            *_draft_list(view)]


def task_data(task: str) -> str:
    """An empty element holding the task in its ``data-task`` attribute (escaped; no text, so
    the panel does not show it twice): presentation mode's title."""
    return f"<span class='rat-task-data' data-task='{esc(task)}' hidden></span>" if task else ""


def _draft_list(view: RunView) -> list[str]:
    if not view.draft_ready:
        if not view.draft_live:
            if view.final is not None or view.cards:
                return ["<div class='rat-empty'>This method writes no step-by-step draft.</div>"]
            return ["<div class='rat-empty'>The draft appears here as the model writes it.</div>"]
        blocks = re.split(r"(?:\r?\n[ \t]*){2,}", view.draft_live.lstrip())
        items = [f"<li>{esc(b)}</li>" for b in blocks[:-1]]
        return ["<ol class='rat-draft rat-streaming'>", *items, *streaming("<li>", blocks[-1], "</li>"), "</ol>"]
    items = []
    for n, step in enumerate(view.steps, start=1):
        card = view.cards.get(n)
        cls = "rat-current" if n == view.current and view.final is None else \
            "rat-done" if card and card.revised else ""
        items.append(f"<li class='{cls}' id='rat-draft-{n}'>{esc(step)}</li>")
    return ["<ol class='rat-draft'>", *items, "</ol>"]


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


def revision_html(rev: StepRevised, *, undone: bool = False, taken: bool = False, whole: bool = False,
                  marks: Mapping[int, int] | None = None) -> str:
    """What a revision did: its word diff (a long text, or with ``whole`` a revision that rewrote
    the answer so far, shows only the words around its changes), why it was kept as drafted, or
    the refused revision. ``marks``: the [n] the model wrote (the labels its prompt showed) ->
    the numbers the article on screen gives the same pages, so a card's [4] is the article's [4]
    (a label the article does not cite is left out); None: as the model wrote them."""
    if rev.skipped:
        return f"<div class='rat-skipped'>Kept as drafted: {esc(for_browser(rev.skipped))}</div>"
    if rev.guarded:
        used = " — taken by hand in the article below" if taken else ""
        why = esc(for_browser(rev.guarded))
        return (f"<div class='rat-skipped'>Kept as it stood: the model's revision {why}{used}.</div>"
                f"<details class='rat-more rat-refused'><summary>The refused revision ({len(rev.rejected):,} "
                f"characters)</summary><pre class='rat-rejected'>{esc(rev.rejected) or '(empty)'}</pre></details>")
    before, after = rev.before, rev.after
    if marks is not None:
        before, after = renumber_marks(before, marks), renumber_marks(after, marks)
    added, removed = changed(before, after)
    note = " — undone in the article below" if undone else ""
    long = whole or len(before.split()) > LONG_DIFF
    body = diff_html(before, after, DIFF_CONTEXT if long else None)
    return (f"<div class='rat-label'>Revision <span class='rat-meta'>+{added} / −{removed} words{note}</span></div>"
            f"<div class='rat-diff'>{body}</div>")


def card_summary(card: StepCard) -> str:
    """A finished card's one line after its badge: "+12 / −3 words · 2 sources · “the query”"."""
    bits = []
    rev = card.revised
    if rev is not None and not rev.skipped and not rev.guarded:
        added, removed = changed(rev.before, rev.after)
        bits.append(f"+{added} / −{removed} words")
    sources = len({p.url for p in card.passages})
    if sources:
        bits.append(f"{sources} source{'s' if sources != 1 else ''}")
    if card.query:
        bits.append(f"“{short(card.query, 70)}”")
    return " · ".join(esc(b) for b in bits)


def card_parts(card: StepCard, *, n: int, current: bool, undone: bool = False, taken: bool = False,
               whole: bool = False, actions: str = "", marks: Mapping[int, int] | None = None) -> list[str]:
    """One step's card, a ``<details>`` whose summary is its header line (title, badge, and for a
    finished card a one-line summary; ``actions``, trusted HTML, at its end): open while the step
    is worked on (``current``) or unfinished, folded to that line once it is done. ``whole``: the
    revision rewrote the answer so far (``rewrites_answer``), so only what changed is shown. As
    fragments (``Fragments``): a text being streamed is one of its own."""
    phase = "undone" if undone else card.phase
    badge = {"revised": "rat-revised", "undone": "rat-undone", "kept as drafted": "",
             "revision refused": "rat-refused"}.get(phase, "rat-working")
    title = f"Step {card.i} of {n}" if card.i and n else f"Step {card.i}" if card.i else "Retrieval"
    folded = card.revised is not None and not current
    cls = "rat-card rat-current" if current else "rat-card rat-folded" if folded else "rat-card"
    line = f"<span class='rat-card-line'>{card_summary(card)}</span>" if folded else ""
    actions = f"<span class='rat-actions'>{actions}</span>" if actions else ""
    parts = Fragments()
    parts.add(f"<details class='{cls}' id='rat-step-{card.i}'{'' if folded else ' open'}>"
              f"<summary class='rat-card-head'><b>{title}</b><span class='rat-badge {badge}'>{esc(phase)}</span>"
              f"{line}{actions}</summary><div class='rat-card-body'>")
    if card.thought:
        parts.add(f"<div class='rat-thought'>{esc(short(card.thought, 240))}</div>")
    parts.join(thinking_parts(card.thinking, card.thinking_live))
    if card.query:
        parts.add(f"<div class='rat-row'><span class='rat-label'>Query</span><code class='rat-query'>"
                  f"{esc(card.query)}</code></div>")
    elif "query" in card.live:
        parts.join(streaming("<div class='rat-row'><span class='rat-label'>Query</span><span class='rat-query'>",
                             card.live["query"], "</span></div>"))
    for s in card.searches:
        parts.add(search_html(s))
    if card.pages:
        titles = {r.url: r.title for s in card.searches for r in s.results}
        parts.add("<div class='rat-label'>Pages</div><ul class='rat-pages'>"
                  + "".join(page_html(p, titles.get(p.url, "")) for p in card.pages) + "</ul>")
    parts.add(passages_html(card.passages))
    for note in card.notes:
        parts.add(f"<div class='rat-note rat-{esc(note.level)}'>{esc(for_browser(note.text))}</div>")
    if card.revised is not None:
        parts.add(revision_html(card.revised, undone=undone, taken=taken, whole=whole, marks=marks))
    else:
        for role, text in card.live.items():
            if role != "query":
                parts.join(streaming(f"<div class='rat-label'>{esc(role.capitalize())}…</div><div class='rat-live'>",
                                     text, "</div>"))
    parts.add("</div></details>")
    return parts


def rewrites_answer(view: RunView, i: int) -> bool:
    """Whether step ``i``'s revision was given more than its own step to revise: the answer so
    far (``rat``: cumulative mode) or the steps still to come (CoT+RAG)."""
    card = view.cards.get(i)
    rev = card.revised if card else None
    if rev is None or not 1 <= i <= len(view.steps):
        return False
    return len(rev.before.strip()) > len(view.steps[i - 1].strip())


def steps_html(view: RunView, edit: Edit = NO_EDIT, *, actions: Callable[[int], str] | None = None,
               marks: Mapping[int, int] | None = None) -> str:
    """``steps_parts`` as one piece of HTML."""
    return "".join(steps_parts(view, edit, actions=actions, marks=marks))


def steps_parts(view: RunView, edit: Edit = NO_EDIT, *, actions: Callable[[int], str] | None = None,
                marks: Mapping[int, int] | None = None) -> list[str]:
    """A card per step: query, search, pages, passages and the revision's diff; the step being
    worked on is highlighted and open, the finished ones folded to one line; the author's ``edit``
    says which revisions are undone and which taken (its text is not read). ``actions(i)``:
    trusted HTML put in step i's header line (shown folded too); ``marks``: as ``revision_html``.
    A fragment each: a note, a card, the text being streamed."""
    undone, taken = set(edit.undone), set(edit.taken)
    thoughts = [t for t in view.thinking if t.role != "draft"]  # of calls in no step, but the draft's
    thinking = {r: t for r, t in view.thinking_live.items() if r != "draft"}
    if not view.cards and not view.live and not view.notes and not thoughts and not thinking and view.failed is None:
        wait = "Each step's search, pages and revision appear here."
        return [f"<div class='rat-empty'>{wait}</div>"]
    n = view.n or len(view.steps)
    out = [f"<div class='rat-note rat-{esc(note.level)}'>{esc(for_browser(note.text))}</div>" for note in view.notes]
    out += thinking_parts(thoughts, thinking)
    for i, card in sorted(view.cards.items()):
        out += card_parts(card, n=n, current=i == view.current and view.final is None,
                          undone=i in undone, taken=i in taken, whole=rewrites_answer(view, i),
                          actions=actions(i) if actions else "", marks=marks)
    for role, text in view.live.items():
        if role != "draft":
            out += streaming(f"<div class='rat-card rat-current'><div class='rat-label'>{esc(role.capitalize())}…</div>"
                             "<div class='rat-live'>", text, "</div></div>")
    if view.failed is not None:
        out.append(f"<div class='rat-card'><span class='rat-error'>{esc(view.failed.error)}</span></div>")
    todo = n - len(view.cards) if view.draft_ready and view.final is None and view.failed is None else 0
    if todo > 0 and view.cards:
        out.append(f"<div class='rat-empty'>{todo} more step{'s' if todo != 1 else ''} to go.</div>")
    return out
