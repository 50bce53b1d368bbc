"""The article as a Word document (python-docx): the same content as ``core.article.markdown.to_markdown``
(title, unsourced warning, the text with its [n] marks, a line when its end was cut, the
sources in the readers' numbering with "Also read" and the snippet-only ones apart, the steps
never checked, only with ``notes``: run notes), for authors who finish their articles in a word
processor. Titles and the task are written as plain text runs: nothing in them is interpreted.

Links are real ones: each source's URL is a hyperlink to its page (an external relationship of the
document), and each [n] mark of the text a link to its source's entry (a bookmark ``source-n``).

The article's own Markdown is mapped to Word's structure where it is plain to see: "#" headings
become headings, "- " and "1. " items list paragraphs, **bold** and *italic* runs; anything else
is kept as the text it is.

Chinese, Japanese and Korean text shows in Word and LibreOffice (issue 37): Word draws CJK characters
in a run's East Asian font, which python-docx's template leaves to its theme, resolved for Japanese
(``themeFontLang`` ja-JP: MS Mincho, MS Gothic). So the document defaults and the styles name one
(:data:`EAST_ASIAN_FONTS`, with a font-table entry whose character set and ``altName`` let Word put
a font of the same script in its place where it is missing; LibreOffice asks fontconfig for one of
the language) and, where the article has CJK text, its language (:func:`east_asian_language`: zh-CN
for Han text, ja-JP with kana, ko-KR with Hangul).
"""

from __future__ import annotations

import io
import re
import zipfile
from functools import partial

from common.types import Source
from core.article.article import CUT_TEXT, Article
from core.article.blocks import BULLET as _BULLET
from core.article.blocks import CITE as _CITE  # a mark in the readers' numbering: "[3]" (``renumber_marks``)
from core.article.blocks import CONTROL as _CONTROL  # not allowed in XML: dropped
from core.article.blocks import EMPHASIS as _EMPHASIS
from core.article.blocks import HEADING as _HEADING
from core.article.blocks import NUMBERED as _NUMBERED
from core.article.blocks import WEB as _WEB  # a URL the document may link to

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
BOOKMARK = "source-{n}"  # the bookmark of source n's entry, where its marks link
LINK_STYLE = "Hyperlink"  # the character style of links (its id and name)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")  # hiragana, katakana (also half-width)
_HIRAGANA = re.compile(r"[\u3040-\u309f]")
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff]")
# language -> (the East Asian font the styles name, another font of that script for Word where the
# first is missing (the font table's altName), the font table's character set: GB2312, Shift JIS,
# Hangul); the Noto fonts come with Linux desktops (fonts-noto-cjk) and LibreOffice finds a
# font of the script by fontconfig where they are missing
EAST_ASIAN_FONTS = {"zh-CN": ("Noto Sans CJK SC", "Microsoft YaHei", "86"),
                    "ja-JP": ("Noto Sans CJK JP", "Yu Gothic", "80"),
                    "ko-KR": ("Noto Sans CJK KR", "Malgun Gothic", "81")}
DEFAULT_EAST_ASIAN = "zh-CN"  # the font named when the article has no CJK text (only names in it)
_STYLES_USED = ("Normal", *(f"Heading {k}" for k in range(1, 10)), "List Bullet", "List Number", LINK_STYLE)


def to_docx(article: Article, *, notes: bool = False) -> bytes:
    """The article as the bytes of a .docx file, with the content of ``to_markdown`` (in the
    readers' numbering: ``Article.renumbered``; the steps never checked only with ``notes``)."""
    from docx import Document  # python-docx: imported when a document is made

    article = article.renumbered()
    doc = Document()
    _add_link_style(doc)
    _east_asian(doc, east_asian_language(" ".join(
        [article.heading, article.body, *(f"{s.title} {s.why}" for s in article.sources)])))
    doc.core_properties.title = _clean(article.title or article.task)[:250]
    doc.add_heading(_clean(article.heading), level=1)
    if article.unsourced:
        warning = doc.add_paragraph()
        warning.add_run("Unsourced: ").bold = True
        warning.add_run(_clean(f"no part of this text was checked against retrieved text ({article.unsourced})."))
    _write_body(doc, article.body, {s.n for s in article.numbered if s.n > 0})
    if article.cut:
        note = doc.add_paragraph()
        note.add_run("Cut short: ").bold = True
        note.add_run(f"{CUT_TEXT}.")
    if article.numbered:
        doc.add_heading("Sources", level=2)
        for s in article.numbered:
            _entry(doc.add_paragraph(), article, s, "" if s.read else _unread(s))
    if article.also_read:
        doc.add_heading("Also read", level=2)
        for s in article.also_read:
            _entry(doc.add_paragraph(style="List Bullet"), article, s)
    if article.snippets_apart:
        doc.add_heading("Search snippets only (page not read)", level=2)
        for s in article.snippets_apart:
            _entry(doc.add_paragraph(style=None if s.n > 0 else "List Bullet"), article, s, _unread(s))
    if notes and article.unchecked_lines:
        doc.add_heading("Not checked against a source", level=2)
        for line in article.unchecked_lines:
            doc.add_paragraph(_clean(line), style="List Bullet")
    out = io.BytesIO()
    doc.save(out)
    return _reproducible(out.getvalue())


