"""The article as Markdown: its title, an unsourced warning, the text with its [n] marks, a line
when its end was cut, the sources in the readers' numbering (``Article.renumbered``: the cited ones
1..n, then "Also read" and the snippet-only ones apart, with no number) and the steps never
checked. Titles and the task are written as text: Markdown and HTML in them are escaped."""

from __future__ import annotations

import html
import re

from common.types import Source
from core.article.article import CUT_TEXT, Article


def to_markdown(article: Article) -> str:
    """The article (in the readers' numbering: ``Article.renumbered``) with its sources: under
    "Sources" those its marks name, numbered 1..n, each with the steps that used it (a snippet-only
    one says its page was not read, and why); under "Also read" the pages a step read that no
    sentence cites, with no number; the other snippet-only sources apart with why; then the steps
    that were never checked against a source, one line each. An unsourced article gets a warning
    above the text instead; a cut one a line under it that says its end is missing."""
    article = article.renumbered()
    parts = [f"# {escape_text(article.heading)}", ""]
    if article.unsourced:
        parts += [f"> **Unsourced**: no part of this text was checked against retrieved text ({article.unsourced}).",
                  ""]
    parts += [article.body, ""]
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
    if article.unchecked_lines:
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
