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
reply), thematic breaks go, and nothing else of the body is lost or changed: a citation leaves no
space before a stop and no empty parentheses, and what a system says of its own work at the top
("Let me search...") stays (``annotation.results.style`` counts it). The stored output is never changed:
this is applied when a pair is shown.

What is read, one rule each (code, fenced or inline, is left as it is):

- a citation mark is a bracket of source numbers, each number alone, in a range or after one word
  that names a source: ``[1]``, ``[1, 2]``, ``[2-4]``, ``[Source 3]``, ``[Source 3: Title]``, and
  the same in ``【1】`` or ``<sup>1</sup>``, or a footnote ``[^a]``; marks side by side are one
  citation (``[1][2]``). Not a link (``[1](...)``), and numbers 1-999 only (``[2020]`` is a year);
  marks alone in parentheses take them (``([1], [2])``);
- other systems' citations are marks too:

  - an author-date parenthetical, ``(Pettegree, 2010)``, ``(Smith et al., 2010, p. 4)``,
    ``(Smith 2010; Jones & Lee 2012)``, ``（张三，2010）``: it names the listed source whose entry
    begins with (else holds) the first author's name and holds the year. One author and year with
    no comma is a citation only when it names a listed source ("(Windows 2000)" is not); a year
    alone ``(2010)`` or ``(see Table 2)`` never is;
  - Unicode superscript numbers after a word of three letters at least or after punctuation
    (``text²``, ``text.¹⁵``, ``¹˒²``, ``¹⁻³``) that name a listed source's number (n, else ^n):
    "5 km²" and a number no source has stay;
  - a URL cited in the text: in parentheses that hold only links or URLs (``(https://...)``,
    ``([Title](https://...))``), or bare where it ends a sentence or clause (or URLs side by side
    there), or follows a sentence's end, with prose before it and no lead-in ("see", "at",
    "visit", "Website:"). It names the listed source with that URL, else its own source (titled
    by its URL);
- a definition is a line that starts ``[1]:`` or ``[^a]:`` (with its indented lines): a source;
- a sources section is what follows the last heading of the text when that heading names sources
  (SOURCE_NAMES, in many languages: Sources, References, Bibliography, Works cited, Further
  reading, Références, Quellen, Literaturverzeichnis, Fuentes, Fonti, Источники, 参考文献, 参考资料,
  出典, 참고 문헌, ...; "Sources: ..." on one line; a heading is ``#``, a bold line, a setext
  heading, a short line ending in ":" or "：", or a line of at most MAX_BARE_NAME_WORDS words
  alone after a blank line, numbered or not: "References", "5. Bibliography") and every entry
  under it looks like a source: one with a URL or a Markdown link, an item of a list (numbered,
  bulleted, ``[n]``), or a plain reference line (an author, a year as references give it, two
  sentence-like parts: "Pettegree, A. (2010). The Book in the Renaissance. Yale University
  Press."), of which there must then be MIN_PLAIN_REFERENCES at least; an entry's number is its
  key (a list with no numbers is numbered as it stands). Sections are taken off the end one at a
  time ("Sources", then "Also read"). With no heading, the text's last block is a section when
  each of its lines is a labelled entry with a URL (``[1] Title - https://...``) or a lone URL or
  link, one labelled at least. Anything else stays in the body: a "Sources" heading followed by
  prose (under "References" too), one that is not last, one lone plain line with no URL, bare
  URLs under no heading;
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

from core.article.citations import RANGE_MAX, mark_space  # "[2-5]" names 2..5: one rule for marks
from core.article.markdown import link_target
from core.text.fencing import FENCE_CLOSE, FENCE_OPEN
from core.text.segment import UNSPACED_SCRIPT

STYLES = (SOURCES, PLAIN) = ("sources", "plain")
HEADING = "####"  # every heading of an output, whatever its level
SOURCES_LINE = "**Sources**"
CITED = "@"  # a mark's key for the source an author-date citation or a cited URL names: "@" + its identity
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
_SENTENCE_END = re.compile(r"(?<=[^\s.!?;:,。！？；：，])[.!?;:,。！？；：，]+[\"'”’」』]?$")
#: marks present() has written at the end of a line so far (a bracketed 1-999 in the text is a mark, read)
_HOUSE_MARKS = re.compile(r"(?<=\S) ?(?:\[\d{1,3}\])+$|^(?:\[\d{1,3}\])+$")
_BETWEEN_MARKS = re.compile(r"[ \t]*[,;]?[ \t]*")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_DEFINITION = re.compile(rf"^\s{{0,3}}\[(?P<key>\^[^\]\s]{{1,40}}|{_NUM})\]:\s*(?P<rest>.*)$")
_ATX = re.compile(r"^\s{0,3}#{1,6}(?:[ \t]+(?P<text>.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^\s{0,3}(?:=+|-+)[ \t]*$")
_BREAK = re.compile(r"^\s{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_BOLD_LINE = re.compile(r"^\s{0,3}(\*\*|__)(?P<text>[^*_\s](?:(?!\1).)*?)\1[ \t]*[:：]?[ \t]*$")
_COLON_LINE = re.compile(r"^\s{0,3}(?:\*\*|__)?(?P<text>[^:：\[\]()\n*_#>`][^:：\[\]()\n`]*?)(?:\*\*|__)?"
                         r"[ \t]*[:：](?:\*\*|__)?[ \t]*(?P<rest>.*)$")
_LIST = re.compile(r"^\s*(?:[-*+•]|(?P<n>\d{1,3})[.)])\s+")
_LABEL = re.compile(rf"^\s*(?:\[(?:{_WORD}\s*)?(?P<n>{_NUM})\]|\[(?P<fn>\^[^\]\s]{{1,40}})\]:?"
                    rf"|【(?P<wide>{_NUM})[^】\n]*】|{_WORD}\s*(?P<word>{_NUM})\s*[:.)]|(?P<def>{_NUM})[:]\s)\s*", re.I)
#: What a sources section's heading is called, in the languages outputs come in (data, not shapes):
#: a heading names sources when it holds one of these as whole words or, in a script written with
#: no spaces (Chinese, Japanese), when it begins or ends with one.
SOURCE_NAMES = (
    # English
    "source", "sources", "reference", "references", "bibliography", "citation", "citations", "cited",
    "footnote", "footnotes", "link", "links", "reading", "read", "snippet", "snippets",
    # French
    "référence", "références", "bibliographie", "webographie",
    # German
    "quelle", "quellen", "quellenangaben", "quellenverzeichnis", "literatur", "literaturverzeichnis",
    "einzelnachweise", "weblinks",
    # Spanish, Italian, Portuguese
    "referencia", "referencias", "fuentes", "bibliografía", "bibliografia", "riferimenti", "fonti",
    "referência", "referências", "fontes",
    # Russian
    "источники", "литература", "список литературы", "ссылки",
    # Chinese
    "参考文献", "参考资料", "参考来源", "引用", "来源", "引用来源", "资料来源", "出处", "参考链接",
    # Japanese
    "出典", "参考資料", "引用文献",
    # Korean
    "참고 문헌", "참고문헌", "참고 자료", "참고자료", "출처",
)
_CJK_NAMES = tuple(n for n in SOURCE_NAMES if UNSPACED_SCRIPT.search(n))
_SOURCE_NAME = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(n).replace(r"\ ", r"\s+")
                                                    for n in sorted(set(SOURCE_NAMES) - set(_CJK_NAMES), key=len,
                                                                    reverse=True)) + r")(?!\w)", re.I)
MAX_UNSPACED_NAME_CHARS = 12  # a heading in Chinese or Japanese that names sources is this short
MAX_BARE_NAME_WORDS = 3  # a line with no mark-up or colon is a sources heading when it is this short
MIN_PLAIN_REFERENCES = 2  # a section of plain reference lines (no URL, no list marker) holds this many
MAX_REFERENCE_WORDS = 80  # a plain reference line is no longer
_NUMBERING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*[.)、]?|[IVXLC]{1,6}[.)]|[一二三四五六七八九十]{1,3}[、.．]"
                        r"|第[一二三四五六七八九十\d]{1,3}[章节部分]+)\s*")
