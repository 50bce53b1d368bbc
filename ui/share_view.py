"""The Share button under a finished run's article (the run panel of the Writer and History,
``ui.writer.RunPanel``): a secret, read-only link to the version on screen and its replay
(``core.sharing``; the page is ``ui.share_page``), shown with a copy button and a Revoke button
that closes it (it answers 404 from then on). The link is the server's own address as the browser
reached it, with ``/share/TOKEN``; only a hash of the token is stored, so the link is shown once,
in this page (``share RUN --revoke`` on the command line closes every link of a run).

    box = ShareBox(store, authoring)
    box.layout(); box.wire(panel_state, version_pick)     # inside the panel's Blocks
"""

from __future__ import annotations

import html

import gradio as gr

from common.errors import RatStudioError
from core.authoring import Authoring
from core.sharing import Sharing
from data.versions import MODEL
from ui.controls import for_browser
from ui.listeners import PRIVATE
from ui.runview import RunView

LINK_LABEL = "Share link (read only: anyone holding it can read this version and watch its replay, without a login)"
HINT = "Share makes a secret link to the version on screen and its replay, for people without an account."


class ShareBox:
    """Share and Revoke for the run panel's article."""

    def __init__(self, store, authoring: Authoring):
        self.sharing = Sharing(store, authoring)

    def layout(self) -> None:
        with gr.Row(equal_height=True, elem_classes="rat-share-row"):
            self.share_btn = gr.Button("Share", scale=0, min_width=110, elem_classes="rat-share-btn")
            self.link = gr.Textbox(label=LINK_LABEL, interactive=False, visible=False, buttons=["copy"], scale=4,
                                   elem_classes="rat-share-link")
            self.revoke_btn = gr.Button("Revoke", variant="stop", scale=0, min_width=110, visible=False,
                                        elem_classes="rat-share-revoke")
        self.said = gr.HTML(f"<span class='rat-note'>{html.escape(HINT)}</span>", js_on_load=None,
                            elem_classes="rat-share-said")
        self.shared = gr.State(None)  # (run id, token) of the link this page made: kept on the server

    def wire(self, state: gr.State, version_pick: gr.Dropdown) -> None:
        """``state``: the run panel's RunView; ``version_pick``: its versions list (the version shown)."""
        outputs = [self.link, self.revoke_btn, self.said, self.shared]
        self.share_btn.click(self.on_share, [state, version_pick], outputs, **PRIVATE)
        self.revoke_btn.click(self.on_revoke, [self.shared], outputs, **PRIVATE)

    def on_share(self, view: RunView | None, n, request: gr.Request) -> dict:
        """A new link to the version shown (``n``: the versions list's value, 0 for the model's
        text). Raises gr.Error when there is no finished article on screen."""
        if view is None or not view.run_id or view.final is None:
            raise gr.Error("Open a finished run first: a link shows a run's article.")
        try:
            link = self.sharing.share(view.run_id, int(n) if n else MODEL, by=getattr(request, "username", "") or "")
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        which = "the model's own text" if link.version is None else f"version {link.version}"
        said = (f"A link to {which} of this run. Anyone holding it can read it and watch the replay; Revoke "
                "closes it. Later edits reach readers once you share again.")
        return {self.link: gr.Textbox(value=origin(request) + link.path, visible=True),
                self.revoke_btn: gr.Button(visible=True, interactive=True),
                self.said: f"<span class='rat-note'>{html.escape(said)}</span>",
                self.shared: (link.run_id, link.token)}

    def on_revoke(self, shared: tuple[str, str] | None) -> dict:
        """Close the link this page made: it answers 404 from now on."""
        if not shared:
            raise gr.Error("There is no link to revoke: press Share first.")
        run_id, token = shared
        try:
            closed = self.sharing.revoke(run_id, token=token)
        except RatStudioError as exc:
            raise gr.Error(for_browser(str(exc))) from exc
        said = "Revoked: the link answers “not found” from now on." if closed else "The link was revoked already."
        return {self.link: gr.Textbox(value="", visible=False), self.revoke_btn: gr.Button(visible=False),
                self.said: f"<span class='rat-note'>{html.escape(said)}</span>", self.shared: None}


def origin(request: gr.Request | None) -> str:
    """The address the browser reached the app at (its Origin header, else the scheme and Host of
    the request), without a trailing slash; "" when unknown (the link is then a path)."""
    headers = {k.lower(): v for k, v in dict(getattr(request, "headers", None) or {}).items()}
    said = headers.get("origin", "")
    if said.startswith(("http://", "https://")):
        return said.rstrip("/")
    host = headers.get("x-forwarded-host") or headers.get("host", "")
    scheme = "https" if headers.get("x-forwarded-proto", "").startswith("https") else "http"
    return f"{scheme}://{host}" if host else ""
