"""``python app.py dataset export DIR`` / ``dataset import DIR``: the arena's outputs, people's
votes and the LLM judge's votes as a Hugging Face dataset folder (``annotation.admin.dataset``), and back.
``dataset export FILE --format drb --method M``: one method's articles as DeepResearch Bench's report
file (``annotation.admin.drb``)."""

from __future__ import annotations

import argparse

from annotation.admin import drb
from annotation.admin.dataset import FORMATS, LICENSE_PLACEHOLDER, PARQUET, export_dataset, import_dataset
from annotation.errors import ArenaError


def add_commands(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``dataset export`` and ``dataset import``. The common flags (``parents``) go on both."""
    dataset = subparsers.add_parser("dataset", help="export or import the arena's outputs and votes as a Hugging "
                                                    "Face dataset (a folder datasets.load_dataset reads)")
    sub = dataset.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    p = sub.add_parser("export", parents=parents, help="write outputs, votes and a dataset card into a new folder",
                       description="Writes DIR/README.md (the dataset card: set its license before publishing), "
                                   "DIR/votes/train.*, DIR/outputs/train.* and DIR/judge_votes/train.* (the LLM "
                                   "judge's votes, apart from people's); load it with "
                                   "datasets.load_dataset(DIR, 'votes') or push the folder to the Hub as it is.")
    p.add_argument("dir", metavar="DIR", help="the folder to write (new, or empty); with --format drb, the new "
                                              "JSONL file")
    p.add_argument("--task-set", help="only the outputs and votes of this task set (default: all)")
    p.add_argument("--campaign", metavar="NAME", help="only the votes cast in this campaign, and the outputs and "
                                                      "judge's votes of its task set and methods; the card states "
                                                      "its settings")
    p.add_argument("--format", choices=(*FORMATS, drb.FORMAT), default=PARQUET,
                   help="data files' format (default parquet); drb: one JSONL file of DeepResearch Bench reports "
                        '({"id", "prompt", "article"} a line) of the method --method names')
    p.add_argument("--method", help="with --format drb: the method whose newest finished run of each task is "
                                    "written")
    p.add_argument("--names", action="store_true",
                   help="keep annotators' names (default: pseudonyms, a stable hash of each name)")
    p.add_argument("--salt", default="", help="a secret mixed into the pseudonyms (keep it to export again with "
                                              "the same ones); without it a guessed name can be checked")
    p.set_defaults(func=cmd_dataset_export)
    p = sub.add_parser("import", parents=parents, help="read a folder of `dataset export` back into the arena "
                                                       "(outputs, votes and their corrections, judge's votes)")
    p.add_argument("dir", metavar="DIR", help="the folder `dataset export` wrote (or downloaded from the Hub)")
    p.set_defaults(func=cmd_dataset_import)


def cmd_dataset_export(args, app) -> int:
    if args.format == drb.FORMAT:
        return _export_drb(args, app)
    if args.method:
        raise ArenaError("--method goes with --format drb; a dataset holds every method's outputs.")
    s = export_dataset(app.admin, args.dir, task_set=args.task_set, fmt=args.format, names=args.names,
                       salt=args.salt, campaign=args.campaign)
    of = f" of campaign {s.progress.campaign.name!r}" if s.progress else ""
    print(f"Wrote {s.votes} vote(s) and {s.outputs} output(s){of}, plus {s.judge_votes} LLM judge's vote(s), to "
          f"{s.directory} ({s.fmt}), with a dataset card (README.md). Load it with "
          f"datasets.load_dataset({str(s.directory)!r}, 'votes').")
    print(f"Before publishing: set `license:` in {s.directory / 'README.md'} (now {LICENSE_PLACEHOLDER}), and "
          "read the annotators' comments.")
    return 0


def cmd_dataset_import(args, app) -> int:
    r = import_dataset(app.admin, args.dir)
    print(f"Imported {r.outputs_added} output(s) ({r.outputs_present} already present), {r.votes_added} vote(s) "
          f"({r.votes_present} already present; {r.corrections_added} correction(s) added) and {r.judge_added} "
          f"judge's vote(s) ({r.judge_present} already present), and {r.campaigns_added} campaign setting row(s) "
          f"({r.campaigns_present} already present) from {args.dir}.")
    return 0


def _export_drb(args, app) -> int:
    if args.campaign:
        raise ArenaError("--format drb writes one method's reports: give --method (and --task-set), not --campaign.")
    method = drb.check_method(args.method)
    n = drb.write_lines(drb.export_lines(app.store, app.authoring, method, task_set=args.task_set), args.dir, method)
    print(f"Wrote {n} report(s) of {method} to {args.dir} (DeepResearch Bench's raw_data format: put it in "
          "data/test_data/raw_data/ as <model>.jsonl).")
    return 0
