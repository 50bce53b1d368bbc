"""Both sides of an arena pair shown alike, whatever method or system wrote them (``--arena-style``):
formatting must give no method away, and must not hide what matters.

:func:`parse` reads any output's text into its body, its citation marks and its sources;
:func:`present` writes it back in one house style, the same for both sides:

- ``sources``: the body with each citation as [n], numbered 1..n in the order the sources are
  first cited, then a "**Sources**" line and the numbered list ``n. [Title](url)`` (the title or
  the URL alone when only one is known): the cited sources in that order, then the output's
  other listed sources. A mark that names no source it lists is left out.
- ``plain``: the body alone: no marks, no sources, no echoed labels.

In both, headings become ``####`` (one level: a text cannot look like a formal report beside a chat
reply), thematic breaks go, and nothing else of the body is lost or changed.

What is read, one rule each (code, fenced or inline, is left as it is):

- a citation mark is a bracket of source numbers, each number alone, in a range or after one word
  that names a source: ``[1]``, ``[1, 2]``, ``[2-4]``, ``[Source 3]``, ``[Source 3: Title]``, and
  the same in ``【1】`` or ``<sup>1</sup>``, or a footnote ``[^a]``; marks side by side are one
  citation (``[1][2]``). Not a link (``[1](...)``), and numbers 1-999 only (``[2020]`` is a year);
- a definition is a line that starts ``[1]:`` or ``[^a]:`` (with its indented lines): a source;
- a sources section is what follows the last heading of the text when that heading names sources
  (Sources, References, Bibliography, Works cited, Citations, Also read, Further reading, Links,
  "Sources: ..." on one line; a heading is ``#``, a bold line, a setext heading or a short line
  ending in ":") and every entry under it looks like a source: one with a URL or a Markdown link,
  or an item of a list (numbered, bulleted, ``[n]``); an entry's number is its key (a list with no
  numbers is numbered as it stands). Sections are taken off the end one at a time ("Sources", then
  "Also read"). With no heading, the text's last block is a section when each of its lines is a
  labelled entry with a URL (``[1] Title - https://...``) or a lone URL or link, one labelled at
  least. Anything else stays in the body: a "Sources" heading followed by prose, one that is not
  last, a reference list of plain lines with no URL, bare URLs under no heading;
- an echoed label is a line of the body that is only a source's label, title and URL, as prompts
  label passages (``[2] Title — https://...``, ``core.text.fencing.format_passages``; also
  ``Source 2: ...``), or a passage fence (``<passage>``): it leaves the body, and names the source
  of its number when the output lists none for it;
- a heading is ``#`` to ``######``, a setext heading (a line underlined with = or -), or a bold line
  of at most MAX_BOLD_HEADING_WORDS words standing alone after a blank line (a chat reply's
  heading); a thematic break (``---``) is dropped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from core.article.citations import RANGE_MAX  # "[2-5]" names 2..5: one rule for marks
from core.article.markdown import link_target
from core.text.fencing import FENCE_CLOSE, FENCE_OPEN

STYLES = (SOURCES, PLAIN) = ("sources", "plain")
HEADING = "####"  # every heading of an output, whatever its level
SOURCES_LINE = "**Sources**"
MAX_NAME_WORDS = 6  # a heading that names sources is short
MAX_INLINE_NAME_WORDS = 3  # and shorter when its sources follow it on its line ("Works cited: ...")
MAX_BOLD_HEADING_WORDS = 12  # a bold line standing alone is a heading when it is this short
MAX_LABEL_WORDS = 20  # an echoed label's words, its URL left out

# -- the pieces of the grammar ------------------------------------------------------------------
_NUM = r"[1-9]\d{0,2}"
_WORD = r"(?:source|ref|reference|citation|cite|passage|doc|document)s?\.?"
_ITEM = rf"(?:{_WORD}\s*)?#?{_NUM}(?:\s*[-–]\s*{_NUM})?"
_KEYS = rf"{_ITEM}(?:\s*[,;]\s*{_ITEM})*"
_MARK = re.compile(
    rf"\[\^(?P<fn>[^\]\s]{{1,40}})\]"
    rf"|\[(?P<keys>{_KEYS})(?:\s*:\s*(?P<title>[^\]\n]*))?\](?!\()"
    rf"|【(?P<wide>{_KEYS})(?:[†:][^】\n]*)?】"
    rf"|<sup>\s*\[?(?P<sup>{_KEYS})\]?\s*</sup>",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[^\s.!?;:,])[.!?;:,]+[\"'”’]?$")
_BETWEEN_MARKS = re.compile(r"[ \t]*[,;]?[ \t]*")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_DEFINITION = re.compile(rf"^\s{{0,3}}\[(?P<key>\^[^\]\s]{{1,40}}|{_NUM})\]:\s*(?P<rest>.*)$")
_ATX = re.compile(r"^\s{0,3}#{1,6}(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^\s{0,3}(?:=+|-+)[ \t]*$")
_BREAK = re.compile(r"^\s{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BOLD_LINE = re.compile(r"^\s{0,3}(\*\*|__)(?P<text>[^*_\s](?:(?!\1).)*?)\1[ \t]*:?[ \t]*$")
_COLON_LINE = re.compile(r"^\s{0,3}(?:\*\*|__)?(?P<text>[^:\[\]()\n*_#>`][^:\[\]()\n`]*?)(?:\*\*|__)?"
                         r"[ \t]*:(?:\*\*|__)?[ \t]*(?P<rest>.*)$")
_LIST = re.compile(r"^\s*(?:[-*+•]|(?P<n>\d{1,3})[.)])\s+")
_LABEL = re.compile(rf"^\s*(?:\[(?:{_WORD}\s*)?(?P<n>{_NUM})\]|\[(?P<fn>\^[^\]\s]{{1,40}})\]:?"
                    rf"|【(?P<wide>{_NUM})[^】\n]*】|{_WORD}\s*(?P<word>{_NUM})\s*[:.)]|(?P<def>{_NUM})[:]\s)\s*", re.I)
_SOURCE_NAME = re.compile(r"\b(?:sources?|references?|bibliography|citations?|cited|footnotes?|links?|reading|read|"
                          r"snippets?)\b", re.I)
_MD_LINK = re.compile(r"\[(?P<title>(?:\\.|[^\]\\])*)\]\(\s*<?(?P<url>[^)\s>]*)>?(?:\s+[\"'(][^)]*[\"')])?\s*\)")
_URL = re.compile(r"<?(?P<url>https?://[^\s<>\"]+)>?", re.I)
_PASSAGE_FENCE = re.compile(rf"^\s*(?:{re.escape(FENCE_OPEN)}|{re.escape(FENCE_CLOSE)})\s*$", re.I)
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>])")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()#!|~])")
_TITLE_ENDS = " \t-–—:|,;\"'“”‘’()[]<>*_"
_TITLE_LEAD_IN = re.compile(r"\s*(?:available\s+(?:at|from|online)|retrieved\s+(?:from|at)|accessed|url|link|at|from)"
                            r"\s*$", re.I)
_PRIVATE = re.compile("[\ue000-\uf8ff]")


@dataclass(frozen=True)
class Entry:
    """A source as an output names it: ``key``, the label its marks use ("1", "^a"; "" for an
    entry with none), its ``title`` and its ``url`` ("" when the output does not give it)."""

    key: str
    title: str
    url: str

    @property
    def identity(self) -> str:
        """What makes two entries one source: the URL, else the title."""
        return self.url.rstrip("/").lower() if self.url else " ".join(self.title.casefold().split())


@dataclass(frozen=True)
class Mark:
    """Citation marks side by side in the body: the keys they name, in order. ``line_start``: the
    marks begin their line (``[4] The answer...``)."""

    keys: tuple[str, ...]
    line_start: bool = False


@dataclass(frozen=True)
class Line:
    """A line of the body: text and marks in order; ``code``: inside a fenced block (as written)."""

    pieces: tuple[str | Mark, ...]
    code: bool = False

    def text(self, write=None) -> str:
        """The line with its marks left out, or each written by ``write(mark, before)``, which
        returns the line so far with the mark written in."""
        out = ""
        for piece in self.pieces:
            if isinstance(piece, Mark):
                out = write(piece, out) if write else out
            else:
                out += piece
        return out if self.code else out.rstrip()


@dataclass(frozen=True)
class Parsed:
    """An output read by :func:`parse`: its ``lines`` (the body, headings as ``####``, with its
    marks); ``sources``: those it lists (its sources sections, then its definitions), in order;
    ``labels``: those its echoed labels and titled marks name (used only for a key no listed
    source has)."""

    lines: tuple[Line, ...]
    sources: tuple[Entry, ...] = ()
    labels: tuple[Entry, ...] = ()

    @property
    def body(self) -> str:
        """The body as plain Markdown: no mark, no source, no label."""
        return _join((line.text(), line.code) for line in self.lines)

    @property
    def marks(self) -> tuple[str, ...]:
        """The keys the body's marks name, each once, in the order they first appear."""
        keys = (k for line in self.lines for p in line.pieces if isinstance(p, Mark) for k in p.keys)
        return tuple(dict.fromkeys(keys))

    def numbered(self) -> tuple[dict[str, int], tuple[Entry, ...]]:
        """The house numbering: (key -> number, the sources in number order). Sources are numbered
        1..n in the order the marks first name them, then the listed ones no mark names, in their
        order; a key no source has gets no number; keys of one source share its number."""
        by_key: dict[str, Entry] = {}
        for e in (*self.sources, *self.labels):
            if e.key and e.identity:
                by_key.setdefault(e.key, e)
        numbers: dict[str, int] = {}  # identity -> number
        listed: list[Entry] = []
        key_numbers: dict[str, int] = {}

        def number(e: Entry) -> int:
            if e.identity not in numbers:
                listed.append(e)
                numbers[e.identity] = len(listed)
            return numbers[e.identity]

        for key in self.marks:
            if key in by_key:
                key_numbers[key] = number(by_key[key])
        for e in self.sources:
            if e.identity:
                number(e)
        return key_numbers, tuple(listed)


