"""Actions on the step cards (issue 23.2) and the draft as step cards (23.3), as pure HTML and the
browser glue; ``ui.writer.RunPanel`` binds them.

A finished rat or rat-step run's card gets buttons in its header (:func:`actions_html`): Undo (or
Put back) its revision, Take (or Drop) a refused revision, Regenerate, Search again (asks for the
author's own query in a row under the cards, prefilled with the step's), Revise as I say and Add a
section after (both ask for the author's one line in that row) and, beside each page in
the card, ✕ to exclude that source and revise again. The buttons carry data attributes; one
document-level listener (:data:`GLUE_JS`) turns a click into a JSON command
``{"action", "i", "query", "url", "instruction"}`` (:func:`parse_command`) written into the panel's hidden
textbox, and clicks the panel's hidden button, whose handler does the action on the server. The
header also lists what the author had done again, with the time ("regenerated 14:02").

Before revision (a draft-only or stopped run) the draft is edited as cards (:func:`draft_cards_html`,
:data:`DRAFT_JS`): a text area per step, ↑ / ↓ / delete, "Add a step"; every change is written into
the editor's textbox (one step per paragraph) with an input event, so Continue sees it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from urllib.parse import urlsplit

from common.events import ADD, EVERY
from core.article.edits import CUMULATIVE, PARAGRAPH
from core.authoring import NO_EDIT, Edit
from core.methods import METHODS
from core.methods.base import AUTHOR_INSTRUCTION_CHARS, AUTHOR_QUERY_CHARS
from core.text.oneline import short
from ui.escape import esc
from ui.runview import RunView

EDITS = ("undo", "take")  # done on the article's text: a new version, no model call
REDOS = ("regenerate", "search", "exclude", "instruct", ADD, EVERY)  # done by the model again: Runner.redo
HELP = ("Each step's ↻ Regenerate, ⌕ Search again, ✎ Revise as I say and ✕ (beside a page, to leave that source "
        "out) do the step again; ＋ Section after writes a new step there from your one line, with its own search. "
        "Each saves the article as a new version. rat-step redoes only that paragraph; in rat each revision "
        "rewrote the answer so far, so the steps after it are revised again on top of it.")
#: What the row under the cards asks for, per action: its label and the placeholder of its field.
ASKS = {"search": ("Your own query for step", "a search query"),
        "instruct": ("How should step {i} change?", "shorter, and name the release year"),
        ADD: ("A new section after step {i}, about", "how packaging changed with wheels and pip")}


@dataclass(frozen=True)
class Command:
    """What the author clicked on a step card: ``action`` (one of EDITS or REDOS) on step ``i``,
    with the author's ``query`` (search) or the ``url`` to leave out (exclude), or the author's
    one line (``instruction``: instruct; add, whose ``i`` is where the new step goes)."""

    action: str
    i: int
    query: str = ""
    url: str = ""
    instruction: str = ""


def parse_command(text: str) -> Command:
    """The command the browser glue wrote. Raises ValueError naming what is wrong (a page
    edited by hand, an unknown action, no step)."""
    try:
        data = json.loads(text or "")
        action, i = str(data["action"]), int(data["i"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError("The step action could not be read: reload the page and click the step's button again.") \
            from exc
    if action not in (*EDITS, *REDOS):
        raise ValueError(f"Unknown step action {action!r}: use the buttons on the step's card.")
    if i < 1:
        raise ValueError("The step action names no step: use the buttons on the step's card.")
    return Command(action, i, str(data.get("query") or "")[:AUTHOR_QUERY_CHARS * 2], str(data.get("url") or ""),
                   str(data.get("instruction") or "")[:AUTHOR_INSTRUCTION_CHARS * 2])


def offered(view: RunView) -> bool:
    """Whether the run's step cards get actions: a finished run of a method that redoes steps
    (``MethodInfo.redo``: rat and rat-step)."""
    info = METHODS.get(view.method)
    return bool(view.run_id) and view.final is not None and info is not None and info.redo is not None


def card_actions(view: RunView, edit: Edit = NO_EDIT, *, panel: str = "") -> Callable[[int], str] | None:
    """``ui.run_html.steps_html``'s ``actions`` for this view (None where none are offered)."""
    if not offered(view):
        return None
    return partial(actions_html, view, edit=edit, panel=panel)