_CAP = "A-ZÀ-ÖØ-ÞĀ-Ž"  # a capital letter (Latin)
_YEAR = r"(?:1[5-9]\d{2}|20\d{2})[a-z]?"
#: A plain reference line: it begins with an author ("Pettegree, A.", "World Health Organization.",
#: "Smith J,", "张三."), gives a year as references do ("(2010)", ", 2010." or at its end) and has at
#: least two sentence-like parts.
_REFERENCE_START = re.compile(rf"^(?:(?:[{_CAP}][^\W\d_]*(?:[-'’][^\W\d_]+)*\s+){{0,3}}[{_CAP}][^\W\d_]*"
                              rf"(?:[-'’][^\W\d_]+)*\.?(?:,|\s+et\s+al\b|\s*\(|\s+[{_CAP}]{{1,3}}\.?[,.]|\s*&)"
                              r"|[\u4e00-\u9fff]{2,4}(?:等)?[,，.．、])")
_REFERENCE_YEAR = re.compile(rf"\(\s*(?:{_YEAR}|n\.\s?d\.)[^)]{{0,20}}\)|(?<!\d){_YEAR}(?:\s*[.,;)，。]|\s*$)", re.I)
_PARTS = re.compile(r"[.?!．。](?:\s|$)")
_MD_LINK = re.compile(r"\[(?P<title>(?:\\.|[^\]\\])*)\]\(\s*<?(?P<url>[^)\s>]*)>?(?:\s+[\"'(][^)]*[\"')])?\s*\)")
_URL = re.compile(r"<?(?P<url>https?://[^\s<>\"]+)>?", re.I)
_PASSAGE_FENCE = re.compile(rf"^\s*(?:{re.escape(FENCE_OPEN)}|{re.escape(FENCE_CLOSE)})\s*$", re.I)
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>])")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()#!|~])")
_TITLE_ENDS = " \t-–—:|,;\"'“”‘’()[]<>*_"
_TITLE_LEAD_IN = re.compile(r"\s*(?:available\s+(?:at|from|online)|retrieved\s+(?:from|at)|accessed|url|link|at|from)"
                            r"\s*$", re.I)
