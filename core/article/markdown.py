"""The article as Markdown: its title, an unsourced warning, the text with its [n] marks, a line
when its end was cut, the sources in the readers' numbering (``Article.renumbered``: the cited ones
1..n, then "Also read" and the snippet-only ones apart, with no number) and the steps never
checked. Titles and the task are written as text: Markdown and HTML in them are escaped; raw HTML
in the body (a tag a model copied from a page) is escaped too, outside code (:func:`escape_html`).
The steps never checked are run notes: left out of a reader's document unless asked for
(``notes``). :func:`to_text` is the same article as plain text, with no markup."""

from __future__ import annotations

import html
import re

from common.types import Source
from core.article.article import CUT_TEXT, Article


def to_markdown(article: Article, *, notes: bool = False) -> str:
    """The article (in the readers' numbering: ``Article.renumbered``) with its sources: under
    "Sources" those its marks name, numbered 1..n, each with the steps that used it (a snippet-only
    one says its page was not read, and why); under "Also read" the pages a step read that no
    sentence cites, with no number; the other snippet-only sources apart with why; then the steps
    that were never checked against a source, one line each (run notes: only with ``notes``). An
    unsourced article gets a warning above the text instead; a cut one a line under it that says its
    end is missing."""
    article = article.renumbered()
    parts = [f"# {escape_text(article.heading)}", ""]
    if article.unsourced:
        parts += [f"> **Unsourced**: no part of this text was checked against retrieved text ({article.unsourced}).",
                  ""]
    parts += [escape_html(article.body), ""]
    if article.cut:
        parts += [f"> **Cut short**: {CUT_TEXT}.", ""]
    if article.numbered:
        parts += ["## Sources", ""]
        parts += [_entry(article, s) + ("" if s.read else _unread(s)) for s in article.numbered]
        parts.append("")
    if article.also_read:
        parts += ["## Also read", ""]
        parts += [_entry(article, s) for s in article.also_read]
        parts.append("")
    if article.snippets_apart:
        parts += ["## Search snippets only (page not read)", ""]
        parts += [_entry(article, s) + _unread(s) for s in article.snippets_apart]
        parts.append("")
    if notes and article.unchecked_lines:
        parts += ["## Not checked against a source", ""]
        parts += [f"- {line}" for line in article.unchecked_lines]
        parts.append("")
    return "\n".join(parts)


def text_and_sources(article: Article) -> str:
    """The article as a reader compares it with another text (the arena stores this for a run
    with sources: ``annotation.outputs``): its text with its [n] marks, then "Sources" and the
    sources those marks name, numbered 1..n as :func:`to_markdown` numbers them, each its title as a
    link and nothing more. No title, warning, "Also read", snippet note or unchecked steps: they
    tell how the run went, not what the text says."""
    article = article.renumbered()
    parts = [article.body]
    if article.numbered:
        parts += ["", "## Sources", "", *(f"{s.n}. {_link(s)}" for s in article.numbered)]
    return "\n".join(parts)


#: The reference list's heading in DeepResearch Bench's articles, by the task's language, as its
#: published reports write it (data/test_data/raw_data/claude-3-7-sonnet-latest.jsonl: "参考文献：" under
#: Chinese tasks, "References" under English ones).
BENCH_HEADINGS = {"zh": "参考文献：", "en": "References"}


def bench_article(article: Article, language: str | None = None) -> str:
    """The article as DeepResearch Bench takes a system's report (``raw_data/<model>.jsonl``'s
    ``article``): its text with its [n] marks ("text[15]" or "text [1][2]": form 2 of the FACT
    extraction prompt, utils/extract.py), then the reference list the extractor reads each cited
    URL from ("the reference list at the end of the research report"): a heading
    (:data:`BENCH_HEADINGS`, by ``language``: Chinese or else English) and one line per source its
    marks name, "[n] URL - title", as the bench's published reports write them. Sources named by
    no mark are left out (FACT checks cited facts only); a text without sources is its body."""
    article = article.renumbered()
    parts = [article.body]
    if article.numbered:
        heading = BENCH_HEADINGS["zh" if (language or "").lower().startswith("zh") else "en"]
        parts += ["", heading, *(f"[{s.n}] {s.url} - {_one_line(s.title or s.url)}" for s in article.numbered)]
    return "\n".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _entry(article: Article, s: Source) -> str:
    """One source's list item: "n. " when it has a number, else "- "; its title as a link, and the
    steps that used it."""
    item = f"{s.n}." if s.n > 0 else "-"
    return f"{item} {_link(s)}{article.used_in(s)}"