def actions_html(view: RunView, i: int, edit: Edit = NO_EDIT, *, panel: str = "") -> str:
    """Step i's buttons (data attributes: the action, the step, the panel whose hidden textbox
    gets the command) and what the author had done to it again; "" for a step with no revision
    or a run that offers no actions. ``edit``: the article shown, its steps undone and taken."""
    card = view.cards.get(i)
    if card is None or card.revised is None or not offered(view):
        return ""
    undone, taken = set(edit.undone), set(edit.taken)
    revs = view.edits
    buttons = []
    if i in revs.undoable():
        if i not in undone:
            buttons.append(_button("undo", "Undo", "Undo this step's revision in the article below", i, panel))
        elif revs.mode == PARAGRAPH or i == min(undone):  # cumulative: the later ones come back with it
            buttons.append(_button("undo", "Put back", "Put this step's revision back in the article", i, panel))
    if i in revs.takeable():
        label, title = (("Drop", "Keep the text as it stood, not the refused revision") if i in taken
                        else ("Take", "Take the refused revision into the article"))
        buttons.append(_button("take", label, title, i, panel))
    later = "; the steps after it are revised again on top of it" if revs.mode == CUMULATIVE else ""
    buttons.append(_button("regenerate", "↻ Regenerate",
                           f"Revise this step again with the same query and passages{later}", i, panel))
    buttons.append(_button("search", "⌕ Search again", f"Search again for this step with your own query{later}",
                           i, panel, query=card.query))
    buttons.append(_button("instruct", "✎ Revise as I say",
                           f"Revise this step as your one line asks, beside its passages{later}", i, panel))
    buttons.append(_button(ADD, "＋ Section after", "Add a new section after this step from your one line: its "
                           "own search and revision" + ("; the steps after it are revised again" if later else ""),
                           i, panel))
    pages = json.dumps([p.url for p in card.pages])
    return (f"<span class='rat-act-bar' data-rat-bar='1' data-panel='{esc(panel)}' data-i='{i}' "
            f"data-pages='{esc(pages)}'>{''.join(buttons)}</span>{redone_html(view, i)}")


def _button(action: str, label: str, title: str, i: int, panel: str, *, query: str = "") -> str:
    extra = f" data-query='{esc(query)}'" if action == "search" else ""
    return (f"<button type='button' class='rat-act rat-act-{action}' data-rat-act='{action}' data-i='{i}' "
            f"data-panel='{esc(panel)}' title='{esc(title)}'{extra}>{esc(label)}</button>")


def redone_html(view: RunView, i: int) -> str:
    """What the author had step i done again, in order: "regenerated 14:02", "searched again:
    “query” 14:05", "excluded example.com 14:07" ("" for nothing)."""
    card = view.cards.get(i)
    lines = [redone_line(e.action, e.query, e.exclude, e.at, e.instruction) for e in (card.redone if card else ())]
    return f"<span class='rat-redone'>{' · '.join(esc(line) for line in lines)}</span>" if lines else ""


def redone_line(action: str, query: str, exclude: Iterable[str], at: str, instruction: str = "") -> str:
    what = {"regenerate": "regenerated", "search": f"searched again: “{query}”",
            "exclude": f"excluded {', '.join(site(u) for u in exclude)}",
            "instruct": f"revised as asked: “{short(instruction, SITE_CHARS)}”",
            ADD: f"added by you: “{short(instruction, SITE_CHARS)}”",
            EVERY: f"revised with the whole article as asked: “{short(instruction, SITE_CHARS)}”"}.get(action, action)
    return f"{what} {clock(at)}".strip()


SITE_CHARS = 60  # of an excluded page's address in a card's history


def site(url: str) -> str:
    """A page's address without its scheme and "www." ("example.com/wiki/Printing"), shortened."""
    parts = urlsplit(url)
    where = (parts.hostname or "").removeprefix("www.") + parts.path.rstrip("/")
    return short(where or url, SITE_CHARS)


def clock(stamp: str) -> str:
    """An ISO time stamp as local "HH:MM" ("" when it is not one)."""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%H:%M")
    except (TypeError, ValueError):
        return ""


def glue_html(panel: str) -> str:
    """The row under the cards that asks for the author's own query (hidden until Search again
    is clicked), and one line on what the actions do."""
    asks = esc(json.dumps(ASKS))
    return (f"<div class='rat-ask' id='{esc(panel)}-ask' data-panel='{esc(panel)}' data-asks='{asks}' "
            f"data-max-query='{AUTHOR_QUERY_CHARS}' data-max-instruction='{AUTHOR_INSTRUCTION_CHARS}' hidden>"
            f"<label><span class='rat-ask-what'>Your own query for step</span> <b class='rat-ask-step'></b> "
            f"<input type='text' class='rat-ask-query' maxlength='{AUTHOR_INSTRUCTION_CHARS}' "
            f"aria-label='Your own query' placeholder='a search query'></label>"
            f"<button type='button' class='rat-ask-go'>Search again</button>"
            f"<button type='button' class='rat-ask-cancel'>Cancel</button></div>"
            f"<div class='rat-note rat-act-help'>{esc(HELP)}</div>")


