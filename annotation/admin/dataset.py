"""The arena's outputs and people's votes as a Hugging Face dataset (``python app.py dataset
export DIR`` / ``dataset import DIR``): a folder that ``datasets.load_dataset(DIR, "votes")``
loads as it is, and that can be pushed to the Hub as it is::

    DIR/README.md               the dataset card: a YAML header (``configs``, ``license``,
                                ``task_categories``) and what was exported, in words
    DIR/votes/train.parquet     one flat row per people's vote (VOTE_COLUMNS)
    DIR/outputs/train.parquet   one row per output (OUTPUT_COLUMNS)
    DIR/judge_votes/train.parquet  one row per pair the LLM judge judged (JUDGE_COLUMNS), kept
                                apart from people's votes
    DIR/campaigns/train.parquet one row per campaign's settings, each change a row (CAMPAIGN_COLUMNS)

(``.jsonl`` instead of ``.parquet`` with ``--format jsonl``.) Each table is a config of one
``train`` split, declared in the card's ``configs:`` as the Hub reads it; a table with no row is
left out. Annotators are pseudonymised by default (``pseudonym``: a stable hash of the name).
With a campaign (``--campaign NAME``) only the votes cast in it and the outputs of its task set
and methods are exported, and the card states its settings and numbers (YAML ``campaign:``); the
judge has no campaign, so its votes on that task set and those methods go with them.

The import reads such a folder back through the arena's own import paths
(``annotation.admin.records``' line models, ``data.arena.import_outputs``/``import_votes``), votes'
corrections included, and the judge's votes through ``data.dataset.import_judge_votes``, so the
restored leaderboards (people's and the judge's) are the exported ones; the campaigns first
(``data.campaigns.import_rows``), so each vote is in its campaign again and ``leaderboard
--campaign`` reads the same after a restore (issue 38, F34)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from annotation.admin.admin import Admin
from annotation.admin.records import (
    ISO_TIME,
    NON_EMPTY,
    OUTPUT_EXAMPLE,
    VOTE_EXAMPLE,
    Name,
    OutputLine,
    Text,
    Time,
    VoteLine,
    _TaskLine,
)
from annotation.campaigns import STUDY, CampaignProgress
from annotation.errors import ArenaError, ImportFormatError
from core.jsonl import BadText, check_text, line_error, read_jsonl
from data import arena
from data import campaigns as campaign_rows
from data import dataset as rows_of

FORMATS = (PARQUET, JSONL) = ("parquet", "jsonl")
SPLIT = "train"
LICENSE_PLACEHOLDER = "unknown"  # the card's license until the user sets theirs
STYLE_WORDS = {"sources": "each output's citations and sources in one house style",
               "plain": "citation marks and source lists taken away"}
TEXT_WORDS = {arena.LATEST: "the author's latest version of a run's article, else the method's own text",
              arena.MODEL: "the method's own text"}


@dataclass(frozen=True)
class Column:
    name: str
    type: type  # int, str or bool
    about: str


OUTPUT_COLUMNS = (
    Column("output_id", int, "the output's id (votes' output_a_id and output_b_id name it)"),
    Column("task_id", int, "the task's id"),
    Column("prompt", str, "the task, as every method was given it"),
    Column("kind", str, "the task's kind: writing, plan or qa"),
    Column("task_set", str, "the task's set (empty: none)"),
    Column("method", str, "the method or system that wrote it"),
    Column("text", str, "the text as stored (annotators saw it in the arena's style, above)"),
    Column("source", str, "run (a finished run of the app) or import (imported text)"),
    Column("run_id", str, "the run it comes from (empty for an imported text)"),
    Column("version", int, "the author's version of the run's article it holds (empty: the model's text)"),
    Column("created", str, "when it was stored (ISO date-time)"),
    Column("current", bool, "whether the arena pairs it now: false for a run's older texts, kept for the "
                            "votes that showed them"),
)
VOTE_COLUMNS = (
    Column("vote_id", int, "the vote's id"),
    Column("battle_id", int, "the id of the pair shown"),
    Column("task_id", int, "the task's id"),
    Column("prompt", str, "the task"),
    Column("kind", str, "the task's kind: writing, plan or qa"),
    Column("task_set", str, "the task's set (empty: none)"),
    Column("method_a", str, "the method shown as A"),
    Column("method_b", str, "the method shown as B"),
    Column("output_a_id", int, "the output shown as A (empty for a vote imported without texts)"),
    Column("output_b_id", int, "the output shown as B"),
    Column("output_a", str, "the text shown as A"),
    Column("output_b", str, "the text shown as B"),
    Column("winner", str, "the choice as cast: a, b, tie or both_bad"),
    Column("correction", str, "the vote's newest correction, which counts instead: a, b, tie, both_bad or "
                              "void (does not count; also an undone vote); empty: uncorrected"),
    Column("corrected_by", str, "who corrected it"),
    Column("correction_why", str, "why"),
    Column("correction_created", str, "when (ISO date-time)"),
    Column("counts_as", str, "what the leaderboard counts: the correction, else the winner"),
    Column("annotator", str, "who voted"),
    Column("comment", str, "the annotator's comment, if any"),
    Column("flag", str, "the annotator's flag on an output, if any: a_broken, a_empty, a_off_task, b_..."),
    Column("shown", str, "when the pair was shown (ISO date-time)"),
    Column("created", str, "when the vote was cast (ISO date-time)"),
    Column("source", str, "arena (cast here) or import (imported votes)"),
    Column("campaign", str, "the campaign it was cast in (empty: the open arena, or imported)"),
    Column("criteria", str, "the annotator's choice on each criterion of its campaign, as a JSON object "
                            "(criterion -> a, b or tie; they count while the vote counts); empty: none asked"),
    Column("sentence_flags", str, "the sentences the annotator flagged with the vote, as a JSON list of {side: a or "
                                  "b, sentence, kind: unsupported or wrong}; empty: none"),
)
JUDGE_COLUMNS = (
    Column("judge_vote_id", int, "the judge vote's id"),
    Column("task_id", int, "the task's id"),
    Column("prompt", str, "the task"),
    Column("kind", str, "the task's kind: writing, plan or qa"),
    Column("task_set", str, "the task's set (empty: none)"),
    Column("method_a", str, "the method shown to the judge as A"),
    Column("method_b", str, "the method shown as B"),
    Column("output_a_id", int, "the output shown as A (empty: the judged pair names none)"),
    Column("output_b_id", int, "the output shown as B"),
    Column("output_a", str, "the text shown as A, as stored in outputs"),
    Column("output_b", str, "the text shown as B, as stored in outputs"),
    Column("choice", str, "the judge's choice: a, b or tie (the majority of its n calls)"),
    Column("n", int, "how many times the judge was asked"),
    Column("model", str, "the judge model"),
    Column("created", str, "when it was stored (ISO date-time)"),
    Column("detail", str, "the calls' answers, as JSON text"),
)
CAMPAIGN_COLUMNS = (
    Column("name", str, "the campaign's name (votes' campaign names it)"),
    Column("task_set", str, "the task set it covers (empty: every task)"),
    Column("methods", str, "the methods it compares, as a JSON list (empty list: every method)"),
    Column("style", str, "how outputs were shown: sources or plain"),
    Column("overlap", int, "annotators per pair of outputs"),
    Column("quota", int, "votes per annotator (empty: none)"),
    Column("voters", str, "who may vote, as a JSON list (empty list: anyone; a study's participants as study:NAME)"),
    Column("status", str, "open or closed"),
    Column("changed_by", str, "who made this row"),
    Column("created", str, "from when this row's settings held (ISO date-time); a campaign's first row is when "
                           "it started"),
    Column("criteria", str, "the criteria each vote also answered, A/B/tie each, as a JSON list (empty list: the "
                            "overall vote only)"),
)
TABLES = {"votes": VOTE_COLUMNS, "outputs": OUTPUT_COLUMNS, "judge_votes": JUDGE_COLUMNS,
          "campaigns": CAMPAIGN_COLUMNS}
M = TypeVar("M", VoteLine, OutputLine, "_DatasetJudgeVote", "_DatasetCampaign")
CAMPAIGN_EXAMPLE = ('{"name": "pilot", "task_set": "animals", "methods": "[\\"rat\\", \\"cot\\"]", "style": "plain", '
                    '"overlap": 3, "quota": null, "voters": "[]", "status": "open", "changed_by": "lee", '
                    '"created": "2025-01-31T09:30:00+00:00"}')
JUDGE_EXAMPLE = ('{"prompt": "...", "method_a": "rat", "method_b": "cot", "choice": "a", "n": 3, "model": "...", '
                 '"created": "2025-01-31T09:30:00+00:00", "detail": "{}"}')


def pseudonym(name: str, salt: str = "") -> str:
    """A stable stand-in for ``name``: "anon-" and 12 hex digits of SHA-256 over ``salt`` and the
    name, the same in every export with the same salt. Without a salt, anyone who guesses a name
    can check the guess: a salt kept secret prevents that."""
    return "anon-" + hashlib.sha256(f"{salt}\n{name}".encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Summary:
    """What an export wrote: rows per table, the files (relative to the folder, per config), and
    what the card says."""

    directory: Path
    fmt: str
    task_set: str | None
    votes: int
    outputs: int
    annotators: int
    corrected: int
    voided: int
    methods: list[str]
    task_sets: list[str]
    style: str
    text: str
    names: bool
    salted: bool
    date: str
    files: dict[str, str]
    progress: CampaignProgress | None = None  # the campaign exported (voters pseudonymised unless names)
    judge_votes: int = 0
    judge_models: list[str] = field(default_factory=list)


# -- export -----------------------------------------------------------------------------------
def export_dataset(admin: Admin, directory: str | Path, *, task_set: str | None = None, fmt: str = PARQUET,
                   names: bool = False, salt: str = "", campaign: str | None = None) -> Summary:
    """Write every output, people's vote and LLM judge's vote (of ``task_set``; None: all) into
    ``directory`` (new, or empty) as ``fmt`` files with a dataset card. With ``campaign``: only the
    votes cast in it, and the outputs and judge's votes of its task set and methods, and the card
    states its settings and progress.
    Annotators (and who corrected a vote, and a campaign's voters) are ``pseudonym``s unless
    ``names``. The folder appears whole or not at all.
    Raises ArenaError for an unknown format, task set or campaign, a campaign with a task set, a
    folder that is not empty, nothing to export, Parquet without pyarrow, or a folder that cannot
    be written; StoreError."""
    if fmt not in FORMATS:
        raise ArenaError(f"Unknown format {fmt!r}: use --format parquet or --format jsonl.")
    if campaign is not None and task_set is not None:
        raise ArenaError("Give --campaign or --task-set, not both: a campaign's export holds the outputs of its own "
                         "task set.")
    admin.check_task_set(task_set)
    progress = admin.campaign_progress(campaign) if campaign is not None else None
    target = Path(directory)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ArenaError(f"{target} is not an empty folder: give a new folder to `dataset export` "
                         "(nothing is overwritten).")
    tables = {"votes": _votes(admin, task_set, names, salt, campaign), "outputs": _outputs(admin, task_set),
              "judge_votes": rows_of.judge_vote_rows(admin.store, task_set)}
    if progress is not None:
        tables["outputs"] = _campaign_outputs(admin, progress)
        tables["judge_votes"] = _campaign_judge_votes(admin, progress)
        progress = _anonymous(progress, names, salt)
    tables["campaigns"] = _campaigns(admin, task_set, campaign, tables["votes"], names, salt)
    if not any(tables.values()):
        where = (f"in campaign {campaign!r}" if campaign is not None else
                 f"in task set {task_set!r}" if task_set is not None else "in the arena")
        raise ArenaError(f"Nothing to export: no output and no vote {where}. Import outputs or vote first.")
    files = {name: f"{name}/{SPLIT}.{fmt}" for name, rows in tables.items() if rows}
    summary = _summary(admin, target, fmt, task_set, tables, files, names=names, salted=bool(salt),
                       progress=progress)
    _write_folder(target, lambda tmp: _write_all(tmp, tables, files, fmt, card(summary)))
    return summary


def _votes(admin: Admin, task_set: str | None, names: bool, salt: str, campaign: str | None) -> list[dict]:
    rows = rows_of.vote_rows(admin.store, task_set, campaign)
    criteria = rows_of.vote_criteria_rows(admin.store, task_set, campaign)
    flagged = rows_of.sentence_flag_rows(admin.store, task_set, campaign)
    for row in rows:
        row["counts_as"] = row["correction"] or row["winner"]
        chosen = criteria.get(row["vote_id"])
        row["criteria"] = json.dumps(chosen, ensure_ascii=False) if chosen else None
        marks = flagged.get(row["vote_id"])
        row["sentence_flags"] = json.dumps(marks, ensure_ascii=False) if marks else None
        if not names:
            row["annotator"] = pseudonym(row["annotator"], salt)
            if row["corrected_by"] is not None:
                row["corrected_by"] = pseudonym(row["corrected_by"], salt)
    return rows


def _campaigns(admin: Admin, task_set: str | None, campaign: str | None, votes: list[dict], names: bool,
               salt: str) -> list[dict]:
    """Every row of the campaigns in scope: the one exported (``campaign``), else those of
    ``task_set`` (None: all), and any an exported vote was cast in; voters and who changed a
    campaign as ``pseudonym``s unless ``names`` (a study stays named, as on the card)."""
    named = {row["campaign"] for row in votes if row["campaign"]}
    rows = []
    for c in campaign_rows.every_row(admin.store):
        if not (c.name in named or (campaign == c.name if campaign is not None else
                                    task_set is None or c.task_set == task_set)):
            continue
        row = {**c._asdict(), "methods": json.dumps(list(c.methods)), "voters": list(c.voters),
               "criteria": json.dumps(list(c.criteria), ensure_ascii=False)}
        if not names:
            row["voters"] = [v if v.startswith(STUDY) else pseudonym(v, salt) for v in row["voters"]]
            row["changed_by"] = pseudonym(row["changed_by"], salt)
        row["voters"] = json.dumps(row["voters"], ensure_ascii=False)
        rows.append(row)
    return rows


def _outputs(admin: Admin, task_set: str | None) -> list[dict]:
    """The outputs, each marked ``current`` as ``data.arena.arena_outputs`` would pair it under the
    arena's --arena-text: an imported text always; of a run, its newest output (latest) or its
    model's text (model)."""
    rows = rows_of.output_rows(admin.store, task_set)
    newest = {row["run_id"]: row["output_id"] for row in rows if row["run_id"] is not None}  # rows go oldest first
    for row in rows:
        if row["run_id"] is None:
            row["current"] = True
        elif admin.text == arena.MODEL:
            row["current"] = row["version"] is None
        else:
            row["current"] = newest[row["run_id"]] == row["output_id"]
    return rows


def _campaign_outputs(admin: Admin, progress: CampaignProgress) -> list[dict]:
    """``_outputs`` of the campaign's task set and methods (none named: every method)."""
    methods = set(progress.campaign.methods)
    return [r for r in _outputs(admin, progress.campaign.task_set) if not methods or r["method"] in methods]


def _campaign_judge_votes(admin: Admin, progress: CampaignProgress) -> list[dict]:
    """The judge's votes on the campaign's task set whose both methods are the campaign's (none
    named: every method). The judge has no campaign: these are the ones on what it covers."""
    methods = set(progress.campaign.methods)
    return [r for r in rows_of.judge_vote_rows(admin.store, progress.campaign.task_set)
            if not methods or {r["method_a"], r["method_b"]} <= methods]


def _anonymous(progress: CampaignProgress, names: bool, salt: str) -> CampaignProgress:
    """``progress`` with its campaign's voters that name accounts ``pseudonym``s (a study's name
    stays) and no per-annotator rows, unless ``names``."""
    if names:
        return progress
    voters = tuple(v if v.startswith(STUDY) else pseudonym(v, salt) for v in progress.campaign.voters)
    return replace(progress, campaign=replace(progress.campaign, voters=voters, changed_by=""), annotators=[])


def _summary(admin: Admin, target: Path, fmt: str, task_set: str | None, tables: dict[str, list[dict]],
             files: dict[str, str], *, names: bool, salted: bool, progress: CampaignProgress | None) -> Summary:
    votes, outputs, judged = tables["votes"], tables["outputs"], tables["judge_votes"]
    methods = {r["method"] for r in outputs} | {r[m] for r in [*votes, *judged] for m in ("method_a", "method_b")}
    return Summary(
        directory=target, fmt=fmt, task_set=task_set, votes=len(votes), outputs=len(outputs),
        annotators=len({r["annotator"] for r in votes}), corrected=sum(r["correction"] is not None for r in votes),
        voided=sum(r["counts_as"] == arena.VOID for r in votes), methods=sorted(methods),
        task_sets=sorted({r["task_set"] for r in [*votes, *outputs, *judged]}),
        style=progress.campaign.style if progress else admin.style, text=admin.text, names=names,
        salted=salted, date=datetime.now(UTC).strftime("%Y-%m-%d"), files=files, progress=progress,
        judge_votes=len(judged), judge_models=sorted({r["model"] for r in judged}))


def _write_folder(target: Path, write) -> None:
    """Run ``write(folder)`` on a new folder beside ``target``, then put it in ``target``'s place
    (an empty ``target`` is replaced): a failed export leaves nothing behind. Raises ArenaError."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        tmp.chmod(0o755)  # mkdtemp's folder is its owner's alone; a dataset is for sharing
    except OSError as exc:
        raise ArenaError(f"Cannot write {target}: {exc.strerror or exc}. Give a folder you may write to.") from exc
    try:
        write(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise ArenaError(f"Cannot write {target}: {exc.strerror or exc}. Give a folder you may write to.") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _write_all(folder: Path, tables: dict[str, list[dict]], files: dict[str, str], fmt: str, text: str) -> None:
    for name, relative in files.items():
        path = folder / relative
        path.parent.mkdir()
        columns = TABLES[name]
        rows = [{c.name: row.get(c.name) for c in columns} for row in tables[name]]
        (_write_parquet if fmt == PARQUET else _write_jsonl)(path, columns, rows)
    (folder / "README.md").write_text(text, encoding="utf-8")


def _pyarrow():
    """pyarrow and pyarrow.parquet. Raises ArenaError when pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ArenaError("Parquet needs pyarrow: `pip install -r requirements.txt`, or use --format jsonl.") from None
    return pa, pq


def _write_parquet(path: Path, columns: tuple[Column, ...], rows: list[dict]) -> None:
    pa, pq = _pyarrow()
    types = {int: pa.int64(), str: pa.string(), bool: pa.bool_()}
    schema = pa.schema([(c.name, types[c.type]) for c in columns])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def _write_jsonl(path: Path, columns: tuple[Column, ...], rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


# -- the dataset card -------------------------------------------------------------------------
def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for ``n`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    return next((label for bound, label in bounds if n < bound), "1M<n<10M")


def card(s: Summary) -> str:
    """The README.md of the dataset: its YAML header and what was exported, in words."""
    return "\n".join([*_header(s), "", *_prose(s)]).rstrip() + "\n"


def _header(s: Summary) -> list[str]:
    title = "RAT Studio arena votes" + (f" (campaign {s.progress.campaign.name})" if s.progress else
                                        f" ({s.task_set})" if s.task_set else "")
    lines = ["---", f"license: {LICENSE_PLACEHOLDER}", f"pretty_name: {json.dumps(title)}",
             "task_categories:", "- text-generation", "tags:", "- human-feedback", "- preference", "- arena",
             "size_categories:", f"- {size_category(max(s.votes, s.outputs, s.judge_votes))}", "configs:"]
    for n, (name, path) in enumerate(s.files.items()):
        lines += [f"- config_name: {name}", "  data_files:", f"  - split: {SPLIT}", f"    path: {path}"]
        lines += ["  default: true"] if n == 0 else []
    return [*lines, *_campaign_header(s.progress), "---"]


def _campaign_header(p: CampaignProgress | None) -> list[str]:
    """The card's YAML ``campaign:`` mapping: the campaign's settings and numbers (JSON values,
    which YAML reads as they are); none without a campaign."""
    if p is None:
        return []
    c = p.campaign
    fields = {"name": c.name, "settings": c.settings(), "task_set": c.task_set, "methods": list(c.methods),
              "style": c.style, "overlap": c.overlap, "quota": c.quota, "voters": list(c.voters),
              "criteria": list(c.criteria), "status": c.status,
              "started": c.started, "pairs": p.pairs, "complete_pairs": p.complete, "started_pairs": p.started,
              "votes": p.votes, "votes_needed": p.needed}
    return ["campaign:", *(f"  {key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items())]


def _prose(s: Summary) -> list[str]:
    scope = (f"campaign `{s.progress.campaign.name}` (only the votes cast in it, and the outputs of its task set "
             "and methods)" if s.progress else
             f"the tasks of task set `{s.task_set}` (no campaign: the export covers every vote and output of its "
             "scope)" if s.task_set is not None else
             "every task set (no campaign: the export covers every vote and output of its scope)")
    shown = (f"the campaign's style `{s.style}`" if s.progress else f"`--arena-style {s.style}`")
    sets = ", ".join(f"`{t}`" if t else "(none)" for t in s.task_sets)
    who = ("real names (exported with --names)" if s.names else
           "pseudonyms (`anon-` and a stable hash of the name" + (", salted)" if s.salted else
                                                                   "; unsalted: a guessed name can be checked)"))
    lines = [
        "# RAT Studio arena votes", "",
        "People's votes from RAT Studio's blind arena, where an annotator reads two answers to the same task, "
        "written by two methods they are not told, and picks the better one (or a tie, or both bad); the "
        "outputs the arena pairs; and, apart from people's, the votes of the LLM judge on the same pairs.", "",
        "## What was exported", "",
        f"- Exported on {s.date} (UTC) by `python app.py dataset export`, from {scope}.",
        *_campaign_prose(s.progress),
        f"- {s.votes} vote(s) by {s.annotators} annotator(s); {s.corrected} corrected, {s.voided} of them voided "
        "(they do not count).",
        f"- {s.outputs} output(s).",
        _judge_prose(s),
        f"- Methods: {', '.join(f'`{m}`' for m in s.methods) or 'none'}.",
        f"- Task sets: {sets}.",
        f"- How outputs were shown: {shown} ({STYLE_WORDS.get(s.style, s.style)}), "
        f"`--arena-text {s.text}` ({TEXT_WORDS.get(s.text, s.text)}); A and B in random order.",
        f"- Annotators and correctors appear as {who}.",
        f"- Files ({s.fmt}): " + ", ".join(f"`{p}` (config `{n}`)" for n, p in s.files.items()) + ".", "",
        "## Loading", "", "```python", "from datasets import load_dataset", "",
        *(f'{n} = load_dataset("path/to/this/folder", "{n}", split="{SPLIT}")' for n in s.files), "```", "",
        "`python app.py dataset import FOLDER` reads it back into a RAT Studio database (same leaderboard).", "",
        "## Before publishing", "",
        f"- Set `license:` in the header above (now `{LICENSE_PLACEHOLDER}`, a placeholder) to the license you "
        "publish under, e.g. `cc-by-4.0`.",
        "- Read the annotators' comments (`comment`): they are free text and may name someone.", "",
    ]
    for name in s.files:
        lines += [f"## Columns of `{name}`", "", "| column | type | meaning |", "| --- | --- | --- |",
                  *(f"| `{c.name}` | {c.type.__name__} | {c.about} |" for c in TABLES[name]), ""]
    return lines


def _judge_prose(s: Summary) -> str:
    """The card's line on the LLM judge's votes: how many, by which model(s), kept apart."""
    if not s.judge_votes:
        return "- No LLM judge's vote in this scope."
    models = ", ".join(f"`{m}`" for m in s.judge_models)
    campaign = (" The judge has no campaign: these are its votes on the campaign's task set and methods."
                if s.progress else "")
    return (f"- {s.judge_votes} LLM judge's vote(s), by judge model(s) {models}: kept apart from people's votes, "
            f"in their own config `judge_votes` (they never count on people's leaderboard).{campaign}")


def _campaign_prose(p: CampaignProgress | None) -> list[str]:
    """The campaign's settings and numbers in words, as card lines (none without a campaign)."""
    if p is None:
        return []
    c = p.campaign
    done = f" ({p.done:.0%})" if p.done is not None else ""
    return [f"- Campaign `{c.name}` ({c.status}, started {c.started[:10]}): {c.settings()}.",
            f"- Its numbers at export: overlap {c.overlap} (annotators per pair), "
            + (f"quota {c.quota} votes per annotator" if c.quota else "no quota")
            + f"; {p.pairs} pair(s) of outputs to vote on, {p.complete} complete (with all {c.overlap} vote(s)), "
            f"{p.started} started; {p.votes} vote(s) that count, of the {p.needed} needed{done}."]


# -- import -----------------------------------------------------------------------------------
def _exported_json(value: str | None, check: Callable[[Any], object], errors: tuple[type[Exception], ...],
                   must: str) -> str | None:
    """A JSON column of an imported votes row, as ``dataset export`` writes it: None when empty,
    else ``value`` once ``check`` takes it parsed. Raises ValueError (``must``, and why) for what
    ``check`` or the parse refuses with one of ``errors``."""
    if not value:
        return None
    try:
        check(json.loads(value))
    except errors as exc:
        raise ValueError(f"{must}: {exc}") from None
    return value


class _DatasetVote(VoteLine):
    """A row of the votes table as a ``votes import`` line: its flat correction columns nested,
    and the campaign it was cast in."""

    campaign: Name | None = Field(None, description="a campaign's name, or empty")
    criteria: str | None = Field(None, description='a JSON object of criterion -> a, b or tie, or empty')
    sentence_flags: str | None = Field(None, description='a JSON list of {"side", "sentence", "kind"}, or empty')

    @field_validator("sentence_flags")
    @classmethod
    def _sentence_flags(cls, value: str | None) -> str | None:
        return _exported_json(value, lambda flags: arena.sentence_flag_rows((f["side"], f["sentence"], f["kind"])
                                                                            for f in flags),
                              (json.JSONDecodeError, TypeError, KeyError, ValueError),
                              'must be a JSON list of {"side": "a" or "b", "sentence": ..., "kind": "unsupported" '
                              'or "wrong"}, as `dataset export` writes it')

    @field_validator("criteria")
    @classmethod
    def _criteria(cls, value: str | None) -> str | None:
        return _exported_json(value, arena.criterion_choices, (json.JSONDecodeError, AttributeError, ValueError),
                              'must be a JSON object of criterion -> a, b or tie, as `dataset export` writes it '
                              '(e.g. {"Readability": "tie"})')

    def to_record(self, line: int) -> dict:
        return {**super().to_record(line), "campaign": self.campaign or None,
                "criteria": json.loads(self.criteria) if self.criteria else None,
                "sentences": [(f["side"], f["sentence"], f["kind"]) for f in json.loads(self.sentence_flags)]
                if self.sentence_flags else None}

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("correction") is not None:
            nested = {"choice": data["correction"], "by": data.get("corrected_by"),
                      "why": data.get("correction_why"), "created": data.get("correction_created")}
            data = {**data, "correction": nested}
        return data


class _DatasetOutput(OutputLine):
    """A row of the outputs table as an ``outputs import`` line (``prompt`` is its task)."""

    current: bool | None = Field(None, description="true or false")

    @model_validator(mode="before")
    @classmethod
    def _task(cls, data: Any) -> Any:
        return {**data, "task": data.get("prompt")} if isinstance(data, dict) and "task" not in data else data


class _DatasetJudgeVote(_TaskLine):
    """A row of the judge_votes table."""

    prompt: Text = Field(description=NON_EMPTY)
    method_a: Name = Field(description=NON_EMPTY)
    method_b: Name = Field(description=NON_EMPTY)
    output_a: Text | None = Field(None, description=NON_EMPTY)
    output_b: Text | None = Field(None, description=NON_EMPTY)
    choice: str = Field(description=f"one of {', '.join(arena.JUDGE_CHOICES)}")
    n: int = Field(ge=1, description="a whole number, 1 or more")
    model: Name = Field(description=NON_EMPTY)
    created: Time = Field(description=ISO_TIME)
    detail: str = Field(description="a JSON text")

    @field_validator("choice")
    @classmethod
    def _choice(cls, value: str) -> str:
        if value not in arena.JUDGE_CHOICES:
            raise ValueError(f"must be one of {', '.join(arena.JUDGE_CHOICES)}, not {value!r}")
        return value

    @field_validator("detail")
    @classmethod
    def _detail(cls, value: str) -> str:
        try:
            json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("must be JSON text, as `dataset export` writes it") from None
        return value

    def to_record(self, line: int) -> dict:
        """The record ``data.dataset.import_judge_votes`` takes."""
        return {**self.task_fields(self.prompt), "line": line, **self.model_dump(exclude={"prompt", "kind",
                                                                                          "task_set"})}


class _DatasetCampaign(BaseModel):
    """A row of the campaigns table."""

    name: Name = Field(description=NON_EMPTY)
    task_set: str | None = Field(None, description="a string, or empty")
    methods: str = Field(description="a JSON list of strings")
    style: str = Field(description="sources or plain")
    overlap: int = Field(ge=1, le=50, description="a whole number from 1 to 50")
    quota: int | None = Field(None, ge=1, description="a whole number, 1 or more, or empty")
    voters: str = Field(description="a JSON list of strings")
    status: str = Field(description="open or closed")
    changed_by: Name = Field(description=NON_EMPTY)
    created: Time = Field(description=ISO_TIME)
    criteria: str = Field("[]", description="a JSON list of strings")

    @field_validator("methods", "voters", "criteria")
    @classmethod
    def _names(cls, value: str) -> str:
        try:
            names = json.loads(value)
        except json.JSONDecodeError:
            names = None
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise ValueError('must be a JSON list of names, as `dataset export` writes it (e.g. ["rat", "cot"])')
        return value

    @field_validator("style")
    @classmethod
    def _style(cls, value: str) -> str:
        if value not in STYLE_WORDS:
            raise ValueError(f"must be one of {', '.join(STYLE_WORDS)}, not {value!r}")
        return value

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        if value not in campaign_rows.STATUSES:
            raise ValueError(f"must be one of {', '.join(campaign_rows.STATUSES)}, not {value!r}")
        return value

    def to_record(self, line: int) -> dict:
        """The record ``data.campaigns.import_rows`` takes."""
        return {**self.model_dump(), "methods": json.loads(self.methods), "voters": json.loads(self.voters),
                "criteria": json.loads(self.criteria), "line": line}


@dataclass(frozen=True)
class Imported:
    outputs_added: int
    outputs_present: int
    votes_added: int
    votes_present: int
    corrections_added: int = 0
    judge_added: int = 0
    judge_present: int = 0
    campaigns_added: int = 0  # campaigns' rows (a campaign's settings and each change of them)
    campaigns_present: int = 0


def import_dataset(admin: Admin, directory: str | Path) -> Imported:
    """Read a folder written by ``export_dataset`` (either format) into the arena: its current
    outputs (a run's older texts come with the votes that showed them), then people's votes with
    their corrections, in the order they were cast, then the LLM judge's votes (append-only);
    what is already there is skipped. Every row is checked before anything is written.
    Raises ImportFormatError naming the file, the row and the fix (nothing is imported), or for a
    folder without data files; ArenaError without pyarrow for Parquet; StoreError."""
    folder = Path(directory)
    files = {name: data_files(folder, name) for name in TABLES}
    if not any(files.values()):
        raise ImportFormatError(f"{folder} holds no votes/, outputs/ or judge_votes/ data files (*.parquet or "
                                "*.jsonl): give the folder `python app.py dataset export` wrote.")
    outputs = [r.to_record(n) for n, r in _read(files["outputs"], _DatasetOutput, OUTPUT_EXAMPLE)
               if r.current is not False]
    votes = [r.to_record(n) for n, r in _read(files["votes"], _DatasetVote, VOTE_EXAMPLE)]
    judged = [r.to_record(n) for n, r in _read(files["judge_votes"], _DatasetJudgeVote, JUDGE_EXAMPLE)]
    campaigns = [r.to_record(n) for n, r in _read(files["campaigns"], _DatasetCampaign, CAMPAIGN_EXAMPLE)]
    _check_campaigns_named(admin, files["votes"], votes, campaigns)
    added_campaigns = campaign_rows.import_rows(admin.store, campaigns) if campaigns else (0, 0)
    added_outputs = arena.import_outputs(admin.store, outputs) if outputs else (0, 0)
    added_votes = arena.import_votes(admin.store, votes) if votes else (0, 0, 0)
    added_judged = rows_of.import_judge_votes(admin.store, judged) if judged else (0, 0)
    return Imported(*added_outputs, *added_votes, *added_judged, *added_campaigns)


def _check_campaigns_named(admin: Admin, paths: list[Path], votes: list[dict], campaigns: list[dict]) -> None:
    """Raises ImportFormatError for a vote cast in a campaign that neither the folder's campaigns
    table nor the database has (it would count in no campaign's leaderboard)."""
    known = {c["name"] for c in campaigns} | {c.name for c in campaign_rows.current(admin.store)}
    for vote in votes:
        if vote["campaign"] is not None and vote["campaign"] not in known:
            where = ", ".join(str(p) for p in paths)
            raise ImportFormatError(
                f"{where}, row {vote['line']}: campaign {vote['campaign']!r} is in neither the folder's campaigns "
                "table nor the database: export with `dataset export` again (it writes the campaigns of its votes), "
                "or empty the row's campaign to import the vote into the open arena. Nothing was imported.")


def data_files(folder: Path, name: str) -> list[Path]:
    """The data files of config ``name``: ``folder/name/*.parquet`` and ``*.jsonl``, by name."""
    return sorted([*folder.glob(f"{name}/*.parquet"), *folder.glob(f"{name}/*.jsonl")])


def _read(paths: Iterable[Path], model: type[M], example: str) -> list[tuple[int, M]]:
    """(row number, validated row) of every row of ``paths``, in order. Raises ImportFormatError
    naming the file and the row at the first bad one, or for a file that cannot be read."""
    found: list[tuple[int, M]] = []
    for path in paths:
        if path.suffix == ".jsonl":
            found += read_jsonl(path, model, example, ImportFormatError,
                                unreadable="Give the folder `python app.py dataset export` wrote.")
        else:
            found += [(n, _validated(path, n, row, model, example)) for n, row in enumerate(_parquet_rows(path), 1)]
    return found


def _parquet_rows(path: Path) -> list[dict]:
    """The rows of a Parquet file. Raises ImportFormatError when it cannot be read as one,
    ArenaError without pyarrow."""
    pa, pq = _pyarrow()
    try:
        return pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise ImportFormatError(f"Cannot read {path} as Parquet ({exc}): give the folder "
                                "`python app.py dataset export` wrote.") from exc


def _validated(path: Path, n: int, row: dict, model: type[M], example: str) -> M:
    """``row`` checked as a JSONL line is (``core.jsonl``). Raises ImportFormatError naming the row."""
    try:
        check_text(row)
        return model.model_validate(row)
    except (ValidationError, BadText) as exc:
        raise ImportFormatError(line_error(str(path), n, exc, example, model)) from exc
