"""The article as one self-contained HTML page: the content of ``core.article.markdown.to_markdown``
(title, unsourced warning, the text with its [n] marks, a line when its end was cut, the sources in
the readers' numbering with "Also read" and the snippet-only ones apart, the steps never checked
only with ``notes``), to open in any browser, mail or put on a site as it is.

Self-contained and inert: one file with its style in a ``<style>`` element, no script, no
stylesheet, image or font fetched from anywhere (a Content-Security-Policy says so to the browser
too). Every text is escaped (a title, a task, a page's title and the model's text can all hold
``<script>``), and only http(s) URLs become links (``href``); any other address is written as text.

Each [n] mark of the text is a link to its source's entry (``<a href="#src-n">``), and each entry
of the numbered list has that id. The page says its language (``lang``: ``blocks.language_of``)
so a browser draws Chinese with a Chinese font and Japanese with a Japanese one; the fonts are the
reader's own (every system that shows a browser has CJK fonts: nothing is embedded)."""

from __future__ import annotations

import html

from common.types import Source
from core.article.article import CUT_TEXT, Article
from core.article.blocks import (
    BULLET_ITEM,
    HEADING_BLOCK,
    NUMBERED_ITEM,
    WEB,
    Block,
    blocks,
    clean,
    language_of,
    linked_numbers,
    runs,
)

ANCHOR = "src-{n}"  # the id of source n's entry, where its marks link
#: The browser may load nothing: no script, style only from the page itself, images only inline.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1f2328; line-height: 1.65; font-size: 17px;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Helvetica Neue", Arial,
    "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC", sans-serif; }
:lang(ja) body, body:lang(ja) { font-family: system-ui, -apple-system, "Segoe UI", "Hiragino Sans", "Yu Gothic",
  "Meiryo", "Noto Sans CJK JP", "Noto Sans JP", sans-serif; }
:lang(ko) body, body:lang(ko) { font-family: system-ui, -apple-system, "Segoe UI", "Apple SD Gothic Neo",
  "Malgun Gothic", "Noto Sans CJK KR", "Noto Sans KR", sans-serif; }