def _entry(paragraph, article: Article, s: Source, after: str = "") -> None:
    """One source's line in ``paragraph``: "[n] " when it has a number (and bookmark ``source-n``,
    where its marks link), its title, its URL (an http(s) one as a link to its page), the steps
    that used it and ``after``."""
    if s.n > 0:
        _bookmark(paragraph, s.n, f"[{s.n}]")
        paragraph.add_run(" ")
    paragraph.add_run(_clean(f"{s.title or s.url} — "))
    if _WEB.match(s.url):
        _hyperlink(paragraph, _clean(s.url), url=s.url)
    else:  # a local corpus file, or anything else: written, never a link
        paragraph.add_run(_clean(s.url))
    if article.used_in(s) + after:
        paragraph.add_run(_clean(article.used_in(s) + after))


def _hyperlink(paragraph, text: str, *, url: str = "", anchor: str = "") -> None:
    """A run of ``text`` in ``paragraph`` that links to ``url`` (an external relationship of the
    document part) or to the bookmark ``anchor``, styled as Word styles links."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    link = OxmlElement("w:hyperlink")
    if url:
        link.set(qn("r:id"), paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True))
    else:
        link.set(qn("w:anchor"), anchor)
    run = paragraph.add_run(text)
    run._r.style = LINK_STYLE  # the style's id, set as it is (``to_docx`` added the style)
    link.append(run._r)  # moved from the paragraph into the link
    paragraph._p.append(link)


def _add_link_style(document) -> None:
    """Word's "Hyperlink" character style (blue, underlined), added to ``document`` if missing."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.shared import RGBColor

    if LINK_STYLE not in [s.style_id for s in document.styles]:
        style = document.styles.add_style(LINK_STYLE, WD_STYLE_TYPE.CHARACTER)
        style.font.color.rgb, style.font.underline = RGBColor(0x05, 0x63, 0xC1), True


def east_asian_language(text: str) -> str:
    """The language of ``text``'s CJK characters, as Word names it: "ko-KR" when Hangul makes half
    of them or more; else "ja-JP" when kana make half or hiragana a tenth (Japanese prose writes
    its particles and endings in hiragana, which Chinese never uses: a katakana name or a Japanese
    title quoted in a Chinese text leaves it Chinese); else "zh-CN" (Han characters); "" for a
    text without any."""
    han, kana, hiragana, hangul = (len(p.findall(text)) for p in (_HAN, _KANA, _HIRAGANA, _HANGUL))
    total = han + kana + hangul
    if not total:
        return ""
    if hangul * 2 >= total:
        return "ko-KR"
    return "ja-JP" if kana * 2 >= total or hiragana * 10 >= total else "zh-CN"


def _east_asian(document, language: str) -> None:
    """Name the East Asian font of ``language`` (:data:`EAST_ASIAN_FONTS`; the default one for "")
    in ``document``'s defaults and styles, in place of the theme's (Word prefers a theme font where
    both are named), with its entry in the font table; and, for a ``language``, make it the East
    Asian language of the text and of the theme's fonts."""
    from docx.oxml.ns import qn

    font, alternative, charset = EAST_ASIAN_FONTS[language or DEFAULT_EAST_ASIAN]
    styles = document.styles.element
    run_defaults = styles.find(qn("w:docDefaults")).find(qn("w:rPrDefault")).find(qn("w:rPr"))
    for name in _STYLES_USED:  # each style the document uses names it, whatever it is based on
        if name in document.styles:
            document.styles[name].element.get_or_add_rPr().get_or_add_rFonts()
    for element in (run_defaults.find(qn("w:rFonts")), *styles.iter(qn("w:rFonts"))):
        element.attrib.pop(qn("w:eastAsiaTheme"), None)
        element.set(qn("w:eastAsia"), font)
    if language:
        for lang in (run_defaults.find(qn("w:lang")), *styles.iter(qn("w:lang"))):
            if lang is not None:
                lang.set(qn("w:eastAsia"), language)
        theme_language = document.settings.element.find(qn("w:themeFontLang"))
        if theme_language is not None:
            theme_language.set(qn("w:eastAsia"), language)
    _add_font(document, font, alternative, charset)


