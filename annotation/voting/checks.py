"""The checks a vote passes before ``Arena.vote`` stores it: the battle is the annotator's and
unvoted, every criterion of its campaign is answered, each flagged sentence is of its side's text,
and the annotator is within the day's cap and the campaign's quota. Kept apart from
``annotation.voting.arena`` so the arena reads as the annotator's steps; each check takes what it
reads (the store, the campaigns) as arguments and raises ArenaError (or StoreError) in the
annotator's words."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from annotation.campaigns import Campaigns
from annotation.errors import ArenaError
from annotation.present import present
from common.errors import StoreError
from data import arena
from data.store import Store

_LETTER = re.compile(r"\w")


def _letters(text: str) -> str:
    """``text``'s letters and digits in lower case: what a sentence marked in the page and the
    stored text share, whatever the markup (``**``, ``#``, links) between them."""
    return "".join(_LETTER.findall(text.casefold()))


def battle_to_vote(store: Store, battle_id: int, annotator: str, comment: str,
                   flag: str | None) -> arena.BattleRow:
    """The battle ``annotator`` votes on, read once (a battle never changes; its vote is checked
    again by the database): whose it is, its campaign, and the methods revealed after the vote.
    Raises ArenaError for a bad ``comment`` or ``flag``; StoreError when the battle is unknown, was
    shown to someone else, or already has a vote."""
    try:
        arena.vote_note(comment, flag)
    except ValueError as exc:
        raise ArenaError(f"Cannot record the vote: {exc}.") from None
    battle = arena.find_battle(store, battle_id)
    if battle is None:
        raise StoreError(arena.NO_BATTLE.format(battle_id=battle_id))
    if battle.annotator != annotator:
        raise StoreError(arena.NOT_YOURS)
    if battle.choice is not None:
        raise StoreError(arena.VOTED_ALREADY)
    return battle


def criteria_of(campaigns: Campaigns, campaign_name: str | None,
                criteria: Mapping[str, str | None] | None) -> dict[str, str]:
    """The criterion choices of a vote in campaign ``campaign_name`` (None: the open arena, which
    asks none), in the campaign's order. Raises ArenaError naming the first criterion left
    unanswered (the overall vote comes last), one the campaign does not ask, or a choice not in
    CRITERION_CHOICES; StoreError."""
    asked = campaigns.get(campaign_name).criteria if campaign_name else ()
    given = {name: pick for name, pick in (criteria or {}).items() if pick}
    unknown = [name for name in given if name not in asked]
    if unknown:
        where = f"campaign “{campaign_name}”" if campaign_name else "the open arena"
        raise ArenaError(f"Cannot record the vote: {where} asks no criterion “{unknown[0]}”"
                         + (f" (it asks {', '.join(f'“{c}”' for c in asked)})." if asked else "."))
    missing = [name for name in asked if name not in given]
    if missing:
        raise ArenaError(f"Answer every criterion before the overall vote: “{missing[0]}” has no choice yet "
                         f"(A, B or Tie in its row{f', and {len(missing) - 1} more' if len(missing) > 1 else ''}).")
    bad = [name for name in asked if given[name] not in arena.CRITERION_CHOICES]
    if bad:
        raise ArenaError(f"Cannot record the vote: the choice on “{bad[0]}” is A, B or Tie, not "
                         f"{str(given[bad[0]])[:20]!r}.")
    return {name: given[name] for name in asked}


def flagged(campaigns: Campaigns, style: str, battle: arena.BattleRow,
            sentences: Sequence[tuple[str, str, str]] | None) -> list[tuple[str, str, str]]:
    """The flagged sentences of a vote as stored (``arena.sentence_flag_rows``), each checked to
    be of its side's text (its letters and digits, case and markup aside, in the text as stored
    or as shown: in its campaign's style, else ``style``). Raises ArenaError saying which is not."""
    try:
        rows = arena.sentence_flag_rows(sentences)
    except ValueError as exc:
        raise ArenaError(f"Cannot record the vote: {exc}.") from None
    style = (campaigns.get(battle.campaign).style if battle.campaign else style) if rows else None
    for side, sentence, _ in rows:
        text = (battle.text_a if side == "a" else battle.text_b) or ""
        needle = _letters(sentence)
        if not needle or not any(needle in _letters(t) for t in (text, present(text, style))):
            raise ArenaError(f"Cannot record the vote: the sentence flagged in {side.upper()} "
                             f"(“{sentence[:60]}”) is not in {side.upper()}'s text: flag it again.")
    return rows


def stored_votes(store: Store, kind: str, key: str, since: float) -> list[float]:
    """The times (epoch seconds) of the stored votes of an annotator or from an address since
    ``since``: what VoteLimits counts in every process on the database."""
    stamp = datetime.fromtimestamp(since, UTC).isoformat(timespec="milliseconds")
    return [datetime.fromisoformat(t).timestamp() for t in arena.vote_times(store, stamp, **{kind: key})]


def check_quota(campaigns: Campaigns, campaign_name: str | None, annotator: str) -> None:
    """Raises ArenaError when the battle is of campaign ``campaign_name`` (None: the open arena)
    and ``annotator`` has cast its quota already (e.g. from a second tab), StoreError."""
    campaign = campaigns.get(campaign_name) if campaign_name else None
    quota = campaign.quota if campaign else None
    if quota is not None and campaigns.votes_of(campaign.name, annotator) >= quota:
        raise ArenaError(f"You have cast your {quota} votes in campaign “{campaign.name}”: this one is not "
                         "counted. Thank you!")


def check_day(store: Store, annotator: str, cap: int, midnight: Callable[[], str]) -> None:
    """Raises ArenaError when ``annotator`` has cast ``cap`` votes that count since the server's
    ``midnight()`` (no cap at 0), StoreError."""
    if cap and sum(v.created >= midnight() for v in arena.counted_votes(store, annotator)) >= cap:
        raise ArenaError(f"You have cast {cap} votes today, as many as one annotator may in a day "
                         "(--votes-per-day): thank you! Vote again tomorrow.")