def present(text: str, style: str = SOURCES) -> str:
    """``text`` (an output of any method) as Markdown in the house ``style`` (one of STYLES; see
    the module docstring). Raises ValueError for another style."""
    check_style(style)
    parsed = parse(text)
    if style == PLAIN:
        return parsed.body
    key_numbers, listed = parsed.numbered()

    def write(mark: Mark, before: str) -> str:
        numbers = sorted({key_numbers[k] for k in mark.keys if k in key_numbers})
        if not numbers:
            return before
        marks = "".join(f"[{n}]" for n in numbers)
        if mark.line_start:
            return before + marks + " "
        end = _SENTENCE_END.search(before)  # "night.[^1]" is written "night [1]."
        if end:
            return before[:end.start()] + " " + marks + end.group(0)
        return before + (marks if not before or before[-1].isspace() else " " + marks)

    body = _join((line.text(write), line.code) for line in parsed.lines)
    if not listed:
        return body
    entries = "\n".join(f"{n}. {entry_markdown(e)}" for n, e in enumerate(listed, start=1))
    return "\n\n".join(part for part in (body, SOURCES_LINE, entries) if part)


def check_style(style: str) -> str:
    """``style`` when it is one of STYLES. Raises ValueError naming them and --arena-style."""
    if style not in STYLES:
        raise ValueError(f"Unknown arena style {style!r}: use one of {', '.join(STYLES)} (--arena-style).")
    return style


