"""The article as Markdown: its title, an unsourced warning, the text with its [n] marks, a line
when its end was cut, the numbered sources (the snippet-only ones apart) and the steps never
checked. Titles and the task are written as text: Markdown and HTML in them are escaped."""

from __future__ import annotations

import html
import re

from core.article.article import CUT_TEXT, Article


def to_markdown(article: Article) -> str:
    """The article with a numbered source list that says which steps used each source (and which
    no sentence cites), the sources whose page was never read listed apart with why, and the
    steps that were never checked against a source, one line each. An unsourced article gets a
    warning above the text instead; a cut one a line under it that says its end is missing."""
    parts = [f"# {escape_text(article.heading)}", ""]
    if article.unsourced:
        parts += [f"> **Unsourced**: no part of this text was checked against retrieved text ({article.unsourced}).",
                  ""]
    parts += [article.body, ""]
    if article.cut:
        parts += [f"> **Cut short**: {CUT_TEXT}.", ""]
    if article.read_sources:
        parts += ["## Sources", ""]
        parts += [f"{s.n}. [{escape_text(s.title or s.url)}]({link_target(s.url)}){article.used_in(s)}"
                  for s in article.read_sources]
        parts.append("")
    if article.snippet_sources:
        parts += ["## Search snippets only (page not read)", ""]
        parts += [f"{s.n}. [{escape_text(s.title or s.url)}]({link_target(s.url)}){article.used_in(s)}; the page "
                  f"was not read: {escape_text(s.why or 'unknown reason')}" for s in article.snippet_sources]
        parts.append("")
    if article.unchecked_lines:
        parts += ["## Not checked against a source", ""]
        parts += [f"- {line}" for line in article.unchecked_lines]
        parts.append("")
    return "\n".join(parts)


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
