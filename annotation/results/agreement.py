"""How far annotators agree when several vote on the same pair of outputs (issue 24, item 2).

A *unit* is one pair of outputs of one task: the two sides are (method, output id), in a fixed
order (sorted), whichever was shown as A; a vote imported without its texts has no output ids and
its unit is the task's pair of methods. Each vote becomes one of four nominal values oriented to
that order: the first side wins, the second wins, ``tie``, ``both_bad`` (a vote that saw the pair
the other way round has ``a`` and ``b`` swapped). An annotator who voted on a unit more than once
counts with their latest vote there. Votes are the people's that count now (a corrected vote with
its newest choice, a voided one left out).

- Overall: Krippendorff's alpha at the nominal level (the ``krippendorff`` package) over the
  units that two or more annotators voted on; 1 is perfect agreement, 0 what chance gives, below
  0 systematic disagreement. None when it is undefined (no such unit, or every such vote the same).
- Per annotator: their *agreement rate with the majority of the others*: over the units they
  share with other annotators whose most frequent value is a single one (a tie between the
  others' values leaves the unit out), how often their value is that one.

``inter_annotator`` is pure (any records with the attributes of ``data.arena.PairVote``);
``people_agreement`` reads the store's votes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import krippendorff
import numpy as np

from data import arena

#: The nominal values, oriented to a unit's sorted sides: "a" is the first side winning.
VALUES = ("a", "b", "tie", "both_bad")
_SWAPPED = {"a": "b", "b": "a"}


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator's agreement with the majority of the others: ``shared`` units where the
    others have a single most frequent value, ``agreed`` of them where this annotator chose it;
    ``rate`` is agreed / shared (None when nothing is shared)."""

    annotator: str
    shared: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return self.agreed / self.shared if self.shared else None


@dataclass(frozen=True)
class PeopleAgreement:
    """Krippendorff's alpha (nominal) over the ``units`` (output pairs) that two or more
    annotators voted on, from their ``votes`` there; and each annotator's agreement rate with the
    others' majority, by name."""

    alpha: float | None
    units: int
    votes: int
    annotators: tuple[AnnotatorAgreement, ...]

    def as_json(self) -> dict[str, Any]:
        """What ``leaderboard --json`` writes under ``agreement_people``."""
        return {"alpha": self.alpha, "level": "nominal", "units": self.units, "votes": self.votes,
                "per_annotator": "agreement rate with the majority of the other annotators on shared pairs",
                "annotators": [{**asdict(a), "rate": a.rate} for a in self.annotators]}

    def summary(self) -> str:
        """One line for the leaderboard ("" when no pair was voted on by two annotators)."""
        if not self.units:
            return ""
        alpha = "undefined (every vote the same)" if self.alpha is None else f"{self.alpha:.2f}"
        return (f"Agreement between annotators: Krippendorff's alpha {alpha} over {self.units} output pair(s) "
                f"voted on by two or more ({self.votes} votes).")


def oriented(vote: arena.PairVote) -> tuple[tuple, str]:
    """(the vote's unit, its value oriented to the unit's sorted sides). The unit is the task and
    the two sides, (method, output id), sorted; a vote that showed the second side as A has its
    ``a`` and ``b`` swapped."""
    shown = ((vote.method_a, _key(vote.output_a)), (vote.method_b, _key(vote.output_b)))
    sides = tuple(sorted(shown))
    choice = vote.choice if shown == sides else _SWAPPED.get(vote.choice, vote.choice)
    return (vote.task_id, *sides), choice


def _key(output_id: int | None) -> int:
    return -1 if output_id is None else output_id  # sortable beside real ids


def inter_annotator(votes: Iterable[arena.PairVote]) -> PeopleAgreement:
    """The agreement of the annotators' ``votes`` (in the order they were cast; a later vote of
    the same annotator on the same unit replaces theirs). Raises ValueError for a choice not in
    VALUES."""
    by_unit: dict[tuple, dict[str, int]] = {}
    for vote in votes:
        unit, choice = oriented(vote)
        if choice not in VALUES:
            raise ValueError(f"choice must be one of {', '.join(VALUES)}, not {choice!r}")
        by_unit.setdefault(unit, {})[vote.annotator] = VALUES.index(choice)
    shared = [coded for coded in by_unit.values() if len(coded) >= 2]
    rows = [[0] * len(VALUES) for _ in shared]
    for row, coded in zip(rows, shared, strict=True):
        for value in coded.values():
            row[value] += 1
    counts = np.array(rows, dtype=np.int64).reshape(len(rows), len(VALUES))
    return PeopleAgreement(alpha=nominal_alpha(counts), units=len(shared), votes=int(counts.sum()),
                           annotators=_with_majority(shared, rows))


def nominal_alpha(counts: np.ndarray) -> float | None:
    """Krippendorff's alpha, nominal, from a units x values table of how many annotators chose
    each value; None when undefined (no unit, or a single value in all of them)."""
    if counts.shape[0] == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    return float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))


def _with_majority(shared: list[dict[str, int]], rows: list[list[int]]) -> tuple[AnnotatorAgreement, ...]:
    """Each annotator's agreement with the single most frequent value of the others, by name."""
    tally: dict[str, list[int]] = {}
    for coded, row in zip(shared, rows, strict=True):
        for name, value in coded.items():
            others = list(row)
            others[value] -= 1
            top = max(others)
            seen = tally.setdefault(name, [0, 0])
            if others.count(top) == 1:
                seen[0] += 1
                seen[1] += others.index(top) == value
    return tuple(AnnotatorAgreement(name, n, agreed) for name, (n, agreed) in sorted(tally.items()))


def people_agreement(store, task_set: str | None = None, campaign: str | None = None) -> PeopleAgreement:
    """The agreement of the people's votes in ``store`` (of one task set, when given). Raises
    StoreError."""
    return inter_annotator(arena.pair_votes(store, task_set, campaign))
