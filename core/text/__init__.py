"""Talking to the model safely: the prompts (``prompts``), the guards on its replies (``guards``,
``talk``), retrieved text fenced for a prompt (``fencing``), the one token estimate (``tokens``),
words and sentences in any script (``segment``, by ICU), the language a run writes in
(``language``) and one-line text (``oneline``). Imports nothing else of core."""
