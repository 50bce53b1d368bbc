"""The arena's logic without a user interface, in three rooms by whom they serve:

- ``annotation.voting``: the annotator's side: ``arena`` (``Arena``: next pair, vote and its
  reveal, undo, progress) and ``pairing`` (which pair teaches the leaderboard most). It imports
  nothing of ``annotation.admin`` (tests/test_layers.py).
- ``annotation.results``: what the votes say: ``results`` (``Results``: leaderboards, style
  control, flags, agreement), ``ratings`` (TrueSkill, Bradley-Terry), ``style``, ``board`` (the
  live tallies and voters' paces), ``agreement``, ``outliers``, ``plots``.
- ``annotation.admin``: the study admin's work: ``admin`` (``Admin``: campaigns' numbers,
  corrections, gold pairs, the judge, imports and exports), ``judge`` (the LLM judge),
  ``records`` (JSONL lines) and ``dataset`` (Hugging Face datasets).

Shared by the three: ``campaigns``, ``accounts`` (logins, invite links, completion codes),
``present`` (both sides shown in one house style), ``outputs`` (a finished run as the arena
shows it) and ``errors``. Nothing here imports gradio; only ``data/`` writes SQL; the command
line is ``ui/cli/``."""