def entry_markdown(e: Entry) -> str:
    """A source as the house lists it: its title as a link to its URL, or the one it has."""
    title = _escape(e.title)
    if e.url:
        return f"[{title or _escape(e.url)}]({link_target(e.url)})"
    return title


# -- reading ----------------------------------------------------------------------------------------
RawLine = tuple[str, bool]  # a line as written, and whether it is inside a fenced code block


def parse(text: str) -> Parsed:
    """Read an output (see the module docstring): its body, marks and sources."""
    lines = _raw_lines(text)
    lines, defined = _definitions(lines)
    lines, listed = _sections(lines)
    lines, echoed = _echoed_labels(lines)
    body, titled = _body(lines)
    return Parsed(tuple(body), tuple(listed + defined), tuple(echoed + titled))


def _raw_lines(text: str) -> list[RawLine]:
    text = _PRIVATE.sub("", (text or "").replace("\r\n", "\n").replace("\r", "\n"))
    out: list[RawLine] = []
    fence = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            out.append((line, True))
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
        elif m:
            fence = m.group(1)
            out.append((line, True))
        else:
            out.append((line, False))
    return out


def _definitions(lines: list[RawLine]) -> tuple[list[RawLine], list[Entry]]:
    """The lines without ``[1]: ...`` and ``[^a]: ...`` definitions (and their indented lines),
    and the sources they define."""
    kept: list[RawLine] = []
    found: list[Entry] = []
    k = 0
    while k < len(lines):
        line, code = lines[k]
        m = None if code else _DEFINITION.match(line)
        if m is None:
            kept.append(lines[k])
            k += 1
            continue
        rest = [m.group("rest")]
        k += 1
        while k < len(lines) and not lines[k][1] and lines[k][0][:1] in (" ", "\t") and lines[k][0].strip():
            rest.append(lines[k][0].strip())
            k += 1
        title, url = _title_url(" ".join(rest))
        found.append(Entry(m.group("key"), title, url))
    return kept, found


