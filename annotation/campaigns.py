"""Annotation campaigns as one service: a named campaign is a task set, the methods compared, how
both outputs are shown (``annotation.present.STYLES``), the overlap (each pair of outputs voted on
by that many annotators), a quota of votes per annotator and who may vote. Front ends call this
(and ``Arena``, which assigns a campaign's pairs: ``annotation.voting.pairing.next_campaign_battle``),
never ``data.campaigns``.

    campaigns = Campaigns(store)
    campaigns.create("pilot", task_set="bundled", methods=["cot", "rat"], style="plain", overlap=3,
                     quota=20, voters=["ana", "study:prolific-1"], by="lee")
    campaigns.change("pilot", quota=30, by="lee")      # a new row: the old settings stay on record
    campaigns.close("pilot", by="lee")                  # no new pairs; votes and progress stay
    campaigns.progress("pilot")                          # pairs, complete pairs, votes per annotator

Criteria (issue 40): a campaign may ask, besides the overall vote, one A/B/tie choice per named
criterion (``criteria``; ``BENCH_CRITERIA``, DeepResearch Bench's four, when asked for without
names); each vote cast in it then carries them all (``Arena.vote`` refuses a vote with one
missing), and each criterion has its own leaderboard (``Results.criterion_boards``).

Who may vote: ``voters`` names accounts, and ``study:NAME`` every account made by that study's
invite link (``annotators invite --study NAME``); no voters: everyone who can open the arena.
An annotator whom an open campaign admits gets that campaign's pairs (the oldest campaign with
work left for them first) and no others; the open arena is for those no open campaign admits.

Settings are append-only (``data.campaigns``): every change is a new row with who made it, so
what a campaign was when each vote was cast stays on record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from annotation.errors import ArenaError
from annotation.present import PLAIN, STYLES
from common.errors import StoreError
from data import accounts as account_rows
from data import arena
from data import campaigns as rows
from data.store import Store

MAX_NAME = 64
MAX_OVERLAP = 50
STUDY = "study:"  # a voters entry that admits every account of an invite study
#: DeepResearch Bench's criteria (its RACE dimensions), a campaign's criteria when asked for by default.
BENCH_CRITERIA = ("Comprehensiveness", "Insight/depth", "Instruction following", "Readability")
MAX_CRITERIA = 8  # criteria per campaign: each is a row of keys to answer for every pair
MAX_CRITERION = arena.MAX_CRITERION
#: A pair shown to an annotator and not voted on yet counts toward its overlap for this many
#: seconds (it is on their screen); after that another annotator may be given it.
RESERVE_SECONDS = 20 * 60


@dataclass(frozen=True)
class Campaign:
    """A campaign's settings as they hold now (``created``: since when; ``started``: when it was made)."""

    name: str
    task_set: str | None
    methods: tuple[str, ...]
    style: str
    overlap: int
    quota: int | None
    voters: tuple[str, ...]
    status: str
    changed_by: str
    created: str
    started: str
    criteria: tuple[str, ...] = ()  # one A/B/tie choice each, with every vote (empty: the overall vote only)

    @property
    def is_open(self) -> bool:
        return self.status == rows.OPEN

    def admits(self, annotator: str, study: str | None = None) -> bool:
        """Whether ``annotator`` (of invite ``study``, if any) may vote in it (open or not)."""
        return not self.voters or annotator in self.voters or (study is not None and STUDY + study in self.voters)

    def settings(self) -> str:
        """Its settings in one line, as the admin page, the CLI and a dataset card say them."""
        parts = [f"task set {self.task_set!r}" if self.task_set is not None else "every task set",
                 "methods " + ", ".join(self.methods) if self.methods else "every method",
                 f"shown {'plain' if self.style == PLAIN else 'with sources'}",
                 f"{self.overlap} annotator{'s' * (self.overlap != 1)} per pair",
                 f"quota {self.quota} votes each" if self.quota else "no quota",
                 "voters " + ", ".join(self.voters) if self.voters else "anyone may vote",
                 *(["criteria " + ", ".join(self.criteria)] if self.criteria else [])]
        return " · ".join(parts)

    def shortfall(self, pairs: int) -> str:
        """Why this campaign can never get the votes its ``pairs`` need (each ``overlap`` times),
        with the numbers and what to change; "" when it can, or when who may vote is not known in
        advance (anyone may, or a study's invite link admits them)."""
        if not self.voters or any(v.startswith(STUDY) for v in self.voters) or not pairs:
            return ""
        voters, needed = len(self.voters), pairs * self.overlap
        if voters < self.overlap:
            return (f"each pair needs {self.overlap} different annotators but only {voters} may vote: it can "
                    f"never finish; lower --overlap to {voters} or add voters (--voters)")
        if self.quota is not None and voters * self.quota < needed:
            at_least = -(-needed // voters)
            return (f"{voters} voter{'s' * (voters != 1)} x quota {self.quota} = {voters * self.quota} votes, but "
                    f"{pairs} pair{'s' * (pairs != 1)} x overlap {self.overlap} = {needed} are needed: it can never "
                    f"finish; raise --quota to {at_least}, add voters (--voters) or lower --overlap")
        return ""

    def as_json(self) -> dict:
        return {"name": self.name, "task_set": self.task_set, "methods": list(self.methods), "style": self.style,
                "overlap": self.overlap, "quota": self.quota, "voters": list(self.voters), "status": self.status,
                "changed_by": self.changed_by, "changed": self.created, "started": self.started,
                "criteria": list(self.criteria)}


def _campaign(row: rows.CampaignRow) -> Campaign:
    return Campaign(*row[1:])


@dataclass(frozen=True)
class AnnotatorProgress:
    """One annotator's votes in a campaign that count now (``today``: since the server's
    midnight), the newest vote's time, and the share of the campaign's quota cast (None: no quota)."""

    name: str
    votes: int
    today: int
    last: str
    quota: int | None

    @property
    def done(self) -> float | None:
        return min(1.0, self.votes / self.quota) if self.quota else None


@dataclass(frozen=True)
class CampaignProgress:
    """How far a campaign is: its candidate ``pairs`` (outputs of its tasks by two of its
    methods), the pairs with all ``overlap`` votes (``complete``) and with some (``started``), the
    votes that count, and each annotator's."""

    campaign: Campaign
    pairs: int
    complete: int
    started: int
    votes: int
    annotators: list[AnnotatorProgress] = field(default_factory=list)

    @property
    def needed(self) -> int:
        """Votes the campaign needs in all: every pair ``overlap`` times."""
        return self.pairs * self.campaign.overlap

    @property
    def done(self) -> float | None:
        """The share of the votes needed that were cast (None: no pair yet)."""
        return min(1.0, self.votes / self.needed) if self.needed else None

    def as_json(self) -> dict:
        return {**self.campaign.as_json(), "pairs": self.pairs, "complete_pairs": self.complete,
                "started_pairs": self.started, "votes": self.votes, "votes_needed": self.needed,
                "annotators": [{"name": a.name, "votes": a.votes, "today": a.today, "last": a.last,
                                "quota": a.quota} for a in self.annotators]}


class Campaigns:
    """The campaigns of one store. ``clock``: wall-clock seconds (the reservation of a shown pair,
    "today"); tests replace it."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time):
        self.store = store
        self.clock = clock

    # -- settings ---------------------------------------------------------------------------
    def create(self, name: str, *, task_set: str | None = None, methods: Sequence[str] = (), style: str = PLAIN,
               overlap: int = 1, quota: int | None = None, voters: Sequence[str] = (), by: str = "admin",
               criteria: Sequence[str] = ()) -> Campaign:
        """Make campaign ``name`` (open); ``criteria``: what each vote also answers, A/B/tie per
        criterion (e.g. BENCH_CRITERIA). Raises ArenaError naming the fix for a bad setting or a
        taken name, StoreError."""
        name = _check_name(name)
        checked = self._checked(task_set=task_set, methods=methods, style=style, overlap=overlap, quota=quota,
                                voters=voters, criteria=criteria)
        try:
            rows.add_row(self.store, name, **checked, status=rows.OPEN, changed_by=_check_by(by), new=True)
        except StoreError as exc:
            raise ArenaError(str(exc)) from None
        return self.get(name)

    def change(self, name: str, *, by: str = "admin", **changes: object) -> Campaign:
        """Change some of campaign ``name``'s settings (``task_set``, ``methods``, ``style``,
        ``overlap``, ``quota``, ``voters``, ``criteria``, ``status``): a new row, the old one stays on record.
        Raises ArenaError for an unknown campaign or setting or a bad value, StoreError."""
        old = self.get(name)
        unknown = sorted(set(changes) - {"task_set", "methods", "style", "overlap", "quota", "voters", "criteria",
                                         "status"})
        if unknown:
            raise ArenaError(f"A campaign has no setting {', '.join(unknown)}.")
        status = changes.pop("status", old.status)
        if status not in rows.STATUSES:
            raise ArenaError(f"A campaign is {' or '.join(rows.STATUSES)}, not {status!r}.")
        merged = {"task_set": old.task_set, "methods": old.methods, "style": old.style, "overlap": old.overlap,
                  "quota": old.quota, "voters": old.voters, "criteria": old.criteria, **changes}
        checked = self._checked(**merged)  # type: ignore[arg-type]
        rows.add_row(self.store, name, **checked, status=str(status), changed_by=_check_by(by), new=False)
        return self.get(name)

    def close(self, name: str, *, by: str = "admin") -> Campaign:
        """No new pairs from campaign ``name`` (its votes, progress and leaderboard stay)."""
        return self.change(name, by=by, status=rows.CLOSED)

    def reopen(self, name: str, *, by: str = "admin") -> Campaign:
        return self.change(name, by=by, status=rows.OPEN)

    def list(self) -> list[Campaign]:
        """Every campaign as it is now, oldest first. Raises StoreError."""
        return [_campaign(r) for r in rows.current(self.store)]

    def names(self) -> list[str]:
        return [c.name for c in self.list()]

    def get(self, name: str) -> Campaign:
        """Campaign ``name`` as it is now. Raises ArenaError naming the campaigns there are."""
        for c in self.list():
            if c.name == name:
                return c
        known = ", ".join(repr(n) for n in self.names()) or "none yet"
        raise ArenaError(f"No campaign {name!r}; campaigns: {known} (`python app.py campaign create NAME` makes one).")

    def history(self, name: str) -> list[Campaign]:
        """Every setting campaign ``name`` has had, oldest first. Raises ArenaError for an unknown one."""
        found = rows.history(self.store, name)
        if not found:
            self.get(name)  # raises, naming the known ones
        return [_campaign(r) for r in found]

    def for_annotator(self, annotator: str) -> list[Campaign]:
        """The open campaigns ``annotator`` may vote in, oldest first (empty: the open arena is
        theirs). Raises StoreError."""
        open_ = [c for c in self.list() if c.is_open]
        if not open_:
            return []
        study = None
        if any(v.startswith(STUDY) for c in open_ for v in c.voters):
            account = account_rows.get_account(self.store, annotator)
            study = account.study if account is not None else None
        return [c for c in open_ if c.admits(annotator, study)]

    def _checked(self, *, task_set: str | None, methods: Iterable[str], style: str, overlap: object,
                 quota: object, voters: Iterable[str], criteria: Iterable[str] = ()) -> dict:
        """The settings as stored. Raises ArenaError naming the fix (the CLI's flag) for a bad one."""
        if style not in STYLES:
            raise ArenaError(f"Unknown style {style!r}: use one of {', '.join(STYLES)} (--style).")
        if isinstance(overlap, bool) or not isinstance(overlap, int) or not 1 <= overlap <= MAX_OVERLAP:
            raise ArenaError(f"The overlap is how many annotators vote on each pair: a whole number from 1 to "
                             f"{MAX_OVERLAP}, not {overlap!r} (--overlap).")
        if quota is not None and (isinstance(quota, bool) or not isinstance(quota, int) or quota < 1):
            raise ArenaError(f"The quota is votes per annotator: a whole number of at least 1, not {quota!r} "
                             "(--quota; leave it out for none).")
        if task_set is not None and task_set not in arena.task_sets(self.store):
            known = ", ".join(repr(s) for s in arena.task_sets(self.store) if s) or "none yet"
            raise ArenaError(f"No task set {task_set!r}; task sets: {known} (--task-set; leave it out for every "
                             "task set).")
        methods = list(dict.fromkeys(m.strip() for m in methods if m.strip()))
        if len(methods) == 1:
            raise ArenaError("A campaign compares at least two methods: name two or more (--methods), or none for "
                             "every method.")
        known_methods = arena.methods(self.store)
        unknown = [m for m in methods if m not in known_methods]
        if unknown:
            raise ArenaError(f"No output of method {', '.join(unknown)} in the arena; methods: "
                             f"{', '.join(known_methods) or 'none yet'} (--methods).")
        voters = list(dict.fromkeys(v.strip() for v in voters if v.strip()))
        too_long = [v for v in voters if len(v) > MAX_NAME + len(STUDY)]
        if too_long:
            raise ArenaError(f"A voter is an account's name or study:NAME, not {too_long[0][:80]!r} (--voters).")
        return {"task_set": task_set, "methods": methods, "style": style, "overlap": overlap, "quota": quota,
                "voters": voters, "criteria": check_criteria(criteria)}

    # -- progress ---------------------------------------------------------------------------
    def votes_of(self, name: str, annotator: str) -> int:
        """``annotator``'s votes in campaign ``name`` that count now. Raises StoreError."""
        return rows.votes_of(self.store, name, annotator)

    def held(self, name: str) -> dict[frozenset[int], set[str]]:
        """Each pair of outputs shown in campaign ``name`` -> who holds it: a vote that counts, or
        the pair on their screen since less than RESERVE_SECONDS. Raises StoreError."""
        since = datetime.fromtimestamp(self.clock() - RESERVE_SECONDS, UTC).isoformat(timespec="milliseconds")
        return rows.coverage(self.store, name, since)

    def progress(self, name: str, pairs: int) -> CampaignProgress:
        """Campaign ``name``'s progress; ``pairs``: its candidate pairs (the caller counts them from
        the outputs, ``Arena.campaign_progress``). Raises ArenaError for an unknown campaign, StoreError."""
        campaign = self.get(name)
        voted = rows.coverage(self.store, name)  # votes that count only
        complete = sum(len(who) >= campaign.overlap for who in voted.values())
        people = [AnnotatorProgress(r.annotator, r.votes, r.since, r.last, campaign.quota)
                  for r in rows.annotator_counts(self.store, name, self._midnight())]
        return CampaignProgress(campaign, pairs, complete, len(voted) - complete, sum(p.votes for p in people),
                                people)

    def annotator_progress(self, name: str, annotator: str) -> AnnotatorProgress:
        """``annotator``'s votes in campaign ``name`` (none yet: zeros). Raises ArenaError for an
        unknown campaign, StoreError."""
        campaign = self.get(name)
        found = rows.annotator_counts(self.store, name, self._midnight(), only=annotator)
        r = found[0] if found else rows.AnnotatorCount(annotator, 0, 0, "")
        return AnnotatorProgress(r.annotator, r.votes, r.since, r.last, campaign.quota)

    def _midnight(self) -> str:
        """The server's last midnight, as votes store their time (the start of "today")."""
        midnight = datetime.fromtimestamp(self.clock()).replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight.astimezone(UTC).isoformat(timespec="milliseconds")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME:
        raise ArenaError(f"A campaign's name is 1 to {MAX_NAME} characters, not {str(name)[:80]!r}.")
    if any(not ch.isprintable() for ch in name):
        raise ArenaError("A campaign's name has no control characters: type it again.")
    return name.strip()


def check_criteria(criteria: Iterable[str]) -> list[str]:
    """A campaign's criteria as stored: names stripped, each once (in any case), at most
    MAX_CRITERIA. Raises ArenaError naming the fix (--criteria)."""
    if isinstance(criteria, str):
        criteria = [criteria]
    names: list[str] = []
    for raw in criteria:
        name = str(raw).strip()
        if not name:
            continue
        if len(name) > MAX_CRITERION or any(not ch.isprintable() for ch in name):
            raise ArenaError(f"A criterion is named by 1 to {MAX_CRITERION} printable characters, not "
                             f"{name[:80]!r} (--criteria).")
        if name.casefold() not in {n.casefold() for n in names}:
            names.append(name)
    if len(names) > MAX_CRITERIA:
        raise ArenaError(f"A campaign asks at most {MAX_CRITERIA} criteria (each is a row to answer for every "
                         f"pair), not {len(names)} (--criteria).")
    return names


def _check_by(by: object) -> str:
    if not isinstance(by, str) or not by.strip():
        raise ArenaError("Say who makes the change (--by NAME).")
    return by.strip()[:MAX_NAME]
