"""Annotation campaigns (issue 24 item 4): a task set, methods, presentation style, overlap, quota
and who may vote; pairs assigned so each gets its overlap; progress and a leaderboard per campaign."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from annotation import campaigns as campaigns_mod
from annotation.errors import ArenaError, NoPairLeft
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from data import accounts as account_rows
from data import arena, sql
from data.store import Store
from tests.annotation.conftest import admin, results, seed_outputs

TASKS = 6


@pytest.fixture
def service(store) -> Arena:
    """Six tasks of set "s" with outputs of rat, cot and llm, and two tasks of set "other"."""
    seed_outputs(store, {f"task {k}": {"rat": f"rat {k}", "cot": f"cot {k}", "llm": f"llm {k}"}
                         for k in range(TASKS)}, task_set="s")
    seed_outputs(store, {f"other {k}": {"rat": f"rat o{k}", "cot": f"cot o{k}"} for k in range(2)}, task_set="other")
    return Arena(store, rng=random.Random(1), limits=VoteLimits(per_annotator=10_000, per_address=0))


def vote_until_done(service: Arena, who: str, choice: str = "a") -> list[int]:
    """Vote on every pair the arena gives ``who`` until it says there is none; the battles voted on."""
    voted = []
    for _ in range(200):
        try:
            shown = service.next_pair(who)
        except NoPairLeft:
            return voted
        service.vote(shown.battle_id, who, choice)
        voted.append(shown.battle_id)
    raise AssertionError("the arena never ran out of pairs")


def pairs_of(service: Arena, battle_ids: list[int]) -> list[frozenset[int]]:
    return [frozenset((b.output_a, b.output_b)) for b in (arena.get_battle(service.store, i) for i in battle_ids)]


def test_each_pair_of_the_campaign_gets_exactly_its_overlap_of_annotators(service):
    service.campaigns.create("pilot", task_set="s", methods=["rat", "cot"], overlap=2, by="lee")
    voted = {who: vote_until_done(service, who) for who in ("ana", "bob", "cy")}
    every = [p for battles in voted.values() for p in pairs_of(service, battles)]
    per_pair = Counter(every)
    assert len(per_pair) == TASKS and set(per_pair.values()) == {2}  # 6 rat-cot pairs, each twice
    for battles in voted.values():  # nobody saw one pair twice
        assert len(set(pairs_of(service, battles))) == len(battles)
    methods = {(b.method_a, b.method_b) for i in sum(voted.values(), []) for b in [arena.get_battle(service.store, i)]}
    assert {frozenset(m) for m in methods} == {frozenset(("rat", "cot"))}  # not llm, not the other set
    assert {arena.get_battle(service.store, i).campaign for i in sum(voted.values(), [])} == {"pilot"}
    progress = admin(service).campaign_progress("pilot")
    assert (progress.pairs, progress.complete, progress.started, progress.votes, progress.needed) == (6, 6, 0, 12, 12)
    assert progress.done == 1.0
    assert sorted((a.name, a.votes) for a in progress.annotators) == sorted(
        (who, len(b)) for who, b in voted.items() if b)


def test_a_started_pair_goes_to_the_next_annotator_before_a_fresh_one(service):
    service.campaigns.create("pilot", task_set="s", methods=["rat", "cot"], overlap=3)
    first = service.next_pair("ana")
    service.vote(first.battle_id, "ana", "a")
    for who in ("bob", "cy"):
        shown = service.next_pair(who)
        assert pairs_of(service, [shown.battle_id]) == pairs_of(service, [first.battle_id])
        service.vote(shown.battle_id, who, "b")
    fourth = service.next_pair("dan")  # the pair has its three: dan gets another
    assert pairs_of(service, [fourth.battle_id]) != pairs_of(service, [first.battle_id])
    progress = admin(service).campaign_progress("pilot")
    assert (progress.complete, progress.started, progress.votes) == (1, 0, 3)


def test_a_pair_on_screen_is_held_for_a_while_then_given_to_another(service):
    service.campaigns.create("one", task_set="s", methods=["rat", "cot"], overlap=1)
    now = [time.time()]  # (battles are stamped by the real clock)
    service.clock = lambda: now[0]
    held = {pairs_of(service, [service.next_pair("ana").battle_id])[0]}
    for _ in range(TASKS - 1):  # ana skips them all: each is hers while on her screen
        held |= set(pairs_of(service, [service.next_pair("ana").battle_id]))
    assert len(held) == TASKS
    with pytest.raises(NoPairLeft, match="one"):
        service.next_pair("bob")
    now[0] += campaigns_mod.RESERVE_SECONDS + 1  # ana walked away: her pairs are free again
    assert pairs_of(service, [service.next_pair("bob").battle_id])[0] in held


def test_the_quota_ends_an_annotators_part_and_a_second_tab_cannot_pass_it(service):
    service.campaigns.create("pilot", task_set="s", quota=2)
    tabs = [service.next_pair("ana") for _ in range(3)]  # three pairs on screen at once (three tabs)
    service.vote(tabs[0].battle_id, "ana", "a")
    service.vote(tabs[1].battle_id, "ana", "b")
    with pytest.raises(ArenaError, match="your 2 votes in campaign “pilot”"):
        service.vote(tabs[2].battle_id, "ana", "a")
    with pytest.raises(NoPairLeft, match="your 2 votes") as caught:
        service.next_pair("ana")
    assert caught.value.judged_all
    progress = service.progress("ana")
    assert (progress.total, progress.left, progress.quota, progress.campaign) == (2, 0, 2, "pilot")


def test_only_the_campaigns_voters_get_its_pairs_others_keep_the_open_arena(service):
    service.campaigns.create("pilot", task_set="s", voters=["ana", "study:prolific-1"])
    account_rows.study_account(service.store, "prolific-1:p7", study="prolific-1", quota=None, completion_code=None,
                               participant={})
    assert service.next_pair("ana").campaign == "pilot"
    assert service.next_pair("prolific-1:p7").campaign == "pilot"
    bob = service.next_pair("bob")
    assert bob.campaign is None and arena.get_battle(service.store, bob.battle_id).campaign is None
    service.campaigns.close("pilot", by="lee")  # closed: ana is back in the open arena
    assert service.next_pair("ana").campaign is None


def test_the_campaigns_style_decides_how_both_sides_are_shown(service):
    service.campaigns.create("plainly", task_set="s", style="plain", voters=["ana"])
    assert service.style == "sources" and service.next_pair("ana").style == "plain"
    assert service.next_pair("bob").style == "sources"  # the open arena's --arena-style


def test_the_leaderboard_and_agreement_read_per_campaign(service):
    service.campaigns.create("pilot", task_set="s", methods=["rat", "cot"], overlap=2, voters=["ana", "bob"])
    for who in ("ana", "bob"):
        vote_until_done(service, who, "tie")
    vote_until_done(service, "cy", "b")  # the open arena: not the campaign's
    board = results(service).leaderboard(campaign="pilot", bootstrap=10)
    assert board.votes == 2 * TASKS and board.campaign == "pilot"
    assert results(service).leaderboard(bootstrap=10).votes > board.votes
    agreed = results(service).people_agreement(campaign="pilot")  # ana and bob both said Tie on each of the 6 pairs
    assert (agreed.units, agreed.votes) == (TASKS, 2 * TASKS)
    assert {(a.annotator, a.shared, a.agreed) for a in agreed.annotators} == {("ana", 6, 6), ("bob", 6, 6)}
    with pytest.raises(ArenaError, match="judge's votes belong to no campaign"):
        results(service).leaderboard("judge", campaign="pilot")
    with pytest.raises(ArenaError, match="No campaign 'nope'; campaigns: 'pilot'"):
        results(service).leaderboard(campaign="nope")


def test_settings_are_checked_with_the_flag_to_fix_and_kept_append_only(service):
    c = service.campaigns
    for kwargs, words in [({"overlap": 0}, "--overlap"), ({"quota": 0}, "--quota"), ({"style": "fancy"}, "--style"),
                          ({"methods": ["rat"]}, "at least two methods"), ({"methods": ["rat", "gpt9"]}, "gpt9"),
                          ({"task_set": "nope"}, "No task set 'nope'")]:
        with pytest.raises(ArenaError, match=words):
            c.create("x", **kwargs)
    c.create("pilot", task_set="s", quota=10, by="lee")
    with pytest.raises(ArenaError, match="A campaign 'pilot' exists"):
        c.create("pilot")
    c.change("pilot", quota=20, by="kim")
    assert [(h.quota, h.changed_by) for h in c.history("pilot")] == [(10, "lee"), (20, "kim")]
    assert c.get("pilot").quota == 20 and c.get("pilot").started == c.history("pilot")[0].created
    with pytest.raises(sql.IntegrityError, match="append-only"):
        service.store.db.execute("update campaigns set quota = 99")
    with pytest.raises(sql.IntegrityError, match="append-only"):
        service.store.db.execute("delete from campaigns")
    assert service.next_pair("ana").campaign == "pilot"
    with pytest.raises(sql.IntegrityError, match="append-only"):
        service.store.db.execute("update battles set campaign = 'other'")


@pytest.mark.parametrize("processes", [1, 2])
def test_annotators_asking_at_once_never_push_a_pair_past_its_overlap(service, store, processes):
    """Five annotators at once, on one process or on two (two services with connections of their
    own, as two app processes on one database are)."""
    service.campaigns.create("one", task_set="s", overlap=1)  # 18 pairs (3 methods, 6 tasks)
    others = [Store(store.url or store.path) for _ in range(processes - 1)]
    services = [service, *(Arena(o, rng=random.Random(k), limits=service.limits) for k, o in enumerate(others))]
    got: list[int] = []
    errors: list[BaseException] = []

    def annotator(name: str) -> None:
        mine = services[int(name[1:]) % processes]
        try:
            for _ in range(6):
                got.append(mine.next_pair(name).battle_id)
        except NoPairLeft:
            pass
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=annotator, args=(f"a{k}",)) for k in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for other in others:
        other.close_all()
    assert not errors
    pairs = pairs_of(service, sorted(set(got)))  # (one with nothing new left is shown her own skipped one again)
    assert len(pairs) == len(set(pairs)) == 18  # every pair held by one annotator, none by two


def test_an_undo_in_a_campaign_shows_the_pair_again_inside_it_with_its_style_and_vote_count(service):
    service.campaigns.create("plainly", task_set="s", style="plain", voters=["ana"], quota=3)
    shown = service.next_pair("ana")
    assert (shown.campaign, shown.style) == ("plainly", "plain")
    service.vote(shown.battle_id, "ana", "a")
    assert service.campaigns.votes_of("plainly", "ana") == 1
    again = service.undo("ana")
    battle = arena.get_battle(service.store, again.battle_id)
    assert (again.campaign, again.style, battle.campaign) == ("plainly", "plain", "plainly"), \
        "the pair comes back inside its campaign, shown in its style"
    assert service.campaigns.votes_of("plainly", "ana") == 0, "the undone vote no longer counts"
    service.vote(again.battle_id, "ana", "b")
    assert service.campaigns.votes_of("plainly", "ana") == 1, "the vote cast again counts in the campaign"
    assert service.progress("ana").campaign == "plainly"


def test_a_campaign_that_can_never_finish_is_said_with_its_numbers(service):
    # 6 tasks x 3 methods: 3 pairs a task, 18 pairs; with overlap 2, 36 votes are needed
    service.campaigns.create("short", task_set="s", overlap=2, quota=4, voters=["ana", "bob", "cy"])
    said = admin(service).campaign_shortfall("short")
    assert "3 voters x quota 4 = 12 votes" in said and "18 pairs x overlap 2 = 36" in said
    assert "raise --quota to 12" in said
    service.campaigns.change("short", quota=12, by="lee")
    assert admin(service).campaign_shortfall("short") == ""
    service.campaigns.change("short", overlap=4, by="lee")
    assert "needs 4 different annotators but only 3 may vote" in admin(service).campaign_shortfall("short")
    service.campaigns.change("short", voters=["ana", "study:prolific-1"], by="lee")
    assert admin(service).campaign_shortfall("short") == "", "a study's link admits people not known in advance"
    service.campaigns.create("open", task_set="s", quota=1)
    assert admin(service).campaign_shortfall("open") == "", "anyone may vote: not known in advance"


def test_one_quota_is_shown_the_smaller_and_the_completion_code_after_it(service):
    from annotation.accounts import Account

    service.campaigns.create("pilot", task_set="s", quota=4, voters=["ana"])
    for _ in range(3):
        service.vote(service.next_pair("ana").battle_id, "ana", "a")
    progress = service.progress("ana", quota=3)  # the account's quota is 3, the campaign's 4
    assert (progress.total, progress.quota, progress.left) == (3, 3, 0), "one quota: the smaller"
    account = Account("ana", quota=3, completion_code="C0DE1234")
    assert account.code_after(progress.total, progress.quota) == "C0DE1234"
    assert service.progress("ana", quota=9).quota == 4, "the campaign's, when it is the smaller"
    assert account.code_after(3, 4) is None, "no code before the quota shown is cast"