def _sections(lines: list[RawLine]) -> tuple[list[RawLine], list[Entry]]:
    """The lines without their trailing sources sections, and the sources they list, in order."""
    groups: list[list[Entry]] = []
    end = len(lines)
    while True:
        end = _trim_end(lines, end)
        found = _last_section(lines, end)
        if found is None:
            break
        end, entries = found
        groups.insert(0, entries)
    return lines[:end], [e for group in groups for e in group]


def _trim_end(lines: list[RawLine], end: int) -> int:
    while end > 0 and not lines[end - 1][1] and (not lines[end - 1][0].strip() or _BREAK.match(lines[end - 1][0])):
        end -= 1
    return end


def _last_section(lines: list[RawLine], end: int) -> tuple[int, list[Entry]] | None:
    """(where it starts, its sources) of the sources section that ends the text at ``end``, or None."""
    for k in range(end - 1, -1, -1):
        line, code = lines[k]
        if code:
            break
        heading = _heading(lines, k, end)
        if heading is None:
            continue
        name, rest, span, strong = heading
        if _names_sources(name, MAX_INLINE_NAME_WORDS if rest else MAX_NAME_WORDS):
            entries = _entries(lines[k + span:end], rest, headed=True)
            return (k, entries) if entries and any(k > 0 and lines[j][0].strip() for j in range(k)) else None
        if strong:  # a heading of the body: what follows it is its own
            break
    return _headless(lines, end)


def _heading(lines: list[RawLine], k: int, end: int) -> tuple[str, str, int, bool] | None:
    """(its text, text after its colon, lines it takes, whether it is a real heading) of a
    heading-like line at ``k``: ATX, setext, a bold line, or (for a sources heading only) a line
    with a colon; None for anything else."""
    line = lines[k][0]
    if _LIST.match(line) or _LABEL.match(line):
        return None
    atx = _ATX.match(line)
    if atx:
        return _unbold(atx.group("text") or ""), "", 1, True
    if k + 1 < end and _setext(lines, k):
        return line.strip(), "", 2, True
    bold = _BOLD_LINE.match(line)
    if bold and len(bold.group("text").split()) <= MAX_BOLD_HEADING_WORDS:
        return bold.group("text").strip().rstrip(":"), "", 1, True
    colon = _COLON_LINE.match(line)
    if colon:
        return colon.group("text").strip(), colon.group("rest").strip(), 1, False
    return None


