"""The article as a PDF (fpdf2): the content of ``core.article.markdown.to_markdown`` (title,
unsourced warning, the text with its [n] marks, a line when its end was cut, the sources in the
readers' numbering with "Also read" and the snippet-only ones apart, the steps never checked only
with ``notes``), for readers who want a file that looks the same everywhere.

fpdf2 (py-pdf/fpdf2, LGPL, pure Python on fontTools and Pillow: installed by pip with no system
package) embeds TrueType/OpenType fonts as subsets, makes link annotations and internal links, and
is imported only when a PDF is made (nothing at the app's start).

Links are real ones: each source's http(s) URL is a link annotation to its page, and each [n] mark
of the text an internal link to its source's entry. Text is drawn as text (it can be searched,
selected and copied).

Fonts, embedded (a subset of the glyphs used). Latin, Greek and Cyrillic text is set in DejaVu
Sans, which matplotlib (one of the app's requirements) ships inside its wheel: wherever the app is
installed, it is. Chinese, Japanese and Korean text needs a CJK font, and none is on every system
nor worth a requirement: the CJK fonts on PyPI are 17-33 MB repackagings by single uploaders, to be
installed by every user for a button few press. So the system's own is used
(:func:`cjk_font`): the one fontconfig picks for the language (Linux: Debian's fonts-noto-cjk,
Fedora's google-noto-sans-cjk-fonts, WenQuanYi, ...), else a known file of macOS or Windows. An
article with a letter no font has is refused with ``PdfFontMissing``, whose message names the font
to install (and the Word and HTML exports, which use the reader's fonts): never a PDF of empty boxes.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import unicodedata
from datetime import UTC, datetime
from functools import cache
from itertools import groupby
from pathlib import Path

from common.errors import RatStudioError
from common.types import Source
from core.article.article import CUT_TEXT, Article
from core.article.blocks import (
    BULLET_ITEM,
    HEADING_BLOCK,
    NUMBERED_ITEM,
    WEB,
    Run,
    blocks,
    clean,
    language_of,
    linked_numbers,
    runs,
)
from core.article.docx import east_asian_language

BODY, CJK = "body", "cjk"  # the fonts' names in the document
MARGIN = 20.0  # mm, each side
SIZE = 11.0  # pt, of the text
LINE = 5.8  # mm, a line of the text
HEADING_SIZES = {0: 18.0, 1: 15.0, 2: 13.0}  # pt: the title (0), "#" and "##" headings; deeper ones 12
SECTION_SIZE = 13.5  # pt: "Sources", "Also read", ...
LINK = (11, 92, 173)  # the colour of links
CREATED = datetime(1980, 1, 1, tzinfo=UTC)  # stamped, so one article always gives the same bytes
#: DejaVu Sans in matplotlib's wheel: regular, bold, oblique, bold oblique.
DEJAVU = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf", "I": "DejaVuSans-Oblique.ttf",
          "BI": "DejaVuSans-BoldOblique.ttf"}
#: language (as ``core.article.docx.east_asian_language`` names it) -> what fontconfig is asked for,
#: and the name a face of a font collection has for it (Noto Sans CJK SC, Source Han Sans JP, ...)
FONTCONFIG = {"zh-CN": ("zh-cn", ("SC", "GB", "Hans")), "ja-JP": ("ja", ("JP", "Japanese")),
              "ko-KR": ("ko", ("KR", "Korean"))}
DEFAULT_CJK = "zh-CN"
#: CJK fonts where fontconfig does not say (macOS, Windows) or finds none, by language, best first.
KNOWN_CJK = {
    "zh-CN": ("/System/Library/Fonts/PingFang.ttc", "/System/Library/Fonts/Hiragino Sans GB.ttc",
              "/System/Library/Fonts/STHeiti Light.ttc", "C:/Windows/Fonts/msyh.ttc", "C:/Windows/Fonts/simsun.ttc"),
    "ja-JP": ("/System/Library/Fonts/ヒラギノ角ゴシック W3.ttc", "C:/Windows/Fonts/YuGothR.ttc",
              "C:/Windows/Fonts/meiryo.ttc", "C:/Windows/Fonts/msgothic.ttc"),
    "ko-KR": ("/System/Library/Fonts/AppleSDGothicNeo.ttc", "C:/Windows/Fonts/malgun.ttf"),
}
KNOWN_ANY = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
             "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
             "/usr/share/fonts/google-noto-sans-cjk-fonts/NotoSansCJK-Regular.ttc",
             "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
             "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
             "/Library/Fonts/Arial Unicode.ttf")
FONT_HINT = ("install a font that has them, e.g. Noto Sans CJK for Chinese, Japanese and Korean (Debian, Ubuntu: "
             "apt install fonts-noto-cjk; Fedora: dnf install google-noto-sans-cjk-fonts), then export again; "
             "or export as Word or HTML, which use the reader's fonts")


class PdfFontMissing(RatStudioError):
    """The PDF cannot draw some of the article's letters: no font on this machine has them."""