_PRIVATE = re.compile("[\ue000-\uf8ff]")

# -- citations in other systems' styles ---------------------------------------------------------------
#: "(Pettegree, 2010)", "(Smith et al., 2010, p. 4)", "(Smith 2010; Jones & Lee 2012)", "（张三，2010）"
_NOT_AUTHOR = (r"(?!(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|"
               r"Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec|Spring|Summer|Autumn|Fall|Winter|Table|Figure|Fig|Chapter|"
               r"Section|Page|Part|Appendix|Since|In|From|Before|After|Until|By|Circa|Ca|About|Around|The|And|Or)\b)")
_NAME_WORD = rf"{_NOT_AUTHOR}[{_CAP}][^\W\d_]*(?:[-'’][^\W\d_]+)*"
_PARTICLE = r"(?:(?:van|von|de|der|den|del|della|da|di|du|la|le|al|el|dos|das)\s+)"
_AUTHOR = rf"(?:{_PARTICLE}{{0,2}}{_NAME_WORD}(?:\s+{_PARTICLE}{{0,2}}{_NAME_WORD}){{0,3}}|[\u4e00-\u9fff]{{2,4}})"
_AUTHORS = (rf"{_AUTHOR}(?:\s*,\s*{_AUTHOR})*(?:\s*,?\s*(?:&|and|und|et|y|e|和|与)\s*{_AUTHOR})?"
            r"(?P<etal>\s+et\s+al\.?|\s*等)?")