def _names_sources(name: str, words: int) -> bool:
    return bool(_SOURCE_NAME.search(name)) and len(name.split()) <= words


def _entries(section: list[RawLine], rest: str, *, headed: bool) -> list[Entry] | None:
    """The sources of a section's lines (and of ``rest``, what follows "Sources:" on its line),
    or None when one of them does not look like a source (see the module docstring)."""
    texts = _inline_entries(rest) if rest else []
    if texts is None:
        return None
    indent = 0
    groups: list[list[str]] = []
    for line, code in section:
        if code:
            return None
        if not line.strip():
            continue
        lead = len(line) - len(line.lstrip())
        follows = groups and (lead > indent or (_url_only(line) and not _has_url(" ".join(groups[-1]))))
        if follows:
            groups[-1].append(line.strip())
        else:
            groups.append([line])
            indent = lead
    texts += [" ".join(g) for g in groups]
    entries = [_entry(t, headed=headed) for t in texts]
    if not entries or any(e is None for e in entries):
        return None
    if not any(e.key for e in entries):  # a list with no numbers is numbered as it stands
        entries = [replace(e, key=str(n)) for n, e in enumerate(entries, start=1)]
    return entries


def _inline_entries(rest: str) -> list[str] | None:
    """"Sources: A https://a, B https://b" on one line: each entry ends at its URL or link; None
    when something else follows the last one, or there is none."""
    found = list(_links(rest))
    if not found:
        return None
    parts, at = [], 0
    for _, stop in found:
        parts.append(rest[at:stop].strip(" ,;|"))
        at = stop
    if rest[at:].strip(" ,;|.)"):
        return None
    return parts


def _links(text: str) -> Iterable[tuple[int, int]]:
    """Where the Markdown links and bare URLs of ``text`` are, in order."""
    spans = [m.span() for m in _MD_LINK.finditer(text)]
    for m in _URL.finditer(text):
        if not any(a <= m.start() < b for a, b in spans):
            spans.append(m.span())
    return sorted(spans)


def _has_url(text: str) -> bool:
    return bool(_title_url(text)[1] or _MD_LINK.search(text))


def _url_only(line: str) -> bool:
    """A line that is only a URL or a Markdown link."""
    stripped = _LIST.sub("", line).strip()
    m = _MD_LINK.fullmatch(stripped) or _URL.fullmatch(stripped)
    return m is not None


def _entry(text: str, *, headed: bool) -> Entry | None:
    """A section's entry as a source: with its label's key when it has one. None when it does not
    look like a source: no URL and (``headed``) no list marker or label, or (not ``headed``) no
    label unless it is a lone URL or link."""
    key, rest, marked, labelled = "", text.strip(), False, False
    m = _LIST.match(rest)
    if m:
        key, rest, marked = m.group("n") or "", rest[m.end():], True
    m = _LABEL.match(rest)
    if m:
        key = next(g for g in (m.group("n"), m.group("fn"), m.group("wide"), m.group("word"), m.group("def")) if g)
        rest, marked, labelled = rest[m.end():], True, True
    title, url = _title_url(rest)
    has_link = bool(url) or bool(_MD_LINK.search(rest))
    if headed:
        ok = has_link or marked
    else:
        ok = has_link and (labelled or _url_only(rest))
    if not ok or not (title or url):
        return None
    return Entry(key, title, url)


def _title_url(text: str) -> tuple[str, str]:
    """The title and the http(s) URL an entry gives ("" for what it does not): a link's text, else
    what comes before the URL (what follows it when nothing does)."""
    link = _MD_LINK.search(text)
    if link:
        url = link.group("url")
        title = _clean_title(link.group("title"))
        if title.lower().rstrip("/") == url.lower().rstrip("/"):
            title = ""
        return title, url if re.match(r"https?://", url, re.I) else ""
    bare = _URL.search(text)
    if bare is None:
        return _clean_title(text), ""
    url = bare.group("url")
    while url and url[-1] in ".,;:!?'\"" or (url.endswith(")") and url.count("(") < url.count(")")):
        url = url[:-1]
    return _clean_title(text[:bare.start()]) or _clean_title(text[bare.end():]), url


