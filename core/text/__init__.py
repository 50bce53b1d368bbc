"""Talking to the model safely: the prompts (``prompts``), the guards on its replies (``guards``,
``talk``), retrieved text fenced for a prompt (``fencing``), the one token estimate (``tokens``)
and one-line text (``oneline``). Imports nothing else of core."""
