"""The work in view and presentation mode (issue 23.1, 23.6), for the run panel of the Writer and
History tabs (``ui.writer.RunPanel``).

In the browser (``PANEL_JS``, attached once on page load):
  follow       while "Follow the active step" is ticked, the active step's card is scrolled into
               view whenever the steps panel changes (and kept within one screen: style.css caps
               its height); scrolling up with the wheel during a run unticks it; a card the
               author opened stays open when the panel is re-rendered
  present      the Present button opens the stage: the whole screen (the browser's full screen, where
               it allows it; else the whole window), no tables and no controls
               but the replay's, with the task, the progress line, the draft with the active step
               highlighted and the active step's card in large type, copied from the panel as it
               changes (so a live run, a replay and a seek all show on it). Space pauses or plays a
               replay, ←/→ step back and forward (they press the History tab's own buttons), Esc
               leaves.
On the server: the replay's stops (``marks``) and stepping between them (``step``); History plays
from a position, and pauses, steps and seeks by folding the events up to one (``ui.history``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from common.events import DraftReady, Event, Final, StepRevised

# elem_ids and classes the script and the style sheet share with the layouts
FOLLOW_CLASS, PRESENT_CLASS = "rat-follow", "rat-present-btn"
PLAY_ID, PAUSE_ID, BACK_ID, FORWARD_ID = "rat-replay-play", "rat-replay-pause", "rat-replay-back", "rat-replay-forward"
CONTROLS_CLASS = "rat-replay-controls"


def marks(events: Sequence[Event]) -> list[int]:
    """The positions (counts of events shown) a replay steps between: the start, just after the
    draft, after each step's revision and after the final text, and the end."""
    stops = {k + 1 for k, e in enumerate(events) if isinstance(e, DraftReady | StepRevised | Final)}
    return sorted({0, len(events), *stops})


def step(stops: Sequence[int], position: int, direction: int) -> int:
    """The stop after ``position`` (``direction`` > 0) or before it (< 0); the first or the last
    stop when there is none further."""
    if direction > 0:
        k = bisect.bisect_right(stops, position)
        return stops[min(k, len(stops) - 1)]
    k = bisect.bisect_left(stops, position) - 1
    return stops[max(k, 0)]


