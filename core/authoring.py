"""The author's actions on a finished run's article, each kept as a version whose citations are
bound to their sources; and the article of any stored version. The one door the Writer, the
command line (``show``, ``redo``, ``undo``) and the arena read versions through.

An action makes a version (``data.versions``) that holds the text, the steps undone and taken,
and the text's ``Attribution`` (``core.article.attribution``): each [n] tied to the page and
passage it came from, numbered only when shown. A stored version is read from what it stored, so
it reads the same forever; the model's own text is the run's first Final (:func:`model_events`),
which no later action changes.

    authoring = Authoring(store)
    authoring.edit(run_id, Edit(text))           # the author's text, attributed
    authoring.choose(run_id, undone=[2])         # undo step 2's revision (taken=[3]: take a refused one)
    authoring.check_redo(run_id, 3)              # before a step is done again: would it lose an edit?
    authoring.redone(run_id)                     # after it: the new text, merged with the author's
    authoring.pending_redo(run_id)               # before a resume: a redo it will finish (then redone)
    authoring.restore(run_id, 1)                 # or "model"
    authoring.shown(run_id, "latest")            # Shown: the version, its Cited and Article

Undoing, taking and redoing a step keep the author's hand edits elsewhere: the action's text
(what the run's revisions give for the new choice) is merged, line by line, with the author's
latest text against what the revisions gave for the latest version's choice (a three-way merge,
``merge3``, the merge of Breezy). Where the author edited the lines the action rewrites, the action
is refused before anything changes (:class:`common.errors.EditConflict`), naming what to do.

Citations: a new version's text is attributed against the run's events as they are now
(``core.article.edits.Revisions``); a sentence the previous version held too, and that is still
supported, keeps the marks it had (the same pages), so an action changes the marks of only the
sentences it changes. A sentence whose passage is gone loses its mark; none gains another page's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import merge3

from common.errors import EditConflict, RatStudioError, TaskError
from common.events import ADD, EVERY, Event, Final, StepRedone
from common.types import RunStatus
from core.article.article import Article, unsourced_cause
from core.article.attribution import Attribution
from core.article.citations import CITE_THRESHOLD, Cited, Piece
from core.article.edits import Revisions
from core.methods import unsourced
from data.store import Store
from data.versions import LATEST, MODEL, VersionRow, Versions


def model_events(events: Sequence[Event]) -> list[Event]:
    """The run's events as the method left them: up to the first step the author had done again
    (``StepRedone``); all of them for a run with none. Their last Final is the model's own text."""
    for k, e in enumerate(events):
        if isinstance(e, StepRedone):
            return list(events[:k])
    return list(events)


def before_last_redo(events: Sequence[Event]) -> list[Event]:
    """The run's events before the author's last request to do a step again (all of them for none)."""
    last = max((k for k, e in enumerate(events) if isinstance(e, StepRedone)), default=len(events))
    return list(events[:last])


def merge_text(base: str, ours: str, theirs: str) -> str | None:
    """``theirs`` (an action's text, made from ``base``) with the author's changes of ``base`` in
    ``ours`` kept, line by line; None where both changed the same lines differently. Lines one
    side only put in beside lines the other changed (a section added after a paragraph the author
    edited) are no clash: both are kept (:func:`_beside`)."""
    if ours == base:
        return theirs
    if theirs == base or theirs == ours:
        return ours
    b, o, t = (x.splitlines(keepends=True) for x in (base, ours, theirs))
    out: list[str] = []
    for region in merge3.Merge3(b, o, t).merge_regions():
        kind, start, end = region[0], region[1], region[2]
        if kind == "unchanged":
            out += b[start:end]
        elif kind in ("a", "same"):
            out += o[start:end]
        elif kind == "b":
            out += t[start:end]
        else:
            both = _beside(b[start:end], o[region[3]:region[4]], t[region[5]:region[6]])
            if both is None:
                return None
            out += both
    return "".join(out)


def _beside(base: list[str], ours: list[str], theirs: list[str]) -> list[str] | None:
    """A clash of a three-way merge resolved where one side kept ``base``'s lines whole and only
    put lines before or after them: those lines around the other side's; else None."""
    if not base:  # both put lines in at the same place: which goes first is the author's to say
        return None
    for kept, changed in ((theirs, ours), (ours, theirs)):
        for k in range(len(kept) - len(base) + 1):
            if kept[k: k + len(base)] == base:
                return [*kept[:k], *changed, *kept[k + len(base):]]
    return None