_DATE = rf"(?:{_YEAR}|n\.\s?d\.)"
_AUTHOR_ITEM = re.compile(rf"(?:(?i:see(?:\s+also)?|e\.g\.|cf\.|i\.e\.)[,:]?\s+)?(?P<who>{_AUTHORS})"
                          rf"(?P<comma>\s*[,，])?\s*(?P<year>{_DATE})(?:\s*[,，]\s*{_DATE})*"
                          r"(?:\s*[,:]\s*(?:pp?\.\s*)?\d+(?:\s*[-–]\s*\d+)?)?")
_ITEM_UNNAMED = re.sub(r"\(\?P<\w+>", "(?:", _AUTHOR_ITEM.pattern)
_AUTHOR_DATE = re.compile(rf"[(（]\s*{_ITEM_UNNAMED}(?:\s*[;；]\s*{_ITEM_UNNAMED})*\s*[)）]")
_FIRST_AUTHOR = re.compile(rf"^{_AUTHOR}")
#: "text²", "text.¹⁵", "text¹˒²", "text¹⁻³": after a word of three letters at least or punctuation
_SUP_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_SUPERSCRIPT = re.compile(r"(?:(?<=[^\W\d_]{3})|(?<=[.,;:!?)\]\"'”’。，；：！？]))(?<![⁰¹²³⁴⁵⁶⁷⁸⁹])"
                          r"[¹²³⁴⁵⁶⁷⁸⁹][⁰¹²³⁴⁵⁶⁷⁸⁹]{0,2}(?:[⁻˗,˒‐–-][¹²³⁴⁵⁶⁷⁸⁹][⁰¹²³⁴⁵⁶⁷⁸⁹]{0,2})*(?![A-Za-z0-9⁰¹²³⁴⁵⁶⁷⁸⁹])")
_SUP_TO_ASCII = str.maketrans(_SUP_DIGITS + "⁻˗˒‐–", "0123456789--,--")
#: a URL in running text: it ends at a space, a quote, a bracket or CJK punctuation (balanced
#: parentheses kept: ".../Owl_(bird)")
_BODY_URL = re.compile(r"<?https?://(?:[^\s<>\"'()\[\]（）【】「」『』《》，。；：！？、]|\([^\s()]*\))+>?", re.I)
_LINK_PATTERN = r"\[(?:\\.|[^\]\\\n])*\]\(\s*<?https?://[^)\s>]*>?(?:\s+\"[^\"]*\")?\s*\)"
#: "(https://...)", "([Title](https://...))", "(https://a, https://b)": parentheses that hold only links
_PAREN_LINKS = re.compile(rf"[(（]\s*(?:{_LINK_PATTERN}|{_BODY_URL.pattern})(?:\s*[,;，；]\s*(?:{_LINK_PATTERN}|"
                          rf"{_BODY_URL.pattern}))*\s*[)）]", re.I)
_LINK_OR_URL = re.compile(rf"{_LINK_PATTERN}|{_BODY_URL.pattern}", re.I)
#: what makes a URL part of the prose, not a citation: a lead-in word or a label just before it
_URL_LEAD_IN = re.compile(r"(?:\b(?:see|visit|at|from|via|on|in|to|here|under|website|site|page|url|link|available|"
                          r"and|or)|[:：—–|=]|见|参见|访问|详见|网址)\s*$", re.I)