#: One listener for every panel (set once a page): a card's button writes its command into the
#: panel's hidden textbox (``#<panel>-cmd``) and clicks its hidden button (``#<panel>-go``); Search
#: again opens the query row first; a card's pages get their ✕ when the card is opened or pointed at.
GLUE_JS = r"""
if (!window.ratStepActions) {
  window.ratStepActions = true;
  // commands go one after the other through the one hidden textbox: a second click before the first
  // was sent waits for it (else both would send the second), then the server queues the actions
  let chain = Promise.resolve();
  const send = (panel, cmd) => {
    // (the box and button are looked for again each time, for a while: a panel drawn anew has new ones)
    chain = chain.then(() => new Promise(done => {
      let tries = 0;
      const attempt = () => {
        const box = document.querySelector(`#${panel}-cmd textarea, #${panel}-cmd input`);
        const go = document.getElementById(`${panel}-go`);
        if (!box || !go) return tries++ < 50 ? setTimeout(attempt, 100) : done();
        box.value = JSON.stringify({...cmd, nonce: Date.now()});
        box.dispatchEvent(new Event('input', {bubbles: true}));
        setTimeout(() => { go.click(); setTimeout(done, 100); }, 0);
      };
      attempt();
    }));
  };
  const GO = {search: 'Search again', instruct: 'Revise', add: 'Add the section'};
  const ask = (panel, i, query, mode) => {
    const row = document.getElementById(`${panel}-ask`);
    if (!row) return;
    row.dataset.i = i;
    row.dataset.mode = mode;
    let asks = {};
    try { asks = JSON.parse(row.dataset.asks || '{}'); } catch (e) {}
    const [what, hint] = asks[mode] || ['', ''];
    const input = row.querySelector('.rat-ask-query');
    const label = what.replace('{i}', i);
    row.querySelector('.rat-ask-what').textContent = label;
    row.querySelector('.rat-ask-step').textContent = mode === 'search' ? i : '';
    row.querySelector('.rat-ask-go').textContent = GO[mode] || 'Go';
    input.placeholder = hint;
    input.setAttribute('aria-label', label);
    input.maxLength = +(mode === 'search' ? row.dataset.maxQuery : row.dataset.maxInstruction);
    input.value = query || '';
    row.hidden = false;
    row.scrollIntoView({block: 'nearest'});
    input.focus();
    input.select();
  };
  const searchFrom = (row) => {
    const text = row.querySelector('.rat-ask-query').value.trim();
    if (!text) { row.querySelector('.rat-ask-query').focus(); return; }
    row.hidden = true;
    const mode = row.dataset.mode || 'search', i = +row.dataset.i;
    if (mode === 'search') send(row.dataset.panel, {action: 'search', i, query: text, url: ''});
    else send(row.dataset.panel, {action: mode, i: mode === 'add' ? i + 1 : i, query: '', url: '', instruction: text});
  };
  const decorate = (card) => {
    const bar = card.querySelector('[data-rat-bar]');
    if (!bar) return;
    let urls = [];
    try { urls = JSON.parse(bar.dataset.pages || '[]'); } catch (e) { return; }
    card.querySelectorAll('ul.rat-pages > li').forEach((li, k) => {
      if (li.querySelector('.rat-x') || !urls[k]) return;
      const x = document.createElement('button');
      x.type = 'button';
      x.className = 'rat-act rat-x';
      x.textContent = '✕';
      x.title = 'Exclude this source and revise the step again';
      x.setAttribute('aria-label', 'Exclude this source');
      Object.assign(x.dataset, {ratAct: 'exclude', panel: bar.dataset.panel, i: bar.dataset.i, url: urls[k]});
      li.appendChild(x);
    });
  };
  document.addEventListener('click', (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    const row = t && t.closest('.rat-ask');
    if (row && t.closest('.rat-ask-go')) { searchFrom(row); return; }
    if (row && t.closest('.rat-ask-cancel')) { row.hidden = true; return; }
    const b = t && t.closest('[data-rat-act]');
    if (!b) return;
    ev.preventDefault();  // a button in a card's header must not fold the card
    ev.stopPropagation();
    const {ratAct: action, panel, i} = b.dataset;
    if (action === 'search' || action === 'instruct' || action === 'add') {
      ask(panel, +i, action === 'search' ? b.dataset.query : '', action);
      return;
    }
    send(panel, {action, i: +i, query: '', url: b.dataset.url || ''});
  }, true);
  document.addEventListener('keydown', (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    const row = t && t.closest('.rat-ask');
    if (!row) return;
    if (ev.key === 'Enter') { ev.preventDefault(); searchFrom(row); }
    if (ev.key === 'Escape') { row.hidden = true; }
  }, true);
  const near = (ev) => {
    const card = ev.target instanceof Element ? ev.target.closest('details.rat-card') : null;
    if (card) decorate(card);
  };
  document.addEventListener('pointerover', near, true);
  document.addEventListener('focusin', near, true);
  document.addEventListener('toggle', near, true);
}
"""


