"""Small value types that cross module boundaries (tasks, search results, pages, passages,
sources).
All frozen, all JSON-friendly through ``dataclasses.asdict``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from common.errors import TaskError


class RunStatus(StrEnum):
    """Where a run stands (runs.status). A StrEnum: it compares equal to, and is stored as, its value."""

    RUNNING = "running"  # still going, or its process died: resume() goes on from the stored events
    DONE = "done"  # Final was reached
    UNSOURCED = "unsourced"  # Final was reached, but no step was checked against retrieved text
    DRAFT = "draft"  # stopped after the draft on purpose ("Draft only"); resume() goes on
    FAILED = "failed"  # a Failed event was stored; if it says resumable, resume() goes on
    INTERRUPTED = "interrupted"  # the consumer stopped listening (Stop, Ctrl-C); resume() goes on
    BUDGET = "budget"  # stopped before the call that would pass its token budget; resume() with a larger one


#: What a task asks for: an article, a plan, or a short answer (scored by exact match and F1).
KINDS = ("writing", "plan", "qa")


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str
    snippet: str = ""
    provider: str = ""


@dataclass(frozen=True)
class Page:
    """A fetched page. ``status`` is "ok" or "error"; on error ``error`` says why and ``text``
    is empty. ``text`` is the main text extracted by trafilatura, as Markdown."""

    url: str
    status: str
    title: str = ""
    text: str = ""
    error: str = ""
    final_url: str = ""
    content_type: str = ""
    size: int = 0  # bytes of the body as received
    seconds: float = 0.0
    cached: bool = False
    metadata: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Passage:
    """A piece of a page's text, labelled with where it came from."""

    text: str
    url: str
    title: str = ""
    score: float = 0.0
    tokens: int = 0
    snippet: bool = False  # a search result's snippet, used because its page could not be read


@dataclass(frozen=True)
class Source:
    """One entry of an article's numbered source list: which steps used it. ``read``: a
    passage of the page itself was used; False when only its search snippet was (the page
    could not be read: ``why``)."""

    n: int
    url: str
    title: str
    steps: tuple[int, ...] = ()
    read: bool = True
    why: str = ""


@dataclass(frozen=True)
class Task:
    prompt: str
    kind: str = "writing"
    task_set: str = ""

    def validated(self, max_chars: int) -> Task:
        """The task with its prompt stripped. Raises TaskError when it is empty, too long or
        of an unknown kind."""
        prompt = (self.prompt or "").strip()
        if not prompt:
            raise TaskError("The task is empty: type what the text should be about, e.g. "
                            '"Describe the life of Jin Yong".')
        if len(prompt) > max_chars:
            raise TaskError(
                f"The task is {len(prompt):,} characters long; the limit is {max_chars:,}. "
                "Shorten it, or raise the limit with --max-task-chars."
            )
        if self.kind not in KINDS:
            raise TaskError(f"Unknown task kind {self.kind!r}: use one of {', '.join(KINDS)}.")
        check_text(prompt, "The task")
        return Task(prompt, self.kind, self.task_set)


def check_text(text: str, what: str) -> None:
    """Raises TaskError naming ``what`` when ``text`` holds what no text should (see text_problem)."""
    problem = text_problem(text)
    if problem:
        raise TaskError(f"{what} {problem}")


def text_problem(text: str) -> str | None:
    """What is wrong with ``text``, or None: characters that were bytes of invalid UTF-8 (lone
    surrogates, as Python decodes such command-line bytes), NUL, or control characters other
    than tab and line breaks. The answer reads after a subject: "is not valid UTF-8 (...)"."""
    for n, ch in enumerate(text, 1):
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            return f"is not valid UTF-8 (a stray byte at character {n}); save or type it as UTF-8 text."
        if (code < 32 and ch not in "\t\n\r") or code == 127:
            return f"holds a control character (U+{code:04X}) at character {n}; remove it."
    return None