def _clean_title(text: str) -> str:
    title = html.unescape(_ESCAPED.sub(r"\1", " ".join(text.split())))
    for _ in range(3):
        title = _TITLE_LEAD_IN.sub("", title.strip(_TITLE_ENDS)).strip(_TITLE_ENDS)
    return title


def _headless(lines: list[RawLine], end: int) -> tuple[int, list[Entry]] | None:
    """The text's last block as a sources section with no heading: each line a labelled entry with
    a URL, or a lone URL or link, and at least one labelled; None otherwise, and when nothing of
    the text comes before it."""
    start = end
    while start > 0 and lines[start - 1][0].strip() and not lines[start - 1][1]:
        start -= 1
    if start == end or not any(line.strip() for line, _ in lines[:start]):
        return None
    entries = [_entry(line, headed=False) for line, _ in lines[start:end]]
    if any(e is None for e in entries) or not any(_LABEL.match(_LIST.sub("", line, count=1))
                                                  for line, _ in lines[start:end]):
        return None
    return start, entries


def _echoed_labels(lines: list[RawLine]) -> tuple[list[RawLine], list[Entry]]:
    """The lines without echoed source labels and passage fences, and the sources the labels name."""
    kept: list[RawLine] = []
    found: list[Entry] = []
    for line, code in lines:
        if not code and _PASSAGE_FENCE.match(line):
            continue
        m = None if code else _LABEL.match(_LIST.sub("", line, count=1))
        if m and not m.group("fn") and not m.group("def"):
            rest = _LIST.sub("", line, count=1)[m.end():]
            title, url = _title_url(rest)
            ends = rest.rstrip(" \t.,;)>").endswith(url.rstrip(".,;)")) if url else False
            if ends and len(title.split()) <= MAX_LABEL_WORDS:
                key = m.group("n") or m.group("wide") or m.group("word")
                found.append(Entry(key, title, url))
                continue
        kept.append((line, code))
    return kept, found


def _body(lines: list[RawLine]) -> tuple[list[Line], list[Entry]]:
    """The body's lines with headings as ``####``, thematic breaks gone, marks read (a line of
    marks alone goes to the end of the line before it); and the sources titled marks name."""
    out: list[Line] = []
    titled: list[Entry] = []
    k = 0
    while k < len(lines):
        line, code = lines[k]
        k += 1
        if code:
            out.append(Line((line,), code=True))
            continue
        heading = _body_heading(lines, k - 1, out)
        if heading is not None:
            text, span = heading
            k += span - 1
            if text:
                pieces, _ = _marks(f"{HEADING} {text}", titled)
                out.append(Line(tuple(pieces)))
            continue
        if _BREAK.match(line):
            out.append(Line(("",)))
            continue
        pieces, only_marks = _marks(line, titled)
        if only_marks:
            last = next((x for x in reversed(out) if not x.code and x.text().strip()), None)
            if last is not None and last is out[-1]:
                out[-1] = Line((*last.pieces, *(Mark(p.keys) for p in pieces if isinstance(p, Mark))))
            continue
        out.append(Line(tuple(pieces)))
    return out, titled


def _body_heading(lines: list[RawLine], k: int, out: list[Line]) -> tuple[str, int] | None:
    """(its text, lines it takes) of a heading of the body at ``k``: ATX, setext, or a bold line
    standing alone after a blank line or a heading."""
    line = lines[k][0]
    atx = _ATX.match(line)
    if atx:
        return _unbold(atx.group("text") or ""), 1
    if _setext(lines, k):
        return line.strip(), 2
    bold = _BOLD_LINE.match(line)
    after_break = not out or not out[-1].text().strip() or out[-1].text().startswith(HEADING + " ")
    if bold and after_break and len(bold.group("text").split()) <= MAX_BOLD_HEADING_WORDS:
        return bold.group("text").strip(), 1
    return None


