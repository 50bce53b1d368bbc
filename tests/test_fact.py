"""`eval fact` (issue 40, item 2): DeepResearch Bench's FACT citation check on stored runs and
imported outputs, judged by the judge role against the stored pages."""

from __future__ import annotations

import json
import threading

import pytest

import app as app_module
from annotation.admin import fact
from common.settings import Settings
from data import arena
from tests.fakes.scripts import QuotingAuthor, draft_steps
from tests.test_drb import QUERY, write_jsonl

#: An excerpt of a report line of the bench's own published results, in its exact format
#: (data/test_data/raw_data/claude-3-7-sonnet-latest.jsonl, id 51; Ayanami0730/deep_research_bench,
#: Apache-2.0): marks after a paragraph's last sentence, then "[n] URL - title" under "References".
BENCH_ARTICLE = (
    "### Current Demographic Situation\n\n"
    "In 2014, Japan's population was estimated to be 127 million. This figure is expected to shrink to 107 million "
    "(by 16%) by 2040 and to 97 million (by 24%) by 2050 if current demographic trends continue. [1] \n\n"
    "By 2050, an estimated one-third of the population in Japan is expected to be 65 and older. [1] This aging "
    "trend is particularly significant because:\n\n"
    "The demographic group of 65 years old and above is anticipated to be around 39% of the population by 2050. "
    "[4][1]\n\n"
    "## References\n\n"
    "[1] https://en.wikipedia.org/wiki/Aging_of_Japan - Aging of Japan - Wikipedia\n"
    "[4] https://www.statista.com/topics/9002/elderly-people-in-japan/ - Elderly people in Japan - statistics "
    "& facts | Statista\n"
)
WIKI = "https://en.wikipedia.org/wiki/Aging_of_Japan"
STATISTA = "https://www.statista.com/topics/9002/elderly-people-in-japan/"


def test_pairs_of_a_report_in_the_bench_format():
    pairs, unnamed = fact.text_pairs(BENCH_ARTICLE)
    assert unnamed == 0
    assert [(p.statement[:30], p.url) for p in pairs] == [
        ("In 2014, Japan's population wa", WIKI),
        ("By 2050, an estimated one-thir", WIKI),
        ("The demographic group of 65 ye", STATISTA),
        ("The demographic group of 65 ye", WIKI),
    ]
    assert pairs[0].statement.endswith("if current demographic trends continue.")  # both sentences the mark closes
    twice = BENCH_ARTICLE.replace("2050. [4][1]", "2050. [4][1][4]")
    assert len(fact.text_pairs(twice)[0]) == 4, "one pair per statement and URL"


@pytest.mark.parametrize("reply, verdict", [
    ("The page gives the figure.\nVerdict: supported", "supported"),
    ("Verdict: **Unsupported**", "unsupported"),
    ("verdict - not supported", "unsupported"),
    ("unknown", "unknown"),
    ('[{"idx": 1, "result": "supported"}]', "supported"),  # FACT's own reply shape
    ("Verdict: supported.\n...on reflection, Verdict: unsupported", "unsupported"),
    ("I am not sure.", None),
    ("", None),
])
def test_parse_reply(reply, verdict):
    assert fact.parse_reply(reply) == verdict


def test_the_judge_sees_the_cited_passage_first_within_the_limit():
    page = "intro " * 5000
    ref = fact.reference_text(page, "the cited passage", limit=100)
    assert ref.startswith("the cited passage\n\nintro") and len(ref) == 100
    assert fact.reference_text("short page", "") == "short page"


REPLIES = ["Verdict: supported", "The page agrees.\nVerdict: supported", "Verdict: unsupported",
           "I cannot decide.", "Verdict: unknown"]


class Judge:
    """Answers FACT's prompt with REPLIES in turn (the rest goes to the author); keeps what it was asked."""

    def __init__(self, author):
        self.author = author
        self.asked: list[tuple[str, str, str]] = []  # (model, user prompt, reply)
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        if body["messages"][0]["content"] != fact.SYSTEM_PROMPT:
            return self.author(body)
        with self.lock:
            reply = REPLIES[len(self.asked) % len(REPLIES)]
            self.asked.append((body["model"], body["messages"][1]["content"], reply))
        return reply


@pytest.fixture
def db(tmp_path):
    return tmp_path / "fact.db"


@pytest.fixture
def env(db, llm, shared_web):
    return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_JUDGE_MODEL": "fake-judge", "RAT_STUDIO_SEARCH": "searxng",
            "RAT_STUDIO_SEARXNG_URL": shared_web.searxng_url, "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1",
            "RAT_STUDIO_DB": str(db)}


