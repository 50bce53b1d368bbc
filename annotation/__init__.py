"""The arena's logic without a user interface: pairing, ratings, the LLM judge and the CLI.
Nothing here imports gradio; only ``data/`` writes SQL."""
