"""The arena's three rooms of one process, as app.py builds them and the UI's arena tabs take
them: the annotators' side, what the votes say, and the study admin's work (``annotation``)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.admin.admin import Admin
from annotation.results.results import Results
from annotation.voting.arena import Arena


@dataclass(frozen=True)
class ArenaRooms:
    """One of each per process: ``results`` keeps the leaderboards' cache, ``arena`` the live
    tallies and what each annotator was shown."""

    arena: Arena
    results: Results
    admin: Admin

    @classmethod
    def of(cls, arena: Arena) -> ArenaRooms:
        """The rooms around ``arena``: its Results, and an Admin of both."""
        results = Results(arena)
        return cls(arena, results, Admin(arena, results))
