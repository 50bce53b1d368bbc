"""Chinese (and Japanese, Korean) articles leave the house intact (issue 37, item 6): the Markdown
and the .docx carry the text, its [n] marks and the sources' Chinese titles byte for byte, and the
.docx names an East Asian font and language so Word and LibreOffice draw the characters."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import zipfile

import docx
import pytest
from docx.oxml.ns import qn

from common.types import Source
from core.article.article import Article
from core.article.docx import EAST_ASIAN_FONTS, east_asian_language, to_docx
from core.article.markdown import to_markdown, to_text

TASK = "写一篇关于猫头鹰夜间捕猎的短文。"
PARAGRAPHS = ("猫头鹰主要在夜间活动，它们的听觉非常灵敏[1]。据《自然》杂志报道，仓鸮能在完全黑暗中捕捉老鼠[2]。",
              "猫头鹰的羽毛边缘柔软，因此飞行时几乎没有声音[1]。")
SOURCES = (Source(1, "https://zh.example/owl", "猫头鹰 — 维基百科，自由的百科全书", (1, 2)),
           Source(2, "https://nature.example/barn-owl", "《自然》：仓鸮的听觉定位", (1,)),
           Source(3, "https://read.example/only", "鸟类学入门（第二版）", (2,)),
           Source(4, "https://snippet.example/s", "夜行性鸟类", (2,), read=False, why="网页无法打开（403）"))
CITED = f"## 捕猎\n\n{PARAGRAPHS[0]}\n\n- 听觉：**极其灵敏**\n- 视觉：*适应弱光*\n1. 静静等待。\n\n{PARAGRAPHS[1]}"
STYLES_USED = ("Normal", "Heading1", "Heading2", "Heading3", "ListBullet", "ListNumber", "Hyperlink")
UNCITED = "; no sentence cites it"


def chinese(**kw) -> Article:
    values = dict(task=TASK, text=re.sub(r"\[\d\]", "", CITED), sources=SOURCES, cited=CITED)
    return Article(**{**values, **kw})


def parts(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {name: z.read(name).decode("utf-8") for name in z.namelist() if name.endswith(".xml")}


# -- Markdown ---------------------------------------------------------------------------------------
def test_markdown_keeps_the_chinese_text_marks_and_titles_byte_for_byte():
    md = to_markdown(chinese())
    assert md.startswith(f"# {TASK}\n\n## 捕猎\n\n{PARAGRAPHS[0]}\n\n"
                         "- 听觉：**极其灵敏**\n- 视觉：*适应弱光*\n1. 静静等待。\n\n"
                         f"{PARAGRAPHS[1]}\n\n## Sources\n\n")
    assert "1. [猫头鹰 — 维基百科，自由的百科全书](https://zh.example/owl) — used in steps 1, 2\n" in md
    assert "2. [《自然》：仓鸮的听觉定位](https://nature.example/barn-owl) — used in step 1\n" in md
    assert f"## Also read\n\n- [鸟类学入门（第二版）](https://read.example/only) — used in step 2{UNCITED}\n" in md
    assert (f"- [夜行性鸟类](https://snippet.example/s) — used in step 2{UNCITED}; "
            "the page was not read: 网页无法打开（403）\n") in md


def test_plain_text_keeps_the_chinese_text_and_marks():
    text = to_text(chinese())
    assert PARAGRAPHS[0] in text and PARAGRAPHS[1] in text
    assert "[2] 《自然》：仓鸮的听觉定位 — https://nature.example/barn-owl" in text


# -- DOCX: the text -----------------------------------------------------------------------------------
def test_docx_keeps_the_chinese_text_marks_and_titles_byte_for_byte():
    document = docx.Document(io.BytesIO(to_docx(chinese())))
    lines = [(p.style.name, p.text) for p in document.paragraphs]
    assert lines == [
        ("Heading 1", TASK),
        ("Heading 3", "捕猎"),  # "##" in the text: under the article's title
        ("Normal", PARAGRAPHS[0]),
        ("List Bullet", "听觉：极其灵敏"),
        ("List Bullet", "视觉：适应弱光"),
        ("List Number", "静静等待。"),
        ("Normal", PARAGRAPHS[1]),
        ("Heading 2", "Sources"),
        ("Normal", "[1] 猫头鹰 — 维基百科，自由的百科全书 — https://zh.example/owl — used in steps 1, 2"),
        ("Normal", "[2] 《自然》：仓鸮的听觉定位 — https://nature.example/barn-owl — used in step 1"),
        ("Heading 2", "Also read"),
        ("List Bullet", f"鸟类学入门（第二版） — https://read.example/only — used in step 2{UNCITED}"),
        ("Heading 2", "Search snippets only (page not read)"),
        ("List Bullet", f"夜行性鸟类 — https://snippet.example/s — used in step 2{UNCITED}; the page was not read: "
                        "网页无法打开（403）"),
    ]
    assert document.core_properties.title == TASK
    body = parts(to_docx(chinese()))["word/document.xml"]
    anchors = re.findall(r'<w:hyperlink w:anchor="(source-\d)">.*?<w:t>(\[\d\])</w:t>', body)
    assert anchors == [("source-1", "[1]"), ("source-2", "[2]"), ("source-1", "[1]")], "each mark links to its entry"
    assert "<w:t>。据《自然》杂志报道，仓鸮能在完全黑暗中捕捉老鼠</w:t>" in body, "stored as it is, not escaped"


def test_a_chinese_docx_is_reproducible():
    assert to_docx(chinese()) == to_docx(chinese())
    assert to_docx(chinese(), notes=True) == to_docx(chinese(), notes=True)


# -- DOCX: the East Asian font and language ------------------------------------------------------------
def test_docx_names_an_east_asian_font_in_its_defaults_and_every_style_it_uses():
    font = EAST_ASIAN_FONTS["zh-CN"][0]
    xml = parts(to_docx(chinese()))
    styles = xml["word/styles.xml"]
    defaults = re.search(r"<w:rPrDefault>.*?</w:rPrDefault>", styles).group(0)
    assert f'w:eastAsia="{font}"' in defaults and 'w:eastAsia="zh-CN"' in defaults
    assert "eastAsiaTheme" not in styles, "a theme font would win over the named one in Word"
    document = docx.Document(io.BytesIO(to_docx(chinese())))
    for style_id in STYLES_USED:
        (style,) = [s for s in document.styles if s.style_id == style_id]
        assert style.element.rPr.rFonts.get(qn("w:eastAsia")) == font, style_id
    assert re.search(r'<w:themeFontLang w:val="en-US" w:eastAsia="zh-CN"/>', xml["word/settings.xml"])
    entry = re.search(rf'<w:font w:name="{font}">(.*?)</w:font>', xml["word/fontTable.xml"], re.S).group(1)
    assert '<w:altName w:val="Microsoft YaHei"/>' in entry and '<w:charset w:val="86"/>' in entry


@pytest.mark.parametrize(("text", "language"), [
    ("フクロウは夜に狩りをします。", "ja-JP"),
    ("부엉이는 밤에 사냥을 한다.", "ko-KR"),
    ("猫头鹰在夜间捕猎。", "zh-CN"),
    ("Owls hunt at night.", ""),
])
def test_the_language_follows_the_script(text, language):
    assert east_asian_language(text) == language
    source = Source(1, "https://owls.example/", "Owls", (1,))
    xml = parts(to_docx(chinese(task=text, cited=f"{text} [1]", text=text, sources=(source,))))
    font = EAST_ASIAN_FONTS[language or "zh-CN"][0]
    assert f'w:eastAsia="{font}"' in xml["word/styles.xml"] and f'<w:font w:name="{font}">' in xml["word/fontTable.xml"]
    lang = re.search(r'<w:lang w:val="en-US" w:eastAsia="([^"]+)"', xml["word/styles.xml"]).group(1)
    assert lang == (language or "en-US"), "an article without CJK text keeps the template's language"


@pytest.mark.parametrize(("text", "language"), [
    ("东京大学的研究人员发现，仓鸮（メンフクロウ）的听觉极其灵敏，能在黑暗中准确定位猎物的位置。" * 3, "zh-CN"),
    ("東京大学の研究者は、メンフクロウの聴覚が非常に鋭いことを発見した。", "ja-JP"),
    ("서울대학교(大學校) 연구진은 부엉이의 청각을 연구했다.", "ko-KR"),
    ("宫崎骏的电影《千と千尋の神隠し》在中国上映后，很多观众专门去影院观看，票房表现非常出色。", "zh-CN"),
    ("メンフクロウ", "ja-JP"),
])
def test_a_mixed_text_takes_the_language_most_of_it_is_in(text, language):
    assert east_asian_language(text) == language


# -- LibreOffice, where it is installed --------------------------------------------------------------
@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_reads_the_chinese_text(tmp_path):
    path = tmp_path / "owls.docx"
    path.write_bytes(to_docx(chinese()))
    subprocess.run(["soffice", "--headless", f"-env:UserInstallation=file://{tmp_path}/profile", "--convert-to",
                    "txt:Text (encoded):UTF8", "--outdir", str(tmp_path), str(path)],
                   check=True, capture_output=True, timeout=120)
    text = (tmp_path / "owls.txt").read_text(encoding="utf-8-sig")
    assert TASK in text and PARAGRAPHS[0] in text and "《自然》：仓鸮的听觉定位" in text
