// Animation frames for a page that does not change: at most one a second (ui/server.py puts this
// script first in the head of both apps' pages, before Gradio's own code captures the function).
//
// Why: Gradio's status tracker counts an event's time with a loop of animation frames and stops it
// when the event completes; a tracker removed from the page first (the page's own "Loading..." at
// start, an output hidden while its event ran) never stops it. So an open tab that nobody touched
// asked for 60 frames a second, for good: about a tenth of a core in Chromium on this machine, an
// idle page of the app against a static one (0.09 against 0.008 CPU-s a second). A laptop spends
// it on every open tab of the Writer, the Arena and the stage.
//
// The rule, in place of window.requestAnimationFrame: a frame asked from inside a frame (a loop's
// next frame) while nothing on the page has changed for STILL_MS comes after SLOW_MS, as browsers
// already do for a hidden tab; any change to the page brings the waiting frames at once. A frame
// asked by anything else (an event, a message from the server, a timer) comes as always. So what
// moves on screen (a timer shown, a spinner, a scroll) moves as before, and a loop that changes
// nothing costs one call a second.
(() => {
  if (window.__ratIdleFrames) { return; }
  window.__ratIdleFrames = true;
  const STILL_MS = 500, SLOW_MS = 1000;
  const askFrame = window.requestAnimationFrame.bind(window);
  const cancelFrame = window.cancelAnimationFrame.bind(window);
  const report = window.reportError ? e => window.reportError(e) : e => setTimeout(() => { throw e; });
  const asked = new Map();    // our id -> the browser's id, for frames asked as always
  const waiting = new Map();  // our id -> callback, for a still page's loops
  let changed = performance.now(), inFrame = false, nextId = 1, flushing = null, timer = null;

  function call(callback, time) {
    inFrame = true;
    try { callback(time); } finally { inFrame = false; }
  }

  function flush(time) {
    flushing = null;
    const due = [...waiting.values()];
    waiting.clear();
    for (const callback of due) {
      try { call(callback, time); } catch (e) { report(e); }
    }
  }

  function wake() {  // the waiting callbacks, at the next frame
    if (waiting.size && flushing === null) {
      clearTimeout(timer);
      timer = null;
      flushing = askFrame(flush);
    }
  }

  new MutationObserver(() => { changed = performance.now(); wake(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});

  window.requestAnimationFrame = function (callback) {
    const id = nextId++;
    if (inFrame && performance.now() - changed >= STILL_MS) {
      waiting.set(id, callback);
      if (timer === null && flushing === null) { timer = setTimeout(() => { timer = null; wake(); }, SLOW_MS); }
    } else {
      asked.set(id, askFrame(time => { asked.delete(id); call(callback, time); }));
    }
    return id;
  };

  window.cancelAnimationFrame = function (id) {
    if (asked.has(id)) { cancelFrame(asked.get(id)); asked.delete(id); }
    waiting.delete(id);
  };
})();