def to_pdf(article: Article, *, notes: bool = False) -> bytes:
    """The article as the bytes of a PDF file, with the content of ``to_markdown`` (in the readers'
    numbering: ``Article.renumbered``; the steps never checked only with ``notes``). Raises
    PdfFontMissing (naming the font to install) when a letter of it is in no font this machine has,
    OSError when a font cannot be read."""
    from fpdf import FPDF  # imported when a PDF is made: nothing of it at the app's start

    article = article.renumbered()
    pdf = FPDF(format="A4", unit="mm")
    pdf.set_margins(MARGIN, MARGIN, MARGIN)
    pdf.set_auto_page_break(True, margin=MARGIN)
    pdf.set_creation_date(CREATED)
    pdf.set_creator("RAT Studio")
    pdf.set_title(" ".join(clean(article.heading).split())[:250])
    language = language_of(article)
    if language:
        pdf.set_lang(language)
    writer = _Writer(pdf, linked_numbers(article), _fonts(pdf, _everything(article, notes)))
    pdf.add_page()
    writer.line([Run(article.heading, bold=True)], size=HEADING_SIZES[0], gap=4)
    if article.unsourced:
        writer.line([Run("Unsourced: ", bold=True),
                     Run(f"no part of this text was checked against retrieved text ({article.unsourced}).")])
    writer.body(article.body)
    if article.cut:
        writer.line([Run("Cut short: ", bold=True), Run(f"{CUT_TEXT}.")])
    if article.numbered:
        writer.section("Sources")
        for s in article.numbered:
            writer.entry(article, s, "" if s.read else _unread(s))
    if article.also_read:
        writer.section("Also read")
        for s in article.also_read:
            writer.entry(article, s)
    if article.snippets_apart:
        writer.section("Search snippets only (page not read)")
        for s in article.snippets_apart:
            writer.entry(article, s, _unread(s))
    if notes and article.unchecked_lines:
        writer.section("Not checked against a source")
        for line in article.unchecked_lines:
            writer.line([Run(line)], indent=7, marker="•", gap=1.2)
    return bytes(pdf.output())


