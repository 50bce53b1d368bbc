"""Scripted "models" for the fake LLM server: a reply function that answers RAT's three prompts
(B.1 draft, B.2 query, B.3 revise, and our step-scope revise) the way a cooperative model would,
so a test can check what each prompt contained and what the run did with each answer."""

from __future__ import annotations

import re
import threading

from core.text.segment import sentences
from tests.fakes.llm_server import message_text

TOPICS = [
    "Python 3.6.0 was released in December 2016 with formatted string literals and many optimizations.",
    "Mercurial moved its code base from Python 2 to Python 3 over several years of work.",
    "Managing Python environments with virtualenv and pip keeps project dependencies apart.",
    "Carbon emissions from forests and land use matter for climate change.",
    "A new telescope lets astronomers study distant galaxies.",
    "Parsing JSON quickly needs careful engineering of number parsing.",
    "The t-SNE algorithm embeds high-dimensional data for visualisation.",
    "Testing client-side applications with Django needs browser tests.",
]


def draft_steps(n: int) -> list[str]:
    return [f"Step {i + 1}: {TOPICS[i % len(TOPICS)]}" for i in range(n)]


def sections(prompt: str) -> dict[str, str]:
    """'##Name:' headed sections of a prompt."""
    found: dict[str, str] = {}
    for match in re.finditer(r"^##([^\n]+?):?\n(.*?)(?=^##|\Z)", prompt, flags=re.S | re.M):
        found[match.group(1).strip().rstrip(":")] = match.group(2).strip()
    return found


def prompt_of(body: dict) -> str:
    return "\n".join(message_text(m) for m in body.get("messages", []) if m.get("role") == "user")


def kind_of(prompt: str) -> str:
    if "Try to answer this question/instruction with step-by-step thoughts" in prompt:
        return "draft"
    if "This summarization will be used as a query" in prompt:
        return "query"
    if prompt.startswith("##Existing Text in Wiki Web:"):
        return "revise-step" if "##Paragraph to revise:" in prompt else "revise"
    return "other"


def rat_reply(kind: str, prompt: str, steps: list[str]) -> str | None:
    """A cooperative model's answer to one of RAT's prompts (kinds of :func:`kind_of`), or None
    for another kind: the draft is ``steps``; a query, the first words of the content's last
    paragraph; a revision appends " [revised]" to the answer's last paragraph (or to the
    paragraph, in step-scope)."""
    parts = sections(prompt)
    if kind == "draft":
        return "\n\n".join(steps)
    if kind == "query":
        last = parts["Content"].split("\n\n")[-1]
        return "Query: " + " ".join(re.sub(r"^Step \d+:\s*", "", last).split()[:8])
    if kind == "revise":
        paragraphs = parts["Answer"].split("\n\n")
        paragraphs[-1] += " [revised]"
        return "\n\n".join(paragraphs)
    if kind == "revise-step":
        return parts["Paragraph to revise"] + " [revised]"
    return None


class RatAuthor:
    """Answers RAT's prompts: the draft is ``steps`` joined by blank lines; a query is the
    first words of the last paragraph of the content; a revision appends " [revised]" to the
    last paragraph of the answer (or to the paragraph, in step-scope)."""

    def __init__(self, steps: list[str], *, draft_text: str | None = None):
        self.steps = steps
        self.draft_text = draft_text
        self.calls: list[tuple[str, str]] = []  # (kind, prompt)

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        kind = kind_of(prompt)
        self.calls.append((kind, prompt))
        if kind == "draft" and self.draft_text is not None:
            return self.draft_text
        return rat_reply(kind, prompt, self.steps) or "ok"

    def of_kind(self, kind: str) -> list[str]:
        return [p for k, p in self.calls if k == kind]


GATE_LIMIT = 20  # seconds a revision waits at a Gate at most, so a failed test cannot hang


class Gate:
    """A reply function that answers like RatAuthor, but holds every revision until opened
    (every one after the first ``passed``, which go through)."""

    def __init__(self, steps: int = 3, *, open_at_start: bool = False, passed: int = 0) -> None:
        self.author = RatAuthor(draft_steps(steps))
        self.passed = passed
        self.open = threading.Event()
        if open_at_start:
            self.open.set()
        self.held = threading.Event()  # a revision is waiting at the gate

    def __call__(self, body: dict) -> str:
        reply = self.author(body)
        if self.author.calls[-1][0] == "revise" and len(self.author.of_kind("revise")) > self.passed:
            self.held.set()
            self.open.wait(GATE_LIMIT)
        return reply


