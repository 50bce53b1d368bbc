"""The Arena tab: an annotator sees a task and two anonymous outputs, A and B, from two methods,
votes, and only then learns which methods wrote them.

Blind for real: which method wrote which output never reaches the browser before the vote.
The browser session's ``gr.State`` holds only the annotator's name and the id of the battle
shown (Gradio keeps State values on the server; their outputs are sent to the client as None),
the battle's methods stay in the database until the arena service's ``vote`` returns them, no
component is created with a method name in its value, and every event is private in Gradio's
API (``api_visibility="private"``).

Who votes: with --auth, the logged-in user (whatever name is typed); without it, the typed name
with this browser session's id, so one browser's votes stay together and a name typed in two
browsers is two annotators. The client's address goes to the arena's rate limit.
"""

from __future__ import annotations

import gradio as gr

from annotation.errors import ArenaError, NoPairLeft
from annotation.service import Arena
from common.errors import StoreError
from ui.render_arena import CHOICE_LABELS, battle_view, reveal_text

MAX_NAME = 80

# The arena rules of the RAT paper's appendix C (after Chatbot Arena's), in our words.
RULES = """### How to judge
You see one task and two answers to it, **A** and **B**, written by two different methods.
Which method wrote which stays hidden until you have voted.

- Read both answers and choose the better one. When they are about equally good, choose **Tie**;
  when neither would be acceptable, choose **Both are bad**.
- After your vote the two methods are shown. Press **Next** for another pair
  (pressing Next before voting skips the pair).

Weigh the answers on:
1. **Relevance** — does it do what the task asks?
2. **Accuracy** — are its facts and steps right?
3. **Completeness** — is anything needed missing or skipped?
4. **Readability** — is it coherent and easy to follow?

Do not let the length of an answer or its place (A or B) decide for you."""

START_HINT = "Type your name and press **Start** to get your first pair."


# -- handlers ---------------------------------------------------------------------------------


class ArenaTab:
    """The components and handlers of one Arena tab. Per-user data lives in ``state`` only:
    ``{"annotator": name, "battle": id or None}``."""

    def __init__(self, service: Arena):
        self.arena = service

    def start(self, name: str, request: gr.Request) -> dict:
        return self.next({"annotator": annotator_of(name, request), "battle": None})

    def next(self, state: dict | None) -> dict:
        if not state or not state.get("annotator"):
            raise gr.Error("Type your name and press Start first.")
        try:
            shown = self.arena.next_pair(state["annotator"])
        except NoPairLeft as exc:
            return self._empty(state, str(exc))
        except StoreError as exc:
            raise gr.Error(str(exc)) from exc
        task, a, b = battle_view(shown)
        return self._view({**state, "battle": shown.battle_id}, task, a, b, "", voting=True)

    def vote(self, choice: str, state: dict | None, request: gr.Request | None = None) -> dict:
        if not state or not state.get("battle"):
            raise gr.Error("There is no pair to vote on: press Next.")
        client = getattr(request, "client", None)
        try:
            revealed = self.arena.vote(state["battle"], state["annotator"], choice,
                                       address=getattr(client, "host", None))
        except (StoreError, ArenaError) as exc:
            raise gr.Error(str(exc)) from exc
        return {self.state: {**state, "battle": None}, self.reveal: reveal_text(revealed),
                **{b: gr.update(interactive=False) for b in self.buttons.values()}}

    def _empty(self, state: dict, message: str) -> dict:
        return self._view({**state, "battle": None}, f"### Nothing to judge\n{message}", "", "", "", voting=False)

    def _view(self, state: dict, task: str, a: str, b: str, reveal: str, *, voting: bool) -> dict:
        return {
            self.state: state, self.task: task, self.out_a: a, self.out_b: b, self.reveal: reveal,
            self.next_btn: gr.update(interactive=True),
            **{btn: gr.update(interactive=voting) for btn in self.buttons.values()},
        }

    # -- layout ---------------------------------------------------------------------------------
    def layout(self) -> None:
        self.state = gr.State(None)
        gr.Markdown(RULES)
        with gr.Row(equal_height=True):
            self.name = gr.Textbox(label="Your name", placeholder="e.g. ana", max_length=MAX_NAME, scale=4)
            self.start_btn = gr.Button("Start", variant="primary", scale=1)
        self.task = gr.Markdown(START_HINT)
        with gr.Row(equal_height=False):
            with gr.Column(variant="panel"):
                gr.Markdown("#### A")
                self.out_a = gr.Markdown()
            with gr.Column(variant="panel"):
                gr.Markdown("#### B")
                self.out_b = gr.Markdown()
        with gr.Row():
            self.buttons = {c: gr.Button(label, interactive=False) for c, label in CHOICE_LABELS.items()}
        self.reveal = gr.Markdown()
        self.next_btn = gr.Button("Next", interactive=False)

    def wire(self) -> None:
        view = [self.state, self.task, self.out_a, self.out_b, self.reveal, self.next_btn, *self.buttons.values()]
        private = {"api_visibility": "private", "queue": True}
        gr.on([self.start_btn.click, self.name.submit], self.start, inputs=self.name, outputs=view, **private)
        self.next_btn.click(self.next, inputs=self.state, outputs=view, **private)
        for choice, button in self.buttons.items():
            button.click(self.voter(choice), inputs=self.state,
                         outputs=[self.state, self.reveal, *self.buttons.values()], **private)

    def voter(self, choice: str):
        """The click handler of one vote button (a function, not a partial: Gradio hands a
        ``gr.Request`` only to parameters it can see annotated)."""

        def on_vote(state: dict | None, request: gr.Request) -> dict:
            return self.vote(choice, state, request)

        return on_vote


def annotator_of(name: str, request: gr.Request | None) -> str:
    """Who is voting: the logged-in user (--auth), else the typed name with the browser session's
    id. Raises gr.Error for a missing or over-long name."""
    user = getattr(request, "username", None)
    if user:
        return str(user)
    name = (name or "").strip()
    if not name:
        raise gr.Error("Type your name first: votes are kept under it.")
    if len(name) > MAX_NAME:
        raise gr.Error(f"Use a name of at most {MAX_NAME} characters.")
    session = (getattr(request, "session_hash", None) or "")[:8]
    return f"{name} · {session}" if session else name


def build(service: Arena) -> ArenaTab:
    """Create the Arena tab's components inside the caller's ``gr.Tab``/``gr.Blocks`` context."""
    tab = ArenaTab(service)
    tab.layout()
    tab.wire()
    return tab
