"""The annotator's side of the arena (``arena.Arena``, with ``pairing``, ``checks``, ``limits`` and
``shown``); see ``annotation``."""