_LABEL = re.compile(r"^\[(\d+)\] (.*?)(?: — (\S+))?\n<passage>\n(.*?)\n</passage>", re.S | re.M)


class QuotingAuthor(RatAuthor):
    """A RatAuthor whose every revision adds one sentence copied word for word from a passage it
    was shown, with the passage's label as its mark ("... [3].", as models cite; the passages
    taken in turn, so a step done again quotes another one), and which remembers where each quote
    came from: ``quoted`` maps the quote's words (lowercase, spaces collapsed) to the page's URL
    and title. What an honest model does; a test then checks that each quote's [n] names that page."""

    QUOTE_WORDS = 14

    def __init__(self, steps: list[str]):
        super().__init__(steps)
        self.quoted: dict[str, tuple[str, str]] = {}
        self.turn = 0

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        kind = kind_of(prompt)
        reply = super().__call__(body)
        if kind not in ("revise", "revise-step"):
            return reply
        passages = [(m.group(1), m.group(3) or m.group(2), m.group(2), m.group(4))
                    for m in _LABEL.finditer(sections(prompt).get("Existing Text in Wiki Web", ""))]
        passages = [p for p in passages if len(p[3].split()) >= self.QUOTE_WORDS]
        if not passages:
            return reply
        label, url, title, text = passages[self.turn % len(passages)]
        self.turn += 1
        words = re.sub(r"[^\w\s'-]", " ", text).split()[: self.QUOTE_WORDS]
        quote = " ".join(words)
        self.quoted[quote.lower()] = (url, title)
        return reply.rstrip() + f" {quote[0].upper()}{quote[1:]} [{label}]."


class ChineseQuotingAuthor(QuotingAuthor):
    """A QuotingAuthor that writes each revised paragraph in Chinese (step-scope revisions only):
    a sentence of its own, then one that names the passage's page with the passage's label as its
    mark ("据《Title》报道，这是第3条引文[2]。"); ``quoted`` maps that sentence's words to the page."""

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        if kind_of(prompt) != "revise-step":
            return super().__call__(body)
        passages = [(m.group(1), m.group(3) or m.group(2), m.group(2))
                    for m in _LABEL.finditer(sections(prompt).get("Existing Text in Wiki Web", ""))]
        self.turn += 1
        head = f"第{self.turn}段用中文写成，讨论这个步骤。"
        if not passages:
            return head
        label, url, title = passages[self.turn % len(passages)]
        sentence = f"据《{title}》报道，这是第{self.turn}条引文"
        self.quoted[" ".join(re.sub(r"[^\w\s'-]", " ", sentence).lower().split())] = (url, title)
        return f"{head}{sentence}[{label}]。"


class SentenceQuotingAuthor(RatAuthor):
    """Answers RAT's prompts in the language of its ``steps`` (Chinese, Japanese: no spaces
    between words): the draft is ``steps``; a query, the step it searches for (the content's last
    paragraph, its closing stop taken off); a step-scope revision, the paragraph followed by the
    first sentence of the first passage it was shown, copied whole, with the passage's label as
    its mark before the sentence's stop ("…全部是竹子[2]。"), as models cite. ``quoted`` maps each
    quoted sentence (without its stop) to the page's URL and title."""

    def __init__(self, steps: list[str]):
        super().__init__(steps)
        self.quoted: dict[str, tuple[str, str]] = {}

    def __call__(self, body: dict) -> str:
        prompt = prompt_of(body)
        kind = kind_of(prompt)
        self.calls.append((kind, prompt))
        parts = sections(prompt)
        if kind == "query":
            return parts["Content"].split("\n\n")[-1].strip().rstrip("。！？.")
        if kind != "revise-step":
            return rat_reply(kind, prompt, self.steps) or "ok"
        paragraph = parts["Paragraph to revise"]
        passages = [(m.group(1), m.group(3) or m.group(2), m.group(2), m.group(4))
                    for m in _LABEL.finditer(parts.get("Existing Text in Wiki Web", ""))]
        for label, url, title, text in passages:
            sentence = next((s.strip() for s in sentences(text)
                             if s.strip().endswith("。") and not s.lstrip().startswith("#")), "")
            if sentence:
                self.quoted[sentence[:-1]] = (url, title)
                return f"{paragraph}{sentence[:-1]}[{label}]。"
        return paragraph