PANEL_JS = """() => {
  if (window.__ratPanels) { return; }
  window.__ratPanels = true;
  const opened = new Set();          // cards the author opened: kept open when re-rendered
  const followed = new WeakMap();    // steps panel -> id of the card last followed
  let stage = null, shownFrom = null, pending = false;
  const visible = el => !!el && el.getClientRects().length > 0;
  const rootOf = el => el.closest('[id^="rat-tab-"]') || document.body;
  const following = root => {
    const box = root.querySelector('.rat-follow input[type=checkbox]');
    return !box || box.checked;
  };
  const activeCard = panel => panel.querySelector('.rat-card.rat-current')
    || [...panel.querySelectorAll('.rat-card')].pop();

  const editing = new WeakSet();     // draft editors already brought into view while shown

  function follow() {
    // on the stage, the page under it stays put: scrolled, it showed the stage shifted (headless
    // Chromium in full screen); following takes up again on leaving
    if (stage && !stage.hidden) { return; }
    // a draft waiting for the author's edits (Draft only, or a run stopped at its draft): its
    // step cards are the work now, brought into view once when they appear
    for (const box of document.querySelectorAll('.rat-editor-box')) {
      if (!visible(box)) { editing.delete(box); continue; }
      const cards = box.querySelector('.rat-dcard');
      if (editing.has(box) || !cards || !following(rootOf(box))) { continue; }
      editing.add(box);
      window.scrollBy({top: box.getBoundingClientRect().top - 8, behavior: 'instant'});
    }
    for (const panel of document.querySelectorAll('.rat-steps-panel')) {
      if (!visible(panel) || !following(rootOf(panel))) { continue; }
      const card = panel.querySelector('.rat-card.rat-current');
      if (!card) { continue; }
      const box = card.getBoundingClientRect();
      const moved = followed.get(panel) !== card.id;
      if (moved || box.top < 0 || box.bottom > window.innerHeight) {
        window.scrollBy({top: box.top - 8, behavior: 'instant'});
      }
      followed.set(panel, card.id);
      const live = card.querySelector('.rat-live, .rat-caret');
      if (live) { card.scrollTop = card.scrollHeight; }
    }
  }

  function reopen() {
    for (const id of opened) {
      const card = document.querySelectorAll('details.rat-card#' + CSS.escape(id));
      card.forEach(c => { if (!c.open && !c.closest('#rat-stage')) { c.open = true; } });
    }
  }

  function buildStage() {
    stage = document.createElement('div');
    stage.id = 'rat-stage';
    stage.setAttribute('role', 'dialog');
    stage.setAttribute('aria-label', 'Presentation');
    stage.innerHTML = `<header class="rat-stage-head"><div class="rat-stage-task"></div>
      <button type="button" class="rat-stage-leave" title="Leave presentation mode (Esc)">Leave (Esc)</button></header>
      <div class="rat-stage-progress"></div>
      <main class="rat-stage-main"><section class="rat-stage-draft"></section>
      <section class="rat-stage-card"></section></main>
      <footer class="rat-stage-keys"></footer>`;
    stage.querySelector('.rat-stage-leave').addEventListener('click', leave);
    document.body.appendChild(stage);
  }

  function sync() {
    if (!stage || !shownFrom) { return; }
    const root = shownFrom;
    const task = root.querySelector('.rat-task-data');
    stage.querySelector('.rat-stage-task').textContent = task ? task.dataset.task : '';
    const progress = root.querySelector('.rat-progress');
    stage.querySelector('.rat-stage-progress').innerHTML = progress ? progress.outerHTML : '';
    const draft = root.querySelector('.rat-draft-panel ol.rat-draft, .rat-draft-panel .rat-empty');
    const left = stage.querySelector('.rat-stage-draft');
    left.innerHTML = draft ? draft.outerHTML : '';
    const steps = root.querySelector('.rat-steps-panel');
    const card = steps && activeCard(steps);
    const right = stage.querySelector('.rat-stage-card');
    right.innerHTML = '';
    if (card) {
      const copy = card.cloneNode(true);
      copy.removeAttribute('id');
      copy.open = true;
      right.appendChild(copy);
      const latest = copy.querySelector('.rat-live, .rat-diff');
      right.scrollTop = latest ? latest.offsetTop - 40 : 0;
    }
    const at = left.querySelector('li.rat-current');
    if (at) { left.scrollTop = at.offsetTop - left.clientHeight / 3; }
    const replay = !!root.querySelector('.rat-replay-controls');
    stage.querySelector('.rat-stage-keys').textContent = replay
      ? 'Space: pause / play · ← →: step back / forward · Esc: leave' : 'Esc: leave';
  }

  let wentFull = false;  // the stage asked for full screen (and got it)

  function present(root) {
    if (!stage) { buildStage(); }
    shownFrom = root;
    root.classList.add('rat-presented');
    document.body.classList.add('rat-presenting');
    window.scrollTo({top: 0, behavior: 'instant'});
    stage.hidden = false;
    sync();
    // the screen itself, where the browser allows it (a click is the gesture it asks for)
    if (document.fullscreenEnabled && !document.fullscreenElement) {
      document.documentElement.requestFullscreen().then(() => { wentFull = true; }).catch(() => {});
    }
  }

  function leave() {
    if (!stage || stage.hidden) { return; }
    stage.hidden = true;
    document.body.classList.remove('rat-presenting');
    if (shownFrom) { shownFrom.classList.remove('rat-presented'); }
    shownFrom = null;
    if (wentFull && document.fullscreenElement) { document.exitFullscreen().catch(() => {}); }
    wentFull = false;
    requestAnimationFrame(follow);  // back to the active step, where following is ticked
  }

  // Esc in full screen is the browser's: it leaves full screen without a keydown; leave the stage too
  document.addEventListener('fullscreenchange', () => {
    if (wentFull && !document.fullscreenElement) { wentFull = false; leave(); }
  });

  function press(id) {
    const button = [...(shownFrom || document).querySelectorAll('#' + id)].find(visible);
    if (button) { button.click(); }
    return !!button;
  }

  document.addEventListener('keydown', e => {
    if (!stage || stage.hidden || e.ctrlKey || e.metaKey || e.altKey) { return; }
    const typing = 'input:not([type=range]):not([type=checkbox]), textarea, select, [contenteditable=true]';
    if (e.target.closest && e.target.closest(typing)) { return; }
    if (e.key === 'Escape') { leave(); e.preventDefault(); }
    else if (e.key === ' ') { press('PAUSE_ID') || press('PLAY_ID'); e.preventDefault(); }
    else if (e.key === 'ArrowLeft') { press('BACK_ID'); e.preventDefault(); }
    else if (e.key === 'ArrowRight') { press('FORWARD_ID'); e.preventDefault(); }
  });

  document.addEventListener('click', e => {
    const target = e.target;
    if (!target.closest) { return; }
    const trigger = target.closest('.PRESENT_CLASS');
    if (trigger) { present(rootOf(trigger)); return; }
    if (target.closest('summary .rat-actions') && !target.closest('a')) { e.preventDefault(); return; }
    const summary = target.closest('details.rat-card > summary');
    if (summary && !summary.closest('#rat-stage')) {
      // what the author asked for, read now, before the click folds or opens the card: Gradio's
      // HTML component patches the panel in place, and an update that came before a later look
      // took the card's "open" away (the server draws a finished card folded), read as a close
      const card = summary.parentElement;
      if (card.open) { opened.delete(card.id); } else { opened.add(card.id); }
      setTimeout(reopen, 0);  // also a copy a re-render may have put in its place since the click
    }
  }, true);

  new MutationObserver(records => {
    if (pending || records.every(r => stage && stage.contains(r.target))) { return; }
    pending = true;
    requestAnimationFrame(() => { pending = false; reopen(); follow(); sync(); });
  }).observe(document.body, {childList: true, subtree: true, characterData: true,
                             attributes: true, attributeFilter: ['open']});  // a card folded by a patch
  window.addEventListener('wheel', e => {  // scrolling up to read: following stops (tick the box again)
    if (e.deltaY >= 0 || (stage && !stage.hidden)) { return; }
    for (const panel of document.querySelectorAll('.rat-steps-panel')) {
      const box = rootOf(panel).querySelector('.rat-follow input[type=checkbox]');
      if (visible(panel) && panel.querySelector('.rat-card.rat-current') && box && box.checked) { box.click(); }
    }
  }, {passive: true});
  document.addEventListener('change', e => {
    if (e.target.closest && e.target.closest('.rat-follow')) { follow(); }
  });
}""".replace("PAUSE_ID", PAUSE_ID).replace("PLAY_ID", PLAY_ID).replace("BACK_ID", BACK_ID) \
    .replace("FORWARD_ID", FORWARD_ID).replace("PRESENT_CLASS", PRESENT_CLASS)