class _Writer:
    """Lays out the article's parts on ``pdf``; ``numbers``: the sources whose [n] marks link to their
    entry (an internal link each, set where the entry is drawn); ``drawn``: the characters its fonts have."""

    def __init__(self, pdf, numbers: set[int], drawn: set[int]) -> None:
        self.pdf, self.drawn, self.numbers = pdf, drawn, numbers
        self.links: dict[int, int] = {}  # source -> its internal link, made at its first mark

    def link(self, n: int) -> int:
        """The internal link to source ``n``'s entry (made where the first mark is: fpdf2 wants a
        page for it at once; :meth:`entry` moves it to the entry)."""
        if n not in self.links:
            self.links[n] = self.pdf.add_link(page=self.pdf.page)
        return self.links[n]

    def line(self, pieces: list[Run], *, size: float = SIZE, indent: float = 0.0, marker: str = "",
             gap: float = 2.2, link_urls: dict[int, str] | None = None) -> None:
        """One paragraph of ``pieces`` (runs: bold, italic, a [n] mark linking to its entry), its
        lines wrapped at the right margin and starting ``indent`` mm in, ``marker`` (a bullet, a
        number) hanging in the indent before it; ``link_urls``: index of a piece -> the URL it links to."""
        pdf, height = self.pdf, size * LINE / SIZE
        pdf.set_left_margin(MARGIN + indent)
        if marker:  # right-aligned in the indent
            pdf.set_font(BODY, "", size)
            pdf.set_x(MARGIN + max(indent - 2.0 - pdf.get_string_width(marker), 0.0))
            self.write(height, marker, size=size)
        pdf.set_x(MARGIN + indent)
        for k, piece in enumerate(pieces):
            url = (link_urls or {}).get(k, "")
            link: str | int = url or (self.link(piece.source) if piece.source else "")
            self.write(height, piece.text, size=size, style=("B" if piece.bold else "") + ("I" if piece.italic else ""),
                       link=link)
        pdf.set_text_color(0, 0, 0)
        pdf.ln(height + gap)
        pdf.set_left_margin(MARGIN)

    def write(self, height: float, text: str, *, size: float, style: str = "", link: str | int = "") -> None:
        """``text`` from where the last ended, in ``style`` ("B", "I", "BI"), a link's colour for a ``link``."""
        pdf = self.pdf
        pdf.set_font(BODY, style, size)
        pdf.set_text_color(*(LINK if link else (0, 0, 0)))
        # CJK text may break between any two characters, other text between words: each its own way
        for wide, chars in groupby(_drawable(text, self.drawn), key=_cjk):
            piece = "".join(chars)
            first = piece.split(" ", 1)[0]
            if not wide and first and pdf.get_x() > pdf.l_margin + 0.1 \
                    and pdf.get_x() + pdf.get_string_width(first) > pdf.w - pdf.r_margin:
                pdf.ln(height)  # its first word does not fit the line: fpdf2 would split it
            # fpdf2 2.8.9 sets the font of a line that begins in a fallback font (CJK text) inside a
            # saved graphics state ("q ... Q") and then takes it for set on the page: the next text in
            # the same font would be drawn in none (invisible). Saying it is not set has it set again.
            pdf.current_font_is_set_on_page = False
            pdf.write(height, piece, link=link, wrapmode="CHAR" if wide else "WORD")

    def body(self, text: str) -> None:
        """The article's text: its headings, list items and paragraphs."""
        numbers, number, listed = self.numbers, 0, False
        for block in blocks(text):
            number = number + 1 if block.kind == NUMBERED_ITEM else 0
            pieces = runs(block.text, numbers)
            if listed and block.kind not in (BULLET_ITEM, NUMBERED_ITEM):
                self.pdf.ln(1.8)  # after a list, the space a paragraph has
            listed = block.kind in (BULLET_ITEM, NUMBERED_ITEM)
            if block.kind == HEADING_BLOCK:
                self.pdf.ln(1.5)
                self.line([Run(p.text, True, p.italic, p.source) for p in pieces],
                          size=HEADING_SIZES.get(block.level, 12.0), gap=2.5)
            elif block.kind == BULLET_ITEM:
                self.line(pieces, indent=7, marker="•", gap=1.2)
            elif block.kind == NUMBERED_ITEM:
                self.line(pieces, indent=7, marker=f"{number}.", gap=1.2)
            else:
                self.line(pieces, gap=3.0)

    def section(self, title: str) -> None:
        self.pdf.ln(3)
        self.line([Run(title, bold=True)], size=SECTION_SIZE, gap=2.5)

    def entry(self, article: Article, s: Source, after: str = "") -> None:
        """One source's entry: "[n]" when it has a number (where its marks link), its title, its URL
        (an http(s) one as a link to its page), the steps that used it and ``after``."""
        if s.n in self.numbers:
            self.pdf.set_link(self.link(s.n), y=self.pdf.get_y(), page=self.pdf.page)
        pieces = [Run(f"{' '.join((s.title or s.url).split())} — "), Run(s.url)]
        if article.used_in(s) + after:
            pieces.append(Run(article.used_in(s) + after))
        urls = {1: s.url} if WEB.match(s.url) else {}
        self.line(pieces, indent=12, marker=f"[{s.n}]" if s.n > 0 else "•", gap=1.8, link_urls=urls)


def _unread(s: Source) -> str:
    return f"; the page was not read: {s.why or 'unknown reason'}"


def _everything(article: Article, notes: bool) -> str:
    """Every text the PDF draws, for the fonts to be chosen and checked against."""
    sources = " ".join(f"{s.title} {s.url} {s.why} {article.used_in(s)}" for s in article.sources)
    lines = " ".join(article.unchecked_lines) if notes else ""
    return clean(f"{article.heading} {article.unsourced} {article.body} {sources} {lines} • — {CUT_TEXT}")


