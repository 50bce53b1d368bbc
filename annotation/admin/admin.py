"""The study admin's work on the arena: campaigns' numbers, corrections of votes, gold pairs,
the LLM judge, and the imports and exports of votes and outputs (``annotation.admin.records``;
whole datasets: ``annotation.admin.dataset``). The command line and the admin's pages call it;
the annotators' side (``annotation.voting``) never does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from annotation.admin import judge as judge_mod
from annotation.admin.drb import read_reports
from annotation.admin.records import read_outputs, read_votes
from annotation.campaigns import CampaignProgress
from annotation.errors import ArenaError
from data import arena

if TYPE_CHECKING:
    from annotation.results.results import Results
    from annotation.voting.arena import Arena


class Admin:
    def __init__(self, arena_service: Arena, results: Results):
        """``arena_service``: the annotators' side (its store, campaigns, outputs, text, style and
        renderer); ``results``: what the votes say (forgotten when a gold pair changes the flags)."""
        self.arena = arena_service
        self.results = results
        self.store = arena_service.store
        self.campaigns = arena_service.campaigns

    @property
    def text(self) -> str:
        """Which text of a finished run annotators and the judge see (``--arena-text``)."""
        return self.arena.text

    @property
    def style(self) -> str:
        """How both sides are shown (``--arena-style``)."""
        return self.arena.style

    def check_task_set(self, task_set: str | None) -> None:
        """``Results.check_task_set``."""
        self.results.check_task_set(task_set)

    # -- campaigns ---------------------------------------------------------------------------

    def campaign_shortfall(self, name: str) -> str:
        """Why campaign ``name`` can never get all the votes it needs, with the numbers ("" when it
        can, or when who may vote is not known in advance: anyone, or a study's link). Raises
        ArenaError for an unknown one, StoreError."""
        campaign = self.campaigns.get(name)
        arena.sync_run_outputs(self.store, self.arena.text, self.arena.render)
        return campaign.shortfall(self.arena.outputs(campaign.task_set, space=True, methods=campaign.methods).total)

    def campaign_progress(self, name: str) -> CampaignProgress:
        """How far campaign ``name`` is (``Campaigns.progress``), its candidate pairs counted from
        the outputs of its task set and methods. Raises ArenaError for an unknown one, StoreError."""
        campaign = self.campaigns.get(name)
        arena.sync_run_outputs(self.store, self.arena.text, self.arena.render)
        space = self.arena.outputs(campaign.task_set, space=True, methods=campaign.methods)
        return self.campaigns.progress(name, space.total)

    # -- corrections and gold pairs ----------------------------------------------------------

    def correct(self, vote_id: int, choice: str, corrected_by: str, why: str) -> arena.CorrectionRow:
        """Supersede a people's vote with a correction (the vote stays as it was cast): ``choice``
        counts from now on (``void``: not at all). Returns the stored correction.
        Raises ArenaError for an unknown choice or a missing name or reason, StoreError for an
        unknown vote."""
        try:
            correction_id = arena.correct_vote(self.store, vote_id, choice, corrected_by, why)
        except ValueError as exc:
            raise ArenaError(f"Cannot correct vote {vote_id}: {exc}.") from None
        return next(c for c in arena.vote_corrections(self.store) if c.id == correction_id)

    def corrections(self) -> list[arena.CorrectionRow]:
        """Every correction of a vote, oldest first."""
        return arena.vote_corrections(self.store)

    def add_gold(self, output_a: int, output_b: int, better: str, added_by: str) -> arena.GoldPair:
        """Mark the better of two outputs of one task (``better``: a, the first, or b): a gold
        pair, shown to annotators now and then (``annotation.voting.pairing.GOLD_SHARE``); annotators
        who miss too many are flagged. Returns it. Raises ArenaError for a bad side, name or pair
        of outputs, StoreError."""
        try:
            gold_id = arena.add_gold_pair(self.store, output_a, output_b, better, added_by)
        except ValueError as exc:
            raise ArenaError(f"Cannot add the gold pair: {exc}.") from None
        self.results.forget()  # the flags, and the leaderboards without the flagged, change now
        return next(g for g in arena.gold_pairs(self.store) if g.id == gold_id)

    def gold_pairs(self) -> list[arena.GoldPair]:
        """Every gold pair as its newest mark says, oldest first. Raises StoreError."""
        return arena.gold_pairs(self.store)

    def listed_outputs(self) -> list[arena.OutputText]:
        """The outputs annotators are shown (each task's and method's newest, of ``text``) with
        their ids, tasks and texts, for an admin choosing gold pairs. Raises StoreError."""
        arena.sync_run_outputs(self.store, self.arena.text, self.arena.render)
        return arena.latest_outputs(self.store, text=self.arena.text)

    # -- the LLM judge ----------------------------------------------------------------------

    async def judge(self, new_llm: Callable[[], Any], model: str, *, methods: Sequence[str] | None = None,
                    n: int = judge_mod.N_CALLS,
                    on_progress: Callable[[int, int, str], None] | None = None) -> judge_mod.Report:
        """Let the LLM judge compare the pairs ``model`` has not judged yet (see
        ``annotation.admin.judge.judge_store``), shown as annotators see them (``style``). Raises the
        fatal LLM errors, StoreError."""
        return await judge_mod.judge_store(self.store, new_llm, model, methods=methods, n=n, on_progress=on_progress,
                                           text=self.arena.text, style=self.arena.style, render=self.arena.render)

    # -- imports and exports ----------------------------------------------------------------

    def import_votes(self, path: str) -> arena.VotesImported:
        """Add the votes of a JSONL file (checked whole first, then written in batches); returns
        VotesImported(added, already present, corrections appended).
        Raises ImportFormatError naming the bad line (nothing is imported), StoreError."""
        return arena.import_votes(self.store, read_votes(path))

    def import_outputs(self, path: str) -> tuple[int, int]:
        """Add the outputs of a JSONL file in one transaction; returns (added, already present).
        Raises ImportFormatError naming the bad line (nothing is imported), StoreError."""
        return arena.import_outputs(self.store, read_outputs(path))

    def import_reports(self, path: str, method: str | None) -> tuple[int, int]:
        """DeepResearch Bench reports (``annotation.admin.drb``) as outputs of ``method``, in one
        transaction. Returns (added, already present). Raises ImportFormatError naming the line,
        ArenaError for a missing --method, StoreError."""
        return arena.import_outputs(self.store, read_reports(path, method))

    def export_votes(self) -> Iterator[dict]:
        """People's votes in the order they were recorded, as ``import_votes`` reads them."""
        return arena.export_votes(self.store)
