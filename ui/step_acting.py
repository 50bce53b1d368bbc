"""The step actions as the server does them (issue 23.2, 39): a step card's button, or the
whole-article box, has the run do a step again (``LiveRuns.redo``) or changes the article as the
boxes above it do; one at a time on a run (a second one waits, and says so), followed in the run's
panel (``ui.writer.RunPanel``), only the step done again streamed, and each one's text saved as a
version. One whose tab went away is saved when its run ends, on the server. The buttons and the
commands they send are ``ui.step_actions``'s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

import gradio as gr

from common.errors import EditConflict, RatStudioError
from common.events import EVERY
from core.authoring import Edit
from core.methods import METHODS
from ui import runview, step_actions
from ui.runview import RunView

if TYPE_CHECKING:
    from ui.writer import RunPanel


class StepActing:
    """The step actions of one run panel (``panel``: what it follows them in and shows them with)."""

    def __init__(self, panel: RunPanel) -> None:
        self.panel = panel
        self._redos: set[asyncio.Task] = set()  # redos whose tab went away, saved as versions when they end
        self._acting: dict[str, asyncio.Lock] = {}  # run id -> its step actions, one at a time (queued)

    async def on_step_action(self, view: RunView | None, command: str, undone: list[int] | None,
                             taken: list[int] | None, page: gr.Request | None = None):
        """A step card's button (``ui.step_actions``): Undo / Put back and Take / Drop change the
        article as the boxes above it do; Regenerate, Search again and ✕ (exclude a source) have
        the run do the step again (``LiveRuns.redo``), followed here, and the new text is saved as a
        version. Raises gr.Error for a command that does not fit the run."""
        if view is None or not view.run_id or view.final is None and not self._finished_once(view.run_id):
            raise gr.Error("Open a finished run first: the step actions work on a run's finished article.")
        try:
            cmd = step_actions.parse_command(command)
        except ValueError as exc:
            raise gr.Error(str(exc)) from exc
        lock = self._acting.setdefault(view.run_id, asyncio.Lock())
        if lock.locked():  # one action at a time on a run: this one waits for the one before, then runs
            yield {self.panel.progress: "<div class='rat-progress'>Queued: this step action starts when the "
                                        "one before it has finished and been saved.</div>"}
        async with lock, aclosing(self._step_action(view, cmd, Edit.of(None, undone, taken), page)) as updates:
            async for update in updates:
                yield update

    async def on_revise_all(self, view: RunView | None, instruction: str, undone: list[int] | None,
                            taken: list[int] | None, page: gr.Request | None = None):
        """Revise the whole article as I say: every step done again with the author's one line
        (``EVERY``), followed here as a step action is, and saved as a version."""
        if not (instruction or "").strip():
            raise gr.Error("Type in the box how the whole article should change first (for example: more formal, "
                           "and one sentence shorter each).")
        command = json.dumps({"action": EVERY, "i": 1, "instruction": instruction})
        async for update in self.on_step_action(view, command, undone, taken, page):
            yield update

    def _finished_once(self, run_id: str) -> bool:
        """Whether the run has a finished article (a step of it may be being done again now: the
        next action waits for it)."""
        return bool(self.panel.store.get_run(run_id).final_text)  # (the model's text, kept through every redo)

    async def _step_action(self, view: RunView, cmd, edit: Edit, page: gr.Request | None = None):
        """:meth:`on_step_action` once the run is this action's: only what the step does again is
        streamed (the run so far is shown as it stands, not replayed), and its text saved. ``edit``:
        the steps the page has undone and taken."""
        if view.final is None:  # asked while the action before ran: the run as that one left it
            view = runview.fold(self.panel.store.events(view.run_id))
        if cmd.action in step_actions.EDITS:  # the version is made here, and shown by the settling event
            chosen = {"undo": set(edit.undone), "take": set(edit.taken)}
            chosen[cmd.action] ^= {cmd.i}
            await self.panel.on_undo(view, sorted(chosen["undo"]), sorted(chosen["take"]))
            self.panel.shows(page, view)
            yield {self.panel.state: view}
            return
        redo = METHODS[view.method].redo if view.method in METHODS else None
        if redo is None:
            raise gr.Error(f"The method {view.method!r} cannot redo a step: start a new run instead.")
        stored = self.panel.store.events(view.run_id)  # the run as it stands now (an action before may have changed it)
        try:  # refused before anything is shown or stored
            redo(stored, cmd.i, action=cmd.action, query=cmd.query, exclude=[cmd.url], instruction=cmd.instruction)
        except RatStudioError as exc:
            raise gr.Error(str(exc)) from exc
        self.panel.text.flush_save(view.run_id)  # the author's last typing is saved first, as its own version
        try:  # a hand edit the redo would rewrite: refused before anything runs
            self.panel.authoring.check_redo(view.run_id, cmd.i, every=cmd.action == EVERY)
        except EditConflict as exc:
            raise gr.Error(str(exc), title="Your edit is kept") from exc
        events = self.panel.live.redo(view.run_id, cmd.i, action=cmd.action, query=cmd.query,
                                      exclude=[cmd.url] if cmd.url else (), instruction=cmd.instruction,
                                      timed=True)
        redone, saved = runview.fold(stored), False
        try:
            async for update in self.panel.follow(_after(events, len(stored)), redone, page=page):
                yield update
            saved = self.save_redo(view.run_id, cmd.action)
        finally:
            if not saved and len(redone.events) > len(stored):  # the tab went away mid-redo: saved when the
                # run ends, on the server
                await self.save_later(view.run_id, cmd.action)

    def save_redo(self, run_id: str, action: str) -> bool:
        """Save a finished redo's text as a version (``action``); False when the run did not end
        with a new Final after the author's request (it failed, or was stopped)."""
        return self.panel.authoring.redone(run_id, action) is not None

    async def save_later(self, run_id: str, action: str) -> None:
        """:meth:`_save_when_done` in a task of the server's own, which a tab going away does not
        cancel (the next action on the run waits for this save)."""
        task = asyncio.get_running_loop().create_task(self._save_when_done(run_id, action))
        self._redos.add(task)
        task.add_done_callback(self._redos.discard)
        await asyncio.shield(task)

    async def _save_when_done(self, run_id: str, action: str) -> None:
        """Follow a redo no tab follows any more to its end, then :meth:`save_redo`."""
        async with aclosing(self.panel.live.follow(run_id)) as events:
            async for _ in events:
                pass
        self.save_redo(run_id, action)


async def _after(events: AsyncIterator, skip: int) -> AsyncIterator:
    """``events`` without the first ``skip`` (a followed run's stored events, already shown)."""
    async with aclosing(events):
        async for item in events:
            if skip > 0:
                skip -= 1
                continue
            yield item