def _add_font(document, name: str, alternative: str, charset: str) -> None:
    """An entry for the font ``name`` in ``document``'s font table (word/fontTable.xml, a part
    python-docx keeps as bytes): the font a reader's Word or LibreOffice may put in its place
    (``alternative``, else one of the same ``charset``)."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from lxml import etree

    part = document.part.part_related_by(RELATIONSHIP_TYPE.FONT_TABLE)
    table = etree.fromstring(part.blob)
    w = table.nsmap["w"]
    if any(f.get(f"{{{w}}}name") == name for f in table.iterfind(f"{{{w}}}font")):
        return
    entry = etree.SubElement(table, f"{{{w}}}font", {f"{{{w}}}name": name})
    for tag, value in (("altName", alternative), ("charset", charset), ("family", "swiss"), ("pitch", "variable")):
        etree.SubElement(entry, f"{{{w}}}{tag}", {f"{{{w}}}val": value})
    part._blob = etree.tostring(table, xml_declaration=True, encoding="UTF-8", standalone=True)


def _bookmark(paragraph, n: int, text: str) -> None:
    """A run of ``text`` in ``paragraph`` marked as bookmark ``source-n``."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    start, end = OxmlElement("w:bookmarkStart"), OxmlElement("w:bookmarkEnd")
    start.set(qn("w:id"), str(n))
    start.set(qn("w:name"), BOOKMARK.format(n=n))
    end.set(qn("w:id"), str(n))
    paragraph._p.append(start)
    paragraph.add_run(text)
    paragraph._p.append(end)


def _unread(s: Source) -> str:
    return f"; the page was not read: {s.why or 'unknown reason'}"


def _reproducible(docx: bytes) -> bytes:
    """The same .docx with every zip entry stamped ZIP_EPOCH instead of the time it was saved, so
    one article always gives the same bytes (two exports of a run compare equal)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            stamped = zipfile.ZipInfo(entry.filename, date_time=ZIP_EPOCH)
            stamped.compress_type, stamped.external_attr = entry.compress_type, entry.external_attr
            target.writestr(stamped, source.read(entry))
    return out.getvalue()


def _write_body(doc, text: str, numbers: set[int]) -> None:
    """``text`` as paragraphs, headings and list items of ``doc``; its marks of ``numbers`` link
    to their source's entry."""
    add = partial(_add_runs, numbers=numbers)
    for block in re.split(r"\n[ \t]*\n", text):
        paragraph: list[str] = []  # lines of running text, joined into one paragraph
        for line in (line for line in block.splitlines() if line.strip()):
            heading, bullet, numbered = _HEADING.match(line), _BULLET.match(line), _NUMBERED.match(line)
            if (heading or bullet or numbered) and paragraph:
                add(doc.add_paragraph(), " ".join(paragraph))
                paragraph = []
            if heading:
                doc.add_heading(_clean(heading.group(2)), level=min(len(heading.group(1)) + 1, 9))
            elif bullet:
                add(doc.add_paragraph(style="List Bullet"), bullet.group(1))
            elif numbered:
                add(doc.add_paragraph(style="List Number"), numbered.group(1))
            else:
                paragraph.append(line.strip())
        if paragraph:
            add(doc.add_paragraph(), " ".join(paragraph))


def _add_runs(paragraph, text: str, numbers: set[int] = frozenset()) -> None:
    """``text`` as runs of ``paragraph``: **bold** and *italic* spans as such, the rest plain,
    with each [n] mark of ``numbers`` as a link to its source's entry."""
    for part in _EMPHASIS.split(text):
        if not part:
            continue
        if (part.startswith("**") and part.endswith("**")) or (part.startswith("__") and part.endswith("__")):
            paragraph.add_run(_clean(part[2:-2])).bold = True
        elif part.startswith("*") and part.endswith("*") and len(part) > 2:
            paragraph.add_run(_clean(part[1:-1])).italic = True
        else:
            _add_marked(paragraph, _clean(part), numbers)


def _add_marked(paragraph, text: str, numbers: set[int]) -> None:
    last = 0
    for m in _CITE.finditer(text):
        if int(m.group(1)) in numbers:
            if m.start() > last:
                paragraph.add_run(text[last:m.start()])
            _hyperlink(paragraph, m.group(0), anchor=BOOKMARK.format(n=int(m.group(1))))
            last = m.end()
    if last < len(text):
        paragraph.add_run(text[last:])


def _clean(text: str) -> str:
    return _CONTROL.sub("", str(text))
