"""The arena's logic without a user interface: the service the Arena tab and the command line
share (``service``: pairs, votes, reveal), pairing, ratings (TrueSkill, Bradley-Terry), voters'
flags and agreement (``board``), the LLM judge and the JSONL records of votes and outputs.
Nothing here imports gradio; only ``data/`` writes SQL; the command line is ``ui/cli/arena.py``."""
