"""annotation.admin.judge: parsing, the majority and order-split rules, and judging over real HTTP
against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import re

import pytest

from annotation.admin import judge
from annotation.admin.judge import Call
from common.errors import LLMAuthError
from data import arena
from tests.annotation.conftest import seed_outputs


@pytest.mark.parametrize("reply, verdict", [
    ("The first is clearer.\nVerdict: A", "A"),
    ("**Verdict:** B", "B"),
    ("Final verdict: [[tie]]", "tie"),
    ("Verdict: Response B", "B"),
    ("b", "B"),
    ("**A**", "A"),
    ("Tie.", "tie"),
    ("Response A is better than response B.", "A"),
    ("Verdict: A\n...on reflection, Verdict: B", "B"),  # the last verdict counts
    ("I cannot decide.", None),
    ("", None),
])
def test_parse_reply(reply, verdict):
    assert judge.parse_reply(reply) == verdict


@pytest.mark.parametrize("order, verdict, vote", [
    ("ab", "A", "a"), ("ab", "B", "b"), ("ba", "A", "b"), ("ba", "B", "a"), ("ba", "tie", "tie"), ("ab", None, None),
])
def test_positions_map_back_to_outputs(order, verdict, vote):
    assert judge.to_output_vote(order, verdict) == vote


def calls(ab: str, ba: str) -> list[Call]:
    """Calls from strings of votes per order: a, b, t (tie), ? (unparsed), ! (failed)."""
    def one(order, ch):
        if ch == "!":
            return Call(order, None, error="boom")
        return Call(order, {"a": "a", "b": "b", "t": "tie", "?": None}[ch])
    return [one("ab", ch) for ch in ab] + [one("ba", ch) for ch in ba]


@pytest.mark.parametrize("ab, ba, choice, split", [
    ("aaaaa", "aaaab", "a", False),  # clear majority
    ("bbbba", "bbbbb", "b", False),
    ("aaaaa", "bbbbb", "tie", True),  # the first shown always wins: position, not output
    ("bbbbb", "aaaaa", "tie", True),  # the second shown always wins
    ("aaaaa", "abbbb", "tie", True),  # 6-4 overall, but the orders disagree
    ("aaaab", "aabbt", "a", False),  # one order is a draw: no split; 6-3 overall
    ("aabbt", "aabbt", "tie", False),  # equal counts
    ("ttttt", "ttttt", "tie", False),
    ("a????", "!!!!!", "a", False),  # unreadable and failed calls count for neither
    ("?????", "!!!!!", None, False),  # nothing readable: no verdict
])
def test_decide(ab, ba, choice, split):
    verdict = judge.decide(calls(ab, ba))
    assert (verdict.choice, verdict.order_split) == (choice, split)


def test_counts_are_kept_in_the_detail():
    cs = calls("aa?!t", "bab??")
    verdict = judge.decide(cs)
    assert verdict.counts == {"a": 3, "b": 2, "tie": 1, "unparsed": 3, "failed": 1}
    detail = verdict.detail(cs)
    assert len(detail["unparsed"]) == 4 and detail["unparsed"][0]["order"] == "ab"
    json.dumps(detail)


@pytest.mark.parametrize("n, ab, ba", [(10, 5, 5), (7, 4, 3), (1, 1, 0)])
def test_half_the_calls_in_each_order(n, ab, ba):
    o = judge.orders(n)
    assert (o.count("ab"), o.count("ba")) == (ab, ba)


class ScriptedLLM:
    """A tiny stand-in with the client's ``complete`` signature."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    async def complete(self, messages, *, role, temperature=None, max_tokens=None):
        self.calls.append((messages, role, temperature))
        return type("Completion", (), {"text": self.answer(messages)})()


async def test_judge_pair_with_a_scripted_model():
    fake = ScriptedLLM(lambda messages: "Verdict: A")  # always the first position
    verdict, made = await judge.judge_pair(fake, "task", "one", "two", n=4)
    assert verdict.choice == "tie" and verdict.order_split
    assert {role for _, role, _ in fake.calls} == {"judge"} and {t for *_, t in fake.calls} == {0.7}


# -- over real HTTP ---------------------------------------------------------------------------

SECTION = re.compile(r"<response_a>\n(.*?)\n</response_a>", re.DOTALL)


def first_shown(body: dict) -> str:
    return SECTION.search(body["messages"][-1]["content"]).group(1)


def prefers_good(body: dict) -> str:
    return "Because it is better.\nVerdict: " + ("A" if "GOOD" in first_shown(body) else "B")


async def test_majority_over_http(app, llm):
    llm.reply(prefers_good)
    client = app.clients.llm()
    try:
        verdict, _ = await judge.judge_pair(client, "Describe owls", "A GOOD text", "a weak text")
        assert verdict.choice == "a" and verdict.counts["a"] == 10
        verdict, _ = await judge.judge_pair(client, "Describe owls", "a weak text", "A GOOD text")
        assert verdict.choice == "b"
    finally:
        await client.aclose()
    first_texts = [first_shown(body) for body in llm.requests[:10]]
    assert first_texts.count("A GOOD text") == 5  # half of the calls in each order
    assert {body["temperature"] for body in llm.requests} == {0.7}


async def test_position_bias_over_http_is_a_tie(app, llm):
    llm.reply(lambda body: "Verdict: A")
    client = app.clients.llm()
    try:
        verdict, _ = await judge.judge_pair(client, "Describe owls", "one", "two")
    finally:
        await client.aclose()
    assert verdict.choice == "tie" and verdict.order_split


async def test_unreadable_replies_are_counted_not_fatal(app, llm):
    llm.queue(*["I really cannot say."] * 3)
    llm.reply(prefers_good)
    client = app.clients.llm()
    try:
        verdict, made = await judge.judge_pair(client, "t", "A GOOD text", "weak")
    finally:
        await client.aclose()
    assert verdict.counts["unparsed"] == 3 and verdict.choice == "a"
    assert sum(c.vote is None for c in made) == 3


async def test_judge_store_judges_each_pair_once(app, llm):
    llm.reply(prefers_good)
    seed_outputs(app.store, {
        "Describe owls": {"rat": "A GOOD text on owls", "cot": "owls", "direct": "birds"},
        "Describe bats": {"rat": "A GOOD text on bats", "cot": "bats"},
    })
    progress = []
    report = await judge.judge_store(app.store, app.clients.llm, "fake-model", methods=["rat", "cot"], n=4,
                                     on_progress=lambda done, total, line: progress.append((done, total)))
    assert (report.judged, report.skipped) == (2, 0) and progress == [(1, 2), (2, 2)]
    rows = arena.vote_rows(app.store, "judge")
    assert [(r.method_a, r.method_b, r.choice) for r in rows] == [("cot", "rat", "b"), ("cot", "rat", "b")]
    stored = app.store.db.execute("select n, detail, model from judge_votes").fetchone()
    assert stored[0] == 4 and json.loads(stored[1])["counts"]["b"] == 4 and stored[2] == "fake-model"
    again = await judge.judge_store(app.store, app.clients.llm, "fake-model", methods=["rat", "cot"], n=4)
    assert (again.judged, again.skipped) == (0, 2)


async def test_a_refused_key_stops_the_judge(app, llm):
    llm.api_key = "another-key"
    seed_outputs(app.store, {"t": {"rat": "x", "cot": "y"}})
    with pytest.raises(LLMAuthError):
        await judge.judge_store(app.store, app.clients.llm, "fake-model", n=2)
    assert arena.vote_rows(app.store, "judge") == []