def draft_cards_html(steps: Iterable[str]) -> str:
    """The draft's steps for the card editor (:data:`DRAFT_JS` draws the cards from them)."""
    return f"<div class='rat-dcards' data-steps='{esc(json.dumps(list(steps)))}'></div>"


#: The draft's card editor, per panel: draws a card per step (``data-steps``, redrawn whenever the
#: server sends new steps), and writes every change into the editor's textbox (steps joined by a
#: blank line; a blank line typed inside a card becomes a line break) with an input event. Typing
#: in the textbox itself ("Edit as text") redraws the cards.
DRAFT_JS = r"""
const box = element.closest('.rat-editor-box') || document;
const field = () => box.querySelector('.rat-editor textarea');
let steps = [];
const split = (t) => (t || '').split(/\n[ \t]*\n/).map((s) => s.trim()).filter(Boolean);
const tidy = (s) => s.replace(/\n[ \t]*(\n[ \t]*)+/g, '\n').trim();
const sync = () => {
  const f = field();
  if (!f) return;
  f.value = steps.map(tidy).filter(Boolean).join('\n\n');
  f.dispatchEvent(new Event('input', {bubbles: true}));
};
const draw = (focus) => {
  const list = element.querySelector('.rat-dcards');
  if (!list) return;
  list.replaceChildren();
  steps.forEach((text, k) => {
    const card = document.createElement('div');
    card.className = 'rat-dcard';
    card.dataset.k = k;
    const head = document.createElement('div');
    head.className = 'rat-dcard-head';
    const title = document.createElement('b');
    title.textContent = `Step ${k + 1}`;
    head.append(title);
    const acts = [['up', '↑', 'Move up'], ['down', '↓', 'Move down'], ['del', '✕', 'Delete this step']];
    for (const [act, label, tip] of acts) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `rat-dcard-${act}`;
      b.dataset.dc = act;
      b.textContent = label;
      b.title = tip;
      b.setAttribute('aria-label', `${tip} (step ${k + 1})`);
      b.disabled = (act === 'up' && k === 0) || (act === 'down' && k === steps.length - 1);
      head.append(b);
    }
    const area = document.createElement('textarea');
    area.className = 'rat-dcard-text';
    area.rows = Math.min(8, Math.max(2, Math.ceil(text.length / 70)));
    area.value = text;
    area.setAttribute('aria-label', `Step ${k + 1}`);
    card.append(head, area);
    list.append(card);
  });
  const add = document.createElement('button');
  add.type = 'button';
  add.className = 'rat-dcard-add';
  add.dataset.dc = 'add';
  add.textContent = '+ Add a step';
  list.append(add);
  if (focus !== undefined) {
    const area = list.querySelectorAll('.rat-dcard-text')[focus];
    if (area) area.focus();
  }
};
const load = () => {
  const holder = element.querySelector('.rat-dcards');
  try { steps = JSON.parse(holder ? holder.dataset.steps : '[]'); } catch (e) { steps = split(field()?.value); }
  draw();
};
element.addEventListener('click', (ev) => {
  const b = ev.target instanceof Element ? ev.target.closest('[data-dc]') : null;
  if (!b) return;
  const card = b.closest('.rat-dcard');
  const k = card ? +card.dataset.k : -1;
  const act = b.dataset.dc;
  if (act === 'add') { steps.push(''); draw(steps.length - 1); sync(); return; }
  if (act === 'del') steps.splice(k, 1);
  if (act === 'up' && k > 0) [steps[k - 1], steps[k]] = [steps[k], steps[k - 1]];
  if (act === 'down' && k < steps.length - 1) [steps[k + 1], steps[k]] = [steps[k], steps[k + 1]];
  draw();
  sync();
});
element.addEventListener('input', (ev) => {
  const area = ev.target;
  if (!(area instanceof HTMLTextAreaElement) || !area.classList.contains('rat-dcard-text')) return;
  steps[+area.closest('.rat-dcard').dataset.k] = area.value;
  sync();
});
box.addEventListener('input', (ev) => {
  if (ev.isTrusted && ev.target === field()) { steps = split(ev.target.value); draw(); }
});
load();
watch('value', load);
"""


_panels = iter(range(1, 1_000_000))


def panel_id() -> str:
    """A new panel's prefix for its hidden components' ``elem_id`` ("rat-act-1", "rat-act-2", ...)."""
    return f"rat-act-{next(_panels)}"
