"""What the arena hands an annotator's front end: a battle as ``Shown`` before the vote (no method
names: the arena is blind by construction), the ``Reveal`` once the vote is stored, and their
``Progress``. Plain values, apart from ``annotation.voting.arena`` that makes them, so a front end
that renders them needs nothing else of the arena."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.present import SOURCES as SOURCES_STYLE


@dataclass(frozen=True)
class Shown:
    """What an annotator may see of a battle before voting: no method names; how both texts are
    to be shown (``style``: its campaign's, else the arena's ``--arena-style``), and the campaign
    it belongs to (None: the open arena), with the criteria its vote also answers, A/B/tie each
    (empty: the overall vote only)."""

    battle_id: int
    task: str
    text_a: str
    text_b: str
    style: str = SOURCES_STYLE
    campaign: str | None = None
    criteria: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reveal:
    """Who wrote A and B, and the vote cast: only returned once the vote is stored."""

    battle_id: int
    method_a: str
    method_b: str
    choice: str


@dataclass(frozen=True)
class Progress:
    """An annotator's votes that count (undone ones do not): cast ``today`` (since the server's
    midnight) and in all (``total``); about how many pairs are ``left`` for them (fresh pairs they
    were never shown, and the ones they skipped); their ``quota`` of votes, when they have one."""

    today: int
    total: int
    left: int
    quota: int | None = None
    campaign: str | None = None  # the campaign these count in (None: the open arena, all votes)