def _setext(lines: list[RawLine], k: int) -> bool:
    """Whether line ``k`` is a setext heading's text: a line of prose underlined with = or -."""
    line = lines[k][0]
    return (k + 1 < len(lines) and not lines[k + 1][1] and bool(_SETEXT.match(lines[k + 1][0])) and bool(line.strip())
            and not _BREAK.match(line) and not _LIST.match(line) and not line.lstrip().startswith((">", "|")))


def _unbold(text: str) -> str:
    text = text.strip()
    m = re.fullmatch(r"(\*\*|__)(.+?)\1", text)
    return m.group(2).strip() if m else text


def _marks(line: str, titled: list[Entry]) -> tuple[list[str | Mark], bool]:
    """The line as text and marks (outside inline code), and whether it holds marks and nothing
    else; a titled mark (``[Source 2: Title]``) adds its source to ``titled``."""
    pieces: list[str | Mark] = []
    at = 0
    for start, stop in _prose_spans(line):
        pieces.append(line[at:start])
        at = start
        for run_start, run_end, keys in _mark_runs(line, start, stop, titled):
            text = line[at:run_start]
            begins = not "".join(p for p in pieces if isinstance(p, str)).strip() and not text.strip()
            pieces.append(text.rstrip(" \t") if not begins else text)
            pieces.append(Mark(keys, line_start=begins))
            at = run_end
            if begins:
                while at < len(line) and line[at] in " \t":
                    at += 1
        pieces.append(line[at:stop])
        at = stop
    pieces.append(line[at:])
    pieces = [p for p in pieces if p != ""]
    has_marks = any(isinstance(p, Mark) for p in pieces)
    only = has_marks and not "".join(p for p in pieces if isinstance(p, str)).strip()
    return pieces, only


def _prose_spans(line: str) -> list[tuple[int, int]]:
    """The parts of ``line`` outside inline code."""
    spans, at = [], 0
    for m in _CODE_SPAN.finditer(line):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, len(line)))
    return spans


def _mark_runs(line: str, start: int, stop: int, titled: list[Entry]) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, keys) of each run of marks side by side in ``line[start:stop]``."""
    runs: list[tuple[int, int, tuple[str, ...]]] = []
    for m in _MARK.finditer(line, start, stop):
        keys = _keys(m)
        if m.group("title") and m.group("keys"):
            title, url = _title_url(m.group("title"))
            titled += [Entry(key, title, url) for key in keys if title or url]
        if runs and not _BETWEEN_MARKS.fullmatch(line, runs[-1][1], m.start()):
            runs.append((m.start(), m.end(), keys))
        elif runs:
            runs[-1] = (runs[-1][0], m.end(), runs[-1][2] + keys)
        else:
            runs.append((m.start(), m.end(), keys))
    return runs


def _keys(m: re.Match) -> tuple[str, ...]:
    if m.group("fn"):
        return ("^" + m.group("fn"),)
    inside = m.group("keys") or m.group("wide") or m.group("sup") or ""
    keys: list[str] = []
    for item in re.split(r"\s*[,;]\s*", inside.strip()):
        ends = [int(x) for x in re.findall(r"\d+", item)]
        if len(ends) == 2 and 0 <= ends[1] - ends[0] <= RANGE_MAX:
            keys += [str(n) for n in range(ends[0], ends[1] + 1)]
        elif ends:
            keys.append(str(ends[0]))
    return tuple(dict.fromkeys(keys))


def _join(lines: Iterable[tuple[str, bool]]) -> str:
    """Lines (each with whether it is code) as one text: outside code at most one blank line in a
    row, none at either end."""
    out: list[str] = []
    for line, code in lines:
        if not code and not line.strip() and (not out or not out[-1].strip()):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def _escape(text: str) -> str:
    """A title on one line, Markdown's punctuation backslash-escaped (HTML is left to the caller's
    sanitiser: ``ui.render_arena.safe_markdown``)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))