main { max-width: 46rem; margin: 0 auto; padding: 2.5rem 1.25rem 4rem; }
h1 { font-size: 1.9rem; line-height: 1.25; margin: 0 0 1.5rem; }
h2 { font-size: 1.35rem; margin: 2.2rem 0 .8rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h3, h4, h5, h6 { margin: 1.6rem 0 .6rem; }
p, li { overflow-wrap: anywhere; }
a { color: #0b5cad; }
a.cite { text-decoration: none; }
a.cite:hover, a.cite:focus { text-decoration: underline; }
.note { margin: 1rem 0; padding: .6rem .9rem; border-left: 4px solid #bf8700; background: #fff8c5; }
ol.sources li, ul.sources li { margin: .35rem 0; }
li:target { background: #fff3b0; }
@media print { main { max-width: none; padding: 0; } a { color: inherit; } }
"""


def to_html(article: Article, *, notes: bool = False) -> str:
    """The article (in the readers' numbering: ``Article.renumbered``) as an HTML page, with the
    content of ``to_markdown`` (the steps never checked only with ``notes``)."""
    article = article.renumbered()
    language = language_of(article)
    lang = f' lang="{_esc(language)}"' if language else ""
    parts = ["<!DOCTYPE html>", f"<html{lang}>", "<head>", '<meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<meta name="generator" content="RAT Studio">',
             f"<title>{_esc(' '.join(article.heading.split()))}</title>", f"<style>{STYLE}</style>", "</head>",
             "<body>", "<main>", *article_parts(article, notes=notes)]
    parts += ["</main>", "</body>", "</html>", ""]
    return "\n".join(parts)


def article_parts(article: Article, *, notes: bool = False) -> list[str]:
    """What ``to_html``'s page shows of ``article`` (in the readers' numbering), as its lines: the
    ``<article>`` and the source lists after it; for a page that shows an article among other
    things (a share link's, ``ui.share_page``), with ``STYLE``."""
    article = article.renumbered()
    numbers = linked_numbers(article)
    parts = ["<article>", f"<h1>{_esc(article.heading)}</h1>"]
    if article.unsourced:
        parts.append(f'<p class="note"><strong>Unsourced</strong>: no part of this text was checked against '
                     f"retrieved text ({_esc(article.unsourced)}).</p>")
    parts += _body(article.body, numbers)
    if article.cut:
        parts.append(f'<p class="note"><strong>Cut short</strong>: {_esc(CUT_TEXT)}.</p>')
    parts.append("</article>")
    if article.numbered:
        parts += ['<section class="sources">', "<h2>Sources</h2>", '<ol class="sources">',
                  *(_entry(article, s, "" if s.read else _unread(s), ordered=True) for s in article.numbered), "</ol>",
                  "</section>"]
    if article.also_read:
        parts += ['<section class="also-read">', "<h2>Also read</h2>", '<ul class="sources">',
                  *(_entry(article, s) for s in article.also_read), "</ul>", "</section>"]
    if article.snippets_apart:
        parts += ['<section class="snippets">', "<h2>Search snippets only (page not read)</h2>", '<ul class="sources">',
                  *(_entry(article, s, _unread(s)) for s in article.snippets_apart), "</ul>", "</section>"]
    if notes and article.unchecked_lines:
        parts += ['<section class="notes">', "<h2>Not checked against a source</h2>", "<ul>",
                  *(f"<li>{_esc(line)}</li>" for line in article.unchecked_lines), "</ul>", "</section>"]
    return parts


def _body(text: str, numbers: set[int]) -> list[str]:
    """The body's blocks as HTML: its headings under the article's title (h2 for "#"), its
    consecutive list items in one list."""
    out: list[str] = []
    open_list = ""  # "ul" or "ol" while list items go on
    for block in blocks(text):
        tag = {BULLET_ITEM: "ul", NUMBERED_ITEM: "ol"}.get(block.kind, "")
        if open_list and tag != open_list:
            out.append(f"</{open_list}>")
            open_list = ""
        if tag and not open_list:
            out.append(f"<{tag}>")
            open_list = tag
        out.append(_block(block, numbers))
    if open_list:
        out.append(f"</{open_list}>")
    return out


def _block(block: Block, numbers: set[int]) -> str:
    inline = _inline(block.text, numbers)
    if block.kind == HEADING_BLOCK:
        level = min(block.level + 1, 6)
        return f"<h{level}>{inline}</h{level}>"
    if block.kind in (BULLET_ITEM, NUMBERED_ITEM):
        return f"<li>{inline}</li>"
    return f"<p>{inline}</p>"


def _inline(text: str, numbers: set[int]) -> str:
    """A block's runs: bold and italic as such, each linked [n] mark a link to its source's entry."""
    out = []
    for run in runs(text, numbers):
        piece = _esc(run.text)
        if run.source:
            piece = f'<a class="cite" href="#{ANCHOR.format(n=run.source)}">{piece}</a>'
        if run.italic:
            piece = f"<em>{piece}</em>"
        if run.bold:
            piece = f"<strong>{piece}</strong>"
        out.append(piece)
    return "".join(out)


def _entry(article: Article, s: Source, after: str = "", *, ordered: bool = False) -> str:
    """One source's list item: with id ``src-n`` when it has a number (an ``ordered`` list's item
    its value, another's "[n] " before its title), its title, its URL (an http(s) one as a link to
    its page), the steps that used it and ``after``."""
    number = ""
    if s.n > 0:
        number = f' id="{ANCHOR.format(n=s.n)}"' + (f' value="{s.n}"' if ordered else "")
    title = ("" if ordered or s.n <= 0 else f"[{s.n}] ") + _esc(" ".join((s.title or s.url).split()))
    url = _esc(s.url)
    address = f'<a href="{url}" rel="noopener noreferrer">{url}</a>' if WEB.match(s.url) else url
    return f"<li{number}>{title} — {address}{_esc(article.used_in(s) + after)}</li>"


def _unread(s: Source) -> str:
    return f"; the page was not read: {s.why or 'unknown reason'}"


def _esc(text: str) -> str:
    """``text`` as HTML text or an attribute's value: nothing in it is markup."""
    return html.escape(clean(text), quote=True)
