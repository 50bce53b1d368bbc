"""The arena's logic without a user interface. For annotators: ``service`` (next pair, vote,
undo, progress, reveal), ``pairing``, ``present`` (both sides shown in one house style),
``campaigns``, ``accounts`` (logins, invite links, completion codes). What the votes say:
``ratings`` (TrueSkill, Bradley-Terry), ``style`` (style control), ``board`` (voters' flags),
``agreement``, ``outliers``, ``plots``. Admin work: ``judge`` (the LLM judge), ``outputs`` (a
finished run as the arena shows it), ``records`` and ``dataset`` (JSONL and dataset exports and
imports). Nothing here imports gradio; only ``data/`` writes SQL; the command line is ``ui/cli/``."""
