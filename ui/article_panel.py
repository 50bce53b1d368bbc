"""The finished article in the Writer: what the author reads, edits, steers and takes away. The
undo and take boxes over it, its two views (Read: the text with its [n] marks, a sentence no source
supports underlined; Edit: its text), its numbered sources, the saved line and the versions list,
and its output (the download buttons, the copy buttons, its length line).

``ArticlePanel`` shows one run's article in a ``ui.writer.RunPanel``, which shows the run itself
(progress, draft, step cards) and composes the two: a handler that changes both (an undo: the
article and the step cards) lives in RunPanel, one that changes the article alone (typing, the
timer's save, "Include run notes", Read/Edit) here. Every change of the text is saved as a version
(``core.authoring``) on the server, SAVE_AFTER seconds after the last keystroke: a closed tab does
not lose it.
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
from collections.abc import Callable

import gradio as gr

from common.errors import RatStudioError
from core.article import edits
from core.article.article import Article
from core.article.citations import Cited
from core.article.pdf import PdfFontMissing
from core.authoring import NO_EDIT, Authoring, Edit, Shown, attribute
from data.versions import LATEST, MODEL, VersionRow
from ui import article_view, export_view
from ui.listeners import PRIVATE
from ui.runs_table import when
from ui.runview import RunView

EDIT = {**PRIVATE, "queue": False, "show_progress": "hidden", "trigger_mode": "always_last"}  # per keystroke
VIEW_READ, VIEW_EDIT = "Read", "Edit"  # the article's two views: with its marks, or its text to edit
SAVE_AFTER = 1.0  # seconds after the author's last keystroke that the article is saved as a version
UNDO_HELP = {
    edits.PARAGRAPH: "Each step was revised on its own: undoing a step puts back that paragraph as drafted.",
    edits.CUMULATIVE: ("Each revision rewrote the whole answer so far, and later revisions build on earlier "
                        "ones: undoing step i gives the article as it stood after step i−1, followed by steps "
                        "i…n as drafted (so the steps after i are undone too)."),
    "": "",
}
TAKE_HELP = ("The model's revision of these steps was refused (see why in the step) and the text kept. "
             "Take it anyway to put the model's version in the article.")
#: On page load: remember, per article box, the last text the author's own hand put in it (the
#: browser's ``input`` event: a key, Backspace, a paste, a cut, an input method's commit, a drop).
#: Gradio 6's Textbox sends its ``input`` event for printable keys and Enter only, and its
#: ``change`` event for the server's updates too; ``typed_js`` tells the two apart.
#: Each of the last 64 texts typed counts: a change event sent late (Gradio sends the last of a
#: burst once the one before is answered) may carry a text a later keystroke already replaced.
TYPED_LISTENER_JS = """() => {
  if (window.ratTyped) return;
  const typed = new Map();
  document.addEventListener("input", (e) => {
    const box = e.target.closest && e.target.closest(".rat-article");
    if (!box || !box.id) return;
    const texts = typed.get(box.id) || [];
    texts.push(e.target.value);
    typed.set(box.id, texts.slice(-64));
  }, true);
  window.ratTyped = (id, value) => (typed.get(id) || []).includes(value);
}"""


#: Click the hidden download button of this id (its element, or the button inside it).
CLICK_JS = """() => {
  const el = document.getElementById(%s);
  const button = el && (el.matches("button, a") ? el : el.querySelector("button, a"));
  if (button) button.click();
}"""


def typed_js(box_id: str) -> str:
    """The article box's ``change`` event, in the browser: whether its text is the author's
    (what their last keystroke, paste or input method left), not the server's (a version shown)."""
    return (f"(view, text, undone, taken, typed) => [view, text, undone, taken, "
            f"window.ratTyped ? window.ratTyped({json.dumps(box_id)}, text) : true]")


def version_label(version: VersionRow) -> str:
    """'3 · 14:02:11 · edit · 812 words' (and 'from 1' for a restore), for the versions list."""
    from core.text.segment import word_count

    restored = f" from {version.restored_from}" if version.restored_from else ""
    return f"{version.n} · {when(version.created)} · {version.action}{restored} · {word_count(version.text):,} words"