_SENTENCE_BEFORE = re.compile(r"[.!?。！？]\s*$")


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
    """Citation marks side by side in the body: the keys they name, in order (a source's label,
    or CITED + its identity for an author-date citation or a cited URL). ``line_start``: the
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
    source has), then those the URLs its body cites name (used when no listed source has the URL)."""

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
        for e in (*self.sources, *self.labels):  # what an author-date citation or a cited URL names
            if e.identity:
                by_key.setdefault(CITED + e.identity, e)
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
        if mark.line_start:
            return before + "".join(f"[{n}]" for n in numbers) + " "
        end = _SENTENCE_END.search(before)  # "night.[^1]" is written "night [1]."
        head, tail = (before[:end.start()], end.group(0)) if end else (before, "")
        written = _HOUSE_MARKS.search(head)  # "read (Eisenstein 1979).[^1]": one run, "read [1][2]."
        if written:
            numbers = sorted({*numbers, *(int(n) for n in re.findall(r"\d+", written.group(0)))})
            head = head[:written.start()]
        marks = "".join(f"[{n}]" for n in numbers)
        space = mark_space(head)
        return head + space + marks + tail

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
    cites = _Cites(tuple(listed + defined))
    body, titled = _body(lines, cites)
    return Parsed(tuple(body), tuple(listed + defined), tuple(echoed + titled + cites.found))


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
            if entries and any(k > 0 and lines[j][0].strip() for j in range(k)):
                return k, entries
            if strong or _COLON_LINE.match(lines[k][0]):
                return None
            continue  # a short line of the body ("Read on"), not a heading
        if strong:  # a heading of the body: what follows it is its own
            break
    return _headless(lines, end)


def _heading(lines: list[RawLine], k: int, end: int) -> tuple[str, str, int, bool] | None:
    """(its text, text after its colon, lines it takes, whether it is a real heading) of a
    heading-like line at ``k``: ATX, setext, a bold line, or (for a sources heading only) a line
    with a colon or a short line alone (``_bare_heading``); None for anything else."""
    line = lines[k][0]
    if not (_LIST.match(line) or _LABEL.match(line)):
        atx = _ATX.match(line)
        if atx:
            return _unbold(atx.group("text") or ""), "", 1, True
        if k + 1 < end and _setext(lines, k):
            return line.strip(), "", 2, True
        bold = _BOLD_LINE.match(line)
        if bold and len(bold.group("text").split()) <= MAX_BOLD_HEADING_WORDS:
            return bold.group("text").strip().rstrip(":："), "", 1, True
        colon = _COLON_LINE.match(line)
        if colon:
            return colon.group("text").strip(), colon.group("rest").strip(), 1, False
    if _bare_heading(lines, k):
        return line.strip(), "", 1, False
    return None


def _names_sources(name: str, words: int) -> bool:
    """Whether a heading's text names sources (SOURCE_NAMES) and is at most ``words`` words long."""
    name = _NUMBERING.sub("", name.strip()).strip(" \t:：.。*_")
    if not name or len(name.split()) > words:
        return False
    if _SOURCE_NAME.search(name):
        return True
    return len(name) <= MAX_UNSPACED_NAME_CHARS and any(name.startswith(n) or name.endswith(n) for n in _CJK_NAMES)


def _bare_heading(lines: list[RawLine], k: int) -> bool:
    """Whether line ``k`` is a sources heading with no mark-up: a short line that names sources
    ("References", "5. Bibliography", "参考文献"), standing alone after a blank line."""
    line = lines[k][0]
    if k == 0 or lines[k - 1][0].strip() or line[:1].isspace() or _LABEL.match(line):
        return False
    return _names_sources(line, MAX_BARE_NAME_WORDS)