@pytest.fixture
def judge(cli, env, llm, tmp_path):
    """rat run by `batch` on the bench's English task on the stand-ins; the judge's script."""
    script = Judge(QuotingAuthor(draft_steps(5)))  # each revision quotes a passage, cited
    llm.reply(script)
    code, _, err = cli("batch", str(write_jsonl(tmp_path / "q.jsonl", QUERY[1:])), "--methods", "rat", env=env)
    assert code == 0, err
    return script


def run_pairs(db) -> list[fact.Pair]:
    built = app_module.build(Settings(db_path=db))
    try:
        (run,) = built.store.list_runs(status="done")
        return fact.run_pairs(built.authoring.shown(run.id, "latest").cited)
    finally:
        built.store.close()


def counts(replies: list[str]) -> dict[str, int]:
    verdicts = [fact.parse_reply(r) for r in replies]
    return {"supported": verdicts.count("supported"), "unsupported": verdicts.count("unsupported"),
            "unknown": verdicts.count("unknown"), "unreadable": verdicts.count(None)}


def test_eval_fact_on_a_rat_run_counts_the_scripted_verdicts(judge, cli, env, db):
    pairs = run_pairs(db)
    assert pairs, "the rat run on the stand-ins cites its pages"
    code, out, err = cli("eval", "fact", "--json", env=env)
    assert code == 0, err
    (row,) = json.loads(out)["methods"]
    assert len(judge.asked) == len(pairs) == row["pairs"]
    assert {model for model, _, _ in judge.asked} == {"fake-judge"}
    c = counts([reply for *_, reply in judge.asked])
    assert len(pairs) >= len(REPLIES) and min(c.values()) >= 1, "every kind of verdict, an unreadable one too"
    assert (row["supported"], row["unknown"], row["unreadable"]) == (c["supported"], c["unknown"], c["unreadable"])
    assert row["judged"] == c["supported"] + c["unsupported"] and row["missing"] == 0 and row["tasks"] == 1
    assert 0 <= row["accuracy"] <= 1 and row["accuracy"] == pytest.approx(c["supported"] / row["judged"])
    assert row["effective_per_task"] == c["supported"]
    statement, url, passage = pairs[0].statement, pairs[0].url, pairs[0].passage
    asked = next(prompt for _, prompt, _ in judge.asked if f"<statement>\n{statement}\n</statement>" in prompt)
    assert f"<reference>\n{passage.strip()}" in asked, "the cited passage comes first"
    assert url

    code, out, err = cli("eval", "fact", env=env)
    assert code == 0 and "accuracy" in out and out.splitlines()[1].startswith("rat"), err


def test_a_pair_whose_page_is_not_stored_is_counted_apart(judge, cli, env, db):
    pairs = run_pairs(db)
    gone = pairs[0].url
    built = app_module.build(Settings(db_path=db))
    try:
        with built.store.db.conn:
            built.store.db.execute("delete from pages where url = ?", [gone])
    finally:
        built.store.close()
    code, out, err = cli("eval", "fact", "--json", env=env)
    assert code == 0, err
    (row,) = json.loads(out)["methods"]
    lost = sum(p.url == gone for p in pairs)
    assert row["missing"] == lost and row["missing_urls"] == [gone]
    assert len(judge.asked) == len(pairs) - lost
    assert row["judged"] + row["unknown"] + row["unreadable"] + row["failed"] == len(pairs) - lost


def test_imported_outputs_score_what_has_a_stored_page(judge, cli, env, db, tmp_path):
    pairs = run_pairs(db)
    stored = pairs[0].url
    report = {"id": 99, "prompt": "A task only the other system ran.",
              "article": f"It is stored [1]. It is not [2].\n\nReferences\n[1] {stored} - Stored\n"
                         f"[2] https://example.org/nowhere - Not stored"}
    path = write_jsonl(tmp_path / "claude.jsonl", [report])
    assert cli("outputs", "import", str(path), "--format", "drb", "--method", "claude", env=env)[0] == 0
    code, out, err = cli("eval", "fact", "--methods", "claude", "--json", env=env)
    assert code == 0, err
    got = json.loads(out)
    (row,) = got["methods"]
    assert (row["imported"], row["pairs"], row["missing"], row["missing_urls"]) == (
        1, 2, 1, ["https://example.org/nowhere"])
    assert len(judge.asked) == 1 and "It is stored" in judge.asked[0][1]
    assert any("no stored page" in note for note in got["notes"])


def test_eval_fact_with_nothing_to_score_says_so(cli, env):
    code, _, err = cli("eval", "fact", env=env)
    assert code != 0 and "No finished runs" in err and err.count("\n") == 1


def test_imported_outputs_query_skips_run_outputs(judge, db):
    built = app_module.build(Settings(db_path=db))
    try:
        assert arena.imported_outputs(built.store) == []
    finally:
        built.store.close()
