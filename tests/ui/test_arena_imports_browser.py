"""Other systems' reports shown alike, as Chromium renders them (issue 37, item 5): two long reports
imported with `outputs import`, a Chinese one ([1][2] marks, opening chatter, then "参考文献：" and
"[1] 标题 https://..." lines) and an English one (author-date citations, a footnote, a printed
"References" list), are shown in a `plain` campaign with no citation mark, URL or reference heading
on either side, and in the open arena (`sources`) each ending with one numbered list. The stored
outputs are left as the systems wrote them."""

from __future__ import annotations

import re

import pytest

import app as app_module
from annotation.accounts import Accounts
from common.settings import Settings
from tests.annotation.test_cli import run, write_jsonl
from tests.ui.browser import chromium, chromium_missing, serve
from tests.ui.test_accounts_browser import FAST, log_in

TIMEOUT = 20_000  # ms
SCREENSHOT = "/tmp/arena_imports_{}.png"
pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(chromium_missing()), reason=chromium_missing())]

TASK = "How did the printing press change Europe?"
CHINESE = """我将为您撰写一份关于印刷术如何改变欧洲的研究报告。

# 印刷术与欧洲

十五世纪中叶，古登堡的活字印刷术让书籍的价格大幅下降[1][2]。宗教改革借助印刷品在几年之内传遍了德意志各地[2]。

## 影响

识字率随之上升，知识不再只属于教士和贵族[1]。

参考文献：
[1] 约翰内斯·古腾堡 - 维基百科 https://zh.wikipedia.org/wiki/约翰内斯·古腾堡
[2] 印刷术与宗教改革 https://example.cn/reformation
"""
ENGLISH = """## The printing press in Europe

Printing spread quickly across the cities of Europe after 1450 (Pettegree, 2010). Books became cheaper, \
and more people learned to read (Eisenstein 1979; Pettegree 2010).[^1]

Historians still debate how far print changed the way people thought (Johns et al., 1998, p. 12).

[^1]: Literacy estimates, https://example.org/literacy

References

Eisenstein, E. L. (1979). The Printing Press as an Agent of Change. Cambridge University Press.
Johns, A., Smith, B., & Lee, C. (1998). The Nature of the Book. University of Chicago Press.
Pettegree, A. (2010). The Book in the Renaissance. Yale University Press.
"""
PROSE = {"zh": "古登堡的活字印刷术让书籍的价格大幅下降", "en": "Printing spread quickly across the cities of Europe"}
#: What neither side may show in `plain`: a citation mark of any style, a URL, a reference heading.
LEFTOVERS = re.compile(r"\[\d+\]|\[\^|【|[¹²³]|\(\w+(?: et al\.)?,? \d{4}|https?://|\bReferences\b|参考文献|"
                       r"\bSources\b|  | [.,。，]|\(\s*\)")

PANE_JS = """id => {
  const prose = document.querySelector('#' + id + ' .prose');
  const lists = [...prose.querySelectorAll('ol')];
  const last = lists[lists.length - 1];
  const before = last ? last.previousElementSibling : null;
  return {text: prose.innerText, lists: lists.length, lastIsList: !!last && !last.nextElementSibling,
          items: last ? last.querySelectorAll('li').length : 0,
          heading: before ? before.innerText.trim() : '', links: prose.querySelectorAll('a').length};
}"""


def first_pair(browser, url: str, name: str):
    """``name`` logged in (at 1366x768), their first pair on screen."""
    page = log_in(browser, url, name, "correct-horse")
    for pane in ("#rat-pane-a", "#rat-pane-b"):
        page.locator(pane).get_by_text(re.compile("Printing spread|古登堡")).first.wait_for(timeout=TIMEOUT)
    return page


def panes(page) -> list[dict]:
    return [page.evaluate(PANE_JS, pane) for pane in ("rat-pane-a", "rat-pane-b")]


def test_imported_reports_are_shown_alike_in_plain_and_with_sources(tmp_path):
    app = app_module.build(Settings(db_path=tmp_path / "imports.db", arena_only=True))
    rows = [{"task": TASK, "method": "deep-zh", "text": CHINESE, "task_set": "reports"},
            {"task": TASK, "method": "deep-en", "text": ENGLISH, "task_set": "reports"}]
    assert run(app, "outputs", "import", write_jsonl(tmp_path / "reports.jsonl", rows)) == 0
    app.arena.campaigns.create("plainly", task_set="reports", style="plain", voters=["ana"], by="lee")
    accounts = Accounts(app.store, hasher=FAST)
    for name in ("ana", "cy"):
        accounts.add(name, "correct-horse")
    with serve(app, accounts) as url, chromium() as browser:
        plain = first_pair(browser, url, "ana")  # in the plain campaign
        plain_panes = panes(plain)
        plain.screenshot(path=SCREENSHOT.format("plain"))
        sourced = first_pair(browser, url, "cy")  # in the open arena, shown with sources
        sourced_panes = panes(sourced)
        sourced.screenshot(path=SCREENSHOT.format("sources"))
    stored = dict(app.store.db.execute("select method, text from outputs").fetchall())
    app.store.close()

    assert stored == {"deep-zh": CHINESE, "deep-en": ENGLISH}, "the outputs are stored as the systems wrote them"
    texts = [p["text"] for p in plain_panes]
    assert sorted(PROSE[k] in t for t in texts for k in PROSE) == [False, False, True, True]
    for pane in plain_panes:
        assert not LEFTOVERS.search(pane["text"]), pane["text"]
        assert pane["lists"] == 0 and pane["links"] == 0, pane
    chinese = next(t for t in texts if PROSE["zh"] in t)
    assert chinese.startswith("我将为您撰写"), "opening chatter is shown as the system wrote it"
    assert "宗教改革借助印刷品在几年之内传遍了德意志各地。" in chinese
    english = next(t for t in texts if PROSE["en"] in t)
    assert "after 1450. Books became cheaper, and more people learned to read.\n" in english

    for pane in sourced_panes:
        assert pane["lastIsList"] and pane["heading"] == "Sources" and pane["lists"] == 1, pane
        assert pane["text"].count("Sources") == 1 and "References" not in pane["text"]
        assert "参考文献" not in pane["text"] and "(Pettegree, 2010)" not in pane["text"]
        marks = [int(n) for n in re.findall(r"\[(\d+)\]", pane["text"])]
        assert marks and [n for k, n in enumerate(marks) if n not in marks[:k]] == list(range(1, max(marks) + 1))
        assert pane["items"] == max(marks), "every listed source is cited"
    by_side = {("zh" if PROSE["zh"] in p["text"] else "en"): p for p in sourced_panes}
    assert by_side["zh"]["items"] == 2 and by_side["en"]["items"] == 4, by_side