def carry_marks(cited: Cited, previous: Attribution | None) -> Cited:
    """``cited`` with each sentence that ``previous`` held too, and that is still supported, given
    the marks it had there (the pages it cited then); any other sentence as ``cited`` has it."""
    if previous is None:
        return cited
    had = {_key(p): p.marks for p in previous.cited.pieces if p.sentence and p.marks}
    if not had:
        return cited

    def keep(piece: Piece) -> Piece:
        old = had.get(_key(piece)) if piece.sentence and piece.marks else None
        return replace(piece, marks=old) if old else piece

    return replace(cited, pieces=tuple(keep(p) for p in cited.pieces))


@dataclass(frozen=True)
class Edit:
    """The article as the author has it: its ``text``, and the steps whose revision they have
    ``undone`` and whose refused revision they have ``taken`` (each sorted). One value that the
    front ends pass whole, from the boxes of the page to the export and the saved version; its
    [n] marks are bound to sources when it is attributed (``attribute``) or saved."""

    text: str = ""
    undone: tuple[int, ...] = ()
    taken: tuple[int, ...] = ()

    @classmethod
    def of(cls, text: str | None, undone: Iterable[int] | None = (), taken: Iterable[int] | None = ()) -> Edit:
        """From what a page sends (None for an empty box)."""
        return cls(text or "", tuple(sorted({int(i) for i in undone or ()})),
                   tuple(sorted({int(i) for i in taken or ()})))

    def chosen_in(self, revs: Revisions) -> Edit:
        """This edit with its choice of steps as the run's mode makes of it (``Revisions.chosen``:
        in cumulative mode, every step after the first one chosen)."""
        return Edit.of(self.text, *revs.chosen(self.undone, self.taken))


NO_EDIT = Edit()  # no text, nothing undone, nothing taken: a run with no article yet


def attribute(revs: Revisions, edit: Edit, *, threshold: float = CITE_THRESHOLD,
              previous: Attribution | None = None) -> Attribution:
    """The author's ``edit`` (its text, with its steps undone and taken as they stand: see
    ``Edit.chosen_in``) attributed against the run's events ``revs``, the marks of unchanged
    sentences carried from ``previous`` (:func:`carry_marks`)."""
    cited, article = revs.cited_article("", edit.text, edit.undone, edit.taken, threshold=threshold)
    return Attribution.of(carry_marks(cited, previous), article.sources, article.unchecked, article.cut)


@dataclass(frozen=True)
class Shown:
    """What a version shows: ``version`` (None: the model's own text), its ``edit`` (the text and
    the steps it has undone and taken), its marks (``cited``, in the readers' numbering) and its
    ``article``."""

    version: VersionRow | None
    edit: Edit
    cited: Cited
    article: Article

    @property
    def text(self) -> str:
        return self.edit.text

    @property
    def undone(self) -> tuple[int, ...]:
        return self.edit.undone

    @property
    def taken(self) -> tuple[int, ...]:
        return self.edit.taken


