"""The Arena tab: an annotator sees a task and two anonymous outputs, A and B, from two methods,
votes, and only then learns which methods wrote them.

Blind for real: which method wrote which output never reaches the browser before the vote.
The browser session's ``gr.State`` holds only the annotator's name and the id of the battle
shown (Gradio keeps State values on the server; their outputs are sent to the client as None),
the battle's methods stay in the database until the arena service's ``vote`` returns them, no
component is created with a method name in its value, and every event is private in Gradio's
API (``api_visibility="private"``).

The pair fits the screen: A and B side by side in panes of a height computed from the window
(``ui/style.css``, ``#rat-arena``) that scroll on their own, optionally together; the task in a
small box of its own above them; the vote bar (the four votes, Next, Undo) always in view below;
the guidelines folded away after the first vote. Keys vote and move on (1-4 or A/B/T/X, N or
Enter, U; never while typing in a box): ``ARENA_JS``, attached on page load, clicks the real
buttons, so a key goes through the same handler as a click. Each new pair starts at the top of
both panes.

Votes by criterion (issue 40): in a campaign that names criteria, a row per criterion (A, B or
Tie) stands above the vote bar, and the overall vote is the last, submitting step: a vote with a
criterion unanswered is not counted and the message names it. By keyboard: the row in hand is
marked; ← answers A, → B, ↓ Tie, each moving on to the next row unanswered, ↑ goes back a row.
The rows are MAX_CRITERIA radios made once, shown, named and emptied per pair (only when the
campaign's criteria differ from those on screen are their labels sent again).

Sentence flags (issue 40, item 5): select a sentence in A or B (or click in it) and press F to flag
it as unsupported, W as wrong; the flags are listed under the panes (a click on one takes it
back) and go with the vote, which checks each is of its side's text (``Arena.vote``). The page
keeps them in a box hidden by CSS (``#rat-sentences``, JSON), read with the vote.

Who votes: the logged-in user (``request.username``: with accounts, the name box is hidden and
the first pair shown on page load); without one, the typed name with this browser session's id,
so one browser's votes stay together and a name typed in two browsers is two annotators. The
client's address goes to the arena's rate limit; a vote over it is not counted and the annotator
is told so (a warning, not an error: nothing went wrong on the server).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

import gradio as gr

from annotation.campaigns import MAX_CRITERIA
from annotation.errors import ArenaError, NoPairLeft
from annotation.voting.arena import MAX_COMMENT, Arena
from common.errors import StoreError
from ui.listeners import PRIVATE
from ui.render_arena import (
    CHOICE_KEYS,
    CHOICE_LABELS,
    CRITERION_CHOICES,
    CRITERION_KEYS,
    CRITERION_LABELS,
    FLAG_LABELS,
    NEXT_KEYS,
    UNDO_KEYS,
    battle_view,
    button_label,
    progress_text,
    reveal_text,
    safe_markdown,
)

if TYPE_CHECKING:
    from annotation.accounts import Accounts

MAX_NAME = 80

# The arena rules of the RAT paper's appendix C (after Chatbot Arena's), in our words.
RULES = """You see one task and two answers to it, **A** and **B**, written by two different methods.
Which method wrote which stays hidden until you have voted.

- Read both answers and choose the better one. When they are about equally good, choose **Tie**;
  when neither would be acceptable, choose **Both are bad**. A comment or a flag (an answer broken,
  empty or off-task) is welcome and goes with your vote.
- After your vote the two methods are shown. Press **Next** for another pair. Pressing Next before
  voting skips the pair; it comes back a little later. **Undo** takes back your vote within 30 s.
- Keys: **1** or **A** (A is better), **2** or **B** (B is better), **3** or **T** (Tie), **4** or **X**
  (Both are bad), **N** or **Enter** (Next), **U** (Undo); not while you type in a box.
- To flag a sentence of A or B as **unsupported** by its sources or **wrong**, select it (or click in
  it) and press **F** (unsupported) or **W** (wrong); the flags go with your vote (click one to take
  it back).
