"""Any language (issue 37): a Chinese or Japanese task over a local corpus in its language, end to
end (the fake model over HTTP, the corpus's real SQLite FTS5 index, a real store), with a model
that drafts five steps and revises each by copying a sentence of a passage it was shown, with
the passage's label as its mark. The draft keeps its five steps, each step's search finds its
own document first, the prompts ask for the task's language, and every quoted sentence of the
article carries the [n] of the document it was copied from.

Below, the text handling the run relies on: words and sentences in any script
(``core.text.segment``), token estimates, the guards (step merging, query rules), the corpus's
search in Chinese and Japanese, and the language of a task (``core.text.language``)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

import app as app_module
from common.errors import ConfigError
from common.events import DraftReady, Final, SearchDone
from common.types import Page, Task
from core.article.citations import StepEvidence, cite
from core.authoring import Authoring
from core.retrieval.corpus import CorpusIndex
from core.retrieval.passages import rank_passages, split_passages
from core.text import language
from core.text.guards import guard_revision
from core.text.prompts import draft_steps, query_problem, step_query
from core.text.segment import first_words, sentences, spaced, unspaced, word_count, words
from core.text.talk import is_talk
from core.text.tokens import count_tokens, tokenize
from tests.conftest import make_settings
from tests.fakes.scripts import SentenceQuotingAuthor
from tests.helpers import collect

CORPUS = Path(__file__).parents[1] / "fakes" / "corpus_cjk"

ZH_TASK = Task("写一篇关于中国历史与文化的短文")
ZH_STEPS = [
    "长城是古代中国修建的军事防御工程。",
    "大熊猫生活在山区的竹林里，主要以竹子为食",  # no closing stop: a step for its words, not merged
    "丝绸之路连接了古代的东方和西方。",
    "中国人饮茶的历史已经有几千年。",
    "毕昇发明了活字印刷术。",
]
ZH_DOCS = ["zh_greatwall.md", "zh_panda.md", "zh_silkroad.md", "zh_tea.md", "zh_printing.md"]

JA_TASK = Task("日本の文化について短い記事を書いてください")
JA_STEPS = [
    "富士山は日本で一番高い山です。",
    "桜は春に咲く日本の花です。",
    "新幹線は日本の高速鉄道です。",
    "寿司は日本の伝統的な料理です。",
    "京都は昔の日本の都でした。",
]
JA_DOCS = ["ja_fuji.md", "ja_sakura.md", "ja_shinkansen.md", "ja_sushi.md", "ja_kyoto.md"]


@pytest.fixture
def corpus_app(tmp_path, llm, web):
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS, folder)  # both languages in one folder: each search must find its own
    settings = make_settings(tmp_path, llm, web)
    settings = dataclasses.replace(settings, search=dataclasses.replace(
        settings.search, providers=("corpus",), corpus_dir=folder))
    return app_module.build(settings)


def quoted_marks(article, quoted: dict[str, tuple[str, str]]) -> dict[str, set[str]]:
    """For each quoted sentence found in ``article``: the URLs of the entries its marks name."""
    entries = {s.n: s.url for s in article.numbered}
    found: dict[str, set[str]] = {}
    for sentence in sentences(article.cited or ""):
        marks = [int(n) for n in re.findall(r"\[(\d+)\]", sentence)]
        assert all(n in entries for n in marks), f"{sentence!r}: a mark without its entry"
        bare = re.sub(r"\s*\[\d+\]", "", sentence).strip().rstrip("。")
        for quote in quoted:
            if quote in bare:
                found[quote] = {entries[n] for n in marks}
    return found


@pytest.mark.parametrize("task, steps, docs, name", [(ZH_TASK, ZH_STEPS, ZH_DOCS, "Chinese"),
                                                     (JA_TASK, JA_STEPS, JA_DOCS, "Japanese")],
                         ids=["zh", "ja"])
async def test_a_task_in_its_language_over_a_corpus_in_it_is_drafted_searched_and_cited(
        corpus_app, llm, task, steps, docs, name):
    author = SentenceQuotingAuthor(steps)
    llm.reply(author)
    events = await collect(corpus_app.runner.start("rat-step", task))
    assert isinstance(events[-1], Final), events[-1]

    draft = next(e for e in events if isinstance(e, DraftReady))
    assert list(draft.steps) == steps, "the draft keeps its five steps"
    searches = {e.i: e for e in events if isinstance(e, SearchDone)}
    assert sorted(searches) == [1, 2, 3, 4, 5]
    for i, doc in enumerate(docs, start=1):
        assert searches[i].results, f"step {i}'s search ({searches[i].query!r}) found nothing"
        assert searches[i].results[0].url.endswith(doc), (i, searches[i].query, searches[i].results[0].url)
        assert "\u200b" not in searches[i].results[0].snippet + searches[i].results[0].title

    systems = llm.prompts(role="system")
    assert systems and all(f"Write in {name}" in s for s in systems), "every request asks for the task's language"

    article = Authoring(corpus_app.store).article(events[0].run_id, "model")
    assert len(author.quoted) == 5
    marks = quoted_marks(article, author.quoted)
    assert set(marks) == set(author.quoted), "every quoted sentence is in the article"
    for quote, (url, title) in author.quoted.items():
        assert marks[quote] == {url}, f"the sentence quoting {title!r} cites {marks[quote]}, not {url}"
    assert events[-1].supported >= 5


async def test_an_english_task_gets_no_language_message_and_a_set_language_is_asked_for(app, llm, tmp_path, web):
    from tests.fakes.scripts import RatAuthor, draft_steps

    llm.reply(RatAuthor(draft_steps(2)))
    await collect(app.runner.start("rat-step", Task("Write a short history of Python 3 and its ecosystem.")))
    assert llm.prompts(role="system") == [""] * len(llm.requests), "English prompts are as they were"

    settings = make_settings(tmp_path, llm, web, language="fr")
    french = app_module.build(settings)
    before = len(llm.requests)
    await collect(french.runner.start("rat-step", Task("Write a short history of Python 3 and its ecosystem.")))
    assert all("Write in French" in s for s in llm.prompts(role="system")[before:])

    with pytest.raises(ConfigError, match="--language"):
        await collect(app_module.build(make_settings(tmp_path, llm, web, language="xx")).runner.start(
            "rat-step", Task("Write about tea.")))


# -- words and sentences ----------------------------------------------------------------------------
def test_words_and_sentences_of_chinese_japanese_and_thai_are_found_by_icu():
    assert words("大熊猫主要以竹子为食。") == ["大熊猫", "主要", "以", "竹子", "为", "食"]
    assert words("富士山は日本で一番高い山です") == ["富士山", "は", "日本", "で", "一番", "高い", "山", "です"]
    assert words("ภาษาไทยเป็นภาษาที่สวยงาม") == ["ภาษา", "ไทย", "เป็น", "ภาษา", "ที่", "สวยงาม"]
    assert sentences("第一句。第二句！第三句？Fourth one. 「引用。」之后") == [
        "第一句。", "第二句！", "第三句？", "Fourth one. ", "「引用。」", "之后"]
    text = "长城很长。It is old. e.g. this stays. Dr. Smith came."
    assert "".join(sentences(text)) == text


def test_english_words_are_those_of_the_regex_alone():
    text = "Don't stop: Python 3.10's f-strings, naïve café_au_lait 42% (e.g. U.S.A.)"
    assert words(text) == re.findall(r"[^\W_]+", text)
    assert spaced(text) == text and word_count(text) == len(text.split())


def test_spaced_text_parts_words_invisibly_and_reads_back_as_it_was():
    text = "量子计算机利用量子叠加原理。GPT模型 and more"
    parted = spaced(text)
    assert parted != text and unspaced(parted) == text
    assert parted.replace("\u200b", " ").split()[:3] == ["量子", "计算", "机"]


def test_word_count_and_first_words_count_the_words_of_unspaced_scripts():
    assert word_count("量子计算的基本原理") == 5
    assert word_count("The quick brown fox") == 4
    assert first_words("量子计算的基本原理和应用前景", 3) == "量子计算的"
    assert first_words("one two three four", 2) == "one two"


def test_token_estimates_count_chinese_characters_as_about_one_token_each():
    assert count_tokens("word " * 100) == 125  # English as before: a quarter of the characters
    assert count_tokens("量子计算的基本原理") == 9
    assert count_tokens("Квантовый") == 6  # 18 bytes of Cyrillic, a third of a token each


def test_tokenize_finds_shared_words_between_a_chinese_sentence_and_its_passage():
    sentence = tokenize("大熊猫每天要花十几个小时进食")
    passage = set(tokenize("大熊猫是中国特有的哺乳动物。大熊猫每天要花十几个小时进食，它们的食物几乎全部是竹子。"))
    assert len(sentence) >= 5 and set(sentence) <= passage


# -- the guards and queries ---------------------------------------------------------------------------
def test_short_chinese_steps_are_steps_and_a_chinese_heading_is_still_merged():
    assert draft_steps("\n\n".join(ZH_STEPS)) == ZH_STEPS
    assert draft_steps("\n\n".join(JA_STEPS)) == JA_STEPS
    heading_first = draft_steps("### 引言\n\n长城是古代中国修建的军事防御工程。")
    assert heading_first == ["### 引言\n长城是古代中国修建的军事防御工程。"], "a heading alone is no step"


GREAT_WALL = "长城是古代中国修建的军事防御工程，东起山海关，西至嘉峪关。"


def test_a_chinese_revision_is_used_and_chinese_talk_and_preambles_are_not():
    added = GREAT_WALL + "它在一九八七年被列入世界文化遗产。"
    assert guard_revision(GREAT_WALL, "好的，以下是修改后的段落：\n\n" + added).text == added
    assert guard_revision(GREAT_WALL, "はい、" + added).text == added
    talk = guard_revision(GREAT_WALL, "我已经按照您的要求修改了段落。")
    assert talk.text == GREAT_WALL and "talks about the task" in talk.problem
    assert is_talk("我已经修改了段落，使其更加简洁。") and not is_talk(GREAT_WALL)
    assert is_talk("文章を修正しました。") and not is_talk(JA_STEPS[0])
    short = guard_revision(GREAT_WALL, "长城。")
    assert short.text == GREAT_WALL and "keeps" in short.problem, "the keep share counts Chinese characters"
    # sentences side by side with no space between them stay so (no space is added where none was)
    assert guard_revision(GREAT_WALL, added).text == added


def test_query_rules_count_chinese_words():
    long_query = "长城" * 40
    assert "words long" in query_problem(long_query, question="长城的历史", content="")
    assert query_problem("长城的历史和修建", question="写一篇关于长城的文章", content="") == ""
    assert step_query("## 长城是古代中国修建的军事防御工程，它从东向西延伸了几千公里，经过许多省份和城市", words=5) \
        == "长城是古代中国修建"


# -- passages and citations ----------------------------------------------------------------------------
def test_a_long_chinese_paragraph_is_cut_at_its_sentence_ends():
    text = (CORPUS / "zh_panda.md").read_text(encoding="utf-8") * 3
    passages = split_passages(Page(url="file:///panda.md", status="ok", title="大熊猫", text=text), size_tokens=60)
    assert len(passages) > 2 and all(p.tokens <= 60 for p in passages)
    assert all(p.text.rstrip().endswith(("。", "猫")) for p in passages), [p.text[-5:] for p in passages]
    ranked = rank_passages("大熊猫 竹子", passages)
    assert "竹子" in ranked[0].text and ranked[0].score > 0


def test_a_chinese_sentence_copied_from_a_passage_gets_its_mark_and_one_not_copied_none():
    text = (CORPUS / "zh_tea.md").read_text(encoding="utf-8")
    page = Page(url="file:///tea.md", status="ok", title="茶文化", text=text)
    passages = split_passages(page)
    text = "唐代陆羽写成了世界上第一部关于茶的专著《茶经》。火星上有很多高山和峡谷。"
    cited = cite(text, [StepEvidence(1, text, passages)], {page.url: 1})
    assert cited.text == "唐代陆羽写成了世界上第一部关于茶的专著《茶经》[1]。火星上有很多高山和峡谷。"
    assert (cited.supported, cited.sentences) == (1, 2)


# -- the corpus ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("query, doc", [("大熊猫吃竹子", "zh_panda.md"), ("茶经", "zh_tea.md"),
                                        ("活字印刷", "zh_printing.md"), ("新幹線の開業", "ja_shinkansen.md"),
                                        ("花見", "ja_sakura.md"), ("Great Wall", None)])
def test_the_corpus_finds_chinese_and_japanese_documents_by_their_words(tmp_path, query, doc):
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS, folder)
    index = CorpusIndex(tmp_path / "corpus.db", folder)
    index.refresh()
    results = index.search(query, 3)
    if doc is None:
        assert results == []
        return
    assert results and results[0].url.endswith(doc), [r.url for r in results]
    title, text = index.read(results[0].url)
    assert text == (folder / doc).read_text(encoding="utf-8").strip(), "read back as written: no separator"
    assert "\u200b" not in title + results[0].snippet and title == text.splitlines()[0].lstrip("# ")


# -- the task's language -----------------------------------------------------------------------------------
@pytest.mark.parametrize("task, code", [("写一篇关于量子计算发展的报告", "zh"), ("量子计算", "zh"),
                                        ("東京の歴史について書いてください", "ja"), ("한국의 역사에 대해 쓰세요", "ko"),
                                        ("Écrivez un article sur la Révolution française", "fr"),
                                        ("Schreiben Sie über die Geschichte Berlins", "de"),
                                        ("Describe Jin Yong", None), ("Write about 量子计算 in English", None)])
def test_the_language_of_a_task(task, code):
    assert language.detect(task) == code


def test_the_language_message_names_the_language_or_is_empty_for_english():
    assert language.instruction("auto", "Write a short history of Python 3 and its ecosystem.") == ""
    assert language.instruction("auto", "写一篇关于长城的文章").startswith("Write in Chinese")
    assert language.instruction("en", "写一篇关于长城的文章").startswith("Write in English")
    assert language.instruction("pt-BR", "anything").startswith("Write in Portuguese (Brazil)")
    with pytest.raises(ConfigError, match="--language"):
        language.instruction("xx", "anything")


def test_the_language_model_loads_once_when_a_task_comes_while_the_warm_up_loads_it(monkeypatch):
    """``warm_up`` loads py3langid's model in a thread as the server starts; a task that came
    while it loaded loaded it again (a second of CPU twice). It now waits for that one load."""
    import threading
    import time

    from py3langid import langid

    loads: list[int] = []
    real = langid.LanguageIdentifier.from_model_file

    def slow(*args, **kwargs):
        loads.append(threading.get_ident())
        time.sleep(0.3)  # the warm-up still loading when the task comes
        return real(*args, **kwargs)

    monkeypatch.setattr(langid.LanguageIdentifier, "from_model_file", slow)
    language._loaded.cache_clear()
    try:
        language.warm_up()
        time.sleep(0.05)
        german = "Die Geschichte von Python 3 beginnt im Dezember 2008 mit einer neuen Version der Sprache."
        assert language.detect(german) == "de"
        assert len(loads) == 1, loads
    finally:
        language._loaded.cache_clear()
