"""The page a share link opens (``/share/TOKEN``, ``ui.server``): one version of one run's article
with its sources, and the run's replay with presentation mode, read only, for anyone holding
the link (``core.sharing``).

One self-contained page and nothing else: no Gradio app, no API, no other run. The article is
``core.article.html``'s export (its ``<article>`` and source lists); the replay is the run's
events (as the shared version left them: ``Shared.events``) folded into frames on the server and
drawn with the Writer's own renderers (``ui.run_html``): the start, the draft, each step's query,
search, passages and revision, the final text. The page's one script (allowed by a nonce, which
the Content-Security-Policy names: nothing else runs, no inline handler, nothing is fetched)
steps and plays through the frames, and runs the Writer's presentation mode as it is
(``ui.presenting.PANEL_JS``: Present, Space, ← and →, Esc). Everything from the web or the model is
escaped by the renderers, as in the app.

    pages = SharePages(sharing)
    page = pages.page(token)          # SharePage (html, nonce, headers), or None: the link opens nothing
"""

from __future__ import annotations

import html
import json
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path

from common.events import DraftReady, Failed, Final, PassagesChosen, SearchDone, StepRedone, StepRevised
from core.article.attribution import Attribution
from core.article.blocks import language_of
from core.article.html import STYLE as ARTICLE_STYLE
from core.article.html import article_parts
from core.article.sources import SourceBook
from core.sharing import Shared, Sharing
from ui import presenting, run_html
from ui.runview import RunView

MAX_GAP = 2.0  # longest pause between two frames of a replay at 1x, in seconds (as History's)
MIN_GAP = 0.5  # shortest: each frame is seen
MAX_FRAMES = 150  # frames of one replay: past it, the stops and evenly spaced others
CACHED = 16  # pages kept, by run, version and events
#: After these events the replay has a frame: the draft, a step's search, passages and revision...
FRAMED = (DraftReady, SearchDone, PassagesChosen, StepRevised, StepRedone, Final, Failed)
STYLE_CSS = Path(__file__).with_name("style.css")
#: Gradio's theme variables the app's style sheet uses, for a page outside Gradio.
THEME = """:root { --border-color-primary: #d0d7de; --body-text-color: #1f2328; --body-text-color-subdued: #57606a;
  --background-fill-secondary: #f6f8fa; --block-background-fill: #fff; --body-background-fill: #fff;
  --color-accent: #ea580c; --border-color-accent: #ea580c; --neutral-300: #d4d4d4; --neutral-600: #525252;
  --input-background-fill: #fff; --button-primary-background-fill: #ea580c; --button-primary-text-color: #fff;
  --radius-sm: 4px; --spacing-lg: 8px; --text-md: 14px; --font: system-ui, sans-serif; }"""
PAGE_STYLE = """
.rat-share-bar { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: .55rem 1.25rem; font-size: 15px;
  color: #57606a; }
.rat-share-bar strong { color: #1f2328; }
#rat-tab-replay { max-width: 84rem; margin: 0 auto; padding: 0 1.25rem 4rem; font-size: 15px; line-height: 1.5; }
#rat-tab-replay h2 { font-size: 1.35rem; margin: 1rem 0 .6rem; border-bottom: 1px solid #d0d7de;
  padding-bottom: .3rem; }
#rat-tab-replay h3 { font-size: 1rem; margin: .8rem 0 .4rem; }
.rat-share-help { color: #57606a; margin: .2rem 0 .8rem; }
.rat-view-bar, .rat-replay-controls { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center;
  margin: .5rem 0; }
.rat-share-button { font: inherit; padding: .35rem .9rem; border-radius: 6px; border: 1px solid #d0d7de;
  background: #fff; color: #1f2328; cursor: pointer; }
.rat-share-button.rat-primary { background: #ea580c; border-color: #ea580c; color: #fff; }
.rat-replay-position { display: flex; align-items: center; gap: .5rem; flex: 1 1 16rem; }
.rat-replay-position input { flex: 1 1 auto; }
.rat-share-cols { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 3fr); gap: 1.5rem; margin-top: .6rem; }
@media (max-width: 800px) { .rat-share-cols { grid-template-columns: minmax(0, 1fr); } }
body.rat-presenting .rat-presented .rat-replay-controls { background: #fff; }
#rat-stage main.rat-stage-main { max-width: none; margin: 0; padding: 0; }  /* not the article's <main> */
"""