class ArticlePanel:
    """One run's article: its boxes, views, sources, versions and output (see the module)."""

    def __init__(self, store, authoring: Authoring, threshold: float, box_id: str):
        """``threshold``: the server's cite threshold, for runs that stored none; ``box_id``: the
        article box's element id (its typing is told from the server's updates by it)."""
        self.store, self.authoring, self.versions = store, authoring, authoring.versions
        self.threshold = threshold
        self._thresholds: dict[str, float] = {}  # run id -> the cite threshold it ran with
        # run id -> the pending save of an edit: its timer, and the save itself (``flush_save``)
        self._saving: dict[str, tuple[asyncio.TimerHandle, Callable[[], None]]] = {}
        self.box_id = box_id
        self.exports = export_view.ExportFolder()  # the download buttons' files

    def layout(self) -> None:
        self.undo = gr.CheckboxGroup(label="Undo the revision of", choices=[])
        self.take = gr.CheckboxGroup(label="Take the refused revision of", choices=[], info=TAKE_HELP,
                                     visible=False)
        # one article on screen: read it with its marks, or edit its text (the marks follow)
        self.mode = gr.Radio([VIEW_READ, VIEW_EDIT], value=VIEW_READ, show_label=False, container=False,
                             elem_classes="rat-article-mode")
        self.article = gr.Textbox(label="Article (editable; undoing a step rebuilds it)", lines=12,
                                  max_lines=60, interactive=True, elem_classes="rat-article", visible=False,
                                  elem_id=self.box_id)
        self.typed = gr.Checkbox(visible=False)  # filled in the browser (``typed_js``), never shown
        self.cited = gr.HTML("", js_on_load=None, elem_classes="rat-cited-panel")
        self.reading = gr.HTML("", js_on_load=None, elem_classes="rat-reading-line")
        with gr.Row(equal_height=True):
            self.saved = gr.HTML("", js_on_load=None, elem_classes="rat-saved")
            self.version_pick = gr.Dropdown([], label="Versions (view one; Restore makes it the latest)",
                                            scale=2, elem_classes="rat-versions", visible=False)
            self.restore_btn = gr.Button("Restore", scale=0, min_width=120, visible=False)
        self.saving = gr.Timer(SAVE_AFTER, active=False)
        self.sources = gr.HTML("", js_on_load=None, elem_classes="rat-sources-panel")
        # the article's output (ui/export_view.py): each button holds the shown article, one click
        with gr.Row(elem_classes="rat-export-row"):
            button = {"interactive": False, "scale": 0, "size": "md"}
            self.download = gr.DownloadButton("Download Markdown", variant="primary", min_width=200, **button)
            self.download_docx = gr.DownloadButton("Download Word", min_width=170, **button)
            # made when clicked (``on_file``): each fills its hidden download button, which the page clicks
            self.download_pdf = gr.Button("Download PDF", min_width=150, **button)
            self.download_html = gr.Button("Download HTML", min_width=160, **button)
            self.copy_md_btn = gr.Button("Copy Markdown", min_width=160, **button)
            self.copy_text_btn = gr.Button("Copy text", min_width=110, **button)
        with gr.Row(elem_classes="rat-export-row"):  # under the buttons: at 1366 px six buttons fill the row
            self.notes = gr.Checkbox(False, label="Include run notes (the steps never checked, as an appendix)",
                                     container=False, scale=0, min_width=460)
            self.copied = gr.HTML("", js_on_load=None, elem_classes="rat-copy-said")
        self.files = {fmt: gr.DownloadButton(visible="hidden", elem_id=f"{self.box_id}-{fmt}",
                                             elem_classes="rat-act-hidden") for fmt in export_view.ON_CLICK}
        self.copy_md_value = gr.Textbox(visible=False)  # what the copy buttons copy, in the browser
        self.copy_text_value = gr.Textbox(visible=False)

    def parts(self) -> list:
        """Every component a whole-panel update may set."""
        return [self.undo, self.take, self.article, self.cited, *self.downloads(), self.saved, self.version_pick,
                self.restore_btn, self.sources, *self.copy_parts(), self.notes]

    def export_parts(self) -> list:
        """What ``export_outputs`` updates: the download buttons and ``copy_parts``."""
        return [*self.downloads(), *self.copy_parts()]

    def downloads(self) -> list:
        """The download buttons: Markdown, Word, PDF, HTML."""
        return [self.download, self.download_docx, self.download_pdf, self.download_html]

    def copy_parts(self) -> list:
        """The copy buttons, what they copy, and the article's length line."""
        return [self.copy_md_btn, self.copy_text_btn, self.copy_md_value, self.copy_text_value, self.reading]

    def wire(self, state: gr.State) -> None:
        """Bind what changes the article alone; ``state``: the run panel's RunView."""
        self.state = state
        self.mode.change(self.on_mode, self.mode, [self.article, self.cited], **PRIVATE, queue=False)
        self.saving.tick(self.on_saved, state, [self.saved, self.version_pick, self.restore_btn, self.saving,
                                                *self.export_parts()], **PRIVATE)
        self.notes.input(self.on_export, [state, self.notes, self.article, self.undo, self.take],
                         [state, *self.export_parts()], **PRIVATE)
        self.copy_md_btn.click(None, self.copy_md_value, self.copied, js=export_view.copy_js("Markdown"), **PRIVATE)
        self.copy_text_btn.click(None, self.copy_text_value, self.copied, js=export_view.copy_js("text"), **PRIVATE)
        # every change the author makes (typed, deleted, pasted, an input method's text), saved
        self.article.change(self.on_edit, [state, self.article, self.undo, self.take, self.typed],
                            [self.cited, self.sources, *self.downloads(), self.saved, self.saving,
                             self.copy_md_btn, self.copy_text_btn, self.reading],
                            js=typed_js(self.box_id), **EDIT)
        gr.on(None, None, js=TYPED_LISTENER_JS, **PRIVATE)  # on page load, in the browser only
        for fmt, button in ((export_view.PDF, self.download_pdf), (export_view.HTML, self.download_html)):
            made = button.click(functools.partial(self.on_file, fmt=fmt), [state, self.version_pick],
                                self.files[fmt], **PRIVATE)
            made.success(None, None, None, js=CLICK_JS % json.dumps(self.files[fmt].elem_id), **PRIVATE)

    # -- rendering --------------------------------------------------------------------------------
    def boxes(self, view: RunView, edit: Edit = NO_EDIT) -> dict:
        """The undo and take boxes of ``view``'s steps, ticked as ``edit`` has them."""
        choices, takeable = article_view.revert_choices(view), article_view.take_choices(view)
        return {self.undo: gr.CheckboxGroup(choices=choices, value=list(edit.undone), info=UNDO_HELP[view.edits.mode],
                                            visible=bool(choices)),
                self.take: gr.CheckboxGroup(choices=takeable, value=list(edit.taken), visible=bool(takeable))}

    def shown(self, view: RunView, shown: Shown) -> dict:
        """The article of a stored version (or the model's text) as it reads: its undo and take
        boxes, text, marks, sources, versions list and output."""
        return {**self.boxes(view, shown.edit),
                self.article: shown.text,
                self.cited: article_view.cited_html(shown.cited),
                self.sources: article_view.sources_html(shown.article),
                **self.version_outputs(view, shown.version),
                **self.export_outputs(view, shown.edit, article=shown.article)}

    def unfinished(self, view: RunView) -> dict:
        """A run with no article yet: the boxes its steps will have, nothing else."""
        return {**self.boxes(view), self.article: "", self.cited: "", self.sources: "",
                **self.version_outputs(view, None), **self.export_outputs(view, NO_EDIT)}

    def threshold_of(self, view: RunView) -> float:
        """The cite threshold ``view``'s run was cited with (its Run settings'), else the server's."""
        if not view.run_id:
            return self.threshold
        if view.run_id not in self._thresholds:
            try:
                stored = self.store.get_run(view.run_id).settings.get("cite_threshold")
            except RatStudioError:
                return self.threshold
            self._thresholds[view.run_id] = float(stored) if stored is not None else self.threshold
        return self._thresholds[view.run_id]

    def export_outputs(self, view: RunView, edit: Edit, *, article: Article | None = None) -> dict:
        """The download buttons holding the shown article's files (Markdown, Word, PDF, HTML: the
        author's ``edit``, with the run notes when the author asked for them), the texts the copy
        buttons copy, and its length line; the buttons are disabled while there is nothing to export;
        ``article``: the article as a stored version reads (None: ``edit`` as the author has it
        now, attributed as it would be saved). Files that cannot be written are named in a warning
        (the buttons stay disabled). PDF and HTML are made when clicked (``on_file``)."""
        text = edit.text
        off = {**self._downloads_off(), self.copy_md_btn: gr.Button(interactive=False),
               self.copy_text_btn: gr.Button(interactive=False), self.copy_md_value: "", self.copy_text_value: "",
               self.reading: export_view.reading_html(text) if view.final is not None else ""}
        if view.final is None or not text.strip():
            return off
        try:
            article = article or self.live_article(view, edit)[1]
            files = self.exports.output(view, edit, threshold=self.threshold_of(view), notes=view.export_notes,
                                        article=article)
        except OSError as exc:
            gr.Warning(f"The article's files could not be written to the temporary folder ({exc}): free some "
                       "disk space, then pick the version again.", title="Download")
            return off
        notes = " + run notes" if view.export_notes else ""  # the label says what the files hold
        made = ((self.download, "Markdown", files.markdown), (self.download_docx, "Word", files.docx))
        return {**off, **{button: gr.DownloadButton(f"Download {name}{notes}", value=str(path), interactive=True,
                                                    visible=True) for button, name, path in made},
                **{button: gr.Button(f"Download {name}{notes}", interactive=True, visible=True)
                   for button, name in ((self.download_pdf, "PDF"), (self.download_html, "HTML"))},
                self.copy_md_btn: gr.Button(interactive=True), self.copy_text_btn: gr.Button(interactive=True),
                self.copy_md_value: files.markdown_text, self.copy_text_value: files.plain_text}

    def _downloads_off(self, *, clear: bool = True, **shown) -> dict:
        """Every download button disabled, its file let go (``clear``); ``shown``: e.g. visible=False."""
        held = {"value": None} if clear else {}
        return {button: (gr.DownloadButton(interactive=False, **held, **shown)
                         if isinstance(button, gr.DownloadButton) else gr.Button(interactive=False, **shown))
                for button in self.downloads()}

    def on_file(self, view: RunView | None, n, fmt: str) -> gr.DownloadButton:
        """Download PDF or HTML (``fmt``) clicked: the version shown (``n``: the versions list's
        value, 0 for the model's text) as that file, made now, in the hidden button the browser
        then clicks. Raises gr.Error, naming the fix, for a PDF no font here can draw."""
        if view is None or view.final is None or not view.run_id:
            raise gr.Error("Open a finished run first: there is no article to download.")
        try:
            article = self.authoring.shown(view.run_id, int(n) if n else MODEL).article
            path = self.exports.file(view, article, fmt, notes=view.export_notes)
        except PdfFontMissing as exc:
            raise gr.Error(str(exc), title="PDF") from exc
        except OSError as exc:
            raise gr.Error(f"The file could not be written to the temporary folder ({exc}): free some disk "
                           "space, then click again.", title="Download") from exc
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        return gr.DownloadButton(value=str(path))

    def article_html(self, view: RunView, edit: Edit) -> dict:
        """The article as edited with its [n] marks, and under it its numbered sources (each [n]
        leads to its entry), numbered as its export numbers them."""
        cited, article = self.live_article(view, edit)
        return {self.cited: article_view.cited_html(cited), self.sources: article_view.sources_html(article)}

    def live_article(self, view: RunView, edit: Edit) -> tuple[Cited, Article]:
        """``edit`` as the author has it now, attributed as saving it would attribute it (the marks
        of sentences the latest version held carried over: ``core.authoring.attribute``)."""
        previous = self.authoring.previous(view.run_id, events=view.events) if view.run_id else None
        attribution = attribute(view.edits, edit.chosen_in(view.edits), threshold=self.threshold_of(view),
                                previous=previous)
        return attribution.numbered(), Article.attributed(view.task, edit.text, attribution)

    # -- handlers ---------------------------------------------------------------------------------

    async def on_edit(self, view: RunView | None, text: str, chosen: list[int], taken: list[int] | None = None,
                      typed: bool = True) -> dict:
        """The author typed in the article: its citations and length follow; the download and copy
        buttons wait for the save (``on_saved`` gives them the saved text: no files per keystroke).
        Not ``typed``: the server put the text there (a version shown), nothing to do."""
        if not typed:
            return gr.skip()
        stale = {**self._downloads_off(clear=False),
                 self.copy_md_btn: gr.Button(interactive=False), self.copy_text_btn: gr.Button(interactive=False)}
        if view is None or view.final is None:
            return stale
        edit = Edit.of(text, chosen, taken)
        self._save_later(view.run_id, edit)
        return {**self.article_html(view, edit), **stale, self.reading: export_view.reading_html(edit.text),
                self.saved: "<span class='rat-note'>Saving…</span>", self.saving: gr.Timer(active=True)}

    def on_mode(self, mode: str) -> dict:
        """Read (the article with its [n] marks) or Edit (its text): one of them on screen."""
        editing = mode == VIEW_EDIT
        return {self.article: gr.Textbox(visible=editing), self.cited: gr.HTML(visible=not editing)}

    def on_export(self, view: RunView | None, notes: bool, text: str, chosen: list[int],
                  taken: list[int] | None = None) -> dict:
        """"Include run notes" ticked or not: the download and copy buttons get the shown article
        (``text``, with the ``chosen`` and ``taken`` steps) with or without them."""
        if view is None or view.final is None:
            return gr.skip()
        view.export_notes = bool(notes)  # (the page's state is this view: changed in place, never set here)
        return self.export_outputs(view, Edit.of(text, chosen, taken))

    # -- versions -----------------------------------------------------------------------------------

    def _save_later(self, run_id: str, edit: Edit) -> None:
        """Save the article as a version SAVE_AFTER seconds after the last keystroke (each
        keystroke puts the save off again), on the server: a closed tab does not lose it."""
        self._cancel_save(run_id)
        loop = asyncio.get_running_loop()

        def save() -> None:
            self._saving.pop(run_id, None)
            self.authoring.edit(run_id, edit)

        self._saving[run_id] = (loop.call_later(SAVE_AFTER, save), save)

    def _cancel_save(self, run_id: str) -> None:
        pending = self._saving.pop(run_id, None)
        if pending is not None:
            pending[0].cancel()

    def flush_save(self, run_id: str) -> None:
        """Save the author's pending edit of ``run_id`` now: the run is being shown again (a reload,
        another tab) and must show what was typed, not the version before it."""
        pending = self._saving.get(run_id)
        if pending is not None:
            pending[0].cancel()
            pending[1]()  # (takes it out of ``_saving`` itself)

    def version_outputs(self, view: RunView, shown: VersionRow | None) -> dict:
        """The saved line and the versions list: which version is shown, and every one to pick."""
        rows = self.versions.list(view.run_id) if view.run_id and view.final is not None else []
        choices = [("the model's text", 0)] + [(version_label(v), v.n) for v in reversed(rows)]
        if shown is None:
            line = "The model's text: your edits, undos and restores are saved as versions." if view.final else ""
        else:
            newest = rows[-1].n
            latest = "" if shown.n == newest else f" (the latest is {newest}: Restore makes this one the latest)"
            line = f"Version {shown.n}, saved {when(shown.created)}{latest}."
        return {self.saved: f"<span class='rat-note'>{html.escape(line)}</span>" if line else "",
                self.version_pick: gr.Dropdown(choices=choices, value=shown.n if shown else 0,
                                               visible=bool(rows)),
                self.restore_btn: gr.Button(visible=bool(rows))}

    def on_saved(self, view: RunView | None) -> dict:
        """The timer after an edit: once the pending save is done, say so, give the download and
        copy buttons the saved article, and stop ticking."""
        if view is None or not view.run_id or view.run_id in self._saving:
            return gr.skip()  # still waiting for the save
        shown = self.authoring.shown(view.run_id, LATEST)
        return {**self.version_outputs(view, shown.version), self.saving: gr.Timer(active=False),
                **self.export_outputs(view, shown.edit, article=shown.article)}
