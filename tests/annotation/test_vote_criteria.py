"""Votes by criterion (issue 40, item 4): a campaign names criteria; each vote in it carries one
A/B/tie choice per criterion, stored with the vote (append-only, undone with it); each criterion
has its own leaderboard and style control; ``dataset export`` writes the choices."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.admin import fact
from annotation.admin.dataset import JSONL, export_dataset, import_dataset
from annotation.campaigns import BENCH_CRITERIA, MAX_CRITERIA
from annotation.errors import ArenaError
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from data import arena
from data.sql import POSTGRESQL
from data.store import Store
from tests.annotation.conftest import admin, results, seed_outputs
from tests.conftest import outside

CRITERIA = ("Comprehensiveness", "Readability")


@pytest.fixture
def service(store) -> Arena:
    """Four tasks with outputs of rat, cot and llm."""
    seed_outputs(store, {f"task {k}": {"rat": f"rat {k} " * (k + 1), "cot": f"cot {k}", "llm": f"llm {k}"}
                         for k in range(4)}, task_set="s")
    return Arena(store, rng=random.Random(3), limits=VoteLimits(per_annotator=10_000, per_address=0))


def answers(shown, pick: str = "a") -> dict[str, str]:
    return dict.fromkeys(shown.criteria, pick)


def test_a_campaign_keeps_its_criteria_and_changes_them_on_record(service):
    c = service.campaigns.create("bench", methods=["rat", "cot"], criteria=BENCH_CRITERIA, by="lee")
    assert c.criteria == BENCH_CRITERIA
    assert "criteria Comprehensiveness, Insight/depth" in c.settings()
    assert c.as_json()["criteria"] == list(BENCH_CRITERIA)
    changed = service.campaigns.change("bench", criteria=[" Readability ", "readability", ""], by="lee")
    assert changed.criteria == ("Readability",)  # stripped, once in any case, blanks left out
    assert [h.criteria for h in service.campaigns.history("bench")] == [BENCH_CRITERIA, ("Readability",)]
    assert service.campaigns.create("plain", by="lee").criteria == ()


@pytest.mark.parametrize("criteria, message", [
    ([f"c{k}" for k in range(MAX_CRITERIA + 1)], "at most"),
    (["x" * 65], "1 to 64"),
    (["bad\x00name"], "printable"),
])
def test_bad_criteria_are_refused_naming_the_flag(service, criteria, message):
    with pytest.raises(ArenaError, match=message) as caught:
        service.campaigns.create("bad", criteria=criteria, by="lee")
    assert "--criteria" in str(caught.value)


def test_a_vote_in_a_campaign_with_criteria_carries_every_choice(service, store):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, by="lee")
    shown = service.next_pair("ana")
    assert shown.criteria == CRITERIA and shown.campaign == "bench"
    with pytest.raises(ArenaError, match="“Readability” has no choice yet"):
        service.vote(shown.battle_id, "ana", "a", criteria={"Comprehensiveness": "b", "Readability": None})
    with pytest.raises(ArenaError, match="asks no criterion “Style”"):
        service.vote(shown.battle_id, "ana", "a", criteria={**answers(shown), "Style": "a"})
    with pytest.raises(ArenaError, match="A, B or Tie"):
        service.vote(shown.battle_id, "ana", "a", criteria={"Comprehensiveness": "both_bad", "Readability": "a"})
    assert arena.find_battle(store, shown.battle_id).choice is None  # nothing stored by a refused vote
    service.vote(shown.battle_id, "ana", "tie", criteria={"Readability": "tie", "Comprehensiveness": "b"})
    vote = arena.last_vote(store, "ana")
    assert arena.vote_criteria(store, vote.id) == {"Comprehensiveness": "b", "Readability": "tie"}


def test_the_open_arena_asks_no_criterion(service):
    shown = service.next_pair("ana")
    assert shown.criteria == () and shown.campaign is None
    with pytest.raises(ArenaError, match="the open arena asks no criterion"):
        service.vote(shown.battle_id, "ana", "a", criteria={"Readability": "a"})
    service.vote(shown.battle_id, "ana", "a", criteria={})


def test_criterion_choices_are_append_only(service, store):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, by="lee")
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a", criteria=answers(shown))
    vote_id = arena.last_vote(store, "ana").id
    for statement in ("update vote_criteria set choice = 'b'", "delete from vote_criteria",
                      f"insert into vote_criteria (vote_id, criterion, choice, created) values "
                      f"({vote_id}, 'Readability', 'b', 'now')"):
        with pytest.raises(Exception, match="append-only|unique|UNIQUE|duplicate"), outside(store) as conn:
            conn.execute(statement)
    assert arena.vote_criteria(store, vote_id) == dict.fromkeys(CRITERIA, "a")


def test_each_criterion_has_its_own_leaderboard_and_style_control(service):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, overlap=2, by="lee")
    for who in ("ana", "bob"):
        for _ in range(4):
            shown = service.next_pair(who)
            battle = arena.get_battle(service.store, shown.battle_id)
            rat = "a" if battle.method_a == "rat" else "b"
            cot = "b" if rat == "a" else "a"
            # overall and comprehensiveness: rat; readability: cot
            service.vote(shown.battle_id, who, rat, criteria={"Comprehensiveness": rat, "Readability": cot})
    r = results(service)
    assert r.criteria("bench") == list(CRITERIA)
    boards = r.criterion_boards(campaign="bench", bootstrap=10)
    assert [b.criterion for b in boards] == list(CRITERIA)
    assert [b.votes for b in boards] == [8, 8]
    assert boards[0].methods == ["rat", "cot"] and boards[1].methods == ["cot", "rat"]
    assert r.leaderboard(campaign="bench", bootstrap=10).methods == ["rat", "cot"]
    styled = r.criterion_style_board("Readability", campaign="bench")
    assert styled.votes == 8 and styled.rows[0].method == "cot"
    assert r.criteria() == list(CRITERIA)  # every vote: the criteria answered
    with pytest.raises(ArenaError, match="judge"):
        r.criterion_board("Readability", "judge")
    assert r.criterion_boards("judge") == []


def test_an_undone_vote_takes_its_criterion_choices_with_it(service, store):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, by="lee")
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a", criteria=answers(shown, "a"))
    again = service.undo("ana", shown.battle_id)
    assert again.criteria == CRITERIA
    assert arena.criterion_vote_rows(store, "Readability") == []
    service.vote(again.battle_id, "ana", "b", criteria=answers(again, "b"))
    assert [r.choice for r in arena.criterion_vote_rows(store, "Readability")] == ["b"]


def test_dataset_export_writes_the_criterion_choices(service, tmp_path):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, by="lee")
    shown = service.next_pair("ana")
    service.vote(shown.battle_id, "ana", "a", criteria={"Comprehensiveness": "a", "Readability": "tie"})
    export_dataset(admin(service), tmp_path / "out", fmt=JSONL, campaign="bench")
    votes = [json.loads(line) for line in (tmp_path / "out/votes/train.jsonl").read_text().splitlines()]
    assert [json.loads(v["criteria"]) for v in votes] == [{"Comprehensiveness": "a", "Readability": "tie"}]
    rows = [json.loads(line) for line in (tmp_path / "out/campaigns/train.jsonl").read_text().splitlines()]
    assert json.loads(rows[0]["criteria"]) == list(CRITERIA)
    card = (tmp_path / "out/README.md").read_text()
    assert "`criteria`" in card


def test_a_dataset_s_criterion_choices_import_into_another_database(service, tmp_path, request):
    service.campaigns.create("bench", methods=["rat", "cot"], criteria=CRITERIA, by="lee")
    for who, pick in (("ana", "a"), ("bob", "b")):
        shown = service.next_pair(who)
        service.vote(shown.battle_id, who, "a", criteria=answers(shown, pick),
                     sentences=[("a", shown.text_a, "unsupported")])
    export_dataset(admin(service), tmp_path / "out", fmt=JSONL, names=True)
    other = Store(request.getfixturevalue("pg_cluster").new_database()
                  if request.getfixturevalue("backend") == POSTGRESQL else tmp_path / "other.db")
    try:
        copy = Arena(other)
        imported = import_dataset(admin(copy), tmp_path / "out")
        assert imported.votes_added == 2
        assert copy.campaigns.get("bench").criteria == CRITERIA
        for criterion in CRITERIA:
            assert [(r.method_a, r.method_b, r.choice) for r in arena.criterion_vote_rows(other, criterion)] \
                == [(r.method_a, r.method_b, r.choice) for r in arena.criterion_vote_rows(service.store, criterion)]
        assert [f[1:] for f in arena.sentence_flags(other)] == [f[1:] for f in arena.sentence_flags(service.store)]
        again = import_dataset(admin(copy), tmp_path / "out")
        assert (again.votes_added, again.campaigns_added) == (0, 0)  # importing twice adds nothing
    finally:
        other.close_all()


def test_flagged_sentences_are_stored_with_the_vote_and_checked_against_their_side(service, store, tmp_path):
    seed_outputs(store, {"owls": {"rat": "# Owls\n\nOwls hunt at **night** [1]. They eat mice.",
                                  "cot": "Owls sleep by day. Owls are fish."}}, task_set="birds")
    shown = service.next_pair("ana", task_set="birds")
    battle = arena.get_battle(store, shown.battle_id)
    rat, cot = ("a", "b") if battle.method_a == "rat" else ("b", "a")
    with pytest.raises(ArenaError, match="is not in"):
        service.vote(shown.battle_id, "ana", "a", sentences=[(rat, "Owls are fish.", "wrong")])
    with pytest.raises(ArenaError, match="unsupported or wrong"):
        service.vote(shown.battle_id, "ana", "a", sentences=[(cot, "Owls are fish.", "silly")])
    assert arena.find_battle(store, shown.battle_id).choice is None
    # as the page marks them: markup and citation marks aside, spaces collapsed; each once
    service.vote(shown.battle_id, "ana", "a", sentences=[(rat, "Owls hunt at  night 1.", "unsupported"),
                                                          (cot, "Owls are fish.", "wrong"),
                                                          (cot, "Owls are  fish.", "wrong")])
    flagged = arena.sentence_flags(store)
    assert [(f.method, f.side, f.sentence, f.kind) for f in flagged] == [
        ("rat", rat, "Owls hunt at night 1.", "unsupported"), ("cot", cot, "Owls are fish.", "wrong")]
    export_dataset(admin(service), tmp_path / "out", fmt=JSONL, task_set="birds")
    votes = [json.loads(line) for line in (tmp_path / "out/votes/train.jsonl").read_text().splitlines()]
    assert json.loads(votes[0]["sentence_flags"]) == [
        {"side": rat, "sentence": "Owls hunt at night 1.", "kind": "unsupported"},
        {"side": cot, "sentence": "Owls are fish.", "kind": "wrong"}]
    service.undo("ana", shown.battle_id)
    assert arena.sentence_flags(store) == [], "an undone vote's flags do not count"


def test_eval_fact_counts_people_s_flagged_sentences_per_method_beside_its_own(local_app):
    """FACT's figure and people's flags side by side: imported reports whose cited pages are not
    stored (nothing is judged), and one vote that flags a sentence of each."""
    reports = {"rat": "Owls hunt at night [1].\n\nReferences\n[1] https://example.org/owls - Owls",
               "cot": "Owls sleep by day [1].\n\nReferences\n[1] https://example.org/days - Days"}
    seed_outputs(local_app.store, {"owls": reports})
    service = local_app.arena
    shown = service.next_pair("ana")
    battle = arena.get_battle(local_app.store, shown.battle_id)
    side = {battle.method_a: "a", battle.method_b: "b"}
    service.vote(shown.battle_id, "ana", "a", sentences=[(side["rat"], "Owls hunt at night", "unsupported"),
                                                         (side["cot"], "Owls sleep by day", "wrong")])
    report = asyncio.run(fact.evaluate(local_app.store, local_app.authoring, lambda: None))
    rows = {r.method: r for r in report.methods}
    assert (rows["rat"].flagged_unsupported, rows["rat"].flagged_wrong) == (1, 0)
    assert (rows["cot"].flagged_unsupported, rows["cot"].flagged_wrong) == (0, 1)
    assert rows["rat"].missing == 1 and rows["rat"].judged == 0
    assert "people: unsupp/wrong" in fact.format_report(report)


@pytest.mark.sqlite_only
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["vote", "vote", "undo"]), st.sampled_from(["ana", "bob"]),
                          st.sampled_from(arena.CRITERION_CHOICES)), min_size=1, max_size=14))
def test_criterion_choices_follow_their_vote_through_votes_and_undos(tmp_path_factory, steps):
    """Random votes and undos by two annotators: the criterion choices that count are exactly
    those cast with the votes that count, each with its own vote's methods."""
    store = Store(tmp_path_factory.mktemp("prop") / "arena.db")
    try:
        seed_outputs(store, {f"task {k}": {"rat": f"rat {k}", "cot": f"cot {k}", "llm": f"llm {k}"}
                             for k in range(6)})
        service = Arena(store, rng=random.Random(0), limits=VoteLimits(per_annotator=10_000, per_address=0))
        service.campaigns.create("bench", criteria=CRITERIA, overlap=2, by="lee")
        cast: dict[int, dict[str, str]] = {}  # vote id -> its criteria as cast
        on_screen: dict[str, int | None] = {}
        for action, who, pick in steps:
            if action == "undo":
                try:
                    shown = service.undo(who)
                except ArenaError:
                    continue
                on_screen[who] = shown.battle_id
                continue
            battle_id = on_screen.get(who)
            if battle_id is None:
                try:
                    battle_id = service.next_pair(who).battle_id
                except Exception:  # noqa: BLE001 (no pair left for them)
                    continue
            picks = {"Comprehensiveness": pick, "Readability": "tie" if pick != "tie" else "a"}
            text_b = arena.get_battle(store, battle_id).text_b
            service.vote(battle_id, who, "a", criteria=picks, sentences=[("b", text_b, "wrong")])
            cast[arena.last_vote(store, who).id] = picks
            on_screen[who] = None
        counted = {v.id for who in ("ana", "bob") for v in arena.counted_votes(store, who)}
        for criterion in CRITERIA:
            rows = arena.criterion_vote_rows(store, criterion)
            assert {r.id for r in rows} == counted
            assert all(r.choice == cast[r.id][criterion] for r in rows)
            overall = {r.id: (r.method_a, r.method_b) for r in arena.vote_rows(store)}
            assert all((r.method_a, r.method_b) == overall[r.id] for r in rows)
        flagged = arena.sentence_flags(store)  # a vote's flagged sentences follow it too
        assert {f.vote_id for f in flagged} == counted and len(flagged) == len(counted)
        overall = {r.id: r.method_b for r in arena.vote_rows(store)}
        assert all(f.method == overall[f.vote_id] for f in flagged)
    finally:
        store.close_all()