- When a study asks about criteria (a row each above the buttons), answer every row first, then
  cast your overall vote: **←** A, **→** B, **↓** Tie answer the marked row and move to the next;
  **↑** goes back a row.

Weigh the answers on:
1. **Relevance** — does it do what the task asks?
2. **Accuracy** — are its facts and steps right?
3. **Completeness** — is anything needed missing or skipped?
4. **Readability** — is it coherent and easy to follow?

Do not let the length of an answer or its place (A or B) decide for you."""

START_HINT = "Type your name and press **Start** to get your first pair."
ALL_JUDGED = ("### Nothing left to judge\nYou have judged every pair there is — thank you! "
              "Ask the study's admin for more.")
NOTHING_YET = "### Nothing to judge yet\nThere is no pair to compare yet: ask the study's admin for more."
CAMPAIGN_DONE = "### Your part is done\n"  # above the service's words, which name the campaign
UNDONE = "Your vote was undone: the same pair is shown again, vote again."
FLAG_CHOICES = [("Flag an output: none", ""), *((label, value) for value, label in FLAG_LABELS.items())]

#: The page's modes and which buttons each has on (the rest off): "start" before the first pair,
#: "pair" with a pair to vote on, "voted" after a vote counted (Undo on), "closed" with no pair to
#: vote on (none left, or a vote that can no longer be undone). The server says the mode; the
#: page's script turns the buttons on and off (``ARENA_JS``), and the service refuses a vote on a
#: pair voted already whatever a page sends.
VOTE_IDS = [f"rat-vote-{c}" for c in CHOICE_LABELS]
MODES = {
    "start": {**dict.fromkeys(VOTE_IDS, False), "rat-next": False, "rat-undo": False},
    "pair": {**dict.fromkeys(VOTE_IDS, True), "rat-next": True, "rat-undo": False},
    "voted": {**dict.fromkeys(VOTE_IDS, False), "rat-next": True, "rat-undo": True},
    "closed": {**dict.fromkeys(VOTE_IDS, False), "rat-next": True, "rat-undo": False},
}

#: The criterion rows (``MAX_CRITERIA`` radios, shown per pair) and the keys that answer the marked one.
CRITERION_IDS = [f"rat-crit-{k}" for k in range(MAX_CRITERIA)]
_CRITERION_KEYS = {key: k for k, c in enumerate(CRITERION_CHOICES) for key in CRITERION_KEYS[c]}
#: What a vote sends after the state, comment and flag when no sentence is flagged and no
#: criterion asked: the flagged sentences (none), then each criterion row (empty).
VOTE_EXTRAS = ("", *[None] * MAX_CRITERIA)
#: The keys that flag the sentence selected (or clicked in) in A or B, and as what (``SENTENCE_FLAGS``).
SENTENCE_KEYS = {"f": "unsupported", "w": "wrong"}

#: The element each key clicks (keys as ``KeyboardEvent.key`` gives them, letters in lower case).
_KEYS = {
    **{k.lower(): f"rat-vote-{c}" for c, keys in CHOICE_KEYS.items() for k in keys},
    **{("Enter" if k == "Enter" else k.lower()): "rat-next" for k in NEXT_KEYS},
    **{k.lower(): "rat-undo" for k in UNDO_KEYS},
}

#: Run once per page on load: the hotkeys, the synchronised scrolling of A and B, and the fit of
#: the arena to the window (``--rat-arena-top``: where the arena starts, measured, so that the
#: panes take the rest of the window whatever stands above them). ``window.ratArena.top()``
#: scrolls both panes back to the top (after each new pair).
ARENA_JS = r"""() => {
  if (window.ratArena) { window.ratArena.fit(); return; }
  const KEYS = __KEYS__;
  const MODES = __MODES__;
  const CRIT_KEYS = __CRIT_KEYS__;  // key -> the index of the choice it picks in the marked row
  const CRIT_IDS = __CRIT_IDS__;
  const SENTENCE_KEYS = __SENTENCE_KEYS__;  // key -> what it flags the sentence as
  const byId = (id) => document.getElementById(id);
  const visible = (el) => !!el && el.offsetParent !== null;
  const button = (id) => {
    const el = byId(id);
    return el && (el.tagName === "BUTTON" ? el : el.querySelector("button"));
  };
  const panes = () => [...document.querySelectorAll("#rat-arena .block.rat-pane")];
  const typing = (t) => t.isContentEditable || ["TEXTAREA", "SELECT"].includes(t.tagName)
    || (t.tagName === "INPUT" && !["checkbox", "radio", "button", "submit", "range"].includes(t.type));
  // The criterion rows: those shown, whether each is answered, and the one in hand (``crit``).
  let crit = 0;
  const rows = () => CRIT_IDS.map(byId).filter(visible);
  const inputs = (row) => [...row.querySelectorAll("input[type=radio]")];
  const answered = (row) => inputs(row).some((i) => i.checked);
  const mark = () => {
    const shown = rows();
    crit = Math.max(0, Math.min(crit, shown.length - 1));
    shown.forEach((row, k) => row.classList.toggle("rat-crit-current", k === crit));
  };
  const firstOpen = () => { const k = rows().findIndex((r) => !answered(r)); return k < 0 ? null : k; };
  let keyed = false;  // a key is answering the marked row (its click is not the annotator's own)
  document.addEventListener("change", (e) => {  // a click on a row: the next row unanswered is in hand
    const row = !keyed && e.target instanceof Element && e.target.closest(".rat-crit");
    if (!row) return;
    const k = rows().indexOf(row);
    if (k >= 0) { crit = k; const next = firstOpen(); if (next !== null) crit = next; mark(); }
  }, true);
  // Sentence flags: [{side, sentence, kind}], kept in the hidden box the vote reads and listed.
  let flags = [];
  const render = () => {
    const box = document.querySelector("#rat-sentences textarea, #rat-sentences input");
    if (box) {
      box.value = flags.length ? JSON.stringify(flags) : "";
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const list = byId("rat-sflags");
    if (!list) return;
    list.replaceChildren(...flags.map((f, k) => {
      const item = document.createElement("button");
      item.type = "button";
      item.className = "rat-sflag";
      item.title = "Take this flag back";
      item.textContent = `${f.side.toUpperCase()} · ${f.kind}: “${f.sentence}” ✕`;
      item.addEventListener("click", () => { flags.splice(k, 1); render(); });
      return item;
    }));
  };
  const sentenceAt = (sel) => {  // the selection's text, or the sentence the caret is in
    if (!sel || !sel.rangeCount) return null;
    const node = sel.anchorNode && (sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement);
    const pane = node && node.closest("#rat-pane-a, #rat-pane-b");
    if (!pane) return null;
    const side = pane.id === "rat-pane-a" ? "a" : "b";
    let text = sel.toString().trim();
    if (!text) {
      const block = node.closest("p, li, h1, h2, h3, h4, h5, h6, td, blockquote") || pane;
      const before = document.createRange();
      before.setStart(block, 0);
      before.setEnd(sel.anchorNode, sel.anchorOffset);
      const all = block.textContent, at = before.toString().length;
      const ends = /[.!?。！？]+["'”’)]*\s*/g;
      let start = 0, end = all.length, m;
      while ((m = ends.exec(all))) {
        if (m.index + m[0].length <= at) start = m.index + m[0].length;
        else { end = m.index + m[0].length; break; }
      }
      text = all.slice(start, end).trim();
    }
    return text ? { side, sentence: text.replace(/\s+/g, " ").slice(0, 1000) } : null;
  };
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const t = e.target;
    if (t && t.tagName && typing(t)) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (key in SENTENCE_KEYS && mode === "pair") {
      const found = sentenceAt(window.getSelection());
      if (!found) return;
      e.preventDefault();
      const flag = { ...found, kind: SENTENCE_KEYS[key] };
      if (!flags.some((f) => f.side === flag.side && f.sentence === flag.sentence && f.kind === flag.kind)) {
        flags.push(flag);
        render();
      }
      return;
    }
    const shown = mode === "pair" ? rows() : [];
    if (shown.length && (key in CRIT_KEYS || key === "ArrowUp")) {
      e.preventDefault();
      if (e.repeat) return;
      if (key === "ArrowUp") { crit = Math.max(0, crit - 1); mark(); return; }
      mark();
      const at = crit;
      const input = inputs(shown[at])[CRIT_KEYS[key]];
      keyed = true;
      try { if (input) input.click(); } finally { keyed = false; }
      const next = shown.findIndex((r, k) => k > at && !answered(r));
      const open = next >= 0 ? next : firstOpen();
      if (open !== null) crit = open;
      mark();
      return;
    }
    const id = KEYS[key];
    if (!id) return;
    if (shown.length && id.startsWith("rat-vote-")) {  // the vote goes on (the server names a row left open)
      const open = firstOpen();
      if (open !== null) { crit = open; mark(); }
    }
    if (key === "Enter" && t && t.closest && t.closest("button, a, summary, [role=button], [role=option]")) return;
    const b = button(id);
    if (!visible(b) || b.disabled) return;
    e.preventDefault();
    if (!e.repeat) b.click();
  });
  document.addEventListener("scroll", (e) => {
    const pane = e.target;
    if (!(pane instanceof Element) || !pane.matches("#rat-arena .block.rat-pane")) return;
    const sync = document.querySelector("#rat-sync input[type=checkbox]");
    if (!sync || !sync.checked) return;
    const span = pane.scrollHeight - pane.clientHeight;
    const ratio = span > 0 ? pane.scrollTop / span : 0;
    for (const other of panes()) {
      const target = ratio * (other.scrollHeight - other.clientHeight);
      if (other !== pane && Math.abs(other.scrollTop - target) > 2) other.scrollTop = target;
    }
  }, true);
  // Which buttons are on, by the page's mode: set here from the mode each event returns, not by
  // updating the buttons from the server (Gradio rebuilds a component for each such update).
  let mode = "start";
  const apply = () => {
    const on = MODES[mode] || MODES.start;
    for (const [id, enabled] of Object.entries(on)) {
      const b = button(id);
      if (b && b.disabled === enabled) b.disabled = !enabled;
    }
  };
  const root = document.documentElement;
  const fit = () => {
    apply();
    mark();
    const arena = byId("rat-arena");
    if (!visible(arena)) return;
    const top = Math.round(arena.getBoundingClientRect().top + window.scrollY) + "px";
    if (root.style.getPropertyValue("--rat-arena-top") !== top) root.style.setProperty("--rat-arena-top", top);
  };
  new ResizeObserver(fit).observe(document.body);
  window.addEventListener("resize", fit);
  window.ratArena = {
    fit,
    // (the rows of a new campaign's criteria appear a moment after the event: marked again then)
    top: () => {
      for (const p of panes()) p.scrollTop = 0;
      crit = 0; flags = []; render(); fit(); setTimeout(mark, 150);
    },
    mode: (m) => { if (m) mode = m; apply(); },
  };
  fit();
}""".replace("__KEYS__", json.dumps(_KEYS)).replace("__MODES__", json.dumps(MODES)).replace(
    "__CRIT_KEYS__", json.dumps(_CRITERION_KEYS)).replace("__CRIT_IDS__", json.dumps(CRITERION_IDS)).replace(
    "__SENTENCE_KEYS__", json.dumps(SENTENCE_KEYS))

#: After an event: the buttons of the mode it returned.
MODE_JS = "(mode) => { if (window.ratArena) window.ratArena.mode(mode); }"
#: After an event that shows a pair: the same, and both panes back at the top.
SHOWN_JS = "(mode) => { if (window.ratArena) { window.ratArena.mode(mode); window.ratArena.top(); } }"

log = logging.getLogger(__name__)


def unavailable(what: str, exc: StoreError) -> gr.Error:
    """What an annotator is told when the database refuses (full, locked, a PostgreSQL server
    restarting): ``what`` happened and what to do, never the database's own words (they name its
    file or its host and port, issue 38); those go to the server's log, as one line (a refusal is
    expected, not a bug: no traceback)."""
    log.warning("Arena: %s: %s", what.lower(), exc)
    return gr.Error(f"{what}: the server could not reach its database just now. Try again in a minute; "
                    "if it keeps happening, tell the study's admin.", print_exception=False)


# -- handlers ---------------------------------------------------------------------------------


class ArenaTab:
    """The components and handlers of one Arena tab. Per-user data lives in ``state`` only:
    ``{"annotator": name, "battle": id or None, "left": pairs left when it was shown}`` (the
    battle on screen, voted on or not)."""

    def __init__(self, service: Arena, accounts: Accounts | None = None, *, start_on_load: bool = False):
        self.arena = service
        self.accounts = accounts
        self.start_on_load = start_on_load

    def load(self, request: gr.Request) -> dict:
        """With a logged-in user, no name to type: their first pair at once where the Arena is the
        page (``start_on_load``: an annotator's), else their name in the box and Start (an admin's
        whole app starts no battle by being opened); without a login, the name box."""
        user = getattr(request, "username", None)
        if not user:
            return {self.name_row: gr.update(visible=True)}  # (an empty dict reads as one output)
        if not self.start_on_load:
            return {self.name_row: gr.update(visible=True), self.name: gr.update(value=str(user), interactive=False),
                    self.task: "Press **Start** to get your first pair: your votes are kept under your account."}
        return {**self.next({"annotator": str(user), "battle": None}), self.name_row: gr.update(visible=False)}

    def start(self, name: str, request: gr.Request) -> dict:
        return {**self.next({"annotator": annotator_of(name, request), "battle": None}),
                self.name_row: gr.update(visible=False)}

    def next(self, state: dict | None) -> dict:
        """The next pair (a pair left without a vote comes back later: ``Arena.next_pair``)."""
        if not state or not state.get("annotator"):
            raise gr.Error("Type your name and press Start first.", print_exception=False)
        try:
            shown = self.arena.next_pair(state["annotator"])
        except NoPairLeft as exc:
            return self._empty(state, self._none_left(state["annotator"], exc))
        except StoreError as exc:
            raise unavailable("No pair could be loaded", exc) from exc
        return self._show(state, shown)

    def _none_left(self, annotator: str, exc: NoPairLeft) -> str:
        """Why there is no pair: in a campaign, the service's words (their part is done, naming
        the campaign); in the open arena the tab's own (its words name the command line, which
        annotators do not have). Raises gr.Error for a store that cannot be read."""
        try:
            in_campaign = bool(self.arena.campaigns.for_annotator(annotator))
        except StoreError as exc_store:
            raise unavailable("No pair could be loaded", exc_store) from exc_store
        if in_campaign:
            return f"{CAMPAIGN_DONE}{safe_markdown(str(exc))}"
        return ALL_JUDGED if exc.judged_all else NOTHING_YET

    def vote(self, choice: str, state: dict | None, comment: str = "", flag: str = "",
             request: gr.Request | None = None, picks: list[str | None] | None = None,
             sentences: str = "") -> dict:
        """Cast ``choice`` with the comment, flag, the criterion rows' ``picks`` (in the order of
        the criteria on screen, ``state["criteria"]``) and the flagged ``sentences`` (the page's
        JSON list of {side, sentence, kind})."""
        if not state or not state.get("battle"):
            raise gr.Error("There is no pair to vote on: press Next.", print_exception=False)
        client = getattr(request, "client", None)
        criteria = dict(zip(state.get("criteria") or (), picks or (), strict=False))
        try:
            flagged = sentence_flags(sentences)
            revealed = self.arena.vote(state["battle"], state["annotator"], choice,
                                       address=getattr(client, "host", None), comment=comment or "", flag=flag or None,
                                       criteria=criteria, sentences=flagged)
        except ArenaError as exc:  # over the rate limit, or a bad note: not counted, nothing went wrong
            # said in the page (a direct event has no stream to carry a toast)
            return {self.reveal: f"**Not counted.** {safe_markdown(str(exc))}"}
        except StoreError as exc:
            raise unavailable("Your vote was not saved, so it does not count", exc) from exc
        # (the comment and flag stay on screen as sent until Next clears them, and the guidelines
        # fold once, at the first vote: each output costs every vote Gradio's processing)
        out = {self.reveal: reveal_text(revealed), self.mode: "voted",
               self.progress: self._progress(state["annotator"], _one_fewer(state.get("left")))[0]}
        if state.get("rules", True):
            out.update({self.rules: gr.Accordion(open=False), self.state: {**state, "rules": False}})
        return out

    def undo(self, state: dict | None) -> dict:
        """Take back the vote just cast (``Arena.undo``) and show its pair again to vote anew."""
        if not state or not state.get("annotator"):
            raise gr.Error("There is no vote to undo.", print_exception=False)
        try:
            shown = self.arena.undo(state["annotator"], state.get("battle"))
        except ArenaError as exc:  # too late, or not the last vote: said in the page, nothing went wrong
            return {self.mode: "closed", self.reveal: safe_markdown(str(exc))}
        except StoreError as exc:
            raise unavailable("Your vote could not be taken back", exc) from exc
        return self._show(state, shown, UNDONE)

    def _show(self, state: dict, shown, reveal: str = "") -> dict:
        task, a, b = battle_view(shown, shown.style)  # the campaign's style, else the arena's
        return self._view({**state, "battle": shown.battle_id}, task, a, b, reveal, voting=True,
                          criteria=list(shown.criteria))

    def _empty(self, state: dict, message: str) -> dict:
        return self._view({**state, "battle": None}, message, "", "", "", voting=False)

    def _view(self, state: dict, task: str, a: str, b: str, reveal: str, *, voting: bool,
              criteria: list[str] | None = None) -> dict:
        line, left = self._progress(state["annotator"])
        criteria = criteria or []
        return {
            self.state: {**state, "left": left, "criteria": criteria}, self.task: task, self.out_a: a,
            self.out_b: b, self.reveal: reveal, self.comment: "", self.flag: "", self.progress: line,
            self.mode: "pair" if voting else "closed", **self._rows(state.get("criteria") or [], criteria),
            self.sentences: "",
        }

    def _rows(self, before: list[str], now: list[str]) -> dict:
        """The criterion rows emptied for a new pair; shown, named and hidden again only when the
        criteria on screen change (``before``: those shown until now)."""
        if list(before) == list(now):
            return dict.fromkeys(self.criteria, None)
        return {row: gr.update(visible=k < len(now), label=now[k] if k < len(now) else "", value=None)
                for k, row in enumerate(self.criteria)}

    def _progress(self, annotator: str, left: int | None = None) -> tuple[str, int | None]:
        """The progress line, with the account's quota (and completion code, once it is reached),
        and the pairs left (``left``: known already, e.g. after a vote, one fewer than when the
        pair was shown: the vote handler then reads no pairs)."""
        try:
            account = self.accounts.get(annotator) if self.accounts is not None else None
            quota = account.quota if account is not None else None
            progress = self.arena.progress(annotator, quota, left=left)
            # the code once the quota shown is cast (a campaign's, when smaller than the account's)
            code = account.code_after(progress.total, progress.quota) if account is not None else None
        except StoreError as exc:
            log.warning("Arena: the progress of %r could not be read: %s", annotator, exc)
            return "*Progress unavailable for now.*", None
        line = progress_text(progress)
        return (f"{line} · your completion code: **{safe_markdown(code)}**" if code else line), progress.left

    # -- layout ---------------------------------------------------------------------------------
    def layout(self) -> None:
        self.state = gr.State(None)
        with gr.Column(elem_id="rat-arena"):
            with gr.Accordion("How to judge", open=True, elem_id="rat-rules") as self.rules:
                gr.Markdown(RULES)
            with gr.Row(equal_height=True, elem_id="rat-name-row") as self.name_row:
                self.name = gr.Textbox(label="Your name", show_label=False, container=False, scale=4,
                                       placeholder="Your name, e.g. ana", max_length=MAX_NAME)
                self.start_btn = gr.Button("Start", variant="primary", scale=1, min_width=80)
            self.progress = gr.Markdown(elem_id="rat-progress-line")
            self.task = gr.Markdown(START_HINT, elem_id="rat-task")
            with gr.Row(elem_id="rat-panes", equal_height=True):
                self.out_a = self._pane("A")
                self.out_b = self._pane("B")
            with gr.Row(elem_id="rat-notes", equal_height=True):
                self.comment = gr.Textbox(show_label=False, label="Comment", container=False, scale=4,
                                          max_length=MAX_COMMENT,
                                          placeholder=f"Comment (optional, up to {MAX_COMMENT:,} characters): "
                                                      "sent with your vote", elem_id="rat-comment")
                self.flag = gr.Dropdown(FLAG_CHOICES, value="", label="Flag an output", show_label=False,
                                        container=False, scale=2, elem_id="rat-flag")
                self.sync = gr.Checkbox(label="Scroll A and B together", value=False, container=False, scale=2,
                                        elem_id="rat-sync")
            with gr.Row(elem_id="rat-sflags-row"):  # flagged sentences (F, W): the page's script fills both
                self.sentence_list = gr.HTML("", elem_id="rat-sflags", padding=False)
                self.sentences = gr.Textbox("", elem_id="rat-sentences", elem_classes="rat-offscreen", container=False,
                                            show_label=False, max_lines=1)
            with gr.Row(elem_id="rat-criteria"):  # (shown per pair: a campaign's criteria, ``_rows``)
                self.criteria = [gr.Radio([(button_label(CRITERION_LABELS[c], CRITERION_KEYS[c]), c)
                                           for c in CRITERION_CHOICES], value=None, label=f"criterion {k + 1}",
                                          visible=False, elem_id=elem_id, elem_classes="rat-crit", min_width=240)
                                 for k, elem_id in enumerate(CRITERION_IDS)]
            with gr.Row(elem_id="rat-votebar"):
                # (on and off by the page's mode: MODES, ARENA_JS)
                self.buttons = {c: gr.Button(button_label(label, CHOICE_KEYS[c]), elem_id=elem_id, min_width=80)
                                for (c, label), elem_id in zip(CHOICE_LABELS.items(), VOTE_IDS, strict=True)}
                self.next_btn = gr.Button(button_label("Next", NEXT_KEYS), variant="primary", elem_id="rat-next",
                                          min_width=80)
                self.undo_btn = gr.Button(button_label("Undo", UNDO_KEYS), elem_id="rat-undo", min_width=80)
            self.reveal = gr.Markdown(elem_id="rat-reveal")
            self.mode = gr.Textbox("start", visible=False, elem_id="rat-mode")  # MODES: what the page shows

    @staticmethod
    def _pane(side: str) -> gr.Markdown:
        with gr.Column(elem_classes="rat-pane-column", min_width=200):
            gr.Markdown(f"**{side}**", elem_classes="rat-pane-head")
            return gr.Markdown(elem_id=f"rat-pane-{side.lower()}", elem_classes="rat-pane")

    def wire(self) -> None:
        view = [self.state, self.task, self.out_a, self.out_b, self.reveal, self.comment, self.flag, self.progress,
                self.mode, *self.criteria, self.sentences]
        # (postprocess off: the values go out as the handlers make them, without Gradio's per-output
        # pass in a worker thread; Markdown's would only dedent them)
        private = {**PRIVATE, "queue": True, "concurrency_limit": None, "postprocess": False}
        #: An annotator's clicks (next pair, vote, undo) skip Gradio's queue: one short HTTP POST
        #: each, answered when the handler returns (a few ms of our work), where the queue's join,
        #: event stream and status messages cost about as much CPU again as the whole event
        #: (bench/arena_scale.py). The queue's limits do not apply to them; nothing here runs long.
        direct = {**PRIVATE, "queue": False, "postprocess": False}
        shown = {"fn": None, "js": SHOWN_JS, "inputs": self.mode, **PRIVATE}
        moded = {"fn": None, "js": MODE_JS, "inputs": self.mode, **PRIVATE}
        gr.on(None, None, js=ARENA_JS, **PRIVATE)  # on page load, in the browser only
        # On the admin's page (no pair on load) the load sets three outputs, and it names only those:
        # the browser keeps a loading status for each output an event names, and walks its tree of
        # components for every one of them on each message of every later event (a run's streamed
        # frames included), so 17 outputs named in vain cost the Writer's frames that much again.
        loaded = [*view, self.name_row, self.name] if self.start_on_load else [self.task, self.name_row, self.name]
        gr.on(None, self.load, outputs=loaded, **private).then(**shown)
        gr.on([self.start_btn.click, self.name.submit], self.start, inputs=self.name, outputs=[*view, self.name_row],
              **private).then(**shown)
        self.next_btn.click(self.next, inputs=self.state, outputs=view, **direct).then(**shown)
        self.undo_btn.click(self.undo, inputs=self.state, outputs=view, **direct).then(**shown)
        voted = [self.reveal, self.mode, self.progress, self.rules, self.state]
        for choice, button in self.buttons.items():
            button.click(self.voter(choice), inputs=[self.state, self.comment, self.flag, self.sentences,
                                                     *self.criteria], outputs=voted, **direct).then(**moded)

    def voter(self, choice: str):
        """The click handler of one vote button (a function, not a partial: Gradio hands a
        ``gr.Request`` only to parameters it can see annotated, before any ``*args``): its inputs
        are the state, comment, flag, flagged sentences and each criterion row (``VOTE_EXTRAS``:
        what a page with neither sends after the first three)."""

        def on_vote(request: gr.Request, state: dict | None, comment: str, flag: str, sentences: str = "",
                    *picks: str | None) -> dict:
            return self.vote(choice, state, comment, flag, request, list(picks), sentences)

        return on_vote


def sentence_flags(sent: str | None) -> list[tuple[str, str, str]]:
    """The page's flagged sentences (a JSON list of {side, sentence, kind}; "" for none) as
    ``Arena.vote`` takes them. Raises ArenaError for what the page's script never writes."""
    if not (sent or "").strip():
        return []
    try:
        return [(str(f["side"]), str(f["sentence"]), str(f["kind"])) for f in json.loads(sent)]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise ArenaError("Cannot record the vote: the flagged sentences could not be read; flag them again.") from exc