def _plain_reference(text: str) -> bool:
    """Whether ``text`` reads as a reference with no URL: it begins with an author, gives a year as
    references do and has two sentence-like parts at least ("Pettegree, A. (2010). The Book in the
    Renaissance. Yale University Press."; "张三. 标题[J]. 期刊, 2010, 12(3): 45-67.")."""
    text = text.strip()
    return (len(text.split()) <= MAX_REFERENCE_WORDS and bool(_REFERENCE_START.match(text))
            and bool(_REFERENCE_YEAR.search(text)) and len(_PARTS.findall(text)) >= 2)


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
    plain = [not (_LIST.match(t) or _LABEL.match(t.strip()) or _has_url(t)) for t in texts]
    if all(plain) and len(entries) < MIN_PLAIN_REFERENCES:  # one line under "References" may be a sentence
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
    look like a source: no URL and (``headed``) no list marker or label and not a plain reference
    (``_plain_reference``), or (not ``headed``) no label unless it is a lone URL or link."""
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
        ok = has_link or marked or _plain_reference(rest)
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


def _body(lines: list[RawLine], cites: _Cites | None = None) -> tuple[list[Line], list[Entry]]:
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
                pieces, _ = _marks(f"{HEADING} {text}", titled, cites)
                out.append(Line(tuple(pieces)))
            continue
        if _BREAK.match(line):
            out.append(Line(("",)))
            continue
        pieces, only_marks = _marks(line, titled, cites)
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


def _marks(line: str, titled: list[Entry], cites: _Cites | None = None) -> tuple[list[str | Mark], bool]:
    """The line as text and marks (outside inline code), and whether it holds marks and nothing
    else; a titled mark (``[Source 2: Title]``) adds its source to ``titled``; ``cites`` reads the
    other citation styles (author-date, superscript numbers, cited URLs)."""
    pieces: list[str | Mark] = []
    at = 0
    for start, stop in _prose_spans(line):
        pieces.append(line[at:start])
        at = start
        for run_start, run_end, keys in _mark_runs(line, start, stop, titled, cites):
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


def _mark_runs(line: str, start: int, stop: int, titled: list[Entry],
               cites: _Cites | None = None) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, keys) of each run of marks side by side in ``line[start:stop]``; a run alone in
    parentheses takes them ("([1], [2])")."""
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for m in _MARK.finditer(line, start, stop):
        keys = _keys(m)
        if m.group("title") and m.group("keys"):
            title, url = _title_url(m.group("title"))
            titled += [Entry(key, title, url) for key in keys if title or url]
        found.append((m.start(), m.end(), keys))
    if cites is not None:
        found += cites.read(line, start, stop)
    runs: list[tuple[int, int, tuple[str, ...]]] = []
    for a, b, keys in sorted(found, key=lambda f: (f[0], -f[1])):
        if runs and a < runs[-1][1]:
            continue  # inside a mark already read
        if runs and _BETWEEN_MARKS.fullmatch(line, runs[-1][1], a):
            runs[-1] = (runs[-1][0], b, runs[-1][2] + keys)
        else:
            runs.append((a, b, keys))
    out = []
    for a, b, keys in runs:
        opened = re.search(r"[(（][ \t]*$", line[start:a])
        closed = re.match(r"[ \t]*[)）]", line[b:stop])
        if opened and closed:
            a, b = start + opened.start(), b + closed.end()
        out.append((a, b, keys))
    return out