def _link(s: Source) -> str:
    return f"[{escape_text(s.title or s.url)}]({link_target(s.url)})"


def _unread(s: Source) -> str:
    return f"; the page was not read: {escape_text(s.why or 'unknown reason')}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def escape_text(text: str) -> str:
    """``text`` (a page title, a task) on one line, to be read as plain text in Markdown: HTML
    is escaped (``<script>`` shows as written, never runs) and Markdown's punctuation
    backslash-escaped."""
    one = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(one, quote=False))


def link_target(url: str) -> str:
    """``url`` as a Markdown link target: spaces, brackets and angle brackets percent-encoded,
    so the URL cannot end the link early or open an HTML tag."""
    table = {" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", "[": "%5B", "]": "%5D", "\n": "", "\r": ""}
    return "".join(table.get(ch, ch) for ch in url.strip())


_FENCE_LINE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.S)
_AUTOLINK = re.compile(r"<(?:https?|mailto):[^\s<>]*>", re.I)
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")  # what a Markdown renderer would take for raw HTML


def escape_html(text: str) -> str:
    """``text`` (an article's body) with its raw HTML escaped: each "<" that would open a tag, a
    comment or a declaration becomes "&lt;", so a ``<script>`` a model copied from a page shows as
    written and never runs. Code (fenced blocks and `spans`, shown as written by any renderer) and
    autolinks (``<https://...>``) are kept as they are; nothing else is changed."""
    out: list[str] = []
    fence = ""  # the fence that opened the code block we are in
    for line in text.splitlines(keepends=True):
        opened = _FENCE_LINE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            out.append(line)
        elif opened:
            fence = opened.group(1)
            out.append(line)
        else:
            out.append(_escape_outside(line, (_CODE_SPAN, _AUTOLINK)))
    return "".join(out)


def _escape_outside(text: str, kept: tuple[re.Pattern, ...]) -> str:
    """``text`` with tag starts escaped, except inside what the first pattern of ``kept``
    matches (then, in the rest, what the next one matches, and so on)."""
    if not kept:
        return _TAG_START.sub("&lt;", text)
    pieces, last = [], 0
    for m in kept[0].finditer(text):
        pieces += [_escape_outside(text[last:m.start()], kept[1:]), m.group(0)]
        last = m.end()
    return "".join(pieces) + _escape_outside(text[last:], kept[1:])


_PLAIN_RULES = (  # Markdown markup -> the text it marks up, applied in order to each line
    (re.compile(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$"), r"\1"),  # "## Heading"
    (re.compile(r"^\s{0,3}>\s?"), ""),  # "> quote"
    (re.compile(r"^(\s*)[*+]\s+"), r"\1- "),  # "* item"
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # an image: its alt text
    (re.compile(r"\[([^\]]+)\]\((\S+?)(?:\s+\"[^\"]*\")?\)"), r"\1 (\2)"),  # [text](url) -> text (url)
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # **bold**
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"), r"\1"),  # _italic_
    (re.compile(r"(`+)(.+?)\1"), r"\2"),  # `code`
    (re.compile(r"\\([\\`*_{}\[\]()#+!|~>-])"), r"\1"),  # backslash escapes
)


def plain_text(markdown: str) -> str:
    """``markdown`` as plain text: headings, emphasis, code ticks, quotes and fences taken away,
    a link written as "text (url)"; [n] marks, list items ("- ", "1. ") and line breaks kept."""
    lines = []
    for line in markdown.splitlines():
        if _FENCE_LINE.match(line):
            continue
        for pattern, repl in _PLAIN_RULES:
            line = pattern.sub(repl, line)
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def to_text(article: Article) -> str:
    """The article as plain text, for pasting where Markdown is not read: its title, an
    unsourced warning, the text with its [n] marks and no other markup (:func:`plain_text`), a line
    when its end was cut, and under "Sources" the sources its marks name as "[n] title — URL"
    (for a text never attributed, every read source). No run notes."""
    article = article.renumbered()
    parts = [" ".join(article.heading.split()), ""]
    if article.unsourced:
        parts += [f"Unsourced: no part of this text was checked against retrieved text ({article.unsourced}).", ""]
    parts += [plain_text(article.body), ""]
    if article.cut:
        parts += [f"Cut short: {CUT_TEXT}.", ""]
    if article.numbered:
        parts += ["Sources", ""]
        parts += [f"{f'[{s.n}] ' if s.n > 0 else ''}{' '.join((s.title or s.url).split())} — {s.url}"
                  for s in article.numbered]
    return "\n".join(parts).strip() + "\n"