def _one_fewer(left: int | None) -> int | None:
    """The pairs left once the pair on screen has its vote (None: not known)."""
    return None if left is None else max(0, left - 1)


def annotator_of(name: str, request: gr.Request | None) -> str:
    """Who is voting: the logged-in user, else the typed name with the browser session's id.
    Raises gr.Error for a missing or over-long name."""
    user = getattr(request, "username", None)
    if user:
        return str(user)
    name = (name or "").strip()
    if not name:
        raise gr.Error("Type your name first: votes are kept under it.", print_exception=False)
    if len(name) > MAX_NAME:
        raise gr.Error(f"Use a name of at most {MAX_NAME} characters.", print_exception=False)
    session = (getattr(request, "session_hash", None) or "")[:8]
    return f"{name} · {session}" if session else name


def build(service: Arena, accounts: Accounts | None = None, *, start_on_load: bool = False) -> ArenaTab:
    """Create the Arena tab's components inside the caller's ``gr.Tab``/``gr.Blocks`` context.
    ``accounts``: for a logged-in account's quota (in the progress line) and completion code;
    ``start_on_load``: a logged-in user's first pair comes with the page (the annotators' app)."""
    tab = ArenaTab(service, accounts, start_on_load=start_on_load)
    tab.layout()
    tab.wire()
    return tab