@dataclass(frozen=True)
class SharePage:
    """A share link's page: its ``html``, and the ``nonce`` its one script carries."""

    html: str
    nonce: str

    @property
    def policy(self) -> str:
        """The page's Content-Security-Policy: its own style and its one script; nothing fetched,
        no form, no frame, and no page may frame it."""
        return (f"default-src 'none'; script-src 'nonce-{self.nonce}'; style-src 'unsafe-inline'; img-src data:; "
                "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

    @property
    def headers(self) -> dict[str, str]:
        """The response's headers: the policy, no caching, no referrer (a click on a source must not
        tell its site the secret link) and no indexing."""
        return {"Content-Security-Policy": self.policy, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                "X-Robots-Tag": "noindex, nofollow", "X-Content-Type-Options": "nosniff"}


class SharePages:
    """The pages of ``sharing``'s links, each built once per run, version and stored events (a small
    cache: the replay's frames take a moment to draw). Thread-safe."""

    def __init__(self, sharing: Sharing, *, cached: int = CACHED):
        self.sharing = sharing
        self.cached = cached
        self._pages: OrderedDict[tuple, str] = OrderedDict()
        self._lock = threading.Lock()

    def page(self, token: str) -> SharePage | None:
        """The page of the open link ``token``; None for an unknown, revoked or malformed one.
        Raises StoreError when the store fails."""
        shared = self.sharing.open(token)
        if shared is None:
            return None
        key = (shared.run.id, shared.version, len(shared.events), shared.run.status)
        with self._lock:
            body = self._pages.get(key)
            if body is not None:
                self._pages.move_to_end(key)
        if body is None:
            body = page_html(shared)
            with self._lock:
                self._pages[key] = body
                while len(self._pages) > self.cached:
                    self._pages.popitem(last=False)
        nonce = secrets.token_urlsafe(18)
        return SharePage(body.replace(NONCE_SLOT, nonce), nonce)


NONCE_SLOT = "\x00nonce\x00"  # where a page's nonce goes (a new one for each answer)


def page_html(shared: Shared) -> str:
    """The whole page of ``shared`` (with ``NONCE_SLOT`` where its script's nonce goes)."""
    article = shared.shown.article
    language = language_of(article)
    lang = f' lang="{_esc(language)}"' if language else ""
    title = " ".join(article.heading.split())
    frames, stops = replay_frames(shared)
    data = json.dumps({"frames": frames, "stops": stops}, ensure_ascii=False).replace("<", "\\u003c")
    last = frames[-1]
    parts = [
        "<!DOCTYPE html>", f"<html{lang}>", "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">', '<meta name="robots" content="noindex, nofollow">',
        f"<title>{_esc(title)} · shared from RAT Studio</title>",
        f"<style>{THEME}\n{ARTICLE_STYLE}\n{app_style()}\n{PAGE_STYLE}</style>", "</head>", "<body>",
        f'<div class="rat-share-bar"><strong>RAT Studio</strong> · a shared article, read only · {_esc(which(shared))}'
        "</div>",
        '<main id="rat-share-article">', *article_parts(article), "</main>",
        '<section id="rat-tab-replay" class="rat-share-replay" aria-label="Replay">',
        "<h2>How it was written: the replay</h2>",
        '<p class="rat-share-help">The run step by step: the draft, each step\'s search, the pages read, the passage '
        "used and the revision. Play it, step through it, or present it full screen (Space: pause / play, ← →: "
        "step, Esc: leave).</p>",
        '<div class="rat-view-bar">',
        f'<label class="{presenting.FOLLOW_CLASS}"><input type="checkbox" checked> Follow the active step</label>',
        f'<button type="button" class="rat-share-button {presenting.PRESENT_CLASS}">Present</button>', "</div>",
        f'<div class="{presenting.CONTROLS_CLASS}">',
        f'<button type="button" class="rat-share-button" id="{presenting.BACK_ID}">◀ Step back</button>',
        f'<button type="button" class="rat-share-button rat-primary" id="{presenting.PLAY_ID}">▶ Play</button>',
        f'<button type="button" class="rat-share-button rat-primary" id="{presenting.PAUSE_ID}" hidden>⏸ Pause'
        "</button>",
        f'<button type="button" class="rat-share-button" id="{presenting.FORWARD_ID}">Step forward ▶</button>',
        '<label class="rat-replay-position">Position <input type="range" min="0" '
        f'max="{len(frames) - 1}" value="{len(frames) - 1}" step="1"></label>',
        '<label>Speed <select class="rat-share-speed"><option value="1">1×</option><option value="2" selected>2×'
        '</option><option value="4">4×</option></select></label>', "</div>",
        f'<div class="rat-share-progress">{last["progress"]}</div>',
        '<div class="rat-share-cols">',
        f'<div class="rat-draft-panel"><h3>Draft</h3><div class="rat-share-draft">{last["draft"]}</div></div>',
        f'<div><h3>Search and revision, step by step</h3><div class="rat-steps-panel">{last["steps"]}</div></div>',
        "</div>", "</section>",
        f'<script type="application/json" id="rat-share-frames">{data}</script>',
        f'<script nonce="{NONCE_SLOT}">({presenting.PANEL_JS})();\n{PLAYER_JS}</script>',
        "</body>", "</html>", ""]
    return "\n".join(parts)


def which(shared: Shared) -> str:
    """The bar's words for the version shown."""
    version = shared.shown.version
    if version is None:
        return "the model's own text"
    return f"version {version.n}, saved {_day(version.created)}"


def replay_frames(shared: Shared) -> tuple[list[dict], list[int]]:
    """The replay as frames (each the progress line, draft and step cards after some of the events,
    and ``wait``: seconds to the next at 1x) and the frames of its stops (``presenting.marks``:
    the start, the draft, each step's revision, the final text), for step back and forward. The
    last frame is the run as the shared version reads (its marks numbered as the article's)."""
    events = list(shared.events)
    stops = set(presenting.marks(events))
    at = sorted({0, len(events), *stops, *(k + 1 for k, e in enumerate(events) if isinstance(e, FRAMED))})
    if len(at) > MAX_FRAMES:
        others = [k for k in at if k not in stops]
        room = max(MAX_FRAMES - len(stops), 0)
        keep = {others[round(j * (len(others) - 1) / max(room - 1, 1))] for j in range(room)} if others else set()
        at = sorted(stops | keep)
    seconds = _seconds(shared.stamps)
    view = RunView(run_id=shared.run.id, method=shared.run.method, task=shared.run.task, replayed=True)
    frames: list[dict] = []
    done = 0
    for k in at:
        for event in events[done:k]:
            view.apply(event, 0.0)
        done = k
        if k == len(events):
            frames.append(_settled(shared, view))
        else:
            frames.append({"progress": run_html.progress_html(view), "draft": run_html.draft_html(view),
                           "steps": run_html.steps_html(view)})
        frames[-1]["at"] = k
    for j, frame in enumerate(frames):
        nxt = frames[j + 1]["at"] if j + 1 < len(frames) else None
        gap = seconds[nxt - 1] - seconds[max(frame["at"] - 1, 0)] if nxt is not None and seconds else 0.0
        frame["wait"] = round(min(MAX_GAP, max(MIN_GAP, gap)), 2)
    return frames, [j for j, frame in enumerate(frames) if frame["at"] in stops]


def _settled(shared: Shared, view: RunView) -> dict:
    """The last frame: as the Writer shows the shared version (``RunPanel.shown_outputs``)."""
    shown = shared.shown
    order = Attribution(shown.cited).order()
    labels = SourceBook.from_events(view.events).numbers()
    marks = {label: order[url] for url, label in labels.items() if url in order}
    return {"progress": run_html.progress_html(view, str(shared.run.status), shown=shown.cited,
                                               unchecked=shown.article.unchecked),
            "draft": run_html.draft_html(view),
            "steps": run_html.steps_html(view, shown.edit, marks=marks)}


def _seconds(stamps: Sequence[str]) -> list[float]:
    out: list[float] = []
    for stamp in stamps:
        try:
            out.append(datetime.fromisoformat(stamp).timestamp())
        except (TypeError, ValueError):
            out.append(out[-1] if out else 0.0)
    return out


def _day(stamp: str) -> str:
    try:
        return datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError):
        return stamp[:16]