class Authoring:
    """The author's actions on the runs of ``store`` and the versions they leave. ``threshold``:
    the cite threshold for runs that did not store their own (``--cite-threshold``)."""

    def __init__(self, store: Store, threshold: float = CITE_THRESHOLD):
        self.store = store
        self.versions = Versions(store)
        self.threshold = threshold

    def threshold_of(self, run_id: str) -> float:
        """The cite threshold the run was cited with (its Run settings'), else the server's."""
        stored = self.store.get_run(run_id).settings.get("cite_threshold")
        return float(stored) if stored is not None else self.threshold

    # -- reading ------------------------------------------------------------------------------------
    def shown(self, run_id: str, which: int | str = LATEST, *, events: Sequence[Event] | None = None) -> Shown:
        """The version ``which`` names ("model", "latest" or a number; see ``Versions.find``) as it
        reads: a stored attribution as stored, the model's text from its Final, a version stored
        before attributions were from the run's events. Raises VersionNotFound, RunNotFound."""
        run = self.store.get_run(run_id)
        version = self.versions.find(run_id, which)
        events = list(self.store.events(run_id) if events is None else events)
        if version is None:
            model = model_events(events)
            final = next((e for e in reversed(model) if isinstance(e, Final)), None)
            article = Article.from_events(run.task, model, unsourced=self._model_unsourced(run, events, final))
            cited = (Revisions.from_events(model).cited(final.text, threshold=self.threshold_of(run_id))
                     if final is not None else Cited())
            return Shown(None, Edit(article.text), Attribution(cited).numbered(), article)
        stored = Edit.of(version.text, version.undone, version.taken)
        if version.attribution:
            attribution = Attribution.from_json(version.attribution)
        else:  # stored before versions kept their attribution: derived from the run's events
            attribution = attribute(Revisions.from_events(events), stored, threshold=self.threshold_of(run_id))
        cause = attribution.unsourced  # as it was when the version was made (None: not recorded then)
        article = Article.attributed(run.task, version.text, attribution,
                                     unsourced=self._unsourced_now(run, events) if cause is None else cause)
        return Shown(version, stored, attribution.numbered(), article)

    def article(self, run_id: str, which: int | str = LATEST) -> Article:
        return self.shown(run_id, which).article

    def model_text(self, run_id: str) -> str:
        return self.shown(run_id, MODEL).text

    # -- acting -------------------------------------------------------------------------------------
    def edit(self, run_id: str, edit: Edit, *, action: str = "edit") -> VersionRow:
        """The author's ``edit`` (their text, with the steps they undid and took) as the next version."""
        revs, latest = self._state(run_id)
        return self._save(run_id, revs, latest, edit, action)

    def choose(self, run_id: str, undone: Iterable[int] = (), taken: Iterable[int] = ()) -> VersionRow:
        """Undo the revisions of ``undone`` steps and take the refused ones of ``taken`` (each as the
        mode's rules make of the choice, ``Revisions.chosen``): the steps' text changes, the
        author's edits elsewhere stay. Raises EditConflict (nothing stored) where the author
        edited the text the choice rewrites; TaskError for a run whose revisions cannot be undone."""
        revs, latest = self._state(run_id)
        if not revs.mode:
            raise TaskError(f"Run {run_id}'s revisions cannot be undone step by step (its method does not revise "
                            "the draft's steps): edit its text instead.")
        undone, taken = revs.chosen(undone, taken)
        text = self._merged(run_id, revs, latest, revs.text(undone, taken), "undo or take that step")
        return self._save(run_id, revs, latest, Edit.of(text, undone, taken), "take" if taken else "undo")

    def check_redo(self, run_id: str, i: int, *, every: bool = False) -> None:
        """Raises EditConflict when doing step ``i`` again (``every``: every step, the whole
        article's instruction) would rewrite lines the author edited by hand (nothing is done
        then); else nothing."""
        revs, latest = self._state(run_id)
        if latest is None or i > len(revs.steps) and not every:  # (a section added after the last step
            return                                                # rewrites no line)
        undone, taken = set(latest.undone), set(latest.taken)
        base = revs.text(undone, taken)
        if latest.text == base:
            return
        if every:  # every step's lines are rewritten: any edit of the author's is among them
            raise EditConflict("You edited the article by hand, and revising the whole article would rewrite every "
                               "paragraph: nothing was changed, so your edit is kept. Revise the steps you want one "
                               f"by one, or restore the version before your edit (run {run_id}) and revise then.")
        touched = revs.text(undone - {i} if i in undone else undone | {i}, taken - {i})
        if merge_text(base, latest.text, touched) is None:
            raise EditConflict(_conflict(run_id, f"do step {i} again"))

    def redone(self, run_id: str, action: str = "") -> VersionRow | None:
        """After a step was done again and the run ended with its new Final: the new text as the
        next version (``action``: the StepRedone's, by default; an "instruct" version keeps the
        request's instruction), merged with the author's edits of
        the latest version (where they clash, the new text; the author's stays the version before).
        None when the run did not end with a new Final after the request (it failed, was stopped)."""
        events = self.store.events(run_id)
        if not events or not isinstance(events[-1], Final) or not any(isinstance(e, StepRedone) for e in events):
            return None
        asked = next(e for e in reversed(events) if isinstance(e, StepRedone))
        revs = Revisions.from_events(events)
        latest = self.versions.latest(run_id)
        undone = set(latest.undone) - {asked.i} if latest else set()
        taken = set(latest.taken) - {asked.i} if latest else set()
        if asked.action == EVERY:  # every step revised anew: each one's new revision is the article's
            undone, taken = set(), set()
        undone, taken = revs.chosen(undone, taken)
        theirs = revs.text(undone, taken)
        text = theirs
        if latest is not None:  # (its steps read in the run's numbering now, the added section's included:
            before = Revisions.from_events(before_last_redo(events))  # before it, those after it were one up)
            was = (lambda steps: [j - (j > asked.i) for j in steps]) if asked.action == ADD else list
            merged = merge_text(before.text(was(latest.undone), was(latest.taken)), latest.text, theirs)
            text = theirs if merged is None else merged
        action = action or asked.action
        if action == EVERY:  # kept as a version revised at the author's instruction, the instruction with it
            action = "instruct"
        return self._save(run_id, revs, latest, Edit.of(text, undone, taken), action,
                          instruction=asked.instruction or None if action in ("instruct", ADD) else None)

    def pending_redo(self, run_id: str) -> StepRedone | None:
        """The author's request to do a step again that the run stopped part-way through
        (interrupted, failed, at its budget): its last StepRedone when no Final came after it,
        else None. Asked before a resume, which finishes that redo: the Final the resume ends with
        is the redo's text, which only :meth:`redone` makes a version of (the run's own text stays
        the model's), so whoever resumes the run (``resume``, the Writer's Continue) saves it then
        as ``redo`` does: ``redone(run_id, pending.action)``."""
        events = self.store.events(run_id)
        last = next((k for k in range(len(events) - 1, -1, -1) if isinstance(events[k], (StepRedone, Final))), None)
        return events[last] if last is not None and isinstance(events[last], StepRedone) else None

    def restore(self, run_id: str, which: int | str) -> VersionRow:
        """Make version ``which`` (or the model's own text, "model") the latest, as a new version
        that reads as it read."""
        if str(which).strip().lower() in (MODEL, "0"):
            shown = self.shown(run_id, MODEL)
            if not shown.text.strip():
                raise TaskError(f"Run {run_id} has no text of the model's to restore (it has not finished): "
                                "finish it first (`python app.py resume`), or pick one of its versions.")
            attribution = replace(Attribution.of(shown.cited, shown.article.sources, shown.article.unchecked,
                                                 shown.article.cut), unsourced=shown.article.unsourced)
            return self.versions.add(run_id, shown.text, action="restore", attribution=attribution.to_json())
        return self.versions.restore(run_id, which)

    # -- inside -------------------------------------------------------------------------------------
    def _state(self, run_id: str) -> tuple[Revisions, VersionRow | None]:
        """The run's revisions now and its latest version; raises TaskError for a run with no
        finished text, RunNotFound."""
        revs = Revisions.from_events(self.store.events(run_id))
        if revs.final is None:
            self.store.get_run(run_id)  # RunNotFound for no such run
            raise TaskError(f"Run {run_id} has no finished article to change: finish it first "
                            f"(`python app.py resume {run_id}`).")
        return revs, self.versions.latest(run_id)

    def previous(self, run_id: str, *, latest: VersionRow | None = None,
                 events: Sequence[Event] | None = None) -> Attribution | None:
        """The marks of the run's latest version (the model's text's when it has none), which a new
        version's unchanged sentences keep; None for a run with no finished text. ``latest`` and
        ``events``: the run's, when the caller has read them already."""
        latest = latest or self.versions.latest(run_id)
        if latest is not None and latest.attribution:
            return Attribution.from_json(latest.attribution)
        try:
            return Attribution(self.shown(run_id, LATEST, events=events).cited)
        except RatStudioError:
            return None

    def _save(self, run_id: str, revs: Revisions, latest: VersionRow | None, edit: Edit, action: str, *,
              instruction: str | None = None) -> VersionRow:
        """``edit`` as the next version, attributed against ``revs`` (the run's events as read) with
        the marks of ``latest``'s unchanged sentences carried."""
        edit = edit.chosen_in(revs)
        attribution = attribute(revs, edit, threshold=self.threshold_of(run_id),
                                previous=self.previous(run_id, latest=latest, events=revs.events))
        attribution = replace(attribution, unsourced=self._unsourced_now(self.store.get_run(run_id), revs.events))
        return self.versions.add(run_id, edit.text, undone=edit.undone, taken=edit.taken, action=action,
                                 attribution=attribution.to_json(), instruction=instruction)

    @staticmethod
    def _model_unsourced(run, events: Sequence[Event], final: Final | None) -> bool:
        """Whether the model's own text was unsourced: the run's status is its latest Final's, so
        the status, unless a step was done again since (then by the model's Final, as the runner
        judged it)."""
        if not any(isinstance(e, StepRedone) for e in events):
            return run.status == RunStatus.UNSOURCED
        return final is not None and unsourced(run.method, final)

    @staticmethod
    def _unsourced_now(run, events: Sequence[Event]) -> str:
        """Why no part of ``run`` (a RunRow) is checked against a source as it stands, "" when
        some is (its status: its latest Final's)."""
        return unsourced_cause(list(events)) if run.status == RunStatus.UNSOURCED else ""

    def _merged(self, run_id: str, revs: Revisions, latest: VersionRow | None, theirs: str, what: str) -> str:
        """``theirs`` with the author's edits of the latest version kept (:func:`merge_text`);
        raises EditConflict where they clash."""
        if latest is None:
            return theirs
        merged = merge_text(revs.text(latest.undone, latest.taken), latest.text, theirs)
        if merged is None:
            raise EditConflict(_conflict(run_id, what))
        return merged


def _conflict(run_id: str, what: str) -> str:
    return (f"You edited by hand the text that would change if you {what}: nothing was changed, so your edit is "
            f"kept. Undo your edit of that paragraph first (or restore an earlier version of run {run_id}), "
            "or change the paragraph by hand.")


def _key(piece: Piece) -> str:
    return " ".join(piece.body.split())