def _fonts(pdf, text: str) -> set[int]:
    """Add DejaVu Sans (and, where ``text`` has letters it lacks, the system's CJK font as its
    fallback) to ``pdf``; returns the characters they can draw. Raises PdfFontMissing for letters
    neither has."""
    folder = _dejavu_folder()
    for style, name in DEJAVU.items():
        pdf.add_font(BODY, style, str(folder / name))
    drawn = set(pdf.fonts[BODY].cmap)
    needed = {ch for ch in set(text) if (_letter(ch) or _cjk(ch)) and ord(ch) not in drawn}
    if not needed:
        return drawn
    found = cjk_font(east_asian_language(text) or DEFAULT_CJK)
    if found is not None:
        from fontTools.ttLib import TTLibError
        from fpdf.errors import FPDFException

        path, face = found
        try:
            pdf.add_font(CJK, "", str(path), collection_font_number=face)
        except (OSError, ValueError, KeyError, TypeError, TTLibError, FPDFException) as exc:
            raise PdfFontMissing(f"The PDF cannot use the CJK font {path} ({exc}): to export this article as "
                                 f"PDF, {FONT_HINT}.") from exc
        pdf.set_fallback_fonts([CJK], exact_match=False)  # bold and italic CJK: the regular face
        drawn |= set(pdf.fonts[CJK].cmap)
    missing = sorted(ch for ch in needed if ord(ch) not in drawn and _letter(ch))
    if missing:
        shown = ", ".join(f"{ch} (U+{ord(ch):04X})" for ch in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        font = f" ({found[0].name} lacks them)" if found is not None else " (no CJK font was found)"
        raise PdfFontMissing(f"The PDF cannot draw {shown}{more}: no font on this machine has them{font}. "
                             f"To export this article as PDF, {FONT_HINT}.")
    return drawn


def _dejavu_folder() -> Path:
    """matplotlib's folder of its TrueType fonts (found without importing matplotlib). Raises
    OSError when it is not there."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("matplotlib is not installed, and its DejaVu Sans is the PDF's font: "
                      "pip install -r requirements.txt")
    return Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts" / "ttf"


@cache
def cjk_font(language: str = DEFAULT_CJK) -> tuple[Path, int] | None:
    """A CJK font file on this machine for ``language`` ("zh-CN", "ja-JP", "ko-KR") and the face
    of it to use (a font collection holds several), or None when none is found: fontconfig's choice
    for the language where fontconfig is and picks a CJK font, else a known file of the system
    (:data:`KNOWN_CJK`, :data:`KNOWN_ANY`). Known once per process."""
    wanted, tags = FONTCONFIG.get(language, FONTCONFIG[DEFAULT_CJK])
    matched = _fontconfig(wanted)
    if matched is not None and _has_cjk(*matched):
        return matched
    for name in (*KNOWN_CJK.get(language, ()), *KNOWN_ANY, *(p for other in KNOWN_CJK.values() for p in other)):
        path = Path(name)
        if path.is_file():
            return path, _face(path, tags)
    return None


def _fontconfig(language: str) -> tuple[Path, int] | None:
    """The font file and face fontconfig picks for sans-serif text in ``language``, None where
    there is no fontconfig (or it does not answer)."""
    command = shutil.which("fc-match")
    if command is None:
        return None
    try:
        done = subprocess.run([command, "--format=%{file}\n%{index}", f"sans-serif:lang={language}"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines or not Path(lines[0]).is_file():
        return None
    face = int(lines[1]) if len(lines) > 1 and lines[1].strip().isdigit() else 0
    return Path(lines[0]), face


def _has_cjk(path: Path, face: int) -> bool:
    """Whether face ``face`` of font ``path`` has the commonest Han character (一, U+4E00)."""
    from fontTools.ttLib import TTFont, TTLibError

    try:
        with TTFont(str(path), fontNumber=face, lazy=True) as font:
            return 0x4E00 in (font.getBestCmap() or {})
    except (OSError, TTLibError, KeyError, ValueError):  # a file fontTools cannot read: no CJK font then
        return False


def _face(path: Path, tags: tuple[str, ...]) -> int:
    """The face of font collection ``path`` whose family name has one of ``tags`` ("SC", "JP"),
    else the first (0, also for a file of one font)."""
    if path.suffix.lower() not in (".ttc", ".otc"):
        return 0
    from fontTools.ttLib import TTCollection, TTLibError

    try:
        with TTCollection(str(path), lazy=True) as collection:
            for k, font in enumerate(collection.fonts):
                family = font["name"].getDebugName(1) or ""
                if any(tag in family.split() for tag in tags):
                    return k
    except (OSError, TTLibError, KeyError, ValueError):  # unreadable: its first face (fpdf2 then says why)
        return 0
    return 0


def _letter(ch: str) -> bool:
    """Whether ``ch`` must be drawn (a letter, a digit or a mark of one): what the PDF may not lose."""
    return unicodedata.category(ch)[0] in "LNM"


def _cjk(text: str) -> bool:
    """Whether ``text`` has CJK characters (lines of it may then break between any two of them)."""
    return any(unicodedata.east_asian_width(ch) in "WF" for ch in text)


def _drawable(text: str, drawn: set[int]) -> str:
    """``text`` without control characters, a symbol no font has (an emoji: ``_fonts`` refused any
    letter none has) written as "?" rather than an empty box."""
    return "".join(ch if ord(ch) in drawn or ch.isspace() else "?" for ch in clean(text))