@cache
def app_style() -> str:
    """The app's style sheet (``ui/style.css``: the step cards, the draft, presentation mode),
    without its comments."""
    return re.sub(r"/\*.*?\*/", "", STYLE_CSS.read_text(encoding="utf-8"), flags=re.S)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


# The replay's player: the frames of #rat-share-frames drawn into the panels presentation mode
# reads (ui/presenting.py), stepped between the stops, played at the speed chosen, sought.
PLAYER_JS = """(() => {
  const data = JSON.parse(document.getElementById('rat-share-frames').textContent);
  const frames = data.frames, stops = data.stops;
  const root = document.getElementById('rat-tab-replay');
  const progress = root.querySelector('.rat-share-progress');
  const draft = root.querySelector('.rat-share-draft');
  const steps = root.querySelector('.rat-steps-panel');
  const position = root.querySelector('.rat-replay-position input');
  const speed = root.querySelector('.rat-share-speed');
  const button = id => document.getElementById(id);
  const play = button('PLAY_ID'), pause = button('PAUSE_ID');
  let at = frames.length - 1, timer = null;
  function show(k) {
    at = Math.max(0, Math.min(k, frames.length - 1));
    const f = frames[at];
    progress.innerHTML = f.progress;
    draft.innerHTML = f.draft;
    steps.innerHTML = f.steps;
    position.value = String(at);
  }
  function playing(on) { play.hidden = on; pause.hidden = !on; }
  function stop() { clearTimeout(timer); timer = null; playing(false); }
  function tick() {
    if (at >= frames.length - 1) { stop(); return; }
    show(at + 1);
    timer = setTimeout(tick, frames[at].wait * 1000 / Number(speed.value || 1));
  }
  play.addEventListener('click', () => {
    if (at >= frames.length - 1) { show(0); }
    playing(true);
    clearTimeout(timer);
    timer = setTimeout(tick, frames[at].wait * 1000 / Number(speed.value || 1));
  });
  pause.addEventListener('click', stop);
  button('BACK_ID').addEventListener('click', () => {
    stop();
    const before = stops.filter(s => s < at);
    show(before.length ? before[before.length - 1] : 0);
  });
  button('FORWARD_ID').addEventListener('click', () => {
    stop();
    const after = stops.find(s => s > at);
    show(after === undefined ? frames.length - 1 : after);
  });
  position.addEventListener('input', () => { stop(); show(Number(position.value)); });
  show(at);
})();""".replace("PLAY_ID", presenting.PLAY_ID).replace("PAUSE_ID", presenting.PAUSE_ID) \
    .replace("BACK_ID", presenting.BACK_ID).replace("FORWARD_ID", presenting.FORWARD_ID)
