"""What a finished run shows in the arena: its article, as the Writer exports it.

A run with sources enters the arena (``data.arena.sync_run_outputs``) as its article written
out with its [n] marks and the numbered sources they name (``core.article.markdown.text_and_sources``),
built exactly as ``python app.py show`` and the Writer's export build it (``core.authoring``): the
model's own text from its first Final, an author's version as it stored its citations. A run without sources
(``direct``, ``cot``, an unsourced article) is stored as its text, as before. How both sides are
then shown alike is ``annotation.present``'s business.

    render = article_renderer(store)            # what Arena passes to sync_run_outputs
    render(run_id, None, run.final_text)        # the model's text, as its article
"""

from __future__ import annotations

from core.article.citations import CITE_THRESHOLD
from core.article.markdown import text_and_sources
from core.authoring import Authoring
from data.arena import Render
from data.store import Store
from data.versions import MODEL


def run_output_text(store: Store, run_id: str, version: int | None, text: str, *,
                    threshold: float = CITE_THRESHOLD) -> str:
    """The text the arena stores for run ``run_id`` whose ``text`` is the author's version
    ``version`` (None: the model's own): its article with its [n] marks and numbered sources
    when it has sources, else ``text`` as it is (also when the run's events hold no such text,
    e.g. a run stored without them). ``threshold``: the share of a sentence's words a passage
    must hold to be cited (``--cite-threshold``), for an author's version, which is cited anew as
    the export cites it. Raises RunNotFound, VersionNotFound, StoreError."""
    article = Authoring(store, threshold).article(run_id, MODEL if version is None else version)
    if _words(article.text) != _words(text):
        return text
    return text_and_sources(article) if article.numbered else text


def article_renderer(store: Store, *, threshold: float = CITE_THRESHOLD) -> Render:
    """``data.arena.sync_run_outputs``'s ``render`` for ``store``: :func:`run_output_text`."""
    def render(run_id: str, version: int | None, text: str) -> str:
        return run_output_text(store, run_id, version, text, threshold=threshold)

    return render


def _words(text: str) -> list[str]:
    return text.split()