class _Cites:
    """Reads the citations of other systems' styles in the body, given the output's ``sources``:
    author-date parentheticals, superscript numbers and URLs cited in the text; ``found``: the
    sources the cited URLs name (each its own source unless the output lists it)."""

    def __init__(self, sources: tuple[Entry, ...]):
        self.sources = sources
        self.keys = {e.key for e in sources if e.key}
        self.found: list[Entry] = []

    def read(self, line: str, start: int, stop: int) -> list[tuple[int, int, tuple[str, ...]]]:
        """(start, end, keys) of each such citation in ``line[start:stop]``."""
        out = []
        for m in _AUTHOR_DATE.finditer(line, start, stop):
            keys = self.author_date(m.group(0))
            if keys is not None:
                out.append((m.start(), m.end(), keys))
        for m in _SUPERSCRIPT.finditer(line, start, stop):
            keys = self.superscript(m.group(0))
            if keys:
                out.append((m.start(), m.end(), keys))
        taken = [m.span() for m in _MD_LINK.finditer(line, start, stop)]
        links = list(taken)
        for m in _PAREN_LINKS.finditer(line, start, stop):
            if any(a <= m.start() < b for a, b in links):
                continue  # a link's own target
            keys = tuple(self.url(*_title_url(link.group(0))) for link in _LINK_OR_URL.finditer(m.group(0)))
            out.append((m.start(), m.end(), keys))
            taken.append(m.span())
        cited: list[tuple[int, int, tuple[str, ...]]] = []
        after_cited = None  # where the next URL cited begins: URLs side by side before it are cited too
        for m in reversed(list(_BODY_URL.finditer(line, start, stop))):
            if any(a <= m.start() < b for a, b in taken):
                continue
            text = m.group(0)
            if text.startswith("<") and text.endswith(">"):  # an autolink: all of it
                url, end = text[1:-1], m.end()
            else:  # a stop after the URL is the sentence's
                url = text.strip("<>").rstrip(".,;:!?'")
                end = m.start() + text.index(url) + len(url)
            beside = after_cited is not None and not line[end:after_cited].strip(" \t,;")
            if _cites_url(line[:m.start()], line[end:], beside):
                cited.insert(0, (m.start(), end, url))
                after_cited = m.start()
        out += [(a, b, (self.url("", url),)) for a, b, url in cited]
        return out

    def author_date(self, text: str) -> tuple[str, ...] | None:
        """The keys of the sources an author-date parenthetical names (those whose entry holds the
        author's name and the year); None when it is not a citation: one author and year with no
        comma, no "et al." and no listed source of theirs ("(Windows 2000)")."""
        items = [_AUTHOR_ITEM.match(part.strip()) for part in re.split(r"[;；]", text.strip("()（） \t"))]
        keys: list[str] = []
        certain = len(items) > 1
        for item in items:
            if item is None:
                continue
            certain = certain or bool(item.group("comma") or item.group("etal"))
            who = _FIRST_AUTHOR.match(item.group("who"))
            entry = self.by_author(who.group(0) if who else item.group("who"), item.group("year"))
            if entry is not None:
                keys.append(CITED + entry.identity)
        return tuple(keys) if keys or certain else None

    def by_author(self, author: str, year: str) -> Entry | None:
        """The listed source whose entry begins with (else holds) ``author`` and holds ``year``."""
        author, year = " ".join(author.removesuffix("等").split()).casefold(), year.casefold()
        held = [e for e in self.sources if author in (text := f"{e.title} {e.url}".casefold())
                and (year in text or year.rstrip("abcdefghij") in text)]
        starting = [e for e in held if e.title.casefold().startswith(author)]
        return (starting or held or [None])[0]

    def superscript(self, text: str) -> tuple[str, ...]:
        """The keys of the listed sources superscript numbers name ("¹⁻³": 1, 2, 3; a number n
        names the source keyed n, else ^n); none when it names no listed source."""
        keys = []
        for item in text.translate(_SUP_TO_ASCII).split(","):
            ends = [int(x) for x in item.split("-") if x]
            numbers = range(ends[0], ends[-1] + 1) if len(ends) == 2 and 0 <= ends[1] - ends[0] <= RANGE_MAX else ends
            for n in numbers:
                key = next((k for k in (str(n), f"^{n}") if k in self.keys), None)
                if key:
                    keys.append(key)
        return tuple(keys)

    def url(self, title: str, url: str) -> str:
        """The key of a URL cited in the body, its source found."""
        entry = Entry("", title, url)
        self.found.append(entry)
        return CITED + entry.identity


def _cites_url(before: str, after: str, beside: bool = False) -> bool:
    """Whether a bare URL between ``before`` and ``after`` (the rest of its line) is a citation:
    prose comes before it and it ends a sentence or clause (``beside``: a URL cited follows it),
    or follows one's end; not after a lead-in ("see", "at", "Website:")."""
    if not re.search(r"[^\W\d_]", _LIST.sub("", before, count=1)) or _URL_LEAD_IN.search(before):
        return False
    return bool(beside or re.match(r"[.,;!?。，；！？]*\s*$|[.,;!?。，；！？]+\s", after)
                or _SENTENCE_BEFORE.search(before))


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
